// Description: the kernel's page sizes decide whether 2 MiB moves are made
// (lib/pagesize.c): the decision and its report text on the numbers of 4,
// 16 and 64 KiB kernels; this kernel's facts read once, as sysconf and
// sysfs give them; and a program under a 16 or 64 KiB kernel's facts has
// every region skipped with the sizes in the report, its code untouched.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <unistd.h>

#include "bigtext.h"
#include "helpers.hpp"

extern "C" {
#include "hugetext.h"
#include "folios.h"
#include "pagesize.h"
#include "sys.h"
}

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

// A 4 KiB kernel with the 2 MiB hugetlb size; 16 and 64 KiB arm64 kernels.
const ht_page_facts k4{ 4 * KiB, 2 * MiB, 1 };
const ht_page_facts k16{ 16 * KiB, 32 * MiB, 1 };
const ht_page_facts k64{ 64 * KiB, 512 * MiB, 1 };

std::string reason(const ht_page_facts &f)
{
	char buf[200];
	int n = ht_pages_reason(&f, buf, sizeof(buf));

	REQUIRE(n > 0);
	REQUIRE((size_t)n == std::strlen(buf));
	return buf;
}

// The lines of /proc/self/maps that overlap [from, to).
std::string maps_over(const void *from, const void *to)
{
	std::istringstream in(read_file("/proc/self/maps"));
	std::string line, out;

	while (std::getline(in, line)) {
		unsigned long lo = 0, hi = 0;

		if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && lo < (uintptr_t)to &&
		    hi > (uintptr_t)from)
			out += line + "\n";
	}
	return out;
}

// Restores the kernel's own facts, whatever the test did.
struct facts_guard {
	~facts_guard() { ht_page_facts_set(nullptr); }
};

int opens_of_pmd_file;
int (*real_open)(const char *, int, mode_t);
int counting_open(const char *path, int flags, mode_t mode)
{
	if (std::strstr(path, "hpage_pmd_size"))
		opens_of_pmd_file++;
	return real_open(path, flags, mode);
}
int refusing_open(const char *path, int flags, mode_t mode)
{
	if (std::strstr(path, "/sys/kernel/mm/")) {
		errno = EACCES;
		return -1;
	}
	return real_open(path, flags, mode);
}

} // namespace

TEST_CASE("A PMD maps what hpage_pmd_size says, or 2 MiB on a 4 KiB kernel without THP", "[pagesize]")
{
	CHECK(ht_pmd_size(&k4) == 2 * MiB);
	CHECK(ht_pmd_size(&k16) == 32 * MiB);
	CHECK(ht_pmd_size(&k64) == 512 * MiB);
	const ht_page_facts no_thp4{ 4 * KiB, 0, 1 }, no_thp16{ 16 * KiB, 0, 1 }, nothing{ 0, 0, 0 };
	CHECK(ht_pmd_size(&no_thp4) == 2 * MiB);
	CHECK(ht_pmd_size(&no_thp16) == 0);
	CHECK(ht_pmd_size(&nothing) == 0);
}

TEST_CASE("2 MiB moves need a 2 MiB PMD in every mode, explicit pages the 2 MiB hugetlb size too", "[pagesize]")
{
	for (ht_mode m : { HT_MODE_AUTO, HT_MODE_THP, HT_MODE_EXPLICIT, HT_MODE_FOLIOS }) {
		INFO("mode " << ht_mode_str(m));
		CHECK(ht_pages_check(&k4, m) == HT_E_NONE);
		CHECK(ht_pages_check(&k16, m) == HT_E_KERNEL_PAGES);
		CHECK(ht_pages_check(&k64, m) == HT_E_KERNEL_PAGES);
		const ht_page_facts unknown{ 16 * KiB, 0, 1 };
		CHECK(ht_pages_check(&unknown, m) == HT_E_KERNEL_PAGES);
	}
	const ht_page_facts no_2m_hugetlb{ 4 * KiB, 2 * MiB, 0 };
	CHECK(ht_pages_check(&no_2m_hugetlb, HT_MODE_EXPLICIT) == HT_E_NOT_SUPPORTED);
	CHECK(ht_pages_check(&no_2m_hugetlb, HT_MODE_AUTO) == HT_E_NONE);
	CHECK(ht_pages_check(&no_2m_hugetlb, HT_MODE_THP) == HT_E_NONE);
	// A kernel without THP still moves explicit pages on 4 KiB pages.
	const ht_page_facts no_thp{ 4 * KiB, 0, 1 };
	CHECK(ht_pages_check(&no_thp, HT_MODE_EXPLICIT) == HT_E_NONE);
	// 64 KiB pages with a 2 MiB PMD (as powerpc's radix MMU has) would do.
	const ht_page_facts radix64{ 64 * KiB, 2 * MiB, 1 };
	CHECK(ht_pages_check(&radix64, HT_MODE_THP) == HT_E_NONE);
}

TEST_CASE("The report's reason names the kernel's page and PMD sizes", "[pagesize]")
{
	CHECK(reason(k16) == "this kernel's pages are 16 KiB and a PMD maps 32 MiB; hugetext moves 2 MiB pages only");
	CHECK(reason(k64) == "this kernel's pages are 64 KiB and a PMD maps 512 MiB; hugetext moves 2 MiB pages only");
	const ht_page_facts unknown_pmd{ 16 * KiB, 0, 1 }, odd{ 12288, 3 * MiB + 5, 0 }, none{ 0, 0, 0 };
	CHECK(reason(unknown_pmd) ==
	      "this kernel's pages are 16 KiB and its PMD size is unknown; hugetext moves 2 MiB pages only");
	CHECK(reason(odd) == "this kernel's pages are 12 KiB and a PMD maps 3145733 bytes; hugetext moves 2 MiB pages only");
	CHECK(reason(none) == "this kernel's page sizes are unknown; hugetext moves 2 MiB pages only");
	char small[20];
	CHECK(ht_pages_reason(&k64, small, sizeof(small)) == -ENOSPC);
}

TEST_CASE("This kernel's facts are what sysconf and sysfs say, read once", "[pagesize]")
{
	facts_guard guard;
	ht_page_facts_set(nullptr);
	real_open = ht_sys.open;
	ht_sys.open = counting_open;
	opens_of_pmd_file = 0;
	ht_page_facts f{};
	ht_page_facts_read(&f);
	ht_pages_usable(HT_MODE_THP);
	ht_page_facts_read(&f);
	ht_sys_reset();

	CHECK(f.base == (uint64_t)sysconf(_SC_PAGESIZE));
	std::string pmd = read_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
	if (!pmd.empty())
		CHECK(ht_pmd_size(&f) == std::stoull(pmd));
	// 4 KiB pages (x86-64, arm64): the PMD is 2 MiB by the page tables' format, nothing is read.
	CHECK(opens_of_pmd_file == (f.base == 4 * KiB ? 0 : 1));
	CHECK(f.hugetlb_2m == -1);
	// Asked for explicit pages only.
	const bool has_2m = access("/sys/kernel/mm/hugepages/hugepages-2048kB", F_OK) == 0;
	CHECK(ht_pages_usable(HT_MODE_EXPLICIT) ==
	      (ht_pmd_size(&f) != 2 * MiB ? HT_E_KERNEL_PAGES : has_2m ? HT_E_NONE : HT_E_NOT_SUPPORTED));
	// The text of the error comes with this kernel's sizes once they are read.
	CHECK(std::string(ht_error_str(HT_E_KERNEL_PAGES)) == reason(f));
}

TEST_CASE("Unreadable sysfs: a 4 KiB kernel still counts as 2 MiB PMDs, explicit pages are not assumed", "[pagesize]")
{
	facts_guard guard;
	ht_page_facts_set(nullptr);
	real_open = ht_sys.open;
	ht_sys.open = refusing_open;
	ht_page_facts f{};
	ht_page_facts_read(&f);
	enum ht_error thp = ht_pages_usable(HT_MODE_THP), explicit_pages = ht_pages_usable(HT_MODE_EXPLICIT);
	ht_sys_reset();
	CHECK(ht_pmd_size(&f) == (f.base == 4 * KiB ? 2 * MiB : 0));
	CHECK(thp == (f.base == 4 * KiB ? HT_E_NONE : HT_E_KERNEL_PAGES));
	CHECK(explicit_pages == (f.base == 4 * KiB ? HT_E_NOT_SUPPORTED : HT_E_KERNEL_PAGES));
}

TEST_CASE("Under a 16 or 64 KiB kernel's facts every mode skips the code, which stays as it was", "[pagesize]")
{
	facts_guard guard;
	const unsigned long sum = bigtext_sum(7);
	const std::string report = temp_path("pagesize-report");
	const std::string before = maps_over(bigtext_start, bigtext_end);

	for (const ht_page_facts *k : { &k16, &k64 }) {
		ht_page_facts_set(k);
		for (ht_mode m : { HT_MODE_AUTO, HT_MODE_THP, HT_MODE_EXPLICIT, HT_MODE_FOLIOS }) {
			struct ht_options opt;
			ht_options_init(&opt);
			opt.mode = m;
			opt.report_path = report.c_str();
			struct ht_region r;
			std::memset(&r, 0, sizeof(r));
			INFO("page " << k->base << ", mode " << ht_mode_str(m));
			CHECK(ht_remap_range(&opt, bigtext_start, bigtext_end, &r) == 0);
			CHECK(r.status == HT_STATUS_SKIPPED);
			CHECK(r.error == HT_E_KERNEL_PAGES);
			CHECK(r.huge_bytes == 0);
			CHECK(r.private_huge_bytes == 0);
			CHECK(maps_over(bigtext_start, bigtext_end) == before);
		}
		// The whole program: its code and any library asked for.
		struct ht_options opt;
		ht_options_init(&opt);
		opt.mode = HT_MODE_THP;
		ht_region regs[16];
		size_t n = 0;
		CHECK(ht_remap(&opt, regs, 16, &n) == 0);
		CHECK(n >= 1);
		for (size_t i = 0; i < n && i < 16; i++) {
			INFO(regs[i].object << ": " << ht_error_str(regs[i].error));
			CHECK((regs[i].error == HT_E_KERNEL_PAGES || regs[i].error == HT_E_TOO_SMALL));
			CHECK(regs[i].status == HT_STATUS_SKIPPED);
		}
		CHECK(maps_over(bigtext_start, bigtext_end) == before);
	}
	CHECK(bigtext_sum(7) == sum);
	// Each line of the report gives the reason with the sizes.
	auto lines = read_report(report);
	REQUIRE(lines.size() == 8);
	for (size_t i = 0; i < 4; i++)
		CHECK(lines[i]["error"] == reason(k16));
	for (size_t i = 4; i < 8; i++)
		CHECK(lines[i]["error"] == reason(k64));
	CHECK(lines[0]["status"] == "skipped");
}

TEST_CASE("With this kernel's own facts the check lets the move through", "[pagesize]")
{
	facts_guard guard;
	ht_page_facts_set(nullptr);
	ht_page_facts f{};
	ht_page_facts_read(&f);
	if (ht_pmd_size(&f) != 2 * MiB) {
		// A 16 or 64 KiB kernel (the arm64 guest): the skip is the answer.
		struct ht_region r;
		CHECK(ht_remap_range(nullptr, bigtext_start, bigtext_end, &r) == 0);
		CHECK(r.error == HT_E_KERNEL_PAGES);
		return;
	}
	struct ht_options opt;
	ht_options_init(&opt);
	opt.mode = HT_MODE_THP;
	opt.page_cache = 0;
	struct ht_region r;
	int err = ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
	INFO(ht_error_str(r.error));
	CHECK(r.error != HT_E_KERNEL_PAGES);
	if (thp_enabled()) {
		CHECK(err == 0);
		CHECK(r.status == HT_STATUS_OK);
		CHECK(r.huge_bytes > 0);
	}
}

TEST_CASE("a THP size is on from its own setting, or THP's when it inherits", "[pagesize][folios]")
{
	const char *on = "[always] madvise never", *mad = "always [madvise] never", *off = "always madvise [never]";

	CHECK(ht_thp_size_setting("always inherit [madvise] never", off, 0) == 1);
	CHECK(ht_thp_size_setting("[always] inherit madvise never", off, 0) == 1);
	CHECK(ht_thp_size_setting("always inherit madvise [never]", on, 1) == 0);
	CHECK(ht_thp_size_setting("always [inherit] madvise never", mad, 0) == 1);
	CHECK(ht_thp_size_setting("always [inherit] madvise never", off, 1) == 0);
	// No file for the size: kernels before 6.8.  The PMD size follows THP, others do not exist.
	CHECK(ht_thp_size_setting(nullptr, on, 1) == 1);
	CHECK(ht_thp_size_setting(nullptr, off, 1) == 0);
	CHECK(ht_thp_size_setting(nullptr, on, 0) == 0);
	CHECK(ht_thp_size_setting(nullptr, nullptr, 1) == 0);
	CHECK(ht_thp_size_setting("garbage", on, 1) == 0);
}

TEST_CASE("the copy's 64 KiB folios are counted as a lower bound from the kernel's counters",
	  "[pagesize][folios]")
{
	const size_t len = 2 * MiB; // 32 pieces of 64 KiB
	ht_folio_stats before{ 100, 7, 1 }, after{ 132, 7, 1 };

	CHECK(ht_folio_bytes(len, &before, &after) == len);
	// Others' fallbacks in the window count against the copy.
	after = { 140, 10, 1 };
	CHECK(ht_folio_bytes(len, &before, &after) == 29 * 64 * KiB);
	// Fewer allocations than pieces: no more than were made.
	after = { 120, 7, 1 };
	CHECK(ht_folio_bytes(len, &before, &after) == 20 * 64 * KiB);
	after = { 200, 50, 1 };
	CHECK(ht_folio_bytes(len, &before, &after) == 0);
	// Unread or gone backwards (a counter reset): nothing is claimed.
	after = { 132, 7, 0 };
	CHECK(ht_folio_bytes(len, &before, &after) == 0);
	after = { 50, 7, 1 };
	CHECK(ht_folio_bytes(len, &before, &after) == 0);
	before.ok = 0;
	after = { 132, 7, 1 };
	CHECK(ht_folio_bytes(len, &before, &after) == 0);
}
