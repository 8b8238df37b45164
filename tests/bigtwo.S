/*
 * A second executable section, linked far from .text so that the library
 * gets a second executable PT_LOAD segment (16 MiB of one-byte functions).
 */
	.section .bigtwo, "ax", %progbits
	.globl two_start
	.type two_start, %function
	.p2align 12
two_start:
	.rept 4096
	ret
#if defined(__aarch64__)
	.skip 4092, 0
#else
	.skip 4095, 0xcc
#endif
	.endr
	.size two_start, . - two_start
	.globl two_end
	.type two_end, %function
two_end:

	.section .note.GNU-stack, "", %progbits
