/* SPDX-License-Identifier: MIT */
/*
 * Processors without a folder of their own (lib/arch/): what is safe
 * everywhere.
 */
#ifndef HT_ARCH_H
#define HT_ARCH_H

#include <errno.h>
#include <stddef.h>

/*
 * No dlopen() entry: the preload exports none, so glibc's own dlopen()
 * runs untouched and libraries loaded later are not moved.
 */
#define HT_ARCH_DLCALL 0

/*
 * What a PMD maps with 4 KiB pages is not known here (s390 maps 1 MiB):
 * the kernel is asked (pagesize.c).
 */
#define HT_ARCH_PMD_4K 0

/*
 * Whether a copy that gets no 2 MiB page falls back to 64 KiB folios
 * (folios.h): not known to pay here.
 */
#define HT_ARCH_FOLIO_FALLBACK 0

/* The compiler knows how this processor makes new code visible to fetch. */
static inline void ht_arch_sync_code(const void *start, size_t len)
{
	__builtin___clear_cache((char *)start, (char *)start + len);
}

static inline const unsigned char *ht_arch_return_site(const unsigned char *p, size_t n)
{
	(void)p;
	(void)n;
	return NULL;
}

/*
 * No system call by number without libc here: the preload's cheapest
 * path (preload.c) then takes the usual one, which asks libc.
 */
#define HT_ARCH_RAW_SYSCALL 0

static inline long ht_arch_syscall3(long nr, long a, long b, long c)
{
	(void)nr, (void)a, (void)b, (void)c;
	return -ENOSYS;
}

#endif
