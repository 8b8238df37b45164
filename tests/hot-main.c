/*
 * Runs the first 4 MiB of its 40 MiB of generated code, over and over,
 * until the process has used MS ms of CPU time (argv[1]), then sleeps a
 * second (no CPU: a copy that fell due meanwhile finishes) and prints the
 * kB of its text on huge pages, counted from smaps independently of the
 * library.  For the preload's copy of what runs (tests/test-hot.cpp).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bigtext.h"
#include "smaps-count.h"

static volatile unsigned long sink;

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double until = argc > 1 ? atof(argv[1]) : 1000;
	unsigned n = (4u << 20) / bigtext_stride;
	unsigned long sum = 0;

	if (n > bigtext_count)
		n = bigtext_count;
	while (cpu_ms() < until)
		for (unsigned i = 0; i < n; i++)
			sum = sum * 31 + (unsigned)bigtext_get(i)(3);
	sleep(1);
	/* One pass, after the copy: its result does not depend on the time run. */
	sink = sum; /* keeps the loop's work */
	sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum = sum * 31 + (unsigned)bigtext_get(i)(3);
	printf("sum %lu\nhuge_kb %lu\ntext_kb %lu\n", sum, huge_kb_in(bigtext_start, bigtext_end),
	       (unsigned long)(bigtext_end - bigtext_start) / 1024);
	return 0;
}
