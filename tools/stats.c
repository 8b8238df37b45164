/* SPDX-License-Identifier: MIT */
/* Paired comparisons of timings (stats.h): pure arithmetic on arrays. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of sorted @x. */
static double sorted_median(const double *x, size_t n)
{
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

double hte_median(const double *x, size_t n)
{
	double *c, m;

	if (!n)
		return 0;
	c = malloc(n * sizeof(*c));
	if (!c)
		return 0;
	memcpy(c, x, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	m = sorted_median(c, n);
	free(c);
	return m;
}

/*
 * Exact: the distribution of W+ by counting the subsets of {1..n} with
 * each rank sum, as probabilities (each rank in or out with probability
 * 1/2), so nothing overflows.  O(n^3): the last answer is kept, since the
 * early stop asks the same few again and again.
 */
long hte_wilcoxon_crit(unsigned n, double alpha)
{
	static unsigned last_n;
	static double last_alpha;
	static long last_c;
	size_t m = (size_t)n * (n + 1) / 2;
	double *p, cum = 0;
	long c = -1;

	if (!n || n > HTE_STATS_MAX_ROUNDS || alpha <= 0 || alpha >= 1)
		return -1;
	if (n == last_n && alpha == last_alpha)
		return last_c;
	p = calloc(m + 1, sizeof(*p));
	if (!p)
		return -1;
	p[0] = 1;
	for (unsigned r = 1; r <= n; r++) {
		for (size_t s = m; s >= r; s--)
			p[s] = (p[s] + p[s - r]) / 2;
		for (size_t s = r; s-- > 0;)
			p[s] /= 2;
	}
	for (size_t s = 0; s <= m / 2; s++) {
		cum += p[s];
		/* A little slack for the rounding of sums of powers of two. */
		if (cum > alpha / 2 * (1 + 1e-9))
			break;
		c = (long)s;
	}
	free(p);
	last_n = n;
	last_alpha = alpha;
	last_c = c;
	return c;
}

/* The n(n+1)/2 Walsh averages of @d, sorted; NULL without memory. */
static double *walsh(const double *d, size_t n, size_t *m)
{
	double *w;
	size_t k = 0;

	*m = n * (n + 1) / 2;
	w = malloc(*m * sizeof(*w));
	if (!w)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i; j < n; j++)
			w[k++] = (d[i] + d[j]) / 2;
	qsort(w, *m, sizeof(*w), cmp_double);
	return w;
}

double hte_hodges_lehmann(const double *d, size_t n)
{
	size_t m;
	double *w, est;

	if (!n || n > HTE_STATS_MAX_ROUNDS)
		return 0;
	w = walsh(d, n, &m);
	if (!w)
		return 0;
	est = sorted_median(w, m);
	free(w);
	return est;
}

int hte_wilcoxon_interval(const double *d, size_t n, double conf, double *lo, double *hi)
{
	long c;
	size_t m;
	double *w;

	if (!n || n > HTE_STATS_MAX_ROUNDS)
		return -1;
	c = hte_wilcoxon_crit((unsigned)n, 1 - conf);
	if (c < 0)
		return -1;
	w = walsh(d, n, &m);
	if (!w)
		return -1;
	/* Ranks c+1 and M-c, counted from 1. */
	*lo = w[c];
	*hi = w[m - 1 - (size_t)c];
	free(w);
	return 0;
}

static enum hte_decision decide(double lo, double hi, double margin)
{
	if (hi < 1)
		return HTE_LOWER;
	if (lo > 1)
		return HTE_HIGHER;
	if (lo >= 1 / (1 + margin) && hi <= 1 + margin)
		return HTE_SAME;
	return HTE_UNDECIDED;
}

int hte_paired_compare(const double *a, const double *b, size_t n, double margin,
		       struct hte_paired *out)
{
	double *d, l, h;

	memset(out, 0, sizeof(*out));
	if (!n || n > HTE_STATS_MAX_ROUNDS)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!(a[i] > 0) || !(b[i] > 0) || !isfinite(a[i]) || !isfinite(b[i]))
			return -1;
	d = malloc(n * sizeof(*d));
	if (!d)
		return -1;
	for (size_t i = 0; i < n; i++)
		d[i] = log(a[i] / b[i]);
	out->n = (unsigned)n;
	out->ratio = exp(hte_hodges_lehmann(d, n));
	out->median_a = hte_median(a, n);
	out->median_b = hte_median(b, n);
	if (hte_wilcoxon_interval(d, n, 0.95, &l, &h) == 0) {
		out->lo = exp(l);
		out->hi = exp(h);
	}
	if (hte_wilcoxon_interval(d, n, HTE_STATS_DECIDE, &l, &h) == 0) {
		out->dlo = exp(l);
		out->dhi = exp(h);
		out->decision = decide(out->dlo, out->dhi, margin);
	}
	free(d);
	return 0;
}

int hte_stats_look(unsigned n, unsigned max)
{
	unsigned at = 12;

	if (n < HTE_STATS_MIN_ROUNDS)
		return 0;
	if (n <= 12 || n == max)
		return 1;
	while (at < n)
		at = (at * 6 + 4) / 5; /* 20% more, rounded up */
	return at == n;
}

const char *hte_decision_name(enum hte_decision d)
{
	switch (d) {
	case HTE_LOWER:
		return "lower";
	case HTE_HIGHER:
		return "higher";
	case HTE_SAME:
		return "same";
	default:
		return "undecided";
	}
}
