/*
 * Counts, independently of the library, the huge pages behind a range;
 * also this process's threads and a thread's CPU time, for the test
 * programs that wait on a background move.
 */
#ifndef HT_TEST_SMAPS_COUNT_H
#define HT_TEST_SMAPS_COUNT_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* kB of the smaps fields named in @fields (NULL-terminated) in the mappings that overlap [lo, hi). */
static inline unsigned long smaps_kb_in(const void *lo, const void *hi, const char *const *fields)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512], name[64];
	unsigned long a, b, kb, total = 0;
	int in = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			in = b > (unsigned long)lo && a < (unsigned long)hi;
			continue;
		}
		if (!in || sscanf(line, "%63[^:]: %lu kB", name, &kb) != 2)
			continue;
		for (const char *const *n = fields; *n; n++)
			if (strcmp(name, *n) == 0)
				total += kb;
	}
	fclose(f);
	return total;
}

/* kB of THP and hugetlb pages in the mappings that overlap [lo, hi). */
static inline unsigned long huge_kb_in(const void *lo, const void *hi)
{
	static const char *const fields[] = { "AnonHugePages", "Private_Hugetlb", "Shared_Hugetlb", NULL };

	return smaps_kb_in(lo, hi, fields);
}

/* kB the kernel maps with PMDs from 2 MiB page-cache pages in [lo, hi). */
static inline unsigned long file_pmd_kb_in(const void *lo, const void *hi)
{
	static const char *const fields[] = { "FilePmdMapped", NULL };

	return smaps_kb_in(lo, hi, fields);
}

/*
 * kB of anonymous memory in [lo, hi) on folios of 64 KiB or more, counted
 * by 64 KiB pieces from /proc/self/pagemap's frames and /proc/kpageflags
 * (both root's): a piece counts when its 16 pages are present, physically
 * contiguous from a 64 KiB-aligned frame, anonymous, and one folio's (the
 * first page a folio's head or tail, the 15 others its tails).  -1 when
 * the files cannot be read (not root).
 */
static inline long folio_anon_kb_in(const void *lo, const void *hi)
{
	enum { PIECE = 16, KPF_ANON = 12, KPF_HEAD = 15, KPF_TAIL = 16 };
	uintptr_t a = ((uintptr_t)lo + 65535) & ~(uintptr_t)65535;
	int pm = open("/proc/self/pagemap", O_RDONLY), kf = open("/proc/kpageflags", O_RDONLY);
	long kb = 0;

	for (; pm >= 0 && kf >= 0 && a + 65536 <= (uintptr_t)hi; a += 65536) {
		uint64_t e[PIECE], fl, pfn0;
		int ok = pread(pm, e, sizeof(e), (off_t)(a / 4096 * 8)) == (ssize_t)sizeof(e);

		pfn0 = e[0] & ((1ULL << 55) - 1);
		ok = ok && pfn0 && pfn0 % PIECE == 0;
		for (int i = 0; ok && i < PIECE; i++) {
			ok = (e[i] >> 63) && (e[i] & ((1ULL << 55) - 1)) == pfn0 + (uint64_t)i &&
			     pread(kf, &fl, 8, (off_t)((pfn0 + (uint64_t)i) * 8)) == 8 &&
			     (fl >> KPF_ANON & 1) && (fl >> KPF_TAIL & 1 || (i == 0 && fl >> KPF_HEAD & 1));
		}
		if (pfn0 == 0 && (e[0] >> 63)) {
			kb = -1; /* frames hidden: not root */
			break;
		}
		kb += ok ? 64 : 0;
	}
	if (pm < 0 || kf < 0)
		kb = -1;
	if (pm >= 0)
		close(pm);
	if (kf >= 0)
		close(kf);
	return kb;
}

/* This process's thread count, from /proc/self/status ("Threads:"), or -1. */
static inline int thread_count(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* The calling thread's CPU time, in ms. */
static inline double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
