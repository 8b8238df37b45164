/* SPDX-License-Identifier: MIT */
/*
 * The code footprint, for `hugetext measure`'s estimate without counters:
 * how many distinct 4 KiB and 2 MiB pages of code a program runs, and how
 * many 4 KiB pages it touches in a short window, against the CPU's
 * instruction-TLB sizes and the calibration's cost of a miss.
 *
 * What is measured, in one untimed run of the plain program (measure.c):
 * - the window working set: every few tens of ms, the Referenced bytes of
 *   its code mappings in /proc/PID/smaps, then "1" written to
 *   /proc/PID/clear_refs, so each sample counts the 4 KiB pages of code
 *   touched since the last (all threads: they share the page tables);
 * - the pages run: at its exit (a ptrace exit stop), the present bits of
 *   its code in /proc/PID/pagemap.  Present includes the kernel's
 *   fault-around (64 KiB by default) next to each page run: an upper
 *   bound.
 * The parts here are pure.
 */
#ifndef HTE_FOOTPRINT_H
#define HTE_FOOTPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "calibrate.h"
#include "cpuinfo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An executable mapping of a process: [start, end). */
struct hte_range {
	uint64_t start, end;
};

/*
 * The executable mappings of smaps (or maps) text, the kernel's own
 * ([vdso] and the like) left out: their ranges in @out (at most @max),
 * their bytes and Referenced bytes.  Returns: how many there are (may be
 * more than @max).
 */
size_t hte_smaps_code(const char *buf, size_t len, struct hte_range *out, size_t max,
		      uint64_t *code_bytes, uint64_t *referenced);

/*
 * Distinct 2 MiB pages holding the @n 4 KiB page numbers (address >> 12)
 * of @vpn, which are sorted and distinct.
 */
uint64_t hte_pages_2m(const uint64_t *vpn, size_t n);

struct hte_footprint {
	uint64_t code_bytes;    /* of the executable mappings */
	uint64_t pages_4k;      /* distinct 4 KiB pages of code present at the end */
	uint64_t pages_2m;      /* distinct 2 MiB pages they lie in */
	unsigned windows;       /* samples of the working set */
	double window_ms;       /* their length */
	uint64_t ws_max;        /* most 4 KiB pages of code touched in one window */
	uint64_t ws_median;
	int pages_known;        /* the exit was seen: pages_4k and pages_2m hold */
};

/* Fills the working-set figures from @n samples of Referenced bytes. */
void hte_footprint_windows(struct hte_footprint *f, const uint64_t *referenced, size_t n, double window_ms);

struct hte_estimate {
	double over_4k;         /* working set / the 4 KiB entries: above 1 it cannot all be held */
	double over_2m;         /* 2 MiB pages run / the 2 MiB entries */
	int misses_4k;          /* its code overflows the 4 KiB entries */
	int fits_2m;            /* on 2 MiB pages it would fit their entries */
	char text[768];         /* what that says and what it cannot, in plain words */
};

/*
 * What the footprint says against the iTLB @t (from CPUID) and the
 * calibration @cal (NULL when none).  Pure.
 */
void hte_footprint_estimate(const struct hte_footprint *f, const struct hte_itlb *t,
			    const struct hte_calib *cal, struct hte_estimate *out);

#ifdef __cplusplus
}
#endif

#endif
