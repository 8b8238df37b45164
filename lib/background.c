/* SPDX-License-Identifier: MIT */
/*
 * The background move.  The program runs beside this thread, so it must
 * meet nothing of it: every signal is blocked in it, its descriptors live
 * in a table of its own, and it moves the code only where that is sound.
 */
#include "background.h"
#include "hot.h"
#include "internal.h"
#include "region.h"
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { BG_NONE, BG_STARTING, BG_WAITING, BG_RUNNING, BG_REFUSED };

/* Segments deferred at once: more are left where they are. */
#define BG_MAX_DEFERRED 32
/*
 * The copy's cost, measured here (bench/run.sh --only clang, startup):
 * getting, zeroing and filling 2 MiB pages costs about 1-2 ms of CPU per
 * MiB, and the huge pages give back about 5% of the CPU time that follows.
 * That cost is mostly this VM's host backing fresh memory again (the
 * machine table of docs/benchmarks.md); elsewhere a copy costs about a
 * tenth, and the wait below is longer than it need be: never too short.
 * So a copy of N MiB pays once the program runs on for about 20 x 2 x N
 * ms; waiting that long first (the ski-rental rule) bounds what a run
 * that ends just after the copy can lose, and a shorter run pays nothing.
 */
#define BG_COPY_AFTER_MS_PER_MIB 40.0

static pthread_mutex_t bg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cond = PTHREAD_COND_INITIALIZER;
static int bg_state, bg_cancel;
static const struct ht_options *bg_opt;
/* The process and thread ids, to ask the kernel whether the thread still counts. */
static pid_t bg_pid, bg_tid;
/* When (ht_now_ms, whole ms) the thread's function returned; 0: not yet. */
static long bg_end_ms;
/* The deferred copy: what to move, and the process CPU time (ms) when it pays. */
static struct ht_seg_query bg_queue[BG_MAX_DEFERRED];
static size_t bg_nqueue;
static double bg_due_ms;
/* With copy_hot: the CPU time when the first was queued; the due time follows the hot bytes. */
static double bg_t0_ms;
/* The queue holds what a copy of what runs left: its wait follows the hot bytes, always. */
static int bg_later;

static void set_state(int state)
{
	pthread_mutex_lock(&bg_mu);
	bg_state = state;
	pthread_cond_broadcast(&bg_cond);
	pthread_mutex_unlock(&bg_mu);
}

static double cpu_ms(void)
{
	struct timespec ts;

	if (ht_libc()->clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		return 0;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The wait the copy of @bytes pays for (the ski-rental rule above). */
static double copy_after(size_t bytes)
{
	return BG_COPY_AFTER_MS_PER_MIB * (double)bytes / (1 << 20);
}

static int hot_wait(const struct ht_options *opt)
{
	return opt->copy_hot && (opt->copy_after_ms < 0 || bg_later);
}

/*
 * With copy_hot, once due (bg_mu held): the due time again from what the
 * copy would take now, as the program has run more of its code.  Returns
 * 1 when the copy pays now, else 0 with a later bg_due_ms.  The queue is
 * planned and scanned without the lock (our maps and page tables, about
 * a millisecond for 100 MiB).  Each look moves the due time by at least one
 * 2 MiB range's wait (80 ms of CPU), so looking costs the program little.
 */
static int hot_due(void)
{
	struct ht_seg_query q[BG_MAX_DEFERRED];
	size_t n = bg_nqueue, bytes = 0;
	double now, due;

	memcpy(q, bg_queue, n * sizeof(q[0]));
	pthread_mutex_unlock(&bg_mu);
	bytes = ht_hot_copy_bytes(bg_opt, q, n);
	pthread_mutex_lock(&bg_mu);
	now = cpu_ms();
	if (bytes && now >= bg_t0_ms + copy_after(bytes))
		return 1;
	due = bg_t0_ms + copy_after(bytes > HT_HUGE_PAGE_SIZE ? bytes : HT_HUGE_PAGE_SIZE);
	/* Nothing hot: look again after as long again (a process idle in this code). */
	if (!bytes && due < now + (now - bg_t0_ms))
		due = now + (now - bg_t0_ms);
	if (due < now + copy_after(HT_HUGE_PAGE_SIZE))
		due = now + copy_after(HT_HUGE_PAGE_SIZE);
	bg_due_ms = due;
	return 0;
}

/* The CLOCK_REALTIME time @ms from now, as pthread_cond_timedwait() takes it. */
static void deadline_in(unsigned long ms, struct timespec *until)
{
	ht_libc()->clock_gettime(CLOCK_REALTIME, until);
	until->tv_sec += ms / 1000;
	until->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until->tv_nsec >= 1000000000L) {
		until->tv_sec++;
		until->tv_nsec -= 1000000000L;
	}
}

/*
 * Sleeps (bg_mu held) until the process has used bg_due_ms of CPU time or
 * the move is cancelled.  The process's CPU clock runs at most as fast as
 * its threads, so waking every quarter of what is left (10 ms to 1 s)
 * never oversleeps by much and costs an idle process a few wake-ups.
 */
static int wait_until_due(void)
{
	for (;;) {
		double left = bg_due_ms - cpu_ms();
		struct timespec until;
		long ms;

		if (bg_cancel)
			return -1;
		if (left <= 0 && (!hot_wait(bg_opt) || hot_due()))
			return 0;
		if (left <= 0)
			continue;
		ms = left / 4 < 10 ? 10 : left / 4 > 1000 ? 1000 : (long)(left / 4);
		deadline_in((unsigned long)ms, &until);
		pthread_cond_timedwait(&bg_cond, &bg_mu, &until);
	}
}

/*
 * With copy_hot, after a copy (bg_mu held): what it left on 4 KiB pages
 * waits for a later pass, which copies the parts that turn hot, each once
 * it pays as the first did (its wait counted from now).  Returns 0 when
 * something waits, -1 when the thread is done.
 */
static int wait_again(const struct ht_seg_query *rest, size_t n)
{
	if (bg_cancel || !bg_opt->copy_hot)
		return -1;
	bg_later = 1;
	for (size_t i = 0; i < n && bg_nqueue < BG_MAX_DEFERRED; i++)
		bg_queue[bg_nqueue++] = rest[i];
	if (bg_nqueue == 0)
		return -1;
	bg_t0_ms = cpu_ms();
	bg_due_ms = bg_t0_ms + copy_after(HT_HUGE_PAGE_SIZE);
	bg_state = BG_WAITING;
	pthread_cond_broadcast(&bg_cond);
	return 0;
}

/*
 * The deferred copy: waits until it pays, then moves what was queued
 * meanwhile; with copy_hot, again for what turns hot later.
 */
static void run_deferred(void)
{
	struct ht_seg_query q[BG_MAX_DEFERRED], left[BG_MAX_DEFERRED];
	struct ht_rest rest = { left, BG_MAX_DEFERRED, 0 };
	size_t n;

	pthread_mutex_lock(&bg_mu);
	do {
		if (wait_until_due() < 0)
			break;
		n = bg_nqueue;
		memcpy(q, bg_queue, n * sizeof(q[0]));
		bg_nqueue = 0;
		bg_state = BG_RUNNING;
		pthread_cond_broadcast(&bg_cond);
		pthread_mutex_unlock(&bg_mu);
		rest.n = 0;
		ht_remap_deferred(bg_opt, q, n, NULL, 0, NULL, &rest);
		pthread_mutex_lock(&bg_mu);
	} while (wait_again(left, rest.n) == 0);
	pthread_mutex_unlock(&bg_mu);
}

/* The thread's last step: notes when, for ht_background_recent(). */
static void *ended(void)
{
	__atomic_store_n(&bg_end_ms, (long)ht_now_ms() + 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *background(void *arg)
{
	int deferred = arg != NULL;

	__atomic_store_n(&bg_tid, (pid_t)ht_libc()->syscall(SYS_gettid), __ATOMIC_RELEASE);
	ht_in_background = 1;
	/*
	 * main() may close descriptors it did not open (closefrom) and reuse
	 * their numbers: ours live in a table of our own.  Without one, the
	 * starter moves the code itself, before main().
	 */
	if (ht_sys_private_fds(bg_opt->verbose) < 0) {
		set_state(BG_REFUSED);
		return ended();
	}
	set_state(deferred ? BG_WAITING : BG_RUNNING);
	if (deferred)
		run_deferred();
	else
		ht_remap(bg_opt, NULL, 0, NULL);
	set_state(BG_NONE);
	return ended();
}

/* A child of fork() has no background thread, whatever its parent had. */
static void none_in_child(void)
{
	pthread_mutex_init(&bg_mu, NULL);
	pthread_cond_init(&bg_cond, NULL);
	bg_state = BG_NONE;
	bg_tid = 0;
	bg_end_ms = 0;
	bg_nqueue = 0;
	bg_cancel = 0;
	bg_later = 0;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, none_in_child);
}

/*
 * Our thread calls malloc(), and the program's own allocator may not
 * expect a second thread.  Only allocators known to be thread-safe are
 * trusted: glibc's, the sanitizers' and the common replacements.  The
 * allocator is the first object that defines malloc, as the loader binds
 * it; dlsym(RTLD_DEFAULT) would answer with a program's PLT entry for
 * malloc (a non-PIE program that takes its address, such as node), which
 * names no allocator.
 */
static int malloc_thread_safe(void)
{
	static const char *const safe[] = { "libc.so", "libasan.so", "libtsan.so", "libhwasan.so",
					    "libjemalloc.so", "libtcmalloc", "libmimalloc.so" };
	char path[512];
	const char *name;

	if (ht_dynsyms_first_definer("malloc", path, sizeof(path)) != 1)
		return 0;
	name = strrchr(path, '/');
	name = name ? name + 1 : path;
	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (strncmp(name, safe[i], strlen(safe[i])) == 0)
			return 1;
	return 0;
}

static int create_thread(void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;
	int err;

	if (pthread_attr_init(&attr) != 0)
		return -1;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ht_libc()->sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, &attr, background, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err == 0 ? 0 : -1;
}

/*
 * Whether a thread of ours may run beside the program at all, seccomp
 * aside (filter_ok below).
 */
static int thread_allowed(void)
{
	return !ht_forked_child && ht_sys_can_private_fds() && malloc_thread_safe();
}

/*
 * A seccomp filter may kill the process for clone() instead of refusing
 * it (systemd's SystemCallFilter does), and no process can read its own
 * filter.  But a thread the program itself has just made, from this very
 * thread, went through the same filter (filters belong to the thread, and
 * ours would be made the same way, by glibc's pthread_create()): right
 * after that, ours may be made too.  Containers run under such filters
 * (Podman's, Docker's and Kubernetes' RuntimeDefault profiles allow
 * threads), and their programs (node, java, servers) make threads.
 * Anywhere else under a filter: no thread of ours.
 */
static int filter_ok(int after_program_thread)
{
	return after_program_thread || !ht_seccomp_filtered();
}

static int start(const struct ht_options *opt, void *arg)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int state;

	pthread_once(&once, register_atfork);
	bg_opt = opt;
	bg_pid = ht_getpid();
	bg_cancel = 0;
	bg_state = BG_STARTING;
	if (create_thread(arg) < 0) {
		bg_state = BG_NONE;
		return -1;
	}
	/* A moment (the thread's first system call) to know it can go on. */
	pthread_mutex_lock(&bg_mu);
	while (bg_state == BG_STARTING)
		pthread_cond_wait(&bg_cond, &bg_mu);
	state = bg_state;
	if (state == BG_REFUSED)
		bg_state = BG_NONE;
	pthread_mutex_unlock(&bg_mu);
	return state == BG_REFUSED ? -1 : 0;
}

/*
 * -1 (the caller moves the code now) under a seccomp filter, which may
 * kill the process for clone(); without close_range() (Linux 5.9); with
 * an allocator not known to be thread-safe; when no thread can be made or
 * it cannot have a descriptor table of its own.
 */
int ht_background_start(const struct ht_options *opt)
{
	if (!thread_allowed() || !filter_ok(0))
		return -1;
	return start(opt, NULL);
}

/*
 * Records a deferred segment (ht_defer_copy; ht_lock is held, so no thread
 * is made here) and moves its due time by the copy's cost.  A seccomp
 * filter does not refuse it: the thread is decided when it would start
 * (filter_ok), and a fork() copies in the caller, with no thread.  A thread
 * already waiting takes it too; one that has moved its segments is gone,
 * and ht_background_kick() starts another.
 */
static int defer_copy(const struct ht_options *opt, const struct ht_seg_query *q, size_t bytes)
{
	static int allowed = -1;
	/* What runs is known only later: a first look after one 2 MiB range's wait. */
	double after = opt->copy_after_ms >= 0 ? opt->copy_after_ms
		       : copy_after(hot_wait(opt) ? HT_HUGE_PAGE_SIZE : bytes);
	int ok;

	if (allowed < 0)
		allowed = thread_allowed();
	pthread_mutex_lock(&bg_mu);
	ok = allowed && bg_nqueue < BG_MAX_DEFERRED && bg_state != BG_RUNNING;
	if (ok) {
		if (bg_nqueue == 0) {
			bg_due_ms = bg_t0_ms = cpu_ms();
			bg_later = 0;
			/* fork() may take the queue before any thread of ours starts. */
			bg_pid = ht_getpid();
		}
		/*
		 * The model's wait grows with each span's bytes.  With copy_hot
		 * the queue shares one first look (the scan counts every span),
		 * and a wait set by hand is the process's: counted once.
		 */
		if (bg_nqueue == 0 || (!hot_wait(opt) && opt->copy_after_ms < 0))
			bg_due_ms += after;
		bg_queue[bg_nqueue++] = *q;
		pthread_cond_broadcast(&bg_cond);
	}
	pthread_mutex_unlock(&bg_mu);
	return ok ? 0 : -1;
}

void ht_background_defer_init(const struct ht_options *opt)
{
	bg_opt = opt;
	ht_defer_copy = defer_copy;
}

/*
 * Whether our thread may join the process now.  The first thread a
 * process makes puts glibc (malloc's locks, __libc_single_threaded) and
 * libstdc++ (shared_ptr counts, locales: atomic operations instead of
 * plain ones) in their multi-threaded ways for the rest of its life.
 * Measured here (bench/run.sh --only startup, clang): an idle thread of
 * ours cost clang's single-threaded -O2 compile about 1.6% of its CPU
 * time and node's start 1.5 ms, before node made threads of its own;
 * the deferred copy, made, lost clang 5% more (docs/benchmarks.md).  So
 * a single-threaded program keeps its single-threaded glibc; one that
 * has made threads (node, java, a server's workers) pays nothing more
 * for ours.  A wait set by hand (copy_after_ms) is a request for the
 * copy: it starts the thread at once, as before.
 */
static int may_join_now(void)
{
	return ht_sys_single_threaded() != 1 || bg_opt->copy_after_ms >= 0;
}

int ht_background_kick(int after_program_thread)
{
	int idle;

	if (!bg_opt || !may_join_now())
		return 0;
	pthread_mutex_lock(&bg_mu);
	idle = bg_nqueue > 0 && bg_state == BG_NONE;
	pthread_mutex_unlock(&bg_mu);
	if (!idle)
		return 0;
	/*
	 * Asked each time: a program may have installed a filter since its
	 * start.  Under one, the copies wait for the program's next thread
	 * (or a fork()).
	 */
	if (!filter_ok(after_program_thread))
		return 0;
	if (!thread_allowed() || start(bg_opt, bg_queue) < 0) {
		/* The segments stay where they are; nothing else depends on them. */
		pthread_mutex_lock(&bg_mu);
		bg_nqueue = 0;
		pthread_mutex_unlock(&bg_mu);
		return -1;
	}
	return 0;
}

/*
 * Moves the deferred segments in the calling thread, now, as the thread
 * would once due: one core, the code checked for patches before the swap.
 * Every signal waits meanwhile, so that no handler of the program enters
 * the library (a dlopen() in a handler would wait for ht_lock forever).
 */
static void copy_here(const struct ht_seg_query *q, size_t n)
{
	struct ht_options whole = *bg_opt;
	int was = ht_in_background;
	sigset_t all, old;

	/* The children will run code this process has not: the whole spans, not what ran here. */
	whole.copy_hot = 0;
	ht_libc()->sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ht_in_background = 1;
	ht_remap_deferred(&whole, q, n, NULL, 0, NULL, NULL);
	ht_in_background = was;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * Waits (bg_mu held), at most @ms, while the thread copies, and while it
 * waits to copy too unless @copying_only.  Bounded, so that a caller
 * holding a lock the thread needs (the dynamic loader's, in a library
 * constructor) is late but not stuck; and not a cancellation point, so
 * that no caller leaves the mutex held.
 */
static void wait_state(int copying_only, unsigned ms)
{
	struct timespec until;
	int cancel;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	deadline_in(ms, &until);
	while ((bg_state == BG_RUNNING || (!copying_only && bg_state == BG_WAITING)) &&
	       pthread_cond_timedwait(&bg_cond, &bg_mu, &until) == 0)
		;
	pthread_setcancelstate(cancel, NULL);
}

/*
 * A process that forks while its copy waits is about to run its code in
 * more processes than one.  A child has no thread of ours (none survives
 * fork) and nothing of ours ever runs in it again, so a copy made after
 * the fork can never reach it, and copies made in each child would be
 * one per worker.  So the copy is made now, in the parent, before the
 * fork: the child and every later one inherit it through fork, one copy
 * for all.  A copy the thread is making is awaited (bounded), so that the
 * child gets the finished one; then what waits (with copy_hot, what a
 * copy of what runs left) is taken from the thread, which stops, and
 * copied whole here.
 */
void ht_background_before_fork(void)
{
	struct ht_seg_query q[BG_MAX_DEFERRED];
	size_t n = 0;
	int saved = errno;

	if (!__atomic_load_n(&bg_nqueue, __ATOMIC_RELAXED) && bg_state != BG_RUNNING)
		return;
	pthread_mutex_lock(&bg_mu);
	wait_state(1, 5000);
	if (bg_state != BG_RUNNING && bg_pid == ht_getpid()) {
		n = bg_nqueue;
		memcpy(q, bg_queue, n * sizeof(q[0]));
		bg_nqueue = 0;
		if (bg_state == BG_WAITING) {
			bg_cancel = 1;
			pthread_cond_broadcast(&bg_cond);
		}
	}
	pthread_mutex_unlock(&bg_mu);
	if (n)
		copy_here(q, n);
	errno = saved;
}

/* The thread stops: now if it waits, after its copy if it copies. */
void ht_background_cancel(void)
{
	pthread_mutex_lock(&bg_mu);
	if (bg_state == BG_WAITING || bg_state == BG_RUNNING) {
		bg_cancel = 1;
		bg_nqueue = 0;
		pthread_cond_broadcast(&bg_cond);
	}
	pthread_mutex_unlock(&bg_mu);
}

int ht_background_alive(void)
{
	pid_t tid = __atomic_load_n(&bg_tid, __ATOMIC_ACQUIRE);
	int saved = errno, alive;

	/* In a child made by clone() without fork()'s handlers the pid differs. */
	if (!tid || bg_pid != ht_getpid())
		return 0;
	/* Signal 0 checks only; ESRCH once the thread has left the process. */
	alive = ht_libc()->syscall(SYS_tgkill, bg_pid, tid, 0) == 0 || errno != ESRCH;
	if (!alive)
		__atomic_store_n(&bg_tid, 0, __ATOMIC_RELEASE);
	errno = saved;
	return alive;
}

int ht_background_recent(unsigned ms)
{
	long end = __atomic_load_n(&bg_end_ms, __ATOMIC_ACQUIRE);

	if (bg_pid != ht_getpid())
		return 0;
	return ht_background_alive() || (end && ht_now_ms() - (double)end < ms);
}

void ht_background_wait(unsigned ms)
{
	if (!ht_background_alive())
		return;
	pthread_mutex_lock(&bg_mu);
	wait_state(0, ms);
	pthread_mutex_unlock(&bg_mu);
}
