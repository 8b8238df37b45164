/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD=libhugetext-preload.so CMD: moves CMD's code onto huge pages
 * before its main() runs, and the code of libraries it loads later with
 * dlopen() before that dlopen() returns (dlhook.c).  Settings come from
 * HUGETEXT_* variables read with secure_getenv(), so set-user-ID programs
 * ignore them.
 *
 * With HUGETEXT_ASYNC=1 the code is moved by a background thread while
 * main() runs (background.c), which takes the copy off the start-up path.
 * The swap is one mremap(), safe while the code runs.
 */
#include "background.h"
#include "internal.h"
#include "preload.h"
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ht_options ht_preload_opt;
int ht_preload_active;
static regex_t match_re;
static int have_match;

int ht_preload_matches(const char *name)
{
	return have_match && ht_regexec(&match_re, name, 0, NULL, 0) == 0;
}

/*
 * The background thread writes the report later, after main() may have
 * changed directory: a relative path is fixed to where the program started.
 */
static void absolute_report_path(void)
{
	static char path[4096];
	const char *rel = ht_preload_opt.report_path;
	char cwd[4096];

	if (!rel || rel[0] == '/' || !ht_libc()->getcwd(cwd, sizeof(cwd)))
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", cwd, rel) < sizeof(path))
		ht_preload_opt.report_path = path;
}

__attribute__((constructor)) static void ht_preload(void)
{
	char notes[512];
	const char *v;
	int saved = errno, async = 0;

	ht_options_init(&ht_preload_opt);
	ht_options_env(&ht_preload_opt, ht_secure_getenv, notes, sizeof(notes));
	if (notes[0])
		ht_report_note(&ht_preload_opt, notes);
	v = ht_secure_getenv("HUGETEXT_ASYNC");
	if (v && ht_parse_bool(v, &async) < 0) {
		snprintf(notes, sizeof(notes), "ignored HUGETEXT_ASYNC=\"%.40s\"", v);
		ht_report_note(&ht_preload_opt, notes);
	}
	ht_preload_active = ht_preload_opt.mode != HT_MODE_OFF;
	if (ht_preload_active && ht_preload_opt.match)
		have_match = ht_regcomp(&match_re, ht_preload_opt.match, REG_EXTENDED | REG_NOSUB) == 0;
	if (ht_preload_active && async)
		absolute_report_path();
	if (ht_preload_active && (!async || ht_background_start(&ht_preload_opt) < 0))
		ht_remap(&ht_preload_opt, NULL, 0, NULL);
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

			ht_libc()->nanosleep(&ts, NULL);
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
