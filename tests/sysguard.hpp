// Guards for tests that change the machine: each restores what it changed,
// even when the test fails (destructors run as Catch2 unwinds).
#ifndef HT_TEST_SYSGUARD_HPP
#define HT_TEST_SYSGUARD_HPP

#include <string>

// Adds pages to the 2 MiB hugetlb pool; restores the old count on exit.
class pool_guard {
public:
	explicit pool_guard(long extra);
	~pool_guard();
	long free_pages() const;   // HugePages_Free now
	long total_pages() const;  // HugePages_Total now
	bool ok() const { return ok_; }
	void set_total(long n);    // for tests that shrink the pool
private:
	long old_ = -1;
	bool ok_ = false;
};

// Mounts hugetlbfs (2 MiB pages) on a fresh directory; unmounts it on exit.
class hugetlbfs_guard {
public:
	hugetlbfs_guard();
	~hugetlbfs_guard();
	bool ok() const { return ok_; }
	const std::string &dir() const { return dir_; }
private:
	std::string dir_;
	bool ok_ = false;
};

// THP's per-size switches: transparent_hugepage/hugepages-64kB/enabled and
// hugepages-2048kB/enabled.  Sets both for one scope; restores both on exit.
class thp_sizes_guard {
public:
	thp_sizes_guard(const std::string &s64, const std::string &s2m);
	~thp_sizes_guard();
	thp_sizes_guard(const thp_sizes_guard &) = delete;
	thp_sizes_guard &operator=(const thp_sizes_guard &) = delete;
	bool ok() const { return ok_; }  // both set as asked
private:
	std::string was64_, was2m_;
	bool ok_ = false;
};

// /sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled and -2048kB's.
extern const std::string thp_size64;
extern const std::string thp_size2m;

long meminfo_value(const std::string &key);

#endif
