/* SPDX-License-Identifier: MIT */
/*
 * Whether the preload should do anything in this process at all: the
 * programs the policy names, and whether any loaded object has enough code
 * for a move to pay.  A program with nothing worth moving must pay close to
 * nothing, so these checks read neither /proc nor any file: they work on
 * the loader's object list (dl_iterate_phdr) and on strings.
 */
#ifndef HT_POLICY_H
#define HT_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "hugetext.h"
#include "objects.h"

/*
 * The preload's default for the code an object needs before it is moved.
 * Below it a move costs more than a short-lived program can win back: git
 * (2.9 MiB of code) paid 0.8 ms per start for a move in a 1 ms run.
 */
#define HT_POLICY_MIN_CODE_DEFAULT (4u << 20)
/*
 * The most of the policy file the preload's cheapest path reads (preload.c):
 * a longer file takes the full path.  The shipped one is a third of it.
 */
#define HT_CONF_PEEK_BYTES 16384

struct ht_policy {
	const char *programs; /* NULL, or an ERE on the executable's path */
	uint64_t min_code;    /* bytes of code an object needs to be moved */
	int async;            /* move in a background thread */
};

void ht_policy_init(struct ht_policy *p);

/*
 * Copies the preload keys of a parsed policy file into @opt and @p.  The
 * strings stay in @c, which must outlive them.  The environment is read
 * afterwards (ht_options_env, ht_policy_env), so it wins where it is read.
 */
void ht_policy_from_conf(const struct ht_conf *c, struct ht_options *opt, struct ht_policy *p);

/*
 * HUGETEXT_PROGRAMS, HUGETEXT_MIN_CODE and HUGETEXT_ASYNC through @get
 * (secure_getenv).  Appends a note on each ignored value to @notes.
 */
void ht_policy_env(struct ht_policy *p, char *(*get)(const char *), char *notes, size_t len);

/* Bytes of @o's executable PT_LOAD segments. */
uint64_t ht_object_code_bytes(const struct ht_object *o);

/* @o has @opt->min_code bytes of code, and never less than one 2 MiB page. */
int ht_object_big_enough(const struct ht_options *opt, const struct ht_object *o);

/* What of an object a run moves. */
enum ht_take {
	HT_TAKE_NONE,
	HT_TAKE_WHOLE,   /* every executable segment */
	HT_TAKE_FLAGGED, /* the segments carrying libhugetlbfs's flag */
};

/*
 * The one rule for which objects are candidates, at start-up and after a
 * dlopen(): the main program and the libraries the match pattern names
 * (@named) whole; any library big enough (ht_object_big_enough) whole
 * when ht_options.big_libraries takes them (on; auto without a match
 * pattern); else only flagged segments.  Reads nothing but @o's program
 * headers, so a small library costs no file or /proc read.
 */
enum ht_take ht_policy_take(const struct ht_options *opt, const struct ht_object *o, int named);

/*
 * Nonzero when some object a run could take (ht_policy_take, any library
 * counted as named when a match pattern is set: the full run tests the
 * names) is big enough.  Errs towards yes: the full run decides region by
 * region.
 */
int ht_policy_worth(const struct ht_options *opt, const struct ht_object *objs, size_t n);

/*
 * With copy = auto, before main(): whether the @rest bytes of a span that
 * only a private copy can move are copied at once, after @kept bytes of it
 * were kept on the kernel's 2 MiB page-cache pages.  Only a repair: a
 * warmed file that lost a few pages (the read-back after the copy makes
 * the next start copy-free) keeps at least what is left.  A page cache
 * with a few 2 MiB folios of its own (the kernel's readahead makes them on
 * ext4 and XFS) is not warmed: clang's first start kept 10 of libclang-cpp's
 * 52 MiB and copied 42 MiB before main() under the old rule (any kept byte).
 */
int ht_policy_repair_now(size_t kept, size_t rest);

/*
 * Whether any line of policy file text @buf may set @key: a line that is
 * not a comment (conf.c: '#' first after blanks) and holds @key anywhere.
 * Errs towards yes (a value or a malformed line naming it counts): the
 * preload's cheapest path takes the full one then, which parses the file.
 */
int ht_conf_may_set(const char *buf, size_t len, const char *key);

#endif
