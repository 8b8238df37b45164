/* SPDX-License-Identifier: MIT */
/*
 * Function symbols of an ELF image in a buffer, for `check --symbols`:
 * which functions fall outside the span that can go onto huge pages.
 */
#ifndef HTE_SYMBOLS_H
#define HTE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hte_sym {
	uint64_t addr, size; /* st_value and st_size */
	char *name;          /* malloc'ed, as in the file (mangled) */
};

struct hte_symtab {
	struct hte_sym *syms;
	size_t n;
	const char *source;  /* ".symtab" or ".dynsym" */
};

/*
 * Collects the defined function symbols (STT_FUNC, STT_GNU_IFUNC) whose
 * address lies in [@lo, @hi), sorted by address, from .symtab or, in a
 * stripped file, .dynsym.  @buf must have passed hte_check_buffer().
 *
 * Returns: 0; -ENOENT when the file has no symbol table; -EINVAL when
 * libelf cannot read it; -ENOMEM.
 */
int hte_functions_in(const void *buf, size_t len, uint64_t lo, uint64_t hi, struct hte_symtab *out);
void hte_symtab_release(struct hte_symtab *t);

/* Back-references a name may hold and still be demangled (demangle.cc). */
#define HTE_DEMANGLE_MAX_REFS 40

/*
 * Demangles a C++ (Itanium ABI) name.
 * Returns: a malloc'ed string, or NULL when @name is not a mangled name,
 * or holds more than HTE_DEMANGLE_MAX_REFS back-references (it could
 * demangle into gigabytes).
 */
char *hte_demangle(const char *name);

#ifdef __cplusplus
}
#endif

#endif
