#include "faults.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

extern "C" {
#include "sys.h"
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {

std::recursive_mutex mu;
struct ht_sys real;
fault_plan plan;
fault_paths paths;
std::map<std::string, unsigned> counts;
std::vector<fault_call> calls;
std::map<int, std::string> fd_role;
std::map<uintptr_t, uintptr_t> live; // start -> end
std::map<int, unsigned> eintr_state;
bool fired;

bool starts_with(const std::string &s, const std::string &p)
{
	return s.compare(0, p.size(), p) == 0;
}

std::string role_of(const char *path)
{
	std::string p = path ? path : "";

	if (!paths.report.empty() && p == paths.report)
		return "report";
	if (!paths.object.empty() && p == paths.object)
		return "object";
	if (!paths.share.empty() && starts_with(p, paths.share))
		return "cache";
	if (starts_with(p, "/proc/") || starts_with(p, "/sys/"))
		return p;
	if (!p.empty() && p[0] != '/')
		return "cache"; // names relative to a directory descriptor
	return "other:" + p;
}

std::string fd_name(int fd)
{
	auto it = fd_role.find(fd);
	return it == fd_role.end() ? "fd" : it->second;
}

// Decides whether this call fails; records it either way.
bool should_fail(const std::string &site)
{
	unsigned n = ++counts[site];
	bool f = plan.how == fault_how::fail && site == plan.site &&
		 (n == plan.nth || (plan.persist && n > plan.nth));

	calls.push_back({ site, f });
	fired |= f;
	return f;
}

void live_add(void *p, size_t len)
{
	live[(uintptr_t)p] = (uintptr_t)p + len;
}

void live_sub(uintptr_t lo, uintptr_t hi)
{
	std::map<uintptr_t, uintptr_t> next;

	for (auto &[a, b] : live) {
		if (b <= lo || a >= hi) {
			next[a] = b;
			continue;
		}
		if (a < lo)
			next[a] = lo;
		if (b > hi)
			next[hi] = b;
	}
	live = std::move(next);
}

std::string mmap_site(int prot, int flags, int fd)
{
	(void)prot;
	if (fd >= 0)
		return "mmap-file";
	if (flags & MAP_FIXED_NOREPLACE)
		return "mmap-reserve";
	if (flags & MAP_HUGETLB)
		return "mmap-hugetlb";
	return "mmap-anon";
}

std::string madvise_site(int advice)
{
	switch (advice) {
	case MADV_HUGEPAGE:
		return "madvise-hugepage";
	case MADV_COLLAPSE:
		return "madvise-collapse";
	case MADV_POPULATE_WRITE:
		return "madvise-populate-write";
	default:
		return "madvise-" + std::to_string(advice);
	}
}

void *w_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail(mmap_site(prot, flags, fd))) {
		errno = plan.err;
		return MAP_FAILED;
	}
	void *p = real.mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED)
		live_add(p, len);
	return p;
}

int w_munmap(void *addr, size_t len)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("munmap")) {
		errno = plan.err;
		return -1;
	}
	int r = real.munmap(addr, len);
	if (r == 0)
		live_sub((uintptr_t)addr, (uintptr_t)addr + len);
	return r;
}

void *w_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("mremap")) {
		errno = plan.err;
		return MAP_FAILED;
	}
	if (plan.how == fault_how::mremap_hole &&
	    (counts["mremap"] == plan.nth || (plan.persist && counts["mremap"] > plan.nth))) {
		calls.back().failed = fired = true;
		if (counts["mremap"] == plan.nth)
			real.munmap(new_addr, new_len);
		errno = ENOMEM;
		return MAP_FAILED;
	}
	void *p = real.mremap(old, old_len, new_len, flags, new_addr);
	if (p != MAP_FAILED) {
		// The copy became the code: neither place is ours to track now.
		live_sub((uintptr_t)old, (uintptr_t)old + old_len);
		live_sub((uintptr_t)p, (uintptr_t)p + new_len);
	}
	return p;
}

int w_madvise(void *addr, size_t len, int advice)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail(madvise_site(advice))) {
		errno = plan.err;
		return -1;
	}
	return real.madvise(addr, len, advice);
}

int w_mprotect(void *addr, size_t len, int prot)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	std::string site = "mprotect-";

	site += (prot & PROT_READ) ? "r" : "";
	site += (prot & PROT_WRITE) ? "w" : "";
	site += (prot & PROT_EXEC) ? "x" : "";
	if (should_fail(site)) {
		errno = plan.err;
		return -1;
	}
	return real.mprotect(addr, len, prot);
}

int opened(int fd, const std::string &role)
{
	if (fd >= 0)
		fd_role[fd] = role;
	return fd;
}

int w_open(const char *path, int flags, mode_t mode)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	std::string role = role_of(path);
	if (should_fail("open:" + role)) {
		errno = plan.err;
		return -1;
	}
	return opened(real.open(path, flags, mode), role);
}

int w_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	std::string role = role_of(path);
	if (should_fail("openat:" + role)) {
		errno = plan.err;
		return -1;
	}
	return opened(real.openat(dirfd, path, flags, mode), role);
}

// EINTR on every other call, as a process with busy signal handlers sees.
bool eintr_now(int fd)
{
	return plan.how == fault_how::eintr_first && (eintr_state[fd]++ % 2) == 0;
}

ssize_t w_read(int fd, void *buf, size_t len)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("read:" + fd_name(fd))) {
		errno = plan.err;
		return -1;
	}
	if (eintr_now(fd)) {
		errno = EINTR;
		return -1;
	}
	if (plan.how == fault_how::short_io && len > 7)
		len = 7;
	return real.read(fd, buf, len);
}

ssize_t w_pread(int fd, void *buf, size_t len, off_t off)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("pread:" + fd_name(fd))) {
		errno = plan.err;
		return -1;
	}
	if (eintr_now(fd)) {
		errno = EINTR;
		return -1;
	}
	// Pieces that never line up with pages (but keep the 8-byte entries
	// /proc/self/pagemap insists on).
	if (plan.how == fault_how::short_io && len > 4104)
		len = 4104;
	return real.pread(fd, buf, len, off);
}

ssize_t w_write(int fd, const void *buf, size_t len)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("write:" + fd_name(fd))) {
		errno = plan.err;
		return -1;
	}
	if (eintr_now(fd)) {
		errno = EINTR;
		return -1;
	}
	if (plan.how == fault_how::short_io && len > 5)
		len = 5;
	return real.write(fd, buf, len);
}

int w_close(int fd)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	bool f = should_fail("close:" + fd_name(fd));
	int r = real.close(fd);

	// Linux frees the descriptor even when close() reports an error.
	fd_role.erase(fd);
	if (f) {
		errno = plan.err == EPERM ? EIO : plan.err;
		return -1;
	}
	return r;
}

int w_fstat(int fd, struct stat *st)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("fstat:" + fd_name(fd))) {
		errno = plan.err;
		return -1;
	}
	return real.fstat(fd, st);
}

int w_mkdirat(int dirfd, const char *path, mode_t mode)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("mkdirat")) {
		errno = plan.err;
		return -1;
	}
	return real.mkdirat(dirfd, path, mode);
}

int w_renameat2(int od, const char *o, int nd, const char *n, unsigned flags)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("renameat2")) {
		errno = plan.err;
		return -1;
	}
	return real.renameat2(od, o, nd, n, flags);
}

int w_unlinkat(int dirfd, const char *path, int flags)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("unlinkat")) {
		errno = plan.err;
		return -1;
	}
	return real.unlinkat(dirfd, path, flags);
}

int w_linkat(int od, const char *o, int nd, const char *n, int flags)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("linkat")) {
		errno = plan.err;
		return -1;
	}
	return real.linkat(od, o, nd, n, flags);
}

int w_ftruncate(int fd, off_t len)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("ftruncate:" + fd_name(fd))) {
		errno = plan.err;
		return -1;
	}
	return real.ftruncate(fd, len);
}

int w_mincore(void *addr, size_t len, unsigned char *vec)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("mincore")) {
		errno = plan.err;
		return -1;
	}
	return real.mincore(addr, len, vec);
}

int w_prctl(int option, unsigned long arg)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("prctl")) {
		errno = plan.err;
		return -1;
	}
	return real.prctl(option, arg);
}

int w_fstatfs(int fd, struct statfs *st)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (should_fail("fstatfs:" + fd_name(fd))) {
		errno = plan.err;
		return -1;
	}
	return real.fstatfs(fd, st);
}

} // namespace

void faults_install(const fault_plan &p, const fault_paths &ps)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	ht_sys_reset();
	real = ht_sys;
	plan = p;
	paths = ps;
	counts.clear();
	calls.clear();
	fd_role.clear();
	live.clear();
	eintr_state.clear();
	fired = false;
	ht_sys.mmap = w_mmap;
	ht_sys.munmap = w_munmap;
	ht_sys.mremap = w_mremap;
	ht_sys.madvise = w_madvise;
	ht_sys.mprotect = w_mprotect;
	ht_sys.open = w_open;
	ht_sys.read = w_read;
	ht_sys.pread = w_pread;
	ht_sys.write = w_write;
	ht_sys.close = w_close;
	ht_sys.fstat = w_fstat;
	ht_sys.openat = w_openat;
	ht_sys.mkdirat = w_mkdirat;
	ht_sys.renameat2 = w_renameat2;
	ht_sys.unlinkat = w_unlinkat;
	ht_sys.linkat = w_linkat;
	ht_sys.ftruncate = w_ftruncate;
	ht_sys.fstatfs = w_fstatfs;
	ht_sys.mincore = w_mincore;
	ht_sys.prctl = w_prctl;
}

void faults_remove()
{
	std::lock_guard<std::recursive_mutex> g(mu);
	ht_sys_reset();
}

std::vector<fault_call> faults_log()
{
	std::lock_guard<std::recursive_mutex> g(mu);
	return calls;
}

std::vector<std::pair<uintptr_t, uintptr_t>> faults_live_maps()
{
	std::lock_guard<std::recursive_mutex> g(mu);
	return { live.begin(), live.end() };
}

std::vector<int> faults_open_fds()
{
	std::lock_guard<std::recursive_mutex> g(mu);
	std::vector<int> v;
	for (auto &kv : fd_role)
		v.push_back(kv.first);
	return v;
}

bool faults_fired()
{
	std::lock_guard<std::recursive_mutex> g(mu);
	return fired;
}
