/* SPDX-License-Identifier: MIT */
/*
 * arm64: the preload's exported dlopen() and the call that makes glibc
 * see the program's caller.  Why it is done this way: lib/dlhook.c and
 * docs/failure-model.md ("arm64").
 *
 * glibc's dlopen() takes its caller from its return address, x30 at its
 * entry, and only needs that address to lie inside the caller's object.
 * x86-64 returns through a ret byte of that object; arm64's ret jumps to
 * x30 itself, so a lone ret would loop back into glibc.  ht_call_as()
 * enters glibc's dlopen() with x30 = an epilogue of the caller's object,
 * "ldp x29, x30, [sp], #N; ret" (or with autiasp before the ret), and
 * the stack at glibc's entry laid out as that epilogue's frame: x29 and
 * our continuation at sp, N bytes popped.  glibc returns to the
 * epilogue, which reloads x30 with our continuation and returns to it.
 * The epilogue touches x29, x30 and sp only, which we restore.
 */
#if defined(__aarch64__) && defined(__ELF__)

/*
 * Zeroed stack between the epilogue's frame and ours, as on x86-64: an
 * unwinder that walks out of glibc's dlopen() by the epilogue's own rules
 * finds our continuation; one that misreads them reads 0 and stops.
 */
#define HT_ZERO_BLOCK 512

	.hidden	ht_dlopen_route
	.hidden	ht_dlopen_hook
	.hidden	ht_real_dlopen

	.text

/*
 * void *dlopen(const char *file, int mode)
 * Asks ht_dlopen_route() (C) what to do, with the caller's return address
 * and whether a guarded control stack (arm64's shadow stack) is on: chkfeat
 * (hint #40) clears bit 0 of x16 when it is, and is a nop on processors
 * that do not know it.  0: tail jump to glibc's dlopen(), which then sees
 * the caller itself.  Else: the epilogue to return through, for
 * ht_dlopen_hook() (C), entered by a tail jump so that its return goes
 * straight back to the caller.
 */
	.globl	dlopen
	.type	dlopen, %function
	.p2align 2
dlopen:
	.cfi_startproc
	hint	#34			/* bti c */
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	mov	x2, x30
	mov	x16, #1
	hint	#40			/* chkfeat x16 */
	eor	x3, x16, #1
	bl	ht_dlopen_route
	mov	x9, x0
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	.cfi_restore 29
	.cfi_restore 30
	cbz	x9, 1f
	mov	x2, x9
	b	ht_dlopen_hook
1:
	adrp	x16, ht_real_dlopen
	ldr	x16, [x16, #:lo12:ht_real_dlopen]
	br	x16
	.cfi_endproc
	.size	dlopen, .-dlopen

/*
 * void *ht_call_as(void *(*fn)(const char *, int), const char *file,
 *                  int mode, const void *epilogue)
 * Calls fn(file, mode) with @epilogue as fn's return address; the
 * epilogue's "ldp x29, x30, [sp], #N" gives N, and an autiasp after it
 * asks for our continuation signed against the sp it will see (pacia1716,
 * a nop where pointer authentication is off, as autiasp then is).
 */
	.globl	ht_call_as
	.hidden	ht_call_as
	.type	ht_call_as, %function
	.p2align 2
ht_call_as:
	.cfi_startproc
	hint	#34			/* bti c */
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	x29, sp
	.cfi_def_cfa_register 29
	sub	sp, sp, #HT_ZERO_BLOCK
	mov	x9, sp
	mov	x10, #(HT_ZERO_BLOCK / 16)
0:
	stp	xzr, xzr, [x9], #16
	subs	x10, x10, #1
	b.ne	0b
	/* N, from the ldp's imm7 (bits 21:15, in 8-byte units). */
	ldr	w9, [x3]
	ubfx	x9, x9, #15, #7
	lsl	x9, x9, #3
	adr	x17, 2f
	ldr	w10, [x3, #4]
	movz	w11, #0x23bf
	movk	w11, #0xd503, lsl #16	/* autiasp */
	cmp	w10, w11
	b.ne	1f
	mov	x16, sp			/* the sp autiasp will see */
	hint	#8			/* pacia1716: sign x17 against x16 */
1:
	sub	sp, sp, x9
	stp	x29, x17, [sp]
	mov	x16, x0
	mov	x0, x1
	mov	w1, w2
	mov	x30, x3
	br	x16
	/*
	 * Reached through the epilogue, with x29 = our frame again and sp =
	 * the zero block.  The nop carries that state for unwinders, which
	 * look up return address - 4 (the CFA is x29-based throughout).
	 */
	nop
2:
	mov	sp, x29
	ldp	x29, x30, [sp], #16
	.cfi_def_cfa sp, 0
	.cfi_restore 29
	.cfi_restore 30
	ret
	.cfi_endproc
	.size	ht_call_as, .-ht_call_as

#endif

/* No executable stack for the preload (and so for the program). */
	.section .note.GNU-stack, "", %progbits
