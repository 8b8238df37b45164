/* SPDX-License-Identifier: MIT */
/*
 * The explicit (hugetlb) pool and hugetlbfs mounts: pure parsers of the
 * kernel's text, and the probes that read it.
 */
#ifndef HT_POOL_H
#define HT_POOL_H

#include <stddef.h>
#include <stdint.h>

/* hugetlbfs's statfs magic. */
#define HT_HUGETLBFS_MAGIC 0x958458f6

/* "Hugepagesize:    2048 kB" from /proc/meminfo, in kB; 0 when absent. */
uint64_t ht_parse_meminfo_hugepagesize(const char *buf, size_t len);

/* A decimal count such as the sysfs pool files hold; -EINVAL otherwise. */
int ht_parse_count(const char *buf, size_t len, uint64_t *out);

/*
 * Finds the first hugetlbfs mount in /proc/self/mounts text whose page
 * size is @page_kb (a mount without pagesize= has the default size,
 * @default_kb).  Copies its mount point (octal escapes decoded) to @dir.
 * Returns: 0, -ENOENT when there is none, -ENAMETOOLONG.
 */
int ht_find_hugetlbfs(const char *buf, size_t len, uint64_t page_kb,
		      uint64_t default_kb, char *dir, size_t dirlen);

/* Pages of 2 MiB free for a new mapping: free minus reserved; <0 on error. */
long ht_pool_available_2m(void);

/* The default huge page size in kB, or a negative errno. */
long ht_default_hugepage_kb(void);



/*
 * The memory cgroup's path from /proc/self/cgroup text: the v1 line whose
 * controllers include "memory" (hybrid layouts), else the v2 "0::" line.
 * *@v1 says which.  Returns: 0, -ENOENT, -ENAMETOOLONG.
 */
int ht_parse_memcg_path(const char *buf, size_t len, char *out, size_t outlen, int *v1);

/* memory.max (or v1 limit) text: a number, or "max" (UINT64_MAX); -EINVAL otherwise. */
int ht_parse_memory_max(const char *buf, size_t len, uint64_t *out);

/* A "key value" field of memory.stat text; 0 when absent. */
uint64_t ht_memory_stat_field(const char *buf, size_t len, const char *key);

/*
 * Bytes this process may still charge to its memory cgroup and every
 * ancestor's limit: limit - usage + inactive file cache (reclaimable),
 * the smallest over the levels (cgroup v1 or v2).  UINT64_MAX when nothing
 * limits it or the files cannot be read.
 */
uint64_t ht_memcg_room(void);
#endif
