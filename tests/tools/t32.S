/* A real 32-bit program for the edit and check tests: exit(0) by int $0x80,
 * with text, data and bss, linked by the compiler with -m32 -nostdlib. */
	.text
	.globl _start
_start:
	movl $1, %eax
	xorl %ebx, %ebx
	int $0x80

	.data
value:
	.long 42

	.bss
buffer:
	.space 4096
