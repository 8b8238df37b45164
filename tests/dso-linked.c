/*
 * Uses libbigtext.so, linked in: 24 MiB of code in .text and 16 MiB in a
 * second executable segment.  Prints a checksum and the huge page kB of
 * each segment.  "api REGEX" first calls iodlr's MapDSOToLargePages(REGEX);
 * "hold MS" then stays alive, calling the code, for perf.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bigtext.h"
#include "large_page.h"
#include "smaps-count.h"

extern char two_start[], two_end[];

static unsigned long two_sum(void)
{
	unsigned long n = 0;

	for (char *p = two_start; p < two_end; p += 4096) {
		((void (*)(void))(void *)p)();
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "api") == 0)
		printf("api %s\n", MAP_STATUS_STR_SHORT(MapDSOToLargePages(argv[2])));
	printf("text_huge_kb %lu\n", huge_kb_in(bigtext_start, bigtext_end));
	printf("two_huge_kb %lu\n", huge_kb_in(two_start, two_end));
	printf("sum %lu %lu\n", bigtext_sum(7), two_sum());
	if (argc > 2 && strcmp(argv[1], "hold") == 0) {
		time_t until = time(NULL) + atoi(argv[2]) / 1000 + 1;
		unsigned long s = 0;

		printf("ready\n");
		fflush(stdout);
		while (time(NULL) < until)
			s += bigtext_sum(3);
		printf("held %lu\n", s & 1);
	}
	return 0;
}
