/* SPDX-License-Identifier: MIT */
/* hugetext: the command-line tool.  Subcommands come with the tools work. */
#include <stdio.h>
#include <string.h>

#include "hugetext.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: hugetext [--help] [--version] COMMAND [ARGS]\n");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("hugetext %s\n", ht_version());
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
