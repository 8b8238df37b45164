/* SPDX-License-Identifier: MIT */
/*
 * Where a library asked for by bare name would be found from a given
 * caller's point of view: its DT_RPATH or DT_RUNPATH, with $ORIGIN.
 * The dlopen hook needs this because, once interposed, the loader would
 * search from the hook's library instead of the caller's.
 */
#ifndef HT_DLSEARCH_H
#define HT_DLSEARCH_H

#include <stddef.h>

/*
 * Expands one directory of a search list: $ORIGIN and ${ORIGIN} become
 * @origin.  Other dynamic string tokens ($LIB, $PLATFORM) are not
 * expanded: the directory is then refused.
 * Returns: 0, -EINVAL for a refused directory, -ENAMETOOLONG.
 */
int ht_expand_dir(const char *dir, size_t len, const char *origin, char *out, size_t outlen);

/*
 * Finds @file in the colon-separated @list (expanded with @origin) using
 * @exists to test candidate paths.  Writes the first hit to @out.
 * Returns: 1 when found, 0 when not.
 */
int ht_search_list(const char *list, const char *origin, const char *file,
		   int (*exists)(const char *path), char *out, size_t outlen);

/*
 * Resolves @file for a dlopen() made by the code at @caller.
 * Returns: @file itself when the loader would find the same library from
 * anywhere (a path, no RPATH or RUNPATH in the caller, a library already
 * loaded, or no hit), else @buf holding the full path.
 */
const char *ht_dlopen_path(const char *file, const void *caller, char *buf, size_t len);

#endif
