/* Counts, independently of the library, the huge pages behind a range. */
#ifndef HT_TEST_SMAPS_COUNT_H
#define HT_TEST_SMAPS_COUNT_H

#include <stdio.h>
#include <string.h>

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

#endif
