// Description: the span planner and the check of segments against maps text.
#include <catch2/catch.hpp>

#include <cerrno>
#include <elf.h>
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
	struct ht_seg_query q = { s, e, next, 0, 0, 0, 0 };
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
	struct ht_seg_query q = { 0x7f0000200000, 0x7f00002012e1, 0x7f0000400000, 0, 0x7f0000000000, 0, 0 };
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
	struct ht_seg_query q = { 0x600000, 0x2900000, 0, 1, 0, 0, 0 };
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
	struct ht_seg_query q = { 0x600000, 0x29ff000, 0x2c00000, 0, 0x400000, 0, 0 };
	struct ht_seg_plan p;

	CHECK(ht_plan_segment(maps.data(), maps.size(), &q, M2, &p) == -EALREADY);
	// Without naming the object's other segment, the moved pages would pass for the object.
	q.id_addr = 0;
	CHECK(ht_plan_segment(maps.data(), maps.size(), &q, M2, &p) == 0);
}

// --- cover-ends: the end pages take the object's read-only neighbours ---

TEST_CASE("the head's page is taken from a floor below the segment only when its code pays", "[plan]")
{
	struct ht_span s;

	// 1.2 MiB of code in the head's page, headers below it from 0x400000.
	REQUIRE(ht_plan_span_from(0x4cd000, 0x9f69a9, 0x400000, 0xa00000, M2, &s) == 0);
	CHECK(s.start == 0x400000);
	CHECK(s.end == 0xa00000);
	// The floor above the page's start: the head stays on small pages.
	REQUIRE(ht_plan_span_from(0x4cd000, 0x9f69a9, 0x401000, 0xa00000, M2, &s) == 0);
	CHECK(s.start == 0x600000);
	// The paid floor: half a page of code is enough, one byte less is not.
	CHECK(ht_paid_floor(0x500000, 0x900000, 0x400000, M2) == 0x400000);
	CHECK(ht_paid_floor(0x500001, 0x900000, 0x400000, M2) == 0x500001);
	// A segment inside one page counts only its own bytes.
	CHECK(ht_paid_floor(0x480000, 0x500000, 0x400000, M2) == 0x480000);
	CHECK(ht_paid_floor(0x480000, 0x580000, 0x400000, M2) == 0x400000);
	// Inconsistent: a floor above the segment.
	CHECK(ht_plan_span_from(0x4cd000, 0x9f69a9, 0x500000, 0xa00000, M2, &s) == -EINVAL);
	CHECK(ht_paid_floor(0x4cd000, 0x9f69a9, 0x500000, M2) == 0x4cd000);
}

TEST_CASE("cover-ends spans hold at most twice their code in huge pages", "[plan]")
{
	uint64_t x = 2463534242ull;
	auto next = [&x](uint64_t mod) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		return x % mod;
	};
	int planned = 0, headed = 0;

	for (int i = 0; i < 100000; i++) {
		uintptr_t start = 0x2000000 + next(8 << 20);
		uintptr_t end = start + 1 + next(i % 2 ? (6 << 20) : (1 << 20));
		uintptr_t floor = start - next(4 << 20);
		uintptr_t limit = end + next(4 << 20);
		struct ht_span s;

		if (ht_plan_span_from(start, end, ht_paid_floor(start, end, floor, M2),
				      ht_paid_limit(end, limit, M2), M2, &s) != 0)
			continue;
		planned++;
		headed += s.start < start;
		uintptr_t code = (end < s.end ? end : s.end) - (start > s.start ? start : s.start);
		INFO(std::hex << floor << " " << start << "-" << end << " limit " << limit);
		REQUIRE(s.start >= floor);
		REQUIRE(s.end <= limit);
		REQUIRE(s.end - s.start <= 2 * code);
	}
	CHECK(planned > 1000);
	CHECK(headed > 1000);
}

TEST_CASE("the read-only bounds stop at writable segments, RELRO included", "[region]")
{
	// postgres's layout at 0x400000: headers r--, code, .rodata r--, RELRO+data rw-.
	const struct ht_seg segs[] = {
		{ 0x400000, 0x4cca60, PF_R },
		{ 0x4cd000, 0x9f69a9, PF_R | PF_X },
		{ 0x9f7000, 0xc4fe30, PF_R },
		{ 0xc508b0, 0xcb7900, PF_R | PF_W },
	};
	uintptr_t lo, hi;

	ht_readonly_around(segs, 4, 1, &lo, &hi);
	CHECK(lo == 0x400000);
	CHECK(hi == 0xc50000);
	// Data before the code: the bound is the page after it.
	const struct ht_seg data_first[] = {
		{ 0x400000, 0x400800, PF_R | PF_W },
		{ 0x401000, 0x480000, PF_R },
		{ 0x480000, 0x900000, PF_R | PF_X },
	};
	ht_readonly_around(data_first, 3, 2, &lo, &hi);
	CHECK(lo == 0x401000);
	CHECK(hi == 0x900000);
	// Writable code (or a bad index): no bounds, the rule is off.
	const struct ht_seg wx[] = { { 0x400000, 0x900000, PF_R | PF_W | PF_X } };
	ht_readonly_around(wx, 1, 0, &lo, &hi);
	CHECK(lo == 0);
	CHECK(hi == 0);
	ht_readonly_around(segs, 4, 4, &lo, &hi);
	CHECK(hi == 0);
}

// postgres, loaded at a 2 MiB boundary (hugetext edit --align).
static const std::string pg_aligned =
	"55e0c0400000-55e0c04cd000 r--p 00000000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n"
	"55e0c04cd000-55e0c09f7000 r-xp 000cd000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n"
	"55e0c09f7000-55e0c0c50000 r--p 005f7000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n"
	"55e0c0c50000-55e0c0c71000 r--p 00850000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n"
	"55e0c0c71000-55e0c0c86000 rw-p 00871000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n"
	"55e0c0c86000-55e0c0cb8000 rw-p 00000000 00:00 0 \n";

static struct ht_seg_query pg_query(uintptr_t base, int ends)
{
	struct ht_seg_query q = { base + 0xcd000, base + 0x5f69a9, base + 0x5f7000, 0, base + 0x8508b0, 0, 0 };

	if (ends) {
		q.ro_start = base;
		q.ro_end = base + 0x850000;
	}
	return q;
}

static int plan_q(const std::string &maps, const struct ht_seg_query &q, struct ht_seg_plan *p)
{
	return ht_plan_segment(maps.data(), maps.size(), &q, M2, p);
}

TEST_CASE("cover-ends takes the headers and .rodata in the code's end pages", "[region]")
{
	const uintptr_t base = 0x55e0c0400000;
	struct ht_seg_plan p;

	// Off: the 2 MiB of whole pages inside the code.
	struct ht_seg_query q = pg_query(base, 0);
	REQUIRE(plan_q(pg_aligned, q, &p) == 0);
	CHECK(p.span.start == base + 0x200000);
	CHECK(p.span.end == base + 0x400000);
	CHECK(p.readonly == 0);
	CHECK(p.code == 0x200000);

	// On: all the code, from the headers' first byte to inside .rodata.
	q = pg_query(base, 1);
	REQUIRE(plan_q(pg_aligned, q, &p) == 0);
	CHECK(p.span.start == base);
	CHECK(p.span.end == base + 0x600000);
	CHECK(p.code == 0x5299a9);
	CHECK(p.readonly == 0x600000 - 0x5299a9);
	CHECK(p.mapped == 0x600000);
	CHECK_FALSE(p.reserve_gap);
	// One pread of the whole span: the offsets follow the addresses.
	CHECK(p.file_backed);
	CHECK(p.file_off == 0);
	CHECK(std::string(p.path) == "/usr/lib/postgresql/15/bin/postgres");
}

// postgres's layout at any page-aligned base (ASLR), as the maps show it.
static std::string pg_at(uintptr_t base)
{
	static const struct { uintptr_t from, to, off; const char *perms; } m[] = {
		{ 0, 0xcd000, 0, "r--p" }, { 0xcd000, 0x5f7000, 0xcd000, "r-xp" },
		{ 0x5f7000, 0x850000, 0x5f7000, "r--p" }, { 0x850000, 0x871000, 0x850000, "r--p" },
		{ 0x871000, 0x886000, 0x871000, "rw-p" },
	};
	std::string out;
	char line[160];

	for (auto &e : m) {
		snprintf(line, sizeof(line), "%lx-%lx %s %08lx 08:02 20 /pg\n", (unsigned long)(base + e.from),
			 (unsigned long)(base + e.to), e.perms, (unsigned long)e.off);
		out += line;
	}
	return out;
}

TEST_CASE("cover-ends at an unaligned base: the head only when its page starts in the headers", "[region]")
{
	struct ht_seg_plan p;

	// 0x140000 past a boundary: the head's page starts inside the headers.
	uintptr_t base = 0x55e0c0540000;
	REQUIRE(plan_q(pg_at(base), pg_query(base, 1), &p) == 0);
	CHECK(p.span.start == 0x55e0c0600000);
	CHECK(p.span.end == 0x55e0c0c00000);
	CHECK(p.code == 0x5299a9);
	CHECK(p.readonly == (0x60d000 - 0x600000) + (0xc00000 - 0xb369a9));
	CHECK(p.file_backed);
	CHECK(p.file_off == 0x600000 - 0x540000);

	// 0x100000 past a boundary: the head's page starts below the object
	// (free space, not the object's own), and the tail's page holds less
	// than 1 MiB of code: as without the setting.
	base = 0x55e0c0500000;
	REQUIRE(plan_q(pg_at(base), pg_query(base, 1), &p) == 0);
	CHECK(p.span.start == 0x55e0c0600000);
	CHECK(p.span.end == 0x55e0c0a00000);
	CHECK(p.readonly == 0);
	struct ht_seg_plan off;
	REQUIRE(plan_q(pg_at(base), pg_query(base, 0), &off) == 0);
	CHECK(off.span.start == p.span.start);
	CHECK(off.span.end == p.span.end);
}

TEST_CASE("cover-ends never covers less than the default, at every base", "[region]")
{
	size_t with = 0, without = 0;

	for (uintptr_t b = 0; b < M2; b += 0x1000) {
		uintptr_t base = 0x55e0c0000000 + b;
		std::string maps = pg_at(base);
		struct ht_seg_plan on, off;

		INFO(std::hex << base);
		REQUIRE(plan_q(maps, pg_query(base, 1), &on) == 0);
		REQUIRE(plan_q(maps, pg_query(base, 0), &off) == 0);
		REQUIRE(on.span.start <= off.span.start);
		REQUIRE(on.span.end >= off.span.end);
		REQUIRE(on.span.end - on.span.start <= 2 * on.code);
		with += on.code;
		without += off.code;
	}
	// Over all 512 placements: the setting covers more on average.
	CHECK(with > without);
}

TEST_CASE("cover-ends refuses a page with anything but the object's read-only data", "[region]")
{
	const uintptr_t base = 0x55e0c0400000;
	struct ht_seg_query q = pg_query(base, 1);
	struct ht_seg_plan p;
	auto with = [](const char *line, int at) {
		// Replace line @at of pg_aligned by @line.
		std::string out, l;
		size_t pos = 0;
		for (int i = 0; pos < pg_aligned.size(); i++) {
			size_t nl = pg_aligned.find('\n', pos);
			l = pg_aligned.substr(pos, nl + 1 - pos);
			out += i == at ? std::string(line) : l;
			pos = nl + 1;
		}
		return out;
	};

	// A writable neighbour: .rodata's mapping made writable (mprotect).
	std::string rw_tail = with("55e0c09f7000-55e0c0c50000 rw-p 005f7000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n", 2);
	REQUIRE(plan_q(rw_tail, q, &p) == 0);
	CHECK(p.span.start == base);
	CHECK(p.span.end == base + 0x400000);
	// A writable head (the headers made writable).
	std::string rw_head = with("55e0c0400000-55e0c04cd000 rw-p 00000000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n", 0);
	REQUIRE(plan_q(rw_head, q, &p) == 0);
	CHECK(p.span.start == base + 0x200000);
	CHECK(p.span.end == base + 0x600000);
	// Another object's bytes in the head's page.
	std::string other = with("55e0c0400000-55e0c04cd000 r--p 00000000 08:02 99 /usr/lib/other.so\n", 0);
	REQUIRE(plan_q(other, q, &p) == 0);
	CHECK(p.span.start == base + 0x200000);
	// A gap in the head's page (the headers' mapping starts later).
	std::string gap = with("55e0c0401000-55e0c04cd000 r--p 00001000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n", 0);
	REQUIRE(plan_q(gap, q, &p) == 0);
	CHECK(p.span.start == base + 0x200000);
	// The loader's PROT_NONE hole of the same object is not read-only data either.
	std::string hole = with("55e0c09f7000-55e0c0c50000 ---p 005f7000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n", 2);
	REQUIRE(plan_q(hole, q, &p) == 0);
	CHECK(p.span.end == base + 0x400000);
	// A page past the read-only bounds (a writable segment's page, RELRO
	// shown r--p in the maps) is never taken.
	q.ro_end = base + 0x5f7000;
	REQUIRE(plan_q(pg_aligned, q, &p) == 0);
	CHECK(p.span.end == base + 0x400000);
	q = pg_query(base, 1);
	q.ro_start = base + 0x1000;
	REQUIRE(plan_q(pg_aligned, q, &p) == 0);
	CHECK(p.span.start == base + 0x200000);
	// Neighbours whose offsets do not follow the code's: no single pread.
	std::string moved = with("55e0c0400000-55e0c04cd000 r--p 00100000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n", 0);
	q = pg_query(base, 1);
	REQUIRE(plan_q(moved, q, &p) == 0);
	CHECK(p.span.start == base);
	CHECK_FALSE(p.file_backed);
}

TEST_CASE("a span moved with its neighbours is recognised as moved", "[region]")
{
	const uintptr_t base = 0x55e0c0400000;
	const std::string maps =
		"55e0c0400000-55e0c0600000 r-xp 00000000 00:00 0 \n"
		"55e0c0600000-55e0c0c50000 r--p 00600000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n"
		"55e0c0c50000-55e0c0c71000 r--p 00850000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n"
		"55e0c0c71000-55e0c0c86000 rw-p 00871000 08:02 20 /usr/lib/postgresql/15/bin/postgres\n";
	struct ht_seg_query q = pg_query(base, 1);
	struct ht_seg_plan p;

	CHECK(plan_q(maps, q, &p) == -EALREADY);
}
