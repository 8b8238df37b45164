/* SPDX-License-Identifier: MIT */
/* Coverage of a file's code by 2 MiB pages (see cover.h). */
#include "cover.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

int hte_seg_is_code(const struct hte_seg *s)
{
	return s->type == PT_LOAD && (s->flags & PF_X) && s->memsz > 0;
}

static int pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

uint64_t hte_load_alignment(unsigned type, const struct hte_seg *segs, size_t n)
{
	uint64_t a = HTE_PAGE;

	if (type == ET_EXEC)
		return HTE_HUGE;
	for (size_t i = 0; i < n; i++)
		if (segs[i].type == PT_LOAD && pow2(segs[i].align) && segs[i].align > a)
			a = segs[i].align;
	return a < HTE_HUGE ? a : HTE_HUGE;
}

/*
 * Where the segment's last huge page may end: the next segment's first
 * page stops it, as a mapping would at run time.  Mirrors gap_end() in
 * lib/region.c with "free" meaning "no segment of this file".
 */
static uint64_t limit_after(const struct hte_seg *segs, size_t n, size_t i, uint64_t base)
{
	uint64_t end = base + segs[i].vaddr + segs[i].memsz;
	uint64_t cap = ht_round_up(end, HTE_HUGE);

	for (size_t k = 0; k < n; k++) {
		uint64_t start;

		if (k == i || segs[k].type != PT_LOAD || segs[k].memsz == 0 || segs[k].vaddr < segs[i].vaddr)
			continue;
		start = ht_round_down(base + segs[k].vaddr, HTE_PAGE);
		if (start < cap)
			cap = start;
	}
	return cap > end ? cap : end;
}

/* Coverage with the file loaded at @base; *@span in file addresses. */
static uint64_t covered_at(const struct hte_seg *segs, size_t n, size_t i, uint64_t base,
			   struct ht_span *span)
{
	uint64_t start = base + segs[i].vaddr, end = start + segs[i].memsz;

	if (ht_plan_span(start, end, limit_after(segs, n, i, base), HTE_HUGE, span) < 0) {
		span->start = span->end = 0;
		return 0;
	}
	span->start -= base;
	span->end -= base;
	return (span->end < end - base ? span->end : end - base) - span->start;
}

/* A loadable segment that is never writable nor code: what cover-ends may take. */
static int read_only(const struct hte_seg *s)
{
	return s->type == PT_LOAD && s->memsz > 0 && s->filesz == s->memsz && !(s->flags & (PF_W | PF_X));
}

/*
 * How far the read-only segments that touch segment @i reach, page by
 * page, below (*@lo) and above (*@hi) it, at load address @base: what the
 * maps would show as r--p of the same file, with no hole.  Mirrors
 * ht_readonly_around() and readonly_run() in lib/region.c.
 */
static void read_only_reach(const struct hte_seg *segs, size_t n, size_t i, uint64_t base,
			    uint64_t *lo, uint64_t *hi)
{
	int moved = 1;

	*lo = ht_round_down(base + segs[i].vaddr, HTE_PAGE);
	*hi = ht_round_up(base + segs[i].vaddr + segs[i].memsz, HTE_PAGE);
	while (moved) {
		moved = 0;
		for (size_t k = 0; k < n; k++) {
			uint64_t s = ht_round_down(base + segs[k].vaddr, HTE_PAGE);
			uint64_t e = ht_round_up(base + segs[k].vaddr + segs[k].memsz, HTE_PAGE);

			if (k == i || !read_only(&segs[k]))
				continue;
			if (e == *lo && s < *lo)
				*lo = s, moved = 1;
			if (s == *hi && e > *hi)
				*hi = e, moved = 1;
		}
	}
}

/* Coverage with cover-ends at @base: the library's rule on the program headers. */
static uint64_t covered_ends_at(const struct hte_seg *segs, size_t n, size_t i, uint64_t base)
{
	uint64_t start = base + segs[i].vaddr, end = start + segs[i].memsz, lo, hi;
	uint64_t limit = ht_paid_limit(end, limit_after(segs, n, i, base), HTE_HUGE);
	uint64_t tail = ht_round_up(end, HTE_HUGE);
	struct ht_span span;

	read_only_reach(segs, n, i, base, &lo, &hi);
	if (tail <= hi && ht_paid_limit(end, tail, HTE_HUGE) == tail)
		limit = tail > limit ? tail : limit;
	if (ht_plan_span_from(start, end, ht_paid_floor(start, end, lo, HTE_HUGE), limit, HTE_HUGE,
			      &span) < 0)
		return 0;
	return (span.end < end ? span.end : end) - (span.start > start ? span.start : start);
}

int hte_cover_segment(const struct hte_seg *segs, size_t n, size_t i, uint64_t align,
		      struct hte_cover *out)
{
	const struct hte_seg *s = &segs[i];
	struct ht_span span;

	memset(out, 0, sizeof(*out));
	/* Room for one more huge page above the segment keeps the sums exact. */
	if (s->memsz == 0 || s->vaddr > UINT64_MAX - s->memsz - 2 * HTE_HUGE)
		return -EINVAL;
	if (!pow2(align) || align < HTE_PAGE)
		align = HTE_PAGE;
	out->bytes = s->memsz;
	out->exact = align >= HTE_HUGE;
	out->covered = UINT64_MAX;
	/* 512 placements at most: cheap, and no case analysis to get wrong. */
	for (uint64_t base = 0; base < HTE_HUGE; base += out->exact ? HTE_HUGE : align) {
		uint64_t c = covered_at(segs, n, i, base, &span);

		if (c > out->best)
			out->best = c;
		if (c < out->covered) {
			out->covered = c;
			out->span_start = span.start;
			out->span_end = span.end;
		}
	}
	/* The loader puts the file's first segment at the base; 2 MiB apart from it is aligned. */
	out->ends_covered = UINT64_MAX;
	for (uint64_t base = 0; base < HTE_HUGE; base += out->exact ? HTE_HUGE : align) {
		uint64_t c = covered_ends_at(segs, n, i, base);

		if (c > out->ends_best)
			out->ends_best = c;
		if (c < out->ends_covered)
			out->ends_covered = c;
	}
	out->ends_aligned = covered_ends_at(segs, n, i, 0);
	return 0;
}

int hte_file_cover(const struct hte_elf *e, struct hte_file_cover *c)
{
	memset(c, 0, sizeof(*c));
	c->align = hte_load_alignment(e->type, e->load, e->nload);
	c->exact = c->align >= HTE_HUGE;
	c->segs = calloc(e->nload ? e->nload : 1, sizeof(*c->segs));
	c->cov = calloc(e->nload ? e->nload : 1, sizeof(*c->cov));
	if (!c->segs || !c->cov) {
		hte_file_cover_release(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < e->nload; i++) {
		struct hte_cover *v = &c->cov[c->n];

		if (!hte_seg_is_code(&e->load[i]) || hte_cover_segment(e->load, e->nload, i, c->align, v) < 0)
			continue;
		c->segs[c->n++] = &e->load[i];
		c->bytes += v->bytes;
		c->covered += v->covered;
		c->best += v->best;
		c->ends_covered += v->ends_covered;
		c->ends_best += v->ends_best;
		c->ends_aligned += v->ends_aligned;
	}
	return c->n ? 0 : -ENOENT;
}

void hte_file_cover_release(struct hte_file_cover *c)
{
	free(c->segs);
	free(c->cov);
	c->segs = NULL;
	c->cov = NULL;
	c->n = 0;
}
