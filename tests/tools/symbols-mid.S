/* 8 MiB of code with one named function in its middle (see symbols-head.cpp). */
	.text
	.fill 0x400000, 1, 0xcc
	.globl mid_function
	.type mid_function, @function
mid_function:
	leal 1(%rdi), %eax
	ret
	.size mid_function, . - mid_function
	.fill 0x400000, 1, 0xcc
	.section .note.GNU-stack,"",@progbits
