/* SPDX-License-Identifier: MIT */
/*
 * The calibration: the machine's own cost of code on 4 KiB pages against
 * 2 MiB pages, measured by a bundled loop over generated code at sizes
 * below and above the instruction TLB's reach.  It tells what a 4 KiB
 * page walk costs for code here, and whether 2 MiB pages of code give
 * anything at all on this machine (a hypervisor that backs guest memory
 * with small pages, or splits executable huge pages, gives nothing).
 *
 * `hugetext measure` uses it for its estimate without counters; `hugetext
 * doctor` prints its verdict.  The result is kept per boot in
 * HTE_CALIB_PATH (with the boot's id), so it runs once per boot unless
 * asked again.
 */
#ifndef HTE_CALIBRATE_H
#define HTE_CALIBRATE_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HTE_CALIB_PATH "/run/hugetext/calibration.json"

enum hte_calib_verdict {
	HTE_CALIB_UNKNOWN,      /* not run, or it could not run (why says) */
	HTE_CALIB_HUGE_GAINS,   /* 2 MiB pages of code run faster beyond the TLB's reach */
	HTE_CALIB_NO_GAIN,      /* they sat on huge pages and gained nothing: the host gives no large translations */
	HTE_CALIB_NO_HUGE,      /* the loop's code could not be put on 2 MiB pages here */
};

/* One size the loop ran at. */
struct hte_calib_point {
	uint64_t code_bytes;    /* code the loop runs through */
	double ns_4k, ns_2m;    /* ns per step (median of rounds), code on 4 KiB / 2 MiB pages */
	double lo, hi;          /* 95% interval of ns_4k / ns_2m */
	int huge_ok;            /* the 2 MiB variant was really on huge pages */
	unsigned pages;         /* distinct 4 KiB pages the loop runs through */
	double ratio;           /* ns_4k / ns_2m, round by round (stats.h's estimate) */
};

#define HTE_CALIB_MAX_POINTS 8
struct hte_calib {
	enum hte_calib_verdict verdict;
	char why[256];          /* one plain sentence, with the figures */
	char boot_id[40];       /* /proc/sys/kernel/random/boot_id when it ran */
	double seconds;         /* what it took */
	double walk_ns_per_page; /* the cost of one 4 KiB code translation missed, 0 unknown */
	unsigned npoints;
	struct hte_calib_point point[HTE_CALIB_MAX_POINTS];
	unsigned rounds;        /* paired rounds the figures come from */
};

/*
 * Runs the calibration for about @seconds (a few).  Returns: 0 with @c
 * filled (its verdict may be HTE_CALIB_UNKNOWN with why), or -1 when it
 * could not run at all (why says).
 */
int hte_calibrate(struct hte_calib *c, double seconds);

/*
 * The figures and the verdict from @n rounds of the loop, as
 * hte_calibrate() makes them: ns[L][0] and ns[L][1] the ns per jump of
 * layout L (dense 64 pages, 4096 pages in 16 MiB, 4096 pages in 80 MiB)
 * on 4 KiB and on 2 MiB pages, huge_ok[L] whether the 2 MiB run really
 * was on huge pages.  Pure (the tests feed it made-up rounds).
 * Returns: 0, or -1 when @n is too many.
 */
#define HTE_CALIB_LAYOUTS 3
int hte_calib_judge(struct hte_calib *c, unsigned n, const double *const ns[][2], const int huge_ok[]);

/*
 * The calibration of this boot: read from HTE_CALIB_PATH when it is
 * there, root's, and of this boot, unless @force; else run and (as root)
 * saved there.  Returns: 0, or -1 with c->why.
 */
int hte_calib_get(struct hte_calib *c, int force, double seconds);

/* Text for people (a few lines), and one JSON object. */
void hte_calib_print(FILE *f, const struct hte_calib *c);
void hte_calib_json(FILE *f, const struct hte_calib *c);

/* "huge_gains", "no_gain", "no_huge", "unknown": the verdict's name in JSON. */
const char *hte_calib_verdict_name(enum hte_calib_verdict v);

/* Parses what hte_calib_json() wrote.  Returns: 0, or -1.  Pure. */
int hte_calib_parse(const char *json, size_t len, struct hte_calib *c);

#ifdef __cplusplus
}
#endif

#endif
