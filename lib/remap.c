/* SPDX-License-Identifier: MIT */
/*
 * The move of one span: build a copy on huge pages, then swap it in with
 * one mremap().  Until the swap, the program has not been touched; after
 * it, the copy is the code.  There is no step in between.
 */
#include "internal.h"
#include "sys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

double ht_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(struct ht_region *r, enum ht_error e, int err)
{
	r->status = HT_STATUS_FAILED;
	r->error = e;
	r->sys_errno = err < 0 ? -err : 0;
	return err < 0 ? err : -EIO;
}

/*
 * Copies the mapped code into @copy.  pread() from the file lets the
 * kernel copy straight from the page cache, without faulting in the 4 KiB
 * pages of the original mapping; memcpy() covers the rest, and every case
 * where the file cannot be trusted to hold the same bytes.
 */
static int fill_copy(const struct ht_options *opt, struct ht_span span,
		     const struct ht_source *src, char *copy, struct ht_region *r)
{
	size_t done = 0;

	if (src->fd >= 0 && opt->fill != 2) {
		ssize_t n = ht_sys_pread_full(src->fd, copy, src->mapped, (off_t)src->file_off);

		if (n > 0)
			done = (size_t)n;
	}
	r->fill = done ? "pread" : "memcpy";
	if (done < src->mapped)
		memcpy(copy + done, (const char *)span.start + done, src->mapped - done);
	return 0;
}

/* Bytes of the copy the kernel put on huge pages, from smaps. */
static size_t copy_huge_bytes(const char *copy, size_t len)
{
	char *buf;
	size_t blen;
	uint64_t huge;

	if (ht_sys_read_file("/proc/self/smaps", &buf, &blen) < 0)
		return 0;
	huge = ht_smaps_huge_in(buf, blen, (uintptr_t)copy, (uintptr_t)copy + len);
	free(buf);
	return (size_t)huge;
}

/*
 * Makes sure the copy really sits on huge pages before it replaces code
 * that is shared with the page cache: a copy on 4 KiB pages would cost
 * memory and gain nothing.  MADV_COLLAPSE answers cheaply when the pages
 * are huge already and mends the ranges that are not.
 */
static int check_thp(char *copy, size_t len, struct ht_region *r)
{
	if (ht_sys_advise(copy, len, MADV_COLLAPSE) == 0) {
		r->huge_bytes = len;
		return 0;
	}
	r->huge_bytes = copy_huge_bytes(copy, len);
	return r->huge_bytes ? 0 : -ENOMEM;
}

static int alloc_copy(const struct ht_options *opt, size_t len, char **copy, struct ht_region *r)
{
	int hugetlb = opt->mode == HT_MODE_EXPLICIT;
	void *p;
	int err = ht_sys_map_anon(len, HT_HUGE_PAGE_SIZE, hugetlb, &p);

	if (err < 0)
		return fail(r, HT_E_ALLOC, err);
	r->mode = hugetlb ? HT_MODE_EXPLICIT : HT_MODE_THP;
	if (!hugetlb) {
		err = ht_sys_advise(p, len, MADV_HUGEPAGE);
		if (err < 0) {
			ht_sys_unmap(p, len);
			return fail(r, HT_E_ADVISE, err);
		}
	}
	*copy = p;
	return 0;
}

/* Everything before the swap; on failure the copy is gone and nothing else changed. */
static int build_copy(const struct ht_options *opt, struct ht_span span,
		      const struct ht_source *src, char **out, struct ht_region *r)
{
	size_t len = span.end - span.start;
	char *copy;
	int err = alloc_copy(opt, len, &copy, r);

	if (err < 0)
		return err;
	fill_copy(opt, span, src, copy, r);
	if (r->mode == HT_MODE_THP && check_thp(copy, len, r) < 0)
		err = fail(r, HT_E_NO_HUGE, 0);
	else if ((err = ht_sys_protect(copy, len, PROT_READ | PROT_EXEC)) < 0)
		err = fail(r, HT_E_PROTECT, err);
	if (err < 0) {
		ht_sys_unmap(copy, len);
		return err;
	}
	*out = copy;
	return 0;
}

int ht_move_span(const struct ht_options *opt, struct ht_span span,
		 const struct ht_source *src, struct ht_region *r)
{
	size_t len = span.end - span.start;
	char *gap = (char *)span.start + src->mapped;
	size_t gap_len = len - src->mapped;
	char *copy;
	int err;

	r->start = span.start;
	r->end = span.end;
	r->bytes = len;
	r->huge_bytes = 0;
	r->fill = "";
	err = build_copy(opt, span, src, &copy, r);
	if (err < 0)
		return err;
	/* Free space after the code is claimed first, so mremap replaces only what we own. */
	if (src->reserve_gap && gap_len && (err = ht_sys_reserve_fixed(gap, gap_len)) < 0) {
		ht_sys_unmap(copy, len);
		return fail(r, HT_E_SWAP, err);
	}
	err = ht_sys_swap(copy, len, (void *)span.start);
	if (err < 0) {
		if (src->reserve_gap && gap_len)
			ht_sys_unmap(gap, gap_len);
		ht_sys_unmap(copy, len);
		return fail(r, HT_E_SWAP, err);
	}
	r->status = HT_STATUS_OK;
	r->error = HT_E_NONE;
	r->sys_errno = 0;
	return 0;
}
