/* SPDX-License-Identifier: MIT */
/*
 * After the move, code is anonymous memory, so a perf attached later
 * (perf record -p PID) no longer finds its symbols in the file.  perf reads
 * /tmp/perf-PID.map for such memory; this writes one line per function of
 * each moved span.  Symbols come from the object's file through libelf,
 * which is loaded with dlopen() only when asked, so the library itself
 * keeps depending on libc alone.
 */
#ifndef HT_PERFMAP_H
#define HT_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#include "hugetext.h"

/*
 * Appends the functions of @path that lie in [@start, @end) to
 * /tmp/perf-<pid>.map; @bias is the object's load bias.
 * Returns: the number of lines written, or a negative errno
 * (-ENOSYS when libelf.so.1 cannot be loaded).
 */
int ht_perf_map_write(const char *path, uintptr_t bias, uintptr_t start, uintptr_t end);

/* Formats one perf map line; returns its length or -ENOSPC. */
int ht_perf_map_line(char *buf, size_t len, uintptr_t addr, uint64_t size, const char *name);

#endif
