/*
 * Generated code for tests and examples: BT_MIB MiB of text holding one
 * tiny function every BT_STRIDE bytes.  Function i returns 3*x + i.
 * The assembler writes it in a blink, so the build stays quick.
 */
#ifndef BT_MIB
#define BT_MIB 40
#endif
#ifndef BT_STRIDE
#define BT_STRIDE 65536
#endif
#define BT_COUNT (BT_MIB * 1048576 / BT_STRIDE)

	.section .rodata
	.globl bigtext_count
	.p2align 2
bigtext_count:
	.long BT_COUNT
	.globl bigtext_stride
bigtext_stride:
	.long BT_STRIDE

	.text
	.p2align 12
	.globl bigtext_start
	.type bigtext_start, @function
bigtext_start:
	.set i, 0
	.rept BT_COUNT
	leal i(%rdi,%rdi,2), %eax
	ret
	.p2align 4, 0xcc
	.skip BT_STRIDE - 16, 0xcc
	.set i, i + 1
	.endr
	.globl bigtext_end
bigtext_end:
	.size bigtext_start, . - bigtext_start

	.section .note.GNU-stack, "", @progbits
