/* SPDX-License-Identifier: MIT */
/*
 * hugetext oci-hook: the symbol versions an ELF file defines and needs,
 * read with libelf from a buffer.  The hook reads the preload's own needs
 * (libc.so.6 GLIBC_2.34, ...) at run time and injects only into images
 * whose loader and libc define every one of them, for the same machine.
 */
#include "ocihook.h"

#include <elf.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies the string at @off of string table @strndx; -1 when it is not there or too long. */
static int copy_name(Elf *elf, size_t strndx, size_t off, char *out)
{
	const char *s = elf_strptr(elf, strndx, off);

	if (!s || strlen(s) >= HTE_VER_NAME_MAX)
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int read_verdef(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct hte_elf_versions *v, char *err,
		       size_t errlen)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0;

	if (!d)
		return hte_oci_why(err, errlen, "version definitions unreadable: %s", elf_errmsg(-1));
	for (unsigned i = 0; i < sh->sh_info; i++) {
		GElf_Verdef vd;
		GElf_Verdaux va;

		if (!gelf_getverdef(d, (int)off, &vd))
			return hte_oci_why(err, errlen, "version definition %u unreadable", i);
		if (vd.vd_cnt > 0) {
			if (!gelf_getverdaux(d, (int)(off + vd.vd_aux), &va))
				return hte_oci_why(err, errlen, "version definition %u unreadable", i);
			if (v->ndef == HTE_VER_DEFS_MAX)
				return hte_oci_why(err, errlen, "more than %u version definitions", HTE_VER_DEFS_MAX);
			if (copy_name(elf, sh->sh_link, va.vda_name, v->def[v->ndef]) < 0)
				return hte_oci_why(err, errlen, "version definition %u has no name", i);
			v->ndef++;
		}
		if (vd.vd_next == 0)
			break;
		off += vd.vd_next;
		if (off >= d->d_size)
			return hte_oci_why(err, errlen, "version definition %u points outside its section", i);
	}
	return 0;
}

static int read_vernaux(Elf *elf, Elf_Data *d, size_t off, const GElf_Verneed *vn, size_t strndx,
			struct hte_verneed *need, char *err, size_t errlen)
{
	size_t aoff = off + vn->vn_aux;

	for (unsigned j = 0; j < vn->vn_cnt; j++) {
		GElf_Vernaux va;

		if (!gelf_getvernaux(d, (int)aoff, &va))
			return hte_oci_why(err, errlen, "version need of %s unreadable", need->file);
		if (need->n == HTE_VER_NEEDS_MAX)
			return hte_oci_why(err, errlen, "more than %u versions needed of %s", HTE_VER_NEEDS_MAX,
					   need->file);
		if (copy_name(elf, strndx, va.vna_name, need->name[need->n]) < 0)
			return hte_oci_why(err, errlen, "a version needed of %s has no name", need->file);
		need->n++;
		if (va.vna_next == 0)
			break;
		aoff += va.vna_next;
	}
	return 0;
}

static int read_verneed(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct hte_elf_versions *v, char *err,
			size_t errlen)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0;

	if (!d)
		return hte_oci_why(err, errlen, "version needs unreadable: %s", elf_errmsg(-1));
	for (unsigned i = 0; i < sh->sh_info; i++) {
		GElf_Verneed vn;
		struct hte_verneed *need;

		if (!gelf_getverneed(d, (int)off, &vn))
			return hte_oci_why(err, errlen, "version need %u unreadable", i);
		if (v->nfiles == HTE_VER_FILES_MAX)
			return hte_oci_why(err, errlen, "versions needed of more than %u files", HTE_VER_FILES_MAX);
		need = &v->need[v->nfiles++];
		if (copy_name(elf, sh->sh_link, vn.vn_file, need->file) < 0)
			return hte_oci_why(err, errlen, "version need %u names no file", i);
		if (read_vernaux(elf, d, off, &vn, sh->sh_link, need, err, errlen) < 0)
			return -1;
		if (vn.vn_next == 0)
			break;
		off += vn.vn_next;
		if (off >= d->d_size)
			return hte_oci_why(err, errlen, "version need %u points outside its section", i);
	}
	return 0;
}

/*
 * DT_NEEDED: every library the file needs must be in the image too, a
 * library with no versioned symbols (a sanitizer's runtime) included.
 * Added to the version needs with no version, when not there already.
 */
static int read_needed(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct hte_elf_versions *v, char *err,
		       size_t errlen)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	if (!d)
		return hte_oci_why(err, errlen, "the dynamic section is unreadable: %s", elf_errmsg(-1));
	for (size_t i = 0; i < n; i++) {
		GElf_Dyn dyn;
		char name[HTE_VER_NAME_MAX];
		unsigned k = 0;

		if (!gelf_getdyn(d, (int)i, &dyn))
			break;
		if (dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag != DT_NEEDED)
			continue;
		if (copy_name(elf, sh->sh_link, dyn.d_un.d_val, name) < 0)
			return hte_oci_why(err, errlen, "a needed library has no name");
		while (k < v->nfiles && strcmp(v->need[k].file, name) != 0)
			k++;
		if (k < v->nfiles)
			continue;
		if (v->nfiles == HTE_VER_FILES_MAX)
			return hte_oci_why(err, errlen, "more than %u libraries needed", HTE_VER_FILES_MAX);
		memset(&v->need[v->nfiles], 0, sizeof(v->need[0]));
		memcpy(v->need[v->nfiles++].file, name, strlen(name) + 1);
	}
	return 0;
}

static int read_all(Elf *elf, struct hte_elf_versions *v, char *err, size_t errlen)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return hte_oci_why(err, errlen, "not an ELF file");
	v->elfclass = gelf_getclass(elf) == ELFCLASS64 ? 64 : 32;
	v->msb = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	v->machine = eh.e_machine;
	v->type = eh.e_type;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return hte_oci_why(err, errlen, "a section header is unreadable: %s", elf_errmsg(-1));
		if (sh.sh_type == SHT_GNU_verdef && read_verdef(elf, scn, &sh, v, err, errlen) < 0)
			return -1;
		if (sh.sh_type == SHT_GNU_verneed && read_verneed(elf, scn, &sh, v, err, errlen) < 0)
			return -1;
	}
	/* After the version needs: a library they name keeps its versions. */
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNAMIC && read_needed(elf, scn, &sh, v, err, errlen) < 0)
			return -1;
	}
	return 0;
}

int hte_elf_versions_read(const void *buf, size_t len, struct hte_elf_versions *v, char *err, size_t errlen)
{
	Elf *elf;
	int rc;

	memset(v, 0, sizeof(*v));
	if (err && errlen)
		err[0] = '\0';
	if (!buf || len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return hte_oci_why(err, errlen, "not an ELF file");
	if (elf_version(EV_CURRENT) == EV_NONE)
		return hte_oci_why(err, errlen, "libelf: %s", elf_errmsg(-1));
	/* libelf reads the buffer only (ELF_C_READ_MMAP's in-memory sibling): nothing is written. */
	elf = elf_memory((char *)(uintptr_t)buf, len);
	if (!elf)
		return hte_oci_why(err, errlen, "libelf: %s", elf_errmsg(-1));
	rc = read_all(elf, v, err, errlen);
	elf_end(elf);
	if (rc < 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err && errlen ? err : "");
		memset(v, 0, sizeof(*v));
		if (err && errlen)
			snprintf(err, errlen, "%s", why);
	}
	return rc;
}

/* GLIBC_2.36 -> {2, 36, 0}; 0, or -1 when it is not a glibc version name. */
static int glibc_numbers(const char *name, unsigned out[3])
{
	const char *p = name + 6;
	int parts = 0;

	if (strncmp(name, "GLIBC_", 6) != 0)
		return -1;
	out[0] = out[1] = out[2] = 0;
	while (parts < 3) {
		unsigned x = 0;
		int digits = 0;

		while (*p >= '0' && *p <= '9' && digits < 6)
			x = x * 10 + (unsigned)(*p++ - '0'), digits++;
		if (!digits)
			return -1;
		out[parts++] = x;
		if (*p == '\0')
			return parts >= 2 ? 0 : -1;
		if (*p++ != '.')
			return -1;
	}
	return -1;
}

int hte_glibc_version(const struct hte_elf_versions *v, char *out, size_t cap)
{
	unsigned best[3] = { 0, 0, 0 }, n[3];
	int found = 0;

	for (unsigned i = 0; i < v->ndef; i++) {
		if (glibc_numbers(v->def[i], n) < 0)
			continue;
		if (!found || n[0] > best[0] || (n[0] == best[0] && (n[1] > best[1] ||
								      (n[1] == best[1] && n[2] > best[2])))) {
			memcpy(best, n, sizeof(best));
			found = 1;
		}
	}
	if (!found)
		return -1;
	if (best[2])
		snprintf(out, cap, "%u.%u.%u", best[0], best[1], best[2]);
	else
		snprintf(out, cap, "%u.%u", best[0], best[1]);
	return 0;
}

int hte_versions_cover(const struct hte_elf_versions *have, const struct hte_verneed *need, char *missing,
		       size_t cap)
{
	size_t at = 0;
	int all = 1;

	if (cap)
		missing[0] = '\0';
	for (unsigned i = 0; i < need->n; i++) {
		unsigned j = 0;

		while (j < have->ndef && strcmp(have->def[j], need->name[i]) != 0)
			j++;
		if (j < have->ndef)
			continue;
		all = 0;
		if (cap && at < cap) {
			int n = snprintf(missing + at, cap - at, "%s%s", at ? ", " : "", need->name[i]);

			at = n > 0 ? at + (size_t)n : at;
		}
	}
	return all;
}

const char *hte_loader_path(unsigned machine, int elfclass)
{
	if (machine == EM_X86_64 && elfclass == 64)
		return "/lib64/ld-linux-x86-64.so.2";
	if (machine == EM_AARCH64 && elfclass == 64)
		return "/lib/ld-linux-aarch64.so.1";
	return NULL;
}

const char *hte_multiarch(unsigned machine, int elfclass)
{
	if (machine == EM_X86_64 && elfclass == 64)
		return "x86_64-linux-gnu";
	if (machine == EM_AARCH64 && elfclass == 64)
		return "aarch64-linux-gnu";
	return NULL;
}
