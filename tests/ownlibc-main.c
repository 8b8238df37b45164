/*
 * A program that exports its own regcomp(), regexec(), regfree() and
 * renameat2(), as gpg (GnuPG's bundled regex, with a bigger regex_t) and
 * patch do.  Each records whether a call came from the program itself
 * (its own use in main()) or from anyone else, and scribbles over 256
 * bytes of the regex_t it is handed, as a bigger regex_t would: a library
 * that calls these by name gets them, and its 64-byte regex_t is overrun.
 * At exit it prints "foreign_calls N" (calls that did not come from main)
 * and the names called, and "sum X" over 8 MiB of code.
 * Linked with --export-dynamic so the dynamic loader sees the definitions.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bigtext.h"

#define OWN_REGEX_BYTES 256

static int in_main;
static int foreign;
static char foreign_names[256];

static void note(const char *name)
{
	static const char msg[] = "ownlibc: program's own function called by someone else: ";

	if (in_main)
		return;
	foreign++;
	if (strlen(foreign_names) + strlen(name) + 2 < sizeof(foreign_names)) {
		strcat(foreign_names, " ");
		strcat(foreign_names, name);
	}
	/* Seen even if the caller crashes the process next. */
	if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, name, strlen(name)) < 0 || write(2, "\n", 1) < 0)
		return;
}

int regcomp(regex_t *re, const char *pattern, int flags)
{
	(void)pattern, (void)flags;
	note("regcomp");
	memset(re, 0xa5, OWN_REGEX_BYTES);
	return 0;
}

int regexec(const regex_t *re, const char *s, size_t n, regmatch_t *m, int flags)
{
	(void)re, (void)s, (void)n, (void)m, (void)flags;
	note("regexec");
	return 0;
}

void regfree(regex_t *re)
{
	note("regfree");
	memset(re, 0x5a, OWN_REGEX_BYTES);
}

int renameat2(int olddir, const char *old, int newdir, const char *new_path, unsigned flags)
{
	note("renameat2");
	return (int)syscall(SYS_renameat2, olddir, old, newdir, new_path, flags);
}

int main(void)
{
	union {
		regex_t re;
		char bytes[OWN_REGEX_BYTES];
	} own;
	char dir[] = "/tmp/ownlibc-XXXXXX";
	int dfd, ok;

	/* The program's own use still reaches its own definitions. */
	in_main = 1;
	ok = regcomp(&own.re, "x", 0) == 0 && regexec(&own.re, "x", 0, NULL, 0) == 0 &&
	     (unsigned char)own.bytes[OWN_REGEX_BYTES - 1] == 0xa5;
	regfree(&own.re);
	if (mkdtemp(dir) && (dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0) {
		close(openat(dfd, "a", O_CREAT | O_WRONLY, 0600));
		ok = ok && renameat2(dfd, "a", dfd, "b", RENAME_NOREPLACE) == 0;
		unlinkat(dfd, "b", 0);
		close(dfd);
		rmdir(dir);
	} else {
		ok = 0;
	}
	in_main = 0;
	printf("own_ok %d\n", ok);
	printf("sum %lu\n", bigtext_sum(3));
	printf("foreign_calls %d\n", foreign);
	printf("foreign_names%s\n", foreign_names[0] ? foreign_names : " none");
	return 0;
}
