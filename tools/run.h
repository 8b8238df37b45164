/* SPDX-License-Identifier: MIT */
/* The pieces of `hugetext run` worth testing alone. */
#ifndef HTE_RUN_H
#define HTE_RUN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The LD_PRELOAD value that keeps @existing (may be NULL) and adds
 * @preload after it, unless it is already one of its elements.
 * Returns: a malloc'ed string, or NULL without memory.
 */
char *hte_preload_join(const char *existing, const char *preload);

/*
 * Finds the library @name (hte_find_preload: the preload) next to the
 * command (installed: bindir's relative libdir; build tree: ../lib),
 * then in the configured libdir.  Returns: 0 with the path in @out, or
 * -ENOENT.
 */
int hte_find_lib(const char *name, char *out, size_t len);
int hte_find_preload(char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif
