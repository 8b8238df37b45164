/* Counts, independently of the library, the huge pages behind a range. */
#ifndef HT_TEST_SMAPS_COUNT_H
#define HT_TEST_SMAPS_COUNT_H

#include <stdio.h>
#include <string.h>

/* kB of THP and hugetlb pages in the mappings that overlap [lo, hi). */
static inline unsigned long huge_kb_in(const void *lo, const void *hi)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long a, b, kb, total = 0;
	int in = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2)
			in = b > (unsigned long)lo && a < (unsigned long)hi;
		else if (in && (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1 ||
				sscanf(line, "Private_Hugetlb: %lu kB", &kb) == 1 ||
				sscanf(line, "Shared_Hugetlb: %lu kB", &kb) == 1))
			total += kb;
	}
	fclose(f);
	return total;
}

/* kB the kernel maps with PMDs from 2 MiB page-cache pages in [lo, hi). */
static inline unsigned long file_pmd_kb_in(const void *lo, const void *hi)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long a, b, kb, total = 0;
	int in = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2)
			in = b > (unsigned long)lo && a < (unsigned long)hi;
		else if (in && sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1)
			total += kb;
	}
	fclose(f);
	return total;
}

#endif
