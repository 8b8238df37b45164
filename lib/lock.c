/* SPDX-License-Identifier: MIT */
/* The lock that makes remaps one at a time, and its fork() handling. */
#include "internal.h"
#include "sys.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

/* One remap at a time: the maps we read must stay true while we act on them. */
pthread_mutex_t ht_lock = PTHREAD_MUTEX_INITIALIZER;
int ht_forked_child;
__thread int ht_in_background;
int (*ht_defer_copy)(const struct ht_options *, const struct ht_seg_query *, size_t);
double ht_budget_origin_ms;
int ht_preload_startup;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* The swap window's state (below); a child of fork() starts with it closed and idle. */
static int window_is_open, calls_under_way;

/*
 * fork() copies a mutex held by another thread as held forever.  The lock
 * guards no state that outlives a remap, so the child simply gets a fresh
 * one.  (Taking the lock in a prepare handler instead deadlocks under
 * runtimes whose own fork wrapper holds locks that pthread_create needs,
 * as AddressSanitizer's does.)  Registered at the first call, so that
 * linking the library changes nothing.
 */
static void fresh_lock_in_child(void)
{
	char *copy = __atomic_load_n(&ht_in_flight.addr, __ATOMIC_SEQ_CST);
	size_t len = __atomic_load_n(&ht_in_flight.len, __ATOMIC_SEQ_CST);

	pthread_mutex_init(&ht_lock, NULL);
	ht_forked_child = 1;
	/* No move of the parent's runs here: its window must not hold our mprotect() calls. */
	window_is_open = 0;
	calls_under_way = 0;
	/* A copy the parent was building is of no use here: give its pages back. */
	if (copy && len) {
		ht_in_flight.len = 0;
		ht_sys_unmap(copy, len);
	}
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, fresh_lock_in_child);
}

__thread int ht_lock_held;

/* The swap window (internal.h): a Dekker pair, both sides sequentially consistent. */
/* Calls that stopped waiting and went on while the window was open; at its opening. */
static unsigned calls_gone_on, gone_on_at_open;

static void pause_briefly(void)
{
	struct timespec ts = { 0, 50 * 1000 };

	ht_libc()->nanosleep(&ts, NULL);
}

int ht_window_open(void)
{
	gone_on_at_open = __atomic_load_n(&calls_gone_on, __ATOMIC_SEQ_CST);
	__atomic_store_n(&window_is_open, 1, __ATOMIC_SEQ_CST);
	for (int waited = 0; __atomic_load_n(&calls_under_way, __ATOMIC_SEQ_CST) > 0; waited++) {
		if (waited >= 1000) {
			ht_window_close();
			return -1;
		}
		pause_briefly();
	}
	return 0;
}

int ht_window_intact(void)
{
	return __atomic_load_n(&calls_gone_on, __ATOMIC_SEQ_CST) == gone_on_at_open;
}

int ht_window_is_open(void)
{
	return __atomic_load_n(&window_is_open, __ATOMIC_SEQ_CST);
}

void ht_window_close(void)
{
	__atomic_store_n(&window_is_open, 0, __ATOMIC_SEQ_CST);
}

void ht_mprotect_begin(void)
{
	int saved;

	__atomic_add_fetch(&calls_under_way, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&window_is_open, __ATOMIC_SEQ_CST))
		return;
	/* Open: step back, let the move finish its swap, then go on. */
	saved = errno;
	for (int waited = 0; __atomic_load_n(&window_is_open, __ATOMIC_SEQ_CST);) {
		if (waited >= 2000) {
			/* 100 ms: the move may wait for a lock of ours; go on, and it gives up. */
			__atomic_add_fetch(&calls_gone_on, 1, __ATOMIC_SEQ_CST);
			break;
		}
		__atomic_sub_fetch(&calls_under_way, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&window_is_open, __ATOMIC_SEQ_CST) && waited++ < 2000)
			pause_briefly();
		__atomic_add_fetch(&calls_under_way, 1, __ATOMIC_SEQ_CST);
	}
	errno = saved;
}

void ht_mprotect_end(void)
{
	__atomic_sub_fetch(&calls_under_way, 1, __ATOMIC_SEQ_CST);
}

void ht_lock_acquire(void)
{
	/*
	 * The first look-up of glibc's functions takes the loader's lock; a
	 * thread inside dlopen() holds that one and may wait for ours (a
	 * constructor calling the API): look up before ours is held.
	 */
	ht_libc();
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&ht_lock);
	ht_lock_held = 1;
}

void ht_lock_release(void)
{
	ht_lock_held = 0;
	pthread_mutex_unlock(&ht_lock);
}
