/*
 * A prefork server in miniature, for the preload tests: a master with
 * tens of MiB of code (bigtext.S).
 *
 * "workers N MS": forks N workers without exec, one after another, as
 * servers do at start.  Each burns CPU in the master's code for up to MS ms
 * until its text is on huge pages, then prints
 * "worker PID huge_kb K pfns P,P,...": the kB of its text on huge pages
 * and the physical frame of each 2 MiB page of it (from
 * /proc/self/pagemap; 0 without CAP_SYS_ADMIN), so that the test can count
 * the copies behind all processes.  The master prints its own line the
 * same way after the workers ended, while its copy (if any) still exists.
 *
 * "hot-workers N MS": first starts a thread of its own and joins it (a
 * server's start-up helper: glibc is multi-threaded from then on, so the
 * preload's deferred copy has its thread), then runs the functions of the
 * text's first 4 MiB (a whole 2 MiB page of it at least, wherever it loads)
 * until some of its text is on huge pages (a copy of what runs falls due
 * and takes them alone) or it has used 20 s of CPU time, then does as
 * "workers N MS".
 *
 * "exec PROGRAM...": forks one child that prints "child threads T huge_kb K"
 * (its thread count and its text on huge pages right after fork) and
 * execs PROGRAM; the master prints "master huge_kb K".
 *
 * "spawn PROGRAM...": runs PROGRAM with posix_spawn() and waits for it,
 * then prints "master huge_kb K" and "child status S".
 *
 * "thpoff MS": turns transparent huge pages off for itself
 * (prctl(PR_SET_THP_DISABLE), as MariaDB does), burns CPU for MS ms,
 * then prints "thpoff huge_kb K disabled D" (D: prctl(PR_GET_THP_DISABLE)
 * after the run, which the library must leave as it was).
 * "thpoff-exec PROGRAM...": turns THP off and execs PROGRAM, which inherits
 * the setting from its first instruction.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bigtext.h"
#include "smaps-count.h"

#define HUGE (2ul << 20)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static unsigned long text_lo(void)
{
	return ((unsigned long)bigtext_start + HUGE - 1) & ~(HUGE - 1);
}

static unsigned long text_hi(void)
{
	return (unsigned long)bigtext_end & ~(HUGE - 1);
}

static unsigned long text_huge_kb(void)
{
	return huge_kb_in((void *)text_lo(), (void *)text_hi());
}

/* "pfns P,P,..." of each whole 2 MiB page of the text. */
static void print_pfns(FILE *out)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	const char *sep = "";

	fprintf(out, " pfns ");
	for (unsigned long a = text_lo(); fd >= 0 && a < text_hi(); a += HUGE) {
		uint64_t e = 0;

		if (pread(fd, &e, sizeof(e), (off_t)(a / 4096 * 8)) != sizeof(e))
			e = 0;
		fprintf(out, "%s%llu", sep, (unsigned long long)(e >> 63 ? e & ((1ull << 55) - 1) : 0));
		sep = ",";
	}
	if (fd >= 0)
		close(fd);
	fprintf(out, "\n");
}

/* Runs the code until its text is on huge pages or @ms pass. */
static unsigned long burn(double ms, int until_huge)
{
	double end = now_ms() + ms;
	unsigned long sum = 0;

	while (now_ms() < end) {
		sum += bigtext_sum(3);
		if (until_huge && text_huge_kb() >= (text_hi() - text_lo()) / 1024)
			break;
	}
	return sum;
}

static int workers(int n, double ms)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			burn(ms, 1);
			printf("worker %d huge_kb %lu", (int)getpid(), text_huge_kb());
			print_pfns(stdout);
			fflush(stdout);
			_exit(0);
		}
	}
	for (int i = 0; i < n; i++) {
		int st = 0;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
	}
	printf("master %d huge_kb %lu", (int)getpid(), text_huge_kb());
	print_pfns(stdout);
	return bad;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The first 4 MiB of the text, run until some of the text is on huge pages
 * (looked at every 50 ms of CPU time: smaps is not free) or the process has
 * used @ms of CPU time.  Not a fixed time: under emulation the loader alone
 * can use the first looks of the library's wait.
 */
static unsigned long run_head(double ms)
{
	unsigned n = (unsigned)(2 * HUGE / bigtext_stride);
	unsigned long sum = 0;
	double look = cpu_ms() + 50;

	if (n > bigtext_count)
		n = bigtext_count;
	for (double t = cpu_ms(); t < ms; t = cpu_ms()) {
		for (unsigned i = 0; i < n; i++)
			sum = sum * 31 + (unsigned)bigtext_get(i)(3);
		if (t >= look) {
			if (text_huge_kb() > 0)
				break;
			look = t + 50;
		}
	}
	return sum;
}

static void *nothing(void *arg)
{
	return arg;
}

static int exec_child(char **argv)
{
	int st = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		/* Before anything else: what the fork alone left in the child. */
		int t = thread_count();

		printf("child threads %d huge_kb %lu\n", t, text_huge_kb());
		fflush(stdout);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 1;
	printf("master huge_kb %lu\nchild status %d\n", text_huge_kb(), WEXITSTATUS(st));
	return 0;
}

extern char **environ;

static int spawn_child(char **argv)
{
	pid_t pid;
	int st = 0;

	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return 1;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 1;
	printf("master huge_kb %lu\nchild status %d\n", text_huge_kb(), WEXITSTATUS(st));
	return 0;
}

static int thpoff(double ms)
{
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
		return 1;
	burn(ms, 0);
	printf("thpoff huge_kb %lu disabled %d\n", text_huge_kb(), prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && strcmp(argv[1], "workers") == 0)
		return workers(atoi(argv[2]), atof(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "hot-workers") == 0) {
		volatile unsigned long sink;
		pthread_t th;

		if (pthread_create(&th, NULL, nothing, NULL) != 0 || pthread_join(th, NULL) != 0)
			return 1;
		sink = run_head(20000);

		(void)sink;
		return workers(atoi(argv[2]), atof(argv[3]));
	}
	if (argc >= 3 && strcmp(argv[1], "exec") == 0)
		return exec_child(argv + 2);
	if (argc >= 3 && strcmp(argv[1], "spawn") == 0)
		return spawn_child(argv + 2);
	if (argc >= 3 && strcmp(argv[1], "thpoff-exec") == 0) {
		if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
			return 1;
		execv(argv[2], argv + 2);
		return 127;
	}
	if (argc >= 3 && strcmp(argv[1], "thpoff") == 0)
		return thpoff(atof(argv[2]));
	fprintf(stderr, "usage: prefork-main workers N MS | hot-workers N MS | exec PROGRAM... | spawn PROGRAM... | thpoff MS | thpoff-exec PROGRAM...\n");
	return 2;
}
