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
	.type bigtext_count, %object
	.size bigtext_count, 4
	.p2align 2
bigtext_count:
	.long BT_COUNT
	.globl bigtext_stride
	.type bigtext_stride, %object
	.size bigtext_stride, 4
bigtext_stride:
	.long BT_STRIDE

/* One function with a name of its own (bt_fn_N, in .symtab), for perf. */
	.macro BT_FN
	.type bt_fn_\@, %function
bt_fn_\@:
#if defined(__aarch64__)
	/* 16 bytes; the padding is udf #0. */
	mov w1, #i
	add w0, w0, w0, lsl #1
	add w0, w0, w1
	ret
	.size bt_fn_\@, . - bt_fn_\@
	.skip BT_STRIDE - 16, 0
#else
	leal i(%rdi,%rdi,2), %eax
	ret
	.size bt_fn_\@, . - bt_fn_\@
	.p2align 4, 0xcc
	.skip BT_STRIDE - 16, 0xcc
#endif
	.endm

	.text
	.p2align 12
	.globl bigtext_start
	.type bigtext_start, %function
bigtext_start:
	.set i, 0
	.rept BT_COUNT
	BT_FN
	.set i, i + 1
	.endr
	.size bigtext_start, . - bigtext_start
	.globl bigtext_end
	.type bigtext_end, %function
bigtext_end:

	.section .note.GNU-stack, "", %progbits
