/*
 * A program with tens of MiB of code, for the preload tests.  It prints a
 * checksum that needs every function, the number of its open descriptors,
 * and (with "smaps") the bytes of its own text on huge pages, counted here
 * independently of the library.  "hold MS" keeps it alive for MS ms.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
	printf("sum %lu\n", bigtext_sum(7));
	printf("fds %d\n", count_fds());
	if (argc > 1 && strcmp(argv[1], "smaps") == 0)
		printf("huge_kb %lu\n", huge_kb_in(bigtext_start, bigtext_end));
	/* "hold MS": stay alive a while, so a test can look at several at once. */
	if (argc > 2 && strcmp(argv[1], "hold") == 0) {
		printf("ready\n");
		fflush(stdout);
		usleep((useconds_t)atoi(argv[2]) * 1000);
	}
	return 0;
}
