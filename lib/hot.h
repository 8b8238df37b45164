/* SPDX-License-Identifier: MIT */
/*
 * Copy what runs (ht_options.copy_hot): the 2 MiB ranges of a span that
 * the process has run, found from the pages present in its own page
 * tables, without privileges or hardware counters.
 */
#ifndef HT_HOT_H
#define HT_HOT_H

#include "region.h"

struct ht_options;

/*
 * The part of @p that a copy of what runs takes, into @part: one range,
 * from the first hot 2 MiB range to the last (plan.h's ht_hot_range).
 * @present: for each of the @n 2 MiB ranges of @p's span, its code's
 * pages present in the page tables; a partial last page (the span takes
 * one when it holds at least 1 MiB of code) counts its code's pages only,
 * by the same rule as a whole range, and is copied whole when hot.
 * Returns the bytes of the hot ranges.  Pure.
 */
size_t ht_hot_pick(const struct ht_seg_plan *p, const uint16_t *present, size_t n,
		   struct ht_seg_plan *part);

/*
 * ht_hot_pick() on the pages present now; @g's hot_bytes and cold_bytes
 * say what was found.  Returns @part (empty when nothing is hot: nothing
 * to copy), or @p itself (copied whole) when the pages cannot be read,
 * when the span is over 1 GiB, or with the cover-ends setting's read-only
 * bytes in it.
 */
const struct ht_seg_plan *ht_hot_part(const struct ht_seg_plan *p, struct ht_seg_plan *part,
				      struct ht_region *g);

/*
 * The bytes a deferred copy of what runs would take of the @n queries
 * @qs now, for the background thread's wait, which counts what the copy
 * costs.  Each is planned against the maps as the copy plans it, so the
 * count and the copy agree: a partial end page counts when the span takes
 * it and its code is hot; a span copied whole (ht_hot_part) counts whole;
 * pages the kernel maps huge from the page cache (@opt's page_cache) do
 * not count where PAGEMAP_SCAN says which they are (6.7 on).  Every whole
 * 2 MiB range when the maps cannot be read.
 */
uint64_t ht_hot_copy_bytes(const struct ht_options *opt, const struct ht_seg_query *qs, size_t n);

/*
 * What a copy of what runs left on 4 KiB pages, for a later pass: the
 * parts of @whole (the span planned for @q) outside @part (the span
 * copied), as queries that are planned again from fresh maps when they
 * turn hot.  The head runs from @q's start to @part's start, the tail
 * from @part's end to @q's end, each with @q's other fields.  An empty
 * @part (nothing was hot) leaves all of @q.  Returns how many queries
 * (0 to 2) were written to @out.  Pure.
 */
size_t ht_hot_rest(const struct ht_seg_query *q, struct ht_span whole, struct ht_span part,
		   struct ht_seg_query out[2]);

#endif
