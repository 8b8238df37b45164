// Description: the time budget, on fresh code: a budget spent before the
// first region skips it; one spent during a region keeps the whole 2 MiB
// pieces filled in time.  Time is faked through the system-call seam.
#include <catch2/catch.hpp>

#include <cstring>

#include "bigtext.h"
#include "helpers.hpp"

extern "C" {
#include "hugetext.h"
#include "internal.h"
#include "sys.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

static const unsigned long expected_sum = bigtext_sum(5);

struct sys_guard {
	~sys_guard() { ht_sys_reset(); }
};

static struct ht_region move(enum ht_mode mode, unsigned budget)
{
	struct ht_options opt;
	struct ht_region r;
	ht_options_init(&opt);
	opt.page_cache = 0; // the copy itself is under test
	opt.mode = mode;
	opt.budget_ms = budget;
	std::memset(&r, 0, sizeof(r));
	ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
	return r;
}

// A clock that moves 4 ms each time it is read.
static double fake_now;
static double slow_clock() { return fake_now += 4.0; }

// Declared first: Catch2 runs cases in order, and this one must see the code
// still on 4 KiB pages.
TEST_CASE("a budget already spent skips the remaining regions", "[budget]")
{
	sys_guard g;
	ht_sys.clock_ms = slow_clock;
	struct ht_options opt;
	ht_options_init(&opt);
	opt.page_cache = 0; // the copy itself is under test
	opt.budget_ms = 1;
	struct ht_region regs[4];
	size_t n = 0;

	CHECK(ht_remap(&opt, regs, 4, &n) == 0);
	bool skipped = false;
	for (size_t i = 0; i < n && i < 4; i++) {
		CHECK(regs[i].status != HT_STATUS_OK);
		skipped |= regs[i].error == HT_E_BUDGET;
	}
	CHECK(skipped);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("the budget counts from the preload's start, not the run's", "[budget]")
{
	sys_guard g;
	ht_sys.clock_ms = slow_clock;
	struct ht_options opt;
	ht_options_init(&opt);
	opt.page_cache = 0;
	opt.budget_ms = 50;
	struct ht_region regs[4];
	size_t n = 0;

	// The constructor started 60 ms before the run: the budget is spent.
	fake_now = 1000;
	ht_budget_origin_ms = slow_clock() - 60;
	CHECK(ht_remap(&opt, regs, 4, &n) == 0);
	ht_budget_origin_ms = 0;
	REQUIRE(n >= 1);
	for (size_t i = 0; i < n && i < 4; i++) {
		CHECK(regs[i].status == HT_STATUS_SKIPPED);
		CHECK(regs[i].error == HT_E_BUDGET);
	}
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("the time budget stops the work after whole 2 MiB pieces", "[budget]")
{
	sys_guard g;
	ht_sys.clock_ms = slow_clock;
	struct ht_region r = move(HT_MODE_THP, 10);

	REQUIRE(r.status == HT_STATUS_OK);
	CHECK(r.error == HT_E_BUDGET);
	CHECK(r.huge_bytes > 0);
	CHECK(r.huge_bytes % (2u << 20) == 0);
	// Our copy's part (the page cache's own 2 MiB folios may hold the rest).
	uint64_t copied = huge_bytes_in(r.start, r.end);
	CHECK(copied > 0);
	CHECK(copied < r.bytes);
	CHECK(copied % (2u << 20) == 0);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("the fill stops before a 2 MiB piece that would end past the deadline", "[budget]")
{
	sys_guard g;
	// Last: the code may be partly moved by now, which the range API
	// copies again.  Each read of the clock moves it 4 ms: a piece takes 4 ms.  With 15 ms
	// from the fill's start, a check after the first piece (at 8 ms) sees
	// that a second would end at 16 ms and stops there.
	ht_sys.clock_ms = slow_clock;
	fake_now = 0;
	struct ht_region r = move(HT_MODE_THP, 15);

	REQUIRE(r.status == HT_STATUS_OK);
	CHECK(r.error == HT_E_BUDGET);
	// Our copy's huge pages: the one 2 MiB piece.  huge_bytes counts all
	// that is huge in the span, and once (a fresh Debian 12 run, /tmp on
	// tmpfs) it was 12 MiB: most likely the kernel mapping the rest from
	// the page cache's own 2 MiB folios (ext4 keeps them from 6.16).
	CHECK(huge_bytes_in(r.start, r.end) == (2u << 20));
	CHECK(r.huge_bytes >= (2u << 20));
	CHECK(bigtext_sum(5) == expected_sum);
}
