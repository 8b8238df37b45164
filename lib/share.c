/* SPDX-License-Identifier: MIT */
/* The shared text cache as a source of one span (the cache itself is cache.c). */
#include "cache.h"
#include "run.h"
#include "service.h"
#include "sys.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/*
 * Sharing needs the same bytes at the same 2 MiB phase in every process:
 * the object must load at a 2 MiB-aligned address, or at a phase every
 * start repeats (a library after the containers' preload: its entry, named
 * by the file offset its first 2 MiB page starts at, serves the next
 * start; one at a random phase would fill an entry no start ever uses
 * again), and the copy must come from the file, not from pages this
 * process wrote.
 */
static const char *share_refusal(const struct ht_object *o, const struct ht_source *src)
{
	if (!o)
		return "ranges are not shared";
	if (o->base % HT_HUGE_PAGE_SIZE && !o->pinned)
		return "load address not 2 MiB-aligned, so no two processes would share";
	if (src->fd < 0)
		return "code differs from its file or the file cannot be opened";
	return NULL;
}

/*
 * A file only root can write is the text service's to serve: its entry
 * (root's, for every user) or this user's own is mapped when it exists;
 * else the file goes to the service, which fills the entry or warms the
 * page cache off this process's path, and this start goes on without the
 * cache ("offered").  Returns: 1 when the span was swapped in or offered,
 * 0 when the caller should fill the cache itself (no service).
 */
static int served_by_service(const struct ht_options *opt, const struct ht_cache_key *key,
			     const struct ht_seg_plan *p, const struct ht_source *src,
			     int present, struct ht_region *g)
{
	const char *why = "";
	struct ht_cache_key file_key = *key;
	struct statfs fs;
	struct stat st;
	int err;

	/* What the service would refuse is not its to serve, nor worth a message. */
	if (ht_sys_fstat(src->fd, &st) < 0 || ht_offer_refusal(&st) ||
	    ht_sys_fstatfs(src->fd, &fs) < 0 || ht_offer_mount_refusal(&fs))
		return 0;
	/*
	 * Root's entries are named by the file they were filled from, never by
	 * its build ID: any file may claim any build ID, and an entry filled
	 * from a look-alike would serve every process of the machine (the
	 * samples checked at mapping time cannot tell).  docs/service.md.
	 */
	ht_cache_key_of_file(&file_key, &st);
	if (present) {
		err = ht_cache_move(opt, &file_key, HT_CACHE_SHARED_HIT, p->span, src, g);
		if (err == 0)
			return 1;
		/* Why the service's entry was not used (stale, damaged...): the offer says it again. */
		why = err != -ENOENT && g->cache_error ? g->cache_error : "";
		if (ht_cache_move(opt, key, HT_CACHE_HIT_ONLY, p->span, src, g) == 0)
			return 1;
	}
	if (ht_service_offer(HT_SERVICE_SOCKET, src->fd, p->file_off, p->span.end - p->span.start,
			     src->mapped) < 0)
		return 0;
	g->cache = "offered";
	g->cache_error = why;
	return 1;
}

int ht_try_cache(const struct ht_options *opt, const struct ht_object *o,
		 const struct ht_seg_plan *p, const struct ht_source *src, struct ht_region *g)
{
	struct ht_cache_key key = { .file_off = p->file_off, .mapped = src->mapped,
				    .len = p->span.end - p->span.start };
	const char *why = share_refusal(o, src);
	struct stat st;
	int present;

	/*
	 * auto is on by default in every process: where set-up made no cache,
	 * there is nothing to refuse.  An object off the 2 MiB grid (a PIE
	 * program the kernel loads at a 4 KiB-aligned address) still gets one
	 * word in the report: no start of it can take a zero-copy path, the
	 * page cache's 2 MiB pages no more than a cache entry.
	 */
	if (why && opt->share == HT_SHARE_AUTO && !ht_text_cache_present()) {
		if (o && o->base % HT_HUGE_PAGE_SIZE)
			g->cache_error = "load address not 2 MiB-aligned: neither the page cache's 2 MiB "
					 "pages nor a cache entry can serve it";
		return -EAGAIN;
	}
	if (why) {
		g->cache = "refused";
		g->cache_error = why;
		return -EPERM;
	}
	if (o->build_id_len) {
		key.build_id = o->build_id;
		key.build_id_len = o->build_id_len;
	} else if (ht_sys_fstat(src->fd, &st) == 0) {
		ht_cache_key_of_file(&key, &st);
	}
	/*
	 * Where set-up made no cache, the one open() above is all the cache
	 * costs; the service, when it runs, can still warm the page cache.
	 */
	present = opt->share != HT_SHARE_AUTO || ht_text_cache_present();
	if (opt->share == HT_SHARE_AUTO && opt->service && served_by_service(opt, &key, p, src, present, g)) {
		if (strcmp(g->cache, "hit") != 0)
			return -EAGAIN;
	} else if (!present || ht_cache_move(opt, &key, HT_CACHE_HIT_OR_FILL, p->span, src, g) < 0) {
		return -EAGAIN;
	}
	g->status = HT_STATUS_OK;
	g->error = HT_E_NONE;
	g->sys_errno = 0;
	return 0;
}
