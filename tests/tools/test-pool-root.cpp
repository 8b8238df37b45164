// Description: `hugetext pool --set` and `--mount` as root: the pool takes
// the size asked and is put back, hugetlbfs mounts with the page size asked
// and is unmounted.  Runs alone (it changes the pool) and needs root.
#include <catch2/catch.hpp>

#include <fstream>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tooltest.hpp"

#define POOL_2M "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

extern "C" const char *test_skip_reason(void)
{
	if (geteuid() != 0)
		return "needs root to change the pool and mount hugetlbfs";
	if (!file_exists(POOL_2M))
		return "the kernel has no 2 MiB hugetlb pool";
	return nullptr;
}

namespace {

long pool_2m()
{
	return std::stol(read_file(POOL_2M));
}

// Puts the pool back to what it was, whatever the test did.
struct pool_guard {
	long saved = pool_2m();
	~pool_guard() { std::ofstream(POOL_2M) << saved << "\n"; }
};

struct mount_guard {
	std::string dir;
	~mount_guard()
	{
		umount2(dir.c_str(), MNT_DETACH);
		rmdir(dir.c_str());
	}
};

// The options of the mount at @dir, or "" when it is not hugetlbfs.
std::string hugetlbfs_options(const std::string &dir)
{
	std::ifstream f("/proc/self/mounts");
	std::string dev, mnt, type, opts, rest;
	while (f >> dev >> mnt >> type >> opts && std::getline(f, rest))
		if (mnt == dir && type == "hugetlbfs")
			return opts;
	return "";
}

} // namespace

TEST_CASE("--set grows the 2 MiB pool by one page and puts it back", "[pool][root]")
{
	pool_guard g;
	std::string more = std::to_string(g.saved + 1), back = std::to_string(g.saved);
	run_result r = tool({ "pool", "--set", more, "--size", "2M" });
	if (r.status == 1 && r.err.find("the kernel gave") != std::string::npos) {
		WARN("the kernel could not give one more 2 MiB page: " << r.err);
		return;
	}
	CHECK(r.status == 0);
	CHECK(r.out == "2.0 MiB pool: " + more + " pages\n");
	CHECK(pool_2m() == g.saved + 1);
	r = tool({ "pool", "--set", back });
	CHECK(r.status == 0);
	CHECK(r.out == "2.0 MiB pool: " + back + " pages\n");
	CHECK(pool_2m() == g.saved);
}

TEST_CASE("--mount mounts hugetlbfs of the page size asked, once", "[pool][root]")
{
	mount_guard m{ temp_path("pool-mount-2m") };
	run_result r = tool({ "pool", "--mount", m.dir });
	CHECK(r.status == 0);
	CHECK(r.out == m.dir + ": hugetlbfs with 2.0 MiB pages\n");
	std::string opts = hugetlbfs_options(m.dir);
	CHECK(opts.find("pagesize=2M") != std::string::npos);
	CHECK(opts.find("nosuid") != std::string::npos);
	CHECK(opts.find("noexec") == std::string::npos); // cached code is mapped executable
	struct stat st;
	REQUIRE(stat(m.dir.c_str(), &st) == 0);
	CHECK((st.st_mode & 07777) == 01777);

	r = tool({ "pool", "--mount", m.dir, "--size", "2M" });
	CHECK(r.status == 0);
	CHECK(r.out == m.dir + ": already hugetlbfs with 2.0 MiB pages\n");

	r = tool({ "pool" });
	CHECK(r.out.find("\n  " + m.dir + "  (2.0 MiB pages)\n") != std::string::npos);

	if (file_exists("/sys/kernel/mm/hugepages/hugepages-1048576kB")) {
		r = tool({ "pool", "--mount", m.dir, "--size", "1G" });
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext pool: " + m.dir + ": already a hugetlbfs mount of another page size\n");

		mount_guard g{ temp_path("pool-mount-1g") };
		r = tool({ "pool", "--mount", g.dir, "--size", "1G" });
		CHECK(r.status == 0);
		CHECK(r.out == g.dir + ": hugetlbfs with 1.0 GiB pages\n");
		CHECK(hugetlbfs_options(g.dir).find("pagesize=1024M") != std::string::npos);
	}
}
