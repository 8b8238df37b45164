/* SPDX-License-Identifier: MIT */
/*
 * The background move.  The program runs beside this thread, so it must
 * meet nothing of it: every signal is blocked in it, its descriptors live
 * in a table of its own, and it moves the code only where that is sound.
 */
#include "background.h"
#include "internal.h"
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { BG_NONE, BG_STARTING, BG_RUNNING, BG_REFUSED };

static pthread_mutex_t bg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cond = PTHREAD_COND_INITIALIZER;
static int bg_state;
static const struct ht_options *bg_opt;
/* The process and thread ids, to ask the kernel whether the thread still counts. */
static pid_t bg_pid, bg_tid;

static void set_state(int state)
{
	pthread_mutex_lock(&bg_mu);
	bg_state = state;
	pthread_cond_broadcast(&bg_cond);
	pthread_mutex_unlock(&bg_mu);
}

static void *background(void *arg)
{
	(void)arg;
	__atomic_store_n(&bg_tid, (pid_t)ht_libc()->syscall(SYS_gettid), __ATOMIC_RELEASE);
	ht_in_background = 1;
	/*
	 * main() may close descriptors it did not open (closefrom) and reuse
	 * their numbers: ours live in a table of our own.  Without one, the
	 * starter moves the code itself, before main().
	 */
	if (ht_sys_private_fds(bg_opt->verbose) < 0) {
		set_state(BG_REFUSED);
		return NULL;
	}
	set_state(BG_RUNNING);
	ht_remap(bg_opt, NULL, 0, NULL);
	set_state(BG_NONE);
	return NULL;
}

/* A child of fork() has no background thread, whatever its parent had. */
static void none_in_child(void)
{
	pthread_mutex_init(&bg_mu, NULL);
	pthread_cond_init(&bg_cond, NULL);
	bg_state = BG_NONE;
	bg_tid = 0;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, none_in_child);
}

/*
 * Our thread calls malloc(), and the program's own allocator may not
 * expect a second thread.  Only allocators known to be thread-safe are
 * trusted: glibc's, the sanitizers' and the common replacements.
 */
static int malloc_thread_safe(void)
{
	static const char *const safe[] = { "libc.so", "libasan.so", "libtsan.so", "libhwasan.so",
					    "libjemalloc.so", "libtcmalloc", "libmimalloc.so" };
	void *fn = dlsym(RTLD_DEFAULT, "malloc");
	const char *name;
	Dl_info info;

	if (!fn || !dladdr(fn, &info) || !info.dli_fname)
		return 0;
	name = strrchr(info.dli_fname, '/');
	name = name ? name + 1 : info.dli_fname;
	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (strncmp(name, safe[i], strlen(safe[i])) == 0)
			return 1;
	return 0;
}

static int create_thread(void)
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
	err = pthread_create(&th, &attr, background, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err == 0 ? 0 : -1;
}

/*
 * -1 (the caller moves the code now) under a seccomp filter, which may
 * kill the process for clone(); without close_range() (Linux 5.9); with
 * an allocator not known to be thread-safe; when no thread can be made or
 * it cannot have a descriptor table of its own.
 */
int ht_background_start(const struct ht_options *opt)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int state;

	if (ht_seccomp_filtered() || !ht_sys_can_private_fds() || !malloc_thread_safe())
		return -1;
	pthread_once(&once, register_atfork);
	bg_opt = opt;
	bg_pid = ht_getpid();
	bg_state = BG_STARTING;
	if (create_thread() < 0) {
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

/*
 * Bounded, so that a caller holding a lock the thread needs (the dynamic
 * loader's, in a library constructor) is late but not stuck; and not a
 * cancellation point, so that no caller leaves the mutex held.
 */
void ht_background_wait(unsigned ms)
{
	struct timespec until;
	int cancel;

	if (!ht_background_alive())
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	ht_libc()->clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&bg_mu);
	while (bg_state == BG_RUNNING && pthread_cond_timedwait(&bg_cond, &bg_mu, &until) == 0)
		;
	pthread_mutex_unlock(&bg_mu);
	pthread_setcancelstate(cancel, NULL);
}
