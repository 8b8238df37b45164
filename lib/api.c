/* SPDX-License-Identifier: MIT */
/*
 * The native API: find the objects, plan their spans against
 * /proc/self/maps, move them, verify, report.
 */
#include "cache.h"
#include "internal.h"
#include "objects.h"
#include "perfmap.h"
#include "region.h"
#include "sys.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

/* One remap at a time: the maps we read must stay true while we act on them. */
pthread_mutex_t ht_lock = PTHREAD_MUTEX_INITIALIZER;
int ht_forked_child;
__thread int ht_in_background;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/*
 * fork() copies a mutex held by another thread as held forever.  The lock
 * guards no state that outlives a remap, so the child simply gets a fresh
 * one.  (Taking the lock in a prepare handler instead deadlocks under
 * runtimes whose own fork wrapper holds locks that pthread_create needs,
 * as AddressSanitizer's does.)  Registered at the first call, so that
 * linking the library changes nothing.
 */
static void fresh_lock_in_child(void)
{
	char *copy = __atomic_load_n(&ht_in_flight.addr, __ATOMIC_SEQ_CST);
	size_t len = __atomic_load_n(&ht_in_flight.len, __ATOMIC_SEQ_CST);

	pthread_mutex_init(&ht_lock, NULL);
	ht_forked_child = 1;
	/* A copy the parent was building is of no use here: give its pages back. */
	if (copy && len) {
		ht_in_flight.len = 0;
		ht_sys_unmap(copy, len);
	}
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, fresh_lock_in_child);
}

__thread int ht_lock_held;

void ht_lock_acquire(void)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&ht_lock);
	ht_lock_held = 1;
}

void ht_lock_release(void)
{
	ht_lock_held = 0;
	pthread_mutex_unlock(&ht_lock);
}

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
};

static struct ht_region *new_region(struct run *r, const char *object)
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

static void set_outcome(struct run *r, struct ht_region *g, enum ht_status st,
			enum ht_error e, int err)
{
	g->status = st;
	g->error = e;
	g->sys_errno = err < 0 ? -err : 0;
	if (st == HT_STATUS_FAILED && !r->first_err)
		r->first_err = err < 0 ? err : -EIO;
}

/* The pagemap entries of the @n pages from @start, malloc'ed; NULL if unreadable. */
static uint64_t *read_pagemap(uintptr_t start, size_t n)
{
	size_t bytes = n * sizeof(uint64_t);
	uint64_t *pm = n ? malloc(bytes) : NULL;
	int fd = pm ? ht_sys_open("/proc/self/pagemap", O_RDONLY, 0) : -1;
	ssize_t got = fd >= 0 ? ht_sys_pread_full(fd, pm, bytes, (off_t)(start / HT_PAGE * sizeof(*pm))) : -1;

	if (fd >= 0)
		ht_sys_close(fd);
	if (got != (ssize_t)bytes) {
		free(pm);
		return NULL;
	}
	return pm;
}

/* Opens the object's file if it provably holds the bytes that are mapped. */
static int open_clean_source(const struct ht_seg_plan *p)
{
	struct stat st;
	uint64_t *pm;
	size_t n = p->mapped / HT_PAGE;
	int fd, clean = 0;

	if (!p->file_backed || p->path[0] != '/')
		return -1;
	fd = ht_sys_open(p->path, O_RDONLY, 0);
	if (fd < 0)
		return -1;
	if (ht_sys_fstat(fd, &st) < 0 || st.st_ino != p->inode ||
	    major(st.st_dev) != p->dev_major || minor(st.st_dev) != p->dev_minor)
		goto out;
	/* A page the program wrote (a breakpoint, a relocation) is only in memory. */
	pm = read_pagemap(p->span.start, n);
	clean = pm && ht_pagemap_clean(pm, n);
	free(pm);
out:
	if (clean)
		return fd;
	ht_sys_close(fd);
	return -1;
}

/* What a background move checks again before its swap. */
struct recheck {
	const struct ht_seg_query *q;
	const struct ht_seg_plan *p;
};

static int same_plan(const struct ht_seg_plan *a, const struct ht_seg_plan *b)
{
	return a->span.start == b->span.start && a->span.end == b->span.end &&
	       a->mapped == b->mapped && a->file_backed == b->file_backed &&
	       a->file_off == b->file_off && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor;
}

/* Every page the program wrote (pagemap) must hold what the copy holds. */
static int written_pages_match(struct ht_span span, size_t mapped, const char *copy)
{
	size_t n = mapped / HT_PAGE;
	uint64_t *pm = read_pagemap(span.start, n);
	int same = pm != NULL;

	for (size_t i = 0; same && i < n; i++)
		if (ht_pagemap_written(pm[i]))
			same = memcmp(copy + i * HT_PAGE, (const char *)span.start + i * HT_PAGE, HT_PAGE) == 0;
	free(pm);
	return same;
}

/*
 * The program ran while the copy was made: it may have made its code
 * writable (mprotect), or written to it (a debugger's breakpoint, a hot
 * patch).  The maps must plan the same span as before, and each page
 * written since must equal the copy.  What remains is the moment between
 * this check and the swap.
 */
static int code_unchanged(const struct ht_source *src, struct ht_span span, const char *copy)
{
	const struct recheck *rc = src->ctx;
	struct ht_seg_plan now;
	size_t len, mapped;
	char *maps;
	int err;

	if (ht_sys_read_file("/proc/self/maps", &maps, &len) < 0)
		return 0;
	err = ht_plan_segment(maps, len, rc->q, HT_HUGE_PAGE_SIZE, &now);
	free(maps);
	if (err < 0 || !same_plan(&now, rc->p))
		return 0;
	mapped = src->mapped < span.end - span.start ? src->mapped : span.end - span.start;
	return written_pages_match(span, mapped, copy);
}

static int budget_spent(const struct run *r)
{
	return r->opt->budget_ms && ht_now_ms() - r->t0 >= (double)r->opt->budget_ms;
}

/*
 * Sharing needs the same bytes at the same 2 MiB phase in every process:
 * the object must load at a 2 MiB-aligned address, and the copy must come
 * from the file, not from pages this process wrote.
 */
static const char *share_refusal(const struct ht_object *o, const struct ht_source *src)
{
	if (!o)
		return "ranges are not shared";
	if (o->base % HT_HUGE_PAGE_SIZE)
		return "load address not 2 MiB-aligned, so no two processes would share";
	if (src->fd < 0)
		return "code differs from its file or the file cannot be opened";
	return NULL;
}

static int try_cache(const struct ht_options *opt, const struct ht_object *o,
		     const struct ht_seg_plan *p, const struct ht_source *src, struct ht_region *g)
{
	struct ht_cache_key key = { .file_off = p->file_off, .mapped = src->mapped,
				    .len = p->span.end - p->span.start };
	const char *why = share_refusal(o, src);
	struct stat st;

	if (why) {
		g->cache = "refused";
		g->cache_error = why;
		return -EPERM;
	}
	if (o->build_id_len) {
		key.build_id = o->build_id;
		key.build_id_len = o->build_id_len;
	} else if (ht_sys_fstat(src->fd, &st) == 0) {
		key.dev = st.st_dev;
		key.ino = st.st_ino;
		key.size = (uint64_t)st.st_size;
		key.mtime_sec = st.st_mtim.tv_sec;
		key.mtime_nsec = st.st_mtim.tv_nsec;
	}
	if (ht_cache_move(opt, &key, p->span, src, g) < 0)
		return -EAGAIN;
	g->status = HT_STATUS_OK;
	g->error = HT_E_NONE;
	g->sys_errno = 0;
	return 0;
}

/*
 * Where the file offset and the address agree modulo 2 MiB, this kernel
 * maps code from 2 MiB page-cache pages (large folios) with PMDs by itself
 * (FilePmdMapped): after `hugetext warm`, after our own warming below, or
 * for a file written just now.  Such pages are shared by every process and
 * cost nothing to keep; a copy would cost memory and gain nothing.
 */
static int page_cache_usable(const struct ht_options *opt, const struct ht_seg_plan *p)
{
	return opt->page_cache && opt->mode != HT_MODE_EXPLICIT && p->file_backed &&
	       (p->span.start - p->file_off) % HT_HUGE_PAGE_SIZE == 0;
}

/*
 * Reads one byte of each whole 2 MiB page of code, so the kernel maps now
 * whatever it can map huge, and asks which it did.  Returns the plan of
 * what is left to copy in @rest, and the bytes kept; @rest is empty when
 * nothing is (or when the kernel cannot say: a copy of all, as before).
 */
static size_t keep_kernel_pages(const struct ht_seg_plan *p, struct ht_seg_plan *rest)
{
	unsigned char huge[512];
	size_t len = p->span.end - p->span.start;
	size_t n = p->mapped / HT_HUGE_PAGE_SIZE, from = 0, to = len, kept = 0;

	*rest = *p;
	if (n > sizeof(huge))
		n = sizeof(huge);
	/* A program already running may have made its code unreadable: no touch then. */
	for (size_t i = 0; i < n && !ht_in_background; i++)
		(void)*(volatile const char *)(p->span.start + i * HT_HUGE_PAGE_SIZE);
	if (n && ht_sys_scan_huge_chunks(p->span.start, n, huge) == 0)
		ht_copy_range(huge, n, len, HT_HUGE_PAGE_SIZE, &from, &to);
	for (size_t i = 0; i < n; i++)
		kept += (i * HT_HUGE_PAGE_SIZE < from || i * HT_HUGE_PAGE_SIZE >= to) && huge[i] ?
			HT_HUGE_PAGE_SIZE : 0;
	rest->span.start = p->span.start + from;
	rest->span.end = p->span.start + to;
	rest->file_off = p->file_off + from;
	rest->mapped = from < to ? (p->mapped < to ? p->mapped : to) - from : 0;
	rest->reserve_gap = p->reserve_gap && to == len;
	return from < to ? kept : len;
}

/* File systems whose page cache holds 2 MiB pages on this kernel's read path. */
static int keeps_huge_pages(int fd)
{
	struct statfs st;

	return ht_sys_fstatfs(fd, &st) == 0 &&
	       (st.f_type == 0xEF53 /* ext4 */ || st.f_type == 0x58465342 /* XFS */);
}

/*
 * After the swap no page of the copied code's file range is mapped here:
 * drop those cached pages (the kernel keeps any other process maps) and
 * read them again as 2 MiB pages.  The next start of the program then
 * finds them and keeps them, with no copy, and so does a start without
 * us.  Costs one read of the code from the disk, once.
 */
static void warm_copied(const struct run *r, const struct ht_seg_plan *done, int fd,
			struct ht_region *g)
{
	size_t whole = ht_round_down(done->mapped, HT_HUGE_PAGE_SIZE);
	int64_t huge;

	if (!whole || fd < 0 || budget_spent(r) || !keeps_huge_pages(fd) ||
	    ht_sys_drop_cached(fd, done->file_off, whole) < 0)
		return;
	huge = ht_sys_read_huge(fd, done->file_off, whole);
	g->warmed_bytes = huge > 0 ? (size_t)huge : 0;
}

/* Moves one planned span; the region is filled whatever happens. */
static void move_planned(struct run *r, const struct ht_object *o, const struct ht_seg_query *q,
			 const struct ht_seg_plan *whole, struct ht_region *g)
{
	struct ht_options opt = *r->opt;
	struct ht_source src = { .fd = -1 };
	struct recheck rc = { q, whole };
	struct ht_seg_plan rest = *whole;
	const struct ht_seg_plan *p = whole;
	int use_cache = page_cache_usable(&opt, whole);
	int err;

	if (ht_in_background) {
		src.unchanged = code_unchanged;
		src.ctx = &rc;
	}
	g->start = whole->span.start;
	g->end = whole->span.end;
	g->bytes = whole->span.end - whole->span.start;
	if (budget_spent(r)) {
		set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_BUDGET, 0);
		return;
	}
	if (use_cache) {
		g->kept_bytes = keep_kernel_pages(whole, &rest);
		p = &rest;
		if (rest.span.start == rest.span.end) {
			g->huge_bytes = g->kept_bytes;
			set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_ALREADY, 0);
			return;
		}
	}
	src.reserve_gap = p->reserve_gap;
	src.mapped = p->mapped;
	if (opt.fill != 2 || opt.share || use_cache) {
		src.fd = open_clean_source(p);
		src.file_off = p->file_off;
	}
	if (opt.budget_ms)
		src.deadline_ms = r->t0 + opt.budget_ms;
	err = opt.share ? try_cache(&opt, o, p, &src, g) : -EAGAIN;
	if (err < 0) {
		struct ht_source fill = src;

		/* memcpy asked for: the descriptor stays only for the warming. */
		if (opt.fill == 2)
			fill.fd = -1;
		err = ht_move_span(&opt, p->span, &fill, g);
	}
	if (err == 0 && use_cache)
		warm_copied(r, p, src.fd, g);
	if (src.fd >= 0)
		ht_sys_close(src.fd);
	/* The code the private copy holds: up to where a budget cut it. */
	if (err == 0 && !(g->cache && *g->cache && strcmp(g->cache, "refused") != 0))
		g->private_code_bytes = p->mapped < g->end - p->span.start ? p->mapped : g->end - p->span.start;
	/* The region is the whole span; the verification counts what is huge in it. */
	g->start = whole->span.start;
	g->end = whole->span.end;
	g->bytes = whole->span.end - whole->span.start;
	if (err < 0)
		set_outcome(r, g, HT_STATUS_FAILED, g->error, err);
}

/*
 * An address inside one of the object's segments that is never moved (not
 * executable): its maps entry names the object's file even after a move.
 */
static uintptr_t object_id_addr(const struct ht_object *o)
{
	for (int k = 0; k < o->nseg; k++)
		if (!(o->segs[k].flags & PF_X))
			return o->segs[k].start;
	return o->nseg ? o->segs[0].start : 0;
}

static void do_segment(struct run *r, const struct ht_object *o, int i)
{
	struct ht_seg_query q = { .start = o->segs[i].start, .end = o->segs[i].end };
	struct ht_seg_plan p;
	struct ht_region *g;
	double t = ht_now_ms();
	int err;

	if (i + 1 < o->nseg)
		q.next = o->segs[i + 1].start;
	q.id_addr = object_id_addr(o);
	err = ht_plan_segment(r->maps, r->maps_len, &q, HT_HUGE_PAGE_SIZE, &p);
	g = new_region(r, o->name[0] ? o->name : p.path);
	if (!g)
		return;
	g->start = ht_round_down(q.start, HT_PAGE);
	g->end = ht_round_up(q.end, HT_PAGE);
	if (err == -ERANGE)
		set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_TOO_SMALL, 0);
	else if (err == -EALREADY)
		set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_ALREADY, 0);
	else if (err < 0)
		set_outcome(r, g, HT_STATUS_FAILED, HT_E_NOT_MAPPED, -ENOENT);
	else
		move_planned(r, o, &q, &p, g);
	g->ms = ht_now_ms() - t;
}

static int matches(const regex_t *re, const char *s)
{
	return ht_regexec(re, s, 0, NULL, 0) == 0;
}

/* The path the maps give for the object's first executable segment. */
/* The object's path as the maps give it. */
static void object_path(const struct run *r, const struct ht_object *o, char *buf, size_t len)
{
	uintptr_t at = object_id_addr(o);
	struct ht_map m;
	size_t pos = 0;

	buf[0] = '\0';
	while (at && ht_maps_next(r->maps, r->maps_len, &pos, &m)) {
		if (m.start <= at && at < m.end) {
			size_t n = m.path_len < len - 1 ? m.path_len : len - 1;

			memcpy(buf, m.path, n);
			buf[n] = '\0';
			return;
		}
	}
}

enum { NOT_SELECTED, WHOLE_OBJECT, FLAGGED_SEGMENTS };

/*
 * The main program and the libraries named by the pattern move whole;
 * other objects move only the segments marked with libhugetlbfs's flag.
 */
static int selected(struct run *r, const struct ht_object *o, const char *path)
{
	if (r->has_dso) {
		if (o->is_main || r->dso_found || !matches(&r->dso, path))
			return NOT_SELECTED;
		r->dso_found = 1;
		return WHOLE_OBJECT;
	}
	if (o->is_main || (r->has_match && matches(&r->match, path)))
		return WHOLE_OBJECT;
	return ht_object_flagged(o) ? FLAGGED_SEGMENTS : NOT_SELECTED;
}

/* Objects the caller has seen already (the dlopen hook's snapshot). */
static int known(const struct run *r, const struct ht_object *o)
{
	for (size_t i = 0; i < r->nknown; i++)
		if (r->known[i].base == o->base && strcmp(r->known[i].name, o->name) == 0)
			return 1;
	return 0;
}

static void do_object(struct run *r, const struct ht_object *o)
{
	char path[512];
	int how;

	if (known(r, o))
		return;
	object_path(r, o, path, sizeof(path));
	/* The vDSO and other memory without a file have no code to move. */
	how = path[0] == '/' ? selected(r, o, path) : NOT_SELECTED;
	if (how == NOT_SELECTED)
		return;
	if (r->has_ignore && matches(&r->ignore, path)) {
		struct ht_region *g = new_region(r, path);

		if (g)
			set_outcome(r, g, HT_STATUS_SKIPPED, HT_E_IGNORED, 0);
		return;
	}
	for (int i = 0; i < o->nseg; i++)
		if ((o->segs[i].flags & PF_X) &&
		    (how == WHOLE_OBJECT || (o->segs[i].flags & HT_PF_LINUX_HUGETLB)))
			do_segment(r, o, i);
}

/* One record for a failure that stops the whole run before any region. */
static int run_failed(struct run *r, enum ht_error e, int err, const char *object)
{
	struct ht_region *g = new_region(r, object);

	if (g)
		set_outcome(r, g, HT_STATUS_FAILED, e, err);
	else
		r->first_err = err;
	return err;
}

static int compile(struct run *r, regex_t *re, int *has, const char *pat, int flags)
{
	if (!pat)
		return 0;
	if (ht_regcomp(re, pat, flags | REG_NOSUB) != 0)
		return run_failed(r, HT_E_BAD_REGEX, -EINVAL, pat);
	*has = 1;
	return 0;
}

static int compile_all(struct run *r, const char *dso_bre)
{
	if (compile(r, &r->match, &r->has_match, r->opt->match, REG_EXTENDED) < 0 ||
	    compile(r, &r->ignore, &r->has_ignore, r->opt->ignore, REG_EXTENDED) < 0 ||
	    compile(r, &r->dso, &r->has_dso, dso_bre, 0) < 0)
		return -EINVAL;
	return 0;
}

/*
 * Replaces each moved region's huge_bytes with what the kernel shows:
 * PAGEMAP_SCAN walks only the region; where the kernel lacks it, one read
 * of smaps serves every region.
 */
static void verify(struct run *r)
{
	char *smaps = NULL;
	size_t len = 0;

	for (size_t i = 0; i < r->nregs; i++) {
		struct ht_region *g = &r->regs[i];
		uint64_t huge;

		if (g->status != HT_STATUS_OK)
			continue;
		if (ht_sys_scan_huge(g->start, g->end, &huge) < 0) {
			if (!smaps && ht_sys_read_file("/proc/self/smaps", &smaps, &len) < 0) {
				smaps = NULL;
				g->huge_bytes = 0;
				g->error = HT_E_PROC;
				continue;
			}
			huge = ht_smaps_huge_in(smaps, len, g->start, g->end);
		}
		g->huge_bytes = (size_t)huge;
		/* What is huge beyond the kept page-cache pages is our copy's. */
		if (g->private_code_bytes)
			g->private_huge_bytes = g->huge_bytes > g->kept_bytes ? g->huge_bytes - g->kept_bytes : 0;
	}
	free(smaps);
}

static void walk_objects(struct run *r)
{
	struct ht_object *objs;
	size_t n;
	int err = ht_objects_list(&objs, &n);

	if (err < 0) {
		run_failed(r, HT_E_ALLOC, err, "");
		return;
	}
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
	struct run r = { .opt = opt, .t0 = ht_now_ms(), .known = known, .nknown = nknown };
	int err;

	if (count)
		*count = 0;
	if (opt->mode == HT_MODE_OFF)
		return 0;
	if (compile_all(&r, dso_bre) == 0) {
		err = ht_sys_read_file("/proc/self/maps", &r.maps, &r.maps_len);
		if (err < 0)
			run_failed(&r, HT_E_PROC, err, "");
		else
			walk_objects(&r);
		verify(&r);
	}
	err = r.first_err;
	if (dso_bre && !r.dso_found && !err)
		err = -ENOENT;
	finish(&r, regions, max, count);
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
	if ((unsigned)opt->mode > HT_MODE_OFF || (max && !regions))
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
		run_failed(&r, HT_E_PROC, err, "");
	} else {
		err = ht_plan_segment(r.maps, r.maps_len, &q, HT_HUGE_PAGE_SIZE, &p);
		g = new_region(&r, p.path);
		if (g && err == -ERANGE)
			set_outcome(&r, g, HT_STATUS_SKIPPED, HT_E_TOO_SMALL, 0);
		else if (g && err < 0)
			set_outcome(&r, g, HT_STATUS_FAILED, HT_E_BAD_RANGE, -EFAULT);
		else if (g)
			move_planned(&r, NULL, &q, &p, g);
		if (g)
			g->ms = ht_now_ms() - r.t0;
		verify(&r);
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
	if ((unsigned)opt->mode > HT_MODE_OFF || (uintptr_t)to <= (uintptr_t)from)
		return -EINVAL;
	if (opt->mode == HT_MODE_OFF)
		return 0;
	ht_lock_acquire();
	err = range_locked(opt, from, to, region);
	ht_lock_release();
	return err;
}
