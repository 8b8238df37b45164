/* SPDX-License-Identifier: MIT */
/*
 * arm64's few lines for the hugetext command (tools/arch/, picked by
 * tools/meson.build).
 */
#ifndef HTE_TOOL_ARCH_H
#define HTE_TOOL_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* No CPUID: cpuinfo.c reads what the kernel says of the processor. */
#define HTE_ARCH_CPUID 0

static inline int hte_arch_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	(void)leaf;
	(void)sub;
	memset(r, 0, 4 * sizeof(*r));
	return -1;
}

/*
 * The calibration's node: "subs x0, x0, #1; b.ne +8; ret; b NEXT".  b.ne
 * reaches only 1 MiB, so the conditional branch skips over the ret to an
 * unconditional b, which reaches 128 MiB.
 */
#define HTE_ARCH_CALIB 1
#define HTE_ARCH_NODE_BYTES 16

static inline void hte_arch_node(unsigned char *at, const unsigned char *next)
{
	int64_t rel = (next - (at + 12)) / 4;
	uint32_t w[4] = {
		0xf1000400u,                          /* subs x0, x0, #1 */
		0x54000041u,                          /* b.ne .+8 */
		0xd65f03c0u,                          /* ret */
		0x14000000u | ((uint32_t)rel & 0x03ffffffu), /* b NEXT */
	};

	memcpy(at, w, sizeof(w));
}

#define HTE_ARCH_NODE_REACH ((uint64_t)1 << 27)

/* New code must be made visible to instruction fetch. */
static inline void hte_arch_code_written(void *start, size_t len)
{
	__builtin___clear_cache((char *)start, (char *)start + len);
}

#endif
