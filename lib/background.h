/* SPDX-License-Identifier: MIT */
/*
 * The preload's background move (HUGETEXT_ASYNC=1): one thread that moves
 * the code while main() runs.  Used by preload.c only.
 */
#ifndef HT_BACKGROUND_H
#define HT_BACKGROUND_H

#include "hugetext.h"

/*
 * Starts the thread that runs ht_remap(@opt); @opt must outlive it.
 * Returns 0 once the thread runs with a descriptor table of its own, or -1
 * when the move must be done by the caller now (see background.c).
 */
int ht_background_start(const struct ht_options *opt);

/*
 * Makes @opt's deferred copies (ht_options.copy auto) go to this file's
 * thread: sets ht_defer_copy.  @opt must outlive the process's runs.
 */
void ht_background_defer_init(const struct ht_options *opt);

/*
 * After a run that deferred copies, and when the program starts a thread
 * of its own: starts the thread that waits until they pay and then moves
 * them (with copy_hot, what runs of them, and later what turns hot of the
 * rest), unless one is waiting already.  In a process that has had no
 * thread yet it starts none, unless the wait was set (copy_after_ms): the
 * copies stay queued for the program's first thread, or for fork(), which
 * makes them at once (ht_background_before_fork).  Under a seccomp
 * filter it starts one only when @after_program_thread says that the
 * caller's thread has just made a thread of the program's own (the
 * preload's pthread_create()); otherwise the copies stay queued.  Called
 * without ht_lock.  Returns 0, or -1 when no thread could be made (the
 * segments then stay where they are).
 */
int ht_background_kick(int after_program_thread);

/*
 * Called by the preload's fork() before the real one: a deferred copy is
 * made now, in the caller, whole (copy_hot or not), so that the child
 * inherits it (background.c).  Nothing when no copy waits.  Keeps errno.
 */
void ht_background_before_fork(void);

/*
 * Ends the deferred copy (the program needs to be single-threaded): now
 * if the thread waits, after its copy if it is copying.
 */
void ht_background_cancel(void);

/* True while this process's background thread exists (not yet reaped). */
int ht_background_alive(void);

/*
 * True while this process's background thread exists, or when its work
 * ended less than @ms ago: the kernel lets go of an ended thread in steps,
 * and a call that needs a single thread may see it counted after
 * ht_background_alive() no longer finds it.
 */
int ht_background_recent(unsigned ms);

/* Waits up to @ms for the background move to finish; returns at once if none. */
void ht_background_wait(unsigned ms);

#endif
