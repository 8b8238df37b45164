/* SPDX-License-Identifier: MIT */
/* Memory mappings: every mmap, mremap, madvise and mprotect of the library. */
#include "sys.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
/* Ask for 2 MiB pages even where the default huge page size is 1 GiB. */
#define HT_MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)

int ht_sys_unmap(void *addr, size_t len)
{
	return ht_sys.munmap(addr, len) == 0 ? 0 : ht_sys_neg_errno();
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
		return ht_sys_neg_errno();
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
	return ht_sys.madvise(addr, len, advice) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_protect(void *addr, size_t len, int prot)
{
	return ht_sys.mprotect(addr, len, prot) == 0 ? 0 : ht_sys_neg_errno();
}

/*
 * Moves @copy onto @target in one step: the kernel replaces the old
 * mapping under the mmap lock, so no thread ever sees a hole.
 */
int ht_sys_swap(void *copy, size_t len, void *target)
{
	void *p = ht_sys.mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, target);

	if (p == MAP_FAILED)
		return ht_sys_neg_errno();
	return p == target ? 0 : -EFAULT;
}

/*
 * Maps exactly at @addr (@flags: MAP_FIXED or MAP_FIXED_NOREPLACE, and the
 * rest); -EEXIST where an old kernel took NOREPLACE as a hint.
 */
static int map_at(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = ht_sys.mmap(addr, len, prot, MAP_PRIVATE | flags, fd, off);

	if (p == MAP_FAILED)
		return ht_sys_neg_errno();
	if (p != addr) {
		ht_sys.munmap(p, len);
		return -EEXIST;
	}
	return 0;
}

/* Maps anonymous memory exactly at @addr, failing if anything is there. */
static int map_exactly(void *addr, size_t len, int prot, int flags)
{
	return map_at(addr, len, prot, MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | flags, -1, 0);
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

int ht_sys_map_file(int fd, size_t len, int prot, int shared, void **out)
{
	/* NORESERVE: a private mapping of a hugetlbfs file would otherwise
	 * reserve a second copy of every page for copy-on-write.  POPULATE:
	 * the pages exist already; mapping them all now costs one entry per
	 * 2 MiB and saves the faults later. */
	int flags = shared ? MAP_SHARED : MAP_PRIVATE | MAP_NORESERVE | MAP_POPULATE;
	void *p = ht_sys.mmap(NULL, len, prot, flags, fd, 0);

	if (p == MAP_FAILED)
		return ht_sys_neg_errno();
	*out = p;
	return 0;
}

int ht_sys_map_file_at(void *addr, size_t len, int prot, int fd, uint64_t off, int replace)
{
	return map_at(addr, len, prot, replace ? MAP_FIXED : MAP_FIXED_NOREPLACE, fd, (off_t)off);
}

int ht_sys_map_file_aligned(int fd, size_t len, int prot, size_t align, void **out)
{
	size_t total = len + align;
	char *p = ht_sys.mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;
	size_t head, tail;

	if (p == MAP_FAILED)
		return ht_sys_neg_errno();
	a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	head = a - (uintptr_t)p;
	tail = total - head - len;
	/* Over our own reservation: MAP_FIXED replaces nothing of the program's. */
	if (ht_sys.mmap((void *)a, len, prot, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
		int err = ht_sys_neg_errno();

		ht_sys.munmap(p, total);
		return err;
	}
	if (head)
		ht_sys.munmap(p, head);
	if (tail)
		ht_sys.munmap((char *)a + len, tail);
	*out = (void *)a;
	return 0;
}
