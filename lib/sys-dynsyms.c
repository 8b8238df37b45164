/* SPDX-License-Identifier: MIT */
/*
 * An object's dynamic symbol tables, read where the loader mapped them:
 * how sys.c finds glibc's own functions without a call by name.
 */
#include "sys.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

/*
 * Where an object's dynamic symbol tables are.  glibc rewrites the
 * addresses in a library's own .dynamic to absolute ones (not where that
 * section is read-only): a value inside the object is taken as is, any
 * other is relative to the load bias.
 */
static const void *dyn_ptr(ElfW(Addr) v, uintptr_t base, uintptr_t lo, uintptr_t hi)
{
	return (const void *)(v >= lo && v < hi ? v : v + base);
}

struct found_object {
	const char *want;         /* the file name to find, e.g. "libc.so.6" */
	char *path;
	size_t path_len;
	struct ht_dynsyms *syms;
	int ok;
};

static void read_dynamic(const struct dl_phdr_info *info, struct ht_dynsyms *d)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	const ElfW(Dyn) *dyn = NULL;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_LOAD && info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	memset(d, 0, sizeof(*d));
	d->base = info->dlpi_addr;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		const void *p = dyn_ptr(dyn->d_un.d_ptr, info->dlpi_addr, lo, hi);

		if (dyn->d_tag == DT_GNU_HASH)
			d->gnu_hash = p;
		else if (dyn->d_tag == DT_SYMTAB)
			d->symtab = p;
		else if (dyn->d_tag == DT_STRTAB)
			d->strtab = p;
		else if (dyn->d_tag == DT_VERSYM)
			d->versym = p;
	}
}

static int find_object_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct found_object *f = ctx;
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	if (!slash || strcmp(slash + 1, f->want) != 0 || strlen(info->dlpi_name) >= f->path_len)
		return 0;
	strcpy(f->path, info->dlpi_name);
	read_dynamic(info, f->syms);
	f->ok = f->syms->gnu_hash && f->syms->symtab && f->syms->strtab;
	return 1;
}

int ht_dynsyms_find(const char *file, struct ht_dynsyms *syms, char *path, size_t len)
{
	struct found_object f = { file, path, len, syms, 0 };

	/* dl_iterate_phdr() lists the namespace of its caller: ours. */
	dl_iterate_phdr(find_object_cb, &f);
	return f.ok;
}

struct first_definer {
	const char *name;
	char *path;
	size_t path_len;
	int found;
};

/*
 * The kernel's vDSO defines no allocator; arm64's has a SysV hash table
 * only (no DT_GNU_HASH), which must not count as an object we cannot read.
 * glibc names it by its soname alone; every object loaded from a file is
 * named by its path (the program: "").
 */
static int is_vdso(const struct dl_phdr_info *info)
{
	return info->dlpi_name && strcmp(info->dlpi_name, "linux-vdso.so.1") == 0;
}

static int first_definer_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct first_definer *f = ctx;
	struct ht_dynsyms syms;
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	(void)size;
	if (is_vdso(info))
		return 0;
	read_dynamic(info, &syms);
	if (!syms.symtab || !syms.strtab)
		return 0; /* no dynamic symbols (the vDSO may lack some): defines nothing */
	if (!syms.gnu_hash) {
		f->found = -1;
		return 1;
	}
	if (!ht_dynsym_lookup(&syms, f->name))
		return 0;
	snprintf(f->path, f->path_len, "%s", name);
	f->found = 1;
	return 1;
}

int ht_dynsyms_first_definer(const char *name, char *path, size_t len)
{
	struct first_definer f = { name, path, len, 0 };

	if (len)
		path[0] = '\0';
	dl_iterate_phdr(first_definer_cb, &f);
	return f.found;
}

/* The GNU hash of a symbol name (the ELF gABI extension glibc uses). */
static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static void *lookup(const struct ht_dynsyms *d, const char *name, unsigned type)
{
	const uint32_t *ht = d->gnu_hash;
	uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2];
	const uint32_t *buckets = ht + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t h = gnu_hash(name);

	if (!nbuckets)
		return NULL;
	for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
		const ElfW(Sym) *s = (const ElfW(Sym) *)d->symtab + i;
		uint32_t ch = chain[i - symoffset];

		/* A definition of @type of the default version ("@@"), not a hidden compat one. */
		if ((ch | 1) == (h | 1) && strcmp(d->strtab + s->st_name, name) == 0 &&
		    s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) == type &&
		    (!d->versym || !(d->versym[i] & 0x8000)))
			return (void *)(d->base + s->st_value);
		if (ch & 1)
			break;
	}
	return NULL;
}

void *ht_dynsym_lookup(const struct ht_dynsyms *d, const char *name)
{
	return lookup(d, name, STT_FUNC);
}

void *ht_dynsym_lookup_object(const struct ht_dynsyms *d, const char *name)
{
	return lookup(d, name, STT_OBJECT);
}
