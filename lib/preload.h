/* SPDX-License-Identifier: MIT */
/*
 * State the preload's constructor (preload.c) sets once, before the
 * program runs, and its dlopen() hook (dlhook.c) reads.
 */
#ifndef HT_PRELOAD_H
#define HT_PRELOAD_H

#include "hugetext.h"
#include "policy.h"

/* The settings read from the environment. */
extern struct ht_options ht_preload_opt;
/* The policy file and HUGETEXT_PROGRAMS, _MIN_CODE, _ASYNC. */
extern struct ht_policy ht_preload_policy;
/* Not HUGETEXT_MODE=off, and a program the policy takes: the hook has something to do. */
extern int ht_preload_active;

/*
 * Whether the dlopen() hook has something to do (ht_preload_active); the
 * first call reads the settings where the constructor found no need to.
 * Keeps errno.
 */
int ht_preload_ready(void);

/* True when @name matches HUGETEXT_MATCH (false when unset or invalid). */
int ht_preload_matches(const char *name);

#endif
