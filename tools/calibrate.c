/* SPDX-License-Identifier: MIT */
/*
 * The calibration (calibrate.h): what missing the instruction TLB costs
 * here, and whether 2 MiB pages of code take that cost away.
 *
 * The loop is generated code: 4096 small nodes, each jumping to the next
 * with a direct branch in a fixed, scattered order (node k to k + 0.38 n,
 * modulo n), each on a cache line of its own (its line within the page
 * is k mod 64, so the lines spread over every cache set).  The branch
 * predictor learns the jumps and the 4096 lines (256 KiB) stay in the L2
 * cache, so the nodes cost the same wherever they lie except for their
 * translations.  Three layouts of the same nodes, each run on 4 KiB and
 * on 2 MiB pages:
 *   dense   64 pages (256 KiB): within any first-level iTLB's reach
 *   16 MiB  one node per page, 4096 pages: beyond every 4 KiB reach
 *           known (2048 entries at most) and within the 2 MiB reach
 *   64 MiB  one node every fourth page: the page tables' entries spread
 *           over more cache lines, so each walk costs more
 * Rounds run each of the six once, in a shuffled order, for about 8 ms
 * each (the thread's CPU time, pinned to one CPU); the figures are the
 * paired statistics of stats.h.
 *   walk_ns_per_page = 4 KiB pages, 64 MiB layout minus dense, per node:
 *                      the cost of one missed 4 KiB code translation
 *   gain             = 4 KiB / 2 MiB in the 64 MiB layout
 *   removed          = the part of that cost the 2 MiB pages take away
 * Large translations work when the 2 MiB pages take away most of it.  A
 * guest whose host maps its memory with 4 KiB pages (or splits
 * executable huge pages, KVM's iTLB-multihit mitigation) gets 4 KiB TLB
 * entries whatever the guest's page size: its 2 MiB pages shorten the
 * walk by one level and no more.
 */
#include "calibrate.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "maps.h"
#include "stats.h"
#include "sys.h"
#include "tool-arch.h"
#include "tool.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PAGE 4096u
#define HUGE (2u << 20)
#define NODES 4096u
#define MAX_ROUNDS 400

struct layout {
	uint64_t span;     /* bytes the nodes lie in */
	unsigned stride;   /* pages from one node's page to the next */
	unsigned per_page; /* nodes on one page */
};

static const struct layout layouts[] = {
	{ 256u << 10, 1, 64 },
	{ 16u << 20, 1, 1 },
	{ 80u << 20, 5, 1 },
};
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/* One layout on one page size: its memory and the loop's entry. */
struct loop {
	unsigned char *mem;
	size_t len;
	void (*entry)(long);
	int huge_ok;
};

/*
 * Where node @k lies in @l: its page, and its line on that page.  On 2 MiB
 * pages the memory is contiguous, so the L2 cache's set of a node follows
 * from its line and the low bits of its page number: the lines are chosen
 * so that those pairs spread evenly over the sets (the 4 KiB pages lie
 * wherever the kernel put them, which spreads too).  A layout that put
 * node k on line k mod 64 of page k would use 64 sets only and run slower
 * on 2 MiB pages for want of cache, not of translations.  The strides are
 * odd for the same reason.
 */
static uint64_t node_offset(const struct layout *l, unsigned k)
{
	uint64_t page = (uint64_t)(k / l->per_page) * l->stride;
	unsigned line = l->per_page > 1 ? k % l->per_page : (k / 16) % 64;

	return page * PAGE + line * 64;
}

static unsigned gcd(unsigned a, unsigned b)
{
	while (b) {
		unsigned t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* A step coprime with NODES, near 0.38 of the way round: each jump lands far away. */
static unsigned chain_step(void)
{
	unsigned s = (unsigned)(NODES * 0.381966);

	while (gcd(s, NODES) != 1)
		s++;
	return s;
}

/* Huge page bytes smaps shows for [@p, @p + @len). */
static uint64_t smaps_huge(const void *p, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = fopen("/proc/self/smaps", "re");
	uint64_t huge = 0;

	if (!f)
		return 0;
	/* getdelim reads it all at once: smaps must not change under us. */
	if (getdelim(&buf, &n, 0, f) > 0)
		huge = ht_smaps_huge_in(buf, strlen(buf), (uintptr_t)p, (uintptr_t)p + len);
	free(buf);
	fclose(f);
	return huge;
}

static void loop_free(struct loop *lp)
{
	if (lp->mem)
		munmap(lp->mem, lp->len);
	memset(lp, 0, sizeof(*lp));
}

/*
 * Writes layout @l's nodes into fresh memory on 2 MiB pages (@huge) or
 * 4 KiB pages, makes it executable and checks its page size in smaps.
 * Returns: 0, or -1 with @why.
 */
static int loop_make(struct loop *lp, const struct layout *l, int huge, char *why, size_t wlen)
{
	size_t len = (l->span + HUGE - 1) & ~(size_t)(HUGE - 1);
	unsigned step = chain_step();
	void *p;
	int err;

	memset(lp, 0, sizeof(*lp));
	err = ht_sys_map_anon(len, HUGE, 0, &p);
	if (err < 0) {
		snprintf(why, wlen, "cannot map %zu MiB: %s", len >> 20, strerror(-err));
		return -1;
	}
	lp->mem = p;
	lp->len = len;
	madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	/* int3 everywhere a node is not, so a stray jump traps instead of running on. */
	for (unsigned k = 0; k < NODES; k++) {
		uint64_t at = node_offset(l, k), next = node_offset(l, (k + step) % NODES);

		memset(lp->mem + at, 0xcc, 64);
		hte_arch_node(lp->mem + at, lp->mem + next);
	}
	if (huge && smaps_huge(p, len) < len)
		madvise(p, len, MADV_COLLAPSE);
	hte_arch_code_written(p, len);
	if (mprotect(p, len, PROT_READ | PROT_EXEC) != 0) {
		snprintf(why, wlen, "cannot make generated code executable: %s", strerror(errno));
		loop_free(lp);
		return -1;
	}
	lp->huge_ok = huge ? smaps_huge(p, len) >= len : smaps_huge(p, len) == 0;
	lp->entry = (void (*)(long))(void *)lp->mem;
	return 0;
}

static double thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ns per node of @steps nodes through the loop. */
static double run_ns(const struct loop *lp, long steps)
{
	double t = thread_ns();

	lp->entry(steps);
	return (thread_ns() - t) / steps;
}

static void shuffle(int *v, int n, unsigned *seed)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(rand_r(seed) % (unsigned)(i + 1)), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

static int read_boot_id(char out[40])
{
	char buf[64];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	out[0] = 0;
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	snprintf(out, 40, "%.39s", buf);
	return 0;
}

/* What the rounds measured: ns per node of each layout (L) and page size (0: 4K, 1: 2M). */
struct samples {
	unsigned n;
	double ns[NLAYOUTS][2][MAX_ROUNDS];
};

/* Whether every point has a time: a clock that ticks in milliseconds gives 0 for some. */
static int timed(const struct hte_calib *c)
{
	for (unsigned l = 0; l < c->npoints; l++)
		if (!(c->point[l].ns_4k > 0) || !(c->point[l].ns_2m > 0))
			return 0;
	return 1;
}

static void verdict(struct hte_calib *c, const struct samples *s)
{
	const unsigned far = NLAYOUTS - 1;
	double miss[MAX_ROUNDS], left[MAX_ROUNDS];
	struct hte_paired gain;
	double walk, remains, removed, dense = hte_median(s->ns[0][0], s->n);

	for (unsigned i = 0; i < s->n; i++) {
		miss[i] = s->ns[far][0][i] - s->ns[0][0][i];
		left[i] = s->ns[far][1][i] - s->ns[0][1][i];
	}
	walk = hte_median(miss, s->n);
	remains = hte_median(left, s->n);
	removed = walk > 0 ? 1 - remains / walk : 0;
	hte_paired_compare(s->ns[far][0], s->ns[far][1], s->n, 0.02, &gain);
	c->walk_ns_per_page = walk > 0 ? walk : 0;
	if (!timed(c)) {
		c->verdict = HTE_CALIB_UNKNOWN;
		snprintf(c->why, sizeof(c->why),
			 "not decided: the loop's time came out as 0 ns a jump at some size (%.2f, %.2f, "
			 "%.2f ns on 4 KiB pages): this machine's CPU-time clock is too coarse for it "
			 "(an emulator's, typically)",
			 c->point[0].ns_4k, c->point[1].ns_4k, c->point[far].ns_4k);
	} else if (gain.lo == 0) {
		c->verdict = HTE_CALIB_UNKNOWN;
		snprintf(c->why, sizeof(c->why), "too few rounds (%u) for an interval of the ns a jump", s->n);
	} else if (walk <= 0.05 * dense) {
		c->verdict = HTE_CALIB_NO_GAIN;
		snprintf(c->why, sizeof(c->why),
			 "the loop ran as fast over %u pages of code as over 64 (%.2f against %.2f ns a "
			 "jump): missing the 4 KiB TLB costs nothing measurable here, so 2 MiB pages have "
			 "nothing to remove (%.2fx)",
			 c->point[far].pages, hte_median(s->ns[far][0], s->n), dense, gain.ratio);
	} else if (gain.hi < 1.02) {
		c->verdict = HTE_CALIB_NO_GAIN;
		snprintf(c->why, sizeof(c->why),
			 "on 2 MiB pages the loop ran %.2fx as fast beyond the TLB's reach (95%%: %.2f-%.2f) "
			 "though a missed 4 KiB translation costs %.1f ns: this machine (typically its "
			 "hypervisor) gives no large translations for code",
			 gain.ratio, gain.lo, gain.hi, c->walk_ns_per_page);
	} else if (gain.lo > 1 && removed >= 0.8) {
		c->verdict = HTE_CALIB_HUGE_GAINS;
		snprintf(c->why, sizeof(c->why),
			 "on 2 MiB pages the loop ran %.2fx as fast beyond the TLB's reach (95%%: %.2f-%.2f): "
			 "a missed 4 KiB code translation costs %.1f ns here, and 2 MiB pages take %.0f%% "
			 "of that away",
			 gain.ratio, gain.lo, gain.hi, c->walk_ns_per_page, 100 * removed);
	} else if (gain.lo > 1) {
		/* Faster, but still paying for translations: the TLB holds no 2 MiB entries for most of it. */
		c->verdict = HTE_CALIB_HUGE_GAINS;
		snprintf(c->why, sizeof(c->why),
			 "on 2 MiB pages the loop ran %.2fx as fast (95%%: %.2f-%.2f) yet kept %.0f%% of the "
			 "%.1f ns a 4 KiB miss costs: shorter walks, few large translations (typically the "
			 "hypervisor maps guest memory with small pages)",
			 gain.ratio, gain.lo, gain.hi, 100 * (1 - removed), c->walk_ns_per_page);
	} else {
		c->verdict = HTE_CALIB_UNKNOWN;
		snprintf(c->why, sizeof(c->why),
			 "not decided: on 2 MiB pages the loop ran %.2fx as fast (95%%: %.2f-%.2f; %.2f "
			 "against %.2f ns a jump); the machine was too noisy, run it again",
			 gain.ratio, gain.lo, gain.hi, hte_median(s->ns[far][0], s->n),
			 hte_median(s->ns[far][1], s->n));
	}
}

static void fill_points(struct hte_calib *c, const struct samples *s, const int huge_ok[])
{
	c->npoints = NLAYOUTS;
	for (unsigned l = 0; l < NLAYOUTS; l++) {
		struct hte_calib_point *p = &c->point[l];
		struct hte_paired r;

		p->code_bytes = layouts[l].span;
		p->pages = NODES / layouts[l].per_page;
		hte_paired_compare(s->ns[l][0], s->ns[l][1], s->n, 0.02, &r);
		p->ns_4k = r.median_a;
		p->ns_2m = r.median_b;
		p->lo = r.lo;
		p->hi = r.hi;
		p->ratio = r.ratio;
		p->huge_ok = huge_ok[l];
	}
}

/* The points and the verdict from the samples (pure: the tests feed it made-up rounds). */
static void judge(struct hte_calib *c, const struct samples *s, const int huge_ok[])
{
	c->rounds = s->n;
	fill_points(c, s, huge_ok);
	if (!huge_ok[NLAYOUTS - 1] || !huge_ok[1]) {
		c->verdict = HTE_CALIB_NO_HUGE;
		snprintf(c->why, sizeof(c->why),
			 "the loop's code could not be put on 2 MiB pages here (transparent huge "
			 "pages are off, or no free 2 MiB page could be had): nothing was compared");
		return;
	}
	verdict(c, s);
}

int hte_calib_judge(struct hte_calib *c, unsigned n, const double *const ns[][2], const int huge_ok[])
{
	struct samples *s;

	if (n > MAX_ROUNDS || !(s = calloc(1, sizeof(*s))))
		return -1;
	s->n = n;
	for (unsigned l = 0; l < NLAYOUTS; l++)
		for (int h = 0; h < 2; h++)
			memcpy(s->ns[l][h], ns[l][h], n * sizeof(double));
	judge(c, s, huge_ok);
	free(s);
	return 0;
}

/* Steps for about 8 ms, from a first run of the slowest loop. */
static long size_steps(const struct loop *lp)
{
	double ns = run_ns(lp, 1 << 16);

	ns = ns > 0.05 ? ns : 0.05;
	return (long)(8e6 / ns) | 1;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int rounds(struct samples *s, const struct loop lp[][2], double seconds)
{
	int order[NLAYOUTS * 2];
	unsigned seed = 1;
	long steps;
	double t0;

	for (unsigned l = 0; l < NLAYOUTS; l++)
		for (int h = 0; h < 2; h++)
			run_ns(&lp[l][h], 1 << 14); /* page tables, predictors, caches */
	steps = size_steps(&lp[NLAYOUTS - 1][0]);
	/* The budget is the user's time: on a busy machine, fewer rounds. */
	t0 = wall_s();
	for (s->n = 0; s->n < MAX_ROUNDS; s->n++) {
		if (s->n >= 12 && wall_s() - t0 > seconds)
			break;
		for (int i = 0; i < (int)(NLAYOUTS * 2); i++)
			order[i] = i;
		shuffle(order, NLAYOUTS * 2, &seed);
		for (unsigned i = 0; i < NLAYOUTS * 2; i++) {
			unsigned l = (unsigned)order[i] / 2, h = (unsigned)order[i] % 2;

			s->ns[l][h][s->n] = run_ns(&lp[l][h], steps);
		}
	}
	return 0;
}

/* Keeps the loop on one CPU (a move would refill the TLB); returns the old mask in @old. */
static int pin(cpu_set_t *old)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	if (cpu < 0 || sched_getaffinity(0, sizeof(*old), old) != 0)
		return -1;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one);
}

/*
 * "No gain" tells the user that huge pages cannot help on this machine,
 * and doctor counts it as blocking, for the whole boot: one noisy run must
 * not say it.  On this two-core VM under load, one calibration in six
 * gave 0.96x (95%: 0.91-1.00) among runs of 1.18x-1.93x.  So the verdict
 * stands only when a second set of rounds says it too; else it is "not
 * decided", with both figures.
 */
static void confirm_no_gain(struct hte_calib *c, struct samples *s, const struct loop lp[][2],
			    double seconds, const int huge_ok[])
{
	struct hte_calib again;
	double first = c->point[NLAYOUTS - 1].ratio;

	memset(&again, 0, sizeof(again));
	rounds(s, lp, seconds);
	judge(&again, s, huge_ok);
	if (again.verdict == HTE_CALIB_NO_GAIN) {
		again.seconds = c->seconds;
		memcpy(again.boot_id, c->boot_id, sizeof(again.boot_id));
		*c = again;
		return;
	}
	c->verdict = HTE_CALIB_UNKNOWN;
	snprintf(c->why, sizeof(c->why),
		 "not decided: one set of rounds found no gain from 2 MiB pages (%.2fx), a second "
		 "found %.2fx (95%%: %.2f-%.2f; %.2f against %.2f ns a jump); the machine was too noisy, "
		 "run it again when it is quiet",
		 first, again.point[NLAYOUTS - 1].ratio, again.point[NLAYOUTS - 1].lo,
		 again.point[NLAYOUTS - 1].hi, again.point[NLAYOUTS - 1].ns_4k, again.point[NLAYOUTS - 1].ns_2m);
}

int hte_calibrate(struct hte_calib *c, double seconds)
{
	struct loop lp[NLAYOUTS][2];
	struct samples *s;
	struct timespec a, b;
	cpu_set_t old;
	int pinned, rc = 0;

	memset(c, 0, sizeof(*c));
	memset(lp, 0, sizeof(lp));
	read_boot_id(c->boot_id);
	if (!HTE_ARCH_CALIB) {
		snprintf(c->why, sizeof(c->why), "the calibration has no generated code for this processor");
		return -1;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(c->why, sizeof(c->why), "out of memory");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned l = 0; l < NLAYOUTS && rc == 0; l++)
		for (int h = 0; h < 2 && rc == 0; h++)
			rc = loop_make(&lp[l][h], &layouts[l], h, c->why, sizeof(c->why));
	if (rc == 0) {
		int huge_ok[NLAYOUTS];

		for (unsigned l = 0; l < NLAYOUTS; l++)
			huge_ok[l] = lp[l][1].huge_ok;
		pinned = pin(&old) == 0;
		rounds(s, (const struct loop(*)[2])lp, seconds > 0 ? seconds : 3);
		judge(c, s, huge_ok);
		if (c->verdict == HTE_CALIB_NO_GAIN)
			confirm_no_gain(c, s, (const struct loop(*)[2])lp, seconds > 0 ? seconds : 3, huge_ok);
		if (pinned)
			sched_setaffinity(0, sizeof(old), &old);
	}
	for (unsigned l = 0; l < NLAYOUTS; l++)
		for (int h = 0; h < 2; h++)
			loop_free(&lp[l][h]);
	free(s);
	clock_gettime(CLOCK_MONOTONIC, &b);
	c->seconds = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	return rc;
}

/* ---------------------------------------------------------------- the per-boot file */

static const char *const verdict_names[] = {
	[HTE_CALIB_UNKNOWN] = "unknown",
	[HTE_CALIB_HUGE_GAINS] = "huge_gains",
	[HTE_CALIB_NO_GAIN] = "no_gain",
	[HTE_CALIB_NO_HUGE] = "no_huge",
};

const char *hte_calib_verdict_name(enum hte_calib_verdict v)
{
	return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ? verdict_names[v] : "unknown";
}

void hte_calib_json(FILE *f, const struct hte_calib *c)
{
	fprintf(f, "{\"verdict\":\"%s\",\"why\":", hte_calib_verdict_name(c->verdict));
	hte_json_str(f, c->why);
	fputs(",\"boot_id\":", f);
	hte_json_str(f, c->boot_id);
	fprintf(f, ",\"seconds\":%.3f,\"rounds\":%u,\"walk_ns_per_page\":%.4f,\"points\":[",
		c->seconds, c->rounds, c->walk_ns_per_page);
	for (unsigned i = 0; i < c->npoints && i < HTE_CALIB_MAX_POINTS; i++) {
		const struct hte_calib_point *p = &c->point[i];

		fprintf(f, "%s{\"code_bytes\":%llu,\"pages\":%u,\"ns_4k\":%.4f,\"ns_2m\":%.4f,"
			"\"ratio\":%.4f,\"lo\":%.4f,\"hi\":%.4f,\"huge_ok\":%s}",
			i ? "," : "", (unsigned long long)p->code_bytes, p->pages, p->ns_4k, p->ns_2m,
			p->ratio, p->lo, p->hi, p->huge_ok ? "true" : "false");
	}
	fputs("]}", f);
}

static int get_double(struct json_object *o, const char *key, double *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return -1;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return -1;
	*out = json_object_get_double(v);
	return isfinite(*out) && *out >= 0 ? 0 : -1;
}

static int get_string(struct json_object *o, const char *key, char *out, size_t len)
{
	struct json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	if (strlen(s) >= len)
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int parse_point(struct json_object *o, struct hte_calib_point *p)
{
	struct json_object *ok;
	double bytes, pages;

	if (!json_object_is_type(o, json_type_object) || get_double(o, "code_bytes", &bytes) ||
	    get_double(o, "pages", &pages) || get_double(o, "ns_4k", &p->ns_4k) ||
	    get_double(o, "ns_2m", &p->ns_2m) || get_double(o, "ratio", &p->ratio) ||
	    get_double(o, "lo", &p->lo) ||
	    get_double(o, "hi", &p->hi) || !json_object_object_get_ex(o, "huge_ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean) || bytes > 1e15 || pages > 1e9)
		return -1;
	p->code_bytes = (uint64_t)bytes;
	p->pages = (unsigned)pages;
	p->huge_ok = json_object_get_boolean(ok);
	return 0;
}

static int parse_object(struct json_object *o, struct hte_calib *c)
{
	struct json_object *pts;
	char v[32];
	double rounds;
	size_t n;

	if (!json_object_is_type(o, json_type_object) || get_string(o, "verdict", v, sizeof(v)) ||
	    get_string(o, "why", c->why, sizeof(c->why)) ||
	    get_string(o, "boot_id", c->boot_id, sizeof(c->boot_id)) ||
	    get_double(o, "seconds", &c->seconds) || get_double(o, "rounds", &rounds) ||
	    get_double(o, "walk_ns_per_page", &c->walk_ns_per_page) ||
	    !json_object_object_get_ex(o, "points", &pts) || !json_object_is_type(pts, json_type_array))
		return -1;
	c->verdict = HTE_CALIB_UNKNOWN + 100;
	for (unsigned i = 0; i < sizeof(verdict_names) / sizeof(verdict_names[0]); i++)
		if (strcmp(v, verdict_names[i]) == 0)
			c->verdict = (enum hte_calib_verdict)i;
	n = json_object_array_length(pts);
	if (c->verdict > HTE_CALIB_NO_HUGE || n > HTE_CALIB_MAX_POINTS || rounds > 1e6)
		return -1;
	c->rounds = (unsigned)rounds;
	c->npoints = (unsigned)n;
	for (size_t i = 0; i < n; i++)
		if (parse_point(json_object_array_get_idx(pts, i), &c->point[i]) < 0)
			return -1;
	return 0;
}

int hte_calib_parse(const char *json, size_t len, struct hte_calib *c)
{
	struct json_tokener *t;
	struct json_object *o;
	int rc;

	memset(c, 0, sizeof(*c));
	if (len > 1 << 20 || memchr(json, 0, len))
		return -1;
	t = json_tokener_new();
	if (!t)
		return -1;
	o = json_tokener_parse_ex(t, json, (int)len);
	/* Only one object, nothing after it but white space. */
	rc = o && json_tokener_get_error(t) == json_tokener_success ? 0 : -1;
	if (rc == 0)
		for (size_t at = json_tokener_get_parse_end(t); at < len; at++)
			if (json[at] != ' ' && json[at] != '\n' && json[at] != '\t' && json[at] != '\r')
				rc = -1;
	if (rc == 0)
		rc = parse_object(o, c);
	json_object_put(o);
	json_tokener_free(t);
	if (rc < 0)
		memset(c, 0, sizeof(*c));
	return rc;
}

/*
 * The file of this boot, when root wrote it: others' files are not
 * believed (a user could write a verdict for everyone to read).
 */
static int load(const char *path, struct hte_calib *c)
{
	char buf[16384], boot[40];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) ||
	    st.st_size >= (off_t)sizeof(buf)) {
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || hte_calib_parse(buf, (size_t)n, c) < 0)
		return -1;
	if (read_boot_id(boot) < 0 || strcmp(boot, c->boot_id) != 0)
		return -1;
	return 0;
}

/* Writes @c to @path through a file beside it, renamed over it: never half a file. */
static int save(const char *path, const struct hte_calib *c)
{
	char tmp[256], dir[256];
	FILE *f;
	int fd, rc;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	/* Readable by all whatever the umask: every user's measure reads it. */
	fchmod(fd, 0644);
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	hte_calib_json(f, c);
	fputc('\n', f);
	rc = fflush(f) == 0 && fsync(fd) == 0 ? 0 : -1;
	rc |= fclose(f);
	if (rc == 0)
		rc = rename(tmp, path);
	if (rc != 0)
		unlink(tmp);
	return rc;
}

int hte_calib_get(struct hte_calib *c, int force, double seconds)
{
	if (!force && load(HTE_CALIB_PATH, c) == 0)
		return 0;
	if (hte_calibrate(c, seconds) < 0)
		return -1;
	if (geteuid() == 0)
		save(HTE_CALIB_PATH, c);
	return 0;
}

/* ---------------------------------------------------------------- text */

static const char *verdict_line(enum hte_calib_verdict v)
{
	switch (v) {
	case HTE_CALIB_HUGE_GAINS:
		return "2 MiB pages of code run faster here";
	case HTE_CALIB_NO_GAIN:
		return "2 MiB pages of code gain nothing here";
	case HTE_CALIB_NO_HUGE:
		return "the loop's code could not be put on 2 MiB pages";
	default:
		return "not decided";
	}
}

void hte_calib_print(FILE *f, const struct hte_calib *c)
{
	fprintf(f, "calibration: %s (%u rounds, %.1f s)\n", verdict_line(c->verdict), c->rounds, c->seconds);
	fprintf(f, "  %s\n", c->why[0] ? c->why : "no reason recorded");
	for (unsigned i = 0; i < c->npoints && i < HTE_CALIB_MAX_POINTS; i++) {
		const struct hte_calib_point *p = &c->point[i];
		char size[32];

		fprintf(f, "  %u pages of code in %s: %.2f ns a jump on 4 KiB pages, %.2f on 2 MiB",
			p->pages, hte_human(p->code_bytes, size, sizeof(size)), p->ns_4k, p->ns_2m);
		if (p->lo > 0)
			fprintf(f, ": %.2fx (95%%: %.2f-%.2f)", p->ratio, p->lo, p->hi);
		fprintf(f, "%s\n", p->huge_ok ? "" : " (not on 2 MiB pages)");
	}
}
