/* SPDX-License-Identifier: MIT */
/*
 * What fresh memory costs on this machine: the time to fault in N MiB of
 * anonymous memory as 2 MiB pages (MADV_HUGEPAGE) and as 4 KiB pages,
 * each in a new mapping, alternating, R rounds.  A private copy of code
 * pays the 2 MiB figure for every page it fills; on bare metal that is
 * the kernel clearing the page, in a VM whose host takes free memory back
 * (free page reporting) it is also the host backing the page again.
 *
 * Usage: fresh-pages MIB ROUNDS.  Prints one line per round:
 *   huge_ms 4k_ms huge_pages_got
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define M2 (2UL << 20)

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Faults in @len bytes with @advice; the ms it took, or -1. *huge: 2 MiB pages got. */
static double touch(size_t len, int advice, unsigned long *huge)
{
	char *raw = mmap(NULL, len + M2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;
	double t;

	if (raw == MAP_FAILED)
		return -1;
	p = (char *)(((unsigned long)raw + M2 - 1) & ~(M2 - 1));
	if (madvise(p, len, advice) != 0) {
		munmap(raw, len + M2);
		return -1;
	}
	t = now_ms();
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	t = now_ms() - t;
	*huge = 0;
	if (advice == MADV_HUGEPAGE) {
		/* The 2 MiB pages the mapping got, from smaps. */
		FILE *f = fopen("/proc/self/smaps", "re");
		char line[256];
		unsigned long start = 0, end = 0, kb;
		int mine = 0;

		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%lx-%lx", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
				mine = start <= (unsigned long)p && (unsigned long)p < end;
			else if (mine && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
				*huge = kb / 2048;
		}
		if (f)
			fclose(f);
	}
	munmap(raw, len + M2);
	return t;
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 0;

	if (argc != 3 || mib <= 0 || mib > 4096 || mib % 2 || rounds <= 0 || rounds > 100) {
		fprintf(stderr, "usage: fresh-pages MIB ROUNDS (MIB even, 2-4096; ROUNDS 1-100)\n");
		return 2;
	}
	for (long r = 0; r < rounds; r++) {
		unsigned long huge = 0, none;
		double h = touch((size_t)mib << 20, MADV_HUGEPAGE, &huge);
		double s = touch((size_t)mib << 20, MADV_NOHUGEPAGE, &none);

		if (h < 0 || s < 0) {
			perror("fresh-pages: mmap/madvise");
			return 1;
		}
		printf("%.3f %.3f %lu\n", h, s, huge);
	}
	return 0;
}
