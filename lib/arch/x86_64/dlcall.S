/* SPDX-License-Identifier: MIT */
/*
 * The preload's exported dlopen() and the call that makes glibc see the
 * program's caller.  Why it is done this way: lib/dlhook.c.
 *
 * glibc's dlopen() takes its caller from its own return address
 * (RETURN_ADDRESS(0)) and only needs that address to lie inside the
 * caller's object.  ht_call_as() therefore enters glibc's dlopen() with
 * the address of a byte 0xC3 (ret) of the caller's object as the return
 * address; glibc returns to that byte, whose ret returns to us.
 */
#if defined(__x86_64__) && defined(__ELF__)

#if defined(__has_include)
#if __has_include(<cet.h>)
/* _CET_ENDBR, and the IBT/SHSTK note when the build asks for CET. */
#include <cet.h>
#endif
#endif
#ifndef _CET_ENDBR
#define _CET_ENDBR
#endif

/*
 * Zeroed stack above the continuation: an unwinder that walks out of
 * glibc's dlopen() meets the caller object's unwind rules at the ret
 * byte, which may place the next return address anywhere in this block;
 * it reads 0 there and ends the walk instead of reading our frames.
 */
#define HT_ZERO_BLOCK 512

	.hidden	ht_dlopen_route
	.hidden	ht_dlopen_hook
	.hidden	ht_real_dlopen

	.text

/*
 * void *dlopen(const char *file, int mode)
 * Asks ht_dlopen_route() (C) what to do, with the caller's return address
 * and the shadow-stack pointer (rdssp reads 0 where no shadow stack is
 * active, and is a no-op on CPUs without CET).  0: tail jump to glibc's
 * dlopen(), which then sees the caller itself.  Else: the address of a ret
 * byte in the caller's object, for ht_dlopen_hook() (C), entered by a
 * tail jump so that its return goes straight back to the caller.
 */
	.globl	dlopen
	.type	dlopen, @function
	.p2align 4
dlopen:
	.cfi_startproc
	_CET_ENDBR
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	movq	24(%rsp), %rdx
	xorl	%ecx, %ecx
	rdsspq	%rcx
	call	ht_dlopen_route
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	testq	%rax, %rax
	jz	1f
	movq	%rax, %rdx
	jmp	ht_dlopen_hook
1:
	movq	ht_real_dlopen(%rip), %rax
	jmp	*%rax
	.cfi_endproc
	.size	dlopen, .-dlopen

/*
 * void *ht_call_as(void *(*fn)(const char *, int), const char *file,
 *                  int mode, const void *ret_insn)
 * Calls fn(file, mode) with ret_insn as fn's return address.  The stack
 * at fn's entry is aligned as after a call.
 */
	.globl	ht_call_as
	.hidden	ht_call_as
	.type	ht_call_as, @function
	.p2align 4
ht_call_as:
	.cfi_startproc
	_CET_ENDBR
	subq	$HT_ZERO_BLOCK, %rsp
	.cfi_adjust_cfa_offset HT_ZERO_BLOCK
	movq	%rdi, %r10
	movq	%rsi, %r11
	movl	%edx, %r9d
	movq	%rcx, %r8
	movq	%rsp, %rdi
	movl	$(HT_ZERO_BLOCK / 8), %ecx
	xorl	%eax, %eax
	rep stosq
	leaq	2f(%rip), %rax
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	movq	%r11, %rdi
	movl	%r9d, %esi
	jmp	*%r10
	/*
	 * Reached through the ret byte, with both pushes popped.  The nop
	 * carries that state for unwinders, which look up return address - 1.
	 */
	.cfi_adjust_cfa_offset -16
	nop
2:
	addq	$HT_ZERO_BLOCK, %rsp
	.cfi_adjust_cfa_offset -HT_ZERO_BLOCK
	ret
	.cfi_endproc
	.size	ht_call_as, .-ht_call_as

#endif

/* No executable stack for the preload (and so for the program). */
	.section .note.GNU-stack, "", @progbits
