/* SPDX-License-Identifier: MIT */
/*
 * From an executable segment (as the program headers describe it) to a
 * span and a source, checked against /proc/self/maps.  Pure: works on a
 * maps buffer, so tests feed it sample text.
 */
#ifndef HT_REGION_H
#define HT_REGION_H

#include "internal.h"
#include "objects.h"

struct ht_seg_query {
	uintptr_t start, end; /* the segment in memory */
	uintptr_t next;       /* start of the object's next segment, or 0 */
	int any_object;       /* accept anonymous or mixed memory (range API) */
	uintptr_t id_addr;    /* an address in one of the object's segments that
				 is never moved (not executable), or 0 */
	/*
	 * The cover-ends setting (ht_options.cover_ends): the object's memory
	 * around the segment that shares no page with a writable segment,
	 * [ro_start, ro_end), page-aligned (ht_readonly_around).  The huge
	 * pages at the segment's two ends may take the object's read-only
	 * mappings there.  Both 0: off.
	 */
	uintptr_t ro_start, ro_end;
};

/* What the maps say about a segment. */
struct ht_seg_plan {
	struct ht_span span;
	size_t mapped;        /* bytes of the span that are mapped code */
	int reserve_gap;      /* the rest of the span is free address space */
	int file_backed;      /* the mapped part is one file mapping, offsets in order */
	uint64_t file_off;    /* file offset of span.start when file_backed */
	unsigned dev_major, dev_minor;
	uint64_t inode;
	char path[512];       /* the mapping's path, "" when anonymous */
	int anonymous;        /* the segment's first page is anonymous memory */
	size_t code;          /* bytes of the segment's code in the span */
	size_t readonly;      /* bytes of the object's read-only data in the span (cover-ends) */
};

/*
 * The bounds for ht_seg_query.ro_start/ro_end around segment @i of the
 * @n segments @segs (address order): from the page after the last
 * writable segment before it (or the object's first page) to the page of
 * the first writable segment after it (or the object's last page).  A
 * writable segment's pages, RELRO's included (read-only in the maps once
 * relocated), are never inside.
 */
void ht_readonly_around(const struct ht_seg *segs, int n, int i, uintptr_t *lo, uintptr_t *hi);

/*
 * Plans @q against the maps text.
 * With q->ro_start/ro_end set, the head's and the tail's huge pages may
 * also take the object's read-only mappings (r--p of the same file, no
 * hole, no other object, nothing writable) in those bounds when the code
 * in that page pays for it (ht_page_pays).
 * Returns: 0; -ERANGE when the span is under one huge page (plan->path
 * still set); -EALREADY when part of it is already anonymous code on
 * huge pages (moved before); -ENOENT when the maps do not show the
 * segment as private readable executable memory of one object.
 */
int ht_plan_segment(const char *maps, size_t len, const struct ht_seg_query *q,
		    size_t huge, struct ht_seg_plan *plan);

#endif
