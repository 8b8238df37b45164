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
 * Whether a huge page of @huge bytes holding @code bytes of code is worth
 * its memory: at least half of it must be code, so that no region ever
 * spends more than twice its code in huge pages.  Below that the iTLB
 * gain is lost in the noise while the page costs 2 MiB of private memory
 * in every process (the figures are in plan.c).
 */
int ht_page_pays(size_t code, size_t huge);

/*
 * The @limit to give ht_plan_span() for a segment ending at @seg_end: the
 * tail's huge page is allowed only when the code in it pays for the page
 * (ht_page_pays); otherwise @seg_end, so the tail stays on small pages.
 * With it, every page of a span but the last is all code and the last is
 * at least half code.
 */
uintptr_t ht_paid_limit(uintptr_t seg_end, uintptr_t limit, size_t huge);

/*
 * Plans the span of one executable segment [@seg_start, @seg_end).
 * @limit: the highest address the span may reach; space past the segment
 *   up to @limit is free or reserved for the same object, so the last huge
 *   page may cover the segment's tail.  Pass @seg_end when nothing is free,
 *   and ht_paid_limit() of it to spend no page on a tail that does not pay.
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

/*
 * The @floor to give ht_plan_span_from() for a segment starting at
 * @seg_start (and ending at @seg_end): the head's huge page is allowed
 * only when the code in it pays for the page; otherwise @seg_start.
 */
uintptr_t ht_paid_floor(uintptr_t seg_start, uintptr_t seg_end, uintptr_t floor, size_t huge);

/*
 * ht_plan_span(), and the span may also start below the segment, down to
 * @floor (<= @seg_start): the memory in [@floor, @seg_start) belongs to
 * the same object, is never writable and may become executable (the
 * cover-ends setting).  The head's huge page is taken when it starts at
 * or above @floor.  @floor == @seg_start is ht_plan_span().
 */
int ht_plan_span_from(uintptr_t seg_start, uintptr_t seg_end, uintptr_t floor,
		      uintptr_t limit, size_t huge, struct ht_span *out);

/*
 * The part of a span that still needs a copy when the kernel maps some of
 * its huge pages from the page cache already.
 * @huge: one flag per 2 MiB page of the span's whole pages of code, set
 *   when the kernel maps that page huge; @n of them.
 * @len: the span's length, a multiple of @huge_size; pages past the @n
 *   flagged ones (a partial last page) always need the copy.
 *
 * One copy is swapped in at a time, so the result is one range: from the
 * first page that is not huge to the last.  Huge pages at either end are
 * kept; any between are copied with the rest.
 * Returns: the range [*@from, *@to) in bytes from the span's start; empty
 * (*@from == *@to) when the kernel maps all of it huge.
 */
void ht_copy_range(const unsigned char *huge, size_t n, size_t len, size_t huge_size,
		   size_t *from, size_t *to);

/*
 * A 4 KiB page present in the page tables was run (or read) at least once;
 * the kernel's fault-around maps up to 16 cached pages (64 KiB) around
 * each fault, so one call into a 2 MiB range can show 16 present pages,
 * and the preload's own touch of each 2 MiB page (pagecache.c) shows as
 * many.  A range counts as hot from 64 present pages (256 KiB, at least
 * four separate places run): below that it was entered once or twice, at
 * start-up, and its 2 MiB copy (2-4 ms of CPU) would not be paid back.
 */
#define HT_HOT_MIN_PRESENT 64

/*
 * The part of a span that a copy of what runs takes.
 * @present: for each 2 MiB range of the span, the number of its 4 KiB
 *   pages present in the page tables; @n of them (the span's length /
 *   @huge_size).
 * @min: present pages from which a range is hot (HT_HOT_MIN_PRESENT).
 *
 * One copy is swapped in at a time, so the result is one range: from the
 * first hot 2 MiB range to the last; cold ranges between are copied with
 * it.  Returns the bytes of the hot ranges, with [*@from, *@to) in bytes
 * from the span's start; 0 and an empty range when none is hot.
 */
size_t ht_hot_range(const uint16_t *present, size_t n, size_t huge_size, unsigned min,
		    size_t *from, size_t *to);

static inline uintptr_t ht_round_up(uintptr_t v, size_t a)
{
	return (v + a - 1) & ~(uintptr_t)(a - 1);
}

static inline uintptr_t ht_round_down(uintptr_t v, size_t a)
{
	return v & ~(uintptr_t)(a - 1);
}

#endif
