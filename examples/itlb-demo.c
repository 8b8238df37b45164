/*
 * The bundled example: a program with 64 MiB of code, one small function
 * on every 4 KiB page, called in a random order.  With 4 KiB pages nearly
 * every call misses the instruction TLB; on 2 MiB pages most hit.
 *
 * bigtext_count is a power of two here, so a mask picks the page.
 *
 * It prints how much of its code sits on huge pages (from its own
 * /proc/self/smaps) and how long the calls took.
 *
 *   itlb-demo [CALLS]        CALLS defaults to 20000000
 *   itlb-demo --api [CALLS]  moves its own code first, with
 *                            MapStaticCodeToLargePages() (iodlr's API)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bigtext.h"
#include "large_page.h"

static unsigned long text_huge_kb(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long lo, hi, kb, total = 0;
	int in = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = hi > (unsigned long)bigtext_start && lo < (unsigned long)bigtext_end;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			total += kb;
	}
	fclose(f);
	return total;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long calls = 20000000, x = 88172645463325252ul, sum = 0;
	int arg = 1;
	double t;

	if (argc > arg && strcmp(argv[arg], "--api") == 0) {
		map_status st = MapStaticCodeToLargePages();

		printf("MapStaticCodeToLargePages: %s\n", MAP_STATUS_STR(st));
		arg++;
	}
	if (argc > arg)
		calls = strtoul(argv[arg], NULL, 10);
	t = now();
	for (unsigned long i = 0; i < calls; i++) {
		/* xorshift: a random page each call, the same order each run */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		sum += (unsigned)bigtext_get((unsigned)(x & (bigtext_count - 1)))((int)i);
	}
	t = now() - t;
	printf("code: %.0f MiB, on huge pages: %lu MiB\n",
	       (double)(bigtext_end - bigtext_start) / 1048576, text_huge_kb() / 1024);
	printf("calls: %lu in %.3f s (checksum %lu)\n", calls, t, sum);
	return 0;
}
