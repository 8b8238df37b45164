// Description: the statistics of measure, the calibration and the bench
// (tools/stats.c): Wilcoxon's critical values against the published table and
// against counting, the Hodges-Lehmann estimate and interval on known
// samples, the decisions, hostile values, and how often the early stop is
// wrong when there is no difference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "stats.h"

namespace {

// P(W+ <= c) for n pairs, by listing all 2^n sign patterns (independent of
// the library's recurrence).
double brute_cdf(unsigned n, long c)
{
	unsigned long hits = 0;
	for (unsigned long mask = 0; mask < (1ul << n); mask++) {
		long sum = 0;
		for (unsigned r = 1; r <= n; r++)
			if (mask & (1ul << (r - 1)))
				sum += r;
		hits += sum <= c;
	}
	return (double)hits / (double)(1ul << n);
}

std::vector<double> walsh_sorted(const std::vector<double> &d)
{
	std::vector<double> w;
	for (size_t i = 0; i < d.size(); i++)
		for (size_t j = i; j < d.size(); j++)
			w.push_back((d[i] + d[j]) / 2);
	std::sort(w.begin(), w.end());
	return w;
}

} // namespace

TEST_CASE("Wilcoxon's critical values are the published table's", "[stats]")
{
	// Two-sided 5% and 1%, as every table of the signed-rank test has them.
	const long t05[][2] = { { 5, -1 }, { 6, 0 }, { 7, 2 }, { 8, 3 }, { 9, 5 }, { 10, 8 }, { 11, 10 },
				{ 12, 13 }, { 13, 17 }, { 14, 21 }, { 15, 25 }, { 16, 29 }, { 17, 34 },
				{ 18, 40 }, { 19, 46 }, { 20, 52 }, { 25, 89 }, { 30, 137 } };
	const long t01[][2] = { { 7, -1 }, { 8, 0 }, { 9, 1 }, { 10, 3 }, { 11, 5 }, { 12, 7 }, { 13, 9 },
				{ 14, 12 }, { 15, 15 }, { 16, 19 }, { 17, 23 }, { 18, 27 }, { 19, 32 },
				{ 20, 37 }, { 25, 68 }, { 30, 109 } };
	for (auto &t : t05)
		CHECK(hte_wilcoxon_crit((unsigned)t[0], 0.05) == t[1]);
	for (auto &t : t01)
		CHECK(hte_wilcoxon_crit((unsigned)t[0], 0.01) == t[1]);
	CHECK(hte_wilcoxon_crit(0, 0.05) == -1);
	CHECK(hte_wilcoxon_crit(10, 0) == -1);
	CHECK(hte_wilcoxon_crit(10, 1) == -1);
}

TEST_CASE("the critical values are the largest whose tail is within alpha/2, by counting", "[stats]")
{
	for (unsigned n = 1; n <= 16; n++) {
		for (double alpha : { 0.05, 0.01, 0.2 }) {
			long c = hte_wilcoxon_crit(n, alpha);
			INFO("n " << n << " alpha " << alpha);
			if (c >= 0)
				CHECK(brute_cdf(n, c) <= alpha / 2);
			CHECK(brute_cdf(n, c + 1) > alpha / 2);
		}
	}
	// Beyond 200 pairs, the normal approximation: within 2 of the exact
	// values (8532, 19628, 8028: counted with exact integers, in Python).
	CHECK(std::labs(hte_wilcoxon_crit(201, 0.05) - 8532) <= 2);
	CHECK(std::labs(hte_wilcoxon_crit(300, 0.05) - 19628) <= 2);
	CHECK(std::labs(hte_wilcoxon_crit(201, 0.01) - 8028) <= 2);
}

TEST_CASE("the Hodges-Lehmann estimate is the median of the Walsh averages", "[stats]")
{
	// {1, 2, 3}: averages 1, 1.5, 2, 2, 2.5, 3; the median of six: 2.
	double a[] = { 1, 2, 3 };
	CHECK(hte_hodges_lehmann(a, 3) == Approx(2));
	// {0, 0, 0, 10}: the averages 0 x6, 5 x3, 10: the median stays 0, where the mean is 2.5.
	double b[] = { 0, 10, 0, 0 };
	CHECK(hte_hodges_lehmann(b, 4) == Approx(0));
	double one[] = { 0.3 };
	CHECK(hte_hodges_lehmann(one, 1) == Approx(0.3));
	CHECK(hte_median(a, 3) == 2);
	double even[] = { 4, 1, 3, 2 };
	CHECK(hte_median(even, 4) == Approx(2.5));
	CHECK(even[0] == 4); // not reordered
}

TEST_CASE("the interval takes the Walsh averages of ranks c+1 and M-c", "[stats]")
{
	// Ten differences: c = 8 at 95%, so ranks 9 and 47 of the 55 averages.
	std::vector<double> d = { 0.12, -0.05, 0.31, 0.08, 0.22, -0.11, 0.17, 0.04, 0.26, 0.09 };
	std::vector<double> w = walsh_sorted(d);
	REQUIRE(w.size() == 55);
	double lo, hi;
	REQUIRE(hte_wilcoxon_interval(d.data(), d.size(), 0.95, &lo, &hi) == 0);
	CHECK(lo == w[8]);
	CHECK(hi == w[46]);
	// At 99%, c = 3: ranks 4 and 52, a wider interval.
	double dlo, dhi;
	REQUIRE(hte_wilcoxon_interval(d.data(), d.size(), 0.99, &dlo, &dhi) == 0);
	CHECK(dlo == w[3]);
	CHECK(dhi == w[51]);
	// Six values at 95%: c = 0, the smallest and largest averages (= values).
	REQUIRE(hte_wilcoxon_interval(d.data(), 6, 0.95, &lo, &hi) == 0);
	CHECK(lo == -0.11);
	CHECK(hi == 0.31);
	// Five are too few for 95%, seven for 99%.
	CHECK(hte_wilcoxon_interval(d.data(), 5, 0.95, &lo, &hi) == -1);
	CHECK(hte_wilcoxon_interval(d.data(), 7, 0.99, &lo, &hi) == -1);
	CHECK(hte_wilcoxon_interval(d.data(), 0, 0.95, &lo, &hi) == -1);
}

TEST_CASE("paired ratios: an exact 10% is decided higher, equal runs the same", "[stats]")
{
	std::vector<double> b = { 4.70, 4.81, 4.66, 4.93, 4.72, 4.77, 4.69, 4.85, 4.74, 4.90 }, a;
	for (double x : b)
		a.push_back(x * 1.10);
	hte_paired p;
	REQUIRE(hte_paired_compare(a.data(), b.data(), b.size(), 0.02, &p) == 0);
	CHECK(p.n == 10);
	CHECK(p.ratio == Approx(1.10));
	CHECK(p.lo == Approx(1.10));
	CHECK(p.hi == Approx(1.10));
	CHECK(p.decision == HTE_HIGHER);
	CHECK(p.median_b == Approx((4.74 + 4.77) / 2));
	REQUIRE(hte_paired_compare(b.data(), a.data(), b.size(), 0.02, &p) == 0);
	CHECK(p.ratio == Approx(1 / 1.10));
	CHECK(p.decision == HTE_LOWER);
	REQUIRE(hte_paired_compare(b.data(), b.data(), b.size(), 0.02, &p) == 0);
	CHECK(p.ratio == Approx(1));
	CHECK(p.decision == HTE_SAME);
	CHECK(std::string(hte_decision_name(p.decision)) == "same");
	// Eight rounds: a 95% interval, too few for the 99.5% one that decides.
	REQUIRE(hte_paired_compare(a.data(), b.data(), 8, 0.02, &p) == 0);
	CHECK(p.lo > 0);
	CHECK(p.dlo == 0);
	CHECK(p.decision == HTE_UNDECIDED);
}

TEST_CASE("one round slowed threefold by the machine does not decide anything", "[stats]")
{
	// Twelve rounds of noise around 1.00, and one round of the variant 3x slow.
	std::vector<double> b(12, 1.0), a = { 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.03, 0.97, 1.00, 1.02, 3.0 };
	hte_paired p;
	REQUIRE(hte_paired_compare(a.data(), b.data(), a.size(), 0.02, &p) == 0);
	CHECK(p.ratio == Approx(1.0).margin(0.02));
	CHECK(p.decision != HTE_HIGHER);
	CHECK(p.lo < 1);
}

TEST_CASE("the early stop looks at rounds 9-12, then every 20% more, and the last", "[stats]")
{
	std::vector<unsigned> looks;
	for (unsigned n = 1; n <= 100; n++)
		if (hte_stats_look(n, 100))
			looks.push_back(n);
	CHECK(looks == std::vector<unsigned>{ 9, 10, 11, 12, 15, 18, 22, 27, 33, 40, 48, 58, 70, 84, 100 });
	CHECK(hte_stats_look(20, 20));
	CHECK_FALSE(hte_stats_look(8, 8));
}

TEST_CASE("values that are no timings are refused", "[stats]")
{
	double a[] = { 1, 2, 3 }, zero[] = { 1, 0, 3 }, neg[] = { 1, -2, 3 }, nan[] = { 1, NAN, 3 },
	       inf[] = { 1, INFINITY, 3 };
	hte_paired p;
	CHECK(hte_paired_compare(a, zero, 3, 0.02, &p) == -1);
	CHECK(hte_paired_compare(neg, a, 3, 0.02, &p) == -1);
	CHECK(hte_paired_compare(a, nan, 3, 0.02, &p) == -1);
	CHECK(hte_paired_compare(inf, a, 3, 0.02, &p) == -1);
	CHECK(hte_paired_compare(a, a, 0, 0.02, &p) == -1);
	std::vector<double> many(HTE_STATS_MAX_ROUNDS + 1, 1.0);
	CHECK(hte_paired_compare(many.data(), many.data(), many.size(), 0.02, &p) == -1);
	CHECK(hte_paired_compare(many.data(), many.data(), HTE_STATS_MAX_ROUNDS, 0.02, &p) == 0);
}

// The early stop as measure runs it: a decision looked for at the rounds
// hte_stats_look() names, up to 30 (or 100).  With no difference, a decision "lower" or
// "higher" is wrong; with a real one, it should come.
namespace {

struct stop_result {
	int wrong = 0, right = 0, same = 0, none = 0;
};

stop_result simulate(double effect, double noise, int trials, unsigned seed, int rounds = 30)
{
	std::mt19937 rng(seed);
	std::normal_distribution<double> z(0, noise);
	stop_result r;
	for (int t = 0; t < trials; t++) {
		std::vector<double> a, b;
		enum hte_decision got = HTE_UNDECIDED;
		for (int i = 0; i < rounds && got == HTE_UNDECIDED; i++) {
			double machine = std::exp(z(rng)); // the round's drift, shared by both
			b.push_back(machine * std::exp(z(rng)));
			a.push_back(machine * effect * std::exp(z(rng)));
			hte_paired p;
			if (hte_stats_look((unsigned)a.size(), (unsigned)rounds) &&
			    hte_paired_compare(a.data(), b.data(), a.size(), 0.02, &p) == 0)
				got = p.decision;
		}
		if (got == HTE_SAME)
			r.same++;
		else if (got == HTE_UNDECIDED)
			r.none++;
		else if ((got == HTE_LOWER) == (effect < 1) && effect != 1)
			r.right++;
		else
			r.wrong++;
	}
	return r;
}

} // namespace

TEST_CASE("the early stop is wrong in under 5% of runs when there is no difference", "[stats]")
{
	// 4% noise per run, as this VM's; 1000 runs of up to 30 rounds.
	stop_result r = simulate(1.0, 0.04, 1000, 1);
	INFO("wrong " << r.wrong << " same " << r.same << " undecided " << r.none);
	CHECK(r.wrong < 50);
	// Had the 95% interval decided, it would be wrong far more often.
	std::mt19937 rng(2);
	std::normal_distribution<double> z(0, 0.04);
	int wrong95 = 0;
	for (int t = 0; t < 1000; t++) {
		std::vector<double> a, b;
		for (int i = 0; i < 30; i++) {
			b.push_back(std::exp(z(rng)));
			a.push_back(std::exp(z(rng)));
			hte_paired p;
			if (hte_stats_look((unsigned)a.size(), 30) &&
			    hte_paired_compare(a.data(), b.data(), a.size(), 0.02, &p) == 0 &&
			    (p.hi < 1 || p.lo > 1)) {
				wrong95++;
				break;
			}
		}
	}
	INFO("with the 95% interval: wrong " << wrong95);
	CHECK(wrong95 > 3 * r.wrong);
	// Up to 100 rounds: more looks, still under 5%.
	stop_result r100 = simulate(1.0, 0.04, 400, 4, 100);
	INFO("100 rounds: wrong " << r100.wrong << " same " << r100.same << " undecided " << r100.none);
	CHECK(r100.wrong < 20);
}

TEST_CASE("the early stop finds a real 5% gain within 30 rounds", "[stats]")
{
	stop_result r = simulate(0.95, 0.03, 500, 3);
	INFO("right " << r.right << " wrong " << r.wrong << " undecided " << r.none);
	CHECK(r.right > 400);
	CHECK(r.wrong == 0);
}
