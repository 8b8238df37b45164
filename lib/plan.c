/* SPDX-License-Identifier: MIT */
/* Span planning (see plan.h). */
#include "plan.h"

#include <errno.h>

int ht_plan_span(uintptr_t seg_start, uintptr_t seg_end, uintptr_t limit,
		 size_t huge, struct ht_span *out)
{
	uintptr_t s, e, tail;

	if (!out || huge == 0 || (huge & (huge - 1)) || seg_end <= seg_start || limit < seg_end)
		return -EINVAL;
	if (seg_start > UINTPTR_MAX - huge || seg_end > UINTPTR_MAX - huge)
		return -ERANGE;
	s = ht_round_up(seg_start, huge);
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
