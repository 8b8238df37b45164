/* SPDX-License-Identifier: MIT */
/*
 * Pure parsers for /proc/PID/maps and /proc/PID/smaps text.  They take a
 * buffer and its length, trust nothing in it, and never read past the end.
 */
#ifndef HT_MAPS_H
#define HT_MAPS_H

#include <stddef.h>
#include <stdint.h>

struct ht_map {
	uintptr_t start, end;   /* end exclusive */
	char perms[5];          /* "r-xp" and the like, NUL-terminated */
	uint64_t offset;
	unsigned dev_major, dev_minor;
	uint64_t inode;
	const char *path;       /* into the buffer, not NUL-terminated; may be empty */
	size_t path_len;
};

/* One VMA of smaps: its header and the huge page counters, in bytes. */
struct ht_smap {
	struct ht_map map;
	uint64_t anon_huge;     /* AnonHugePages */
	uint64_t file_pmd;      /* FilePmdMapped */
	uint64_t shmem_pmd;     /* ShmemPmdMapped */
	uint64_t hugetlb;       /* Shared_Hugetlb + Private_Hugetlb */
	uint64_t anonymous;     /* Anonymous: pages written since mapped (COW) */
	uint64_t rss;
	unsigned kernel_page_kb;/* KernelPageSize */
};

/*
 * Parses one maps line (without its newline).
 * Returns: 0, or -EINVAL when the line is not a maps header line.
 */
int ht_maps_parse_line(const char *line, size_t len, struct ht_map *m);

/*
 * Iterates over the header lines of a maps or smaps buffer.  *@pos starts
 * at 0.  Lines that are not headers (smaps fields) are skipped.
 * Returns: 1 with *@m filled, 0 at the end.
 */
int ht_maps_next(const char *buf, size_t len, size_t *pos, struct ht_map *m);

/*
 * Iterates over the VMAs of an smaps buffer, filling the counters.
 * Returns: 1 with *@s filled, 0 at the end.
 */
int ht_smaps_next(const char *buf, size_t len, size_t *pos, struct ht_smap *s);

/* Bytes of an smaps entry that sit on huge pages of any kind. */
uint64_t ht_smap_huge_bytes(const struct ht_smap *s);

/*
 * Bytes of [@start, @end) that smaps shows on huge pages.  A VMA that
 * sticks out of the range counts only for what must lie inside it, so the
 * answer is a lower bound, never a guess.
 */
uint64_t ht_smaps_huge_in(const char *buf, size_t len, uintptr_t start, uintptr_t end);

/* True when the path of @m equals the NUL-terminated @path. */
int ht_map_path_is(const struct ht_map *m, const char *path);



/*
 * True when no page of a private file mapping was written: every entry of
 * /proc/self/pagemap is either absent or a page-cache page (bit 61), and
 * none is swapped (bit 62, only anonymous pages swap).
 */
int ht_pagemap_clean(const uint64_t *entries, size_t n);
/* True when the page of this pagemap entry was written (anonymous or swapped). */
int ht_pagemap_written(uint64_t entry);
#endif
