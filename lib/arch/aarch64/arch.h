/* SPDX-License-Identifier: MIT */
/*
 * arm64's few lines (lib/arch/: one folder per processor, the same names
 * in each, picked by lib/meson.build).
 */
#ifndef HT_ARCH_H
#define HT_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "insn.h"

/* The preload's dlopen() enters glibc from the caller's object (dlcall.S). */
#define HT_ARCH_DLCALL 1

/*
 * What a PMD maps with 4 KiB pages: 2 MiB, fixed by the 4 KiB granule's
 * page-table format, so the kernel need not be asked (pagesize.c).  The
 * 16 and 64 KiB granules map 32 and 512 MiB: those are read from sysfs.
 */
#define HT_ARCH_PMD_4K (2UL * 1024 * 1024)

/*
 * Whether a copy that gets no 2 MiB page falls back to 64 KiB folios
 * (folios.h): arm64 maps a 64 KiB folio with the contiguous bit, one TLB entry for
 * 16 pages: where no 2 MiB page can be had, a copy on them still pays.
 */
#define HT_ARCH_FOLIO_FALLBACK 1

/*
 * Makes code written through the data side (the copy's memcpy() or
 * pread()) visible to instruction fetch, as arm64 asks: clean each data
 * cache line to the point of unification, then invalidate the
 * instruction cache lines, each step finished by a barrier.  CTR_EL0 (which
 * Linux lets user space read) gives the line sizes, and says when a step is
 * not needed (IDC: no clean; DIC: no invalidate), as on Neoverse cores.
 * By virtual address, on the copy, before the swap: the same physical
 * pages then appear at the code's address, and arm64's instruction caches
 * behave as physically indexed for such maintenance.  Until the swap no
 * thread runs the copy, so no isb is needed in other threads; this thread
 * gets one at the end.
 */
static inline void ht_arch_sync_code(const void *start, size_t len)
{
	uint64_t ctr;
	uintptr_t a, end = (uintptr_t)start + len;
	size_t dline, iline;

	if (!len)
		return;
	__asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
	dline = (size_t)4 << ((ctr >> 16) & 0xf);
	iline = (size_t)4 << (ctr & 0xf);
	if (!(ctr & (1ull << 28)))
		for (a = (uintptr_t)start & ~(uintptr_t)(dline - 1); a < end; a += dline)
			__asm__ volatile("dc cvau, %0" : : "r"(a) : "memory");
	__asm__ volatile("dsb ish" : : : "memory");
	if (!(ctr & (1ull << 29))) {
		for (a = (uintptr_t)start & ~(uintptr_t)(iline - 1); a < end; a += iline)
			__asm__ volatile("ic ivau, %0" : : "r"(a) : "memory");
		__asm__ volatile("dsb ish" : : : "memory");
	}
	__asm__ volatile("isb" : : : "memory");
}

/*
 * A place in the @n bytes of code at @p through which glibc's dlopen() can
 * return to us (dlcall.S): an epilogue that reloads x29 and x30 from the
 * stack and returns, or NULL.
 */
static inline const unsigned char *ht_arch_return_site(const unsigned char *p, size_t n)
{
	return ht_a64_return_site(p, n);
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
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory", "cc");
	return x0;
}

#endif
