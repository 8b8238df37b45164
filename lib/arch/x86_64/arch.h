/* SPDX-License-Identifier: MIT */
/*
 * x86-64's few lines (lib/arch/: one folder per processor, the same names
 * in each, picked by lib/meson.build).
 */
#ifndef HT_ARCH_H
#define HT_ARCH_H

#include <stddef.h>

/* The preload's dlopen() enters glibc from the caller's object (dlcall.S). */
#define HT_ARCH_DLCALL 1

/*
 * What a PMD maps with 4 KiB pages: 2 MiB, fixed by the page-table format,
 * so the kernel need not be asked (pagesize.c).
 */
#define HT_ARCH_PMD_4K (2UL * 1024 * 1024)

/*
 * Whether a copy that gets no 2 MiB page falls back to 64 KiB folios
 * (folios.h): x86-64 has no contiguous bit: a 64 KiB folio takes as many TLB entries
 * as 16 pages, so a copy on them is not worth its memory.
 */
#define HT_ARCH_FOLIO_FALLBACK 0

/*
 * Nothing to do after writing code that is about to run: x86-64 keeps the
 * instruction fetch coherent with stores, and the swap's mremap() is a
 * serializing system call for the thread that makes it.
 */
static inline void ht_arch_sync_code(const void *start, size_t len)
{
	(void)start;
	(void)len;
}

/*
 * A place in the @n bytes of code at @p through which glibc's dlopen() can
 * return to us (dlcall.S): a byte 0xC3 (ret), or NULL.
 */
static inline const unsigned char *ht_arch_return_site(const unsigned char *p, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (p[k] == 0xc3)
			return p + k;
	return NULL;
}

/*
 * A system call by number, with nothing of libc in between: the
 * preload's cheapest path (preload.c) makes a few before it has looked
 * anything up in libc.  Returns the kernel's answer: >= 0, or -errno
 * (errno is not touched).
 */
#define HT_ARCH_RAW_SYSCALL 1

static inline long ht_arch_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

#endif
