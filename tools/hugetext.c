/* SPDX-License-Identifier: MIT */
/* hugetext: one command for hugeedit's, hugectl's and hugeadm's jobs. */
#include <stdio.h>
#include <string.h>

#include "doctor.h"
#include "hugetext.h"
#include "ocihook.h"
#include "serve.h"
#include "setup.h"
#include "status.h"
#include "tool.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *argv0; /* getopt's name in its messages */
} commands[] = {
	{ "edit", hte_cmd_edit, "hugetext edit" },
	{ "check", hte_cmd_check, "hugetext check" },
	{ "run", hte_cmd_run, "hugetext run" },
	{ "pool", hte_cmd_pool, "hugetext pool" },
	{ "warm", hte_cmd_warm, "hugetext warm" },
	{ "setup", hte_cmd_setup, "hugetext setup" },
	{ "status", hte_cmd_status, "hugetext status" },
	{ "doctor", hte_cmd_doctor, "hugetext doctor" },
	{ "serve", hte_cmd_serve, "hugetext serve" },
	{ "measure", hte_cmd_measure, "hugetext measure" },
	{ "oci-hook", hte_cmd_oci_hook, "hugetext oci-hook" },
};

static void usage(FILE *f)
{
	fputs("usage: hugetext [--help] [--version] COMMAND [ARGS]\n"
	      "\n"
	      "Move a program's code onto 2 MiB huge pages, and check that it worked.\n"
	      "\n"
	      "commands:\n"
	      "  edit [--text] [--data] [--disable] FILE...\n"
	      "        show or set libhugetlbfs's huge page flag of ELF segments (hugeedit)\n"
	      "  edit --align [--disable] FILE...\n"
	      "        p_align 2 MiB on code, so that it loads where the page cache maps it huge\n"
	      "  check [--json] [--symbols] FILE | PID\n"
	      "        how much of a file's code can go onto huge pages; how much of a\n"
	      "        process's code is on them\n"
	      "  run [OPTIONS] -- CMD [ARG...]\n"
	      "        run CMD with its code moved onto huge pages (hugectl)\n"
	      "  pool [--set N] [--size 2M|1G] [--mount DIR] [--cache-list] [--cache-clear]\n"
	      "        show and set up the huge page pools and the text cache (hugeadm)\n"
	      "  warm FILE...\n"
	      "        put FILE's code in the page cache as 2 MiB pages, which the kernel\n"
	      "        then maps huge in every process, with no copy\n"
	      "  setup [--config FILE] [--undo] [--dry-run]\n"
	      "        do the pool, mount and warm keys of /etc/hugetext.conf, once (boot)\n"
	      "  status [--json | --prometheus] [--min-code SIZE]\n"
	      "        every process with code worth moving, how much of it is on huge\n"
	      "        pages and how; the machine's pools and mounts\n"
	      "  doctor [--json] [--calibrate]\n"
	      "        what on this machine stands in the way of huge pages for code,\n"
	      "        and what to do\n"
	      "  serve [--socket PATH] [--state PATH]\n"
	      "        the text service: warm or cache the code the preload's processes\n"
	      "        offer, so that their later starts map it huge with no copy\n"
	      "  measure [--runs N] [--json] [--copy] [--share] [--timeout S] -- CMD [ARG...]\n"
	      "        run CMD plain and with hugetext, interleaved: its time against plain with\n"
	      "        an interval, what was on huge pages and why (counters, footprint, the\n"
	      "        machine's calibration)\n"
	      "  oci-hook [--preload PATH] [--socket PATH] [--cache DIR] ...\n"
	      "        the OCI hook of Podman and CRI-O (hooks.d): containers that ask get the\n"
	      "        preload, the text service and the shared cache, with no change to\n"
	      "        their image\n"
	      "\n"
	      "'hugetext COMMAND --help' shows a command's options; man hugetext(1) has more.\n",
	      f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return HTE_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("hugetext %s\n", ht_version());
		return HTE_EXIT_OK;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return HTE_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			argv[1] = (char *)commands[i].argv0;
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	if (argv[1][0] == '-')
		hte_error(NULL, "unknown option '%s'", argv[1]);
	else
		hte_error(NULL, "unknown command '%s'", argv[1]);
	usage(stderr);
	return HTE_EXIT_USAGE;
}
