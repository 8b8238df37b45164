/* SPDX-License-Identifier: MIT */
/*
 * Processors without a folder of their own in tools/arch/: no CPUID and
 * no generated code, so the calibration says it cannot run here.
 */
#ifndef HTE_TOOL_ARCH_H
#define HTE_TOOL_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HTE_ARCH_CPUID 0

static inline int hte_arch_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	(void)leaf;
	(void)sub;
	memset(r, 0, 4 * sizeof(*r));
	return -1;
}

#define HTE_ARCH_CALIB 0
#define HTE_ARCH_NODE_BYTES 16

static inline void hte_arch_node(unsigned char *at, const unsigned char *next)
{
	(void)at;
	(void)next;
}

#define HTE_ARCH_NODE_REACH 0

static inline void hte_arch_code_written(void *start, size_t len)
{
	(void)start;
	(void)len;
}

#endif
