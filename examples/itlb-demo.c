/*
 * The bundled example: a program with 64 MiB of code, one small function
 * on every 4 KiB page, called in a random order.  With 4 KiB pages nearly
 * every call misses the instruction TLB; on 2 MiB pages most hit.
 *
 * bigtext_count is a power of two here, so a mask picks the page.
 *
 * It prints how much of its code sits on huge pages, counted as the kernel
 * counts it in its own /proc/self/smaps (anonymous THP, the page cache's
 * and shmem's PMD mappings, hugetlb pages: every kind the library may
 * use), and how many calls it made in how long.
 *
 *   itlb-demo [CALLS]              CALLS calls (default 20000000)
 *   itlb-demo --seconds S          calls for S seconds of CPU time, in a
 *                                  thread of its own as a runtime or a
 *                                  server works; also says from when the
 *                                  code was on huge pages, and the rate of
 *                                  calls (per CPU second) before and after
 *   itlb-demo --api [...]          moves its own code first, with
 *                                  MapStaticCodeToLargePages() (iodlr's API)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bigtext.h"
#include "large_page.h"

struct huge_kb {
	unsigned long anon, file, shmem, hugetlb;
};

static unsigned long total_kb(const struct huge_kb *h)
{
	return h->anon + h->file + h->shmem + h->hugetlb;
}

/* The huge pages that map the code, by kind, from /proc/self/smaps. */
static struct huge_kb text_huge_kb(void)
{
	struct huge_kb h = { 0, 0, 0, 0 };
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long lo, hi, kb;
	int in = 0;

	if (!f)
		return h;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = hi > (unsigned long)bigtext_start && lo < (unsigned long)bigtext_end;
		else if (!in)
			continue;
		else if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			h.anon += kb;
		else if (sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1)
			h.file += kb;
		else if (sscanf(line, "ShmemPmdMapped: %lu kB", &kb) == 1)
			h.shmem += kb;
		else if (sscanf(line, "Private_Hugetlb: %lu kB", &kb) == 1 ||
			 sscanf(line, "Shared_Hugetlb: %lu kB", &kb) == 1)
			h.hugetlb += kb;
	}
	fclose(f);
	return h;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* The process's CPU time: all of its threads, a background copy's too. */
static double cpu_now(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* One call on a random page: xorshift, the same order each run. */
static unsigned long calls_from(unsigned long *x, unsigned long from, unsigned long n)
{
	unsigned long sum = 0;

	for (unsigned long i = from; i < from + n; i++) {
		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		sum += (unsigned)bigtext_get((unsigned)(*x & (bigtext_count - 1)))((int)i);
	}
	return sum;
}

/*
 * Calls until the process has used @seconds of CPU time, in slices of
 * 20 ms; every 100 ms it looks whether the code is on huge pages yet (a
 * deferred copy moves it while this runs), and counts the calls before and
 * after that moment apart.  CPU time, not wall time: the rates hold on a
 * loaded machine, and the defaults' wait (also CPU time) comes at the same
 * point of every run.
 */
static void run_for(double seconds, unsigned long *x, unsigned long *sum)
{
	const unsigned long slice = 20000;
	unsigned long calls = 0, calls_before = 0;
	double t0 = cpu_now(), t = t0, next_look = t0, moved_at = -1;

	while (t - t0 < seconds) {
		unsigned long n = 0;
		double until = t + 0.02;

		while ((t = cpu_now()) < until) {
			*sum += calls_from(x, calls + n, slice);
			n += slice;
		}
		calls += n;
		if (moved_at < 0 && t >= next_look) {
			struct huge_kb h = text_huge_kb();

			if (total_kb(&h) >= 2048) {
				moved_at = t - t0;
				calls_before = calls;
			}
			next_look = t + 0.1;
		}
	}
	t -= t0;
	if (moved_at < 0)
		printf("code on huge pages: not during the run\n");
	else
		printf("code on huge pages: from %.2f CPU s (%.2f M calls/s before, %.2f M calls/s after)\n",
		       moved_at, moved_at > 0 ? calls_before / moved_at / 1e6 : 0,
		       (calls - calls_before) / (t - moved_at) / 1e6);
	printf("calls: %lu in %.3f CPU s, %.3f M calls/s\n", calls, t, calls / t / 1e6);
}

struct timed_run {
	double seconds;
	unsigned long *x, *sum;
};

static void *timed_run(void *arg)
{
	struct timed_run *r = arg;

	run_for(r->seconds, r->x, r->sum);
	return NULL;
}

/*
 * The timed run works in a thread of its own, as the long-running programs
 * the preload's defaults copy for do (runtimes, servers): a single-threaded
 * program keeps its single-threaded glibc and gets no thread of the
 * preload's (docs/usage.md), so the defaults would never copy here.
 */
static void run_in_thread(double seconds, unsigned long *x, unsigned long *sum)
{
	struct timed_run r = { seconds, x, sum };
	pthread_t th;

	if (pthread_create(&th, NULL, timed_run, &r) != 0) {
		run_for(seconds, x, sum);
		return;
	}
	pthread_join(th, NULL);
}

int main(int argc, char **argv)
{
	unsigned long calls = 20000000, x = 88172645463325252ul, sum = 0;
	double seconds = 0, t = 0;
	struct huge_kb h;
	int arg = 1;

	if (argc > arg && strcmp(argv[arg], "--api") == 0) {
		map_status st = MapStaticCodeToLargePages();

		printf("MapStaticCodeToLargePages: %s\n", MAP_STATUS_STR(st));
		arg++;
	}
	if (argc > arg + 1 && strcmp(argv[arg], "--seconds") == 0)
		seconds = strtod(argv[arg + 1], NULL);
	else if (argc > arg)
		calls = strtoul(argv[arg], NULL, 10);
	if (seconds > 0) {
		run_in_thread(seconds, &x, &sum);
	} else {
		t = now();
		sum = calls_from(&x, 0, calls);
		t = now() - t;
	}
	h = text_huge_kb();
	printf("code: %.0f MiB, on huge pages: %lu MiB (anonymous %lu, page cache %lu, shmem %lu, hugetlb %lu)\n",
	       (double)(bigtext_end - bigtext_start) / 1048576, total_kb(&h) / 1024, h.anon / 1024,
	       h.file / 1024, h.shmem / 1024, h.hugetlb / 1024);
	if (seconds > 0)
		printf("checksum %lu\n", sum);
	else
		printf("calls: %lu in %.3f s (checksum %lu)\n", calls, t, sum);
	return 0;
}
