/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD=libhugetext-preload.so CMD: moves CMD's code onto huge pages
 * before its main() runs, and the code of libraries it loads later with
 * dlopen() before that dlopen() returns.  Settings come from HUGETEXT_*
 * variables read with secure_getenv(), so set-user-ID programs ignore them.
 *
 * With HUGETEXT_ASYNC=1 the code is moved by a background thread while
 * main() runs (background.c), which takes the copy off the start-up path.
 * The swap is one mremap(), safe while the code runs.
 */
#include "background.h"
#include "dlsearch.h"
#include "internal.h"
#include "objects.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct ht_options opt;
static int active;
static regex_t match_re;
static int have_match;
static void *(*real_dlopen)(const char *, int);
/* Set while the hook works, so a dlopen() of our own goes straight through. */
static __thread int in_hook;

/*
 * The background thread writes the report later, after main() may have
 * changed directory: a relative path is fixed to where the program started.
 */
static void absolute_report_path(void)
{
	static char path[4096];
	char cwd[4096];

	if (!opt.report_path || opt.report_path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", cwd, opt.report_path) < sizeof(path))
		opt.report_path = path;
}

__attribute__((constructor)) static void ht_preload(void)
{
	char notes[512];
	const char *v;
	int saved = errno, async = 0;

	ht_options_init(&opt);
	ht_options_env(&opt, secure_getenv, notes, sizeof(notes));
	if (notes[0])
		ht_report_note(&opt, notes);
	v = secure_getenv("HUGETEXT_ASYNC");
	if (v && ht_parse_bool(v, &async) < 0) {
		snprintf(notes, sizeof(notes), "ignored HUGETEXT_ASYNC=\"%.40s\"", v);
		ht_report_note(&opt, notes);
	}
	active = opt.mode != HT_MODE_OFF;
	if (active && opt.match)
		have_match = regcomp(&match_re, opt.match, REG_EXTENDED | REG_NOSUB) == 0;
	if (active && async)
		absolute_report_path();
	if (active && (!async || ht_background_start(&opt) < 0))
		ht_remap(&opt, NULL, 0, NULL);
	/* The program must not see anything of us, not even errno. */
	errno = saved;
}

/*
 * unshare(CLONE_NEWUSER) and setns() into a user or mount namespace fail
 * with EINVAL in a process with more than one thread.  A program must not
 * fail because of our background thread: when the call fails so and the
 * thread exists, wait for the move to end and for the kernel to reap the
 * thread (it counts until shortly after its last wake-up), then call again.
 */
static int single_thread_call(long (*call)(long, long), long a, long b)
{
	long ret = call(a, b);

	for (int i = 0; ret < 0 && errno == EINVAL && i < 400 && ht_background_alive(); i++) {
		ht_background_wait(5000);
		if (ht_background_alive()) {
			struct timespec ts = { 0, 50 * 1000 };

			nanosleep(&ts, NULL);
		}
		ret = call(a, b);
	}
	return (int)ret;
}

static long real_unshare(long flags, long unused)
{
	static int (*fn)(int);

	(void)unused;
	if (!fn)
		fn = (int (*)(int))dlsym(RTLD_NEXT, "unshare");
	if (!fn)
		return errno = ENOSYS, -1;
	return fn((int)flags);
}

static long real_setns(long fd, long nstype)
{
	static int (*fn)(int, int);

	if (!fn)
		fn = (int (*)(int, int))dlsym(RTLD_NEXT, "setns");
	if (!fn)
		return errno = ENOSYS, -1;
	return fn((int)fd, (int)nstype);
}

__attribute__((visibility("default"))) int unshare(int flags)
{
	return single_thread_call(real_unshare, flags, 0);
}

__attribute__((visibility("default"))) int setns(int fd, int nstype)
{
	return single_thread_call(real_setns, fd, nstype);
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
	/* Our own dlopen() (libelf, for perf maps) comes while we hold the lock. */
	if (!active || in_hook || ht_lock_held || (mode & RTLD_NOLOAD))
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
