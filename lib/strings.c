/* SPDX-License-Identifier: MIT */
/* Names and texts of the API's values, and the THP probe. */
#include "internal.h"
#include "pagesize.h"
#include "sys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *ht_status_str(enum ht_status status)
{
	static const char *const names[] = { "ok", "skipped", "failed" };

	return (unsigned)status < 3 ? names[status] : "unknown";
}

const char *ht_mode_str(enum ht_mode mode)
{
	static const char *const names[] = { "auto", "thp", "explicit", "off", "folios" };

	return (unsigned)mode < 5 ? names[mode] : "unknown";
}

const char *ht_error_str(enum ht_error error)
{
	static const char *const text[HT_E__COUNT] = {
		[HT_E_NONE] = "no error",
		[HT_E_TOO_SMALL] = "no aligned 2 MiB page at least half full of code",
		[HT_E_ALREADY] = "already on huge pages",
		[HT_E_MODE_OFF] = "mode is off",
		[HT_E_BUDGET] = "time budget spent",
		[HT_E_IGNORED] = "matches the ignore pattern",
		[HT_E_PROC] = "cannot read /proc/self/maps or smaps",
		[HT_E_NOT_MAPPED] = "program headers and /proc/self/maps disagree",
		[HT_E_ALLOC] = "cannot allocate memory for the copy",
		[HT_E_ADVISE] = "madvise(MADV_HUGEPAGE) refused",
		[HT_E_NO_HUGE] = "the kernel gave no huge pages",
		[HT_E_FILL] = "cannot copy the code",
		[HT_E_PROTECT] = "mprotect(PROT_READ|PROT_EXEC) refused",
		[HT_E_SWAP] = "mremap refused the swap",
		[HT_E_POOL] = "too few free pages in the explicit pool",
		[HT_E_PAGE_SIZE] = "default huge page size is not 2 MiB",
		[HT_E_BAD_REGEX] = "invalid regular expression",
		[HT_E_BAD_RANGE] = "range is not private executable memory",
		[HT_E_NOT_SUPPORTED] = "not supported here",
		[HT_E_MEMCG] = "the memory cgroup has too little room for the copy",
		[HT_E_THP_OFF] = "transparent huge pages are disabled (never)",
		[HT_E_CHANGED] = "the code changed while it was copied",
		[HT_E_BELOW_MIN] = "less code than the minimum worth moving (min_code, at least 2 MiB)",
		[HT_E_DEFERRED] = "a private copy would not pay yet: deferred until the process has run long enough",
		[HT_E_NO_COPY] = "only a private copy could move it, and copy is never",
		[HT_E_THP_PROCESS] = "the process turned transparent huge pages off for itself "
				     "(PR_SET_THP_DISABLE) and the explicit pool has no room",
		[HT_E_KERNEL_PAGES] = "this kernel's PMD does not map 2 MiB (its pages are not 4 KiB); "
				      "hugetext moves 2 MiB pages only",
		[HT_E_COLD] = "the process has run none of this code yet: a copy of what runs takes nothing (copy_hot)",
		[HT_E_FOLIOS_OFF] = "the kernel offers no 64 KiB folios (transparent_hugepage/hugepages-64kB "
				    "absent or never)",
	};

	/* With the sizes once this process has read them (pagesize.c). */
	if (error == HT_E_KERNEL_PAGES && ht_pages_reason_text())
		return ht_pages_reason_text();
	return (unsigned)error < HT_E__COUNT && text[error] ? text[error] : "unknown error";
}

const char *ht_version(void)
{
	return HT_VERSION_STRING;
}

int ht_thp_available(void)
{
	char *buf;
	size_t len;
	int err = ht_sys_read_file("/sys/kernel/mm/transparent_hugepage/enabled", &buf, &len);
	int on;

	if (err == -ENOENT)
		return 0;
	if (err < 0)
		return err;
	on = strstr(buf, "[always]") || strstr(buf, "[madvise]");
	free(buf);
	return on;
}
