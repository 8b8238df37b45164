/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD=libhugetext-preload.so CMD: moves CMD's code onto huge pages
 * before its main() runs, and the code of libraries it loads later with
 * dlopen() before that dlopen() returns.  Settings come from HUGETEXT_*
 * variables read with secure_getenv(), so set-user-ID programs ignore them.
 *
 * With HUGETEXT_ASYNC=1 the main program's code is moved by a background
 * thread while main() runs, which takes the copy off the start-up path.
 * The swap is one mremap(), safe while the code runs.
 */
#include "dlsearch.h"
#include "internal.h"
#include "objects.h"
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
 * The background thread (HUGETEXT_ASYNC=1).  It is detached, so nothing
 * is left behind when it ends; "busy" says it has not finished yet.
 */
static pthread_mutex_t bg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_done = PTHREAD_COND_INITIALIZER;
static int bg_busy;
/* The thread's id, until it is known to be gone; 0 when there is none. */
static pid_t bg_tid;

static void *background(void *arg)
{
	(void)arg;
	__atomic_store_n(&bg_tid, gettid(), __ATOMIC_RELEASE);
	/* The program has the other core: a second filling thread would take it. */
	ht_fill_alone = 1;
	/*
	 * main() runs meanwhile and may close descriptors it did not open
	 * (closefrom) and reuse their numbers: ours live in a table of our own.
	 */
	if (ht_sys_private_fds(opt.verbose) == 0)
		ht_remap(&opt, NULL, 0, NULL);
	else
		ht_report_note(&opt, "background move not started: no descriptor table of its own");
	pthread_mutex_lock(&bg_mu);
	bg_busy = 0;
	pthread_cond_broadcast(&bg_done);
	pthread_mutex_unlock(&bg_mu);
	return NULL;
}

/* A child of fork() has no background thread, whatever its parent had. */
static void no_background_in_child(void)
{
	pthread_mutex_init(&bg_mu, NULL);
	pthread_cond_init(&bg_done, NULL);
	bg_busy = 0;
	bg_tid = 0;
}

/*
 * Starts the background thread, with every signal blocked so that none
 * meant for the program lands on it.  Returns 0, or -1 when the move must
 * happen here and now: under a seccomp filter, which may kill the process
 * for clone(), or when no thread can be made.
 */
static int start_background(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;
	int err;

	if (ht_seccomp_filtered() || !ht_sys_can_private_fds() || pthread_attr_init(&attr) != 0)
		return -1;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_atfork(NULL, NULL, no_background_in_child);
	bg_busy = 1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, &attr, background, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0)
		bg_busy = 0;
	return err != 0 ? -1 : 0;
}

/* Returns once the background thread has finished its work (or at once). */
static void wait_background(void)
{
	pthread_mutex_lock(&bg_mu);
	while (bg_busy)
		pthread_cond_wait(&bg_done, &bg_mu);
	pthread_mutex_unlock(&bg_mu);
}

/*
 * True while the finished thread still counts as one of the process's:
 * it does from its last wake-up until the kernel reaps it, a moment later.
 */
static int background_lingers(void)
{
	pid_t tid = __atomic_load_n(&bg_tid, __ATOMIC_ACQUIRE);
	char path[64];
	struct stat st;

	if (!tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	if (stat(path, &st) == 0)
		return 1;
	__atomic_store_n(&bg_tid, 0, __ATOMIC_RELEASE);
	return 0;
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
	if (active && (!async || start_background() < 0))
		ht_remap(&opt, NULL, 0, NULL);
	/* The program must not see anything of us, not even errno. */
	errno = saved;
}

/*
 * unshare(CLONE_NEWUSER) and setns() into a user or mount namespace fail
 * with EINVAL in a process with more than one thread.  A program that
 * calls them early must not fail because of our background thread: wait
 * for it, then give the kernel a moment to reap it, since the thread
 * counts until shortly after its last wake-up.
 */
static int single_thread_call(long (*call)(long, long), long a, long b)
{
	long ret;

	wait_background();
	ret = call(a, b);
	/* Up to 20 ms, and only while our thread is what makes the call fail. */
	for (int i = 0; ret < 0 && errno == EINVAL && i < 200; i++) {
		struct timespec ts = { 0, 100 * 1000 };

		if (!background_lingers()) {
			errno = EINVAL; /* the call's own answer, not stat's */
			break;
		}
		nanosleep(&ts, NULL);
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
