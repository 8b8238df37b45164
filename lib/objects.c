/* SPDX-License-Identifier: MIT */
/* Loaded objects (see objects.h). */
#include "objects.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

struct list {
	struct ht_object *objs;
	size_t n, cap;
	int err;
};

static void add_segments(struct ht_object *o, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum && o->nseg < HT_MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		/* The loader has mapped these, so the sums cannot wrap; check anyway. */
		if (ph->p_vaddr > UINTPTR_MAX - info->dlpi_addr ||
		    ph->p_memsz > UINTPTR_MAX - info->dlpi_addr - ph->p_vaddr)
			continue;
		o->segs[o->nseg].start = info->dlpi_addr + ph->p_vaddr;
		o->segs[o->nseg].end = o->segs[o->nseg].start + ph->p_memsz;
		o->segs[o->nseg].flags = ph->p_flags;
		o->nseg++;
	}
}

static int by_start(const void *a, const void *b)
{
	const struct ht_seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct list *l = arg;
	struct ht_object *o;

	(void)size;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct ht_object *p = realloc(l->objs, cap * sizeof(*p));

		if (!p) {
			l->err = -ENOMEM;
			return 1;
		}
		l->objs = p;
		l->cap = cap;
	}
	o = &l->objs[l->n];
	memset(o, 0, sizeof(*o));
	o->name = info->dlpi_name ? info->dlpi_name : "";
	/* The first object glibc reports is the main program. */
	o->is_main = l->n == 0;
	add_segments(o, info);
	qsort(o->segs, (size_t)o->nseg, sizeof(o->segs[0]), by_start);
	l->n++;
	return 0;
}

int ht_objects_list(struct ht_object **objs, size_t *n)
{
	struct list l = { 0 };

	dl_iterate_phdr(collect, &l);
	if (l.err) {
		free(l.objs);
		return l.err;
	}
	*objs = l.objs;
	*n = l.n;
	return 0;
}

int ht_object_flagged(const struct ht_object *o)
{
	for (int i = 0; i < o->nseg; i++)
		if ((o->segs[i].flags & PF_X) && (o->segs[i].flags & HT_PF_LINUX_HUGETLB))
			return 1;
	return 0;
}
