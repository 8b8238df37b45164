/* SPDX-License-Identifier: MIT */
/*
 * The shared text cache: copies of code spans in files on hugetlbfs, or on
 * a tmpfs mounted with huge=within_size (no reserved pool: its files sit
 * in 2 MiB THPs), so that N processes of one program hold one copy and a
 * warm start copies nothing.  A cache file is code other processes will
 * run, so nothing is mapped unless only the caller (or root) could have
 * written it; a tmpfs entry is mapped only when it maps with 2 MiB pages.
 */
#ifndef HT_CACHE_H
#define HT_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "internal.h"

/* What names a cache entry. */
struct ht_cache_key {
	const unsigned char *build_id; /* NULL: use the file identity below */
	size_t build_id_len;
	uint64_t dev, ino, size;
	int64_t mtime_sec;
	long mtime_nsec;
	uint64_t file_off;             /* file offset of the span's start */
	uint64_t len, mapped;          /* span length; bytes of it that are code */
};

/*
 * Formats the entry's file name ("b-<build-id>-..." or "f-<dev>-...").
 * Returns: its length, or -ENAMETOOLONG.
 */
int ht_cache_name(const struct ht_cache_key *k, char *buf, size_t len);

/*
 * Names @k by the file @st describes (device, inode, size, time), not by a
 * build ID: what the text service's entries, shared by all users, use.
 */
void ht_cache_key_of_file(struct ht_cache_key *k, const struct stat *st);

/*
 * Why a cache directory or file may not be trusted by @euid, or NULL when
 * it may: it must belong to @euid or root and be writable by no one else.
 */
const char *ht_cache_distrust(const struct stat *st, uid_t euid, int want_dir);

/*
 * True when HT_TEXT_CACHE_DIR exists (or cannot be told): one open().
 */
int ht_text_cache_present(void);

/* How ht_cache_move() may use the cache. */
enum ht_cache_use {
	HT_CACHE_HIT_OR_FILL, /* this user's entry, filled first when missing */
	HT_CACHE_HIT_ONLY,    /* this user's entry when it exists: -ENOENT otherwise */
	/* The text service's entry (HT_TEXT_CACHE_DIR/shared, root's) when it exists. */
	HT_CACHE_SHARED_HIT,
};

/*
 * Moves the span through the cache: maps a trusted, complete, fresh entry
 * (r->cache "hit"), or fills one first (r->cache "miss").
 * Returns: 0 when the span was swapped in; a negative errno when the caller
 * should go on without the cache, with r->cache and r->cache_error saying
 * why ("refused"), or r->cache "" when no cache directory exists.
 * HT_SHARE_AUTO looks only at HT_TEXT_CACHE_DIR; HT_SHARE_ON at
 * opt->share_dir, else HT_TEXT_CACHE_DIR, else the first 2 MiB hugetlbfs.
 * A tmpfs hit or miss leaves r->mode HT_MODE_THP, a hugetlbfs one
 * HT_MODE_EXPLICIT.
 * The program is untouched in every failing case.
 */
int ht_cache_move(const struct ht_options *opt, const struct ht_cache_key *key,
		  enum ht_cache_use use, struct ht_span span, const struct ht_source *src,
		  struct ht_region *r);

#endif
