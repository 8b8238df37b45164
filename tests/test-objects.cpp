// Description: which loaded objects keep their 2 MiB phase from one start to the
// next (ht_objects_pin), on made-up object lists in the loader's order.
#include <catch2/catch.hpp>

#include <vector>

extern "C" {
#include "objects.h"
}

namespace {

const uintptr_t MiB = 1 << 20, interp = 0x7f0000001000;

ht_object obj(uintptr_t base, uintptr_t align, int is_main = 0)
{
	ht_object o{};
	o.name = is_main ? "" : "lib";
	o.base = base;
	o.align = align;
	o.is_main = is_main;
	return o;
}

std::vector<int> pinned(std::vector<ht_object> v)
{
	ht_objects_pin(v.data(), v.size(), interp);
	std::vector<int> out;
	for (auto &o : v)
		out.push_back(o.pinned);
	return out;
}

} // namespace

TEST_CASE("libraries after a 2 MiB-aligned preload that got its boundary are pinned", "[objects]")
{
	// main, the pinned preload on a boundary, two libraries off the grid, the loader.
	auto p = pinned({ obj(0x555555554000, 0x1000, 1), obj(0x7f1234600000, 2 * MiB), obj(0x7f1230a3d000, 0x1000),
			  obj(0x7f122c5e1000, 0x1000), obj(interp, 0x1000) });
	CHECK(p == std::vector<int>{ 0, 0, 1, 1, 0 });
}

TEST_CASE("nothing is pinned without such an object, or when it missed its boundary", "[objects]")
{
	// The plain preload (4 KiB p_align): placement is the random base's.
	CHECK(pinned({ obj(0x555555554000, 0x1000, 1), obj(0x7f1234613000, 0x1000), obj(0x7f1230a3d000, 0x1000) }) ==
	      std::vector<int>{ 0, 0, 0 });
	// 2 MiB p_align but off its boundary: a glibc older than 2.35 ignores p_align.
	CHECK(pinned({ obj(0x555555554000, 0x1000, 1), obj(0x7f1234613000, 2 * MiB), obj(0x7f1230a3d000, 0x1000) }) ==
	      std::vector<int>{ 0, 0, 0 });
	// On a boundary by chance (ext4 places big files so), 4 KiB p_align: no promise for the next start.
	CHECK(pinned({ obj(0x555555554000, 0x1000, 1), obj(0x7f1234600000, 0x1000), obj(0x7f1230a3d000, 0x1000) }) ==
	      std::vector<int>{ 0, 0, 0 });
}

TEST_CASE("only objects after it are pinned; never the main program or the loader", "[objects]")
{
	// An aligned main program pins nothing: the kernel placed it, apart from the libraries.
	CHECK(pinned({ obj(0x400000, 2 * MiB, 1), obj(0x7f1230a3d000, 0x1000) }) == std::vector<int>{ 0, 0 });
	// A library loaded before the aligned one keeps its random phase.
	CHECK(pinned({ obj(0x555555554000, 0x1000, 1), obj(0x7f1238613000, 0x1000), obj(0x7f1234600000, 2 * MiB),
		       obj(0x7f1230a3d000, 0x1000), obj(interp, 0x1000) }) == std::vector<int>{ 0, 0, 0, 1, 0 });
	// Empty and one-object lists.
	CHECK(pinned({}).empty());
	CHECK(pinned({ obj(0x555555554000, 2 * MiB, 1) }) == std::vector<int>{ 0 });
}
