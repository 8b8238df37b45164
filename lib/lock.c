/* SPDX-License-Identifier: MIT */
/* The lock that makes remaps one at a time, and its fork() handling. */
#include "internal.h"
#include "sys.h"

#include <pthread.h>

/* One remap at a time: the maps we read must stay true while we act on them. */
pthread_mutex_t ht_lock = PTHREAD_MUTEX_INITIALIZER;
int ht_forked_child;
__thread int ht_in_background;
int (*ht_defer_copy)(const struct ht_options *, const struct ht_seg_query *, size_t);
double ht_budget_origin_ms;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

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
