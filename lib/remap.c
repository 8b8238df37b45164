/* SPDX-License-Identifier: MIT */
/*
 * The move of one span: build a copy on huge pages, then swap it in with
 * one mremap().  Until the swap, the program has not been touched; after
 * it, the copy is the code.  There is no step in between.
 */
#include "arch.h"
#include "folios.h"
#include "internal.h"
#include "pool.h"
#include "sys.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

double ht_now_ms(void)
{
	return ht_sys.clock_ms();
}

static int fail(struct ht_region *r, enum ht_error e, int err)
{
	r->status = HT_STATUS_FAILED;
	r->error = e;
	r->sys_errno = err < 0 ? -err : 0;
	return err < 0 ? err : -EIO;
}

/*
 * Copies bytes [@from, @to) of the mapped code into @copy.  pread() from
 * the file lets the kernel copy straight from the page cache, without
 * faulting in the 4 KiB pages of the original mapping; memcpy() covers
 * the rest, and every case where the file cannot be trusted to hold the
 * same bytes.
 */
static void fill_part(const struct ht_options *opt, struct ht_span span, const struct ht_source *src,
		      char *copy, size_t from, size_t to, struct ht_region *r)
{
	size_t done = from;

	if (to > src->mapped)
		to = src->mapped;
	if (from >= to)
		return;
	if (src->fd >= 0 && opt->fill != 2) {
		ssize_t n = ht_sys_pread_full(src->fd, copy + from, to - from,
					      (off_t)(src->file_off + from));

		if (n > 0)
			done += (size_t)n;
	}
	if (from == 0)
		r->fill = done > from ? "pread" : "memcpy";
	if (done < to)
		memcpy(copy + done, (const char *)span.start + done, to - done);
}

void ht_fill(const struct ht_options *opt, struct ht_span span, const struct ht_source *src,
	     char *dst, size_t len, struct ht_region *r)
{
	fill_part(opt, span, src, dst, 0, len, r);
}

/*
 * Gets the pages of [@at, @at + @len) of the copy before anything is
 * written there.  A hugetlb page over a cgroup's limit (a Kubernetes pod
 * without hugepages) or memory over a memory cgroup's limit would
 * otherwise be SIGBUS or the OOM killer on first touch; populating turns
 * both into an error we can back out of.  Kernels before 5.14 lack it: THP
 * and folios then fill by faulting as usual, hugetlb is not risked.
 */
static int populate(enum ht_mode mode, char *copy, size_t at, size_t len)
{
	int err = ht_sys_advise(copy + at, len, MADV_POPULATE_WRITE);

	if (err == -EINVAL && mode != HT_MODE_EXPLICIT)
		return 0;
	return err;
}

/* Populates and fills [from, to) of the copy: one piece of the work. */
struct piece {
	const struct ht_options *opt;
	enum ht_mode mode;
	struct ht_span span;
	const struct ht_source *src;
	char *copy;
	size_t from, to;
	struct ht_region *r;
	int err;
};

/*
 * 2 MiB at a time: each huge page is got (and zeroed) just before it is
 * filled, while it is still in the cache; populating all first and then
 * filling all cost about a tenth more here.
 */
static void *fill_piece(void *arg)
{
	struct piece *p = arg;

	for (size_t at = p->from; at < p->to && p->err == 0; at += HT_HUGE_PAGE_SIZE) {
		size_t end = p->to - at > HT_HUGE_PAGE_SIZE ? at + HT_HUGE_PAGE_SIZE : p->to;

		p->err = populate(p->mode, p->copy, at, end - at);
		if (p->err == 0)
			fill_part(p->opt, p->span, p->src, p->copy, at, end, p->r);
	}
	return NULL;
}

/*
 * A seccomp filter may kill the process for clone() instead of refusing
 * it: under any filter, make no thread.  Nor in a child of fork(), where
 * a lock of the parent's other threads may be held for good.  "Seccomp:\t2" in /proc/self/status.
 */
int ht_seccomp_filtered(void)
{
	char *buf, *at;
	size_t len;
	int filtered = 1;

	if (ht_sys_read_file("/proc/self/status", &buf, &len) < 0)
		return 1;
	at = strstr(buf, "\nSeccomp:");
	if (at) {
		at += strlen("\nSeccomp:");
		while (*at == ' ' || *at == '\t')
			at++;
		filtered = *at != '0';
	}
	free(buf);
	return filtered;
}

/*
 * Getting and zeroing the huge pages and copying into them is nearly all
 * of the time, and it splits cleanly: a second thread does the upper half
 * on another core.  It is gone before we return, with every signal
 * blocked while it lives, so the program never meets it.  When no thread
 * can be made, one does all.
 */
static int fill_in_two(struct piece *lo, struct piece *hi)
{
	sigset_t all, old;
	pthread_t th;
	int made = 0;

	if (ht_forked_child || ht_in_background || ht_seccomp_filtered()) {
		fill_piece(lo);
		fill_piece(hi);
		return lo->err < 0 ? lo->err : hi->err;
	}
	ht_libc()->sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	made = pthread_create(&th, NULL, fill_piece, hi) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fill_piece(lo);
	if (made)
		pthread_join(th, NULL);
	else
		fill_piece(hi);
	return lo->err < 0 ? lo->err : hi->err;
}

/* Below this, a thread costs more than it saves. */
#define HT_SPLIT_MIN (8 * HT_HUGE_PAGE_SIZE)

/*
 * Fills the copy, 2 MiB at a time when there is a deadline, since getting
 * each huge page is what can stall (compaction).
 * Returns: the bytes filled, a multiple of 2 MiB unless it is all of the
 * span, or a negative errno when the kernel would not give the pages.
 */
static ssize_t fill_copy(const struct ht_options *opt, enum ht_mode mode, struct ht_span span,
			 const struct ht_source *src, char *copy, struct ht_region *r)
{
	size_t len = span.end - span.start, at = 0;
	struct ht_region scratch;
	struct piece p = { opt, mode, span, src, copy, 0, len, r, 0 };

	if (!src->deadline_ms && len >= HT_SPLIT_MIN) {
		struct piece hi = p;

		p.to = hi.from = ht_round_down(len / 2, HT_HUGE_PAGE_SIZE);
		hi.r = &scratch;
		return fill_in_two(&p, &hi) < 0 ? p.err < 0 ? p.err : hi.err : (ssize_t)len;
	}
	while (at < len) {
		double t = src->deadline_ms ? ht_now_ms() : 0, now;

		p.from = at;
		p.to = src->deadline_ms ? at + HT_HUGE_PAGE_SIZE : len;
		fill_piece(&p);
		if (p.err < 0)
			return p.err;
		at = p.to;
		if (!src->deadline_ms || at >= len)
			continue;
		/* Stop before a piece that would end past the deadline, not after it. */
		now = ht_now_ms();
		if (now + (now - t) >= src->deadline_ms)
			break;
	}
	return (ssize_t)at;
}

/*
 * Makes sure the copy really sits on huge pages before it replaces code
 * that is shared with the page cache: a copy on 4 KiB pages would cost
 * memory and gain nothing.  MADV_COLLAPSE answers cheaply when the pages
 * are huge already and mends the ranges that are not.
 */
static int check_thp(char *copy, size_t len, struct ht_region *r)
{
	if (ht_sys_advise(copy, len, MADV_COLLAPSE) == 0) {
		r->huge_bytes = len;
		return 0;
	}
	r->huge_bytes = (size_t)ht_sys_self_huge_in((uintptr_t)copy, (uintptr_t)copy + len);
	return r->huge_bytes ? 0 : -ENOMEM;
}

/*
 * What a copy on folios got: its 2 MiB pages (smaps), and at least the
 * 64 KiB folios the kernel's counters show for the rest (folios.h).
 */
static int check_folios(char *copy, size_t len, const struct ht_folio_stats *before,
			struct ht_region *r)
{
	struct ht_folio_stats after;
	size_t pmd = (size_t)ht_sys_self_huge_in((uintptr_t)copy, (uintptr_t)copy + len);

	ht_folio_stats_read(&after);
	if (pmd > len)
		pmd = len;
	r->huge_bytes = pmd + ht_folio_bytes(len - pmd, before, &after);
	return r->huge_bytes ? 0 : -ENOMEM;
}

/*
 * The copy being built, for a child forked meanwhile by another thread:
 * it drops the copy, which would otherwise pin the pages for as long as
 * it lives.  Cleared before the copy is unmapped or swapped in, so the
 * child never unmaps an address that has been reused.
 */
struct ht_copy_in_flight ht_in_flight;

static void track_copy(char *copy, size_t len)
{
	__atomic_store_n(&ht_in_flight.len, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ht_in_flight.addr, copy, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ht_in_flight.len, len, __ATOMIC_SEQ_CST);
}

static void drop_copy(char *copy, size_t len)
{
	track_copy(NULL, 0);
	ht_sys_unmap(copy, len);
}

static int alloc_copy(enum ht_mode mode, size_t len, char **copy, struct ht_region *r)
{
	int hugetlb = mode == HT_MODE_EXPLICIT;
	void *p;
	/* 2 MiB-aligned in every mode: a folio of any size is aligned to its size. */
	int err = ht_sys_map_anon(len, HT_HUGE_PAGE_SIZE, hugetlb, &p);

	r->mode = mode;
	if (err < 0)
		return fail(r, HT_E_ALLOC, err);
	if (!hugetlb) {
		err = ht_sys_advise(p, len, MADV_HUGEPAGE);
		if (err < 0) {
			ht_sys_unmap(p, len);
			return fail(r, HT_E_ADVISE, err);
		}
	}
	track_copy(p, len);
	*copy = p;
	return 0;
}

/* Everything before the swap; on failure the copy is gone and nothing else changed. */
static int build_copy(const struct ht_options *opt, enum ht_mode mode, struct ht_span *span,
		      const struct ht_source *src, char **out, struct ht_region *r)
{
	size_t len = span->end - span->start;
	ssize_t done;
	char *copy;
	struct ht_folio_stats before = { 0, 0, 0 };
	int err = alloc_copy(mode, len, &copy, r);

	if (err < 0)
		return err;
	if (mode == HT_MODE_FOLIOS)
		ht_folio_stats_read(&before);
	done = fill_copy(opt, mode, *span, src, copy, r);
	if (done < 0) {
		drop_copy(copy, len);
		return fail(r, HT_E_NO_HUGE, (int)done);
	}
	if ((size_t)done < len) {
		/* The budget ran out: keep the part that is ready, on whole huge pages. */
		track_copy(copy, (size_t)done);
		ht_sys_unmap(copy + done, len - (size_t)done);
		len = (size_t)done;
		span->end = span->start + len;
		r->error = HT_E_BUDGET;
	}
	if ((mode == HT_MODE_THP && check_thp(copy, len, r) < 0) ||
	    (mode == HT_MODE_FOLIOS && check_folios(copy, len, &before, r) < 0))
		err = fail(r, HT_E_NO_HUGE, 0);
	else if ((err = ht_sys_protect(copy, len, PROT_READ | PROT_EXEC)) < 0)
		err = fail(r, HT_E_PROTECT, err);
	if (err < 0) {
		drop_copy(copy, len);
		return err;
	}
	if (mode == HT_MODE_EXPLICIT)
		r->huge_bytes = len;
	*out = copy;
	return 0;
}

/* Swaps a finished copy in; on failure the copy is gone and the code is as it was. */
/*
 * mremap() with MREMAP_FIXED unmaps the target before it moves the copy,
 * both under the mmap lock.  Only a kernel allocation failure can stop it
 * in between, leaving a hole where the code was.  The copy still holds
 * the code: move it into the hole, or, failing that, copy it there.
 */
static int refill_hole(char *copy, struct ht_span span, struct ht_region *r, int first_err)
{
	size_t len = span.end - span.start;
	void *target = (void *)span.start;
	int err = ht_sys_swap(copy, len, target);

	if (err == 0)
		return 0;
	err = ht_sys_map_fixed_anon(target, len);
	if (err == 0) {
		memcpy(target, copy, len);
		ht_arch_sync_code(target, len);
		err = ht_sys_protect(target, len, PROT_READ | PROT_EXEC);
	}
	ht_sys_unmap(copy, len);
	r->huge_bytes = 0;
	return fail(r, HT_E_SWAP, err < 0 ? err : first_err);
}

int ht_swap_in(char *copy, struct ht_span span, const struct ht_source *src,
		   struct ht_region *r)
{
	size_t len = span.end - span.start;
	size_t mapped = src->mapped < len ? src->mapped : len;
	char *gap = (char *)span.start + mapped;
	size_t gap_len = len - mapped;
	int err;

	/* Free space after the code is claimed first, so mremap replaces only what we own. */
	if (src->reserve_gap && gap_len && (err = ht_sys_reserve_fixed(gap, gap_len)) < 0) {
		ht_sys_unmap(copy, len);
		return fail(r, HT_E_SWAP, err);
	}
	/* arm64 fetches stale instructions from code written as data (arch.h). */
	ht_arch_sync_code(copy, len);
	err = ht_sys_swap(copy, len, (void *)span.start);
	if (err < 0 && ht_sys_unmapped((void *)span.start))
		return refill_hole(copy, span, r, err);
	if (err < 0) {
		if (src->reserve_gap && gap_len)
			ht_sys_unmap(gap, gap_len);
		ht_sys_unmap(copy, len);
		return fail(r, HT_E_SWAP, err);
	}
	return 0;
}

static int move_with(const struct ht_options *opt, enum ht_mode mode, struct ht_span span,
		     const struct ht_source *src, struct ht_region *r)
{
	char *copy;
	int err;

	/*
	 * A THP copy is charged to the memory cgroup; over its limit the
	 * kernel's OOM killer takes the whole program.  Explicit pages are
	 * not charged there.
	 */
	if (mode != HT_MODE_EXPLICIT && ht_memcg_room() < span.end - span.start) {
		r->mode = mode;
		return fail(r, HT_E_MEMCG, -ENOMEM);
	}
	/*
	 * MADV_COLLAPSE would make huge pages even so: "never", for THP or
	 * for its 2 MiB size alone, is the admin's veto.
	 */
	if (mode == HT_MODE_THP && ht_thp_pmd_on() == 0) {
		r->mode = mode;
		return fail(r, HT_E_THP_OFF, -EPERM);
	}
	if (mode == HT_MODE_FOLIOS && ht_folios_available() != 1) {
		r->mode = mode;
		return fail(r, HT_E_FOLIOS_OFF, -EPERM);
	}
	err = build_copy(opt, mode, &span, src, &copy, r);
	if (err < 0)
		return err;
	if (src->unchanged && !ht_window_checked(src, span, copy)) {
		drop_copy(copy, span.end - span.start);
		r->huge_bytes = 0;
		return fail(r, HT_E_CHANGED, -EBUSY);
	}
	/* From here the copy is either the code or gone: no child may unmap it. */
	track_copy(NULL, 0);
	err = ht_swap_in(copy, span, src, r);
	if (src->unchanged)
		ht_window_close();
	return err;
}

/*
 * Explicit pages need the whole span from the pool.  The check is only
 * advice: another process may take the pages before our mmap, which then
 * fails cleanly, because hugetlb mappings reserve their pages up front.
 */
static int pool_check(size_t len, struct ht_region *r)
{
	long avail = ht_pool_available_2m();

	r->mode = HT_MODE_EXPLICIT;
	if (avail == -ENOENT)
		return fail(r, HT_E_NOT_SUPPORTED, -ENOENT);
	if (avail < 0)
		return fail(r, HT_E_PROC, (int)avail);
	if ((size_t)avail < len / HT_HUGE_PAGE_SIZE)
		return fail(r, HT_E_POOL, -ENOMEM);
	return 0;
}

/*
 * Where the arm64 contiguous bit makes them pay, a THP copy that got no
 * 2 MiB page (or may not have one) is made again on 64 KiB folios, when
 * the kernel offers them (folios.h).  Not on x86-64, where they gain
 * nothing.
 */
static int falls_back_to_folios(const struct ht_options *opt, int err, const struct ht_region *r)
{
	if (!HT_ARCH_FOLIO_FALLBACK || err >= 0 || r->mode != HT_MODE_THP)
		return 0;
	if (opt->mode != HT_MODE_THP && opt->mode != HT_MODE_AUTO)
		return 0;
	if (r->error != HT_E_NO_HUGE && r->error != HT_E_THP_OFF)
		return 0;
	return ht_folios_available() == 1;
}

int ht_move_span(const struct ht_options *opt, struct ht_span span,
		 const struct ht_source *src, struct ht_region *r)
{
	size_t len = span.end - span.start;
	int err = 0;

	r->start = span.start;
	r->end = span.end;
	r->bytes = len;
	r->huge_bytes = 0;
	r->fill = "";
	r->error = HT_E_NONE;
	/* auto: explicit pages when the pool has room, THP when anything about them fails. */
	if (opt->mode == HT_MODE_EXPLICIT || opt->mode == HT_MODE_AUTO) {
		err = pool_check(len, r);
		if (err == 0)
			err = move_with(opt, HT_MODE_EXPLICIT, span, src, r);
	}
	/* Code that changed under the copy would change under a second one too. */
	if (opt->mode == HT_MODE_THP || opt->mode == HT_MODE_FOLIOS ||
	    (opt->mode == HT_MODE_AUTO && err < 0 && r->error != HT_E_CHANGED)) {
		/*
		 * A process that turned THP off for itself (MariaDB does) gets no
		 * huge page for a THP copy, nor a folio: asked before anything is
		 * spent, and its setting is left as it is.
		 */
		if (ht_sys_thp_disabled() == 1) {
			r->mode = opt->mode == HT_MODE_FOLIOS ? HT_MODE_FOLIOS : HT_MODE_THP;
			r->status = HT_STATUS_SKIPPED;
			r->error = HT_E_THP_PROCESS;
			r->sys_errno = 0;
			return -EPERM;
		}
		err = move_with(opt, opt->mode == HT_MODE_FOLIOS ? HT_MODE_FOLIOS : HT_MODE_THP, span, src, r);
	}
	if (falls_back_to_folios(opt, err, r))
		err = move_with(opt, HT_MODE_FOLIOS, span, src, r);
	if (err < 0)
		return err;
	r->status = HT_STATUS_OK;
	/* A budget cut is not an error, but the report says why coverage is partial. */
	if (r->error != HT_E_BUDGET)
		r->error = HT_E_NONE;
	r->sys_errno = 0;
	return 0;
}
