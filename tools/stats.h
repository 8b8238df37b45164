/* SPDX-License-Identifier: MIT */
/*
 * The statistics of `hugetext measure`, the calibration and the
 * benchmark (bench/ calls them through `hugetext measure --stats`), so
 * that all three mean the same by "decided".
 *
 * Two variants are measured in the same rounds, one run of each per
 * round, and compared round by round: d_i = ln(a_i / b_i).  The ratio is
 * exp of the Hodges-Lehmann estimate of the d_i (the median of the
 * n(n+1)/2 Walsh averages (d_i + d_j) / 2, i <= j), and its interval the
 * exact Wilcoxon signed-rank interval: the Walsh averages between ranks
 * c+1 and M-c, c the largest count with P(W+ <= c) <= alpha/2 under no
 * difference (normal approximation above 200 rounds).  It assumes the
 * d_i symmetric about their centre, not normal: one run slowed by the
 * machine moves it little.
 *
 * The early stop looks after the rounds hte_stats_look() names: a 95%
 * interval looked at that often would come out "decided" by chance far
 * more often than once in 20, so the decision uses the 99.5% interval
 * (tests/tools/test-stats.cpp measures how often it is wrong with no
 * difference at all).
 *
 * Pure functions on arrays.
 */
#ifndef HTE_STATS_H
#define HTE_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The confidence of the interval that decides (see above). */
#define HTE_STATS_DECIDE 0.995
/* Fewest rounds a decision can be made at (2 / 2^9 < 0.5%). */
#define HTE_STATS_MIN_ROUNDS 9
/* Most rounds the statistics take. */
#define HTE_STATS_MAX_ROUNDS 1000

enum hte_decision {
	HTE_UNDECIDED,  /* the deciding interval holds 1 and reaches past the margin */
	HTE_LOWER,      /* a below b: the deciding interval lies below 1 */
	HTE_HIGHER,     /* a above b */
	HTE_SAME,       /* the deciding interval lies within the margin around 1 */
};

struct hte_paired {
	unsigned n;            /* rounds */
	double ratio;          /* a / b, the Hodges-Lehmann estimate */
	double lo, hi;         /* 95% interval of a / b; 0 when too few rounds */
	double dlo, dhi;       /* HTE_STATS_DECIDE's interval; 0 when too few rounds */
	double median_a, median_b;
	enum hte_decision decision;
};

/* The median of @n values (copied, not reordered).  0 when @n is 0. */
double hte_median(const double *x, size_t n);

/*
 * The largest c with P(W+ <= c) <= @alpha / 2 for @n pairs with no
 * difference (W+ the sum of the ranks of the positive differences).
 * Returns: c, or -1 when even c = 0 is too likely (too few pairs).
 */
long hte_wilcoxon_crit(unsigned n, double alpha);

/* The Hodges-Lehmann estimate of @n values: the median of their Walsh averages. */
double hte_hodges_lehmann(const double *d, size_t n);

/*
 * The Wilcoxon signed-rank interval of the centre of @n values at
 * confidence @conf (0.95).  Returns: 0 with *@lo, *@hi, or -1 when @n is
 * too small for that confidence (or above HTE_STATS_MAX_ROUNDS, or out
 * of memory).
 */
int hte_wilcoxon_interval(const double *d, size_t n, double conf, double *lo, double *hi);

/*
 * Compares @a with @b, paired round by round (@n of each, all > 0):
 * fills @out.  @margin (0.02: 2%) is how close to 1 "the same" is.
 * Returns: 0, or -1 when a value is not a positive number or @n is 0 or
 * above HTE_STATS_MAX_ROUNDS.
 */
int hte_paired_compare(const double *a, const double *b, size_t n, double margin,
		       struct hte_paired *out);

/*
 * Whether the early stop looks at round @n (counted from 1) of at most
 * @max: rounds 9 to 12, then every 20% more (15, 18, 22, 27, 33, ...),
 * and the last.  Fewer looks, fewer chances to be wrong by chance.
 */
int hte_stats_look(unsigned n, unsigned max);

/* "lower", "higher", "same", "undecided". */
const char *hte_decision_name(enum hte_decision d);

#ifdef __cplusplus
}
#endif

#endif
