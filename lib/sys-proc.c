/* SPDX-License-Identifier: MIT */
/*
 * This process as the kernel sees it: its THP setting (prctl), its
 * descriptor table (close_range), its page tables (/proc/self/pagemap).
 */
#include "sys.h"
#include "maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

int ht_sys_thp_disabled(void)
{
	int saved = errno, ret = ht_sys.prctl(PR_GET_THP_DISABLE, 0);

	ret = ret < 0 ? ht_sys_neg_errno() : ret != 0;
	errno = saved;
	return ret;
}

int ht_sys_elevated(void)
{
	struct __user_cap_header_struct head = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2];
	unsigned r, e, s, rg, eg, sg;
	long (*sys)(long, ...) = ht_libc()->syscall;
	int saved = errno, ret = 1;

	if (getauxval(AT_SECURE) != 0)
		goto out;
	if (sys(SYS_getresuid, &r, &e, &s) < 0 || sys(SYS_getresgid, &rg, &eg, &sg) < 0)
		goto out;
	if (r != e || s != e || rg != eg || sg != eg)
		goto out;
	if (e == 0) {
		ret = 0;
		goto out;
	}
	if (sys(SYS_capget, &head, caps) < 0)
		goto out;
	/* Permitted, not only effective: a permitted capability can be raised. */
	ret = (caps[0].permitted | caps[1].permitted | caps[0].effective | caps[1].effective) != 0;
out:
	errno = saved;
	return ret;
}

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

int ht_sys_private_fds(int keep_stderr)
{
	/*
	 * One call unshares the table, copying only the descriptors below the
	 * first one closed: none, or stdin to stderr (closing the copies of
	 * stdin and stdout flushes them, as any close does).
	 */
	if (ht_sys.close_range(keep_stderr ? 3 : 0, ~0U, CLOSE_RANGE_UNSHARE) < 0)
		return ht_sys_neg_errno();
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
#define HT_PAGE_IS_PRESENT (1ULL << 3)
#define HT_PAGE_IS_HUGE (1ULL << 6)


/*
 * Calls @each for every run of [@start, @end) whose pages are in
 * @category (HT_PAGE_IS_HUGE, HT_PAGE_IS_PRESENT); -ENOTTY before Linux 6.7.
 */
static int scan_pages(uintptr_t start, uintptr_t end, uint64_t category,
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
		arg.category_mask = category;
		arg.return_mask = category;
		n = ht_sys.ioctl(fd, HT_PAGEMAP_SCAN, &arg);
		if (n < 0) {
			err = errno == EINVAL ? -ENOTTY : ht_sys_neg_errno();
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

static int scan_huge(uintptr_t start, uintptr_t end,
		     void (*each)(uint64_t lo, uint64_t hi, void *ctx), void *ctx)
{
	return scan_pages(start, end, HT_PAGE_IS_HUGE, each, ctx);
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

/* 4 KiB pages per 2 MiB range: the pagemap has one entry per base page. */
#define HT_PM_PAGE 4096u
#define HT_PM_PER_CHUNK ((2u << 20) / HT_PM_PAGE)

struct present_counts {
	uintptr_t start;
	size_t n;
	uint16_t *present;
};

static void count_present(uint64_t lo, uint64_t hi, void *ctx)
{
	struct present_counts *c = ctx;
	const uint64_t sz = 2u << 20;

	/* A run may cross 2 MiB boundaries: split it. */
	for (uint64_t at = lo; at < hi;) {
		uint64_t i = (at - c->start) / sz, end = c->start + (i + 1) * sz;

		if (end > hi)
			end = hi;
		if (i < c->n)
			c->present[i] += (uint16_t)((end - at) / HT_PM_PAGE);
		at = end;
	}
}

/* The present pages of [@start, @end) in each of the @n 2 MiB ranges from @start. */
static int scan_present_to(uintptr_t start, size_t n, uintptr_t end, uint16_t *present)
{
	struct present_counts c = { start, n, present };

	memset(present, 0, n * sizeof(*present));
	return scan_pages(start, end, HT_PAGE_IS_PRESENT, count_present, &c);
}

int ht_sys_scan_present(uintptr_t start, size_t n, uint16_t *present)
{
	return scan_present_to(start, n, start + n * (2u << 20), present);
}

/* Bit 63 of each 8-byte pagemap entry: the page is present (docs: admin-guide/mm/pagemap). */
static int read_present(int fd, uintptr_t start, size_t n, uintptr_t end, uint16_t *present)
{
	uint64_t entries[HT_PM_PER_CHUNK];

	for (size_t i = 0; i < n; i++) {
		uintptr_t at = start + i * (2u << 20);
		size_t pages = at < end ? (end - at) / HT_PM_PAGE : 0;
		ssize_t got = 0;

		if (pages > HT_PM_PER_CHUNK)
			pages = HT_PM_PER_CHUNK;
		if (pages)
			got = ht_sys_pread_full(fd, entries, pages * sizeof(uint64_t),
						(off_t)(at / HT_PM_PAGE * sizeof(uint64_t)));
		if (got < 0)
			return (int)got;
		present[i] = 0;
		for (size_t e = 0; e < (size_t)got / sizeof(uint64_t); e++)
			present[i] += (uint16_t)(entries[e] >> 63);
	}
	return 0;
}

int ht_sys_present_pages_to(uintptr_t start, size_t n, uintptr_t end, uint16_t *present)
{
	uintptr_t last = start + n * (2u << 20);
	int err, fd;

	end = end < start ? start : end > last ? last : (end + HT_PM_PAGE - 1) & ~(uintptr_t)(HT_PM_PAGE - 1);
	err = scan_present_to(start, n, end, present);
	if (err != -ENOTTY)
		return err;
	fd = ht_sys_open("/proc/self/pagemap", O_RDONLY, 0);
	if (fd < 0)
		return fd;
	err = read_present(fd, start, n, end, present);
	ht_sys.close(fd);
	return err;
}

int ht_sys_present_pages(uintptr_t start, size_t n, uint16_t *present)
{
	return ht_sys_present_pages_to(start, n, start + n * (2u << 20), present);
}
