/* SPDX-License-Identifier: MIT */
/*
 * x86-64's few lines for the hugetext command (tools/arch/: one folder per
 * processor, the same names in each, picked by tools/meson.build, as
 * lib/arch/ is for the library).
 */
#ifndef HTE_TOOL_ARCH_H
#define HTE_TOOL_ARCH_H

#include <cpuid.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* This processor answers CPUID (cpuinfo.c). */
#define HTE_ARCH_CPUID 1

/* CPUID leaf @leaf, subleaf @sub into r[0..3] = eax..edx.  Returns: 0. */
static inline int hte_arch_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
	return 0;
}

/*
 * The calibration's generated code (calibrate.c): one node per page, each
 * "dec %rdi; jnz NEXT; ret".  The loop is entered as void f(long n) and
 * runs n nodes; a node jumps to the next with a direct branch, which the
 * predictor learns, so what the loop waits on is the fetch of a new page:
 * its translation.
 */
#define HTE_ARCH_CALIB 1
#define HTE_ARCH_NODE_BYTES 10

/* Writes the node at @at (code address @at too) that goes on to @next. */
static inline void hte_arch_node(unsigned char *at, const unsigned char *next)
{
	int32_t rel = (int32_t)(next - (at + 9));

	at[0] = 0x48, at[1] = 0xff, at[2] = 0xcf;  /* dec %rdi */
	at[3] = 0x0f, at[4] = 0x85;                /* jnz rel32 */
	memcpy(at + 5, &rel, 4);
	at[9] = 0xc3;                              /* ret */
}

/* Furthest a node may jump: rel32. */
#define HTE_ARCH_NODE_REACH ((uint64_t)1 << 31)

/* Stores to code are seen by fetch on x86-64: nothing to do. */
static inline void hte_arch_code_written(void *start, size_t len)
{
	(void)start;
	(void)len;
}

#endif
