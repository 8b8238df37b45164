/*
 * A program with tens of MiB of code, for the preload tests.  It prints a
 * checksum that needs every function, the number of its open descriptors,
 * and (with "smaps") the bytes of its own text on huge pages, counted here
 * independently of the library.  "hold MS" keeps it alive for MS ms.
 * "await MS [LINGER]" waits up to MS ms for its text to be on huge pages and
 * for its line in HUGETEXT_REPORT, if set (a move in the background), then
 * LINGER ms more.  "unshare" calls setns() and unshare(CLONE_NEWUSER),
 * which need a single-threaded process, first thing in main(); "unshare
 * threaded" does so with a thread of its own alive, to show the rule.
 * "closefrom FILE" closes every descriptor above stderr first thing, as
 * daemons do, then works with FILE through a descriptor of its own and
 * keeps closing every other one; then it awaits the move.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bigtext.h"
#include "smaps-count.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The bytes of the text's whole 2 MiB pages, in kB: all a move can cover. */
static unsigned long movable_kb(void)
{
	unsigned long lo = ((unsigned long)bigtext_start + (2ul << 20) - 1) & ~((2ul << 20) - 1);
	unsigned long hi = (unsigned long)bigtext_end & ~((2ul << 20) - 1);

	return hi > lo ? (hi - lo) / 1024 : 0;
}

/* True once HUGETEXT_REPORT (if set) holds a line from this process. */
static int reported(void)
{
	const char *path = getenv("HUGETEXT_REPORT");
	char line[4096], key[32];
	FILE *f;
	int found = 0;

	if (!path || !*path)
		return 1;
	f = fopen(path, "r");
	if (!f)
		return 0;
	snprintf(key, sizeof(key), "{\"pid\":%ld,", (long)getpid());
	while (!found && fgets(line, sizeof(line), f))
		found = strncmp(line, key, strlen(key)) == 0 && strchr(line, '\n') != NULL;
	fclose(f);
	return found;
}

/* Waits for the move to end: the text on huge pages and the report written. */
static void await_huge(int ms)
{
	double t0 = now_ms();
	unsigned long kb = huge_kb_in(bigtext_start, bigtext_end);

	while ((kb < movable_kb() || !reported()) && now_ms() - t0 < ms) {
		usleep(2000);
		kb = huge_kb_in(bigtext_start, bigtext_end);
	}
	printf("pid %ld\nmovable_kb %lu\nawait_huge_kb %lu\n", (long)getpid(), movable_kb(), kb);
}

static void *idle_thread(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

/* Prints 0 or the errno name of each call; the calls come before anything else. */
static void namespaces(int threaded)
{
	unsigned long before = huge_kb_in(bigtext_start, bigtext_end);
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	pthread_t th;
	int s, u;

	if (threaded && pthread_create(&th, NULL, idle_thread, NULL) != 0)
		threaded = 0;
	s = fd >= 0 && setns(fd, CLONE_NEWNS) == 0 ? 0 : errno;
	u = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
	if (fd >= 0)
		close(fd);
	printf("huge_kb_before %lu\nsetns %s\nunshare %s\n", before,
	       s ? strerrorname_np(s) : "0", u ? strerrorname_np(u) : "0");
}

/*
 * Closes what it did not open, then writes FILE and reads it back a few
 * times while a background move may be running: a descriptor of the
 * library's that took our number, or one of ours it closed, would show.
 */
static void closefrom_work(const char *path)
{
	char buf[64], back[64];
	int fd, good = 1;

	close_range(3, ~0U, 0);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	for (int i = 0; i < 50 && fd >= 0 && good; i++) {
		int n = snprintf(buf, sizeof(buf), "line %d\n", i);

		/* And again and again, as a program that hands out descriptors might. */
		close_range((unsigned)fd + 1, ~0U, 0);
		good = pwrite(fd, buf, (size_t)n, 0) == n && pread(fd, back, (size_t)n, 0) == n &&
		       memcmp(buf, back, (size_t)n) == 0;
		usleep(500);
	}
	printf("closefrom %s\n", fd >= 0 && good && close(fd) == 0 ? "ok" : "broken");
	await_huge(20000);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "closefrom") == 0)
		closefrom_work(argv[2]);
	if (argc > 1 && strcmp(argv[1], "unshare") == 0)
		namespaces(argc > 2 && strcmp(argv[2], "threaded") == 0);
	printf("sum %lu\n", bigtext_sum(7));
	printf("fds %d\n", count_fds());
	if (argc > 1 && strcmp(argv[1], "smaps") == 0)
		printf("huge_kb %lu\n", huge_kb_in(bigtext_start, bigtext_end));
	if (argc > 2 && strcmp(argv[1], "await") == 0) {
		await_huge(atoi(argv[2]));
		/* "await MS LINGER": stay a little after, for what the move does last. */
		if (argc > 3)
			usleep((useconds_t)atoi(argv[3]) * 1000);
	}
	/* "hold MS": stay alive a while, so a test can look at several at once. */
	if (argc > 2 && strcmp(argv[1], "hold") == 0) {
		printf("ready\n");
		fflush(stdout);
		usleep((useconds_t)atoi(argv[2]) * 1000);
	}
	return 0;
}
