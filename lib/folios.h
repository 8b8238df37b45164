/* SPDX-License-Identifier: MIT */
/*
 * 64 KiB folios: the middle path for a copy where no 2 MiB page can be
 * had.  Kernels from 6.8 can back anonymous memory with folios of other
 * sizes than the PMD's ("multi-size THP"), each size switched on its own
 * under /sys/kernel/mm/transparent_hugepage/hugepages-SIZE/.  arm64 (from
 * 6.9) maps a 64 KiB folio with the contiguous bit: one TLB entry for 16
 * pages.  x86-64 has no such bit, so there the mode is offered (for tests
 * and the curious) but never taken as a fallback (HT_ARCH_FOLIO_FALLBACK).
 *
 * Contract:
 * - The copy's mode is HT_MODE_FOLIOS: anonymous memory 2 MiB-aligned
 *   with MADV_HUGEPAGE, filled as a THP copy is; no MADV_COLLAPSE (it
 *   would ignore the sizes' settings).  The kernel gives the largest size
 *   it allows, so a 2 MiB page where one can be had is taken too.
 * - Asked only when the 64 KiB size is on (always, madvise, or inherit
 *   with THP itself on); otherwise the region fails HT_E_FOLIOS_OFF
 *   before anything is spent.
 * - What the copy got: a process cannot see its own 64 KiB folios without
 *   privileges (smaps and PAGEMAP_SCAN count PMD pages only, pagemap hides
 *   frames, kpageflags is root's).  So the copy's 64 KiB folios are
 *   counted from the size's machine-wide counters read around the fill:
 *   each of the copy's faults either allocates a 64 KiB folio or counts a
 *   fallback, so (chunks - fallbacks), capped by the allocations, is a
 *   lower bound.  Another process's fallback in the same window lowers
 *   it; never raises it.  A copy with no huge byte by that count is
 *   dropped (HT_E_NO_HUGE), as a THP copy on 4 KiB pages is.
 */
#ifndef HT_FOLIOS_H
#define HT_FOLIOS_H

#include <stddef.h>
#include <stdint.h>

#define HT_FOLIO_SIZE (64UL * 1024)

/* One size's fault counters (hugepages-SIZE/stats); ok is 0 when unread. */
struct ht_folio_stats {
	uint64_t alloc, fallback;
	int ok;
};

/*
 * Pure: whether a size is on, from its "enabled" file (@size, "always
 * [inherit] madvise never"; NULL when the file is missing) and THP's
 * own (@top).  @missing is the answer when the size has no file (kernels
 * before 6.8: the PMD size follows THP's setting, other sizes do not
 * exist).  Returns 1 or 0.
 */
int ht_thp_size_setting(const char *size, const char *top, int missing);

/*
 * Pure: the bytes of @len (the copy's bytes not on PMD pages) that are
 * on 64 KiB folios at least, from the counters before and after the fill.
 */
size_t ht_folio_bytes(size_t len, const struct ht_folio_stats *before,
		      const struct ht_folio_stats *after);

/* Whether the 2 MiB size is allowed (its own setting, else THP's): 1, 0, or a negative errno. */
int ht_thp_pmd_on(void);

/* Whether 64 KiB folios are on: 1, 0 (also when the kernel has none), or a negative errno. */
int ht_folios_available(void);

/* The 64 KiB size's counters into @s (s->ok 0 when they cannot be read). */
void ht_folio_stats_read(struct ht_folio_stats *s);

#endif
