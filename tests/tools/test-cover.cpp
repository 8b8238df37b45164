// Description: the coverage of a file's code by 2 MiB pages, computed from
// its program headers with the library's planner rule (tools/cover.h).
#include <catch2/catch.hpp>

#include "cover.h"

namespace {

const uint32_t LOAD = 1, R = 4, W = 2, X = 1;
const uint64_t M2 = 0x200000;

hte_seg seg(uint32_t flags, uint64_t vaddr, uint64_t memsz, uint64_t align = 0x1000)
{
	hte_seg s{};
	s.type = LOAD;
	s.flags = flags;
	s.vaddr = vaddr;
	s.offset = vaddr & 0xffffff;
	s.filesz = s.memsz = memsz;
	s.align = align;
	return s;
}

hte_cover cover(const std::vector<hte_seg> &segs, size_t i, uint64_t align)
{
	hte_cover c;
	REQUIRE(hte_cover_segment(segs.data(), segs.size(), i, align, &c) == 0);
	return c;
}

} // namespace

TEST_CASE("a segment on 2 MiB boundaries is covered whole", "[cover]")
{
	std::vector<hte_seg> s = { seg(R | X, 0x400000, 0x600000), seg(R, 0xa00000, 0x1000) };
	hte_cover c = cover(s, 0, M2);
	CHECK(c.exact);
	CHECK(c.bytes == 0x600000);
	CHECK(c.covered == 0x600000);
	CHECK(c.best == 0x600000);
	CHECK(c.span_start == 0x400000);
	CHECK(c.span_end == 0xa00000);
}

TEST_CASE("only the aligned inside counts when the next segment takes the last huge page", "[cover]")
{
	// bigtext-nopie's layout: text from 0x401000, rodata on the next 4 KiB page.
	std::vector<hte_seg> s = { seg(R, 0x400000, 0x1000), seg(R | X, 0x401000, 0x2802009),
				   seg(R, 0x2c04000, 0x1fc) };
	hte_cover c = cover(s, 1, M2);
	CHECK(c.covered == 0x2600000);
	CHECK(c.span_start == 0x600000);
	CHECK(c.span_end == 0x2c00000);
}

TEST_CASE("the last huge page covers the tail when no segment starts in it", "[cover]")
{
	std::vector<hte_seg> s = { seg(R | X, 0x401000, 0x2802009), seg(R, 0x3000000, 0x1000) };
	hte_cover c = cover(s, 0, M2);
	CHECK(c.span_start == 0x600000);
	CHECK(c.span_end == 0x2e00000);
	// From the span's start to the segment's end.
	CHECK(c.covered == 0x401000 + 0x2802009 - 0x600000);

	SECTION("the last segment of the file has free space after it") {
		std::vector<hte_seg> last = { seg(R | X, 0x401000, 0x2802009) };
		CHECK(cover(last, 0, M2).span_end == 0x2e00000);
	}
	SECTION("a segment starting exactly at the boundary leaves the page free") {
		std::vector<hte_seg> t = { seg(R | X, 0x401000, 0x2802009), seg(R, 0x2e00000, 0x1000) };
		CHECK(cover(t, 0, M2).span_end == 0x2e00000);
	}
	SECTION("segments below the code do not limit it") {
		std::vector<hte_seg> t = { seg(R | X, 0x401000, 0x2802009), seg(R, 0x100000, 0x1000) };
		CHECK(cover(t, 0, M2).span_end == 0x2e00000);
	}
}

TEST_CASE("a segment without one whole huge page covers nothing, unless it starts on a boundary", "[cover]")
{
	std::vector<hte_seg> s = { seg(R | X, 0x1000, 0x10000), seg(R, 0x11000, 0x1000) };
	hte_cover c = cover(s, 0, M2);
	CHECK(c.covered == 0);
	CHECK(c.span_start == 0);
	CHECK(c.span_end == 0);
	// Relinked to a boundary with the rest of the page free: one huge page holds it all.
	std::vector<hte_seg> t = { seg(R | X, 0x200000, 0x10000, M2), seg(R, 0x400000, 0x1000, M2) };
	CHECK(cover(t, 0, M2).covered == 0x10000);
}

TEST_CASE("an unknown load address gives the worst placement as guaranteed and names the best", "[cover]")
{
	// bigtext-pie's layout: 40 MiB of text at 0x1000, p_align 4 KiB.
	std::vector<hte_seg> s = { seg(R, 0, 0x928), seg(R | X, 0x1000, 0x2802009), seg(R, 0x2804000, 0x1fc) };
	hte_cover c = cover(s, 1, 0x1000);
	CHECK_FALSE(c.exact);
	CHECK(c.covered == 0x2600000); // 19 huge pages whatever the placement
	CHECK(c.best == 0x2800000);    // 20 when the text starts on a boundary
	CHECK(c.covered <= c.best);

	SECTION("with 64 KiB alignment the text, 4 KiB past a multiple, never starts on a boundary") {
		hte_cover d = cover(s, 1, 0x10000);
		CHECK(d.covered == 0x2600000);
		CHECK(d.best == 0x2600000);
	}
	SECTION("with 2 MiB alignment the file's addresses are exact") {
		hte_cover e = cover(s, 1, M2);
		CHECK(e.exact);
		CHECK(e.covered == e.best);
		CHECK(e.covered == 0x2600000);
	}
}

TEST_CASE("the load alignment comes from the type and the largest power-of-two p_align", "[cover]")
{
	std::vector<hte_seg> s = { seg(R, 0, 0x1000, 0x1000), seg(R | X, 0x1000, 0x1000, 0x10000) };
	CHECK(hte_load_alignment(2 /* ET_EXEC */, s.data(), s.size()) == M2);
	CHECK(hte_load_alignment(3 /* ET_DYN */, s.data(), s.size()) == 0x10000);
	s[1].align = 0x30000; // not a power of two: ignored
	CHECK(hte_load_alignment(3, s.data(), s.size()) == 0x1000);
	s[1].align = 0x40000000; // 1 GiB: as good as 2 MiB
	CHECK(hte_load_alignment(3, s.data(), s.size()) == M2);
	s[1].align = 0;
	s[0].align = 0;
	CHECK(hte_load_alignment(3, s.data(), s.size()) == 0x1000);
}

TEST_CASE("a file's coverage sums its executable segments only", "[cover]")
{
	hte_seg segs[] = { seg(R, 0x400000, 0x1000), seg(R | X, 0x600000, 0x400000),
			   seg(R, 0xa00000, 0x1000), seg(R | X, 0xc01000, 0x200000), seg(R | W, 0x1000000, 0x1000) };
	hte_elf e{};
	e.type = 2;
	e.load = segs;
	e.nload = 5;
	struct hte_file_cover c;
	REQUIRE(hte_file_cover(&e, &c) == 0);
	CHECK(c.n == 2);
	CHECK(c.exact);
	CHECK(c.segs[0] == &segs[1]);
	CHECK(c.segs[1] == &segs[3]);
	CHECK(c.bytes == 0x600000);
	// The second, [0xc01000, 0xe01000), has no aligned inside, but the page up
	// to the next segment at 0x1000000 is free: its last 4 KiB are covered.
	CHECK(c.cov[1].span_start == 0xe00000);
	CHECK(c.cov[1].covered == 0x1000);
	CHECK(c.covered == 0x400000 + c.cov[1].covered);
	hte_file_cover_release(&c);

	hte_seg none[] = { seg(R, 0x400000, 0x1000), seg(R | W, 0x600000, 0x1000) };
	e.load = none;
	e.nload = 2;
	CHECK(hte_file_cover(&e, &c) == -ENOENT);
	hte_file_cover_release(&c);
}

TEST_CASE("empty or wrapping segments are refused", "[cover]")
{
	std::vector<hte_seg> s = { seg(R | X, 0x400000, 0) };
	hte_cover c;
	CHECK(hte_cover_segment(s.data(), 1, 0, M2, &c) == -EINVAL);
	s[0] = seg(R | X, ~0ULL - 0x100000, 0x1000);
	CHECK(hte_cover_segment(s.data(), 1, 0, M2, &c) == -EINVAL);
}
