// Description: the code footprint of measure (tools/footprint.c): code
// mappings and their Referenced bytes read from smaps text, distinct 2 MiB
// pages of synthetic page sets, the windows' working set, and what the
// estimate says against the iTLB and the calibration.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "footprint.h"

namespace {

const char smaps[] =
	"00400000-00600000 r-xp 00000000 fd:00 1234  /usr/bin/prog\n"
	"Size:               2048 kB\n"
	"Referenced:          400 kB\n"
	"AnonHugePages:         0 kB\n"
	"00600000-00700000 rw-p 00200000 fd:00 1234  /usr/bin/prog\n"
	"Referenced:          900 kB\n"
	"7f0000000000-7f0000400000 r-xp 00000000 fd:00 99  /usr/lib/libbig.so\n"
	"Referenced:         1024 kB\n"
	"7fff00000000-7fff00001000 r-xp 00000000 00:00 0  [vdso]\n"
	"Referenced:            4 kB\n"
	"7fff10000000-7fff10010000 r-xp 00000000 00:00 0 \n"
	"Referenced:           64 kB\n"
	"Referenced: garbage\n";

hte_itlb zen4_itlb()
{
	hte_itlb t = {};
	t.l1_4k = 64;
	t.l2_4k = 512;
	t.l1_2m = 64;
	t.l2_2m = 512;
	return t;
}

} // namespace

TEST_CASE("smaps: executable mappings and their Referenced bytes, the kernel's own left out", "[footprint]")
{
	hte_range r[8];
	uint64_t code, ref;
	size_t n = hte_smaps_code(smaps, std::strlen(smaps), r, 8, &code, &ref);
	// prog, libbig, the anonymous r-x (a JIT's); not the data, not [vdso].
	REQUIRE(n == 3);
	CHECK(r[0].start == 0x400000);
	CHECK(r[0].end == 0x600000);
	CHECK(r[1].start == 0x7f0000000000);
	CHECK(code == 0x200000 + 0x400000 + 0x10000);
	CHECK(ref == (400 + 1024 + 64) * 1024ull);
	// Room for one range only: the count still says three, nothing written past.
	hte_range one[1];
	CHECK(hte_smaps_code(smaps, std::strlen(smaps), one, 1, &code, &ref) == 3);
	// Truncated text: what is whole counts.
	CHECK(hte_smaps_code(smaps, 80, r, 8, &code, &ref) == 1);
	CHECK(hte_smaps_code("", 0, r, 8, &code, &ref) == 0);
	CHECK(code == 0);
}

TEST_CASE("distinct 2 MiB pages of synthetic page sets", "[footprint]")
{
	// 512 4 KiB pages per 2 MiB page.
	std::vector<uint64_t> one_huge;
	for (uint64_t p = 512; p < 1024; p++)
		one_huge.push_back(p);
	CHECK(hte_pages_2m(one_huge.data(), one_huge.size()) == 1);
	std::vector<uint64_t> sparse = { 0, 511, 512, 2048, 2049, 100000 };
	CHECK(hte_pages_2m(sparse.data(), sparse.size()) == 4);
	// One page in each of 1000 huge pages.
	std::vector<uint64_t> spread;
	for (uint64_t i = 0; i < 1000; i++)
		spread.push_back(i * 512 + 7);
	CHECK(hte_pages_2m(spread.data(), spread.size()) == 1000);
	CHECK(hte_pages_2m(nullptr, 0) == 0);
}

TEST_CASE("the working set of the windows: the most and the median, in 4 KiB pages", "[footprint]")
{
	hte_footprint f = {};
	std::vector<uint64_t> refs = { 400 << 12, 100 << 12, 300 << 12, 200 << 12 };
	hte_footprint_windows(&f, refs.data(), refs.size(), 50);
	CHECK(f.windows == 4);
	CHECK(f.window_ms == 50);
	CHECK(f.ws_max == 400);
	CHECK(f.ws_median == 250);
	hte_footprint_windows(&f, nullptr, 0, 50);
	CHECK(f.ws_max == 0);
}

TEST_CASE("the estimate: fits the 4 KiB entries, or misses and fits 2 MiB, or overflows both", "[footprint]")
{
	hte_itlb t = zen4_itlb();
	hte_estimate e;
	hte_footprint f = {};
	f.windows = 10;
	f.window_ms = 50;
	f.pages_known = 1;

	f.ws_max = 300;
	f.pages_2m = 3;
	hte_footprint_estimate(&f, &t, nullptr, &e);
	CHECK_FALSE(e.misses_4k);
	CHECK(std::string(e.text).find("fits the 512 4 KiB iTLB entries: huge pages cannot help") != std::string::npos);

	f.ws_max = 5120;
	f.pages_2m = 40;
	hte_footprint_estimate(&f, &t, nullptr, &e);
	CHECK(e.misses_4k);
	CHECK(e.fits_2m);
	CHECK(e.over_4k == Approx(10.0));
	CHECK(std::string(e.text).find("is 10.0x the 512 4 KiB iTLB entries") != std::string::npos);
	CHECK(std::string(e.text).find("the 40 pages of 2 MiB its code lies in fit the 512 2 MiB entries") !=
	      std::string::npos);
	// What it cannot tell, said every time.
	CHECK(std::string(e.text).find("How often it misses is what counters tell") != std::string::npos);

	f.pages_2m = 700;
	hte_footprint_estimate(&f, &t, nullptr, &e);
	CHECK_FALSE(e.fits_2m);
	CHECK(std::string(e.text).find("huge pages make the misses fewer, not none") != std::string::npos);

	hte_calib cal = {};
	cal.verdict = HTE_CALIB_HUGE_GAINS;
	cal.walk_ns_per_page = 24.8;
	f.pages_2m = 40;
	hte_footprint_estimate(&f, &t, &cal, &e);
	CHECK(std::string(e.text).find("A miss costs about 25 ns here (calibration)") != std::string::npos);
	cal.verdict = HTE_CALIB_NO_GAIN;
	hte_footprint_estimate(&f, &t, &cal, &e);
	CHECK(std::string(e.text).find("2 MiB pages of code gain nothing on this machine") != std::string::npos);

	hte_itlb unknown = {};
	hte_footprint_estimate(&f, &unknown, nullptr, &e);
	CHECK(std::string(e.text).find("does not say how big its iTLB is") != std::string::npos);

	hte_footprint empty = {};
	hte_footprint_estimate(&empty, &t, nullptr, &e);
	CHECK(std::string(e.text).find("ended before it could be sampled") != std::string::npos);
}
