/* SPDX-License-Identifier: MIT */
/*
 * The synthetic program of the benchmarks: BT_MIB MiB of code (bigtext.S)
 * and one mode per measurement.  Each mode prints one JSON line.
 *
 *   bench-text start                 exit at once (start-up time)
 *   bench-text loop CALLS [FUNCS]    warm up, then CALLS calls in random order
 *                                    to FUNCS functions (0: all)
 *   bench-text chain CALLS           CALLS direct jumps from page to page
 *   bench-text remap MODE FILL       time ht_remap_range() on the code
 *                                    MODE thp|explicit, FILL auto|pread|memcpy
 *   bench-text floor [HOW]           time the one-copy floor: fresh 2 MiB-aligned
 *                                    THP memory filled by one memcpy() from the
 *                                    (pre-touched, resident) code; HOW populate
 *                                    or pread: other fills, for comparison
 *   bench-text hold                  touch all code, print a line, wait for a signal
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hugetext.h"

extern const unsigned bigtext_count, bigtext_stride, bigtext_chain;
extern char bigtext_start[], bigtext_end[];
typedef int (*bigtext_fn)(int, long);

#define HUGE (2UL << 20)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of this thread: time the scheduler gave to another process is not counted. */
static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of the whole process: the library may fill the copy with a helper thread. */
static double proc_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bigtext_fn fn(unsigned i)
{
	return (bigtext_fn)(void *)(bigtext_start + (unsigned long)i * bigtext_stride);
}

/* kB of [lo, hi) on huge pages, by kind, from /proc/self/smaps. */
struct cover { unsigned long anon_huge, hugetlb, file_pmd, rss; };

static struct cover cover_of(uintptr_t lo, uintptr_t hi)
{
	struct cover c = { 0, 0, 0, 0 };
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long a, b, kb;
	int in = 0;

	if (!f)
		return c;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = b > lo && a < hi;
		else if (!in)
			continue;
		else if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			c.anon_huge += kb;
		else if (sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1)
			c.file_pmd += kb;
		else if (sscanf(line, "Private_Hugetlb: %lu kB", &kb) == 1 ||
			 sscanf(line, "Shared_Hugetlb: %lu kB", &kb) == 1)
			c.hugetlb += kb;
		else if (sscanf(line, "Rss: %lu kB", &kb) == 1)
			c.rss += kb;
	}
	fclose(f);
	return c;
}

static void print_cover(void)
{
	struct cover c = cover_of((uintptr_t)bigtext_start, (uintptr_t)bigtext_end);

	printf("\"text_kb\":%lu,\"anon_huge_kb\":%lu,\"hugetlb_kb\":%lu,\"file_pmd_kb\":%lu",
	       (unsigned long)(bigtext_end - bigtext_start) / 1024, c.anon_huge, c.hugetlb, c.file_pmd);
}

static unsigned long touch_all(void)
{
	unsigned long sum = 0;

	for (unsigned i = 0; i < bigtext_count; i++)
		sum += (unsigned)fn(i)((int)i, 0);
	return sum;
}

/*
 * CALLS calls in random order to FUNCS functions spread evenly over the
 * code (every bigtext_count/FUNCS-th one; 0 means all of them).  Each
 * function sits on its own 4 KiB page, so with few functions the code
 * lines stay in the caches while the pages still overflow the TLB: the
 * time then goes to page walks, not to fetching code from DRAM.
 */
static int do_loop(unsigned long calls, unsigned funcs)
{
	uint64_t x = 88172645463325252ull;
	unsigned long sum = touch_all();
	const uint64_t n = funcs && funcs < bigtext_count ? funcs : bigtext_count;
	const uint64_t step = bigtext_count / n;
	double t = now_ms(), c = cpu_ms();

	for (unsigned long i = 0; i < calls; i++) {
		/* xorshift64, then a multiply-shift to pick one of n functions */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		sum += (unsigned)fn((unsigned)((((x >> 32) * n) >> 32) * step))((int)i, 0);
	}
	t = now_ms() - t;
	c = cpu_ms() - c;
	printf("{\"calls\":%lu,\"ms\":%.3f,\"cpu_ms\":%.3f,\"ns_per_call\":%.4f,\"wall_ns_per_call\":%.4f,"
	       "\"functions\":%u,\"called\":%lu,", calls, t, c, c * 1e6 / (double)calls,
	       t * 1e6 / (double)calls, bigtext_count, (unsigned long)n);
	print_cover();
	printf(",\"checksum\":%lu}\n", sum);
	return 0;
}

/* CALLS direct jumps along the chain of bigtext.S: few lines, many pages, predicted targets. */
static int do_chain(unsigned long calls)
{
	unsigned long sum = touch_all();
	double t, c;

	fn(0)(1, (long)bigtext_chain * 4); /* a few laps to warm up */
	t = now_ms();
	c = cpu_ms();
	sum += (unsigned)fn(0)(1, (long)calls);
	c = cpu_ms() - c;
	t = now_ms() - t;
	printf("{\"calls\":%lu,\"ms\":%.3f,\"cpu_ms\":%.3f,\"ns_per_call\":%.4f,\"wall_ns_per_call\":%.4f,"
	       "\"functions\":%u,\"called\":%u,", calls, t, c, c * 1e6 / (double)calls,
	       t * 1e6 / (double)calls, bigtext_count, bigtext_chain);
	print_cover();
	printf(",\"checksum\":%lu}\n", sum);
	return 0;
}

static int do_remap(const char *mode, const char *fill)
{
	struct ht_options opt;
	struct ht_region r;
	double t, c;
	int err;

	ht_options_init(&opt);
	opt.mode = strcmp(mode, "explicit") == 0 ? HT_MODE_EXPLICIT : HT_MODE_THP;
	opt.fill = strcmp(fill, "pread") == 0 ? 1 : strcmp(fill, "memcpy") == 0 ? 2 : 0;
	memset(&r, 0, sizeof(r));
	c = proc_cpu_ms();
	t = now_ms();
	err = ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
	t = now_ms() - t;
	c = proc_cpu_ms() - c;
	printf("{\"ms\":%.3f,\"cpu_ms\":%.3f,\"lib_ms\":%.3f,\"bytes\":%zu,\"huge_bytes\":%zu,\"status\":\"%s\","
	       "\"mode\":\"%s\",\"fill\":\"%s\",\"error\":\"%s\",\"errno\":%d,",
	       t, c, r.ms, r.bytes, r.huge_bytes, ht_status_str(r.status), ht_mode_str(r.mode),
	       r.fill ? r.fill : "", err ? ht_error_str(r.error) : "", -err);
	print_cover();
	printf(",\"checksum\":%lu}\n", touch_all());
	return 0;
}

/*
 * The one-copy floor, and two cheaper-than-us ways to fill a copy, for
 * comparison:
 *   resident  the code is touched first (untimed): one memcpy() from it
 *   populate  MADV_POPULATE_READ maps the code from the page cache, then
 *             one memcpy() (both timed)
 *   pread     one pread() from the program's file (timed)
 * Each into fresh 2 MiB-aligned MADV_HUGEPAGE memory.
 */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
static int do_floor(const char *how)
{
	size_t len = (size_t)(bigtext_end - bigtext_start);
	volatile char sink = 0;
	char *p, *a;
	double t, cpu;
	struct cover c;
	int fd = -1;
	off_t off = 0;

	if (strcmp(how, "resident") == 0) {
		for (size_t o = 0; o < len; o += 4096)
			sink += bigtext_start[o];
	} else if (strcmp(how, "pread") == 0) {
		/* The file offset of the code, from /proc/self/maps. */
		FILE *f = fopen("/proc/self/maps", "r");
		char line[512], path[256];
		unsigned long lo, hi, fo;

		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %255s", &lo, &hi, &fo, path) == 4 &&
			    lo <= (uintptr_t)bigtext_start && (uintptr_t)bigtext_start < hi) {
				off = (off_t)(fo + ((uintptr_t)bigtext_start - lo));
				fd = open(path, O_RDONLY);
			}
		}
		if (f)
			fclose(f);
		if (fd < 0) {
			printf("{\"error\":\"cannot open the program's file\"}\n");
			return 1;
		}
	}
	cpu = proc_cpu_ms();
	t = now_ms();
	p = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("{\"error\":\"mmap: %s\"}\n", strerror(errno));
		return 1;
	}
	a = (char *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
	madvise(a, len, MADV_HUGEPAGE);
	if (fd >= 0) {
		for (size_t done = 0; done < len;) {
			ssize_t n = pread(fd, a + done, len - done, off + (off_t)done);

			if (n <= 0)
				break;
			done += (size_t)n;
		}
	} else {
		if (strcmp(how, "populate") == 0)
			madvise(bigtext_start, len, MADV_POPULATE_READ);
		memcpy(a, bigtext_start, len);
	}
	t = now_ms() - t;
	cpu = proc_cpu_ms() - cpu;
	c = cover_of((uintptr_t)a, (uintptr_t)a + len);
	printf("{\"ms\":%.3f,\"cpu_ms\":%.3f,\"how\":\"%s\",\"bytes\":%zu,\"huge_bytes\":%lu,\"same\":%d}\n",
	       t, cpu, how, len, c.anon_huge * 1024, memcmp(a, bigtext_start, len) == 0);
	return 0;
}

static __attribute__((noreturn)) void do_hold(void)
{
	unsigned long sum = touch_all();

	printf("{\"ready\":1,\"pid\":%ld,\"checksum\":%lu,", (long)getpid(), sum);
	print_cover();
	printf("}\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "start";

	if (strcmp(m, "start") == 0)
		return 0;
	if (strcmp(m, "loop") == 0)
		return do_loop(argc > 2 ? strtoul(argv[2], NULL, 10) : 10000000,
			       argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 0);
	if (strcmp(m, "chain") == 0)
		return do_chain(argc > 2 ? strtoul(argv[2], NULL, 10) : 10000000);
	if (strcmp(m, "remap") == 0)
		return do_remap(argc > 2 ? argv[2] : "thp", argc > 3 ? argv[3] : "auto");
	if (strcmp(m, "floor") == 0)
		return do_floor(argc > 2 ? argv[2] : "resident");
	if (strcmp(m, "hold") == 0)
		do_hold();
	fprintf(stderr, "usage: %s start|loop CALLS [FUNCS]|chain CALLS|remap MODE FILL|floor [resident|populate|pread]|hold\n", argv[0]);
	return 2;
}
