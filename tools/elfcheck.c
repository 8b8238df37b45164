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
	size_t align_field = e->elfclass == 64 ? offsetof(Elf64_Phdr, p_align) : offsetof(Elf32_Phdr, p_align);
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
		s->align_at = e->phoff + i * e->phentsize + align_field;
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

	opts &= HTE_EDIT_TEXT | HTE_EDIT_DATA | HTE_EDIT_DISABLE;
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

uint64_t hte_get64(const unsigned char *p, int msb)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[msb ? 7 - i : i] << (8 * i);
	return v;
}

void hte_put64(unsigned char *p, uint64_t v, int msb)
{
	for (int i = 0; i < 8; i++)
		p[msb ? 7 - i : i] = (unsigned char)(v >> (8 * i));
}

/* Widens [*first, *end) to cover [at, at + n). */
static void note_change(long changed, size_t at, size_t n, size_t *first, size_t *end)
{
	if (!changed || at < *first)
		*first = at;
	if (at + n > *end)
		*end = at + n;
}

/* --- edit --align --- */

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* p_align values that already put the load address on a 2 MiB boundary. */
static int aligns_huge(uint64_t a)
{
	return is_pow2(a) && a >= HTE_ALIGN_HUGE;
}

enum hte_align_seg hte_align_segment(const struct hte_seg *s)
{
	if (s->type != PT_LOAD || !(s->flags & PF_X))
		return HTE_ALIGN_KEEP;
	if ((s->vaddr - s->offset) % HTE_ALIGN_HUGE != 0)
		return HTE_ALIGN_INCONGRUENT;
	return aligns_huge(s->align) ? HTE_ALIGN_DONE : HTE_ALIGN_RAISE;
}

static int machine_has_2m_pages(unsigned machine)
{
	/* With 4 KiB base pages, a PMD maps 2 MiB on these. */
	return machine == EM_X86_64 || machine == EM_AARCH64 || machine == EM_RISCV;
}

/*
 * Where --disable finds the original p_align.  Only p_align bytes may
 * change, so it cannot be stored anywhere else in the file (p_paddr, a
 * note or padding would be other bytes), and p_align itself must stay a
 * plain power of two for the loaders.  Linkers give every PT_LOAD entry
 * the same p_align (the max-page-size), so --align accepts only files
 * whose segments share one value besides 2 MiB, raises executable ones
 * only, and only when at least one other segment (the data, or the
 * headers' r-- segment) keeps the shared value.  --disable reads it back
 * from those and puts it on the executable segments that have 2 MiB:
 * byte for byte the file as it was.
 */
static int shared_align(const struct hte_elf *e, uint64_t *orig, char *why, size_t len)
{
	uint64_t a = HTE_ALIGN_HUGE;
	int found = 0;

	for (size_t i = 0; i < e->nload; i++) {
		uint64_t v = e->load[i].align;

		if (v == HTE_ALIGN_HUGE || (found && v == a))
			continue;
		if (found) {
			snprintf(why, len, "loadable segments have different p_align (%#llx, %#llx): "
				 "--disable could not tell the original back", (unsigned long long)a,
				 (unsigned long long)v);
			return -1;
		}
		if (v > 1 && !is_pow2(v)) {
			snprintf(why, len, "segment %u: p_align %#llx is not a power of two", e->load[i].index,
				 (unsigned long long)v);
			return -1;
		}
		a = v;
		found = 1;
	}
	*orig = a;
	if (!found)
		return 0;
	for (size_t i = 0; i < e->nload; i++)
		if (e->load[i].align == a && hte_align_segment(&e->load[i]) != HTE_ALIGN_RAISE)
			return 0;
	snprintf(why, len, "every loadable segment would get p_align 2 MiB: --disable could not tell the "
		 "original (%#llx) back", (unsigned long long)a);
	return -1;
}

/* The layout ld.so and the kernel assume; a file breaking it is left alone. */
static int loadable_layout(const struct hte_elf *e, char *why, size_t len)
{
	for (size_t i = 0; i < e->nload; i++) {
		const struct hte_seg *s = &e->load[i], *p = i ? &e->load[i - 1] : NULL;

		if ((s->vaddr - s->offset) % 4096 != 0) {
			snprintf(why, len, "segment %u: offset %#llx and address %#llx differ modulo 4 KiB, "
				 "which no loader accepts", s->index, (unsigned long long)s->offset,
				 (unsigned long long)s->vaddr);
			return -1;
		}
		if (p && s->vaddr < p->vaddr + p->memsz) {
			snprintf(why, len, "segment %u (at %#llx) overlaps or comes before segment %u "
				 "(%#llx-%#llx): loaders need ascending, disjoint segments", s->index,
				 (unsigned long long)s->vaddr, p->index, (unsigned long long)p->vaddr,
				 (unsigned long long)(p->vaddr + p->memsz));
			return -1;
		}
	}
	return 0;
}

int hte_align_check(const struct hte_elf *e, uint64_t *orig, char *why, size_t len)
{
	*orig = 0;
	if (e->elfclass != 64) {
		snprintf(why, len, "ELF%d: --align is for 64-bit files only", e->elfclass);
		return -1;
	}
	if (!machine_has_2m_pages(e->machine)) {
		snprintf(why, len, "machine %u: --align knows 2 MiB huge pages on x86-64, AArch64 and RISC-V only",
			 e->machine);
		return -1;
	}
	if (e->type == ET_EXEC) {
		snprintf(why, len, "an executable at fixed addresses loads where it was linked: p_align "
			 "cannot move it (relink as position-independent, or with -Wl,-zmax-page-size=0x200000)");
		return -1;
	}
	if (e->type != ET_DYN) {
		snprintf(why, len, "not a position-independent executable or shared library");
		return -1;
	}
	if (e->nload == 0) {
		snprintf(why, len, "no loadable segment");
		return -1;
	}
	if (loadable_layout(e, why, len) < 0)
		return -1;
	/*
	 * glibc maps the first segment at a multiple of the largest p_align
	 * and the kernel puts its address there too, so the file's base is a
	 * multiple of 2 MiB only when that segment's address is.
	 */
	if (e->load[0].vaddr % HTE_ALIGN_HUGE != 0) {
		snprintf(why, len, "the first loadable segment starts at %#llx, not on a 2 MiB boundary: "
			 "the loaders align that address, so the code would still not load at its file "
			 "offset modulo 2 MiB", (unsigned long long)e->load[0].vaddr);
		return -1;
	}
	return shared_align(e, orig, why, len);
}

int hte_align_loads_huge(const struct hte_elf *e)
{
	for (size_t i = 0; i < e->nload; i++)
		if (aligns_huge(e->load[i].align))
			return 1;
	return 0;
}

uint64_t hte_align_value(const struct hte_elf *e, size_t i, int undo, uint64_t orig)
{
	const struct hte_seg *s = &e->load[i];
	enum hte_align_seg v = hte_align_segment(s);

	if (!undo)
		return v == HTE_ALIGN_RAISE && !hte_align_loads_huge(e) ? HTE_ALIGN_HUGE : s->align;
	if (v == HTE_ALIGN_DONE && s->align == HTE_ALIGN_HUGE && orig < HTE_ALIGN_HUGE)
		return orig;
	return s->align;
}

static long align_table(const struct hte_elf *e, unsigned opts, unsigned char *table, size_t *first,
			size_t *end)
{
	char why[200];
	uint64_t orig;
	long changed = 0;

	if ((opts & ~(unsigned)(HTE_EDIT_ALIGN | HTE_EDIT_UNALIGN)) != 0 ||
	    hte_align_check(e, &orig, why, sizeof(why)) < 0)
		return -1;
	for (size_t i = 0; i < e->nload; i++) {
		const struct hte_seg *s = &e->load[i];
		size_t at = (size_t)(s->align_at - e->phoff);
		uint64_t want = hte_align_value(e, i, (opts & HTE_EDIT_UNALIGN) != 0, orig);

		if (want == hte_get64(table + at, e->msb))
			continue;
		hte_put64(table + at, want, e->msb);
		note_change(changed, at, 8, first, end);
		changed++;
	}
	return changed;
}

long hte_edit_table(const struct hte_elf *e, unsigned opts, unsigned char *table,
		    size_t len, size_t *first, size_t *end)
{
	long changed = 0;

	*first = *end = 0;
	if (len != e->phnum * e->phentsize)
		return -1;
	if (opts & (HTE_EDIT_ALIGN | HTE_EDIT_UNALIGN))
		return align_table(e, opts, table, first, end);
	for (size_t i = 0; i < e->nload; i++) {
		const struct hte_seg *s = &e->load[i];
		size_t at = (size_t)(s->flags_at - e->phoff);
		uint32_t want = hte_edit_flags(s, opts);

		if (want == hte_get32(table + at, e->msb))
			continue;
		hte_put32(table + at, want, e->msb);
		note_change(changed, at, 4, first, end);
		changed++;
	}
	return changed;
}
