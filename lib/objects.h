/* SPDX-License-Identifier: MIT */
/* The loaded objects and their PT_LOAD segments, from dl_iterate_phdr(). */
#ifndef HT_OBJECTS_H
#define HT_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

/* libhugetlbfs's p_flags bit: "back this segment with huge pages". */
#define HT_PF_LINUX_HUGETLB 0x00100000u

#define HT_MAX_SEGS 16

struct ht_seg {
	uintptr_t start, end; /* in memory */
	uint32_t flags;       /* p_flags */
};

#define HT_BUILD_ID_MAX 64

struct ht_object {
	const char *name;     /* the loader's name; "" for the main program */
	uintptr_t base;       /* load bias: memory address minus file address */
	int is_main;
	size_t build_id_len;  /* 0 when the object has none */
	unsigned char build_id[HT_BUILD_ID_MAX];
	int nseg;             /* PT_LOAD segments, in address order */
	struct ht_seg segs[HT_MAX_SEGS];
	uintptr_t align;      /* the largest p_align of its PT_LOAD segments */
	int pinned;           /* its 2 MiB phase is the same at every start (ht_objects_pin) */
};

/*
 * Lists the loaded objects into a malloc'ed array.
 * Returns: 0 with *@objs and *@n set, or -ENOMEM.
 */
int ht_objects_list(struct ht_object **objs, size_t *n);

/*
 * Marks the objects of @objs (the loader's order, main program first)
 * whose 2 MiB phase repeats from one start to the next: those loaded at
 * start-up after an object that asked for 2 MiB alignment (p_align) and
 * got it.  glibc (2.35 on) maps that one on a 2 MiB boundary, and each
 * library after it where the top-down search puts it, by sizes alone
 * (the containers' preload is that object: docs/containers.md).  Not the
 * main program, which the kernel placed, nor the loader at @interp
 * (getauxval(AT_BASE)), which it mapped before any of them.  Call it
 * only with the objects of a start-up, none that dlopen() brought.
 */
void ht_objects_pin(struct ht_object *objs, size_t n, uintptr_t interp);

/*
 * Finds the GNU build-id in a buffer of ELF notes (the contents of a
 * PT_NOTE segment, native byte order).  Bounds are checked on every note.
 * Returns: the id's length (copied to @id), or -ENOENT.
 */
int ht_note_build_id(const unsigned char *buf, size_t len, unsigned char *id, size_t max);

/*
 * Calls @fn for each loaded object, main program first, until it returns
 * nonzero; the object lives only during the call, its segments unsorted
 * and without a build-id.  No allocation: the preload's gate for small
 * programs uses it.  Returns: what the last call of @fn returned, or 0.
 */
int ht_objects_each(int (*fn)(const struct ht_object *o, void *ctx), void *ctx);

/* True when any executable segment carries HT_PF_LINUX_HUGETLB. */
int ht_object_flagged(const struct ht_object *o);

#endif
