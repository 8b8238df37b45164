/* SPDX-License-Identifier: MIT */
/*
 * One run of the native API (api.c drives it), shared by the files that do
 * its parts: its records (run.c), selecting objects (select.c), the page
 * cache (pagecache.c), the shared cache (share.c), the checks and the
 * verification (verify.c).
 * Nothing here is exported.
 */
#ifndef HT_RUN_H
#define HT_RUN_H

#include <regex.h>

#include "internal.h"
#include "objects.h"
#include "region.h"

struct run {
	const struct ht_options *opt;
	char *maps;
	size_t maps_len;
	regex_t match, ignore, dso;
	int has_match, has_ignore, has_dso, dso_found;
	double t0;
	struct ht_region *regs;
	size_t nregs, cap;
	int first_err;
	const struct ht_object *known; /* objects to leave out: seen before */
	size_t nknown;
	int deferred;                  /* a deferred copy's run (ht_remap_deferred) */
	struct ht_rest *rest;          /* a deferred run's: what its copies of what runs left */
};

/* --- run.c: the run's records, used by every part; it calls none of them --- */
/* A new, zeroed region record for @object; NULL when out of memory. */
struct ht_region *ht_new_region(struct run *r, const char *object);
/* Sets @g's outcome; the run keeps the first failure's errno. */
void ht_set_outcome(struct run *r, struct ht_region *g, enum ht_status st,
		    enum ht_error e, int err);
/* One record for a failure that stops the whole run before any region; returns @err. */
int ht_run_failed(struct run *r, enum ht_error e, int err, const char *object);
/* Nonzero once the run's time budget (ht_options.budget_ms) is spent. */
int ht_budget_spent(const struct run *r);

/* --- select.c --- */
uintptr_t ht_object_id_addr(const struct ht_object *o);
int ht_matches(const regex_t *re, const char *s);
void ht_object_path(const struct run *r, const struct ht_object *o, char *buf, size_t len);
/* An enum ht_take (policy.h): what of @o this run moves. */
int ht_selected(struct run *r, const struct ht_object *o, const char *path);
int ht_known(const struct run *r, const struct ht_object *o);
int ht_compile_all(struct run *r, const char *dso_bre);

/* --- verify.c --- */
/* What a background move checks again before its swap. */
struct ht_recheck {
	const struct ht_seg_query *q;
	const struct ht_seg_plan *p;
};
/*
 * Opens the object's file if it provably is the file mapped at the span
 * and holds the bytes that are mapped (no page of the span written): by
 * the maps' path, else by @name (the loader's name of the object, or
 * NULL) where that path leads nowhere or elsewhere.  On overlayfs, whose
 * numbers fstat() and the maps give differently, by a page mapped.
 * Returns: the descriptor, or -1.
 */
int ht_open_clean_source(const struct ht_seg_plan *p, const char *name);
int ht_code_unchanged(const struct ht_source *src, struct ht_span span, const char *copy,
		      const struct ht_check_mem *m);
void ht_verify(struct run *r);

/* --- pagecache.c --- */
int ht_page_cache_usable(const struct ht_options *opt, const struct ht_seg_plan *p);
size_t ht_keep_kernel_pages(const struct ht_seg_plan *p, struct ht_seg_plan *rest);
/*
 * A last 2 MiB page that the code's mapping ends inside, with free space
 * after it (ht_seg_plan.reserve_gap): maps the file over all of it, so the
 * kernel can map it from a 2 MiB page-cache page, and keeps that when it
 * does.  Else the program's mappings are as they were (the code's part is
 * mapped again from the same file, in one step).  Returns 1 when kept.
 */
int ht_keep_tail_page(const struct ht_seg_plan *p, int fd);
void ht_warm_copied(const struct run *r, const struct ht_seg_plan *done, int fd,
		    struct ht_region *g);

/* --- share.c --- */
int ht_try_cache(const struct ht_options *opt, const struct ht_object *o,
		 const struct ht_seg_plan *p, const struct ht_source *src, struct ht_region *g);

#endif
