/*
 * Uses libbigtext.so, linked in: 24 MiB of code in .text and 16 MiB in a
 * second executable segment.  Prints a checksum and the huge page kB of
 * each segment.  "api REGEX" first calls iodlr's MapDSOToLargePages(REGEX);
 * "hold MS" then stays alive, calling the code, for perf.  "spin MS" runs
 * both segments' code for MS ms of this thread's CPU time, then waits (idle,
 * up to 20 s) for any other thread (the preload's) to end, and prints their
 * huge page kB again.
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

/*
 * A deferred copy may still be under way: wait until the copying thread
 * has gone, idle and cheaply (a wait that read smaps would use the CPU
 * time the copy waits for).
 */
static void spin(int ms)
{
	double t0 = thread_cpu_ms();
	unsigned long s = 0;

	while (thread_cpu_ms() - t0 < ms)
		s += bigtext_sum(3) + two_sum();
	for (int waited = 0; waited < 20000 && thread_count() > 1; waited += 10)
		usleep(10 * 1000);
	printf("spin_text_huge_kb %lu\nspin_two_huge_kb %lu\nspun %lu\n", huge_kb_in(bigtext_start, bigtext_end),
	       huge_kb_in(two_start, two_end), s & 1);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "api") == 0)
		printf("api %s\n", MAP_STATUS_STR_SHORT(MapDSOToLargePages(argv[2])));
	printf("text_huge_kb %lu\n", huge_kb_in(bigtext_start, bigtext_end));
	printf("two_huge_kb %lu\n", huge_kb_in(two_start, two_end));
	printf("sum %lu %lu\n", bigtext_sum(7), two_sum());
	if (argc > 2 && strcmp(argv[1], "spin") == 0)
		spin(atoi(argv[2]));
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
