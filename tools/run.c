/* SPDX-License-Identifier: MIT */
/*
 * hugetext run: what hugectl is to libhugetlbfs.  Sets the HUGETEXT_*
 * variables from the options, adds the preload to LD_PRELOAD (keeping
 * what is there) and executes the command.
 */
#include "tool.h"
#include "run.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define PRELOAD_NAME "libhugetext-preload.so"
/* The library ignores larger budgets (HT_BUDGET_MAX in lib/options.c). */
#define BUDGET_MAX_MS 3600000u

static const char run_usage[] =
	"usage: hugetext run [OPTIONS] [--] CMD [ARG...]\n"
	"\n"
	"Run CMD with the hugetext preload, which moves its code onto huge pages\n"
	"before main().  Each option sets the environment variable shown.\n"
	"\n"
	"  --mode M        auto, thp, explicit, off or folios    HUGETEXT_MODE\n"
	"  --match RE      also move shared libraries matching   HUGETEXT_MATCH\n"
	"  --ignore RE     leave matching objects alone          HUGETEXT_IGNORE\n"
	"  --verbose       one line per region on stderr         HUGETEXT_VERBOSE=1\n"
	"  --report F      append one JSON line per region to F  HUGETEXT_REPORT\n"
	"  --perf-map      write /tmp/perf-PID.map entries       HUGETEXT_PERF_MAP=1\n"
	"  --share         use the shared text cache             HUGETEXT_SHARE=1\n"
	"  --share-dir D   the shared text cache's directory     HUGETEXT_SHARE_DIR\n"
	"  --budget-ms N   start no new work after N ms          HUGETEXT_BUDGET_MS\n"
	"  --async         move the code in a background thread  HUGETEXT_ASYNC=1\n"
	"                  while main() runs, off the start-up path\n"
	"  --no-page-cache always copy; neither keep nor make the  HUGETEXT_PAGE_CACHE=0\n"
	"                  page cache's 2 MiB pages of the code\n"
	"  --copy WHEN     now, auto or never: when a private copy  HUGETEXT_COPY\n"
	"                  is made (auto: once the process has run\n"
	"                  long enough for it to pay; the default)\n"
	"  -h, --help      show this help\n"
	"\n"
	"RE is a POSIX extended regular expression.  An existing LD_PRELOAD is kept;\n"
	"the preload is added after it.  The exit status is CMD's, or 126/127 when\n"
	"CMD cannot be run.\n";

static int is_sep(char c)
{
	return c == ' ' || c == ':';
}

/* True when the LD_PRELOAD list @list holds @item as one of its elements. */
static int list_has(const char *list, const char *item)
{
	size_t n = strlen(item);

	for (const char *p = list; *p;) {
		size_t k;

		while (is_sep(*p))
			p++;
		k = strcspn(p, " :");
		if (k == n && strncmp(p, item, n) == 0)
			return 1;
		p += k;
	}
	return 0;
}

char *hte_preload_join(const char *existing, const char *preload)
{
	char *out;
	size_t n;

	if (!existing || !*existing || strspn(existing, " :") == strlen(existing))
		return strdup(preload);
	if (list_has(existing, preload))
		return strdup(existing);
	n = strlen(existing) + 1 + strlen(preload) + 1;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s:%s", existing, preload);
	return out;
}

/* Fills @out with the canonical path of the library @name when it is in @dir/@rel. */
static int try_dir(const char *dir, const char *rel, const char *name, char *out, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX];
	int n = rel ? snprintf(path, sizeof(path), "%s/%s/%s", dir, rel, name)
		    : snprintf(path, sizeof(path), "%s/%s", dir, name);

	if (n <= 0 || (size_t)n >= sizeof(path) || access(path, R_OK) != 0 || !realpath(path, real) ||
	    strlen(real) >= len)
		return 0;
	memcpy(out, real, strlen(real) + 1);
	return 1;
}

int hte_find_lib(const char *name, char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* Installed (bindir to libdir), then the build tree (B/tools, B/lib). */
#ifdef HTE_LIBDIR_FROM_BINDIR
		if (try_dir(exe, HTE_LIBDIR_FROM_BINDIR, name, out, len))
			return 0;
#endif
		if (try_dir(exe, "../lib", name, out, len))
			return 0;
	}
#ifdef HTE_LIBDIR
	if (try_dir(HTE_LIBDIR, NULL, name, out, len))
		return 0;
#endif
	return -ENOENT;
}

int hte_find_preload(char *out, size_t len)
{
	return hte_find_lib(PRELOAD_NAME, out, len);
}

static int check_regex(const char *opt, const char *re)
{
	char msg[256];
	regex_t r;
	int err = regcomp(&r, re, REG_EXTENDED | REG_NOSUB);

	if (err == 0) {
		regfree(&r);
		return 0;
	}
	regerror(err, &r, msg, sizeof(msg));
	hte_error("run", "%s '%s': not a valid extended regular expression: %s", opt, re, msg);
	return -1;
}

/* Turns one option into its variable; -1 after a message on a bad value. */
static int set_option(int c, const char *arg)
{
	enum ht_mode mode;
	unsigned ms;
	int copy;

	switch (c) {
	case 'm':
		if (ht_parse_mode(arg, &mode) < 0) {
			hte_error("run", "--mode '%s': not one of auto, thp, explicit, off, folios", arg);
			return -1;
		}
		return setenv("HUGETEXT_MODE", ht_mode_str(mode), 1);
	case 'M':
		return check_regex("--match", arg) ? -1 : setenv("HUGETEXT_MATCH", arg, 1);
	case 'I':
		return check_regex("--ignore", arg) ? -1 : setenv("HUGETEXT_IGNORE", arg, 1);
	case 'v':
		return setenv("HUGETEXT_VERBOSE", "1", 1);
	case 'r':
		return setenv("HUGETEXT_REPORT", arg, 1);
	case 'p':
		return setenv("HUGETEXT_PERF_MAP", "1", 1);
	case 's':
		return setenv("HUGETEXT_SHARE", "1", 1);
	case 'S':
		return setenv("HUGETEXT_SHARE_DIR", arg, 1);
	case 'a':
		return setenv("HUGETEXT_ASYNC", "1", 1);
	case 'P':
		return setenv("HUGETEXT_PAGE_CACHE", "0", 1);
	case 'c':
		if (ht_parse_copy(arg, &copy) < 0) {
			hte_error("run", "--copy '%s': not now, auto or never", arg);
			return -1;
		}
		return setenv("HUGETEXT_COPY", arg, 1);
	case 'b':
		if (ht_parse_uint(arg, BUDGET_MAX_MS, &ms) < 0) {
			hte_error("run", "--budget-ms '%s': not a number of milliseconds up to %u", arg, BUDGET_MAX_MS);
			return -1;
		}
		return setenv("HUGETEXT_BUDGET_MS", arg, 1);
	}
	return -1;
}

static int add_preload(void)
{
	char path[PATH_MAX];
	char *value;
	int err;

	if (hte_find_preload(path, sizeof(path)) < 0) {
		hte_error("run", "cannot find %s next to the command or in %s", PRELOAD_NAME,
#ifdef HTE_LIBDIR
			  HTE_LIBDIR
#else
			  "the library directory"
#endif
		);
		return -1;
	}
	/* ld.so splits LD_PRELOAD at spaces and colons: such a path cannot be named. */
	if (strpbrk(path, " :")) {
		hte_error("run", "%s: the path holds a space or colon, which LD_PRELOAD cannot express", path);
		return -1;
	}
	value = hte_preload_join(getenv("LD_PRELOAD"), path);
	err = value ? setenv("LD_PRELOAD", value, 1) : -1;
	free(value);
	return err;
}

int hte_cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "match", required_argument, NULL, 'M' },
		{ "ignore", required_argument, NULL, 'I' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "report", required_argument, NULL, 'r' },
		{ "perf-map", no_argument, NULL, 'p' },
		{ "share", no_argument, NULL, 's' },
		{ "share-dir", required_argument, NULL, 'S' },
		{ "budget-ms", required_argument, NULL, 'b' },
		{ "async", no_argument, NULL, 'a' },
		{ "no-page-cache", no_argument, NULL, 'P' },
		{ "copy", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	/* "+": the options end at CMD, whose own options are its business. */
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(run_usage, stdout);
			return HTE_EXIT_OK;
		}
		if (c == '?') {
			fputs(run_usage, stderr);
			return HTE_EXIT_USAGE;
		}
		if (set_option(c, optarg) < 0)
			return HTE_EXIT_USAGE;
	}
	if (optind >= argc) {
		hte_error("run", "no command given");
		fputs(run_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	if (add_preload() < 0)
		return HTE_EXIT_FAIL;
	fflush(NULL);
	execvp(argv[optind], argv + optind);
	c = errno;
	hte_error("run", "%s: cannot run: %s", argv[optind], strerror(c));
	return c == ENOENT ? 127 : 126;
}
