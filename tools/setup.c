/* SPDX-License-Identifier: MIT */
/*
 * hugetext setup: the machine's part of the policy file, done once at
 * boot (hugetext-setup.service): grow the 2 MiB hugetlb pool, mount a
 * hugetlbfs for the shared cache, mount the huge tmpfs shared cache at
 * HT_TEXT_CACHE_DIR, warm the listed programs' code into 2 MiB page-cache
 * pages.  Idempotent; what it changed is recorded in a state file so
 * --undo puts back the pool size it found and unmounts only mounts it made.  The work is pool's and warm's (hugepages.c, mounts.c,
 * warm.c); this file decides and reports.
 */
#include "tool.h"
#include "poolcmd.h"
#include "setup.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "hugetext.h"
#include "sys.h"

#define SETUP_STATE_DIR "/run/hugetext"
#define SETUP_STATE SETUP_STATE_DIR "/setup.state"
#define POOL_KB 2048

static const char setup_usage[] =
	"usage: hugetext setup [--config FILE] [--state FILE] [--undo] [--dry-run]\n"
	"\n"
	"Do the set-up keys of the policy file (default " HT_CONF_PATH "): grow the\n"
	"2 MiB hugetlb pool to 'pool = N' pages, mount hugetlbfs at 'hugetlbfs = DIR'\n"
	"(sticky, writable by all, for the shared cache) unless it is mounted there,\n"
	"mount the shared text cache (a tmpfs with huge=within_size, mode 1777) at\n"
	HT_TEXT_CACHE_DIR " with 'text_cache_size = BYTES' as its limit, and read\n"
	"each 'warm = FILE' program's code into 2 MiB page-cache pages.\n"
	"A second run changes nothing and says so.  Needs root.\n"
	"\n"
	"  --config FILE  the policy file; it must be root's and writable by root alone\n"
	"  --state FILE   where the changes are recorded for --undo\n"
	"                 (default " SETUP_STATE ")\n"
	"  --undo         put back the pool size found and unmount the mounts made\n"
	"  --dry-run      say what would be done, change nothing (root not needed)\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 done (or nothing to do), 1 something failed, 2 a bad policy\n"
	"file or usage.\n";

/* --- the state file --- */

void hte_setup_state_init(struct hte_setup_state *s)
{
	memset(s, 0, sizeof(*s));
	s->pool_was = -1;
}

/* "pool_was=N": a page count the kernel could have had. */
static int parse_pool_was(const char *v, size_t n, long *out)
{
	long x = 0;

	if (n == 0 || n > 9)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		x = x * 10 + (v[i] - '0');
	}
	*out = x;
	return 0;
}

static int parse_path(const char *v, size_t n, char *dst, size_t cap)
{
	if (n == 0 || n >= cap || v[0] != '/' || memchr(v, '\0', n))
		return -EINVAL;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

int hte_setup_state_parse(const char *buf, size_t len, struct hte_setup_state *s)
{
	hte_setup_state_init(s);
	for (size_t pos = 0; pos < len;) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos), *eq, *v;
		size_t n = nl ? (size_t)(nl - line) : len - pos, kn, vn;
		int err;

		pos += n + 1;
		if (n == 0 || line[0] == '#')
			continue;
		eq = memchr(line, '=', n);
		if (!eq)
			return -EINVAL;
		kn = (size_t)(eq - line);
		v = eq + 1;
		vn = n - kn - 1;
		if (kn == 8 && memcmp(line, "pool_was", 8) == 0)
			err = parse_pool_was(v, vn, &s->pool_was);
		else if (kn == 7 && memcmp(line, "mounted", 7) == 0)
			err = parse_path(v, vn, s->mounted, sizeof(s->mounted));
		else if (kn == 8 && memcmp(line, "made_dir", 8) == 0)
			err = parse_path(v, vn, s->made_dir, sizeof(s->made_dir));
		else if (kn == 12 && memcmp(line, "text_mounted", 12) == 0)
			err = parse_path(v, vn, s->text_mounted, sizeof(s->text_mounted));
		else if (kn == 13 && memcmp(line, "text_made_dir", 13) == 0)
			err = parse_path(v, vn, s->text_made_dir, sizeof(s->text_made_dir));
		else
			err = -EINVAL;
		if (err < 0)
			return err;
	}
	return 0;
}

int hte_setup_state_format(const struct hte_setup_state *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "# hugetext setup: what it changed, for hugetext setup --undo\n");

	if (s->pool_was >= 0)
		n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, "pool_was=%ld\n", s->pool_was);
	if (s->mounted[0])
		n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, "mounted=%s\n", s->mounted);
	if (s->made_dir[0])
		n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, "made_dir=%s\n", s->made_dir);
	if (s->text_mounted[0])
		n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, "text_mounted=%s\n", s->text_mounted);
	if (s->text_made_dir[0])
		n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, "text_made_dir=%s\n",
			      s->text_made_dir);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

static int state_empty(const struct hte_setup_state *s)
{
	return s->pool_was < 0 && !s->mounted[0] && !s->made_dir[0] && !s->text_mounted[0] &&
	       !s->text_made_dir[0];
}

/*
 * Reads the state file, trusted only when it is a regular file of ours
 * that nobody else can write.  Returns: 0, -ENOENT, or -1 after an error.
 */
static int state_load(const char *path, struct hte_setup_state *s)
{
	char buf[8192];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	hte_setup_state_init(s);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0) {
		hte_error("setup", "%s: cannot open the state file: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		hte_error("setup", "%s: not a regular file of ours writable by us alone: left alone", path);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || (size_t)n == sizeof(buf) || hte_setup_state_parse(buf, (size_t)n, s) < 0) {
		hte_error("setup", "%s: not a state file of hugetext setup: left alone", path);
		return -1;
	}
	return 0;
}

/* Writes the state atomically (a temporary file renamed); removes it when empty. */
static int state_save(const char *path, const struct hte_setup_state *s)
{
	char text[6144], tmp[4200];
	int fd, n;

	if (state_empty(s))
		return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
	n = hte_setup_state_format(s, text, sizeof(text));
	if (n < 0)
		return -ENAMETOOLONG;
	if (strcmp(path, SETUP_STATE) == 0 && mkdir(SETUP_STATE_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	errno = 0; /* a short write sets none */
	if (write(fd, text, (size_t)n) != n || fsync(fd) < 0) {
		int err = errno ? -errno : -EIO;

		close(fd);
		unlink(tmp);
		return err;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

/* --- the actions --- */

struct run {
	const char *state_path;
	struct hte_setup_state state;
	int dry, changed, failed;
};

static void do_pool(struct run *r, unsigned want)
{
	char dir[256];
	long now, got;
	int err;

	if (!want) {
		printf("pool: not asked for: left alone\n");
		return;
	}
	hte_pool_dir(POOL_KB, dir, sizeof(dir));
	now = hte_read_count(dir, "nr_hugepages");
	if (now < 0) {
		hte_error("setup", "pool: %s/nr_hugepages: %s", dir, strerror((int)-now));
		r->failed = 1;
		return;
	}
	/* A larger pool is someone's choice: setup only ever grows it. */
	if ((unsigned long)now >= want) {
		printf("pool: %ld pages already (%u asked)\n", now, want);
		return;
	}
	if (r->dry) {
		printf("pool: would grow to %u pages (now %ld)\n", want, now);
		return;
	}
	err = hte_pool_resize(POOL_KB, want, &got);
	if (got != now && r->state.pool_was < 0)
		r->state.pool_was = now;
	if (got != now)
		r->changed = 1;
	if (err < 0) {
		hte_error("setup", "pool: %s/nr_hugepages: %s%s", dir, strerror(-err),
			  err == -EACCES || err == -EPERM ? ": needs root" : "");
		r->failed = 1;
	} else if (got < (long)want) {
		hte_error("setup", "pool: %ld pages of %u asked (was %ld): memory too fragmented? "
			  "Reserve them at boot with hugepages=", got, want, now);
		r->failed = 1;
	} else {
		printf("pool: %ld pages (was %ld)\n", got, now);
	}
}

static void do_mount(struct run *r, const char *path)
{
	char real[PATH_MAX];
	int state, made = 0, err;
	const char *dir = path;

	if (!path[0])
		return;
	/* /proc/self/mounts names the canonical path: "/x/" or a link to a mount is that mount. */
	if (realpath(path, real))
		dir = real;
	/* The state file must name it whole, or --undo could unmount another. */
	if (strlen(dir) >= sizeof(r->state.mounted)) {
		hte_error("setup", "mount: %s: path longer than %zu bytes", dir, sizeof(r->state.mounted) - 1);
		r->failed = 1;
		return;
	}
	state = hte_mount_state(POOL_KB, dir);
	if (state > 0) {
		printf("mount: %s already mounted\n", dir);
		return;
	}
	if (state < 0) {
		hte_error("setup", "mount: %s: a hugetlbfs of another page size is mounted there", dir);
		r->failed = 1;
		return;
	}
	if (r->dry) {
		printf("mount: would mount hugetlbfs with 2 MiB pages at %s\n", dir);
		return;
	}
	err = hte_mount_hugetlbfs(POOL_KB, dir, &made);
	if (made > 0 && !r->state.made_dir[0])
		snprintf(r->state.made_dir, sizeof(r->state.made_dir), "%.*s", (int)sizeof(r->state.made_dir) - 1, dir);
	if (err < 0) {
		hte_error("setup", "mount: %s: cannot mount hugetlbfs: %s", dir, strerror(-err));
		r->failed = 1;
		return;
	}
	snprintf(r->state.mounted, sizeof(r->state.mounted), "%.*s", (int)sizeof(r->state.mounted) - 1, dir);
	r->changed = 1;
	printf("mount: %s hugetlbfs with 2 MiB pages, mode 1777\n", dir);
}

/* A tmpfs that gives its files 2 MiB pages: the library's tmpfs cache needs one. */
static int huge_tmpfs(const char *type, const char *opts)
{
	return strcmp(type, "tmpfs") == 0 && (strstr(opts, "huge=within_size") || strstr(opts, "huge=always"));
}

static void do_text_cache(struct run *r, const struct ht_conf *conf)
{
	const char *dir = HT_TEXT_CACHE_DIR;
	const uint64_t page = 2u << 20;
	char type[64], opts[1024], a[32], b[32];
	uint64_t want = conf->text_cache_size, have;
	int found, made = 0, err;

	if (!(conf->set & HT_CONF_TEXT_CACHE_SIZE))
		return;
	if (!want) {
		printf("cache: text_cache_size = 0: no shared text cache\n");
		return;
	}
	/* Whole 2 MiB pages: a limit in between would only hold 4 KiB pages at its end. */
	want = want < page ? page : (want + page - 1) / page * page;
	hte_human(want, a, sizeof(a));
	found = hte_mount_find(dir, type, sizeof(type), opts, sizeof(opts));
	if (found < 0) {
		hte_error("setup", "cache: /proc/self/mounts: %s", strerror(-found));
		r->failed = 1;
		return;
	}
	if (found && !huge_tmpfs(type, opts)) {
		hte_error("setup", "cache: %s: a %s%s is mounted there: left alone", dir, type,
			  strcmp(type, "tmpfs") == 0 ? " without huge=within_size or huge=always" : "");
		r->failed = 1;
		return;
	}
	if (found) {
		have = hte_mount_opt_size(opts);
		hte_human(have, b, sizeof(b));
		/* A mount someone else made keeps the size they chose. */
		if (have == want || strcmp(r->state.text_mounted, dir) != 0) {
			printf("cache: %s already mounted (%s)%s\n", dir, have ? b : "no size limit",
			       have == want ? "" : ": not ours, its size left alone");
			return;
		}
		if (r->dry) {
			printf("cache: would resize %s from %s to %s\n", dir, b, a);
			return;
		}
		err = hte_mount_text_cache(dir, want, 1, &made);
		if (err < 0) {
			hte_error("setup", "cache: %s: cannot resize to %s: %s", dir, a, strerror(-err));
			r->failed = 1;
			return;
		}
		r->changed = 1;
		printf("cache: %s resized from %s to %s\n", dir, b, a);
		return;
	}
	if (r->dry) {
		printf("cache: would mount tmpfs (huge=within_size, %s, mode 1777) at %s\n", a, dir);
		return;
	}
	err = hte_mount_text_cache(dir, want, 0, &made);
	if (made > 0 && !r->state.text_made_dir[0])
		snprintf(r->state.text_made_dir, sizeof(r->state.text_made_dir), "%s", dir);
	if (err < 0) {
		hte_error("setup", "cache: %s: cannot mount tmpfs with huge=within_size: %s%s", dir, strerror(-err),
			  err == -EINVAL ? ": the kernel has no huge tmpfs (CONFIG_TRANSPARENT_HUGEPAGE)" : "");
		r->failed = 1;
		return;
	}
	snprintf(r->state.text_mounted, sizeof(r->state.text_mounted), "%s", dir);
	r->changed = 1;
	printf("cache: %s tmpfs huge=within_size, %s, mode 1777\n", dir, a);
}

static void do_warm(struct run *r, const char *path)
{
	struct hte_warm w;
	char a[32], b[32];
	int err;

	if (r->dry) {
		printf("warm: would read %s's code into 2 MiB page-cache pages\n", path);
		return;
	}
	err = hte_warm_file(path, 1, &w);
	if (err < 0) {
		r->failed = 1; /* hte_warm_file said why */
		return;
	}
	if (err > 0) {
		printf("warm: %s has no whole 2 MiB of code: nothing to warm\n", path);
		return;
	}
	if (w.already) {
		printf("warm: %s already in 2 MiB pages (%s)\n", path, hte_human(w.code, a, sizeof(a)));
		return;
	}
	r->changed = 1;
	if (w.huge == w.code)
		printf("warm: %s %s in 2 MiB pages\n", path, hte_human(w.huge, a, sizeof(a)));
	else
		printf("warm: %s %s of %s in 2 MiB pages (the rest: running processes map it, or the file "
		       "system keeps no 2 MiB pages)\n", path, hte_human(w.huge, a, sizeof(a)),
		       hte_human(w.code, b, sizeof(b)));
}

static int finish(struct run *r)
{
	int err;

	if (r->dry) {
		printf("setup: dry run: nothing changed\n");
		return r->failed ? HTE_EXIT_FAIL : HTE_EXIT_OK;
	}
	err = state_save(r->state_path, &r->state);
	if (err < 0) {
		hte_error("setup", "%s: cannot record what was changed: %s (--undo will not know it)",
			  r->state_path, strerror(-err));
		r->failed = 1;
	}
	printf(r->changed ? "setup: done\n" : "setup: nothing changed\n");
	return r->failed ? HTE_EXIT_FAIL : HTE_EXIT_OK;
}

static int setup(struct run *r, const char *config, int explicit_config)
{
	struct ht_conf *conf = malloc(sizeof(*conf));
	char err[512];
	int rc;

	if (!conf) {
		hte_error("setup", "out of memory");
		return HTE_EXIT_FAIL;
	}
	rc = ht_conf_load(config, conf, err, sizeof(err));
	if (rc == -ENOENT && !explicit_config) {
		printf("setup: no %s: nothing to do\n", config);
		free(conf);
		return HTE_EXIT_OK;
	}
	if (rc < 0) {
		if (rc == -ENOENT)
			hte_error("setup", "%s: no such file", config);
		else
			hte_error("setup", "%s; nothing changed", err);
		free(conf);
		return HTE_EXIT_USAGE;
	}
	/* A newer file may hold keys this version does not know: said, not refused. */
	for (unsigned i = 0; i < conf->nunknown && i < HT_CONF_UNKNOWN_MAX; i++)
		fprintf(stderr, "hugetext setup: %s: line %u: unknown key '%s', ignored\n", config,
			conf->unknown_line[i], conf->unknown[i]);
	do_pool(r, conf->pool);
	do_mount(r, conf->hugetlbfs);
	do_text_cache(r, conf);
	for (unsigned i = 0; i < conf->nwarm; i++)
		do_warm(r, ht_conf_warm(conf, i));
	free(conf);
	return finish(r);
}

/* --- undo --- */

static void undo_pool(struct run *r)
{
	char dir[256];
	long now, got;
	int err;

	if (r->state.pool_was < 0)
		return;
	hte_pool_dir(POOL_KB, dir, sizeof(dir));
	now = hte_read_count(dir, "nr_hugepages");
	if (r->dry) {
		printf("pool: would put back %ld pages (now %ld)\n", r->state.pool_was, now);
		return;
	}
	err = hte_pool_resize(POOL_KB, (uint64_t)r->state.pool_was, &got);
	if (err < 0 || got != r->state.pool_was) {
		hte_error("setup", "pool: cannot put back %ld pages (now %ld): %s", r->state.pool_was, got,
			  err < 0 ? strerror(-err) : "pages in use");
		r->failed = 1;
		return;
	}
	printf("pool: %ld pages (was %ld)\n", got, now);
	r->state.pool_was = -1;
	r->changed = 1;
}

static void undo_mount(struct run *r)
{
	if (r->state.mounted[0]) {
		if (hte_mount_state(POOL_KB, r->state.mounted) <= 0) {
			printf("mount: %s no longer mounted: left alone\n", r->state.mounted);
			r->state.mounted[0] = '\0';
		} else if (r->dry) {
			printf("mount: would unmount %s\n", r->state.mounted);
		} else if (umount2(r->state.mounted, UMOUNT_NOFOLLOW) < 0) {
			hte_error("setup", "mount: %s: cannot unmount: %s", r->state.mounted, strerror(errno));
			r->failed = 1;
			return; /* its directory stays too */
		} else {
			printf("mount: %s unmounted\n", r->state.mounted);
			r->state.mounted[0] = '\0';
			r->changed = 1;
		}
	}
	if (r->state.made_dir[0] && !r->dry) {
		/* Only while empty: whatever was put there since is someone's. */
		if (rmdir(r->state.made_dir) == 0)
			printf("mount: %s removed\n", r->state.made_dir);
		r->state.made_dir[0] = '\0';
	}
}

static void undo_text_cache(struct run *r)
{
	char type[64], opts[1024];
	const char *dir = r->state.text_mounted;

	if (dir[0]) {
		if (hte_mount_find(dir, type, sizeof(type), opts, sizeof(opts)) <= 0 || !huge_tmpfs(type, opts)) {
			printf("cache: %s no longer mounted: left alone\n", dir);
			r->state.text_mounted[0] = '\0';
		} else if (r->dry) {
			printf("cache: would unmount %s (its entries go with it)\n", dir);
		} else if (umount2(dir, UMOUNT_NOFOLLOW) == 0) {
			printf("cache: %s unmounted\n", dir);
			r->state.text_mounted[0] = '\0';
			r->changed = 1;
		} else if (errno == EBUSY && umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
			/* Running programs map its entries as their code: they keep them until they exit. */
			printf("cache: %s detached (programs running its code keep it until they exit)\n", dir);
			r->state.text_mounted[0] = '\0';
			r->changed = 1;
		} else {
			hte_error("setup", "cache: %s: cannot unmount: %s", dir, strerror(errno));
			r->failed = 1;
			return; /* its directory stays too */
		}
	}
	if (r->state.text_made_dir[0] && !r->dry) {
		if (rmdir(r->state.text_made_dir) == 0)
			printf("cache: %s removed\n", r->state.text_made_dir);
		r->state.text_made_dir[0] = '\0';
	}
}

static int undo(struct run *r)
{
	int rc = state_load(r->state_path, &r->state);

	if (rc == -ENOENT) {
		printf("setup --undo: nothing to undo (no %s)\n", r->state_path);
		return HTE_EXIT_OK;
	}
	if (rc < 0)
		return HTE_EXIT_FAIL;
	undo_pool(r);
	undo_mount(r);
	undo_text_cache(r);
	return finish(r);
}

int hte_cmd_setup(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "state", required_argument, NULL, 's' },
		{ "undo", no_argument, NULL, 'u' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *config = NULL;
	struct run r = { .state_path = SETUP_STATE };
	int c, want_undo = 0;

	hte_setup_state_init(&r.state);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 's': r.state_path = optarg; break;
		case 'u': want_undo = 1; break;
		case 'n': r.dry = 1; break;
		case 'h': fputs(setup_usage, stdout); return HTE_EXIT_OK;
		default: fputs(setup_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		hte_error("setup", "unexpected argument '%s'", argv[optind]);
		fputs(setup_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	if (!r.dry && geteuid() != 0) {
		hte_error("setup", "needs root: it sizes the hugetlb pool and mounts hugetlbfs and tmpfs "
			  "(--dry-run shows what it would do)");
		return HTE_EXIT_FAIL;
	}
	if (want_undo)
		return undo(&r);
	if (state_load(r.state_path, &r.state) == -1)
		return HTE_EXIT_FAIL;
	return setup(&r, config ? config : HT_CONF_PATH, config != NULL);
}
