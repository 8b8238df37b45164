/* SPDX-License-Identifier: MIT */
/*
 * hugetext warm: puts a program's code in the page cache as 2 MiB pages.
 *
 * Where a file's code sits in 2 MiB page-cache pages (large folios) and
 * its load address agrees with its file offset modulo 2 MiB, the kernel
 * maps it with huge pages by itself, in every process, with no copy and
 * no preload.  The page cache fills with such pages only when the code is
 * read through a mapping advised MADV_HUGEPAGE; an ordinary run fills it
 * with small ones.  So: for each 2 MiB of code that is not in such a page
 * yet, drop it from the page cache (pages no process maps) and read it
 * again through such a mapping, and measure what came of it in our own page
 * tables.  The file is only read.
 */
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "setup.h"
#include "sys.h"

#define HUGE (2ULL << 20)

static const char warm_usage[] =
	"usage: hugetext warm FILE...\n"
	"\n"
	"Read the executable code of each ELF FILE into the page cache as 2 MiB\n"
	"pages, so that the kernel itself maps it with huge pages in every process\n"
	"that loads it at a 2 MiB-congruent address: no copy, no preload, one copy\n"
	"in memory.  Cached pages that running processes map cannot be replaced;\n"
	"the report says how much of the code was warmed.  FILE is only read.\n"
	"Exit status: 0 when all code of every FILE was warmed, 1 otherwise.\n";

/* The whole 2 MiB file chunks of the executable segments: [lo, hi). */
struct chunk_range {
	uint64_t lo, hi;
	int congruent; /* vaddr and offset agree modulo 2 MiB */
};

/*
 * Whether the chunk [@hi, @hi + 2 MiB) of the file (@file, @file_len),
 * which holds the text segment @s's last bytes, is one the library may
 * keep from the page cache (ht_keep_tail_page): the file holds all of it,
 * its bytes past the segment's last page are zeros, and the loader leaves
 * free address space from the segment's end to that page's end (no other
 * segment there; node's layout).
 */
static int tail_chunk_usable(const struct hte_elf *e, const struct hte_seg *s, uint64_t hi,
			     const unsigned char *file, uint64_t file_len)
{
	uint64_t from = (s->vaddr + s->filesz + 4095) & ~4095ULL, to = s->vaddr + (hi + HUGE - s->offset);
	uint64_t pad = (s->offset + s->filesz + 4095) & ~4095ULL;

	if (hi + HUGE > file_len || (s->vaddr - s->offset) % HUGE || s->memsz > s->filesz)
		return 0;
	for (uint64_t at = pad; at < hi + HUGE; at++)
		if (file[at])
			return 0;
	for (size_t i = 0; i < e->nload; i++) {
		const struct hte_seg *t = &e->load[i];
		uint64_t lo = t->vaddr & ~4095ULL;

		if (t != s && lo < to && t->vaddr + t->memsz > from)
			return 0;
	}
	return 1;
}

static int text_chunks(const struct hte_elf *e, const unsigned char *file, uint64_t file_len,
		       struct chunk_range *out)
{
	out->lo = UINT64_MAX;
	out->hi = 0;
	out->congruent = 1;
	for (size_t i = 0; i < e->nload; i++) {
		const struct hte_seg *s = &e->load[i];
		uint64_t lo = (s->offset + HUGE - 1) & ~(HUGE - 1);
		uint64_t end = s->offset + s->filesz < file_len ? s->offset + s->filesz : file_len;
		uint64_t hi = end & ~(HUGE - 1);

		if (!hte_seg_is_text(s))
			continue;
		if (hi < end && hi >= lo && tail_chunk_usable(e, s, hi, file, file_len))
			hi += HUGE;
		if (hi <= lo)
			continue;
		out->congruent &= (s->vaddr - s->offset) % HUGE == 0;
		out->lo = lo < out->lo ? lo : out->lo;
		out->hi = hi > out->hi ? hi : out->hi;
	}
	return out->hi > out->lo ? 0 : -1;
}

/*
 * Puts [lo, hi) of the file in 2 MiB page-cache pages, one 2 MiB at a
 * time: a 2 MiB that is one already, or that was not cached at all (the
 * read brings it in as one), is kept; only the others are dropped and read
 * again through a 2 MiB-aligned MADV_HUGEPAGE mapping (the library's,
 * which the preload uses after a copy).  The service warms a file again
 * every second while other processes map parts of it: dropping all of it
 * each time would throw away what the last warm made and read it all from
 * the disk again, under the feet of those processes.  Returns the bytes in
 * 2 MiB pages, or -1 with errno.
 */
static long long warm_range(int fd, uint64_t lo, uint64_t hi)
{
	long long huge = 0;

	/* Dirty pages (a file just written) are not dropped: write them first. */
	if (fdatasync(fd) != 0 && errno != EINVAL)
		return -1;
	for (uint64_t at = lo; at < hi; at += HUGE) {
		int64_t got = ht_sys_read_huge(fd, at, HUGE, 1);

		if (got == 0) {
			int err = ht_sys_drop_cached(fd, at, HUGE);

			got = err < 0 ? err : ht_sys_read_huge(fd, at, HUGE, 1);
		}
		if (got < 0) {
			errno = (int)-got;
			return -1;
		}
		huge += got;
	}
	return huge;
}

/*
 * With @probe, reads the code through the MADV_HUGEPAGE mapping without
 * dropping anything first: code already in 2 MiB pages stays as it is and
 * is counted; the read stops at the first 2 MiB that is not.
 */
int hte_warm_file(const char *path, int probe, struct hte_warm *w)
{
	struct chunk_range r;
	struct hte_file f;
	long long huge;
	int fd;

	memset(w, 0, sizeof(*w));
	if (hte_file_open(&f, path, 0, "warm") < 0)
		return -1;
	w->exec_file = f.elf.type == 2; /* ET_EXEC: loaded where its headers say */
	if (text_chunks(&f.elf, f.map, f.len, &r) < 0) {
		hte_file_close(&f);
		return 1;
	}
	w->code = r.hi - r.lo;
	w->congruent = r.congruent;
	/* Our own descriptor: the checked file, whatever happens to the path. */
	fd = fcntl(f.fd, F_DUPFD_CLOEXEC, 0);
	/* Unmapped first: pages we map ourselves could not be dropped. */
	hte_file_close(&f);
	if (fd < 0) {
		hte_error("warm", "%s: %s", path, strerror(errno));
		return -1;
	}
	if (probe && ht_sys_read_huge(fd, r.lo, (size_t)w->code, 0) == (int64_t)w->code) {
		close(fd);
		w->huge = w->code;
		w->already = 1;
		return 0;
	}
	huge = warm_range(fd, r.lo, r.hi);
	close(fd);
	if (huge < 0) {
		hte_error("warm", "%s: %s", path, strerror(errno));
		return -1;
	}
	w->huge = (uint64_t)huge;
	return 0;
}

static int warm_one(const char *path)
{
	struct hte_warm w;
	char a[32], b[32];
	int err = hte_warm_file(path, 0, &w);

	if (err < 0)
		return HTE_EXIT_FAIL;
	if (err > 0) {
		printf("%s: no whole 2 MiB of executable code: nothing to warm\n", path);
		return HTE_EXIT_FAIL;
	}
	printf("%s: %s of %s of code in 2 MiB page-cache pages", path,
	       hte_human(w.huge, a, sizeof(a)), hte_human(w.code, b, sizeof(b)));
	if (w.huge < w.code)
		printf("; the rest stays in small pages (running processes map them, or the file "
		       "system keeps no 2 MiB pages)");
	if (!w.congruent)
		printf("; its code's addresses and file offsets differ modulo 2 MiB, so the kernel "
		       "cannot map it with huge pages (relink with -z max-page-size=0x200000)");
	else if (!w.exec_file)
		printf("; mapped huge where it is loaded at a 2 MiB-aligned address");
	printf("\n");
	return w.huge == w.code && w.congruent ? HTE_EXIT_OK : HTE_EXIT_FAIL;
}

int hte_cmd_warm(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, status = HTE_EXIT_OK;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(warm_usage, stdout);
			return HTE_EXIT_OK;
		}
		fputs(warm_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	if (optind >= argc) {
		fputs(warm_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++)
		if (warm_one(argv[i]) != HTE_EXIT_OK)
			status = HTE_EXIT_FAIL;
	return status;
}
