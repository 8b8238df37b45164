/*
 * Runs the first 4 MiB of its 40 MiB of generated code, over and over,
 * until the process has used MS ms of CPU time (argv[1]); then, when
 * asked (argv[2] and argv[3]), the 4 MiB from LATER MiB on (up to the
 * text's end) until it has used LATER_MS ms more.  Then it sleeps a
 * second (no CPU: a copy that fell due meanwhile finishes) and prints the
 * kB of its text on huge pages, and of the later 4 MiB, counted from
 * smaps independently of the library.  For the preload's copy of what
 * runs (tests/test-hot.cpp).  hot-tail is the same program with 9 MiB of code and bigtext-tail's
 * layout: the code's last 1 MiB lies alone in its last 2 MiB page.
 * With HOT_AWAIT_MS set, it then waits up to that long (wall time) for
 * its line in HUGETEXT_REPORT: a move made in the background (HUGETEXT_ASYNC)
 * may take longer than the second under emulation (arm64 under qemu).
 * With HOT_FIRST_REPORT set, the first run goes on past MS until that
 * report holds its first copy (at most 30 s of CPU more; the start's own
 * line, which defers, does not count): on a loaded
 * emulator the background thread may look long after MS, and the later
 * run must come after the first copy for a later pass to be seen.
 * With HT_TEST_THREAD set, it first starts a thread of its own and joins
 * it, as a runtime's start does (node, java): glibc is multi-threaded from
 * then on, and the preload's deferred copy may have its thread.
 *   hot-main MS [LATER_MS LATER]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bigtext.h"
#include "report-line.h"
#include "smaps-count.h"

static volatile unsigned long sink;

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs the functions of [from, from + 4 MiB) of the text until @until ms of CPU time. */
static unsigned long run_until(size_t from, double until)
{
	unsigned first = from / bigtext_stride, n = (4u << 20) / bigtext_stride;
	unsigned long sum = 0;

	if (first > bigtext_count)
		first = bigtext_count;
	if (n > bigtext_count - first)
		n = bigtext_count - first;
	while (cpu_ms() < until)
		for (unsigned i = first; i < first + n; i++)
			sum = sum * 31 + (unsigned)bigtext_get(i)(3);
	return sum;
}

/* True once HUGETEXT_REPORT holds a line of this process (or there is no report). */
static int reported(void)
{
	const char *path = getenv("HUGETEXT_REPORT");

	return !path || !*path || report_has_line(path);
}

/* True once HUGETEXT_REPORT holds a copy made for this process (or there is no report). */
static int copied(void)
{
	const char *path = getenv("HUGETEXT_REPORT");

	return !path || !*path || report_has_line_with(path, "\"status\":\"ok\"");
}

/* The first run: until @until ms of CPU, then as HOT_FIRST_REPORT asks; sets *@until to its end. */
static unsigned long run_first(double *until)
{
	unsigned long sum = run_until(0, *until);
	double cap = *until + 30000;

	while (getenv("HOT_FIRST_REPORT") && !copied() && *until < cap) {
		*until += 50;
		sum += run_until(0, *until);
	}
	return sum;
}

static void await_report(void)
{
	const char *v = getenv("HOT_AWAIT_MS");
	long left = v ? atol(v) : 0;

	for (; left > 0 && !reported(); left -= 20)
		usleep(20 * 1000);
}

static void *nothing(void *arg)
{
	return arg;
}

/* HT_TEST_THREAD: a thread of the program's own, made and joined first. */
static void own_thread(void)
{
	pthread_t th;

	if (getenv("HT_TEST_THREAD") && pthread_create(&th, NULL, nothing, NULL) == 0)
		pthread_join(th, NULL);
}

int main(int argc, char **argv)
{
	double until = argc > 1 ? atof(argv[1]) : 1000;
	double later_ms = argc > 3 ? atof(argv[2]) : 0;
	size_t later = argc > 3 ? (size_t)atol(argv[3]) << 20 : 0;
	size_t text = (size_t)(bigtext_end - bigtext_start);
	unsigned n = (4u << 20) / bigtext_stride;
	unsigned long sum;
	size_t later_end;

	/* The later run may start in the last 4 MiB (hot-tail): it ends with the text. */
	if (later > text - bigtext_stride)
		later = text - bigtext_stride;
	later_end = later + (4u << 20) < text ? later + (4u << 20) : text;
	if (n > bigtext_count)
		n = bigtext_count;
	own_thread();
	sink = run_first(&until);
	if (later_ms > 0)
		sink += run_until(later, until + later_ms);
	sleep(1);
	await_report();
	/* One pass, after the copy: its result does not depend on the time run. */
	sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum = sum * 31 + (unsigned)bigtext_get(i)(3);
	printf("sum %lu\nhuge_kb %lu\ntext_kb %lu\n", sum, huge_kb_in(bigtext_start, bigtext_end),
	       (unsigned long)text / 1024);
	if (later_ms > 0)
		printf("later_huge_kb %lu\n",
		       huge_kb_in(bigtext_start + later, bigtext_start + later_end));
	return 0;
}
