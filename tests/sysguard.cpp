#include "sysguard.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/mount.h>
#include <unistd.h>

#include "helpers.hpp"

static const char nr_path[] = "/proc/sys/vm/nr_hugepages";

static long read_long(const std::string &path)
{
	std::ifstream f(path);
	long v = -1;
	f >> v;
	return f ? v : -1;
}

static bool write_long(const std::string &path, long v)
{
	std::ofstream f(path);
	f << v << "\n";
	f.close();
	return !f.fail();
}

long meminfo_value(const std::string &key)
{
	std::istringstream in(read_file("/proc/meminfo"));
	std::string line;
	while (std::getline(in, line))
		if (line.compare(0, key.size() + 1, key + ":") == 0)
			return std::strtol(line.c_str() + key.size() + 1, nullptr, 10);
	return -1;
}

pool_guard::pool_guard(long extra)
{
	old_ = read_long(nr_path);
	if (old_ < 0)
		return;
	write_long(nr_path, old_ + extra);
	// The kernel may give fewer pages than asked when memory is fragmented.
	ok_ = read_long(nr_path) >= old_ + extra;
}

pool_guard::~pool_guard()
{
	if (old_ >= 0)
		write_long(nr_path, old_);
}

void pool_guard::set_total(long n)
{
	write_long(nr_path, n);
}

long pool_guard::free_pages() const { return meminfo_value("HugePages_Free"); }
long pool_guard::total_pages() const { return meminfo_value("HugePages_Total"); }

static const std::string thp_dir = "/sys/kernel/mm/transparent_hugepage";
const std::string thp_size64 = thp_dir + "/hugepages-64kB/enabled";
const std::string thp_size2m = thp_dir + "/hugepages-2048kB/enabled";

static bool thp_set(const std::string &path, const std::string &word)
{
	std::ofstream f(path);

	f << word << "\n";
	f.close();
	return f.good() && read_setting(path) == word;
}

thp_sizes_guard::thp_sizes_guard(const std::string &s64, const std::string &s2m)
	: was64_(read_setting(thp_size64)), was2m_(read_setting(thp_size2m))
{
	if (was64_.empty() || was2m_.empty())
		return;
	ok_ = thp_set(thp_size64, s64) && thp_set(thp_size2m, s2m);
}

thp_sizes_guard::~thp_sizes_guard()
{
	// Put back only what was read: an empty word would be refused anyway.
	if (!was64_.empty())
		thp_set(thp_size64, was64_);
	if (!was2m_.empty())
		thp_set(thp_size2m, was2m_);
}

hugetlbfs_guard::hugetlbfs_guard()
{
	char tmpl[] = "/tmp/hugetext-test-fs-XXXXXX";
	if (!mkdtemp(tmpl))
		return;
	dir_ = tmpl;
	ok_ = mount("none", dir_.c_str(), "hugetlbfs", 0, "pagesize=2M,mode=0755") == 0;
	if (!ok_)
		rmdir(dir_.c_str());
}

hugetlbfs_guard::~hugetlbfs_guard()
{
	if (!ok_)
		return;
	// Empty it first: files on hugetlbfs hold pool pages.
	run_cmd({ "sh", "-c", "rm -rf '" + dir_ + "'/*" });
	umount2(dir_.c_str(), MNT_DETACH);
	rmdir(dir_.c_str());
}
