/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD=libhugetext-preload.so CMD: moves CMD's code onto huge pages
 * before its main() runs, and the code of libraries it loads later with
 * dlopen() before that dlopen() returns (dlhook.c).  Settings come from
 * HUGETEXT_* variables read with secure_getenv(), so set-user-ID programs
 * ignore them, and from the policy file; both are read only where they
 * could matter (nothing_could_move).
 *
 * With HUGETEXT_ASYNC=1 the code is moved by a background thread while
 * main() runs (background.c), which takes the copy off the start-up path.
 * By default (HUGETEXT_COPY=auto) only what needs no private copy moves
 * before main(); a private copy waits in that thread until the process
 * has run long enough for it to pay.
 * The swap is one mremap(), safe while the code runs.
 */
#include "background.h"
#include "conf.h"
#include "internal.h"
#include "policy.h"
#include "preload.h"
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct ht_options ht_preload_opt;
struct ht_policy ht_preload_policy;
int ht_preload_active;
static regex_t match_re;
static int have_match;
static pthread_once_t match_once = PTHREAD_ONCE_INIT;

/*
 * HUGETEXT_MATCH is compiled at its first use (a dlopen() that may bring
 * in something to move), not with the settings: before main() a name
 * counts only for objects big enough to move, and regcomp() cost a small
 * program 0.01 ms (git --version with HUGETEXT_MATCH=.) for nothing.
 */
static void compile_match(void)
{
	int saved = errno;

	if (ht_preload_ready() && ht_preload_opt.match)
		have_match = ht_regcomp(&match_re, ht_preload_opt.match, REG_EXTENDED | REG_NOSUB) == 0;
	errno = saved;
}

int ht_preload_matches(const char *name)
{
	pthread_once(&match_once, compile_match);
	return have_match && ht_regexec(&match_re, name, 0, NULL, 0) == 0;
}

/*
 * The background thread writes the report later, after main() may have
 * changed directory: a relative path is fixed to where the program started.
 * The path is allocated, not static: the preload keeps no buffer in its
 * .bss that a program with nothing to move would pay to map (see
 * read_policy).  It lives as long as the process, like the options.
 */
static void absolute_report_path(void)
{
	static char *path;
	const char *rel = ht_preload_opt.report_path;
	char cwd[4096];
	size_t ncwd, nrel;

	if (!rel || rel[0] == '/' || !ht_libc()->getcwd(cwd, sizeof(cwd)))
		return;
	ncwd = strlen(cwd), nrel = strlen(rel);
	if (ncwd + 1 + nrel >= sizeof(cwd) || !(path = malloc(ncwd + 1 + nrel + 1)))
		return;
	memcpy(path, cwd, ncwd);
	path[ncwd] = '/';
	memcpy(path + ncwd + 1, rel, nrel + 1);
	ht_preload_opt.report_path = path;
}

/*
 * The policy file, honoured only when root owns it and nobody else can
 * write it (conf.c).  A missing file is silent; a refused one is noted
 * under verbose, once the environment has said whether to be verbose.
 *
 * The parsed file (13 KiB) is allocated here, not static: a static one
 * made the preload's .bss spill past its data page, so ld.so mapped an
 * extra anonymous region in every process, most of which never read the
 * file.  It is kept for the process's life (the options point into it);
 * one that was not read is freed.  Out of memory is treated as conf.c
 * treats it: the file is not applied, with a note.
 */
static void read_policy(char *why, size_t len)
{
	static struct ht_conf *conf;
	/* Not calloc(): ht_conf_load() clears it only once the file opens. */
	struct ht_conf *c = malloc(sizeof(*c));
	int err = c ? ht_conf_load(HT_CONF_PATH, c, why, len) : -ENOMEM;

	if (!c)
		snprintf(why, len, "%s: out of memory", HT_CONF_PATH);
	if (err == -ENOENT)
		why[0] = '\0';
	if (err < 0) {
		free(c);
		return;
	}
	conf = c;
	ht_policy_from_conf(conf, &ht_preload_opt, &ht_preload_policy);
	if (conf->nunknown)
		snprintf(why, len, "%s: %u unknown key(s), first \"%s\" on line %u", HT_CONF_PATH,
			 conf->nunknown, conf->unknown[0], conf->unknown_line[0]);
}

/* The program's path, for the policy's programs pattern and the report. */
static int program_path(char *buf, size_t len)
{
	ssize_t n = ht_libc()->readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Does the policy's programs pattern take this program?  Unset: every one. */
static int program_wanted(void)
{
	regex_t re;
	char path[4096];
	int ok;

	if (!ht_preload_policy.programs)
		return 1;
	if (program_path(path, sizeof(path)) < 0)
		return 0;
	if (ht_regcomp(&re, ht_preload_policy.programs, REG_EXTENDED | REG_NOSUB) != 0) {
		ht_report_note(&ht_preload_opt, "ignored the programs pattern: it does not compile");
		return 0;
	}
	ok = ht_regexec(&re, path, 0, NULL, 0) == 0;
	ht_regfree(&re);
	return ok;
}

/* Whether @s starts with @prefix, without a libc call (each one's first costs a PLT fix-up). */
static int starts_with(const char *s, const char *prefix)
{
	while (*prefix && *s == *prefix)
		s++, prefix++;
	return *prefix == '\0';
}

/*
 * Whether a variable of the environment starts with @a or @b.  The loop
 * needs no libc call, and the callers' prefixes are writable arrays, so in
 * .data: ld.so writes that page (the GOT) at every start anyway, while
 * string literals would make this path alone fault in a page of .rodata.
 */
static int env_has(const char *a, const char *b)
{
	/* glibc's own name, the one its getenv() reads: a program's "environ" may be its own. */
	extern char **__environ;

	for (char **e = __environ; e && *e; e++)
		if (starts_with(*e, a) || starts_with(*e, b))
			return 1;
	return 0;
}

/*
 * Whether the environment holds any setting of ours (HUGETEXT_*, iodlr's
 * IODLR_USE_EXPLICIT_HP).  Most programs' holds none, and one pass over it
 * costs a tenth of the 28 lookups it spares, which were 6.9k of the 23k
 * instructions the constructor ran in /bin/true (callgrind).  In a
 * set-user-ID program secure_getenv() finds nothing either way.
 */
static int env_has_settings(void)
{
	static char hugetext[] = "HUGETEXT_", iodlr[] = "IODLR_";

	return env_has(hugetext, iodlr);
}

/* The HUGETEXT_* variables over the policy file; each ignored value gets a note. */
static void read_environment(void)
{
	char notes[512];

	if (!env_has_settings())
		return;
	ht_options_env(&ht_preload_opt, ht_secure_getenv, notes, sizeof(notes));
	if (notes[0])
		ht_report_note(&ht_preload_opt, notes);
	notes[0] = '\0';
	ht_policy_env(&ht_preload_policy, ht_secure_getenv, notes, sizeof(notes));
	if (notes[0])
		ht_report_note(&ht_preload_opt, notes);
}

static int worth_one(const struct ht_object *o, void *unused)
{
	(void)unused;
	return ht_policy_worth(&ht_preload_opt, o, 1);
}

/*
 * Is anything loaded now worth a move?  The loader's object list alone
 * answers, one object at a time and with nothing allocated, so a small
 * program never pays for reading /proc (or for its first malloc()).
 */
static int worth_moving_now(void)
{
	return ht_objects_each(worth_one, NULL) != 0;
}

/*
 * One object's executable segments, summed as ht_object_code_bytes() does
 * (or more: it stops at HT_MAX_SEGS), straight from the program headers;
 * the largest so far in *@most.  Stops at an object with the default
 * min_code, which the defaults move.
 */
static int could_move(struct dl_phdr_info *info, size_t size, void *most)
{
	uint64_t code = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X))
			code += info->dlpi_phdr[i].p_memsz;
	if (code > *(uint64_t *)most)
		*(uint64_t *)most = code;
	return code >= HT_POLICY_MIN_CODE_DEFAULT;
}

/*
 * Whether the policy file may set min_code (below its default: any line
 * naming it counts), read by system calls made by number (no libc lookup,
 * which alone cost more than the rest of this path).  Absent: no.  Any
 * doubt (too long, unreadable, a processor without those calls): yes, and
 * the full path reads the file as always.
 */
static int policy_may_set_min_code(void)
{
	static char path[] = HT_CONF_PATH, key[] = "min_code";
	char buf[HT_CONF_PEEK_BYTES];
	ssize_t n = ht_sys_read_small_raw(path, buf, sizeof(buf));

	if (n == -ENOENT)
		return 0;
	return n < 0 || ht_conf_may_set(buf, (size_t)n, key);
}

/*
 * Whether the environment asks for a report or for verbose lines: the
 * only settings that do anything before main() where nothing could move
 * (they say so).  HUGETEXT_MATCH=. and the like select among objects big
 * enough to move; they cost /bin/true 0.05 ms of regcomp() and malloc()
 * set-up when they were read here for nothing.
 */
static int env_asks_output(void)
{
	static char report[] = "HUGETEXT_REPORT=", verbose[] = "HUGETEXT_VERBOSE=";

	return env_has(report, verbose);
}

/*
 * Could any setting move something loaded now?  No setting moves an object
 * with less than one 2 MiB page of code (ht_object_big_enough), so where
 * every object is smaller and the environment asks for no report, the
 * settings and the policy file cannot change what happens before main():
 * they are read at the first dlopen() instead (ht_preload_ready), or
 * never.  Most programs (coreutils, shells, git's helpers) stop here, with
 * no system call, no libc lookup and no clock read: 24k instructions of
 * /bin/true's start (callgrind).
 *
 * Nor does any setting move an object with less than min_code of code
 * (the main program and a library a pattern names included, do_object),
 * and only HUGETEXT_MIN_CODE or the policy file's min_code can lower it
 * from its default.  So a program whose largest object lies between one
 * 2 MiB page and the default min_code (git: 2.55 MiB) stops here too when
 * neither does, after one open() of the policy file (none where it is
 * absent) and no libc lookup: the full path cost git --version 0.02-0.11
 * ms more than an empty preload (bench/sections/small.py).
 */
static int nothing_could_move(void)
{
	static char min_code[] = "HUGETEXT_MIN_CODE=";
	uint64_t most = 0;

	if (env_asks_output() || dl_iterate_phdr(could_move, &most) != 0)
		return 0;
	if (most < HT_HUGE_PAGE_SIZE)
		return 1;
	return !env_has(min_code, min_code) && !policy_may_set_min_code();
}

/* Says, when a report or verbose is asked, that nothing was worth a move. */
static void report_not_worth(void)
{
	struct ht_region g;

	if (!ht_preload_opt.verbose && !ht_preload_opt.report_path)
		return;
	memset(&g, 0, sizeof(g));
	if (program_path(g.object, sizeof(g.object)) < 0)
		g.object[0] = '\0';
	g.mode = ht_preload_opt.mode;
	g.status = HT_STATUS_SKIPPED;
	g.error = HT_E_BELOW_MIN;
	g.fill = g.cache = g.cache_error = "";
	ht_report_emit(&ht_preload_opt, &g);
}

/* The policy file and the environment, once (the constructor or the first dlopen()). */
static void read_settings(void)
{
	char policy_note[300];

	ht_options_init(&ht_preload_opt);
	/*
	 * A program nobody asked about copies only where the copy pays, and
	 * its big libraries (libLLVM, libjvm, libnode) get the same care as
	 * its own code.
	 */
	ht_preload_opt.copy = HT_COPY_AUTO;
	ht_preload_opt.big_libraries = HT_BIG_LIBRARIES_AUTO;
	ht_policy_init(&ht_preload_policy);
	read_policy(policy_note, sizeof(policy_note));
	read_environment();
	if (policy_note[0])
		ht_report_note(&ht_preload_opt, policy_note);
	ht_preload_opt.min_code = ht_preload_policy.min_code;
	ht_preload_active = ht_preload_opt.mode != HT_MODE_OFF && program_wanted();
	if (ht_preload_active && ht_preload_opt.copy == HT_COPY_AUTO)
		ht_background_defer_init(&ht_preload_opt);
}

static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

int ht_preload_ready(void)
{
	int saved = errno;

	pthread_once(&settings_once, read_settings);
	errno = saved;
	return ht_preload_active;
}

/* What the constructor does where something could move. */
static void preload_start(void)
{
	double t0 = ht_now_ms();

	if (ht_preload_ready() && worth_moving_now()) {
		if (ht_preload_policy.async || ht_preload_opt.copy == HT_COPY_AUTO)
			absolute_report_path();
		if (!ht_preload_policy.async || ht_background_start(&ht_preload_opt) < 0) {
			ht_budget_origin_ms = t0;
			ht_preload_startup = 1;
			ht_remap(&ht_preload_opt, NULL, 0, NULL);
			ht_preload_startup = 0;
			ht_budget_origin_ms = 0;
		}
		ht_background_kick(0);
	} else if (ht_preload_active) {
		report_not_worth();
	}
}

__attribute__((constructor)) static void ht_preload(void)
{
	int saved;

	/*
	 * nothing_could_move() only reads memory and leaves errno alone, so
	 * most programs do not even bind __errno_location (a lazy binding's
	 * first call: 750 instructions).
	 */
	if (nothing_could_move())
		return;
	saved = errno;
	preload_start();
	/* The program must not see anything of us, not even errno. */
	errno = saved;
}

/*
 * unshare(CLONE_NEWUSER) and setns() into a user or mount namespace fail
 * with EINVAL in a process with more than one thread.  A program must not
 * fail because of our background thread: when the call fails so and the
 * thread exists, wait for the move to end and for the kernel to reap the
 * thread (it counts until shortly after its last wake-up), then call again.
 * The kernel's release of a thread is not one step: tgkill() stops
 * finding it before the thread list and the signal handlers' count let go
 * of it, and under qemu on a loaded machine (arm64 6.12) unshare() still
 * failed there.  So once our thread is gone the call is tried again for up
 * to 2 s, and a first call that fails within 2 s of our thread's end is
 * tried again too: setns() then unshare() at once saw the second fail
 * (arm64 6.12 under qemu), our thread released for one check and not yet
 * for the other.  A program with threads of its own gets its EINVAL that
 * much later, and only when our thread was there.  10 minutes in all: a
 * safety net.
 */
static int single_thread_call(long (*call)(long, long), long a, long b)
{
	long ret = call(a, b), us = 50;
	double t0 = ht_now_ms(), gone = 0;

	if (ret == 0 || errno != EINVAL || !ht_background_recent(2000))
		return (int)ret;
	do {
		struct timespec ts = { 0, 0 };

		if (ht_background_alive()) {
			ht_background_cancel();
			ht_background_wait(5000);
		}
		if (!gone && !ht_background_alive())
			gone = ht_now_ms();
		if (gone && ht_now_ms() - gone > 2000)
			break;
		ts.tv_nsec = us * 1000;
		ht_libc()->nanosleep(&ts, NULL);
		us = us < 10000 ? us * 2 : us;
		ret = call(a, b);
	} while (ret < 0 && errno == EINVAL && ht_now_ms() - t0 < 600000);
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

/*
 * fork(): a copy that waits until it pays is made first, in the parent,
 * so that the child (a server's worker) inherits it instead of running
 * from 4 KiB pages for good (ht_background_before_fork).  vfork(),
 * posix_spawn() and system() are glibc's alone: a child that execs at once
 * is left alone, and so is its parent.
 */
__attribute__((visibility("default"))) pid_t fork(void)
{
	static pid_t (*fn)(void);

	if (!fn)
		fn = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
	if (!fn)
		return errno = ENOSYS, -1;
	if (ht_preload_active && ht_preload_opt.copy == HT_COPY_AUTO)
		ht_background_before_fork();
	return fn();
}

/*
 * pthread_create(): a program's first thread puts glibc in its
 * multi-threaded ways for good, so a deferred copy's thread, which waited
 * for this (ht_background_kick), costs nothing more from now on.  And a
 * seccomp filter (a container's) has just let this thread make one, so
 * it lets ours be made too.  Ours (the background thread, a copy's second
 * filler) pass through here too and start nothing: the library's own
 * steps kick once they are done.
 */
__attribute__((visibility("default"))) int pthread_create(pthread_t *th, const pthread_attr_t *attr,
							  void *(*start)(void *), void *arg)
{
	static int (*fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int err, saved;

	if (!fn)
		fn = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
			RTLD_NEXT, "pthread_create");
	if (!fn)
		return ENOSYS;
	err = fn(th, attr, start, arg);
	if (err == 0 && ht_preload_active && !ht_in_background && !ht_lock_held) {
		saved = errno;
		ht_background_kick(1);
		errno = saved;
	}
	return err;
}

/*
 * mprotect(): a hot patcher makes a page of its code writable, then writes
 * it.  Between a background move's last check of the code and its swap
 * that would be undone (the page swapped back read-only, the next write a
 * SIGSEGV), so the call waits while that window is open (lib/lock.c).
 * The library's own calls go to libc directly (sys.c) and never wait.
 */
__attribute__((visibility("default"))) int mprotect(void *addr, size_t len, int prot)
{
	static int (*fn)(void *, size_t, int);
	int ret;

	if (!fn)
		fn = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "mprotect");
	if (!fn)
		return errno = ENOSYS, -1;
	ht_mprotect_begin();
	ret = fn(addr, len, prot);
	ht_mprotect_end();
	return ret;
}

__attribute__((visibility("default"))) int unshare(int flags)
{
	return single_thread_call(real_unshare, flags, 0);
}

__attribute__((visibility("default"))) int setns(int fd, int nstype)
{
	return single_thread_call(real_setns, fd, nstype);
}
