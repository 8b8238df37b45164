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

/* True while this process's background thread exists (not yet reaped). */
int ht_background_alive(void);

/* Waits up to @ms for the background move to finish; returns at once if none. */
void ht_background_wait(unsigned ms);

#endif
