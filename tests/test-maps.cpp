// Description: the /proc/self/maps and smaps parsers, on sample text.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

extern "C" {
#include "maps.h"
}

static const char sample_maps[] =
	"00400000-00401000 r--p 00000000 08:02 173521     /usr/bin/prog\n"
	"00401000-02a00000 r-xp 00001000 08:02 173521     /usr/bin/prog\n"
	"02a00000-02c00000 r--p 02600000 08:02 173521     /usr/bin/prog\n"
	"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	"7ffd1000-7ffd2000 r-xp 00000000 00:00 0                  [vdso]\n"
	"7f1000000000-7f1000001000 r-xp 00000000 fd:01 42 /opt/my lib/with space.so (deleted)\n";

TEST_CASE("maps parser reads every field of a file mapping", "[maps]")
{
	struct ht_map m;
	size_t pos = 0;

	REQUIRE(ht_maps_next(sample_maps, sizeof(sample_maps) - 1, &pos, &m) == 1);
	CHECK(m.start == 0x400000);
	CHECK(m.end == 0x401000);
	CHECK(std::string(m.perms) == "r--p");
	CHECK(m.offset == 0);
	CHECK(m.dev_major == 8);
	CHECK(m.dev_minor == 2);
	CHECK(m.inode == 173521);
	CHECK(ht_map_path_is(&m, "/usr/bin/prog"));

	REQUIRE(ht_maps_next(sample_maps, sizeof(sample_maps) - 1, &pos, &m) == 1);
	CHECK(m.start == 0x401000);
	CHECK(m.end == 0x2a00000);
	CHECK(std::string(m.perms) == "r-xp");
	CHECK(m.offset == 0x1000);
}

TEST_CASE("maps parser walks all lines, anonymous and special ones included", "[maps]")
{
	struct ht_map m;
	size_t pos = 0;
	int n = 0;

	while (ht_maps_next(sample_maps, sizeof(sample_maps) - 1, &pos, &m)) {
		n++;
		if (n == 4) {
			CHECK(m.inode == 0);
			CHECK(m.path_len == 0);
		}
		if (n == 5)
			CHECK(ht_map_path_is(&m, "[vdso]"));
		if (n == 6) {
			CHECK(ht_map_path_is(&m, "/opt/my lib/with space.so (deleted)"));
			CHECK(m.dev_major == 0xfd);
		}
	}
	CHECK(n == 6);
}

TEST_CASE("maps parser rejects malformed lines", "[maps]")
{
	const char *bad[] = {
		"",
		"00400000",
		"00400000-",
		"00400000-00300000 r-xp 00000000 08:02 1 /x",   // end before start
		"00400000-00500000 rwxq 00000000 08:02 1 /x",   // bad sharing flag
		"00400000-00500000 r-xp 00000000 08-02 1 /x",   // bad device
		"00400000-00500000 r-xp 00000000 08:02 x /x",   // bad inode
		"00400000-00500000 r-xp",                       // truncated
		"zz400000-00500000 r-xp 00000000 08:02 1 /x",
		"11111111111111111111-2 r-xp 00000000 08:02 1", // overflow
		"Rss:                 4 kB",
	};
	struct ht_map m;

	for (const char *line : bad) {
		INFO(line);
		CHECK(ht_maps_parse_line(line, std::strlen(line), &m) == -EINVAL);
	}
}

TEST_CASE("maps parser never reads past the length it is given", "[maps]")
{
	// The buffer has no NUL and no newline; the length cuts a valid line.
	std::string line = "00400000-00500000 r-xp 00000000 08:02 12345 /usr/bin/x";
	struct ht_map m;

	for (size_t len = 0; len < line.size(); len++) {
		char *copy = new char[len ? len : 1];
		std::memcpy(copy, line.data(), len);
		int rc = ht_maps_parse_line(copy, len, &m);
		if (rc == 0)
			CHECK(m.path_len <= len);
		delete[] copy;
	}
	CHECK(ht_maps_parse_line(line.data(), line.size(), &m) == 0);
	CHECK(ht_map_path_is(&m, "/usr/bin/x"));
}

static const char sample_smaps[] =
	"00400000-00401000 r--p 00000000 08:02 173521     /usr/bin/prog\n"
	"Size:                  4 kB\n"
	"Rss:                   4 kB\n"
	"AnonHugePages:         0 kB\n"
	"00600000-02a00000 r-xp 00000000 00:00 0 \n"
	"Size:              36864 kB\n"
	"KernelPageSize:        4 kB\n"
	"Rss:               36864 kB\n"
	"Anonymous:         36864 kB\n"
	"AnonHugePages:     34816 kB\n"
	"ShmemPmdMapped:        0 kB\n"
	"FilePmdMapped:         0 kB\n"
	"Shared_Hugetlb:        0 kB\n"
	"Private_Hugetlb:       0 kB\n"
	"VmFlags: rd ex mr mw me hg\n"
	"7f0000000000-7f0000400000 r-xp 00000000 00:0f 99 /dev/hugepages/x\n"
	"Size:               4096 kB\n"
	"KernelPageSize:     2048 kB\n"
	"Shared_Hugetlb:     2048 kB\n"
	"Private_Hugetlb:    2048 kB\n";

TEST_CASE("smaps reader sums every kind of huge page per VMA", "[smaps]")
{
	struct ht_smap s;
	size_t pos = 0;

	REQUIRE(ht_smaps_next(sample_smaps, sizeof(sample_smaps) - 1, &pos, &s) == 1);
	CHECK(s.map.start == 0x400000);
	CHECK(ht_smap_huge_bytes(&s) == 0);
	REQUIRE(ht_smaps_next(sample_smaps, sizeof(sample_smaps) - 1, &pos, &s) == 1);
	CHECK(s.map.start == 0x600000);
	CHECK(s.anon_huge == 34816ull * 1024);
	CHECK(s.anonymous == 36864ull * 1024);
	CHECK(s.kernel_page_kb == 4);
	REQUIRE(ht_smaps_next(sample_smaps, sizeof(sample_smaps) - 1, &pos, &s) == 1);
	CHECK(s.hugetlb == 4096ull * 1024);
	CHECK(s.kernel_page_kb == 2048);
	CHECK(ht_smaps_next(sample_smaps, sizeof(sample_smaps) - 1, &pos, &s) == 0);
}

TEST_CASE("smaps range count is exact inside and a lower bound across edges", "[smaps]")
{
	size_t len = sizeof(sample_smaps) - 1;

	CHECK(ht_smaps_huge_in(sample_smaps, len, 0x600000, 0x2a00000) == 34816ull * 1024);
	// Half the VMA: at least huge - (bytes outside) must lie inside.
	uint64_t half = ht_smaps_huge_in(sample_smaps, len, 0x600000, 0x1800000);
	CHECK(half == 34816ull * 1024 - (0x2a00000 - 0x1800000));
	CHECK(ht_smaps_huge_in(sample_smaps, len, 0x0, 0x400000) == 0);
	CHECK(ht_smaps_huge_in(sample_smaps, len, 0x7f0000000000, 0x7f0000400000) == 4096ull * 1024);
	CHECK(ht_smaps_huge_in(sample_smaps, len, 0x3000000, 0x4000000) == 0);
}

TEST_CASE("smaps range count knows huge pages lie on 2 MiB boundaries", "[smaps]")
{
	// node's text as the kernel maps it from 2 MiB page-cache pages: the
	// VMA's unaligned ends can hold no huge page, so its aligned middle,
	// the range asked for, holds all 24 MiB.
	static const char text[] =
		"00b72000-025fe000 r-xp 00772000 fe:00 10952719     /tmp/n2\n"
		"Size:              27184 kB\n"
		"FilePmdMapped:     24576 kB\n";
	CHECK(ht_smaps_huge_in(text, sizeof(text) - 1, 0xc00000, 0x2400000) == 24ull << 20);
	// Half of the middle: the other half could hold up to 12 MiB.
	CHECK(ht_smaps_huge_in(text, sizeof(text) - 1, 0xc00000, 0x1800000) == 12ull << 20);
	// The unaligned head alone can hold none.
	CHECK(ht_smaps_huge_in(text, sizeof(text) - 1, 0xb72000, 0xc00000) == 0);
}

TEST_CASE("pagemap check tells clean file pages from written ones", "[pagemap]")
{
	const uint64_t present = 1ull << 63, swapped = 1ull << 62, file = 1ull << 61;
	uint64_t clean[] = { 0, present | file | 123, present | file, 0 };
	uint64_t written[] = { present | file, present | 77 };
	uint64_t swapped_out[] = { swapped | 5 };

	CHECK(ht_pagemap_clean(clean, 4));
	CHECK_FALSE(ht_pagemap_clean(written, 2));
	CHECK_FALSE(ht_pagemap_clean(swapped_out, 1));
	CHECK(ht_pagemap_clean(nullptr, 0));
	// One entry at a time: what the background move compares with its copy.
	CHECK_FALSE(ht_pagemap_written(0));
	CHECK_FALSE(ht_pagemap_written(present | file | 9));
	CHECK(ht_pagemap_written(present | 77));
	CHECK(ht_pagemap_written(swapped | 5));
	CHECK_FALSE(ht_pagemap_written(file)); // not present: nothing was written
}
