/* SPDX-License-Identifier: MIT */
/* Pure planning of the 2 MiB-aligned spans that can move onto huge pages. */
#ifndef HT_PLAN_H
#define HT_PLAN_H

#include <stddef.h>
#include <stdint.h>

struct ht_span {
	uintptr_t start, end; /* end exclusive, both multiples of the huge size */
};

/*
 * Plans the span of one executable segment [@seg_start, @seg_end).
 * @limit: the highest address the span may reach; space past the segment
 *   up to @limit is free or reserved for the same object, so the last huge
 *   page may cover the segment's tail.  Pass @seg_end when nothing is free.
 * @huge: the huge page size, a power of two.
 *
 * The span never starts below the segment: that memory holds other data
 * that must not become executable.
 *
 * Returns: 0 with *@out set; -ERANGE when not one huge page fits;
 * -EINVAL for inconsistent input.
 */
int ht_plan_span(uintptr_t seg_start, uintptr_t seg_end, uintptr_t limit,
		 size_t huge, struct ht_span *out);

static inline uintptr_t ht_round_up(uintptr_t v, size_t a)
{
	return (v + a - 1) & ~(uintptr_t)(a - 1);
}

static inline uintptr_t ht_round_down(uintptr_t v, size_t a)
{
	return v & ~(uintptr_t)(a - 1);
}

#endif
