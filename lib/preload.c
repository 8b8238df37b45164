/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD=libhugetext-preload.so CMD: moves CMD's code onto huge pages
 * before its main() runs, and the code of libraries it loads later with
 * dlopen() before that dlopen() returns.  Settings come from HUGETEXT_*
 * variables read with secure_getenv(), so set-user-ID programs ignore them.
 */
#include "dlsearch.h"
#include "internal.h"
#include "objects.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct ht_options opt;
static int active;
static regex_t match_re;
static int have_match;
static void *(*real_dlopen)(const char *, int);
/* Set while the hook works, so a dlopen() of our own goes straight through. */
static __thread int in_hook;

__attribute__((constructor)) static void ht_preload(void)
{
	char notes[512];
	int saved = errno;

	ht_options_init(&opt);
	ht_options_env(&opt, secure_getenv, notes, sizeof(notes));
	if (notes[0])
		ht_report_note(&opt, notes);
	active = opt.mode != HT_MODE_OFF;
	if (active && opt.match)
		have_match = regcomp(&match_re, opt.match, REG_EXTENDED | REG_NOSUB) == 0;
	if (active)
		ht_remap(&opt, NULL, 0, NULL);
	/* The program must not see anything of us, not even errno. */
	errno = saved;
}

/* Could the dlopen() have brought in something to move?  Cheap, no /proc. */
static int any_candidate(const struct ht_object *objs, size_t n,
			 const struct ht_object *before, size_t nbefore)
{
	for (size_t i = 0; i < n; i++) {
		int seen = 0;

		for (size_t k = 0; k < nbefore && !seen; k++)
			seen = before[k].base == objs[i].base && strcmp(before[k].name, objs[i].name) == 0;
		if (seen)
			continue;
		if (ht_object_flagged(&objs[i]) ||
		    (have_match && regexec(&match_re, objs[i].name, 0, NULL, 0) == 0))
			return 1;
	}
	return 0;
}

static void remap_new(const struct ht_object *before, size_t nbefore)
{
	struct ht_object *after;
	size_t nafter;

	if (ht_objects_list(&after, &nafter) < 0)
		return;
	if (any_candidate(after, nafter, before, nbefore)) {
		ht_lock_acquire();
		ht_remap_new(&opt, NULL, before, nbefore, NULL, 0, NULL);
		ht_lock_release();
	}
	free(after);
}

__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
	const void *caller = __builtin_return_address(0);
	struct ht_object *before = NULL;
	size_t nbefore = 0;
	char path[4096];
	void *handle;
	int saved;

	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	if (!real_dlopen)
		return NULL;
	if (!active || in_hook || (mode & RTLD_NOLOAD))
		return real_dlopen(file, mode);
	in_hook = 1;
	if (ht_objects_list(&before, &nbefore) < 0)
		before = NULL;
	handle = real_dlopen(ht_dlopen_path(file, caller, path, sizeof(path)), mode);
	/* What dlopen() said, errno and dlerror(), is what the caller sees. */
	saved = errno;
	if (handle && before)
		remap_new(before, nbefore);
	free(before);
	errno = saved;
	in_hook = 0;
	return handle;
}
