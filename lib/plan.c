/* SPDX-License-Identifier: MIT */
/* Span planning (see plan.h). */
#include "plan.h"

#include <errno.h>

/*
 * Measured (AMD EPYC, KVM guest, 2025-11-25): bench-text built with
 * BT_MIB=2, "loop 4000000 N" calling N functions on N distinct 4 KiB pages
 * of one 2 MiB-aligned page, ns per call (thread CPU time, median of 11
 * alternating runs), on 4 KiB pages / on one 2 MiB page:
 *   64 KiB 13.1 / 14.4   256 KiB 14.0 / 14.5   512 KiB 16.5 / 17.2
 *   1 MiB 17.9 / 18.8    1.5 MiB 23.1 / 22.5   2 MiB 24.9 / 24.5
 * Up to 1 MiB of code the huge page gains nothing measurable (the code's
 * 4 KiB translations fit the TLBs); past it, a few per cent.  The page
 * costs 2 MiB of private memory in every process either way.
 */
int ht_page_pays(size_t code, size_t huge)
{
	return code >= huge / 2;
}

uintptr_t ht_paid_limit(uintptr_t seg_end, uintptr_t limit, size_t huge)
{
	/*
	 * A library linked with 2 MiB segments and 17 KiB of code must not
	 * cost a 2 MiB page: its tail alone would fill the page.
	 */
	if (huge == 0 || (huge & (huge - 1)) || limit < seg_end)
		return limit;
	return ht_page_pays(seg_end - ht_round_down(seg_end, huge), huge) ? limit : seg_end;
}

uintptr_t ht_paid_floor(uintptr_t seg_start, uintptr_t seg_end, uintptr_t floor, size_t huge)
{
	uintptr_t head_end;

	if (huge == 0 || (huge & (huge - 1)) || floor > seg_start || seg_end <= seg_start ||
	    seg_start > UINTPTR_MAX - huge)
		return seg_start;
	/* The code in the head's page: up to its boundary, or the segment's end before it. */
	head_end = ht_round_up(seg_start, huge);
	if (seg_end < head_end)
		head_end = seg_end;
	return ht_page_pays(head_end - seg_start, huge) ? floor : seg_start;
}

int ht_plan_span(uintptr_t seg_start, uintptr_t seg_end, uintptr_t limit,
		 size_t huge, struct ht_span *out)
{
	return ht_plan_span_from(seg_start, seg_end, seg_start, limit, huge, out);
}

int ht_plan_span_from(uintptr_t seg_start, uintptr_t seg_end, uintptr_t floor,
		      uintptr_t limit, size_t huge, struct ht_span *out)
{
	uintptr_t s, e, tail;

	if (!out || huge == 0 || (huge & (huge - 1)) || seg_end <= seg_start || limit < seg_end ||
	    floor > seg_start)
		return -EINVAL;
	if (seg_start > UINTPTR_MAX - huge || seg_end > UINTPTR_MAX - huge)
		return -ERANGE;
	s = ht_round_up(seg_start, huge);
	/* The head may take a whole huge page when the memory before it is ours to share. */
	if (ht_round_down(seg_start, huge) >= floor)
		s = ht_round_down(seg_start, huge);
	e = ht_round_down(seg_end, huge);
	/* The tail may take a whole huge page when the space after it is ours. */
	tail = ht_round_up(seg_end, huge);
	if (tail <= limit)
		e = tail;
	if (e <= s)
		return -ERANGE;
	out->start = s;
	out->end = e;
	return 0;
}

void ht_copy_range(const unsigned char *huge, size_t n, size_t len, size_t huge_size,
		   size_t *from, size_t *to)
{
	size_t pages = len / huge_size, lo = 0, hi = pages;

	if (n > pages)
		n = pages;
	while (lo < n && huge[lo])
		lo++;
	/* Pages past the flagged ones are never kept. */
	if (hi == n)
		while (hi > lo && huge[hi - 1])
			hi--;
	*from = lo * huge_size;
	*to = hi * huge_size;
	if (lo == pages || hi <= lo)
		*from = *to = 0;
}

size_t ht_hot_range(const uint16_t *present, size_t n, size_t huge_size, unsigned min,
		    size_t *from, size_t *to)
{
	size_t lo = n, hi = 0, hot = 0;

	for (size_t i = 0; i < n; i++) {
		if (present[i] < min)
			continue;
		if (lo == n)
			lo = i;
		hi = i + 1;
		hot++;
	}
	*from = hot ? lo * huge_size : 0;
	*to = hot ? hi * huge_size : 0;
	return hot * huge_size;
}
