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

/*
 * Nonzero when some object a run could move has at least @p->min_code
 * bytes of code: the main program, any library when @any_library (a match
 * pattern is set: the full run tests the names), and libraries whose
 * segments carry libhugetlbfs's flag.  Errs towards yes: the full run
 * decides region by region.
 */
int ht_policy_worth(const struct ht_policy *p, const struct ht_object *objs, size_t n,
		    int any_library);

#endif
