// Description: the span planner and the check of segments against maps text.
#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

extern "C" {
#include "region.h"
}

static const size_t M2 = 2u << 20;

TEST_CASE("planner takes the aligned inner span of an unaligned segment", "[plan]")
{
	struct ht_span s;

	REQUIRE(ht_plan_span(0x401000, 0x2a31234, 0x2a32000, M2, &s) == 0);
	CHECK(s.start == 0x600000);
	CHECK(s.end == 0x2a00000);
}

TEST_CASE("planner skips a segment smaller than 2 MiB", "[plan]")
{
	struct ht_span s;

	CHECK(ht_plan_span(0x401000, 0x5ff000, 0x5ff000, M2, &s) == -ERANGE);
	// 3 MiB long, but no whole aligned 2 MiB page inside it.
	CHECK(ht_plan_span(0x500000, 0x7ff000, 0x7ff000, M2, &s) == -ERANGE);
}

TEST_CASE("planner keeps an already aligned segment whole", "[plan]")
{
	struct ht_span s;

	REQUIRE(ht_plan_span(0x600000, 0xa00000, 0xa00000, M2, &s) == 0);
	CHECK(s.start == 0x600000);
	CHECK(s.end == 0xa00000);
}

TEST_CASE("planner handles a segment ending exactly on a boundary", "[plan]")
{
	struct ht_span s;

	REQUIRE(ht_plan_span(0x401000, 0xa00000, 0xa00000, M2, &s) == 0);
	CHECK(s.start == 0x600000);
	CHECK(s.end == 0xa00000);
}

TEST_CASE("planner covers the tail only when the space after it is ours", "[plan]")
{
	struct ht_span s;

	// Free up to the next boundary: the last partial page is covered too.
	REQUIRE(ht_plan_span(0x600000, 0x912345, 0xa00000, M2, &s) == 0);
	CHECK(s.end == 0xa00000);
	// Something mapped before the boundary: the tail stays on small pages.
	REQUIRE(ht_plan_span(0x600000, 0x912345, 0x913000, M2, &s) == 0);
	CHECK(s.end == 0x800000);
}

TEST_CASE("a huge page pays for itself when at least half of it is code", "[plan]")
{
	CHECK(ht_page_pays(M2, M2));
	CHECK(ht_page_pays(M2 / 2, M2));
	CHECK_FALSE(ht_page_pays(M2 / 2 - 1, M2));
	CHECK_FALSE(ht_page_pays(17 << 10, M2));
	CHECK_FALSE(ht_page_pays(0, M2));
	// The limit: kept when the tail pays, else the segment's end.
	CHECK(ht_paid_limit(0x900000, 0xa00000, M2) == 0xa00000);
	CHECK(ht_paid_limit(0x8fffff, 0xa00000, M2) == 0x8fffff);
	CHECK(ht_paid_limit(0x800000, 0x800000, M2) == 0x800000);
	CHECK(ht_paid_limit(0x900000, 0x800000, M2) == 0x800000); // inconsistent: unchanged
}

// The planner as the library calls it: the tail's page only when it pays.
static int plan_paid(uintptr_t start, uintptr_t end, uintptr_t limit, struct ht_span *s)
{
	return ht_plan_span(start, end, ht_paid_limit(end, limit, M2), M2, s);
}

TEST_CASE("planner spends a page on the tail only when the tail pays for it", "[plan]")
{
	struct ht_span s;

	// Exactly 1 MiB of code in the last page, free space after it.
	REQUIRE(plan_paid(0x600000, 0x900000, 0xa00000, &s) == 0);
	CHECK(s.end == 0xa00000);
	// One byte less: the tail stays on small pages.
	REQUIRE(plan_paid(0x600000, 0x8fffff, 0xa00000, &s) == 0);
	CHECK(s.end == 0x800000);
	// A small object alone in its 2 MiB (p_align 2 MiB, 17 KiB of code).
	CHECK(plan_paid(0x7f0000200000, 0x7f0000204400, 0x7f0000400000, &s) == -ERANGE);
	// 1.5 MiB of code from an unaligned start: no page of it is whole or half full.
	CHECK(plan_paid(0x680000, 0x800000, 0x800000, &s) == -ERANGE);
	// Most of a page from an aligned start, with room after it: one page.
	REQUIRE(plan_paid(0x600000, 0x7ff000, 0x800000, &s) == 0);
	CHECK(s.start == 0x600000);
	CHECK(s.end == 0x800000);
}

TEST_CASE("no planned span holds more than twice its code in huge pages", "[plan]")
{
	uint64_t x = 88172645463325252ull;
	auto next = [&x](uint64_t mod) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		return x % mod;
	};
	int planned = 0;

	for (int i = 0; i < 100000; i++) {
		uintptr_t start = 0x400000 + next(8 << 20);
		uintptr_t end = start + 1 + next(i % 2 ? (4 << 20) : (64 << 10));
		uintptr_t limit = end + next(4 << 20);
		struct ht_span s;

		if (plan_paid(start, end, limit, &s) != 0)
			continue;
		planned++;
		uintptr_t code = (end < s.end ? end : s.end) - s.start;
		INFO(std::hex << start << "-" << end << " limit " << limit);
		REQUIRE(s.start >= start);
		REQUIRE(s.end <= limit);
		REQUIRE(s.end - s.start <= 2 * code);
	}
	CHECK(planned > 1000);
}

TEST_CASE("planner rejects inconsistent input", "[plan]")
{
	struct ht_span s;

	CHECK(ht_plan_span(0x800000, 0x600000, 0x800000, M2, &s) == -EINVAL);
	CHECK(ht_plan_span(0x600000, 0x800000, 0x700000, M2, &s) == -EINVAL);
	CHECK(ht_plan_span(0x600000, 0x800000, 0x800000, 3 << 20, &s) == -EINVAL);
	CHECK(ht_plan_span(0x600000, 0x800000, 0x800000, M2, nullptr) == -EINVAL);
	CHECK(ht_plan_span(UINTPTR_MAX - 0x1000, UINTPTR_MAX, UINTPTR_MAX, M2, &s) == -ERANGE);
}

// A program with two executable segments, a PROT_NONE hole after the
// second (as ld.so leaves between segments) and data after that.
static const std::string two_segments =
	"00400000-00401000 r--p 00000000 08:02 10 /bin/two\n"
	"00401000-00c00000 r-xp 00001000 08:02 10 /bin/two\n"
	"00c00000-00e00000 r--p 00c00000 08:02 10 /bin/two\n"
	"01000000-01c80000 r-xp 01000000 08:02 10 /bin/two\n"
	"01c80000-02000000 ---p 01c80000 08:02 10 /bin/two\n"
	"02000000-02100000 rw-p 02000000 08:02 10 /bin/two\n";

static int plan(const std::string &maps, uintptr_t s, uintptr_t e, uintptr_t next,
		struct ht_seg_plan *p)
{
	struct ht_seg_query q = { s, e, next, 0, 0 };
	return ht_plan_segment(maps.data(), maps.size(), &q, M2, p);
}

TEST_CASE("segments are planned one by one, each from its own mapping", "[region]")
{
	struct ht_seg_plan p;

	// The last page of the segment ends on a boundary: the span reaches it.
	REQUIRE(plan(two_segments, 0x401000, 0xbff123, 0xc00000, &p) == 0);
	CHECK(p.span.start == 0x600000);
	CHECK(p.span.end == 0xc00000);
	CHECK(p.file_backed);
	CHECK(p.file_off == 0x1000 + (0x600000 - 0x401000));
	CHECK(p.mapped == 0x600000);
	REQUIRE(plan(two_segments, 0x401000, 0xa12345, 0xc00000, &p) == 0);
	CHECK(p.span.end == 0xa00000);
	CHECK(std::string(p.path) == "/bin/two");

	// The second segment's tail holds 510 KiB of code: not worth a 2 MiB
	// page, though the loader's PROT_NONE hole after it is free.
	REQUIRE(plan(two_segments, 0x1000000, 0x1c7f800, 0x2000000, &p) == 0);
	CHECK(p.span.start == 0x1000000);
	CHECK(p.span.end == 0x1c00000);
	CHECK(p.mapped == 0xc00000);
	CHECK_FALSE(p.reserve_gap);
}

TEST_CASE("a tail with enough code grows over the loader's PROT_NONE hole", "[region]")
{
	const std::string maps =
		"00400000-00401000 r--p 00000000 08:02 10 /bin/two\n"
		"01000000-01d80000 r-xp 01000000 08:02 10 /bin/two\n"
		"01d80000-02000000 ---p 01d80000 08:02 10 /bin/two\n"
		"02000000-02100000 rw-p 02000000 08:02 10 /bin/two\n";
	struct ht_seg_plan p;

	REQUIRE(plan(maps, 0x1000000, 0x1d7f800, 0x2000000, &p) == 0);
	CHECK(p.span.start == 0x1000000);
	CHECK(p.span.end == 0x1e00000);
	CHECK(p.mapped == 0xd80000);
	CHECK_FALSE(p.reserve_gap);
}

TEST_CASE("a library linked with 2 MiB segments and a few KiB of code gets no huge page", "[region]")
{
	// libXdmcp's layout: code on a 2 MiB boundary, the loader's hole after it.
	const std::string maps =
		"7f0000000000-7f0000001000 r--p 00000000 08:02 12 /usr/lib/libtiny.so\n"
		"7f0000001000-7f0000200000 ---p 00001000 08:02 12 /usr/lib/libtiny.so\n"
		"7f0000200000-7f0000202000 r-xp 00200000 08:02 12 /usr/lib/libtiny.so\n"
		"7f0000202000-7f0000400000 ---p 00202000 08:02 12 /usr/lib/libtiny.so\n"
		"7f0000400000-7f0000401000 r--p 00400000 08:02 12 /usr/lib/libtiny.so\n";
	struct ht_seg_query q = { 0x7f0000200000, 0x7f00002012e1, 0x7f0000400000, 0, 0x7f0000000000 };
	struct ht_seg_plan p;

	CHECK(ht_plan_segment(maps.data(), maps.size(), &q, M2, &p) == -ERANGE);
	CHECK(std::string(p.path) == "/usr/lib/libtiny.so");
}

TEST_CASE("a tail followed by free space is covered with a reservation", "[region]")
{
	const std::string maps =
		"00600000-00b34000 r-xp 00000000 08:02 11 /bin/relinked\n"
		"00c00000-00d00000 r--p 00600000 08:02 11 /bin/relinked\n";
	struct ht_seg_plan p;

	REQUIRE(plan(maps, 0x600000, 0xb33456, 0xc00000, &p) == 0);
	CHECK(p.span.start == 0x600000);
	CHECK(p.span.end == 0xc00000);
	CHECK(p.mapped == 0x534000);
	CHECK(p.reserve_gap);
}

TEST_CASE("a tail followed by another object stays on small pages", "[region]")
{
	const std::string maps =
		"00600000-00b34000 r-xp 00000000 08:02 11 /bin/relinked\n"
		"00b34000-00b35000 rw-p 00000000 00:00 0 \n";
	struct ht_seg_plan p;

	REQUIRE(plan(maps, 0x600000, 0xb33456, 0, &p) == 0);
	CHECK(p.span.end == 0xa00000);
	CHECK_FALSE(p.reserve_gap);
}

TEST_CASE("segments that maps do not show as code are refused", "[region]")
{
	struct ht_seg_plan p;
	const std::string writable =
		"00400000-02a00000 rwxp 00000000 08:02 10 /bin/x\n";
	const std::string holey =
		"00400000-00800000 r-xp 00000000 08:02 10 /bin/x\n"
		"00900000-02a00000 r-xp 00900000 08:02 10 /bin/x\n";
	const std::string two_files =
		"00400000-00801000 r-xp 00000000 08:02 10 /bin/x\n"
		"00801000-02a00000 r-xp 00801000 08:02 99 /bin/y\n";
	const std::string shared =
		"00400000-02a00000 r-xs 00000000 08:02 10 /bin/x\n";

	CHECK(plan(writable, 0x400000, 0x2a00000, 0, &p) == -ENOENT); // a JIT's: must stay writable
	CHECK(plan(holey, 0x400000, 0x2a00000, 0, &p) == -ENOENT);
	CHECK(plan(two_files, 0x400000, 0x2a00000, 0, &p) == -ENOENT);
	CHECK(plan(shared, 0x400000, 0x2a00000, 0, &p) == -ENOENT);
	CHECK(plan(two_segments, 0x3000000, 0x4000000, 0, &p) == -ENOENT);
}

TEST_CASE("file offsets out of order rule out a single pread", "[region]")
{
	const std::string maps =
		"00400000-00800000 r-xp 00000000 08:02 10 /bin/x\n"
		"00800000-02a00000 r-xp 00900000 08:02 10 /bin/x\n";
	struct ht_seg_plan p;

	REQUIRE(plan(maps, 0x400000, 0x2a00000, 0, &p) == 0);
	CHECK_FALSE(p.file_backed);
}

TEST_CASE("a segment already moved is recognised", "[region]")
{
	const std::string maps =
		"00401000-00600000 r-xp 00001000 08:02 10 /bin/x\n"
		"00600000-02a00000 r-xp 00000000 00:00 0 \n"
		"02a00000-02a31000 r-xp 02a00000 08:02 10 /bin/x\n";
	struct ht_seg_plan p;

	CHECK(plan(maps, 0x401000, 0x2a30123, 0, &p) == -EALREADY);
}

TEST_CASE("explicit pages and shared cache files are recognised as moved too", "[region]")
{
	const std::string explicit_pages =
		"00401000-00600000 r-xp 00001000 08:02 10 /bin/x\n"
		"00600000-02a00000 r-xp 00000000 00:0f 4242 /anon_hugepage (deleted)\n"
		"02a00000-02a31000 r-xp 02a00000 08:02 10 /bin/x\n";
	const std::string cached =
		"00401000-00600000 r-xp 00001000 08:02 10 /bin/x\n"
		"00600000-02a00000 r-xp 00000000 00:2d 77 /mnt/huge/c/b-12-0.text.tmp.9.link (deleted)\n";
	struct ht_seg_plan p;

	CHECK(plan(explicit_pages, 0x401000, 0x2a30123, 0, &p) == -EALREADY);
	CHECK(plan(cached, 0x401000, 0x29ff000, 0, &p) == -EALREADY);
}

TEST_CASE("range mode accepts anonymous code but never extends it", "[region]")
{
	const std::string maps =
		"00600000-02a00000 r-xp 00000000 00:00 0 \n";
	struct ht_seg_query q = { 0x600000, 0x2900000, 0, 1, 0 };
	struct ht_seg_plan p;

	REQUIRE(ht_plan_segment(maps.data(), maps.size(), &q, M2, &p) == 0);
	CHECK(p.span.start == 0x600000);
	CHECK(p.span.end == 0x2800000);
	CHECK_FALSE(p.file_backed);
	CHECK(p.anonymous);
}

TEST_CASE("a segment too small still reports its object", "[region]")
{
	const std::string maps =
		"00401000-00480000 r-xp 00001000 08:02 10 /bin/small\n";
	struct ht_seg_plan p;

	CHECK(plan(maps, 0x401000, 0x47f000, 0, &p) == -ERANGE);
	CHECK(std::string(p.path) == "/bin/small");
}

TEST_CASE("a segment moved from its first page on is told from its object", "[region]")
{
	// Relinked for 2 MiB: the code starts on a boundary, so after a move
	// not one page of the segment is the file's; the data segment still is.
	const std::string maps =
		"00400000-00401000 r--p 00000000 08:02 10 /bin/aligned\n"
		"00600000-02a00000 r-xp 00000000 00:0f 4242 /anon_hugepage (deleted)\n"
		"02c00000-02c01000 rw-p 00400000 08:02 10 /bin/aligned\n";
	struct ht_seg_query q = { 0x600000, 0x29ff000, 0x2c00000, 0, 0x400000 };
	struct ht_seg_plan p;

	CHECK(ht_plan_segment(maps.data(), maps.size(), &q, M2, &p) == -EALREADY);
	// Without naming the object's other segment, the moved pages would pass for the object.
	q.id_addr = 0;
	CHECK(ht_plan_segment(maps.data(), maps.size(), &q, M2, &p) == 0);
}
