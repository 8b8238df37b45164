/* SPDX-License-Identifier: MIT */
/*
 * hugetext pool: the explicit pools, THP's settings and the hugetlbfs
 * mounts (hugeadm's job), and the shared text cache.  This file is the
 * command and its display; the work is in hugepages.c (pools), mounts.c
 * and cachedir.c.  The parsers of the kernel's text are the library's
 * (lib/pool.h).
 */
#include "tool.h"
#include "poolcmd.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"

static const char pool_usage[] =
	"usage: hugetext pool [--set N] [--size 2M|1G] [--mount DIR] [--cache-list] [--cache-clear]\n"
	"\n"
	"Without an option, show the explicit huge page pools (total, free, reserved,\n"
	"surplus), THP's enabled and defrag settings and the hugetlbfs mounts.\n"
	"\n"
	"  --set N        make the pool of --size pages hold N pages (root)\n"
	"  --size S       the page size for --set and --mount; default: the default size\n"
	"  --mount DIR    mount hugetlbfs of --size pages at DIR, made if missing (root)\n"
	"  --cache-list   list the shared text cache's files\n"
	"  --cache-clear  remove the cache's entries and the fills whose process is gone\n"
	"  -h, --help     show this help\n"
	"\n"
	"The cache is $HUGETEXT_SHARE_DIR, else hugetext-UID in the text cache\n"
	"that hugetext setup mounts (/run/hugetext/text), else in the first 2 MiB\n"
	"hugetlbfs mount.\n";


static void print_pools(const uint64_t *kb, size_t n, uint64_t def)
{
	static const char *const files[] = { "nr_hugepages", "free_hugepages", "resv_hugepages",
					     "surplus_hugepages" };
	char dir[256], h[32];

	printf("Explicit huge page pools:\n  %-9s  %8s  %8s  %8s  %8s\n", "size", "total", "free",
	       "reserved", "surplus");
	if (n == 0)
		printf("  none (the kernel has no hugetlb support)\n");
	for (size_t i = 0; i < n; i++) {
		hte_pool_dir(kb[i], dir, sizeof(dir));
		printf("  %-9s", hte_human(kb[i] * 1024, h, sizeof(h)));
		for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
			long v = hte_read_count(dir, files[f]);

			if (v < 0)
				printf("  %8s", "?");
			else
				printf("  %8ld", v);
		}
		printf("%s\n", kb[i] == def ? "  (default)" : "");
	}
}

static void print_thp(void)
{
	static const char *const files[] = { "enabled", "defrag" };
	char choice[32], path[128], *buf;
	size_t len;

	printf("Transparent huge pages:");
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), HTE_SYS_THP "/%s", files[i]);
		if (ht_sys_read_file(path, &buf, &len) < 0) {
			printf("%s %s unreadable", i ? "," : "", files[i]);
			continue;
		}
		if (hte_thp_choice(buf, choice, sizeof(choice)) < 0)
			snprintf(choice, sizeof(choice), "?");
		printf("%s %s [%s]", i ? "," : "", files[i], choice);
		free(buf);
	}
	putchar('\n');
}

static int print_mount(const char *dir, uint64_t kb, void *arg)
{
	char h[32];

	(*(int *)arg)++;
	printf("  %s  (%s pages)\n", dir, hte_human(kb * 1024, h, sizeof(h)));
	return 0;
}

static int show(void)
{
	uint64_t kb[HTE_MAX_SIZES], def = hte_default_kb();
	size_t n = hte_pool_sizes(kb, HTE_MAX_SIZES);
	int mounts = 0;

	print_pools(kb, n, def);
	print_thp();
	printf("hugetlbfs mounts:\n");
	if (hte_each_mount(kb, n, def, print_mount, &mounts) < 0)
		printf("  /proc/self/mounts unreadable\n");
	else if (!mounts)
		printf("  none\n");
	return HTE_EXIT_OK;
}

int hte_cmd_pool(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "set", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'z' },
		{ "mount", required_argument, NULL, 'm' },
		{ "cache-list", no_argument, NULL, 'l' },
		{ "cache-clear", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *set = NULL, *size = NULL, *mnt = NULL;
	int list = 0, clear = 0, c, status;
	uint64_t kb = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': set = optarg; break;
		case 'z': size = optarg; break;
		case 'm': mnt = optarg; break;
		case 'l': list = 1; break;
		case 'c': clear = 1; break;
		case 'h': fputs(pool_usage, stdout); return HTE_EXIT_OK;
		default: fputs(pool_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		hte_error("pool", "unexpected argument '%s'", argv[optind]);
		fputs(pool_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	if (size && !set && !mnt) {
		hte_error("pool", "--size goes with --set or --mount");
		return HTE_EXIT_USAGE;
	}
	if (!set && !mnt && !list && !clear)
		return show();
	if ((set || mnt) && (status = hte_pick_size(size, &kb)) != 0)
		return status;
	if (set && (status = hte_set_pool(kb, set)) != HTE_EXIT_OK)
		return status;
	if (mnt && (status = hte_do_mount(kb, mnt)) != HTE_EXIT_OK)
		return status;
	return list || clear ? hte_cache_cmd(list, clear) : HTE_EXIT_OK;
}
