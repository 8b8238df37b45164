/* SPDX-License-Identifier: MIT */
/*
 * Drop-in replacement for Intel iodlr's large_page API, implemented by
 * hugetext.  Programs written for iodlr recompile unchanged and link with
 * -lhugetext.  The status values keep iodlr's names and order.
 *
 * Unlike iodlr, a failure at any step leaves the code mapped as it was:
 * the copy is swapped in with one mremap() and nothing is unmapped first.
 */
#ifndef LARGE_PAGE_H_
#define LARGE_PAGE_H_

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	map_ok,
	map_failed_to_open_thp_file,
	map_invalid_regex,
	map_invalid_region_address,
	map_malformed_thp_file,
	map_null_regex,
	map_region_not_found,
	map_region_too_small,
	map_see_errno,
	map_see_errno_madvise_tmem_failed,
	map_see_errno_madvise_tmem_munmap_nmem_failed,
	map_see_errno_madvise_tmem_munmaps_failed,
	map_see_errno_madvise_tmem_munmap_tmem_failed,
	map_see_errno_mmap_tmem_failed,
	map_see_errno_mmap_tmem_munmap_nmem_failed,
	map_see_errno_mprotect_failed,
	map_see_errno_mprotect_munmap_nmem_failed,
	map_see_errno_mprotect_munmaps_failed,
	map_see_errno_mprotect_munmap_tmem_failed,
	map_see_errno_munmap_nmem_failed,
	map_unsupported_platform,
	map_open_exe_failed,
	map_see_errno_close_exe_failed,
	map_read_exe_header_failed,
	map_see_errno_seek_exe_sheaders_failed,
	map_read_exe_sheaders_failed,
	map_see_errno_seek_exe_string_table_failed,
	map_read_exe_string_table_failed,
	map_not_enough_explicit_hugepages_are_allocated,
} map_status;

/* Verbose and terse text for a status. */
#define MAP_STATUS_STR(status) MapStatusStr(status, true)
#define MAP_STATUS_STR_SHORT(status) MapStatusStr(status, false)

/*
 * Moves the main executable's code onto huge pages.  Reads the HUGETEXT_*
 * settings (and IODLR_USE_EXPLICIT_HP) from the environment.
 * Returns: map_ok when the code is on huge pages or was already moved.
 */
map_status MapStaticCodeToLargePages(void);

/*
 * Moves the code of the first loaded shared object whose path matches the
 * POSIX basic regular expression @lib_regex, as iodlr does.
 * Returns: map_null_regex, map_invalid_regex, map_region_not_found, ...
 */
map_status MapDSOToLargePages(const char *lib_regex);

/*
 * Moves the code in [@from, @to) onto huge pages; the range is shrunk to
 * whole 2 MiB pages.
 * Returns: map_invalid_region_address when the range is not code.
 */
map_status MapStaticCodeRangeToLargePages(void *from, void *to);

/*
 * Sets *@result to whether transparent huge pages can back code.
 * Returns: map_ok, or map_see_errno when the setting cannot be read.
 */
map_status IsLargePagesEnabled(bool *result);

/*
 * Returns: a static text for @status, long when @fulltext is true.
 */
const char *MapStatusStr(map_status status, bool fulltext);

#ifdef __cplusplus
}
#endif

#endif /* LARGE_PAGE_H_ */
