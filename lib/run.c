/* SPDX-License-Identifier: MIT */
/*
 * The state of one run (run.h) that its parts share: the region records,
 * the first failure and the time budget.  api.c drives a run; select.c,
 * pagecache.c and the others only record into it, so they depend on this
 * file and never on api.c.
 */
#include "run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ht_region *ht_new_region(struct run *r, const char *object)
{
	struct ht_region *g;

	if (r->nregs == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		struct ht_region *p = realloc(r->regs, cap * sizeof(*p));

		if (!p)
			return NULL;
		r->regs = p;
		r->cap = cap;
	}
	g = &r->regs[r->nregs++];
	memset(g, 0, sizeof(*g));
	strncpy(g->object, object ? object : "", sizeof(g->object) - 1);
	g->mode = r->opt->mode;
	g->fill = "";
	g->cache = "";
	g->cache_error = "";
	return g;
}

void ht_set_outcome(struct run *r, struct ht_region *g, enum ht_status st,
		    enum ht_error e, int err)
{
	g->status = st;
	g->error = e;
	g->sys_errno = err < 0 ? -err : 0;
	if (st == HT_STATUS_FAILED && !r->first_err)
		r->first_err = err < 0 ? err : -EIO;
}

int ht_run_failed(struct run *r, enum ht_error e, int err, const char *object)
{
	struct ht_region *g = ht_new_region(r, object);

	if (g)
		ht_set_outcome(r, g, HT_STATUS_FAILED, e, err);
	else
		r->first_err = err;
	return err;
}

int ht_budget_spent(const struct run *r)
{
	return r->opt->budget_ms && ht_now_ms() - r->t0 >= (double)r->opt->budget_ms;
}
