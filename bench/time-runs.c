/* SPDX-License-Identifier: MIT */
/*
 * Times short programs precisely: each variant is started ROUNDS times,
 * the variants interleaved (the order shuffled each round, with a fixed
 * seed), after one untimed round that warms the caches.
 *
 *   time-runs ROUNDS -- [NAME=VALUE...] PROGRAM [ARG...] [-- VARIANT...]
 *   time-runs --serve -- [NAME=VALUE...] PROGRAM [ARG...] [-- VARIANT...]
 *
 * A variant is the environment of time-runs plus its NAME=VALUE settings.
 * The child's stdin, stdout and stderr are /dev/null.  One line per run:
 *
 *   VARIANT ROUND WALL_US CPU_US STATUS
 *
 * WALL_US runs from just before posix_spawn() to the return of wait4(),
 * CPU_US is the child's user+sys time, STATUS its exit status (128+signal
 * when killed).  posix_spawn() starts the child without copying our page
 * tables, so a run costs little beyond the program itself; Python's
 * subprocess adds about a millisecond of its own to every run.
 *
 * --serve: after the untimed round, one run per line of standard input,
 * "VARIANT ROUND", answered by its line (flushed at once).  So one caller
 * can interleave the runs of several time-runs processes, each in its own
 * container (bench/sections/containers.py), with every run still timed
 * here, next to the program, and none of the caller's latency in it.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_VARIANTS 64

struct variant {
	char **argv; /* the program and its arguments */
	char **envp; /* environ with the variant's settings applied */
};

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long tv_us(struct timeval tv)
{
	return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

/* Is s a NAME=VALUE setting (not a program path that contains '=')? */
static int is_setting(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq && eq != s && !memchr(s, '/', (size_t)(eq - s));
}

/* environ with the settings set[0..n) replacing or adding entries. */
static char **make_env(char **set, int n)
{
	size_t count = 0;
	char **out;

	while (environ[count])
		count++;
	out = calloc(count + (size_t)n + 1, sizeof(*out));
	if (!out)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < count; i++) {
		size_t len = strcspn(environ[i], "=");
		int replaced = 0;

		for (int j = 0; j < n && !replaced; j++)
			replaced = strncmp(set[j], environ[i], len + 1) == 0;
		if (!replaced)
			out[k++] = environ[i];
	}
	for (int j = 0; j < n; j++)
		out[k++] = set[j];
	return out;
}

/* Splits argv at "--" into variants; returns their number, or -1. */
static int parse_variants(int argc, char **argv, struct variant *v)
{
	int n = 0;

	for (int i = 0; i < argc;) {
		int start, set_end;

		if (strcmp(argv[i], "--") != 0 || n == MAX_VARIANTS)
			return -1;
		argv[i++] = NULL; /* ends the previous variant's argv */
		start = i;
		while (i < argc && is_setting(argv[i]))
			i++;
		set_end = i;
		while (i < argc && strcmp(argv[i], "--") != 0)
			i++;
		if (set_end == i)
			return -1; /* no program */
		v[n].envp = make_env(argv + start, set_end - start);
		v[n].argv = argv + set_end;
		if (!v[n].envp)
			return -1;
		n++;
	}
	return n;
}

/* One run of variant v: wall and CPU time in microseconds; the exit status. */
static int run_once(const struct variant *v, long long *wall, long long *cpu)
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	pid_t pid;
	int st, err;
	long long t0;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", 0, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	t0 = now_us();
	err = posix_spawn(&pid, v->argv[0], &fa, NULL, v->argv, v->envp);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		fprintf(stderr, "time-runs: %s: %s\n", v->argv[0], strerror(err));
		return -1;
	}
	if (wait4(pid, &st, 0, &ru) < 0)
		return -1;
	*wall = now_us() - t0;
	*cpu = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void shuffle(int *order, int n, unsigned *seed)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(rand_r(seed) % (unsigned)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

/* --serve: runs what standard input asks for until it ends; 0, or 1 on a bad request. */
static int serve(const struct variant *v, int n)
{
	long long wall, cpu;
	int k, r, st;

	while (scanf("%d %d", &k, &r) == 2) {
		if (k < 0 || k >= n)
			return 1;
		st = run_once(&v[k], &wall, &cpu);
		if (st < 0)
			return 1;
		printf("%d %d %lld %lld %d\n", k, r, wall, cpu, st);
		if (fflush(stdout) != 0)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct variant v[MAX_VARIANTS];
	int order[MAX_VARIANTS];
	unsigned seed = 1;
	long long wall, cpu;
	int serving = argc > 1 && strcmp(argv[1], "--serve") == 0;
	int rounds, n;

	rounds = serving ? 0 : argc > 1 ? atoi(argv[1]) : 0;
	n = rounds > 0 || serving ? parse_variants(argc - 2, argv + 2, v) : -1;
	if (n <= 0) {
		fprintf(stderr, "usage: time-runs ROUNDS|--serve -- [NAME=VALUE...] PROGRAM [ARG...] [-- ...]\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		order[i] = i;
		if (run_once(&v[i], &wall, &cpu) < 0) /* the untimed round */
			return 1;
	}
	if (serving)
		return serve(v, n);
	for (int r = 0; r < rounds; r++) {
		shuffle(order, n, &seed);
		for (int i = 0; i < n; i++) {
			int st = run_once(&v[order[i]], &wall, &cpu);

			if (st < 0)
				return 1;
			printf("%d %d %lld %lld %d\n", order[i], r, wall, cpu, st);
		}
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
