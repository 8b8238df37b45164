/* SPDX-License-Identifier: MIT */
/* Loaded objects (see objects.h). */
#include "objects.h"
#include "hugetext.h"

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
		if (ph->p_align > o->align)
			o->align = ph->p_align;
	}
}

int ht_note_build_id(const unsigned char *buf, size_t len, unsigned char *id, size_t max)
{
	size_t at = 0;

	while (len - at >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		size_t name_sz, desc_sz;

		memcpy(&nh, buf + at, sizeof(nh));
		at += sizeof(nh);
		/* Name and descriptor are each padded to 4 bytes. */
		name_sz = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		desc_sz = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (name_sz > len - at || desc_sz > len - at - name_sz)
			return -ENOENT;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(buf + at, "GNU", 4) == 0 && nh.n_descsz > 0 && nh.n_descsz <= max) {
			memcpy(id, buf + at + name_sz, nh.n_descsz);
			return (int)nh.n_descsz;
		}
		at += name_sz + desc_sz;
	}
	return -ENOENT;
}

/* A malformed object could point its notes anywhere: read only loaded memory. */
static int inside_readable_segment(const struct ht_object *o, uintptr_t start, size_t len)
{
	for (int i = 0; i < o->nseg; i++)
		if ((o->segs[i].flags & PF_R) && o->segs[i].start <= start &&
		    len <= o->segs[i].end - start)
			return 1;
	return 0;
}

static void find_build_id(struct ht_object *o, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		int n;

		if (ph->p_type != PT_NOTE || ph->p_memsz > (1u << 20) ||
		    ph->p_vaddr > UINTPTR_MAX - info->dlpi_addr ||
		    !inside_readable_segment(o, info->dlpi_addr + ph->p_vaddr, ph->p_memsz))
			continue;
		/* Notes sit inside a loaded segment, so this memory is mapped. */
		n = ht_note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr),
				     ph->p_memsz, o->build_id, sizeof(o->build_id));
		if (n > 0) {
			o->build_id_len = (size_t)n;
			return;
		}
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
	o->base = info->dlpi_addr;
	/* The first object glibc reports is the main program. */
	o->is_main = l->n == 0;
	add_segments(o, info);
	find_build_id(o, info);
	qsort(o->segs, (size_t)o->nseg, sizeof(o->segs[0]), by_start);
	l->n++;
	return 0;
}

void ht_objects_pin(struct ht_object *objs, size_t n, uintptr_t interp)
{
	int after_aligned = 0;

	for (size_t i = 1; i < n; i++) {
		struct ht_object *o = &objs[i];

		if (o->base == interp)
			continue;
		o->pinned = after_aligned;
		if (o->align >= HT_HUGE_PAGE_SIZE && o->base % HT_HUGE_PAGE_SIZE == 0)
			after_aligned = 1;
	}
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

struct each {
	int (*fn)(const struct ht_object *o, void *ctx);
	void *ctx;
	size_t n;
};

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct each *e = arg;
	struct ht_object o;

	(void)size;
	memset(&o, 0, sizeof(o));
	o.name = info->dlpi_name ? info->dlpi_name : "";
	o.base = info->dlpi_addr;
	o.is_main = e->n++ == 0;
	add_segments(&o, info);
	return e->fn(&o, e->ctx);
}

int ht_objects_each(int (*fn)(const struct ht_object *o, void *ctx), void *ctx)
{
	struct each e = { fn, ctx, 0 };

	return dl_iterate_phdr(visit, &e);
}

int ht_object_flagged(const struct ht_object *o)
{
	for (int i = 0; i < o->nseg; i++)
		if ((o->segs[i].flags & PF_X) && (o->segs[i].flags & HT_PF_LINUX_HUGETLB))
			return 1;
	return 0;
}
