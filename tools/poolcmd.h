/* SPDX-License-Identifier: MIT */
/* The pieces of `hugetext pool` worth testing alone: pure functions. */
#ifndef HTE_POOLCMD_H
#define HTE_POOLCMD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The bracketed choice of a THP setting file ("always [madvise] never"),
 * copied to @out.  Returns: 0, or -1 when there is none.
 */
int hte_thp_choice(const char *buf, char *out, size_t len);

/* The page size, in kB, of a "hugepages-2048kB" directory name; 0 if not one. */
uint64_t hte_pool_dir_kb(const char *name);

/* What a file of the shared text cache is, from its name. */
enum hte_cache_kind {
	HTE_CACHE_OTHER = 0, /* not the cache's: never touched */
	HTE_CACHE_ENTRY,     /* NAME.text: a complete copy of some code */
	HTE_CACHE_FILL,      /* NAME.text.tmp.PID[...]: a fill, or a fill's private link */
};

enum hte_cache_kind hte_cache_classify(const char *name);

/* The PID that made a fill file, from its name; -1 when it has none. */
long hte_cache_fill_pid(const char *name);

/*
 * Whether a fill may be removed: its process is gone.  @alive answers
 * for a PID (kill(pid, 0) in the tool).  A fill without a PID in its
 * name is stale once @age_s reaches an hour.
 */
int hte_cache_fill_stale(const char *name, double age_s, int (*alive)(long pid));

#ifdef __cplusplus
}
#endif

#endif
