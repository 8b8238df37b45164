/*
 * Synthetic code for the benchmarks (adapted from tests/bigtext.S):
 * BT_MIB MiB of text, one small function every BT_STRIDE bytes.
 *
 * Function i, called as f(x, n):
 *   n == 0: returns 3*x + i (the random-call loop calls it so);
 *   n > 0:  jumps straight on to another function, n times in all, then
 *           returns.  The jumps form one cycle through BT_M functions
 *           (every BT_K-th one, so BT_M * BT_K ~ count): from the j-th to
 *           the ((j + BT_STEP) mod BT_M)-th, a scattered but fixed order.
 *           With BT_M ~ 2000 the touched code lines (~128 KiB) and the
 *           branch targets stay in the caches and predictors at any size,
 *           while the pages still overflow the TLB: the front end waits on
 *           page walks alone.
 *
 * The default stride is 4096 + 64: one function on every 4 KiB page, each
 * at a different 64-byte line offset, so the touched lines spread over all
 * cache sets instead of piling into the few that page-aligned addresses
 * share.  BT_ALIGN is the alignment of the code (12: 4 KiB, 21: 2 MiB).
 * BT_STEP must be coprime with BT_M (bench/build.sh picks BT_K, BT_M, BT_STEP).
 */
#ifndef BT_MIB
#define BT_MIB 46
#endif
#ifndef BT_ALIGN
#define BT_ALIGN 21
#endif
#ifndef BT_STRIDE
#define BT_STRIDE 4160
#endif
#ifndef BT_STEP
#define BT_STEP 1
#endif
#ifndef BT_K
#define BT_K 1
#endif
#define BT_BYTES (BT_MIB * 1048576)
#define BT_COUNT (BT_BYTES / BT_STRIDE)
#ifndef BT_M
#define BT_M BT_COUNT
#endif

	.section .rodata
	.globl bigtext_chain
	.p2align 2
bigtext_chain:
	.long BT_M
	.globl bigtext_count
	.p2align 2
bigtext_count:
	.long BT_COUNT
	.globl bigtext_stride
bigtext_stride:
	.long BT_STRIDE

	.text
	.p2align BT_ALIGN
	.globl bigtext_start
	.type bigtext_start, @function
bigtext_start:
	.set i, 0
	.rept BT_COUNT
	leal i(%rdi,%rdi,2), %eax
	testq %rsi, %rsi
	jz 1f
	decq %rsi
	jnz bigtext_start + ((((i / BT_K) + BT_STEP) % BT_M) * BT_K) * BT_STRIDE
1:	ret
	.p2align 5, 0xcc
	.skip BT_STRIDE - 32, 0xcc
	.set i, i + 1
	.endr
	/* Pad to exactly BT_MIB MiB, so the span is whole 2 MiB pages. */
	.if BT_BYTES - BT_COUNT * BT_STRIDE
	.skip BT_BYTES - BT_COUNT * BT_STRIDE, 0xcc
	.endif
	.globl bigtext_end
bigtext_end:
	.size bigtext_start, . - bigtext_start

	.section .note.GNU-stack, "", @progbits
