/* 8 MiB of code with one named function in its middle (see symbols-head.cpp). */
	.text
	.fill 0x400000, 1, 0xcc
	.globl mid_function
	.type mid_function, %function
mid_function:
#if defined(__aarch64__)
	add w0, w0, #1
#else
	leal 1(%rdi), %eax
#endif
	ret
	.size mid_function, . - mid_function
	.fill 0x400000, 1, 0xcc
	.section .note.GNU-stack,"",%progbits
