/* SPDX-License-Identifier: MIT */
/*
 * The page cache's 2 MiB pages: keep what the kernel already maps huge,
 * and read copied code back as 2 MiB pages for the next start.
 */
#include "run.h"
#include "sys.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>

/*
 * Where the file offset and the address agree modulo 2 MiB, this kernel
 * maps code from 2 MiB page-cache pages (large folios) with PMDs by itself
 * (FilePmdMapped): after `hugetext warm`, after our own warming below, or
 * for a file written just now.  Such pages are shared by every process and
 * cost nothing to keep; a copy would cost memory and gain nothing.
 */
int ht_page_cache_usable(const struct ht_options *opt, const struct ht_seg_plan *p)
{
	return opt->page_cache && opt->mode != HT_MODE_EXPLICIT && p->file_backed &&
	       (p->span.start - p->file_off) % HT_HUGE_PAGE_SIZE == 0;
}

/*
 * Before Linux 6.7 (no PAGEMAP_SCAN) smaps tells only how much of the
 * whole mapping is huge.  When that is every whole 2 MiB page of the span,
 * each of them is; anything less cannot be placed, and all is copied.
 */
static int all_huge_by_smaps(uintptr_t start, size_t n, unsigned char *huge)
{
	uint64_t got;

	if (ht_sys_self_huge(start, start + n * HT_HUGE_PAGE_SIZE, &got) < 0 ||
	    got < (uint64_t)n * HT_HUGE_PAGE_SIZE)
		return 0;
	memset(huge, 1, n);
	return 1;
}

/*
 * Whether the file's page at @addr is in the page cache.  A touch of one
 * that is not reads it from the disk on the start-up path, for code the
 * program may never run: a cold libLLVM's 48 touches took 20-140 ms here
 * (loaded machine), and what is read cannot be huge and kept anyway
 * unless the readahead happens to make a 2 MiB folio.
 */
static int cached(uintptr_t addr)
{
	unsigned char vec = 0;

	return ht_sys_resident((void *)addr, HT_PAGE, &vec) == 0 && (vec & 1);
}

/*
 * Reads one byte of each whole 2 MiB page of code that is in the page
 * cache, so the kernel maps now whatever it can map huge, and asks which
 * it did.  Returns the plan of
 * what is left to copy in @rest, and the bytes kept; @rest is empty when
 * nothing is (or when the kernel cannot say: a copy of all, as before).
 */
size_t ht_keep_kernel_pages(const struct ht_seg_plan *p, struct ht_seg_plan *rest)
{
	unsigned char huge[512];
	size_t len = p->span.end - p->span.start;
	size_t n = p->mapped / HT_HUGE_PAGE_SIZE, from = 0, to = len, kept = 0;

	*rest = *p;
	if (n > sizeof(huge))
		n = sizeof(huge);
	/* A program already running may have made its code unreadable: no touch then. */
	for (size_t i = 0; i < n && !ht_in_background; i++)
		if (cached(p->span.start + i * HT_HUGE_PAGE_SIZE))
			(void)*(volatile const char *)(p->span.start + i * HT_HUGE_PAGE_SIZE);
	if (n && (ht_sys_scan_huge_chunks(p->span.start, n, huge) == 0 ||
		  all_huge_by_smaps(p->span.start, n, huge)))
		ht_copy_range(huge, n, len, HT_HUGE_PAGE_SIZE, &from, &to);
	for (size_t i = 0; i < n; i++)
		kept += (i * HT_HUGE_PAGE_SIZE < from || i * HT_HUGE_PAGE_SIZE >= to) && huge[i] ?
			HT_HUGE_PAGE_SIZE : 0;
	rest->span.start = p->span.start + from;
	rest->span.end = p->span.start + to;
	rest->file_off = p->file_off + from;
	rest->mapped = from < to ? (p->mapped < to ? p->mapped : to) - from : 0;
	rest->reserve_gap = p->reserve_gap && to == len;
	return from < to ? kept : len;
}

/* Whether the file's @len bytes at @off are all zeros (padding, not another segment's bytes). */
static int zeros_in_file(int fd, uint64_t off, size_t len)
{
	uint64_t buf[512];

	while (len > 0) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);

		if (ht_sys_pread_full(fd, buf, n, (off_t)off) != (ssize_t)n)
			return 0;
		for (size_t i = 0; i < n / sizeof(buf[0]); i++)
			if (buf[i])
				return 0;
		off += n;
		len -= n;
	}
	return 1;
}

/*
 * Whether @p is a last 2 MiB page that the code's mapping ends inside, with
 * nothing but free address space after it (node's layout: its code, then
 * a hole up to the next segment), whose 2 MiB of the file all exist, and
 * whose bytes past the code's mapping are the file's zero padding: mapped
 * there they make nothing executable that was not (another segment's
 * bytes, .rodata, would be; HUGETEXT_COVER_ENDS is the opt-in for that).
 */
static int lone_tail_page(const struct ht_seg_plan *p, int fd)
{
	struct stat st;

	return p->span.end - p->span.start == HT_HUGE_PAGE_SIZE && p->reserve_gap && p->file_backed &&
	       p->mapped > 0 && p->mapped < HT_HUGE_PAGE_SIZE && p->mapped % HT_PAGE == 0 &&
	       p->file_off % HT_HUGE_PAGE_SIZE == 0 && ht_sys_fstat(fd, &st) == 0 &&
	       (uint64_t)st.st_size >= p->file_off + HT_HUGE_PAGE_SIZE &&
	       zeros_in_file(fd, p->file_off + p->mapped, HT_HUGE_PAGE_SIZE - p->mapped);
}

/*
 * Only PAGEMAP_SCAN (Linux 6.7) tells one 2 MiB page apart: smaps counts
 * the whole mapping, and the new one may have merged with the code's.
 * Returns 1 when the page at @start is mapped huge, 0 when not, -1 when
 * this kernel cannot tell.
 */
static int mapped_huge(uintptr_t start)
{
	unsigned char huge = 0;

	return ht_sys_scan_huge_chunks(start, 1, &huge) < 0 ? -1 : huge;
}

int ht_keep_tail_page(const struct ht_seg_plan *p, int fd)
{
	char *start = (char *)p->span.start, *gap = start + p->mapped;
	size_t gap_len = HT_HUGE_PAGE_SIZE - p->mapped;
	int prot = PROT_READ | PROT_EXEC;

	/* Not in the background: the program may have changed its code's protection by then. */
	if (ht_in_background || fd < 0 || !lone_tail_page(p, fd) || !cached(p->span.start) ||
	    mapped_huge(p->span.start) < 0)
		return 0;
	/* The free part, claimed only if nothing was mapped there since the plan. */
	if (ht_sys_map_file_at(gap, gap_len, prot, fd, p->file_off + p->mapped, 0) < 0)
		return 0;
	/* One mapping of the whole 2 MiB, put over the code's in one step. */
	if (ht_sys_map_file_at(start, HT_HUGE_PAGE_SIZE, prot, fd, p->file_off, 1) == 0) {
		(void)*(volatile const char *)start;
		if (mapped_huge(p->span.start) == 1)
			return 1;
	}
	/* The code's part stays a mapping of its file (the same bytes); the claim goes. */
	ht_sys_unmap(gap, gap_len);
	return 0;
}

/* File systems whose page cache holds 2 MiB pages on this kernel's read path. */
static int keeps_huge_pages(int fd)
{
	struct statfs st;

	return ht_sys_fstatfs(fd, &st) == 0 &&
	       (st.f_type == 0xEF53 /* ext4 */ || st.f_type == 0x58465342 /* XFS */);
}

/*
 * After the swap no page of the copied code's file range is mapped here:
 * drop those cached pages (the kernel keeps any other process maps) and
 * read them again as 2 MiB pages.  The next start of the program then
 * finds them and keeps them, with no copy, and so does a start without
 * us.  Costs one read of the code from the disk, once.
 */
void ht_warm_copied(const struct run *r, const struct ht_seg_plan *done, int fd,
		    struct ht_region *g)
{
	size_t whole = ht_round_down(done->mapped, HT_HUGE_PAGE_SIZE);
	struct ht_seg_plan tail = *done;
	int64_t huge;

	/* A last page with free space after it is the page cache's too (ht_keep_tail_page). */
	tail.span.start = done->span.start + whole;
	tail.file_off = done->file_off + whole;
	tail.mapped = done->mapped - whole;
	if (fd >= 0 && lone_tail_page(&tail, fd))
		whole += HT_HUGE_PAGE_SIZE;
	if (!whole || fd < 0 || ht_budget_spent(r) || !keeps_huge_pages(fd) ||
	    ht_sys_drop_cached(fd, done->file_off, whole) < 0)
		return;
	huge = ht_sys_read_huge(fd, done->file_off, whole, 0);
	g->warmed_bytes = huge > 0 ? (size_t)huge : 0;
}
