/* SPDX-License-Identifier: MIT */
/* Copy what runs (see hot.h). */
#include "hot.h"

#include <stdlib.h>

#include "plan.h"
#include "run.h"
#include "sys.h"

/* The ranges read at once: 1 GiB of code, 1 KiB of counts on the stack. */
#define HT_HOT_MAX_CHUNKS 512

size_t ht_hot_pick(const struct ht_seg_plan *p, const uint16_t *present, size_t n,
		   struct ht_seg_plan *part)
{
	size_t len = p->span.end - p->span.start, from, to, hot;

	hot = ht_hot_range(present, n, HT_HUGE_PAGE_SIZE, HT_HOT_MIN_PRESENT, &from, &to);
	*part = *p;
	part->span.start = p->span.start + from;
	part->span.end = p->span.start + to;
	part->file_off = p->file_off + from;
	part->mapped = from < p->mapped ? (p->mapped < to ? p->mapped : to) - from : 0;
	part->reserve_gap = p->reserve_gap && to == len;
	return hot;
}

const struct ht_seg_plan *ht_hot_part(const struct ht_seg_plan *p, struct ht_seg_plan *part,
				      struct ht_region *g)
{
	uint16_t present[HT_HOT_MAX_CHUNKS];
	size_t len = p->span.end - p->span.start, n = len / HT_HUGE_PAGE_SIZE, hot;

	/*
	 * Only the code's own pages count: a partial last page the span took
	 * holds free space or the loader's hole past them, never another
	 * mapping's pages, but the count stops at the code all the same.
	 */
	if (n == 0 || n > HT_HOT_MAX_CHUNKS || p->readonly ||
	    ht_sys_present_pages_to(p->span.start, n, p->span.start + p->mapped, present) < 0)
		return p;
	hot = ht_hot_pick(p, present, n, part);
	g->hot_bytes = hot;
	g->cold_bytes = len - hot;
	return part;
}

/*
 * Whether PAGEMAP_SCAN (Linux 6.7) tells which of @p's pages the kernel
 * maps huge.  Before it ht_keep_kernel_pages() reads smaps instead,
 * milliseconds in a big process: too much for every look of the wait,
 * which then counts those pages as the rest (present, so hot).
 */
static int kernel_pages_cheap(const struct ht_seg_plan *p)
{
	unsigned char huge[HT_HOT_MAX_CHUNKS];
	size_t n = p->mapped / HT_HUGE_PAGE_SIZE;

	return n > 0 && n <= HT_HOT_MAX_CHUNKS && ht_sys_scan_huge_chunks(p->span.start, n, huge) == 0;
}

/*
 * What a deferred copy of @q would take now, planned as the copy plans
 * it (api.c's do_query and move_planned): the span, less the pages the
 * kernel maps huge from the page cache, then its hot part.
 */
static uint64_t query_copy_bytes(const struct ht_options *opt, const char *maps, size_t len,
				 const struct ht_seg_query *q)
{
	struct ht_seg_plan plan, rest, part;
	const struct ht_seg_plan *p = &plan;
	struct ht_region g = { 0 };

	if (ht_plan_segment(maps, len, q, HT_HUGE_PAGE_SIZE, &plan) < 0)
		return 0;
	if (ht_page_cache_usable(opt, &plan) && kernel_pages_cheap(&plan)) {
		ht_keep_kernel_pages(&plan, &rest);
		p = &rest;
	}
	if (p->span.end <= p->span.start)
		return 0;
	p = ht_hot_part(p, &part, &g);
	return p->span.end - p->span.start;
}

uint64_t ht_hot_copy_bytes(const struct ht_options *opt, const struct ht_seg_query *qs, size_t n)
{
	uint64_t bytes = 0;
	size_t len = 0;
	char *maps = NULL;

	/* No maps: every whole 2 MiB range, as when the pages cannot be read. */
	if (ht_sys_read_file("/proc/self/maps", &maps, &len) < 0) {
		for (size_t i = 0; i < n; i++) {
			uintptr_t s = ht_round_up(qs[i].start, HT_HUGE_PAGE_SIZE);
			uintptr_t e = ht_round_down(qs[i].end, HT_HUGE_PAGE_SIZE);

			bytes += e > s ? e - s : 0;
		}
		return bytes;
	}
	for (size_t i = 0; i < n; i++)
		bytes += query_copy_bytes(opt, maps, len, &qs[i]);
	free(maps);
	return bytes;
}

size_t ht_hot_rest(const struct ht_seg_query *q, struct ht_span whole, struct ht_span part,
		   struct ht_seg_query out[2])
{
	size_t n = 0;

	if (part.start >= part.end) {
		out[n++] = *q;
		return n;
	}
	if (part.start > whole.start && part.start > q->start) {
		out[n] = *q;
		out[n].end = part.start;
		out[n++].next = part.start;
	}
	if (part.end < whole.end && part.end < q->end) {
		out[n] = *q;
		out[n++].start = part.end;
	}
	return n;
}
