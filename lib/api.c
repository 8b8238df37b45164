/* SPDX-License-Identifier: MIT */
/*
 * The native API: find the objects, plan their spans against
 * /proc/self/maps, move them, verify, report.  The parts live beside it:
 * lock.c, select.c, pagecache.c, share.c, verify.c (run.h); the run's
 * records and budget, which they all use, in run.c.
 */
#include "pagesize.h"
#include "hot.h"
#include "perfmap.h"
#include "policy.h"
#include "pool.h"
#include "run.h"
#include "sys.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

/*
 * Whether the read-back after a copy of @p can leave any of it on the page
 * cache's 2 MiB pages: only a 2 MiB range wholly inside the code's own
 * mapping can be (the kernel maps no huge page across a mapping's end). A
 * partial page at either end, with a gap or other mappings beside the
 * code, would be copied again at every start.
 */
static int repairable(const struct ht_seg_query *q, const struct ht_seg_plan *p)
{
	uintptr_t lo = ht_round_up(q->start, HT_HUGE_PAGE_SIZE), hi = ht_round_down(q->end, HT_HUGE_PAGE_SIZE);

	return p->span.start < hi && p->span.end > lo && p->span.start < p->span.end;
}

/*
 * Whether this span, which only a private copy can move, is copied now
 * (ht_options.copy).  A copy costs CPU time (getting and zeroing 2 MiB
 * pages, reading the code) that a short run never wins back.  auto copies
 * now only what repairs a warmed file (ht_policy_repair_now): the
 * read-back after the copy then makes every later start copy-free; not
 * when the text service took the file, which warms it off our path, nor
 * when what is left are partial end pages no read-back can repair.  Else
 * it hands the span to the preload's background thread,
 * which copies once the process has used enough CPU time for the copy to
 * pay; the region says "deferred".  Without that thread it says why not.
 */
static int copy_now(struct run *r, const struct ht_seg_query *q, const struct ht_seg_plan *p,
		    struct ht_region *g, int use_cache)
{
	const struct ht_options *opt = r->opt;
	size_t bytes = p->span.end - p->span.start;

	if (opt->copy == HT_COPY_NOW || (opt->copy == HT_COPY_AUTO && ht_in_background))
		return 1;
	/*
	 * Offered to the text service: it warms the file again once this
	 * process is done with it, so the repair's private copy is not made.
	 */
	if (opt->copy == HT_COPY_AUTO && use_cache && !(g->cache && !strcmp(g->cache, "offered")) &&
	    ht_policy_repair_now(g->kept_bytes, bytes) && repairable(q, p))
		return 1;
	/*
	 * THP off for this process (inherited over exec): only explicit pages
	 * could take the copy; without room in the pool, no thread waits for a
	 * copy that would be refused.
	 */
	if (opt->copy == HT_COPY_AUTO && opt->mode != HT_MODE_EXPLICIT && ht_sys_thp_disabled() == 1 &&
	    (opt->mode == HT_MODE_THP || opt->mode == HT_MODE_FOLIOS ||
	     ht_pool_available_2m() < (long)(bytes / HT_HUGE_PAGE_SIZE))) {
		g->mode = opt->mode == HT_MODE_FOLIOS ? HT_MODE_FOLIOS : HT_MODE_THP;
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_THP_PROCESS, 0);
		return 0;
	}
	if (opt->copy == HT_COPY_AUTO && ht_defer_copy && ht_defer_copy(opt, q, bytes) == 0)
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_DEFERRED, 0);
	else
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_NO_COPY, 0);
	return 0;
}

/*
 * The name the loader opened @o by, as this process reaches it: where the
 * path /proc/self/maps gives cannot be opened here or is another file
 * (a container's maps read from the host give its merged directory), the
 * file is opened by this one.
 */
static const char *loader_name(const struct ht_object *o)
{
	if (!o)
		return NULL;
	return o->is_main ? "/proc/self/exe" : o->name;
}

/*
 * The shared cache takes the whole span, never the rest the page cache
 * left: an entry is keyed by its span, and what the kernel keeps changes
 * from one start to the next, which made a new entry, a miss, at every
 * start until the cache was full.  A hit or miss replaces the kept pages
 * with the entry's.
 */
static int try_cache_whole(const struct ht_options *opt, const struct ht_object *o,
			   const struct ht_seg_plan *whole, const struct ht_source *like,
			   struct ht_region *g)
{
	struct ht_source src = *like;
	int err;

	src.fd = ht_open_clean_source(whole, loader_name(o));
	src.file_off = whole->file_off;
	src.mapped = whole->mapped;
	src.reserve_gap = whole->reserve_gap;
	err = ht_try_cache(opt, o, whole, &src, g);
	if (src.fd >= 0)
		ht_sys_close(src.fd);
	if (err == 0)
		g->kept_bytes = 0;
	return err;
}

/* The span maps a shared cache entry (a hit or a miss): nothing private, nothing to read back. */
static int from_cache(const struct ht_region *g)
{
	return g->cache && (!strcmp(g->cache, "hit") || !strcmp(g->cache, "miss"));
}

/*
 * The code a private copy of @p holds, up to @end (where a budget cut it):
 * the object's read-only data that the cover-ends setting takes is not
 * code, and it lies in the span's end pages, which are always copied.
 */
static size_t private_code(const struct ht_seg_plan *p, uintptr_t end)
{
	size_t n = p->mapped < end - p->span.start ? p->mapped : end - p->span.start;

	return n > p->readonly ? n - p->readonly : 0;
}

/* A copy of what runs: the parts of @from it left on 4 KiB pages wait for a later pass. */
static void keep_rest(struct run *r, const struct ht_seg_query *q, const struct ht_seg_plan *from,
		      const struct ht_seg_plan *part)
{
	struct ht_seg_query out[2];
	size_t n;

	if (!r->rest)
		return;
	n = ht_hot_rest(q, from->span, part->span, out);
	for (size_t i = 0; i < n && r->rest->n < r->rest->max; i++)
		r->rest->q[r->rest->n++] = out[i];
}

/* Moves one planned span; the region is filled whatever happens. */
static void move_planned(struct run *r, const struct ht_object *o, const struct ht_seg_query *q,
			 const struct ht_seg_plan *whole, struct ht_region *g)
{
	struct ht_options opt = *r->opt;
	struct ht_source src = { .fd = -1 };
	struct ht_recheck rc = { q, whole };
	struct ht_seg_plan rest = *whole, hot;
	const struct ht_seg_plan *p = whole, *from;
	int use_cache = ht_page_cache_usable(&opt, whole);
	int err;

	if (ht_in_background) {
		src.unchanged = ht_code_unchanged;
		src.ctx = &rc;
	}
	g->start = whole->span.start;
	g->end = whole->span.end;
	g->bytes = whole->span.end - whole->span.start;
	if (ht_budget_spent(r)) {
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_BUDGET, 0);
		return;
	}
	/* Only 2 MiB pages are moved: none on a kernel whose PMD maps more (pagesize.h). */
	err = ht_pages_usable(opt.mode);
	if (err != HT_E_NONE) {
		g->mode = opt.mode;
		ht_set_outcome(r, g, err == HT_E_KERNEL_PAGES ? HT_STATUS_SKIPPED : HT_STATUS_FAILED, err,
			       err == HT_E_KERNEL_PAGES ? 0 : -ENOENT);
		return;
	}
	if (use_cache) {
		g->kept_bytes = ht_keep_kernel_pages(whole, &rest);
		/*
		 * Nothing kept: the rest is the whole span, and the cache is
		 * tried with the one descriptor opened below (the check that
		 * the file is clean reads the span's pagemap, 0.3 MB for
		 * clang's libLLVM: once is enough).
		 */
		p = g->kept_bytes ? &rest : whole;
		if (rest.span.start == rest.span.end) {
			g->huge_bytes = g->kept_bytes;
			ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_ALREADY, 0);
			return;
		}
	}
	src.reserve_gap = p->reserve_gap;
	src.mapped = p->mapped;
	if (opt.fill != 2 || opt.share || use_cache) {
		src.fd = ht_open_clean_source(p, loader_name(o));
		src.file_off = p->file_off;
	}
	/* Left: a last page the code ends inside, which the page cache may yet serve. */
	if (use_cache && ht_keep_tail_page(p, src.fd)) {
		ht_sys_close(src.fd);
		g->kept_bytes += HT_HUGE_PAGE_SIZE;
		g->huge_bytes = g->kept_bytes;
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_ALREADY, 0);
		return;
	}
	if (opt.budget_ms)
		src.deadline_ms = r->t0 + opt.budget_ms;
	/* A deferred copy (no object) tried the cache already, at start-up. */
	if (!opt.share || !(o || opt.share == HT_SHARE_ON))
		err = -EAGAIN;
	else if (p != whole && o)
		err = try_cache_whole(&opt, o, whole, &src, g);
	else
		err = ht_try_cache(&opt, o, p, &src, g);
	if (err == 0 && p != whole) {
		/* The entry now holds all of the span: nothing is left to copy or read back. */
		if (src.fd >= 0)
			ht_sys_close(src.fd);
		g->start = whole->span.start;
		g->end = whole->span.end;
		g->bytes = whole->span.end - whole->span.start;
		return;
	}
	if (err < 0 && !copy_now(r, q, p, g, use_cache)) {
		if (src.fd >= 0)
			ht_sys_close(src.fd);
		g->huge_bytes = g->kept_bytes;
		g->start = whole->span.start;
		g->end = whole->span.end;
		g->bytes = whole->span.end - whole->span.start;
		return;
	}
	if (err < 0) {
		struct ht_source fill = src;

		/*
		 * A deferred copy of what runs: the hot part of the span (hot.h).
		 * Not the background move of HUGETEXT_ASYNC, made as main()
		 * starts, when nothing has run yet.
		 */
		from = p;
		if (opt.copy_hot && r->deferred) {
			p = ht_hot_part(p, &hot, g);
			fill.file_off = p->file_off;
			fill.mapped = p->mapped;
			fill.reserve_gap = p->reserve_gap;
		}
		if (p->span.start == p->span.end) {
			if (src.fd >= 0)
				ht_sys_close(src.fd);
			g->start = whole->span.start;
			g->end = whole->span.end;
			g->bytes = whole->span.end - whole->span.start;
			ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_COLD, 0);
			keep_rest(r, q, from, p);
			return;
		}
		/* memcpy asked for: the descriptor stays only for the warming. */
		if (opt.fill == 2)
			fill.fd = -1;
		err = ht_move_span(&opt, p->span, &fill, g);
		if (err == 0 && p == &hot)
			keep_rest(r, q, from, p);
	}
	/* A cache entry is the copy every later start maps: nothing to read back for. */
	if (err == 0 && use_cache && !from_cache(g))
		ht_warm_copied(r, p, src.fd, g);
	if (src.fd >= 0)
		ht_sys_close(src.fd);
	/* The code the private copy holds: up to where a budget cut it. */
	if (err == 0 && !from_cache(g))
		g->private_code_bytes = private_code(p, g->end);
	/* The region is the whole span; the verification counts what is huge in it. */
	g->start = whole->span.start;
	g->end = whole->span.end;
	g->bytes = whole->span.end - whole->span.start;
	/* A span no page can take here (THP off for the process) is skipped, not failed. */
	if (err < 0 && g->error == HT_E_THP_PROCESS)
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, g->error, 0);
	else if (err < 0)
		ht_set_outcome(r, g, HT_STATUS_FAILED, g->error, err);
}

/* Plans one segment against the maps and moves it; @o is NULL for a deferred one. */
static void do_query(struct run *r, const struct ht_object *o, const struct ht_seg_query *q)
{
	struct ht_seg_plan p;
	struct ht_region *g;
	double t = ht_now_ms();
	int err;

	err = ht_plan_segment(r->maps, r->maps_len, q, HT_HUGE_PAGE_SIZE, &p);
	g = ht_new_region(r, o && o->name[0] ? o->name : p.path);
	if (!g)
		return;
	g->start = ht_round_down(q->start, HT_PAGE);
	g->end = ht_round_up(q->end, HT_PAGE);
	if (err == -ERANGE)
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_TOO_SMALL, 0);
	else if (err == -EALREADY)
		ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_ALREADY, 0);
	else if (err < 0)
		ht_set_outcome(r, g, HT_STATUS_FAILED, HT_E_NOT_MAPPED, -ENOENT);
	else
		move_planned(r, o, q, &p, g);
	g->ms = ht_now_ms() - t;
}

static void do_segment(struct run *r, const struct ht_object *o, int i)
{
	struct ht_seg_query q = { .start = o->segs[i].start, .end = o->segs[i].end };

	if (i + 1 < o->nseg)
		q.next = o->segs[i + 1].start;
	q.id_addr = ht_object_id_addr(o);
	if (r->opt->cover_ends)
		ht_readonly_around(o->segs, o->nseg, i, &q.ro_start, &q.ro_end);
	do_query(r, o, &q);
}

static void do_object(struct run *r, const struct ht_object *o)
{
	char path[512];
	int how;

	if (ht_known(r, o))
		return;
	ht_object_path(r, o, path, sizeof(path));
	/* The vDSO and other memory without a file have no code to move. */
	how = path[0] == '/' ? ht_selected(r, o, path) : HT_TAKE_NONE;
	if (how == HT_TAKE_NONE)
		return;
	if (r->has_ignore && ht_matches(&r->ignore, path)) {
		struct ht_region *g = ht_new_region(r, path);

		if (g)
			ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_IGNORED, 0);
		return;
	}
	/* A broad match takes small libraries too: none of them can pay. */
	if (how == HT_TAKE_WHOLE && ht_object_code_bytes(o) < r->opt->min_code) {
		struct ht_region *g = ht_new_region(r, path);

		if (g)
			ht_set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_BELOW_MIN, 0);
		return;
	}
	for (int i = 0; i < o->nseg; i++)
		if ((o->segs[i].flags & PF_X) &&
		    (how == HT_TAKE_WHOLE || (o->segs[i].flags & HT_PF_LINUX_HUGETLB)))
			do_segment(r, o, i);
}

static void walk_objects(struct run *r)
{
	struct ht_object *objs;
	size_t n;
	int err = ht_objects_list(&objs, &n);

	if (err < 0) {
		ht_run_failed(r, HT_E_ALLOC, err, "");
		return;
	}
	if (ht_preload_startup && !r->known)
		ht_objects_pin(objs, n, ht_sys_interp_base());
	for (size_t i = 0; i < n; i++)
		do_object(r, &objs[i]);
	free(objs);
}

/* perf attached later finds moved functions through /tmp/perf-PID.map. */
static void write_perf_maps(const struct run *r)
{
	for (size_t i = 0; i < r->nregs; i++) {
		const struct ht_region *g = &r->regs[i];
		struct link_map *lm = NULL;
		Dl_info info;
		int n;

		if (g->status != HT_STATUS_OK ||
		    !dladdr1((void *)g->start, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
			continue;
		n = ht_perf_map_write(g->object, lm->l_addr, g->start, g->end);
		if (n < 0)
			ht_report_note(r->opt, n == -ENOSYS ? "perf map: libelf.so.1 is not available"
							    : "perf map: cannot write /tmp/perf-PID.map");
	}
}

static void finish(struct run *r, struct ht_region *out, size_t max, size_t *count)
{
	if (r->opt->perf_map)
		write_perf_maps(r);
	for (size_t i = 0; i < r->nregs; i++) {
		ht_report_emit(r->opt, &r->regs[i]);
		if (out && i < max)
			out[i] = r->regs[i];
	}
	if (count)
		*count = r->nregs;
	if (r->has_match)
		ht_regfree(&r->match);
	if (r->has_ignore)
		ht_regfree(&r->ignore);
	if (r->has_dso)
		ht_regfree(&r->dso);
	free(r->regs);
	free(r->maps);
}

int ht_remap_locked(const struct ht_options *opt, const char *dso_bre,
		    struct ht_region *regions, size_t max, size_t *count)
{
	return ht_remap_new(opt, dso_bre, NULL, 0, regions, max, count);
}

int ht_remap_new(const struct ht_options *opt, const char *dso_bre,
		 const struct ht_object *known, size_t nknown,
		 struct ht_region *regions, size_t max, size_t *count)
{
	struct run r = { .opt = opt, .known = known, .nknown = nknown };
	int err;

	/* The preload's start-up run: its budget counts from the constructor's start. */
	r.t0 = ht_budget_origin_ms > 0 ? ht_budget_origin_ms : ht_now_ms();

	if (count)
		*count = 0;
	if (opt->mode == HT_MODE_OFF)
		return 0;
	if (ht_compile_all(&r, dso_bre) == 0) {
		err = ht_sys_read_file("/proc/self/maps", &r.maps, &r.maps_len);
		if (err < 0)
			ht_run_failed(&r, HT_E_PROC, err, "");
		else
			walk_objects(&r);
		ht_verify(&r);
	}
	err = r.first_err;
	if (dso_bre && !r.dso_found && !err)
		err = -ENOENT;
	finish(&r, regions, max, count);
	return err;
}

int ht_remap_deferred(const struct ht_options *opt, const struct ht_seg_query *qs, size_t n,
		      struct ht_region *regions, size_t max, size_t *count, struct ht_rest *rest)
{
	struct run r = { .opt = opt, .t0 = ht_now_ms(), .deferred = 1, .rest = rest };
	int err;

	ht_lock_acquire();
	err = ht_sys_read_file("/proc/self/maps", &r.maps, &r.maps_len);
	if (err < 0) {
		ht_run_failed(&r, HT_E_PROC, err, "");
	} else {
		for (size_t i = 0; i < n; i++)
			do_query(&r, NULL, &qs[i]);
		ht_verify(&r);
	}
	err = r.first_err;
	finish(&r, regions, max, count);
	ht_lock_release();
	return err;
}

int ht_remap(const struct ht_options *opt, struct ht_region *regions,
	     size_t max, size_t *count)
{
	struct ht_options def;
	int err;

	if (!opt) {
		ht_options_init(&def);
		opt = &def;
	}
	if ((unsigned)opt->mode > HT_MODE_FOLIOS || (max && !regions))
		return -EINVAL;
	ht_lock_acquire();
	err = ht_remap_locked(opt, NULL, regions, max, count);
	ht_lock_release();
	return err;
}

static int range_locked(const struct ht_options *opt, const void *from, const void *to,
			struct ht_region *out)
{
	struct run r = { .opt = opt, .t0 = ht_now_ms() };
	struct ht_seg_query q = { (uintptr_t)from, (uintptr_t)to, 0, 1 };
	struct ht_seg_plan p;
	struct ht_region *g;
	int err = ht_sys_read_file("/proc/self/maps", &r.maps, &r.maps_len);

	if (err < 0) {
		ht_run_failed(&r, HT_E_PROC, err, "");
	} else {
		err = ht_plan_segment(r.maps, r.maps_len, &q, HT_HUGE_PAGE_SIZE, &p);
		g = ht_new_region(&r, p.path);
		if (g && err == -ERANGE)
			ht_set_outcome(&r, g, HT_STATUS_SKIPPED, HT_E_TOO_SMALL, 0);
		else if (g && err < 0)
			ht_set_outcome(&r, g, HT_STATUS_FAILED, HT_E_BAD_RANGE, -EFAULT);
		else if (g)
			move_planned(&r, NULL, &q, &p, g);
		if (g)
			g->ms = ht_now_ms() - r.t0;
		ht_verify(&r);
	}
	err = r.first_err;
	if (out && r.nregs)
		*out = r.regs[0];
	finish(&r, NULL, 0, NULL);
	return err;
}

int ht_remap_range(const struct ht_options *opt, const void *from,
		   const void *to, struct ht_region *region)
{
	struct ht_options def;
	int err;

	if (!opt) {
		ht_options_init(&def);
		opt = &def;
	}
	if ((unsigned)opt->mode > HT_MODE_FOLIOS || (uintptr_t)to <= (uintptr_t)from)
		return -EINVAL;
	if (opt->mode == HT_MODE_OFF)
		return 0;
	ht_lock_acquire();
	err = range_locked(opt, from, to, region);
	ht_lock_release();
	return err;
}

