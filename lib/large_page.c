/* SPDX-License-Identifier: MIT */
/* iodlr's large_page API on top of hugetext (see large_page.h). */
#include "large_page.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static map_status from_region(const struct ht_region *g)
{
	if (g->status == HT_STATUS_OK)
		return map_ok;
	switch (g->error) {
	case HT_E_ALREADY:
	case HT_E_IGNORED:
	case HT_E_MODE_OFF:
	case HT_E_BUDGET:
		return map_ok;
	case HT_E_TOO_SMALL:
		return map_region_too_small;
	case HT_E_NOT_MAPPED:
		return map_region_not_found;
	case HT_E_BAD_RANGE:
		return map_invalid_region_address;
	case HT_E_BAD_REGEX:
		return map_invalid_regex;
	case HT_E_POOL:
		return map_not_enough_explicit_hugepages_are_allocated;
	case HT_E_NOT_SUPPORTED:
	case HT_E_PAGE_SIZE:
	case HT_E_THP_OFF:
	case HT_E_THP_PROCESS:
	case HT_E_KERNEL_PAGES:
		return map_unsupported_platform;
	case HT_E_ALLOC:
	case HT_E_MEMCG:
		errno = g->sys_errno;
		return map_see_errno_mmap_tmem_failed;
	case HT_E_ADVISE:
		errno = g->sys_errno;
		return map_see_errno_madvise_tmem_failed;
	case HT_E_PROTECT:
		errno = g->sys_errno;
		return map_see_errno_mprotect_failed;
	default:
		errno = g->sys_errno ? g->sys_errno : EIO;
		return map_see_errno;
	}
}

/* The worst outcome of a run decides, as a caller of iodlr expects. */
static map_status from_regions(const struct ht_region *g, size_t n, map_status none)
{
	map_status st = none;

	for (size_t i = 0; i < n; i++) {
		map_status s = from_region(&g[i]);

		if (s != map_ok || st == none)
			st = s;
		if (s != map_ok)
			break;
	}
	return st;
}

static void env_options(struct ht_options *opt)
{
	ht_options_init(opt);
	ht_options_from_env(opt);
	/* Each iodlr call names its own targets. */
	opt->match = NULL;
}

map_status MapStaticCodeToLargePages(void)
{
	struct ht_options opt;
	struct ht_region g[8];
	size_t n = 0;

	env_options(&opt);
	if (ht_remap(&opt, g, 8, &n) == -EINVAL && n == 0)
		return map_see_errno;
	return from_regions(g, n < 8 ? n : 8, opt.mode == HT_MODE_OFF ? map_ok : map_region_not_found);
}

map_status MapDSOToLargePages(const char *lib_regex)
{
	struct ht_options opt;
	struct ht_region g[8];
	size_t n = 0;

	if (!lib_regex)
		return map_null_regex;
	env_options(&opt);
	opt.ignore = NULL;
	ht_lock_acquire();
	ht_remap_locked(&opt, lib_regex, g, 8, &n);
	ht_lock_release();
	return from_regions(g, n < 8 ? n : 8, map_region_not_found);
}

map_status MapStaticCodeRangeToLargePages(void *from, void *to)
{
	struct ht_options opt;
	struct ht_region g;
	int err;

	if (!from || !to || (uintptr_t)to <= (uintptr_t)from)
		return map_invalid_region_address;
	env_options(&opt);
	err = ht_remap_range(&opt, from, to, &g);
	if (err == 0 && opt.mode == HT_MODE_OFF)
		return map_ok;
	return from_region(&g);
}

map_status IsLargePagesEnabled(bool *result)
{
	int on;

	if (!result)
		return map_see_errno;
	on = ht_thp_available();
	if (on < 0) {
		*result = false;
		errno = -on;
		return map_see_errno;
	}
	*result = on > 0;
	return map_ok;
}

const char *MapStatusStr(map_status status, bool fulltext)
{
	static const struct { const char *shrt, *full; } text[] = {
		[map_ok] = { "map_ok", "ok" },
		[map_failed_to_open_thp_file] = { "map_failed_to_open_thp_file", "failed to open the THP setting file" },
		[map_invalid_regex] = { "map_invalid_regex", "invalid regular expression" },
		[map_invalid_region_address] = { "map_invalid_region_address", "the range is not mapped code" },
		[map_malformed_thp_file] = { "map_malformed_thp_file", "the THP setting file is malformed" },
		[map_null_regex] = { "map_null_regex", "the regular expression is NULL" },
		[map_region_not_found] = { "map_region_not_found", "no code region found" },
		[map_region_too_small] = { "map_region_too_small", "the code region holds no whole 2 MiB page" },
		[map_see_errno] = { "map_see_errno", "a system call failed; see errno" },
		[map_see_errno_madvise_tmem_failed] = { "map_see_errno_madvise_tmem_failed", "madvise failed on the copy; see errno" },
		[map_see_errno_madvise_tmem_munmap_nmem_failed] = { "map_see_errno_madvise_tmem_munmap_nmem_failed", "madvise and munmap failed; see errno" },
		[map_see_errno_madvise_tmem_munmaps_failed] = { "map_see_errno_madvise_tmem_munmaps_failed", "madvise and munmaps failed; see errno" },
		[map_see_errno_madvise_tmem_munmap_tmem_failed] = { "map_see_errno_madvise_tmem_munmap_tmem_failed", "madvise and munmap of the copy failed; see errno" },
		[map_see_errno_mmap_tmem_failed] = { "map_see_errno_mmap_tmem_failed", "mmap of the copy failed; see errno" },
		[map_see_errno_mmap_tmem_munmap_nmem_failed] = { "map_see_errno_mmap_tmem_munmap_nmem_failed", "mmap and munmap failed; see errno" },
		[map_see_errno_mprotect_failed] = { "map_see_errno_mprotect_failed", "mprotect failed; see errno" },
		[map_see_errno_mprotect_munmap_nmem_failed] = { "map_see_errno_mprotect_munmap_nmem_failed", "mprotect and munmap failed; see errno" },
		[map_see_errno_mprotect_munmaps_failed] = { "map_see_errno_mprotect_munmaps_failed", "mprotect and munmaps failed; see errno" },
		[map_see_errno_mprotect_munmap_tmem_failed] = { "map_see_errno_mprotect_munmap_tmem_failed", "mprotect and munmap of the copy failed; see errno" },
		[map_see_errno_munmap_nmem_failed] = { "map_see_errno_munmap_nmem_failed", "munmap failed; see errno" },
		[map_unsupported_platform] = { "map_unsupported_platform", "this platform or kernel is not supported" },
		[map_open_exe_failed] = { "map_open_exe_failed", "cannot open the executable" },
		[map_see_errno_close_exe_failed] = { "map_see_errno_close_exe_failed", "closing the executable failed; see errno" },
		[map_read_exe_header_failed] = { "map_read_exe_header_failed", "cannot read the ELF header" },
		[map_see_errno_seek_exe_sheaders_failed] = { "map_see_errno_seek_exe_sheaders_failed", "cannot seek to the section headers; see errno" },
		[map_read_exe_sheaders_failed] = { "map_read_exe_sheaders_failed", "cannot read the section headers" },
		[map_see_errno_seek_exe_string_table_failed] = { "map_see_errno_seek_exe_string_table_failed", "cannot seek to the string table; see errno" },
		[map_read_exe_string_table_failed] = { "map_read_exe_string_table_failed", "cannot read the string table" },
		[map_not_enough_explicit_hugepages_are_allocated] = { "map_not_enough_explicit_hugepages_are_allocated", "too few explicit huge pages are free in the pool" },
	};

	if ((unsigned)status >= sizeof(text) / sizeof(text[0]) || !text[status].shrt)
		return fulltext ? "unknown status" : "map_unknown";
	return fulltext ? text[status].full : text[status].shrt;
}
