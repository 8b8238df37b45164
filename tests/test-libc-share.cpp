// Description: the shared text cache creates its entries with glibc's
// renameat2(), never with the one a program exports (patch does), and
// spends no huge page on a library with a few KiB of code.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "helpers.hpp"
#include "sysguard.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (getuid() != 0)
		return "mounting hugetlbfs and changing the pool need root";
	if (!file_exists("/sys/kernel/mm/hugepages/hugepages-2048kB"))
		return "the kernel has no 2 MiB hugetlb pool";
	return nullptr;
}

TEST_CASE("a program's own renameat2 is never called when the cache fills an entry", "[libc][share]")
{
	pool_guard pool(64);
	hugetlbfs_guard fs;
	REQUIRE(pool.ok());
	REQUIRE(fs.ok());
	std::string dir = fs.dir() + "/cache";
	REQUIRE(mkdir(dir.c_str(), 0700) == 0);
	const std::string prog = build_path("tests/ownlibc");
	prog_result plain = run_prog({ prog });
	REQUIRE(plain.status == 0);

	// A miss fills and publishes the entry (renameat2), a hit maps it.
	for (const char *want : { "miss", "hit" }) {
		std::string report = temp_path(std::string("ownlibc-share-") + want + ".json");
		prog_opts o;
		o.env = { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"), "HUGETEXT_SHARE=1",
			  "HUGETEXT_SHARE_DIR=" + dir, "HUGETEXT_REPORT=" + report };
		prog_result r = run_prog({ prog }, o);
		INFO(want << "\n" << r.out << r.err);
		CHECK(r.status == 0);
		CHECK(line_value(r.out, "own_ok") == "1");
		CHECK(line_value(r.out, "foreign_calls") == "0");
		CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
		int mine = 0;
		for (auto &l : read_report(report)) {
			if (l["object"] != prog)
				continue;
			mine++;
			CHECK(l["status"] == "ok");
			CHECK(l["cache"] == want);
		}
		CHECK(mine == 1);
	}
}

TEST_CASE("the shared cache spends no huge page on a library with a few KiB of code", "[tails][share]")
{
	pool_guard pool(64);
	hugetlbfs_guard fs;
	REQUIRE(pool.ok());
	REQUIRE(fs.ok());
	std::string dir = fs.dir() + "/cache";
	REQUIRE(mkdir(dir.c_str(), 0700) == 0);
	const std::string lib = build_path("tests/libtinytext.so");
	std::string report = temp_path("tails-share.json");
	prog_opts o;
	o.env = { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"), "HUGETEXT_SHARE=1",
		  "HUGETEXT_SHARE_DIR=" + dir, "HUGETEXT_REPORT=" + report, "HUGETEXT_MATCH=." };
	prog_result r = run_prog({ build_path("tests/tails-main") }, o);
	INFO(r.out << r.err);
	CHECK(r.status == 0);
	CHECK(line_value(r.out, "tiny_huge_kb") == "0");
	int tiny = 0;
	for (auto &l : read_report(report)) {
		if (l["object"] != lib)
			continue;
		tiny++;
		CHECK(l["status"] == "skipped");
		CHECK(l["cache"].empty());
	}
	CHECK(tiny == 1);
}
