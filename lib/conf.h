/* SPDX-License-Identifier: MIT */
/*
 * The system-wide policy file, /etc/hugetext.conf: a pure parser of its
 * text and a loader that honours the file only when root owns it and
 * nobody else can write it.  No allocation in the parser: the whole
 * result lives in one fixed-size struct (static storage in the preload).
 *
 * Format: "key = value" per line; '#' starts a comment at the start of a
 * line or after whitespace; blank lines are ignored; keys are lowercase;
 * whitespace around keys and values is trimmed.  A key given twice: the
 * last wins, except warm, which adds to a list.  Any line that does not
 * parse makes the whole file rejected.  Unknown keys are kept aside (the
 * caller notes them under verbose), so newer files work with older code.
 */
#ifndef HT_CONF_H
#define HT_CONF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HT_CONF_PATH "/etc/hugetext.conf"
#define HT_CONF_MAX_BYTES 65536u   /* the whole file */
#define HT_CONF_MAX_LINE 4096u     /* one line, without its newline */
#define HT_CONF_RE_MAX 1024u       /* programs, match, ignore: bytes with the NUL */
#define HT_CONF_PATH_MAX 1024u     /* hugetlbfs: bytes with the NUL */
#define HT_CONF_WARM_MAX 64u       /* warm entries */
#define HT_CONF_WARM_BYTES 8192u   /* all warm paths, each with its NUL */
#define HT_CONF_UNKNOWN_MAX 8u     /* unknown keys remembered by name */
#define HT_CONF_KEY_MAX 32u        /* a remembered unknown key, with the NUL */
#define HT_CONF_POOL_MAX (1u << 24)     /* 32 TiB of 2 MiB pages */
#define HT_CONF_BUDGET_MAX 3600000u     /* one hour, as HUGETEXT_BUDGET_MS */
#define HT_CONF_COPY_AFTER_MAX 86400000u /* a day, as HUGETEXT_COPY_AFTER_MS */

/* Which keys the file gave: bits of ht_conf.set. */
enum ht_conf_key {
	HT_CONF_MODE = 1u << 0,
	HT_CONF_PROGRAMS = 1u << 1,
	HT_CONF_MATCH = 1u << 2,
	HT_CONF_IGNORE = 1u << 3,
	HT_CONF_MIN_CODE = 1u << 4,
	HT_CONF_BUDGET_MS = 1u << 5,
	HT_CONF_PAGE_CACHE = 1u << 6,
	HT_CONF_ASYNC = 1u << 7,
	HT_CONF_VERBOSE = 1u << 8,
	HT_CONF_POOL = 1u << 9,
	HT_CONF_HUGETLBFS = 1u << 10,
	HT_CONF_WARM = 1u << 11,
	HT_CONF_SHARE = 1u << 12,
	HT_CONF_COPY = 1u << 13,
	HT_CONF_COPY_AFTER_MS = 1u << 14,
	HT_CONF_TEXT_CACHE_SIZE = 1u << 15,
	HT_CONF_COVER_ENDS = 1u << 16,
	HT_CONF_BIG_LIBRARIES = 1u << 17,
	HT_CONF_SERVICE = 1u << 20,
	HT_CONF_COPY_HOT = 1u << 21,
	HT_CONF_CONTAINERS = 1u << 27,
};

/* containers = ...: which containers the OCI hook (hugetext oci-hook) injects. */
enum ht_conf_containers {
	HT_CONF_CONTAINERS_ANNOTATED = 0, /* those annotated io.hugetext/enable=1 (the default) */
	HT_CONF_CONTAINERS_ALL,           /* all, but those annotated io.hugetext/enable=0 */
	HT_CONF_CONTAINERS_OFF,           /* none */
};

/* mode = ...: the same order as enum ht_mode (internal.h). */
enum ht_conf_mode {
	HT_CONF_MODE_AUTO = 0,
	HT_CONF_MODE_THP,
	HT_CONF_MODE_EXPLICIT,
	HT_CONF_MODE_OFF,
	HT_CONF_MODE_FOLIOS,
};

struct ht_conf {
	unsigned set;                     /* enum ht_conf_key bits */
	/* the preload's policy */
	enum ht_conf_mode mode;
	char programs[HT_CONF_RE_MAX];    /* ERE on the executable's path */
	char match[HT_CONF_RE_MAX];
	char ignore[HT_CONF_RE_MAX];
	uint64_t min_code;                /* bytes */
	unsigned budget_ms;
	int page_cache, async, verbose;   /* 0 or 1 */
	int share;                        /* 0 off, 1 on, 2 auto: as HT_SHARE_* */
	int copy;                         /* 0 now, 1 auto, 2 never: as HT_COPY_* */
	unsigned copy_after_ms;
	int cover_ends;                   /* 0 or 1: ht_options.cover_ends */
	int big_libraries;                /* 0 off, 1 on, 2 auto: as HT_BIG_LIBRARIES_* */
	int service;                      /* 0 or 1: ht_options.service */
	int copy_hot;                     /* 0 or 1: ht_options.copy_hot */
	/* hugetext oci-hook */
	int containers;                   /* enum ht_conf_containers */
	/* hugetext setup */
	unsigned pool;                    /* 2 MiB pages; 0: leave the pool alone */
	char hugetlbfs[HT_CONF_PATH_MAX];
	uint64_t text_cache_size;         /* bytes of the shared tmpfs cache; 0: no cache */
	unsigned nwarm;
	unsigned warm_off[HT_CONF_WARM_MAX]; /* into warm_buf */
	char warm_buf[HT_CONF_WARM_BYTES];
	/* keys this version does not know: the first few, and how many */
	unsigned nunknown;
	char unknown[HT_CONF_UNKNOWN_MAX][HT_CONF_KEY_MAX];
	unsigned unknown_line[HT_CONF_UNKNOWN_MAX];
};

/*
 * Parses @len bytes of policy text into *@out (cleared first).  On a bad
 * line, @err (when @errlen > 0) says "line N: why"; *@out is then cleared
 * again, so a rejected file leaves nothing behind.
 * Returns: 0, or -EINVAL.
 */
int ht_conf_parse(const char *buf, size_t len, struct ht_conf *out, char *err, size_t errlen);

/*
 * Opens @path (O_NOFOLLOW), checks on the descriptor that it is a regular
 * file owned by root and writable by nobody else, reads it (at most
 * HT_CONF_MAX_BYTES) and parses it.  @err says why when it fails, except
 * for -ENOENT (a missing file is silent).  *@out is cleared on failure,
 * except for -ENOENT, which leaves it untouched (a program without a
 * policy file pays one open() and no fresh pages).
 * Returns: 0, -ENOENT (absent), -EPERM (owner, mode, not a regular file,
 * a symbolic link), -EFBIG (too long), -EINVAL (a bad line), or another
 * negative errno from open or read.
 */
int ht_conf_load(const char *path, struct ht_conf *out, char *err, size_t errlen);

/* The @i-th warm path (i < out->nwarm), NUL-terminated. */
const char *ht_conf_warm(const struct ht_conf *c, unsigned i);

/*
 * "2M", "64K", "1G", "4096": a number with an optional K, M or G suffix
 * (binary units).  Returns: 0, or -EINVAL (not a size, or past 2^64).
 */
int ht_conf_parse_size(const char *s, size_t len, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif
