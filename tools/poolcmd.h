/* SPDX-License-Identifier: MIT */
/*
 * The pieces of `hugetext pool` shared by its files (pool.c, hugepages.c,
 * mounts.c, cachedir.c) and by `hugetext setup` and `hugetext status`;
 * the pure functions first.
 */
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

/* --- hugepages.c: the kernel's pools and THP settings --- */

#define HTE_SYS_POOLS "/sys/kernel/mm/hugepages"
#define HTE_SYS_THP "/sys/kernel/mm/transparent_hugepage"
#define HTE_MAX_SIZES 8
/* The library's cache lives on 2 MiB hugetlbfs (lib/cache.c). */
#define HTE_CACHE_PAGE_KB 2048

/* The number in @dir/@file (a sysfs pool file), or a negative errno. */
long hte_read_count(const char *dir, const char *file);
/* The page sizes the kernel has pools for, in kB, ascending. */
size_t hte_pool_sizes(uint64_t *kb, size_t max);
/* The sysfs directory of the pool of @kb pages. */
void hte_pool_dir(uint64_t kb, char *buf, size_t len);
/* The default huge page size in kB; 0 when unknown. */
uint64_t hte_default_kb(void);
/* The page size @arg ("2M"; NULL: the default), checked; 0 or an exit status. */
int hte_pick_size(const char *arg, uint64_t *kb_out);
/*
 * Writes @want to the pool of @kb pages; *@got is the size the kernel then
 * reports (it may give fewer pages, silently), or a negative errno.
 * Returns: 0, or a negative errno from the write.
 */
int hte_pool_resize(uint64_t kb, uint64_t want, long *got);
/* `pool --set`: sizes the pool of @kb pages to @count; an exit status. */
int hte_set_pool(uint64_t kb, const char *count);

/* --- mounts.c: hugetlbfs mounts --- */

/*
 * Calls @fn for each line of /proc/self/mounts (@line, @len bytes, no
 * newline); a nonzero return from @fn stops the walk.
 * Returns: that return, 0, or a negative errno from reading the table.
 */
int hte_each_mount_line(int (*fn)(const char *line, size_t len, void *arg), void *arg);

/*
 * Calls @fn for each hugetlbfs mount of one of the @n page sizes @kb (@def:
 * the default size); a nonzero return from @fn stops the walk and is
 * returned.  Returns: that, 0, or a negative errno.
 */
int hte_each_mount(const uint64_t *kb, size_t n, uint64_t def,
		   int (*fn)(const char *dir, uint64_t kb, void *arg), void *arg);
/* 1: hugetlbfs of @kb pages is mounted at @dir; -1: of another size; 0: neither. */
int hte_mount_state(uint64_t kb, const char *dir);
/*
 * Mounts hugetlbfs of @kb pages at @dir (mode 1777, nosuid, nodev), making
 * the directory if missing: *@made_dir is 1 when made, -1 when making it
 * failed.  Returns: 0, or a negative errno.
 */
int hte_mount_hugetlbfs(uint64_t kb, const char *dir, int *made_dir);
/* `pool --mount`: hugetlbfs of @kb pages at @dir, unless there; an exit status. */
int hte_do_mount(uint64_t kb, const char *dir);

/* --- cachedir.c: the shared text cache --- */

/* `pool --cache-list` and `--cache-clear`: an exit status. */
int hte_cache_cmd(int list, int clear);

#ifdef __cplusplus
}
#endif

#endif
