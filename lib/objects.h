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

struct ht_object {
	const char *name;     /* the loader's name; "" for the main program */
	int is_main;
	int nseg;             /* PT_LOAD segments, in address order */
	struct ht_seg segs[HT_MAX_SEGS];
};

/*
 * Lists the loaded objects into a malloc'ed array.
 * Returns: 0 with *@objs and *@n set, or -ENOMEM.
 */
int ht_objects_list(struct ht_object **objs, size_t *n);

/* True when any executable segment carries HT_PF_LINUX_HUGETLB. */
int ht_object_flagged(const struct ht_object *o);

#endif
