/* SPDX-License-Identifier: MIT */
/* Checking a segment against /proc/self/maps (see region.h). */
#include "region.h"

#include <errno.h>
#include <string.h>

static int same_file(const struct ht_map *a, const struct ht_map *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->inode != 0;
}

static int is_code(const struct ht_map *m)
{
	/* Writable code (a JIT's) would lose its write permission in the copy. */
	return m->perms[0] == 'r' && m->perms[1] == '-' && m->perms[2] == 'x' && m->perms[3] == 'p';
}

/*
 * Code on whole huge pages inside an object's segment that is not the
 * object's file is what a remap leaves behind: anonymous THP memory,
 * "/anon_hugepage" for explicit pages, a shared cache file; ours, from any
 * copy of the library, or iodlr's.
 */
static int looks_moved(const struct ht_map *m, const struct ht_map *obj)
{
	return !same_file(m, obj) && is_code(m) && m->start % HT_HUGE_PAGE_SIZE == 0 &&
	       m->end % HT_HUGE_PAGE_SIZE == 0;
}

static void copy_path(const struct ht_map *m, char *dst, size_t len)
{
	size_t n = m->path_len < len - 1 ? m->path_len : len - 1;

	memcpy(dst, m->path, n);
	dst[n] = '\0';
}

/* Finds the entry that holds @addr. */
static int find_entry(const char *maps, size_t len, uintptr_t addr, struct ht_map *m, size_t *pos)
{
	*pos = 0;
	while (ht_maps_next(maps, len, pos, m))
		if (m->start <= addr && addr < m->end)
			return 1;
	return 0;
}

/*
 * Checks that [lo, hi) is covered, without holes, by code mappings of the
 * object @obj (any private code with @any_object); file mappings must also
 * keep their offsets in order, which is what makes a single pread() of the
 * whole span correct.
 */
static int check_cover(const char *maps, size_t len, uintptr_t hi, const struct ht_map *first,
		       size_t pos, const struct ht_map *obj, int any_object, int *file_backed)
{
	struct ht_map m = *first;
	uint64_t base_off = first->offset - first->start;

	*file_backed = first->inode != 0;
	for (;;) {
		if (!any_object && !same_file(&m, obj))
			return looks_moved(&m, obj) ? -EALREADY : -ENOENT;
		if (!is_code(&m))
			return -ENOENT;
		if (!same_file(&m, first) || m.offset - m.start != base_off)
			*file_backed = 0;
		if (m.end >= hi)
			return 0;
		uintptr_t prev_end = m.end;

		if (!ht_maps_next(maps, len, &pos, &m) || m.start != prev_end)
			return -ENOENT;
	}
}

/* The first entry that ends after @at. */
static int entry_after(const char *maps, size_t len, uintptr_t at, struct ht_map *m)
{
	size_t pos = 0;

	while (ht_maps_next(maps, len, &pos, m))
		if (m->end > at)
			return 1;
	return 0;
}

/*
 * How far past the segment the span may reach: up to @cap, over space
 * that is free (*@free_gap) or a PROT_NONE hole the loader left inside
 * the same object.  Anything else stops it.
 */
static uintptr_t usable_gap(const char *maps, size_t len, uintptr_t from, uintptr_t cap,
			    const struct ht_map *obj, int *free_gap)
{
	uintptr_t at = from;
	int saw_hole = 0, saw_free = 0;
	struct ht_map m;

	while (at < cap) {
		if (!entry_after(maps, len, at, &m) || m.start >= cap) {
			saw_free = 1;
			at = cap;
		} else if (m.start > at) {
			saw_free = 1;
			at = m.start;
		} else if (strcmp(m.perms, "---p") == 0 && same_file(&m, obj)) {
			saw_hole = 1;
			at = m.end < cap ? m.end : cap;
		} else {
			break;
		}
	}
	/* Free space and holes together would need two kinds of claim; keep it simple. */
	if (saw_hole && saw_free)
		return from;
	*free_gap = !saw_hole;
	return at;
}

static uintptr_t gap_end(const char *maps, size_t len, const struct ht_seg_query *q,
			 size_t huge, const struct ht_map *obj, int *free_gap)
{
	uintptr_t page_end = ht_round_up(q->end, HT_PAGE);
	uintptr_t cap = ht_round_up(q->end, huge);

	*free_gap = 0;
	if (q->any_object || !obj->inode)
		return page_end;
	if (q->next && ht_round_down(q->next, HT_PAGE) < cap)
		cap = ht_round_down(q->next, HT_PAGE);
	if (cap <= page_end)
		return page_end;
	return usable_gap(maps, len, page_end, cap, obj, free_gap);
}

/*
 * The object's own file mapping: one of its segments that is never moved
 * (not executable) when the caller names one, so that code moved before,
 * even from the segment's first page on, is told from the object.
 */
static void find_object(const char *maps, size_t len, const struct ht_seg_query *q,
			const struct ht_map *first, struct ht_map *obj)
{
	size_t pos;

	if (!q->id_addr || !find_entry(maps, len, q->id_addr, obj, &pos) || !obj->inode)
		*obj = *first;
}

int ht_plan_segment(const char *maps, size_t len, const struct ht_seg_query *q,
		    size_t huge, struct ht_seg_plan *plan)
{
	uintptr_t lo = ht_round_down(q->start, HT_PAGE), hi = ht_round_up(q->end, HT_PAGE);
	struct ht_map first, obj;
	size_t pos;
	int free_gap, err;

	memset(plan, 0, sizeof(*plan));
	if (q->end <= q->start || !find_entry(maps, len, lo, &first, &pos))
		return -ENOENT;
	find_object(maps, len, q, &first, &obj);
	copy_path(q->any_object ? &first : &obj, plan->path, sizeof(plan->path));
	plan->anonymous = first.inode == 0;
	plan->dev_major = first.dev_major;
	plan->dev_minor = first.dev_minor;
	plan->inode = first.inode;
	err = check_cover(maps, len, hi, &first, pos, &obj, q->any_object, &plan->file_backed);
	if (err < 0)
		return err;
	err = ht_plan_span(q->start, q->end,
			   ht_paid_limit(q->end, gap_end(maps, len, q, huge, &obj, &free_gap), huge),
			   huge, &plan->span);
	if (err < 0)
		return err;
	plan->mapped = (hi < plan->span.end ? hi : plan->span.end) - plan->span.start;
	plan->reserve_gap = plan->span.end > hi && free_gap;
	if (plan->file_backed)
		plan->file_off = first.offset + (plan->span.start - first.start);
	return 0;
}
