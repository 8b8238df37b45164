/* SPDX-License-Identifier: MIT */
/*
 * What the library checks in the process: that an object's file holds the
 * code that is mapped (so it may be read instead of copied), that the code
 * did not change while a background move copied it, and, after the moves,
 * what the kernel really put on huge pages.
 */
#include "maps.h"
#include "run.h"
#include "sys.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

/* The pagemap entries of the @n pages from @start into @pm; 0, or -1 if unreadable. */
static int read_pagemap_into(uint64_t *pm, uintptr_t start, size_t n)
{
	size_t bytes = n * sizeof(uint64_t);
	int fd = ht_sys_open("/proc/self/pagemap", O_RDONLY, 0);
	ssize_t got = fd >= 0 ? ht_sys_pread_full(fd, pm, bytes, (off_t)(start / HT_PAGE * sizeof(*pm))) : -1;

	if (fd >= 0)
		ht_sys_close(fd);
	return got == (ssize_t)bytes ? 0 : -1;
}

/* The same, malloc'ed; NULL if unreadable. */
static uint64_t *read_pagemap(uintptr_t start, size_t n)
{
	uint64_t *pm = n ? malloc(n * sizeof(uint64_t)) : NULL;

	if (pm && read_pagemap_into(pm, start, n) < 0) {
		free(pm);
		return NULL;
	}
	return pm;
}

/* statfs(2)'s f_type of overlayfs. */
#define HT_OVERLAYFS_MAGIC 0x794c7630

/*
 * Whether a page of @fd mapped here is named in /proc/self/maps by the
 * device and inode that name the code's mapping: the kernel then maps the
 * same file for both.  fstat() and the maps disagree on overlayfs, which
 * maps the layer's own file: Linux 6.1's maps give the layer's device
 * where fstat() gives the overlay's (its layers on one file system, as
 * Podman's storage), later kernels' the overlay's device where fstat()
 * gives the layer's (the layers on different file systems).  A page
 * mapped and named is proof where the numbers are not.
 */
static int mapped_as(int fd, const struct ht_seg_plan *p)
{
	struct ht_map m;
	size_t len = 0, pos = 0;
	char *maps = NULL;
	void *at;
	int same = 0;

	if (ht_sys_map_file(fd, HT_PAGE, PROT_READ, 0, &at) < 0)
		return 0;
	if (ht_sys_read_file("/proc/self/maps", &maps, &len) == 0) {
		while (ht_maps_next(maps, len, &pos, &m)) {
			if (m.start != (uintptr_t)at)
				continue;
			same = m.inode == p->inode && m.dev_major == p->dev_major && m.dev_minor == p->dev_minor;
			break;
		}
		free(maps);
	}
	ht_sys_unmap(at, HT_PAGE);
	return same;
}

/* Opens @path if it is the file mapped at the plan's span (-1 if not). */
static int open_mapped_file(const char *path, const struct ht_seg_plan *p)
{
	struct stat st;
	struct statfs fs;
	int fd = ht_sys_open(path, O_RDONLY, 0);

	if (fd < 0)
		return -1;
	if (ht_sys_fstat(fd, &st) == 0 && st.st_ino == p->inode && major(st.st_dev) == p->dev_major &&
	    minor(st.st_dev) == p->dev_minor)
		return fd;
	/* Only overlayfs names one file two ways: anything else that differs is another file. */
	if (ht_sys_fstatfs(fd, &fs) == 0 && (unsigned long)fs.f_type == HT_OVERLAYFS_MAGIC && mapped_as(fd, p))
		return fd;
	ht_sys_close(fd);
	return -1;
}

int ht_open_clean_source(const struct ht_seg_plan *p, const char *name)
{
	uint64_t *pm;
	size_t n = p->mapped / HT_PAGE;
	int fd = -1, clean;

	if (!p->file_backed)
		return -1;
	/* The maps' name first; the loader's when the maps name a file this process cannot reach. */
	if (p->path[0] == '/')
		fd = open_mapped_file(p->path, p);
	if (fd < 0 && name && name[0] == '/' && strcmp(name, p->path) != 0)
		fd = open_mapped_file(name, p);
	if (fd < 0)
		return -1;
	/* A page the program wrote (a breakpoint, a relocation) is only in memory. */
	pm = read_pagemap(p->span.start, n);
	clean = pm && ht_pagemap_clean(pm, n);
	free(pm);
	if (clean)
		return fd;
	ht_sys_close(fd);
	return -1;
}

static int same_plan(const struct ht_seg_plan *a, const struct ht_seg_plan *b)
{
	return a->span.start == b->span.start && a->span.end == b->span.end &&
	       a->mapped == b->mapped && a->file_backed == b->file_backed &&
	       a->file_off == b->file_off && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor;
}

/* Every page the program wrote (pagemap) must hold what the copy holds. */
static int written_pages_match(struct ht_span span, size_t mapped, const char *copy,
			       const struct ht_check_mem *m)
{
	size_t n = mapped / HT_PAGE;

	if (n > m->pages || read_pagemap_into(m->pagemap, span.start, n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (ht_pagemap_written(m->pagemap[i]) &&
		    memcmp(copy + i * HT_PAGE, (const char *)span.start + i * HT_PAGE, HT_PAGE) != 0)
			return 0;
	return 1;
}

/*
 * The program ran while the copy was made: it may have made its code
 * writable (mprotect), or written to it (a debugger's breakpoint, a hot
 * patch).  The maps must plan the same span as before, and each page
 * written since must equal the copy.  It runs in the swap window, which
 * holds the program's mprotect() calls, so it reads into @m and never
 * calls the allocator (whose lock such a call may hold).
 */
int ht_code_unchanged(const struct ht_source *src, struct ht_span span, const char *copy,
		      const struct ht_check_mem *m)
{
	const struct ht_recheck *rc = src->ctx;
	struct ht_seg_plan now;
	size_t mapped;
	ssize_t len = ht_sys_read_file_into("/proc/self/maps", m->maps, m->maps_cap);

	if (len < 0 || ht_plan_segment(m->maps, (size_t)len, rc->q, HT_HUGE_PAGE_SIZE, &now) < 0 ||
	    !same_plan(&now, rc->p))
		return 0;
	mapped = src->mapped < span.end - span.start ? src->mapped : span.end - span.start;
	return written_pages_match(span, mapped, copy, m);
}

/*
 * Room for the maps as they are now, twice over (the program may map more
 * meanwhile; a check that finds no room gives the move up), and for the
 * span's pagemap.  Measured here, before the window: reading costs a
 * malloc, which the window forbids.
 */
static int check_mem_get(struct ht_check_mem *m, struct ht_span span)
{
	size_t pages = (span.end - span.start) / HT_PAGE;
	size_t pm_bytes = (pages * sizeof(uint64_t) + HT_PAGE - 1) & ~(HT_PAGE - 1);
	size_t maps_len, cap;
	char *maps;
	void *p;

	if (ht_sys_read_file("/proc/self/maps", &maps, &maps_len) < 0)
		return -1;
	free(maps);
	cap = (2 * maps_len + 65536 + HT_PAGE - 1) & ~(HT_PAGE - 1);
	if (ht_sys_map_anon(cap + pm_bytes, HT_PAGE, 0, &p) < 0)
		return -1;
	m->maps = p;
	m->maps_cap = cap;
	m->pagemap = (uint64_t *)((char *)p + cap);
	m->pages = pages;
	m->len = cap + pm_bytes;
	return 0;
}

int ht_window_checked(const struct ht_source *src, struct ht_span span, const char *copy)
{
	struct ht_check_mem m;
	int ok;

	if (check_mem_get(&m, span) < 0)
		return 0;
	ok = ht_window_open() == 0;
	if (ok && !(src->unchanged(src, span, copy, &m) && ht_window_intact())) {
		ht_window_close();
		ok = 0;
	}
	/* munmap(), not free(): the window may still be open. */
	ht_sys_unmap(m.maps, m.len);
	return ok;
}

/*
 * Replaces each moved region's huge_bytes with what the kernel shows:
 * PAGEMAP_SCAN walks only the region; where the kernel lacks it, one read
 * of smaps serves every region.
 */
void ht_verify(struct run *r)
{
	char *smaps = NULL;
	size_t len = 0;

	for (size_t i = 0; i < r->nregs; i++) {
		struct ht_region *g = &r->regs[i];
		uint64_t huge;

		if (g->status != HT_STATUS_OK)
			continue;
		if (ht_sys_scan_huge(g->start, g->end, &huge) < 0) {
			if (!smaps && ht_sys_read_file("/proc/self/smaps", &smaps, &len) < 0) {
				smaps = NULL;
				g->huge_bytes = 0;
				g->error = HT_E_PROC;
				continue;
			}
			huge = ht_smaps_huge_in(smaps, len, g->start, g->end);
		}
		/*
		 * The kernel shows a process its 2 MiB pages only: a copy on
		 * folios keeps what the move counted of them (folios.h), with the
		 * page cache's kept pages.
		 */
		if (g->mode == HT_MODE_FOLIOS && g->kept_bytes + g->huge_bytes > huge)
			huge = g->kept_bytes + g->huge_bytes;
		g->huge_bytes = (size_t)huge;
		/* What is huge beyond the kept page-cache pages is our copy's. */
		if (g->private_code_bytes)
			g->private_huge_bytes = g->huge_bytes > g->kept_bytes ? g->huge_bytes - g->kept_bytes : 0;
	}
	free(smaps);
}
