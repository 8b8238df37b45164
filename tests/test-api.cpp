// Description: the native and iodlr APIs inside a running program, with
// threads running the code while it is swapped under them.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "bigtext.h"
#include "helpers.hpp"

#include <sys/mman.h>

extern "C" {
#include "hugetext.h"
#include "large_page.h"
#include "sys.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

static const unsigned long expected_sum = bigtext_sum(5);

// Threads that call every generated function and check each answer.
struct runners {
	std::atomic<bool> stop{ false };
	std::atomic<unsigned long> calls{ 0 }, wrong{ 0 };
	std::vector<std::thread> threads;

	explicit runners(int n)
	{
		for (int t = 0; t < n; t++)
			threads.emplace_back([this, t] {
				while (!stop.load(std::memory_order_relaxed)) {
					for (unsigned i = t; i < bigtext_count; i += 3) {
						if (bigtext_get(i)(5) != (int)(15 + i))
							wrong++;
						calls++;
					}
				}
			});
	}
	~runners()
	{
		stop = true;
		for (auto &th : threads)
			th.join();
	}
};

TEST_CASE("100 range remaps while 4 threads run the code", "[api][threads]")
{
	runners run(4);
	struct ht_options opt;
	ht_options_init(&opt);
	opt.page_cache = 0; // the copy itself is under test
	opt.mode = HT_MODE_THP;
	int ok = 0;

	for (int i = 0; i < 100; i++) {
		struct ht_region r;
		int err = ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
		INFO("round " << i << ": " << ht_error_str(r.error));
		REQUIRE(err == 0);
		REQUIRE(r.status == HT_STATUS_OK);
		ok += r.huge_bytes == r.bytes;
	}
	unsigned long calls = run.calls;
	CHECK(calls > 0);
	CHECK(run.wrong == 0);
	CHECK(ok == 100);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("a range without one whole huge page is skipped, not touched", "[api]")
{
	struct ht_region r;
	int err = ht_remap_range(nullptr, bigtext_start + 4096, bigtext_start + (1 << 20), &r);

	CHECK(err == 0);
	CHECK(r.status == HT_STATUS_SKIPPED);
	CHECK(r.error == HT_E_TOO_SMALL);
}

TEST_CASE("a range that is not code is refused and left alone", "[api]")
{
	std::vector<char> data(8u << 20, 1);
	struct ht_region r;

	CHECK(ht_remap_range(nullptr, data.data(), data.data() + data.size(), &r) < 0);
	CHECK(r.status == HT_STATUS_FAILED);
	CHECK(r.error == HT_E_BAD_RANGE);
	data[100] = 2; // still writable
	CHECK(ht_remap_range(nullptr, bigtext_end, bigtext_start, &r) == -EINVAL);
}

TEST_CASE("the native API moves the main program once, then says already", "[api]")
{
	struct ht_region regs[8];
	size_t n = 0;
	int err = ht_remap(nullptr, regs, 8, &n);

	REQUIRE(err == 0);
	REQUIRE(n >= 1);
	int moved = 0;
	for (size_t i = 0; i < n && i < 8; i++) {
		INFO(regs[i].object << " " << ht_error_str(regs[i].error));
		CHECK(regs[i].status != HT_STATUS_FAILED);
		// The earlier test may have moved the generated code already.
		moved += regs[i].status == HT_STATUS_OK || regs[i].error == HT_E_ALREADY;
	}
	CHECK(moved >= 1);
	REQUIRE(ht_remap(nullptr, regs, 8, &n) == 0);
	for (size_t i = 0; i < n && i < 8; i++)
		CHECK(regs[i].status != HT_STATUS_OK);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("iodlr's API answers with iodlr's statuses", "[api][iodlr]")
{
	bool enabled = false;

	REQUIRE(IsLargePagesEnabled(&enabled) == map_ok);
	CHECK(enabled);
	CHECK(IsLargePagesEnabled(nullptr) == map_see_errno);
	CHECK(MapStaticCodeToLargePages() == map_ok);
	CHECK(MapStaticCodeToLargePages() == map_ok); // the second call: already moved
	CHECK(MapStaticCodeRangeToLargePages(nullptr, bigtext_end) == map_invalid_region_address);
	CHECK(MapStaticCodeRangeToLargePages(bigtext_start, bigtext_start + 4096) == map_region_too_small);
	CHECK(MapStaticCodeRangeToLargePages(bigtext_start, bigtext_end) == map_ok);
	CHECK(MapDSOToLargePages(nullptr) == map_null_regex);
	CHECK(MapDSOToLargePages("[") == map_invalid_regex);
	CHECK(MapDSOToLargePages("no-such-library-here") == map_region_not_found);
	CHECK(std::string(MAP_STATUS_STR_SHORT(map_region_too_small)) == "map_region_too_small");
	CHECK(std::string(MAP_STATUS_STR(map_ok)) == "ok");
	CHECK(std::string(MapStatusStr((map_status)1000, true)) == "unknown status");
	CHECK(bigtext_sum(5) == expected_sum);
}

// A kernel that unmaps the target and then fails the move (what an
// allocation failure inside mremap would do), the first time only.
static int hole_calls;
static void *hole_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	if ((flags & MREMAP_FIXED) && hole_calls++ == 0) {
		munmap(new_addr, new_len);
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return mremap(old, old_len, new_len, flags, new_addr);
}

static void *always_failing_mremap(void *, size_t, size_t new_len, int flags, void *new_addr)
{
	if (flags & MREMAP_FIXED)
		munmap(new_addr, new_len);
	errno = ENOMEM;
	return MAP_FAILED;
}

TEST_CASE("a hole left by a failed mremap is filled again with the code", "[api][faults]")
{
	struct ht_options opt;
	ht_options_init(&opt);
	opt.page_cache = 0; // the copy itself is under test
	opt.mode = HT_MODE_THP;
	struct ht_region r;

	hole_calls = 0;
	ht_sys.mremap = hole_mremap;
	CHECK(ht_remap_range(&opt, bigtext_start, bigtext_end, &r) == 0);
	ht_sys_reset();
	CHECK(r.status == HT_STATUS_OK);
	CHECK(hole_calls == 2);
	CHECK(bigtext_sum(5) == expected_sum);

	// When no mremap works at all, the code is copied back into the hole.
	ht_sys.mremap = always_failing_mremap;
	CHECK(ht_remap_range(&opt, bigtext_start, bigtext_end, &r) == -ENOMEM);
	ht_sys_reset();
	CHECK(r.status == HT_STATUS_FAILED);
	CHECK(r.error == HT_E_SWAP);
	CHECK(bigtext_sum(5) == expected_sum);
}
