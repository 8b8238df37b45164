/* SPDX-License-Identifier: MIT */
/*
 * How much of a file's code can go onto 2 MiB pages at run time: the same
 * rule as the library's planner (lib/plan.h), applied to the program
 * headers instead of /proc/self/maps.  Pure functions over hte_seg arrays.
 */
#ifndef HTE_COVER_H
#define HTE_COVER_H

#include <stddef.h>
#include <stdint.h>

#include "elfcheck.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HTE_HUGE (2ULL * 1024 * 1024)
#define HTE_PAGE 4096ULL

/* The relink that puts every segment on its own 2 MiB boundaries. */
#define HTE_RELINK_FLAGS "-Wl,-zmax-page-size=0x200000 -Wl,-zcommon-page-size=0x200000"

struct hte_cover {
	uint64_t bytes;      /* the segment's size in memory (p_memsz) */
	uint64_t covered;    /* bytes of it that can go onto huge pages, guaranteed */
	uint64_t best;       /* the same for the most favourable load address */
	uint64_t span_start; /* the guaranteed span, as file addresses (vaddr); */
	uint64_t span_end;   /* both 0 when no huge page fits */
	int exact;           /* the load address modulo 2 MiB is known */
	/*
	 * With the cover-ends setting (HUGETEXT_COVER_ENDS=1): the same for
	 * the worst and best load address, and for a load address on a 2 MiB
	 * boundary (hugetext edit --align, or ET_EXEC's own address).
	 */
	uint64_t ends_covered, ends_best, ends_aligned;
};

/*
 * The alignment of the load address of a file, modulo 2 MiB.
 * @type: e_type; ET_EXEC loads at its own addresses (returns HTE_HUGE).
 *
 * A position-independent file loads at a multiple of its largest
 * power-of-two p_align (and of the page size), which the kernel and ld.so
 * both honour.
 */
uint64_t hte_load_alignment(unsigned type, const struct hte_seg *segs, size_t n);

/*
 * Coverage of segment @i of @segs (the file's PT_LOAD entries).  The span
 * is the 2 MiB-aligned inside of the segment, plus its last huge page when
 * no other segment starts before that page's end.  When the load address
 * is only known modulo @align (< 2 MiB), every possible placement is tried
 * and the worst one is reported as covered, the best as best.
 *
 * Returns: 0, or -EINVAL for an empty or wrapping segment.
 */
int hte_cover_segment(const struct hte_seg *segs, size_t n, size_t i, uint64_t align,
		      struct hte_cover *out);

/* True when @s is a loadable segment the library would consider (PF_X). */
int hte_seg_is_code(const struct hte_seg *s);

/* The coverage of every executable segment of a file, and the sums. */
struct hte_file_cover {
	size_t n;                     /* executable segments */
	const struct hte_seg **segs;  /* into the hte_elf */
	struct hte_cover *cov;        /* one per segment */
	uint64_t align;               /* the load address's known alignment */
	uint64_t bytes, covered, best;
	uint64_t ends_covered, ends_best, ends_aligned; /* hte_cover's, summed */
	int exact;
};

/*
 * Fills @c for the checked file @e (ET_EXEC or ET_DYN).
 * Returns: 0; -ENOENT when no segment is executable; -ENOMEM.
 */
int hte_file_cover(const struct hte_elf *e, struct hte_file_cover *c);
void hte_file_cover_release(struct hte_file_cover *c);

#ifdef __cplusplus
}
#endif

#endif
