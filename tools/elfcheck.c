/* SPDX-License-Identifier: MIT */
/* ELF header checks and p_flags edits over a buffer (see elfcheck.h). */
#include "elfcheck.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const error_text[HTE_E__COUNT] = {
	[HTE_OK] = "ok",
	[HTE_E_NOT_ELF] = "not an ELF file",
	[HTE_E_CLASS] = "unsupported ELF class",
	[HTE_E_BYTE_ORDER] = "unsupported byte order",
	[HTE_E_VERSION] = "unsupported ELF version",
	[HTE_E_TRUNCATED] = "truncated file",
	[HTE_E_OUTSIDE] = "headers point outside the file",
	[HTE_E_BAD_HEADER] = "invalid header",
	[HTE_E_LIBELF] = "libelf cannot read the file",
	[HTE_E_NOMEM] = "out of memory",
};

const char *hte_error_str(enum hte_error err)
{
	if ((unsigned)err >= HTE_E__COUNT)
		return "unknown";
	return error_text[err];
}

static enum hte_error refuse(struct hte_elf *e, enum hte_error err, const char *fmt, ...)
{
	va_list ap;

	e->error = err;
	va_start(ap, fmt);
	vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
	return err;
}

/* True when [off, off + count * size) fits in @len bytes, without overflow. */
static int table_inside(uint64_t off, uint64_t count, uint64_t size, size_t len)
{
	if (off > len)
		return 0;
	if (size && count > (len - off) / size)
		return 0;
	return 1;
}

/* The identification bytes, checked before libelf sees the image. */
static enum hte_error check_ident(const unsigned char *b, size_t len, struct hte_elf *e)
{
	size_t ehsize;

	if (len < SELFMAG || memcmp(b, ELFMAG, SELFMAG) != 0)
		return refuse(e, HTE_E_NOT_ELF, "not an ELF file (no ELF magic)");
	if (len < EI_NIDENT)
		return refuse(e, HTE_E_TRUNCATED, "truncated: %zu bytes, not even the ELF identification", len);
	if (b[EI_CLASS] != ELFCLASS32 && b[EI_CLASS] != ELFCLASS64)
		return refuse(e, HTE_E_CLASS, "unsupported ELF class %u (neither 32- nor 64-bit)", b[EI_CLASS]);
	if (b[EI_DATA] != ELFDATA2LSB && b[EI_DATA] != ELFDATA2MSB)
		return refuse(e, HTE_E_BYTE_ORDER, "unsupported byte order %u (neither little- nor big-endian)",
			      b[EI_DATA]);
	if (b[EI_VERSION] != EV_CURRENT)
		return refuse(e, HTE_E_VERSION, "unsupported ELF version %u", b[EI_VERSION]);
	e->elfclass = b[EI_CLASS] == ELFCLASS64 ? 64 : 32;
	e->msb = b[EI_DATA] == ELFDATA2MSB;
	ehsize = e->elfclass == 64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (len < ehsize)
		return refuse(e, HTE_E_TRUNCATED, "truncated: %zu bytes, the ELF header needs %zu", len, ehsize);
	return HTE_OK;
}

/*
 * The program header count as the file states it.  elf_getphdrnum() is
 * not used: it quietly shrinks a table that does not fit in the file, and
 * such a file must be refused, not read as having fewer headers.
 */
static int raw_phnum(Elf *elf, const GElf_Ehdr *eh, size_t *n)
{
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (eh->e_phnum != PN_XNUM) {
		*n = eh->e_phnum;
		return 0;
	}
	/* More than 0xfffe entries: the count is in section 0's sh_info. */
	scn = elf_getscn(elf, 0);
	if (!scn || !gelf_getshdr(scn, &sh))
		return -1;
	*n = sh.sh_info;
	return 0;
}

static enum hte_error check_tables(Elf *elf, const GElf_Ehdr *eh, size_t len, struct hte_elf *e)
{
	size_t want = e->elfclass == 64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t shentsize = e->elfclass == 64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t shnum;

	if (eh->e_version != EV_CURRENT)
		return refuse(e, HTE_E_VERSION, "unsupported ELF version %u", (unsigned)eh->e_version);
	if (eh->e_shoff != 0) {
		if (elf_getshdrnum(elf, &shnum) != 0)
			return refuse(e, HTE_E_OUTSIDE, "section header table at offset %#llx: %s",
				      (unsigned long long)eh->e_shoff, elf_errmsg(-1));
		if (shnum && eh->e_shentsize != shentsize)
			return refuse(e, HTE_E_BAD_HEADER, "section header entries of %u bytes, not %zu",
				      (unsigned)eh->e_shentsize, shentsize);
		if (!table_inside(eh->e_shoff, shnum, shentsize, len))
			return refuse(e, HTE_E_OUTSIDE,
				      "section header table (%zu entries at offset %#llx) lies outside the file (%zu bytes)",
				      shnum, (unsigned long long)eh->e_shoff, len);
	}
	if (raw_phnum(elf, eh, &e->phnum) < 0)
		return refuse(e, HTE_E_BAD_HEADER, "program header count unreadable: %s", elf_errmsg(-1));
	e->phoff = eh->e_phoff;
	e->phentsize = eh->e_phentsize;
	if (e->phnum == 0)
		return HTE_OK;
	if (eh->e_phentsize != want)
		return refuse(e, HTE_E_BAD_HEADER, "program header entries of %u bytes, not %zu",
			      (unsigned)eh->e_phentsize, want);
	if (!table_inside(eh->e_phoff, e->phnum, want, len))
		return refuse(e, HTE_E_OUTSIDE,
			      "program header table (%zu entries at offset %#llx) lies outside the file (%zu bytes)",
			      e->phnum, (unsigned long long)eh->e_phoff, len);
	/* gelf_getphdr() takes an int index. */
	if (e->phnum > INT_MAX)
		return refuse(e, HTE_E_BAD_HEADER, "%zu program headers", e->phnum);
	return HTE_OK;
}

static enum hte_error check_load(const GElf_Phdr *ph, unsigned i, size_t len, struct hte_elf *e)
{
	if (ph->p_filesz > ph->p_memsz)
		return refuse(e, HTE_E_BAD_HEADER, "segment %u: file size %#llx exceeds memory size %#llx", i,
			      (unsigned long long)ph->p_filesz, (unsigned long long)ph->p_memsz);
	if (ph->p_memsz > UINT64_MAX - ph->p_vaddr ||
	    (e->elfclass == 32 && ph->p_vaddr + ph->p_memsz > UINT32_MAX + 1ULL))
		return refuse(e, HTE_E_BAD_HEADER, "segment %u: addresses wrap around", i);
	if (!table_inside(ph->p_offset, 1, ph->p_filesz, len))
		return refuse(e, HTE_E_TRUNCATED,
			      "truncated: segment %u needs bytes up to %#llx, the file has %#zx", i,
			      (unsigned long long)ph->p_offset + ph->p_filesz, len);
	return HTE_OK;
}

static enum hte_error read_segments(Elf *elf, size_t len, struct hte_elf *e)
{
	size_t flags_field = e->elfclass == 64 ? offsetof(Elf64_Phdr, p_flags) : offsetof(Elf32_Phdr, p_flags);
	enum hte_error err;
	GElf_Phdr ph;

	e->load = calloc(e->phnum ? e->phnum : 1, sizeof(*e->load));
	if (!e->load)
		return refuse(e, HTE_E_NOMEM, "out of memory for %zu program headers", e->phnum);
	for (size_t i = 0; i < e->phnum; i++) {
		struct hte_seg *s = &e->load[e->nload];

		if (!gelf_getphdr(elf, (int)i, &ph))
			return refuse(e, HTE_E_LIBELF, "program header %zu: %s", i, elf_errmsg(-1));
		if (ph.p_type != PT_LOAD)
			continue;
		err = check_load(&ph, (unsigned)i, len, e);
		if (err != HTE_OK)
			return err;
		s->index = (unsigned)i;
		s->type = ph.p_type;
		s->flags = ph.p_flags;
		s->offset = ph.p_offset;
		s->vaddr = ph.p_vaddr;
		s->filesz = ph.p_filesz;
		s->memsz = ph.p_memsz;
		s->align = ph.p_align;
		s->flags_at = e->phoff + i * e->phentsize + flags_field;
		e->nload++;
	}
	return HTE_OK;
}

enum hte_error hte_check_buffer(const void *buf, size_t len, struct hte_elf *e)
{
	enum hte_error err;
	GElf_Ehdr eh;
	Elf *elf;

	memset(e, 0, sizeof(*e));
	if (!buf)
		len = 0;
	err = check_ident(buf, len, e);
	if (err != HTE_OK)
		return err;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return refuse(e, HTE_E_LIBELF, "libelf: %s", elf_errmsg(-1));
	/* In read mode libelf only reads the image (or copies it to convert). */
	elf = elf_memory((char *)(uintptr_t)buf, len);
	if (!elf)
		return refuse(e, HTE_E_LIBELF, "libelf: %s", elf_errmsg(-1));
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = refuse(e, HTE_E_LIBELF, "libelf: %s", elf_errmsg(-1));
		elf_end(elf);
		return err;
	}
	e->type = eh.e_type;
	e->machine = eh.e_machine;
	err = check_tables(elf, &eh, len, e);
	if (err == HTE_OK)
		err = read_segments(elf, len, e);
	elf_end(elf);
	return err;
}

void hte_elf_release(struct hte_elf *e)
{
	free(e->load);
	e->load = NULL;
	e->nload = 0;
}

int hte_seg_is_text(const struct hte_seg *s)
{
	return (s->flags & (PF_R | PF_W | PF_X)) == (PF_R | PF_X) && s->memsz == s->filesz;
}

int hte_seg_is_data(const struct hte_seg *s)
{
	return (s->flags & (PF_R | PF_W | PF_X)) == (PF_R | PF_W);
}

uint32_t hte_edit_flags(const struct hte_seg *s, unsigned opts)
{
	uint32_t f = s->flags;

	if (!opts)
		return f;
	f &= ~HTE_PF_HUGETLB;
	if (((opts & HTE_EDIT_TEXT) && hte_seg_is_text(s)) || ((opts & HTE_EDIT_DATA) && hte_seg_is_data(s)))
		f |= HTE_PF_HUGETLB;
	return f;
}

uint32_t hte_get32(const unsigned char *p, int msb)
{
	if (msb)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

void hte_put32(unsigned char *p, uint32_t v, int msb)
{
	for (int i = 0; i < 4; i++)
		p[msb ? 3 - i : i] = (unsigned char)(v >> (8 * i));
}

long hte_edit_table(const struct hte_elf *e, unsigned opts, unsigned char *table,
		    size_t len, size_t *first, size_t *end)
{
	long changed = 0;

	*first = *end = 0;
	if (len != e->phnum * e->phentsize)
		return -1;
	for (size_t i = 0; i < e->nload; i++) {
		const struct hte_seg *s = &e->load[i];
		size_t at = (size_t)(s->flags_at - e->phoff);
		uint32_t want = hte_edit_flags(s, opts);

		if (want == hte_get32(table + at, e->msb))
			continue;
		hte_put32(table + at, want, e->msb);
		if (!changed || at < *first)
			*first = at;
		if (at + 4 > *end)
			*end = at + 4;
		changed++;
	}
	return changed;
}
