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
 * file's byte order.  *@first and *@end receive the smallest range of
 * @table that changed (both 0 when nothing did).
 *
 * Returns: the number of entries changed, or -1 when @len is not the
 * table's size.
 */
long hte_edit_table(const struct hte_elf *e, unsigned opts, unsigned char *table,
		    size_t len, size_t *first, size_t *end);

/* Bytes of a p_flags field at @p in the given byte order. */
uint32_t hte_get32(const unsigned char *p, int msb);
void hte_put32(unsigned char *p, uint32_t v, int msb);

#ifdef __cplusplus
}
#endif

#endif
