/*
 * The /proc/self/maps parser and the planner behind it: ht_maps_next(),
 * ht_maps_parse_line(), ht_plan_segment(), ht_plan_span().
 * Input: 24 bytes of control (which entry to plan, offsets, the query's
 * flags, the huge page size), then maps text.
 */
#include <errno.h>

#include "fuzz.h"
#include "internal.h"
#include "maps.h"
#include "plan.h"
#include "region.h"

#define MAX_SEEN 256

static void check_map(const struct ht_map *m, const char *buf, size_t len)
{
	PROPERTY(m->start < m->end);
	PROPERTY(m->perms[4] == '\0');
	PROPERTY(strchr("r-", m->perms[0]) && strchr("w-", m->perms[1]) &&
		 strchr("x-", m->perms[2]) && strchr("ps", m->perms[3]));
	PROPERTY(m->path >= buf && m->path_len <= len && (size_t)(m->path - buf) <= len - m->path_len);
	PROPERTY(m->dev_major <= 0xfffff && m->dev_minor <= 0xfffff);
}

static void check_plan(const struct ht_seg_query *q, size_t huge, int rc, const struct ht_seg_plan *p)
{
	PROPERTY(rc == 0 || rc == -ERANGE || rc == -EALREADY || rc == -ENOENT || rc == -EINVAL);
	PROPERTY(memchr(p->path, '\0', sizeof(p->path)) != NULL);
	if (rc != 0)
		return;
	PROPERTY(p->span.start % huge == 0 && p->span.end % huge == 0);
	PROPERTY(p->span.start < p->span.end);
	/*
	 * Never below the segment, where the memory is someone else's data,
	 * except into the object's read-only bytes that cover-ends allows.
	 */
	if (q->ro_end > q->ro_start && p->span.start < q->start) {
		PROPERTY(p->span.start >= q->ro_start);
		PROPERTY(p->readonly >= q->start - p->span.start);
	} else {
		PROPERTY(p->span.start >= q->start);
	}
	PROPERTY(p->code > 0 && p->code <= p->span.end - p->span.start);
	PROPERTY(p->readonly <= p->span.end - p->span.start - p->code);
	PROPERTY(p->mapped > 0 && p->mapped <= p->span.end - p->span.start);
	PROPERTY(p->mapped % 4096 == 0);
	if (p->reserve_gap)
		PROPERTY(p->span.start + p->mapped < p->span.end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t pick = take(&data, &size, 2), off = take(&data, &size, 4);
	uint64_t len_pages = take(&data, &size, 4), next_pick = take(&data, &size, 2);
	uint64_t flags = take(&data, &size, 1), huge_shift = take(&data, &size, 1);
	uint64_t raw = take(&data, &size, 8), raw_limit = take(&data, &size, 2);
	char *buf = exact_copy(data, size);
	struct ht_map m, seen[MAX_SEEN];
	size_t pos = 0, prev = 0, n = 0;

	if (!buf)
		return 0;
	while (ht_maps_next(buf, size, &pos, &m)) {
		PROPERTY(pos > prev && pos <= size);
		check_map(&m, buf, size);
		if (n < MAX_SEEN)
			seen[n++] = m;
		prev = pos;
	}
	PROPERTY(pos <= size || size == 0);
	if (ht_maps_parse_line(buf, size, &m) == 0)
		check_map(&m, buf, size);

	/* Plan a segment the text describes, or made-up addresses. */
	struct ht_seg_query q = { 0 };
	struct ht_seg_plan p;
	size_t huge = (size_t)1 << (12 + huge_shift % 10); /* 4 KiB .. 2 MiB */

	if (flags & 1)
		huge = HT_HUGE_PAGE_SIZE;
	if (n) {
		const struct ht_map *e = &seen[pick % n];
		uintptr_t width = e->end - e->start;

		q.start = e->start + (uintptr_t)(off % width);
		q.end = q.start + (uintptr_t)((len_pages % 0x40000) * 4096 + (len_pages >> 20) % 4096);
		if (q.end <= q.start)
			q.end = e->end;
		if (next_pick & 1)
			q.next = seen[(next_pick >> 1) % n].start;
		/* The address that names the object: one of its unmoved segments. */
		if (flags & 4)
			q.id_addr = seen[(next_pick >> 4) % n].start + (flags >> 3);
	} else {
		q.start = (uintptr_t)raw;
		q.end = (uintptr_t)raw + (uintptr_t)len_pages * 4096;
	}
	q.any_object = (flags >> 1) & 1;
	/* Cover-ends: bounds around the segment, from the control bytes. */
	if ((flags & 0x80) && q.end > q.start) {
		uintptr_t below = ((uintptr_t)raw_limit * 4096) % (q.start / 4096 * 4096 + 1);

		q.ro_start = (q.start - below) / 4096 * 4096;
		q.ro_end = q.end + (uintptr_t)(raw_limit >> 4) * 4096;
		if (q.ro_end < q.end)
			q.ro_end = q.ro_start = 0;
	}
	check_plan(&q, huge, ht_plan_segment(buf, size, &q, huge, &p), &p);

	/* The span arithmetic alone, near the top of the address space too. */
	struct ht_span s;
	uintptr_t a = (uintptr_t)raw, b = a + (uintptr_t)len_pages, lim = b + (uintptr_t)raw_limit * 4096;
	if (ht_plan_span(a, b, lim, huge, &s) == 0) {
		PROPERTY(s.start >= a && s.start < s.end);
		PROPERTY(s.start % huge == 0 && s.end % huge == 0);
		PROPERTY(s.end <= b || s.end <= lim);
	}
	free(buf);
	return 0;
}
