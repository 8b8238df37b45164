/* SPDX-License-Identifier: MIT */
/* Checking a segment against /proc/self/maps (see region.h). */
#include "region.h"

#include <elf.h>
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

/*
 * Whether [@from, @to) is wholly the object's read-only data: r--p
 * mappings of its file, one after another with no hole.  Anything else
 * (a writable mapping, another object, a gap, the loader's PROT_NONE hole,
 * code moved before) keeps the page off.  *@in_order is cleared when a
 * file offset does not follow the code's (@delta: offset minus address),
 * which rules out one pread() of the span.
 */
static int readonly_run(const char *maps, size_t len, uintptr_t from, uintptr_t to,
			const struct ht_map *obj, uint64_t delta, int *in_order)
{
	struct ht_map m;
	size_t pos;
	uintptr_t at = from;

	if (from >= to)
		return 1;
	if (!find_entry(maps, len, from, &m, &pos))
		return 0;
	for (;;) {
		if (!same_file(&m, obj) || strcmp(m.perms, "r--p") != 0)
			return 0;
		if (m.offset - m.start != delta)
			*in_order = 0;
		if (m.end >= to)
			return 1;
		at = m.end;
		if (!ht_maps_next(maps, len, &pos, &m) || m.start != at)
			return 0;
	}
}

void ht_readonly_around(const struct ht_seg *segs, int n, int i, uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	if (i < 0 || i >= n)
		return;
	*lo = ht_round_down(segs[0].start, HT_PAGE);
	*hi = ht_round_up(segs[n - 1].end, HT_PAGE);
	for (int k = 0; k < n; k++) {
		if (!(segs[k].flags & PF_W))
			continue;
		if (k < i && ht_round_up(segs[k].end, HT_PAGE) > *lo)
			*lo = ht_round_up(segs[k].end, HT_PAGE);
		if (k > i && ht_round_down(segs[k].start, HT_PAGE) < *hi)
			*hi = ht_round_down(segs[k].start, HT_PAGE);
	}
	/* A writable segment that is the code segment itself, or overlaps it: none. */
	if ((segs[i].flags & PF_W) || *lo > ht_round_down(segs[i].start, HT_PAGE) ||
	    *hi < ht_round_up(segs[i].end, HT_PAGE))
		*lo = *hi = 0;
}

/* The neighbours the cover-ends setting may take around the code's pages [lo, hi). */
struct ends {
	uintptr_t floor;    /* lowest start of the span: q->start when the head is not taken */
	uintptr_t ro_limit; /* the tail's page end when it may take read-only data, else 0 */
};

static void readonly_ends(const char *maps, size_t len, const struct ht_seg_query *q,
			  size_t huge, const struct ht_map *obj, const struct ht_map *first,
			  int *in_order, struct ends *e)
{
	uintptr_t lo = ht_round_down(q->start, HT_PAGE), hi = ht_round_up(q->end, HT_PAGE);
	uintptr_t head = ht_round_down(q->start, huge), tail = ht_round_up(q->end, huge);
	uint64_t delta = first->offset - first->start;
	int head_order = 1, tail_order = 1;

	e->floor = q->start;
	e->ro_limit = 0;
	if (q->any_object || !obj->inode || q->ro_end <= q->ro_start || q->end > UINTPTR_MAX - huge)
		return;
	if (head < lo && head >= q->ro_start &&
	    readonly_run(maps, len, head, lo, obj, delta, &head_order))
		e->floor = ht_paid_floor(q->start, q->end, head, huge);
	if (tail > hi && tail <= q->ro_end &&
	    readonly_run(maps, len, hi, tail, obj, delta, &tail_order))
		e->ro_limit = ht_paid_limit(q->end, tail, huge) == tail ? tail : 0;
	/* Offsets matter only for the parts that are taken. */
	if ((e->floor < q->start && !head_order) || (e->ro_limit && !tail_order))
		*in_order = 0;
}

int ht_plan_segment(const char *maps, size_t len, const struct ht_seg_query *q,
		    size_t huge, struct ht_seg_plan *plan)
{
	uintptr_t lo = ht_round_down(q->start, HT_PAGE), hi = ht_round_up(q->end, HT_PAGE);
	uintptr_t limit, code_from, code_to;
	struct ht_map first, obj;
	struct ends ends;
	size_t pos;
	int free_gap = 0, err, tail_ro;

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
	readonly_ends(maps, len, q, huge, &obj, &first, &plan->file_backed, &ends);
	limit = ends.ro_limit ? ends.ro_limit
			      : ht_paid_limit(q->end, gap_end(maps, len, q, huge, &obj, &free_gap), huge);
	err = ht_plan_span_from(q->start, q->end, ends.floor, limit, huge, &plan->span);
	if (err < 0)
		return err;
	tail_ro = ends.ro_limit && plan->span.end > hi;
	plan->mapped = (tail_ro || hi >= plan->span.end ? plan->span.end : hi) - plan->span.start;
	plan->reserve_gap = plan->span.end > hi && free_gap && !tail_ro;
	code_from = q->start > plan->span.start ? q->start : plan->span.start;
	code_to = q->end < plan->span.end ? q->end : plan->span.end;
	plan->code = code_to - code_from;
	plan->readonly = (plan->span.start < lo ? q->start - plan->span.start : 0) +
			 (tail_ro ? plan->span.end - q->end : 0);
	if (plan->file_backed)
		plan->file_off = first.offset + (plan->span.start - first.start);
	return 0;
}
