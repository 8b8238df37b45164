/* SPDX-License-Identifier: MIT */
/* All system calls of the library, behind one replaceable table (see sys.h). */
#include "sys.h"
#include "maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
/* Ask for 2 MiB pages even where the default huge page size is 1 GiB. */
#define HT_MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)

static void *real_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	return mremap(old, old_len, new_len, flags, new_addr);
}

static int real_open(const char *path, int flags, mode_t mode)
{
	return open(path, flags, mode);
}

static int real_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return openat(dirfd, path, flags, mode);
}

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

/* By number: glibc before 2.34 has no wrapper. */
static int real_close_range(unsigned first, unsigned last, unsigned flags)
{
#ifdef SYS_close_range
	return (int)syscall(SYS_close_range, first, last, flags);
#else
	(void)first, (void)last, (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

static int real_ioctl(int fd, unsigned long request, void *arg)
{
	return ioctl(fd, request, arg);
}

static double real_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One initializer for both tables: ISO C cannot copy a const object here. */
#define HT_REAL_SYS { \
	.mmap = mmap, \
	.munmap = munmap, \
	.mremap = real_mremap, \
	.madvise = madvise, \
	.mprotect = mprotect, \
	.open = real_open, \
	.read = read, \
	.pread = pread, \
	.write = write, \
	.close = close, \
	.fstat = fstat, \
	.openat = real_openat, \
	.mkdirat = mkdirat, \
	.renameat2 = renameat2, \
	.unlinkat = unlinkat, \
	.linkat = linkat, \
	.ftruncate = ftruncate, \
	.fstatfs = fstatfs, \
	.mincore = mincore, \
	.close_range = real_close_range, \
	.ioctl = real_ioctl, \
	.fadvise = posix_fadvise, \
	.clock_ms = real_clock_ms, \
}

static const struct ht_sys real_sys = HT_REAL_SYS;
struct ht_sys ht_sys = HT_REAL_SYS;

void ht_sys_reset(void)
{
	ht_sys = real_sys;
}

static int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

int ht_sys_unmap(void *addr, size_t len)
{
	return ht_sys.munmap(addr, len) == 0 ? 0 : neg_errno();
}

/*
 * Anonymous read-write memory aligned to @align.  For THP we over-allocate
 * and trim, because the kernel only hands out huge pages for 2 MiB-aligned
 * ranges; hugetlb mappings come aligned from the kernel.
 */
int ht_sys_map_anon(size_t len, size_t align, int hugetlb, void **out)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	size_t total = hugetlb ? len : len + align;
	char *p;

	if (hugetlb)
		flags = (flags & ~MAP_NORESERVE) | MAP_HUGETLB | HT_MAP_HUGE_2MB;
	p = ht_sys.mmap(NULL, total, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return neg_errno();
	if (!hugetlb) {
		uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
		size_t head = a - (uintptr_t)p, tail = total - head - len;

		/* Trimming cannot fail for valid ranges; ignore its result. */
		if (head)
			ht_sys.munmap(p, head);
		if (tail)
			ht_sys.munmap((char *)a + len, tail);
		p = (char *)a;
	}
	*out = p;
	return 0;
}

int ht_sys_advise(void *addr, size_t len, int advice)
{
	return ht_sys.madvise(addr, len, advice) == 0 ? 0 : neg_errno();
}

int ht_sys_protect(void *addr, size_t len, int prot)
{
	return ht_sys.mprotect(addr, len, prot) == 0 ? 0 : neg_errno();
}

/*
 * Moves @copy onto @target in one step: the kernel replaces the old
 * mapping under the mmap lock, so no thread ever sees a hole.
 */
int ht_sys_swap(void *copy, size_t len, void *target)
{
	void *p = ht_sys.mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, target);

	if (p == MAP_FAILED)
		return neg_errno();
	return p == target ? 0 : -EFAULT;
}

/* Maps anonymous memory exactly at @addr, failing if anything is there. */
static int map_exactly(void *addr, size_t len, int prot, int flags)
{
	void *p = ht_sys.mmap(addr, len, prot,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | flags, -1, 0);

	if (p == MAP_FAILED)
		return neg_errno();
	if (p != addr) {
		/* An old kernel took the flag as a hint. */
		ht_sys.munmap(p, len);
		return -EEXIST;
	}
	return 0;
}

/* Claims free address space at @addr, failing if anything is mapped there. */
int ht_sys_reserve_fixed(void *addr, size_t len)
{
	return map_exactly(addr, len, PROT_NONE, MAP_NORESERVE);
}

int ht_sys_unmapped(void *addr)
{
	unsigned char vec;

	return ht_sys.mincore(addr, 4096, &vec) != 0 && errno == ENOMEM;
}

int ht_sys_map_fixed_anon(void *addr, size_t len)
{
	return map_exactly(addr, len, PROT_READ | PROT_WRITE, 0);
}

int ht_sys_open(const char *path, int flags, mode_t mode)
{
	int fd = ht_sys.open(path, flags | O_CLOEXEC, mode);

	return fd >= 0 ? fd : neg_errno();
}

/* Reads up to @len bytes; a short count means end of file. */
ssize_t ht_sys_pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = ht_sys.pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return neg_errno();
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int ht_sys_write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = ht_sys.write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? neg_errno() : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int ht_sys_close(int fd)
{
	return ht_sys.close(fd) == 0 ? 0 : neg_errno();
}

int ht_sys_fstat(int fd, struct stat *st)
{
	return ht_sys.fstat(fd, st) == 0 ? 0 : neg_errno();
}

static int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 16384, used = 0;
	char *p = malloc(cap);

	if (!p)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (cap - used < 4096) {
			char *q = cap < SIZE_MAX / 4 ? realloc(p, cap * 2) : NULL;

			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
			cap *= 2;
		}
		n = ht_sys.read(fd, p + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = neg_errno();

			free(p);
			return err;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	p[used] = '\0';
	*buf = p;
	*len = used;
	return 0;
}

int ht_sys_read_file(const char *path, char **buf, size_t *len)
{
	int fd = ht_sys_open(path, O_RDONLY, 0);
	int err;

	if (fd < 0)
		return fd;
	err = read_all(fd, buf, len);
	ht_sys.close(fd);
	return err;
}

int ht_sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd = ht_sys.openat(dirfd, path, flags | O_CLOEXEC, mode);

	return fd >= 0 ? fd : neg_errno();
}

int ht_sys_mkdirat(int dirfd, const char *path, mode_t mode)
{
	return ht_sys.mkdirat(dirfd, path, mode) == 0 ? 0 : neg_errno();
}

int ht_sys_renameat(int dirfd, const char *old, const char *new_path)
{
	return ht_sys.renameat2(dirfd, old, dirfd, new_path, RENAME_NOREPLACE) == 0 ? 0 : neg_errno();
}

int ht_sys_linkat(int dirfd, const char *old, const char *new_path)
{
	return ht_sys.linkat(dirfd, old, dirfd, new_path, 0) == 0 ? 0 : neg_errno();
}

int ht_sys_unlinkat(int dirfd, const char *path)
{
	return ht_sys.unlinkat(dirfd, path, 0) == 0 ? 0 : neg_errno();
}

int ht_sys_ftruncate(int fd, off_t len)
{
	return ht_sys.ftruncate(fd, len) == 0 ? 0 : neg_errno();
}

int ht_sys_fstatfs(int fd, struct statfs *st)
{
	return ht_sys.fstatfs(fd, st) == 0 ? 0 : neg_errno();
}

int ht_sys_map_file(int fd, size_t len, int prot, int shared, void **out)
{
	/* NORESERVE: a private mapping of a hugetlbfs file would otherwise
	 * reserve a second copy of every page for copy-on-write.  POPULATE:
	 * the pages exist already; mapping them all now costs one entry per
	 * 2 MiB and saves the faults later. */
	int flags = shared ? MAP_SHARED : MAP_PRIVATE | MAP_NORESERVE | MAP_POPULATE;
	void *p = ht_sys.mmap(NULL, len, prot, flags, fd, 0);

	if (p == MAP_FAILED)
		return neg_errno();
	*out = p;
	return 0;
}

int ht_sys_private_fds(int keep_stderr)
{
	/*
	 * One call unshares the table, copying only the descriptors below the
	 * first one closed: none, or stdin to stderr (closing the copies of
	 * stdin and stdout flushes them, as any close does).
	 */
	if (ht_sys.close_range(keep_stderr ? 3 : 0, ~0U, CLOSE_RANGE_UNSHARE) < 0)
		return neg_errno();
	if (keep_stderr)
		ht_sys.close_range(0, 1, 0);
	return 0;
}

int ht_sys_can_private_fds(void)
{
	/* Descriptor ~0U never exists: this closes nothing where the call is known. */
	return ht_sys.close_range(~0U, ~0U, 0) == 0;
}

/* PAGEMAP_SCAN, from Linux 6.7's <linux/fs.h>; Debian 12's headers predate it. */
struct ht_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct ht_page_region {
	uint64_t start, end, categories;
};
#define HT_PAGEMAP_SCAN _IOWR('f', 16, struct ht_pm_scan_arg)
#define HT_PAGE_IS_HUGE (1ULL << 6)

/* Calls @each for every huge-page run of [@start, @end); -ENOTTY before Linux 6.7. */
static int scan_huge(uintptr_t start, uintptr_t end,
		     void (*each)(uint64_t lo, uint64_t hi, void *ctx), void *ctx)
{
	struct ht_page_region vec[32];
	struct ht_pm_scan_arg arg;
	int fd = ht_sys_open("/proc/self/pagemap", O_RDONLY, 0);
	int err = 0;

	if (fd < 0)
		return fd;
	while (start < end) {
		long n;

		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.start = start;
		arg.end = end;
		arg.vec = (uintptr_t)vec;
		arg.vec_len = sizeof(vec) / sizeof(vec[0]);
		arg.category_mask = HT_PAGE_IS_HUGE;
		arg.return_mask = HT_PAGE_IS_HUGE;
		n = ht_sys.ioctl(fd, HT_PAGEMAP_SCAN, &arg);
		if (n < 0) {
			err = errno == EINVAL ? -ENOTTY : neg_errno();
			break;
		}
		for (long i = 0; i < n && (size_t)i < sizeof(vec) / sizeof(vec[0]); i++)
			if (vec[i].end > vec[i].start && vec[i].start >= start && vec[i].end <= end)
				each(vec[i].start, vec[i].end, ctx);
		/* The walk stops before @end only when the vector is full. */
		if (arg.walk_end <= start || arg.walk_end >= end)
			break;
		start = arg.walk_end;
	}
	ht_sys.close(fd);
	return err;
}

static void add_bytes(uint64_t lo, uint64_t hi, void *ctx)
{
	*(uint64_t *)ctx += hi - lo;
}

int ht_sys_scan_huge(uintptr_t start, uintptr_t end, uint64_t *huge)
{
	*huge = 0;
	return scan_huge(start, end, add_bytes, huge);
}

struct chunk_marks {
	uintptr_t start;
	size_t n;
	unsigned char *huge;
};

static void mark_chunks(uint64_t lo, uint64_t hi, void *ctx)
{
	struct chunk_marks *m = ctx;
	const uint64_t sz = 2u << 20;

	/* Only whole 2 MiB pages count; a huge mapping covers them whole anyway. */
	for (uint64_t at = (lo - m->start + sz - 1) / sz * sz; at + sz <= hi - m->start; at += sz)
		if (at / sz < m->n)
			m->huge[at / sz] = 1;
}

int ht_sys_scan_huge_chunks(uintptr_t start, size_t n, unsigned char *huge)
{
	struct chunk_marks m = { start, n, huge };

	memset(huge, 0, n);
	return scan_huge(start, start + n * (2u << 20), mark_chunks, &m);
}

int ht_sys_self_huge(uintptr_t start, uintptr_t end, uint64_t *huge)
{
	char *buf;
	size_t len;
	int err = ht_sys_scan_huge(start, end, huge);

	if (err != -ENOTTY && err != -ENOENT)
		return err;
	err = ht_sys_read_file("/proc/self/smaps", &buf, &len);
	if (err < 0)
		return err;
	*huge = ht_smaps_huge_in(buf, len, start, end);
	free(buf);
	return 0;
}

uint64_t ht_sys_self_huge_in(uintptr_t start, uintptr_t end)
{
	uint64_t huge;

	return ht_sys_self_huge(start, end, &huge) == 0 ? huge : 0;
}

int ht_sys_drop_cached(int fd, uint64_t off, size_t len)
{
	int err = ht_sys.fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);

	return err > 0 ? -err : err;
}

int64_t ht_sys_read_huge(int fd, uint64_t off, size_t len)
{
	const size_t huge_page = 2u << 20;
	char *base, *at;
	uint64_t huge = 0;
	int64_t ret = 0;
	struct stat st;

	if (!len || off % huge_page || len % huge_page || len > SIZE_MAX - huge_page)
		return -EINVAL;
	/* Past the end of the file a read would be SIGBUS. */
	if (ht_sys.fstat(fd, &st) != 0)
		return neg_errno();
	if (st.st_size < 0 || (uint64_t)st.st_size < off + len)
		return -EINVAL;
	/* A 2 MiB-aligned address for a 2 MiB-aligned offset: huge pages can map it. */
	base = ht_sys.mmap(NULL, len + huge_page, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return neg_errno();
	at = (char *)(((uintptr_t)base + huge_page - 1) & ~(uintptr_t)(huge_page - 1));
	if (ht_sys.mmap(at, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off) == MAP_FAILED ||
	    ht_sys.madvise(at, len, MADV_HUGEPAGE) != 0) {
		ret = neg_errno();
		ht_sys.munmap(base, len + huge_page);
		return ret;
	}
	/* Each first touch reads a whole 2 MiB page where the file system can hold one. */
	for (size_t done = 0; done < len; done += huge_page) {
		(void)*(volatile const char *)(at + done);
		if (done == 0 && (ht_sys_self_huge((uintptr_t)at, (uintptr_t)at + huge_page, &huge) < 0 || !huge))
			break;
	}
	if (huge && ht_sys_self_huge((uintptr_t)at, (uintptr_t)at + len, &huge) < 0)
		huge = 0;
	ht_sys.munmap(base, len + huge_page);
	return (int64_t)huge;
}
