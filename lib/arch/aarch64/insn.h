/* SPDX-License-Identifier: MIT */
/*
 * The arm64 instructions the preload's dlopen() entry returns through
 * (dlcall.S), as pure functions on a buffer of code, so that they are
 * tested on any machine (tests/arm64/test-arch.cpp).
 */
#ifndef HT_ARCH_AARCH64_INSN_H
#define HT_ARCH_AARCH64_INSN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HT_A64_RET 0xd65f03c0u     /* ret (x30) */
#define HT_A64_AUTIASP 0xd50323bfu /* hint #29: authenticate x30 against sp */
/* ldp x29, x30, [sp], #imm: 64-bit load pair, post-index; imm7 in bits 21:15. */
#define HT_A64_LDP_FP_LR_POST 0xa8c07bfdu
#define HT_A64_LDP_IMM_MASK 0x003f8000u

/*
 * The bytes @ldp pops when word @w is "ldp x29, x30, [sp], #N" with N a
 * positive multiple of 16 (the stack stays aligned), else 0.
 */
static inline unsigned ht_a64_epilogue_pop(uint32_t w)
{
	unsigned imm7;

	if ((w & ~HT_A64_LDP_IMM_MASK) != HT_A64_LDP_FP_LR_POST)
		return 0;
	imm7 = (w & HT_A64_LDP_IMM_MASK) >> 15;
	/* imm7 is signed: 64 and above are negative offsets. */
	if (imm7 == 0 || imm7 >= 64 || imm7 % 2)
		return 0;
	return imm7 * 8;
}

/*
 * The first epilogue in the @n bytes of code at @p that restores x29 and
 * x30 from the stack and returns: "ldp x29, x30, [sp], #N; ret", or the
 * same with "autiasp" between them.  Instructions are 4-byte aligned in
 * memory: the search starts at the first aligned address.  NULL if none.
 */
static inline const unsigned char *ht_a64_return_site(const unsigned char *p, size_t n)
{
	size_t k = (4 - ((uintptr_t)p & 3)) & 3;

	for (; k + 8 <= n; k += 4) {
		uint32_t w[3] = { 0, 0, 0 };

		memcpy(w, p + k, k + 12 <= n ? 12 : 8);
		if (!ht_a64_epilogue_pop(w[0]))
			continue;
		if (w[1] == HT_A64_RET || (w[1] == HT_A64_AUTIASP && w[2] == HT_A64_RET))
			return p + k;
	}
	return NULL;
}

#endif
