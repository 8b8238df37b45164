/* SPDX-License-Identifier: MIT */
/*
 * A measurement, not a test (meson does not build it): what 64 KiB folios
 * (mTHP) give a copy of code on anonymous memory, and whether they survive
 * the mremap() swap, counted from /proc/self/pagemap and /proc/kpageflags
 * (root) and the kernel's per-size counters.  Cross-built with
 * aarch64-linux-gnu-gcc -O2 and run in the arm64 guest with
 * hugepages-64kB/enabled at madvise (docs/failure-model.md, "arm64").
 *   mthp-probe [MiB]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MB (1UL << 20)
static long stat_of(const char *size, const char *name)
{
	char p[256], b[64];
	snprintf(p, sizeof p, "/sys/kernel/mm/transparent_hugepage/hugepages-%s/stats/%s", size, name);
	int fd = open(p, O_RDONLY);
	if (fd < 0) return -1;
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n <= 0) return -1;
	b[n] = 0;
	return atol(b);
}
/* Bytes of [a, a+len) whose 4 KiB pages are in a large folio of exactly
 * 16 pages that is mapped whole, virtually and physically 64 KiB aligned. */
static void count(const char *what, char *a, size_t len)
{
	int pm = open("/proc/self/pagemap", O_RDONLY), kf = open("/proc/kpageflags", O_RDONLY);
	size_t n = len / 4096, in64 = 0, large = 0, present = 0, thp = 0;
	uint64_t *e = calloc(n, 8);
	pread(pm, e, n * 8, (off_t)((uintptr_t)a / 4096 * 8));
	for (size_t i = 0; i < n; i++) {
		uint64_t pfn = e[i] & ((1ULL << 55) - 1), f = 0;
		if (!(e[i] >> 63)) continue;
		present++;
		if (kf >= 0) pread(kf, &f, 8, (off_t)(pfn * 8));
		if (f & ((1ULL << 15) | (1ULL << 16))) large++; /* compound head/tail */
		if (f & (1ULL << 22)) thp++;
	}
	for (size_t i = 0; i + 16 <= n; i += 16) {
		uint64_t p0 = e[i] & ((1ULL << 55) - 1);
		int ok = (e[i] >> 63) && p0 % 16 == 0;
		for (size_t k = 1; ok && k < 16; k++)
			ok = (e[i + k] >> 63) && (e[i + k] & ((1ULL << 55) - 1)) == p0 + k;
		in64 += ok ? 16 : 0;
	}
	printf("%s: present %zu KiB, in compound pages %zu KiB (THP flag %zu KiB), in aligned 64 KiB physical runs %zu KiB\n",
	       what, present * 4, large * 4, thp * 4, in64 * 4);
	free(e);
	close(pm);
	if (kf >= 0) close(kf);
}
int main(int argc, char **argv)
{
	size_t len = (argc > 1 ? atol(argv[1]) : 8) * MB;
	long a64 = stat_of("64kB", "anon_fault_alloc"), f64 = stat_of("64kB", "anon_fault_fallback");
	long a2m = stat_of("2048kB", "anon_fault_alloc");
	char *raw = mmap(NULL, len + 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *c = (char *)(((uintptr_t)raw + 2 * MB - 1) & ~(2 * MB - 1));
	if (raw == MAP_FAILED) return 1;
	printf("madvise(MADV_HUGEPAGE) %d\n", madvise(c, len, MADV_HUGEPAGE));
	printf("MADV_POPULATE_WRITE %d\n", madvise(c, len, 23));
	memset(c, 0xd5, len);
	printf("64kB anon_fault_alloc +%ld, anon_fault_fallback +%ld; 2048kB anon_fault_alloc +%ld\n",
	       stat_of("64kB", "anon_fault_alloc") - a64, stat_of("64kB", "anon_fault_fallback") - f64,
	       stat_of("2048kB", "anon_fault_alloc") - a2m);
	count("copy", c, len);
	mprotect(c, len, PROT_READ | PROT_EXEC);
	char *t = mmap(NULL, len + 2 * MB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *to = (char *)(((uintptr_t)t + 2 * MB - 1) & ~(2 * MB - 1));
	char *m = mremap(c, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	printf("mremap %s\n", m == to ? "ok" : "failed");
	count("after the swap", to, len);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "grep -A25 '^%lx-' /proc/%d/smaps | grep -E 'AnonHuge|Rss|THPeligible'", (unsigned long)to, getpid());
	fflush(stdout);
	system(cmd);
	return 0;
}
