/* SPDX-License-Identifier: MIT */
/* Copy what runs (see hot.h). */
#include "hot.h"
#include "plan.h"
#include "sys.h"

/* The ranges read at once: 1 GiB of code, 1 KiB of counts on the stack. */
#define HT_HOT_MAX_CHUNKS 512

const struct ht_seg_plan *ht_hot_part(const struct ht_seg_plan *p, struct ht_seg_plan *part,
				      struct ht_region *g)
{
	uint16_t present[HT_HOT_MAX_CHUNKS];
	size_t len = p->span.end - p->span.start, n = len / HT_HUGE_PAGE_SIZE, from, to, hot;

	if (n == 0 || n > HT_HOT_MAX_CHUNKS || p->readonly ||
	    ht_sys_present_pages(p->span.start, n, present) < 0)
		return p;
	hot = ht_hot_range(present, n, HT_HUGE_PAGE_SIZE, HT_HOT_MIN_PRESENT, &from, &to);
	g->hot_bytes = hot;
	g->cold_bytes = len - hot;
	*part = *p;
	part->span.start = p->span.start + from;
	part->span.end = p->span.start + to;
	part->file_off = p->file_off + from;
	part->mapped = from < p->mapped ? (p->mapped < to ? p->mapped : to) - from : 0;
	part->reserve_gap = p->reserve_gap && to == len;
	return part;
}

uint64_t ht_hot_copy_bytes(uintptr_t start, uintptr_t end)
{
	uint16_t present[HT_HOT_MAX_CHUNKS];
	uintptr_t s = ht_round_up(start, HT_HUGE_PAGE_SIZE), e = ht_round_down(end, HT_HUGE_PAGE_SIZE);
	size_t n = e > s ? (e - s) / HT_HUGE_PAGE_SIZE : 0, from, to;

	/* The 2 MiB ranges wholly inside: the other data of the ends' pages is not code. */
	if (n == 0)
		return 0;
	if (n > HT_HOT_MAX_CHUNKS || ht_sys_present_pages(s, n, present) < 0)
		return e - s;
	ht_hot_range(present, n, HT_HUGE_PAGE_SIZE, HT_HOT_MIN_PRESENT, &from, &to);
	return to - from;
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
