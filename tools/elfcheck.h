/* SPDX-License-Identifier: MIT */
/*
 * Pure checks and edits of ELF program headers, over a buffer that holds
 * the whole file.  Nothing here does I/O or prints, so unit tests and the
 * fuzzer call it directly:
 *
 *	struct hte_elf e;
 *	if (hte_check_buffer(buf, len, &e) == HTE_OK) { ... }
 *	hte_elf_release(&e);
 *
 * hte_check_buffer() accepts any bytes: it either fills @e with the
 * program headers, checked against the buffer's length, or refuses with a
 * reason.  It never writes to the buffer.
 */
#ifndef HTE_ELFCHECK_H
#define HTE_ELFCHECK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libhugetlbfs's p_flags bit, the one hugeedit sets. */
#define HTE_PF_HUGETLB 0x00100000u

/* Why a file is refused.  hte_error_str() gives a short text for each. */
enum hte_error {
	HTE_OK = 0,
	HTE_E_NOT_ELF,    /* no ELF magic */
	HTE_E_CLASS,      /* EI_CLASS is neither 32- nor 64-bit */
	HTE_E_BYTE_ORDER, /* EI_DATA is neither little- nor big-endian */
	HTE_E_VERSION,    /* the ELF version is not 1 */
	HTE_E_TRUNCATED,  /* the file ends before data its headers describe */
	HTE_E_OUTSIDE,    /* a header table lies (partly) outside the file */
	HTE_E_BAD_HEADER, /* a header field is impossible */
	HTE_E_LIBELF,     /* libelf refused the file */
	HTE_E_NOMEM,
	HTE_E__COUNT
};

/* One program header, in host byte order. */
struct hte_seg {
	unsigned index;    /* position in the program header table */
	uint32_t type;     /* p_type */
	uint32_t flags;    /* p_flags */
	uint64_t offset, vaddr, filesz, memsz, align;
	uint64_t flags_at; /* file offset of this entry's p_flags field */
	uint64_t align_at; /* file offset of this entry's p_align field */
};

struct hte_elf {
	int elfclass;      /* 32 or 64 */
	int msb;           /* 1 for big-endian files */
	unsigned type;     /* e_type */
	unsigned machine;  /* e_machine */
	uint64_t phoff;    /* program header table: offset, entry size, count */
	size_t phentsize, phnum;
	size_t nload;      /* PT_LOAD entries in load[], in table order */
	struct hte_seg *load;
	enum hte_error error;
	char why[200];     /* when refused: the reason, for a message */
};

/**
 * hte_check_buffer - validate an ELF image and read its loadable segments.
 * @buf: the whole file; may be NULL when @len is 0.  Never written.
 * @len: its length.
 * @e: receives the result; call hte_elf_release() afterwards in any case.
 *
 * Checks: magic, class, byte order, version, the header sizes, that the
 * program and section header tables lie inside the buffer, and that each
 * PT_LOAD's file bytes lie inside it with p_filesz <= p_memsz and no
 * address wrap.  libelf reads the headers.
 *
 * Returns: HTE_OK, or the reason for the refusal (also in e->error, with a
 * human text in e->why).
 */
enum hte_error hte_check_buffer(const void *buf, size_t len, struct hte_elf *e);

/* Frees what hte_check_buffer() allocated; @e may be released twice. */
void hte_elf_release(struct hte_elf *e);

/* Returns: a static text for @err, "unknown" out of range. */
const char *hte_error_str(enum hte_error err);

/* --- edit: libhugetlbfs's choice of segments --- */

enum hte_edit {
	HTE_EDIT_TEXT = 1,    /* text segments default to huge pages */
	HTE_EDIT_DATA = 2,    /* data segments default to huge pages */
	HTE_EDIT_DISABLE = 4, /* no segment defaults to huge pages */
	HTE_EDIT_ALIGN = 8,   /* code loads on a 2 MiB boundary (p_align, see below) */
	HTE_EDIT_UNALIGN = 16 /* puts back the p_align HTE_EDIT_ALIGN raised */
};

/*
 * hugeedit's text: readable and executable, not writable, and fully
 * backed by the file (p_filesz == p_memsz).
 */
int hte_seg_is_text(const struct hte_seg *s);
/* hugeedit's data: readable and writable, not executable. */
int hte_seg_is_data(const struct hte_seg *s);

/*
 * The p_flags @s gets for @opts (HTE_EDIT_* bits): with any option the
 * huge page bit is first cleared, then set on the chosen kinds.  @opts 0
 * changes nothing.
 */
uint32_t hte_edit_flags(const struct hte_seg *s, unsigned opts);

/*
 * Applies @opts to the program header table of @e.  @table holds the
 * table's bytes as in the file (e->phnum * e->phentsize bytes from
 * e->phoff); only p_flags fields of PT_LOAD entries change, written in the
 * file's byte order.  With HTE_EDIT_ALIGN or HTE_EDIT_UNALIGN (alone) only
 * p_align fields change, as hte_align_value() says.  *@first and *@end
 * receive the smallest range of @table that changed (both 0 when nothing
 * did).
 *
 * Returns: the number of entries changed, or -1 when @len is not the
 * table's size or, for the alignment, hte_align_check() refuses the file.
 */
long hte_edit_table(const struct hte_elf *e, unsigned opts, unsigned char *table,
		    size_t len, size_t *first, size_t *end);

/* Bytes of a p_flags (32-bit) or p_align (64-bit) field at @p in the given byte order. */
uint32_t hte_get32(const unsigned char *p, int msb);
void hte_put32(unsigned char *p, uint32_t v, int msb);
uint64_t hte_get64(const unsigned char *p, int msb);
void hte_put64(unsigned char *p, uint64_t v, int msb);

/* --- edit --align: a load address that lets the page cache map code huge ---
 *
 * The page cache's 2 MiB folios map with one PMD only where a segment's
 * address agrees with its file offset modulo 2 MiB.  The kernel (PIE
 * programs, 5.10+) and ld.so (glibc 2.35+) load a position-independent file
 * at a multiple of its largest PT_LOAD p_align, so raising one executable
 * segment's p_align to 2 MiB fixes the whole file's base to a 2 MiB
 * boundary; the other segments keep theirs.
 */
#define HTE_ALIGN_HUGE 0x200000ULL

/* What --align does with one PT_LOAD entry. */
enum hte_align_seg {
	HTE_ALIGN_KEEP,       /* not executable: keeps its p_align */
	HTE_ALIGN_RAISE,      /* executable, offset and address agree modulo 2 MiB: p_align becomes 2 MiB */
	HTE_ALIGN_DONE,       /* the same, with p_align already 2 MiB (or a larger power of two) */
	HTE_ALIGN_INCONGRUENT /* executable, offset and address differ modulo 2 MiB: left alone */
};
enum hte_align_seg hte_align_segment(const struct hte_seg *s);

/*
 * Whether --align (or --align --disable) may change @e: a 64-bit
 * position-independent file of a machine with 2 MiB huge pages, whose
 * PT_LOAD entries every loader accepts (offset and address agree modulo
 * 4 KiB; ascending, disjoint addresses), whose first segment starts on a
 * 2 MiB boundary (the loaders align that address), and whose segments
 * share one p_align besides 2 MiB (the value --disable puts back).
 *
 * Returns: 0 with *@orig = that shared p_align (HTE_ALIGN_HUGE when every
 * segment has 2 MiB), or -1 with the reason in @why.
 */
int hte_align_check(const struct hte_elf *e, uint64_t *orig, char *why, size_t len);

/*
 * True when some PT_LOAD of @e already has a power-of-two p_align of at
 * least 2 MiB: the loaders then put the file on a 2 MiB boundary, and
 * --align changes nothing.  (So every 2 MiB that --align writes is one
 * --disable may take back: the round trip is exact.)
 */
int hte_align_loads_huge(const struct hte_elf *e);

/*
 * The p_align load[@i] of @e gets: 2 MiB for HTE_ALIGN_RAISE segments of a
 * file that does not load on a 2 MiB boundary already; with @undo, @orig
 * for executable segments with 2 MiB (when @orig is below it); else its own.
 */
uint64_t hte_align_value(const struct hte_elf *e, size_t i, int undo, uint64_t orig);

#ifdef __cplusplus
}
#endif

#endif
