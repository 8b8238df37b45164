/* SPDX-License-Identifier: MIT */
/* Function symbols from a checked ELF image (see symbols.h). */
#include "symbols.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

static int by_addr(const void *a, const void *b)
{
	const struct hte_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The first section of @type, or NULL. */
static Elf_Scn *find_table(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

static int is_function(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF;
}

static int add(struct hte_symtab *t, size_t *cap, const GElf_Sym *s, const char *name)
{
	if (t->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct hte_sym *p = realloc(t->syms, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->syms = p;
		*cap = ncap;
	}
	t->syms[t->n].name = strdup(name);
	if (!t->syms[t->n].name)
		return -ENOMEM;
	t->syms[t->n].addr = s->st_value;
	t->syms[t->n].size = s->st_size;
	t->n++;
	return 0;
}

static int collect(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t lo, uint64_t hi,
		   struct hte_symtab *t)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t cap = 0, count, entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	GElf_Sym sym;

	if (!data || !entsize)
		return -EINVAL;
	count = data->d_size / entsize;
	/* gelf_getsym() takes an int index. */
	if (count > 0x7fffffff)
		return -EINVAL;
	for (size_t i = 1; i < count; i++) {
		const char *name;
		int err;

		if (!gelf_getsym(data, (int)i, &sym) || !is_function(&sym))
			continue;
		if (sym.st_value < lo || sym.st_value >= hi)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		err = add(t, &cap, &sym, name && *name ? name : "?");
		if (err < 0)
			return err;
	}
	return 0;
}

int hte_functions_in(const void *buf, size_t len, uint64_t lo, uint64_t hi, struct hte_symtab *out)
{
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_memory((char *)(uintptr_t)buf, len);
	if (!elf)
		return -EINVAL;
	out->source = ".symtab";
	scn = find_table(elf, SHT_SYMTAB, &sh);
	if (!scn) {
		out->source = ".dynsym";
		scn = find_table(elf, SHT_DYNSYM, &sh);
	}
	err = scn ? collect(elf, scn, &sh, lo, hi, out) : -ENOENT;
	elf_end(elf);
	if (err < 0) {
		hte_symtab_release(out);
		return err;
	}
	if (out->n)
		qsort(out->syms, out->n, sizeof(out->syms[0]), by_addr);
	return 0;
}

void hte_symtab_release(struct hte_symtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->syms[i].name);
	free(t->syms);
	t->syms = NULL;
	t->n = 0;
}

#ifndef HTE_HAVE_SYMBOLS
/* Without the C++ demangler (meson -Dsymbols=disabled), names stay mangled. */
char *hte_demangle(const char *name)
{
	(void)name;
	return NULL;
}
#endif
