// Description: explicit (hugetlb) pages, the pool check, auto's fallback
// to THP, and the time budget, inside a process with 16 MiB of code.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <unistd.h>
#include <string>
#include <fcntl.h>
#include <sys/mman.h>

#include "bigtext.h"
#include "helpers.hpp"
#include "sysguard.hpp"

extern "C" {
#include "hugetext.h"
#include "pool.h"
#include "sys.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (getuid() != 0)
		return "changing the hugetlb pool needs root";
	if (!file_exists("/sys/kernel/mm/hugepages/hugepages-2048kB"))
		return "the kernel has no 2 MiB hugetlb pool";
	return nullptr;
}

static const unsigned long expected_sum = bigtext_sum(5);

// The maps lines that cover the generated code: what "left alone" means.
static std::string code_maps()
{
	std::string all = read_file("/proc/self/maps"), out;
	std::istringstream in(all);
	std::string line;
	while (std::getline(in, line)) {
		unsigned long lo, hi;
		if (sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 &&
		    hi > (unsigned long)bigtext_start && lo < (unsigned long)bigtext_end)
			out += line + "\n";
	}
	return out;
}

static struct ht_region move(enum ht_mode mode, unsigned budget = 0)
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

// Restores the real system calls whatever the test does.
struct sys_guard {
	~sys_guard() { ht_sys_reset(); }
};

TEST_CASE("explicit mode puts the code on pool pages and it runs the same", "[explicit]")
{
	pool_guard pool(16);
	REQUIRE(pool.ok());
	struct ht_region r = move(HT_MODE_EXPLICIT);

	INFO(ht_error_str(r.error));
	REQUIRE(r.status == HT_STATUS_OK);
	CHECK(r.mode == HT_MODE_EXPLICIT);
	CHECK(r.huge_bytes == r.bytes);
	CHECK(r.bytes >= 12u << 20);
	CHECK(code_maps().find("anon_hugepage") != std::string::npos);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("a pool too small fails explicit mode and leaves the code as it was", "[explicit]")
{
	pool_guard pool(0);
	pool.set_total(0);
	std::string before = code_maps();
	struct ht_region r = move(HT_MODE_EXPLICIT);

	CHECK(r.status == HT_STATUS_FAILED);
	CHECK(r.error == HT_E_POOL);
	CHECK(code_maps() == before);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("auto mode takes THP when the pool is too small", "[explicit][auto]")
{
	if (!thp_enabled()) {
		WARN("THP is off here: auto has nothing to fall back to; not checked");
		return;
	}
	pool_guard pool(0);
	pool.set_total(0);
	struct ht_region r = move(HT_MODE_AUTO);

	REQUIRE(r.status == HT_STATUS_OK);
	CHECK(r.mode == HT_MODE_THP);
	CHECK(r.huge_bytes > 0);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("auto mode takes explicit pages when the pool has room", "[explicit][auto]")
{
	pool_guard pool(16);
	REQUIRE(pool.ok());
	struct ht_region r = move(HT_MODE_AUTO);

	REQUIRE(r.status == HT_STATUS_OK);
	CHECK(r.mode == HT_MODE_EXPLICIT);
	CHECK(r.huge_bytes == r.bytes);
}

static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int hugetlb_errno;

static void *failing_hugetlb_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	if (f & MAP_HUGETLB) {
		errno = hugetlb_errno;
		return MAP_FAILED;
	}
	return real_mmap(a, l, p, f, fd, o);
}

TEST_CASE("a failing MAP_HUGETLB fails explicit mode cleanly and auto falls back to THP", "[explicit][faults]")
{
	pool_guard pool(16);
	REQUIRE(pool.ok());
	sys_guard g;
	real_mmap = ht_sys.mmap;
	hugetlb_errno = EPERM;
	ht_sys.mmap = failing_hugetlb_mmap;
	std::string before = code_maps();

	struct ht_region r = move(HT_MODE_EXPLICIT);
	CHECK(r.status == HT_STATUS_FAILED);
	CHECK(r.error == HT_E_ALLOC);
	CHECK(r.sys_errno == EPERM);
	CHECK(code_maps() == before);
	CHECK(bigtext_sum(5) == expected_sum);

	if (thp_enabled()) {
		r = move(HT_MODE_AUTO);
		CHECK(r.status == HT_STATUS_OK);
		CHECK(r.mode == HT_MODE_THP);
		CHECK(bigtext_sum(5) == expected_sum);
	}
}

// Takes every free page just before the library's own mmap, as another
// process could between the pool check and the map.
static void *hoard;
static size_t hoard_len;

static void *racing_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	if ((f & MAP_HUGETLB) && !hoard) {
		long free_pages = ht_pool_available_2m();
		hoard_len = (size_t)(free_pages > 0 ? free_pages : 1) << 21;
		hoard = real_mmap(nullptr, hoard_len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	}
	return real_mmap(a, l, p, f, fd, o);
}

TEST_CASE("pages taken between the pool check and the map: no crash, code unchanged", "[explicit][race]")
{
	pool_guard pool(16);
	REQUIRE(pool.ok());
	sys_guard g;
	real_mmap = ht_sys.mmap;
	ht_sys.mmap = racing_mmap;
	hoard = nullptr;
	std::string before = code_maps();

	struct ht_region r = move(HT_MODE_EXPLICIT);
	REQUIRE(hoard != MAP_FAILED);
	REQUIRE(hoard != nullptr);
	CHECK(r.status == HT_STATUS_FAILED);
	CHECK(r.error == HT_E_ALLOC);
	CHECK(r.sys_errno == ENOMEM);
	CHECK(code_maps() == before);
	CHECK(bigtext_sum(5) == expected_sum);
	munmap(hoard, hoard_len);
	hoard = nullptr;
}

TEST_CASE("no 2 MiB pool on the machine is reported as not supported", "[explicit]")
{
	sys_guard g;
	ht_sys.open = [](const char *path, int flags, mode_t mode) -> int {
		if (std::strstr(path, "hugepages-2048kB")) {
			errno = ENOENT;
			return -1;
		}
		return open(path, flags, mode);
	};
	struct ht_region r = move(HT_MODE_EXPLICIT);

	CHECK(r.status == HT_STATUS_FAILED);
	CHECK(r.error == HT_E_NOT_SUPPORTED);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("pool and mount parsers handle 2 MiB and 1 GiB defaults", "[pool]")
{
	std::string meminfo = "MemTotal: 1 kB\nHugepagesize:    1048576 kB\nHugetlb: 0 kB\n";
	CHECK(ht_parse_meminfo_hugepagesize(meminfo.data(), meminfo.size()) == 1048576);
	CHECK(ht_parse_meminfo_hugepagesize("x", 1) == 0);

	std::string mounts =
		"proc /proc proc rw 0 0\n"
		"none /dev/hugepages1G hugetlbfs rw,relatime 0 0\n"
		"none /mnt/huge\\0402m hugetlbfs rw,relatime,pagesize=2M 0 0\n";
	char dir[256];
	// The default size is 1 GiB: the mount without pagesize= is the 1 GiB one.
	REQUIRE(ht_find_hugetlbfs(mounts.data(), mounts.size(), 2048, 1048576, dir, sizeof(dir)) == 0);
	CHECK(std::string(dir) == "/mnt/huge 2m");
	REQUIRE(ht_find_hugetlbfs(mounts.data(), mounts.size(), 1048576, 1048576, dir, sizeof(dir)) == 0);
	CHECK(std::string(dir) == "/dev/hugepages1G");
	CHECK(ht_find_hugetlbfs("proc /proc proc rw 0 0\n", 23, 2048, 2048, dir, sizeof(dir)) == -ENOENT);
	CHECK(ht_find_hugetlbfs(mounts.data(), mounts.size(), 2048, 1048576, dir, 4) == -ENAMETOOLONG);

	uint64_t v;
	CHECK(ht_parse_count("12\n", 3, &v) == 0);
	CHECK(v == 12);
	CHECK(ht_parse_count("x\n", 2, &v) == -EINVAL);
	CHECK(ht_parse_count("99999999999999999999999\n", 24, &v) == -EINVAL);
}
