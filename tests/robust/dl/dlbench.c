/*
 * dlbench LIB N [keep]: the median over 15 rounds of the time of one
 * dlopen(LIB) + dlclose(), N per round, in ns.  With "keep" a handle stays
 * open, so each dlopen() loads nothing: what the preload's hook adds.
 * Not a test (speed is never asserted); docs/failure-model.md quotes it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 15

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double per[ROUNDS];
	int n = argc > 2 ? atoi(argv[2]) : 0;

	if (n <= 0 || (argc > 3 && !dlopen(argv[1], RTLD_NOW)))
		return 2;
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();

		for (int i = 0; i < n; i++) {
			void *h = dlopen(argv[1], RTLD_NOW);

			if (!h)
				return 1;
			dlclose(h);
		}
		per[r] = (now_ns() - t0) / n;
	}
	qsort(per, ROUNDS, sizeof(per[0]), by_value);
	printf("%.0f ns\n", per[ROUNDS / 2]);
	return 0;
}
