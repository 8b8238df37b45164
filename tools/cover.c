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
