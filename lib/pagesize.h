/* SPDX-License-Identifier: MIT */
/*
 * The running kernel's page sizes, and whether the library's 2 MiB moves
 * can be made on them.  The library moves 2 MiB pages only: what a PMD
 * maps on every kernel with 4 KiB pages (x86-64, Debian's arm64).  arm64
 * kernels with 16 KiB or 64 KiB pages map 32 MiB or 512 MiB with a PMD:
 * there every region is skipped, saying why, rather than moved onto pages
 * of another size or onto none.
 */
#ifndef HT_PAGESIZE_H
#define HT_PAGESIZE_H

#include "hugetext.h"

#include <stddef.h>
#include <stdint.h>

/* What the kernel says, read once (ht_page_facts_read()). */
struct ht_page_facts {
	uint64_t base;  /* the base page size (AT_PAGESZ); 0 when unknown */
	uint64_t pmd;   /* what a PMD maps (THP's hpage_pmd_size); 0 when the kernel has no THP */
	int hugetlb_2m; /* 1 when the kernel has 2 MiB hugetlb pages (hugepages-2048kB), 0 not, -1 not asked */
};

/*
 * Pure: what a PMD maps, from the facts.  A kernel without THP has no
 * hpage_pmd_size; with 4 KiB pages its PMD still maps 2 MiB on the
 * processors the library knows (x86-64, arm64).  0 when unknown.
 */
uint64_t ht_pmd_size(const struct ht_page_facts *f);

/*
 * Pure: whether a region may be moved in @mode with these facts.
 * HT_E_NONE; HT_E_KERNEL_PAGES when no PMD maps 2 MiB (the region is
 * skipped, whatever the mode); HT_E_NOT_SUPPORTED for explicit pages
 * when the kernel has no 2 MiB hugetlb size (the region fails, as when
 * the pool cannot be read).
 */
enum ht_error ht_pages_check(const struct ht_page_facts *f, enum ht_mode mode);

/*
 * Pure: the report's text for HT_E_KERNEL_PAGES, with the sizes ("this
 * kernel's pages are 64 KiB and a PMD maps 512 MiB; ...") into @buf.
 * Returns: the length, or -ENOSPC when @buf is too small.
 */
int ht_pages_reason(const struct ht_page_facts *f, char *buf, size_t len);

/*
 * The kernel's page sizes into @f: read the first time a region is about
 * to be moved, then kept for the process.  With 4 KiB pages on x86-64 and
 * arm64 that reads nothing (the auxiliary vector, arch.h); otherwise one
 * sysfs file.  hugetlb_2m is -1: ht_pages_usable() asks for explicit pages.
 */
void ht_page_facts_read(struct ht_page_facts *f);

/* The check of ht_pages_check() on this kernel's facts (for explicit pages, one directory lookup). */
enum ht_error ht_pages_usable(enum ht_mode mode);

/* HT_E_KERNEL_PAGES's text with this kernel's sizes, or NULL before they are read. */
const char *ht_pages_reason_text(void);

/* Tests only: use @f instead of the kernel's facts (NULL: read them again). */
void ht_page_facts_set(const struct ht_page_facts *f);

#endif
