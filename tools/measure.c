/* SPDX-License-Identifier: MIT */
/*
 * hugetext measure: runs a command plain and with hugetext, interleaved,
 * and says what hugetext does for it on this machine, and why.
 *
 * Variants: plain (no preload, HUGETEXT_MODE=off should the machine's
 * ld.so.preload load it), the preload's defaults, and on request a private
 * copy at every start (--copy) and the shared cache (--share).  Each
 * variant runs its own copy of the program's big objects (those with
 * HUGETEXT_MIN_CODE of code: the program and the libraries it loads), in
 * measure's own directory, so that what one variant leaves in the page
 * cache (the defaults' 2 MiB pages) cannot reach another's; the copies'
 * page cache starts in 4 KiB pages.  As root, measure also runs a text
 * service of its own in a mount namespace of its own (/run/hugetext a
 * tmpfs there), so the defaults' starts are served as on a machine with the
 * package installed, and nothing of it outlives the measurement.
 *
 * Every variant runs once untimed (a user's first start), once untimed
 * and watched (its exit seen through ptrace: smaps says what of its code
 * was on huge pages; plain's also samples the code footprint), then the
 * timed rounds: one run of each a round, in a shuffled order, until every
 * variant's paired comparison with plain is decided (stats.h) or the
 * rounds asked for are done.
 */
#include "measure.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "setup.h"
#include "status.h"
#include "tool.h"

extern char **environ;

#define CMD "measure"
#define MAX_OBJS 32
#define MIN_CODE (4u << 20)   /* HUGETEXT_MIN_CODE's default: smaller objects are left alone */
#define RUN_DIR "/run/hugetext"
#define TEXT_DIR RUN_DIR "/text"
#define SERVICE_SOCK RUN_DIR "/service.sock"
#define WINDOW_MS 50

enum { V_PLAIN, V_DEFAULTS, V_COPY, V_SHARE };

static const char measure_usage[] =
	"usage: hugetext measure [OPTIONS] [--] CMD [ARG...]\n"
	"       hugetext measure --stats < PAIRS.json\n"
	"\n"
	"Run CMD plain and with hugetext, interleaved, and say what hugetext does\n"
	"for it on this machine: wall and CPU time against plain with a 95% interval,\n"
	"what was on huge pages, the hardware counters where there are any, the code\n"
	"footprint against the iTLB, and the machine's calibration.\n"
	"\n"
	"  --runs N        at most N timed rounds (default 30, 1-100); stops early\n"
	"                  once every variant is decided\n"
	"  --fixed         run all N rounds\n"
	"  --copy          also a private copy at every start (HUGETEXT_COPY=now)\n"
	"  --share         also the shared cache (HUGETEXT_SHARE=1)\n"
	"  --timeout S     kill a run of CMD after S seconds (and fail)\n"
	"  --margin PCT    how close to plain counts as the same (default 2)\n"
	"  --no-copies     run the installed files, not copies (see docs/measure.md)\n"
	"  --dir DIR       where the copies go (default $TMPDIR, else /var/tmp)\n"
	"  --preload FILE  the preload to measure (default: the installed one)\n"
	"  --calibrate     run the calibration again, not this boot's\n"
	"  --no-calibrate  no calibration\n"
	"  --json          one JSON object for scripts\n"
	"  --stats         read {\"a\":[...],\"b\":[...]} on stdin, print the paired\n"
	"                  comparison of a against b (the bench's interface)\n"
	"  -h, --help      show this help\n"
	"\n"
	"CMD's stdout goes nowhere and its stderr to a file shown when it fails.\n"
	"Exit status: 0 when measured, 1 when CMD failed or could not be measured,\n"
	"2 for a usage error.\n";

/* One object that holds code worth moving, and its copy for each variant. */
struct obj {
	char path[PATH_MAX];
	uint64_t code;
	char copy[HTE_M_MAX_VARIANTS][PATH_MAX];
};

struct ctx {
	struct hte_measure *m;
	char libdirs[4096];          /* where the program's other libraries were found, ':'-separated */
	char preload[PATH_MAX];
	char dir[PATH_MAX - 64];     /* measure's directory: copies, reports, stderr */
	int made_dir;
	int copies;
	int want_share;              /* --share */
	struct obj objs[MAX_OBJS];
	size_t nobj;
	char **env[HTE_M_MAX_VARIANTS];
	char *argv0[HTE_M_MAX_VARIANTS];
	char report[HTE_M_MAX_VARIANTS][PATH_MAX];
	char errfile[PATH_MAX];
	double timeout;
	pid_t service;
	int private_run;             /* our own /run/hugetext in our own mount namespace */
	int made_run_dir;
	int warm_at_start;           /* --no-copies: the files were in 2 MiB pages before */
	int defaults_warm;           /* --no-copies: the defaults' files are kept in 2 MiB pages */
	char share_dir[PATH_MAX];
	char **share_before;         /* --share without root: the cache's entries before */
	size_t nshare_before;
};

static volatile int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---------------------------------------------------------------- the --stats interface */

static int read_all(int fd, char **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	ssize_t r;

	if (!buf)
		return -1;
	while ((r = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			char *b = cap < (16u << 20) ? realloc(buf, cap * 2) : NULL;

			if (!b) {
				free(buf);
				return -1;
			}
			buf = b;
			cap *= 2;
		}
	}
	if (r < 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int get_array(struct json_object *o, const char *key, double *out, size_t max, size_t *n)
{
	struct json_object *a;

	if (!json_object_object_get_ex(o, key, &a) || !json_object_is_type(a, json_type_array))
		return -1;
	*n = json_object_array_length(a);
	if (*n > max)
		return -1;
	for (size_t i = 0; i < *n; i++) {
		struct json_object *v = json_object_array_get_idx(a, i);

		if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
			return -1;
		out[i] = json_object_get_double(v);
	}
	return 0;
}

/*
 * The bench's interface: {"a": [...], "b": [...], "margin": 0.02} on stdin,
 * the paired comparison of a against b on stdout, as measure computes it.
 */
static int stats_cmd(double margin)
{
	static double a[HTE_STATS_MAX_ROUNDS], b[HTE_STATS_MAX_ROUNDS];
	struct json_object *o, *mv;
	struct hte_paired p;
	size_t len, na, nb;
	char *buf;
	int rc = HTE_EXIT_FAIL;

	if (read_all(0, &buf, &len) < 0) {
		hte_error(CMD, "--stats: cannot read stdin: %s", strerror(errno));
		return HTE_EXIT_FAIL;
	}
	o = NULL;
	if (len && len < INT32_MAX && !memchr(buf, 0, len)) {
		struct json_tokener *t = json_tokener_new();

		o = t ? json_tokener_parse_ex(t, buf, (int)len) : NULL;
		if (t && json_tokener_get_error(t) != json_tokener_success) {
			json_object_put(o);
			o = NULL;
		}
		json_tokener_free(t);
	}
	if (o && json_object_object_get_ex(o, "margin", &mv))
		margin = json_object_get_double(mv);
	if (!o || !json_object_is_type(o, json_type_object) ||
	    get_array(o, "a", a, HTE_STATS_MAX_ROUNDS, &na) < 0 ||
	    get_array(o, "b", b, HTE_STATS_MAX_ROUNDS, &nb) < 0 || na != nb || !(margin >= 0 && margin < 1)) {
		hte_error(CMD, "--stats: expected {\"a\": [numbers], \"b\": [as many], \"margin\": 0.02} "
			       "(at most %d each, all > 0)", HTE_STATS_MAX_ROUNDS);
	} else if (hte_paired_compare(a, b, na, margin, &p) < 0) {
		hte_error(CMD, "--stats: every value must be a number above 0, and at least one pair");
	} else {
		printf("{\"n\":%u,\"ratio\":%.6f,\"lo\":%.6f,\"hi\":%.6f,\"decide_lo\":%.6f,\"decide_hi\":%.6f,"
		       "\"decision\":\"%s\",\"median_a\":%.6g,\"median_b\":%.6g,\"method\":\"paired log-ratios: "
		       "Hodges-Lehmann, exact Wilcoxon signed-rank interval (95%%; 99.5%% decides)\"}\n",
		       p.n, p.ratio, p.lo, p.hi, p.dlo, p.dhi, hte_decision_name(p.decision), p.median_a,
		       p.median_b);
		rc = fflush(stdout) == 0 ? HTE_EXIT_OK : HTE_EXIT_FAIL;
	}
	json_object_put(o);
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------- the program and its objects */

/* @name found as execvp() would, made canonical.  Returns: 0, or -1 with errno. */
static int find_program(const char *name, char *out)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX];

	if (strchr(name, '/'))
		return realpath(name, out) && access(out, X_OK) == 0 ? 0 : -1;
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		if (n && snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, name) < (int)sizeof(cand) &&
		    access(cand, X_OK) == 0 && realpath(cand, out)) {
			struct stat st;

			if (stat(out, &st) == 0 && S_ISREG(st.st_mode))
				return 0;
		}
		p += n + (p[n] == ':');
	}
	errno = ENOENT;
	return -1;
}

/* Bytes of executable code in @f's loadable segments. */
static uint64_t code_bytes(const struct hte_file *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->elf.nload; i++)
		if (f->elf.load[i].flags & 1 /* PF_X */)
			n += f->elf.load[i].filesz;
	return n;
}

/* PT_INTERP of a 64-bit ELF file in this machine's byte order, or "". */
static void interp_of(const struct hte_file *f, char *out, size_t len)
{
	out[0] = 0;
	if (f->elf.elfclass != 64 || f->elf.msb != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		return;
	for (size_t i = 0; i < f->elf.phnum; i++) {
		uint64_t at = f->elf.phoff + i * f->elf.phentsize;
		uint32_t type;
		uint64_t off, sz;

		if (at + 56 > f->len)
			return;
		memcpy(&type, f->map + at, 4);
		if (type != 3 /* PT_INTERP */)
			continue;
		memcpy(&off, f->map + at + 8, 8);
		memcpy(&sz, f->map + at + 32, 8);
		if (off >= f->len || sz > f->len - off || sz == 0 || sz >= len)
			return;
		memcpy(out, f->map + off, sz);
		out[sz - 1] = 0;
		return;
	}
}

static int add_obj(struct ctx *c, const char *path)
{
	struct hte_file f;
	uint64_t code;

	for (size_t i = 0; i < c->nobj; i++)
		if (strcmp(c->objs[i].path, path) == 0)
			return 0;
	if (hte_file_open(&f, path, 0, CMD) < 0)
		return -1;
	code = code_bytes(&f);
	hte_file_close(&f);
	if (code < MIN_CODE || c->nobj == MAX_OBJS)
		return 0;
	snprintf(c->objs[c->nobj].path, sizeof(c->objs[0].path), "%s", path);
	c->objs[c->nobj++].code = code;
	return 0;
}

/* Runs @argv with @envp; its stdout into @out (at most @len - 1 bytes).  Returns its exit status. */
static int capture(char *const *argv, char *const *envp, char *out, size_t len)
{
	posix_spawn_file_actions_t fa;
	int p[2], st = -1;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	out[0] = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	while (pid > 0 && (r = read(p[0], out + n, len - 1 - n)) > 0 && n < len - 1)
		n += (size_t)r;
	out[n] = 0;
	close(p[0]);
	if (pid > 0 && waitpid(pid, &st, 0) == pid)
		return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return -1;
}

/*
 * The directory of a library found outside the loader's own (through the
 * program's RUNPATH, say): a copy of the program, elsewhere, must find it
 * there too.
 */
static void add_libdir(struct ctx *c, const char *path)
{
	static const char *const system[] = { "/lib", "/usr/lib", "/lib64", "/usr/lib64",
					      "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					      "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu" };
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0, have = strlen(c->libdirs);

	if (!n)
		return;
	for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++)
		if (strlen(system[i]) == n && strncmp(path, system[i], n) == 0)
			return;
	for (const char *p = c->libdirs; *p;) {
		size_t l = strcspn(p, ":");

		if (l == n && strncmp(p, path, n) == 0)
			return;
		p += l + (p[l] == ':');
	}
	if (have + n + 2 < sizeof(c->libdirs))
		snprintf(c->libdirs + have, sizeof(c->libdirs) - have, "%s%.*s", have ? ":" : "", (int)n, path);
}

/*
 * The libraries the dynamic loader finds for the program, as it would for
 * the command (`ld.so --list`, which loads them without running the
 * program): each "name => /path (address)" line.
 */
static int find_libraries(struct ctx *c, const char *interp, char *const *envp)
{
	static char out[65536];
	char *argv[] = { (char *)interp, "--list", c->m->program, NULL };
	char *line, *save = NULL;

	if (capture(argv, envp, out, sizeof(out)) != 0)
		return -1;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, " => "), *end;

		if (!arrow || arrow[4] != '/')
			continue;
		end = strstr(arrow + 4, " (");
		if (end)
			*end = 0;
		add_obj(c, arrow + 4);
		add_libdir(c, arrow + 4);
	}
	return 0;
}

/* ---------------------------------------------------------------- environments */

static int is_hugetext_var(const char *e)
{
	return strncmp(e, "HUGETEXT_", 9) == 0;
}

/* LD_PRELOAD without the preload measure adds itself. */
static char *preload_without(const char *list, const char *ours)
{
	size_t n = strlen(ours);
	char *out = calloc(1, strlen(list) + 1);
	size_t k = 0;

	if (!out)
		return NULL;
	for (const char *p = list; *p;) {
		size_t l;

		while (*p == ' ' || *p == ':')
			p++;
		l = strcspn(p, " :");
		if (l && !(l == n && strncmp(p, ours, n) == 0) && !strstr(p, "libhugetext-preload")) {
			if (k)
				out[k++] = ':';
			memcpy(out + k, p, l);
			k += l;
		}
		p += l;
	}
	out[k] = 0;
	return out;
}

static char *kv(const char *k, const char *v)
{
	size_t n = strlen(k) + strlen(v) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s=%s", k, v);
	return s;
}

/* The directories of the variant's copied libraries, then the LD_LIBRARY_PATH given. */
static char *library_path(const struct ctx *c, unsigned v)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	size_t cap = (old ? strlen(old) : 0) + strlen(c->libdirs) + 3;
	char *s;

	for (size_t i = 0; i < c->nobj; i++)
		cap += strlen(c->objs[i].copy[v]) + 1;
	s = calloc(1, cap);
	if (!s)
		return NULL;
	for (size_t i = 0; c->copies && i < c->nobj; i++) {
		const char *slash = strrchr(c->objs[i].copy[v], '/');
		size_t n = (size_t)(slash - c->objs[i].copy[v]);

		if (strcmp(c->objs[i].path, c->m->program) == 0)
			continue;
		if (s[0])
			strcat(s, ":");
		strncat(s, c->objs[i].copy[v], n);
	}
	if (c->copies && c->libdirs[0]) {
		if (s[0])
			strcat(s, ":");
		strcat(s, c->libdirs);
	}
	if (old && old[0]) {
		if (s[0])
			strcat(s, ":");
		strcat(s, old);
	}
	return s;
}

static const char *const variant_settings[][6] = {
	[V_PLAIN] = { "HUGETEXT_MODE=off", NULL },
	[V_DEFAULTS] = { NULL },
	[V_COPY] = { "HUGETEXT_COPY=now", "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_SERVICE=0", "HUGETEXT_SHARE=0", NULL },
	/* The first start fills the entry (a copy into the cache), the later ones map it. */
	[V_SHARE] = { "HUGETEXT_SHARE=1", "HUGETEXT_COPY=now", "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_SERVICE=0", NULL },
};

static const char *const variant_names[] = { "plain", "defaults", "copy", "share" };

/* The variant index of each kind is its position: plain 0, defaults 1, then copy, share as asked. */
static unsigned kind_of(const struct hte_measure *m, unsigned v)
{
	for (unsigned k = 0; k < 4; k++)
		if (strcmp(m->var[v].name, variant_names[k]) == 0)
			return k;
	return V_PLAIN;
}

/* The environment of variant @v: measure's, without HUGETEXT_ variables, with the variant's. */
static char **make_env(struct ctx *c, unsigned v, unsigned kind)
{
	size_t n = 0, k = 0;
	char **e, *lp;

	while (environ[n])
		n++;
	e = calloc(n + 12, sizeof(*e));
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (is_hugetext_var(environ[i]) || strncmp(environ[i], "LD_PRELOAD=", 11) == 0 ||
		    strncmp(environ[i], "LD_LIBRARY_PATH=", 16) == 0)
			continue;
		e[k++] = strdup(environ[i]); /* all its strings are its own: freed with it */
	}
	{
		const char *old = getenv("LD_PRELOAD");
		char *rest = preload_without(old ? old : "", c->preload), *pl;

		pl = kind == V_PLAIN ? rest : hte_preload_join(rest, c->preload);
		if (pl && pl[0])
			e[k++] = kv("LD_PRELOAD", pl);
		if (pl != rest)
			free(pl);
		free(rest);
	}
	lp = library_path(c, v);
	if (lp && lp[0])
		e[k++] = kv("LD_LIBRARY_PATH", lp);
	free(lp);
	for (const char *const *s = variant_settings[kind]; *s; s++)
		e[k++] = strdup(*s);
	if (kind != V_PLAIN)
		e[k++] = kv("HUGETEXT_REPORT", c->report[v]);
	e[k] = NULL;
	return e;
}

/* ---------------------------------------------------------------- copies */

static int copy_file(const char *from, const char *to, char *why, size_t len)
{
	char buf[1 << 16];
	struct stat st;
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC), out;

	if (in < 0 || fstat(in, &st) < 0) {
		snprintf(why, len, "cannot read %s: %s", from, strerror(errno));
		if (in >= 0)
			close(in);
		return -1;
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		snprintf(why, len, "%s is set-user-ID or set-group-ID: a copy would run without its privileges", from);
		close(in);
		return -1;
	}
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (out < 0) {
		snprintf(why, len, "cannot write %s: %s", to, strerror(errno));
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	/* Only root can write the copy, as the text service wants of what it serves. */
	if (n < 0 || fchmod(out, st.st_mode & 0755) < 0 || close(out) < 0) {
		snprintf(why, len, "cannot copy %s to %s: %s", from, to, strerror(errno ? errno : EIO));
		close(in);
		return -1;
	}
	close(in);
	return 0;
}

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Each variant's copy of each object, at the object's own path under DIR/VARIANT. */
static int make_copies(struct ctx *c, char *why, size_t len)
{
	uint64_t need = 0;
	struct statvfs sv;

	for (size_t i = 0; i < c->nobj; i++) {
		struct stat st;

		if (stat(c->objs[i].path, &st) == 0)
			need += (uint64_t)st.st_size * c->m->nvar;
	}
	if (statvfs(c->dir, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < need + (64u << 20)) {
		char h[32];

		snprintf(why, len, "%.300s has no room for the copies (%s); give --dir, or --no-copies", c->dir,
			 hte_human(need, h, sizeof(h)));
		return -1;
	}
	for (unsigned v = 0; v < c->m->nvar; v++) {
		for (size_t i = 0; i < c->nobj; i++) {
			char *to = c->objs[i].copy[v], dir[PATH_MAX], *slash;

			if (snprintf(to, PATH_MAX, "%s/%s%s", c->dir, c->m->var[v].name, c->objs[i].path) >= PATH_MAX) {
				snprintf(why, len, "path too long");
				return -1;
			}
			snprintf(dir, sizeof(dir), "%s", to);
			slash = strrchr(dir, '/');
			*slash = 0;
			if (mkdirs(dir) < 0) {
				snprintf(why, len, "cannot make %.300s: %s", dir, strerror(errno));
				return -1;
			}
			if (copy_file(c->objs[i].path, to, why, len) < 0)
				return -1;
			/* Just written, the copy may sit in large folios: 4 KiB pages, as installed files have. */
			hte_small_page_cache(to);
		}
	}
	return 0;
}

/* Every copied library resolves to the variant's copy, as ld.so sees it. */
static int check_copies(struct ctx *c, const char *interp, char *why, size_t len)
{
	static char out[65536];

	if (!interp[0])
		return 0;
	for (unsigned v = 0; v < c->m->nvar; v++) {
		char *argv[] = { (char *)interp, "--list", c->argv0[v], NULL };

		if (capture(argv, c->env[v], out, sizeof(out)) != 0) {
			snprintf(why, len, "the dynamic loader cannot list the libraries of the copy %s", c->argv0[v]);
			return -1;
		}
		for (size_t i = 0; i < c->nobj; i++) {
			char want[PATH_MAX + 8];

			if (strcmp(c->objs[i].path, c->m->program) == 0)
				continue;
			snprintf(want, sizeof(want), "=> %s (", c->objs[i].copy[v]);
			if (!strstr(out, want)) {
				snprintf(why, len, "%s is found through its own path (RPATH), not through "
					 "LD_LIBRARY_PATH, so a copy cannot stand in for it; use --no-copies",
					 c->objs[i].path);
				return -1;
			}
		}
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0; /* on with the rest whatever one did */
}

/* ---------------------------------------------------------------- the text service */

static int mounted_at(const char *dir)
{
	char type[32], opts[256];

	return hte_mount_find(dir, type, sizeof(type), opts, sizeof(opts)) > 0;
}

/*
 * As root: a mount namespace of measure's own, /run/hugetext a tmpfs in it,
 * and `hugetext serve` there, as its unit starts it.  The machine's service
 * and cache take no part, and all of it ends with measure.
 */
static int private_service(struct ctx *c, char *why, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -1;
	self[n] = 0;
	if (access(RUN_DIR, F_OK) != 0) {
		if (mkdir(RUN_DIR, 0755) != 0) {
			snprintf(why, len, "cannot make %s: %s", RUN_DIR, strerror(errno));
			return -1;
		}
		c->made_run_dir = 1;
	}
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("hugetext-measure", RUN_DIR, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") != 0) {
		snprintf(why, len, "no mount namespace of its own: %s", strerror(errno));
		return -1;
	}
	c->private_run = 1;
	/*
	 * The shared cache as `hugetext setup` mounts it (the service mounts
	 * one only when it first fills an entry): --share needs it from the
	 * start.
	 */
	if (c->want_share && (mkdir(TEXT_DIR, 0755) != 0 ||
				     mount("hugetext-measure-text", TEXT_DIR, "tmpfs", MS_NOSUID | MS_NODEV,
					   "huge=within_size,size=10%,mode=1777") != 0)) {
		snprintf(why, len, "--share: cannot mount a huge tmpfs at %s: %s", TEXT_DIR, strerror(errno));
		return -1;
	}
	c->service = fork();
	if (c->service == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execl(self, self, "serve", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && c->service > 0; i++) {
		if (access(SERVICE_SOCK, F_OK) == 0)
			return 0;
		if (waitpid(c->service, NULL, WNOHANG) == c->service) {
			c->service = 0;
			break;
		}
		usleep(25000);
	}
	snprintf(why, len, "its own text service did not start");
	return -1;
}

/* Waits (at most 60 s) until the service has done with the @n offers the first starts made. */
static void wait_served(const struct ctx *c, unsigned n)
{
	for (int i = 0; i < 600 && c->service > 0 && n; i++) {
		char *s = NULL;
		size_t len;
		int fd = open(HTE_SERVE_STATE, O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && read_all(fd, &s, &len) == 0) {
			char *t = realloc(s, len + 1);

			if (t) {
				long offers, done = 0, pending;
				const char *k[] = { "warmed_total", "filled_total", "refused_total" };

				s = t;
				s[len] = 0;
				offers = hte_json_number(s, "offers");
				pending = hte_json_number(s, "pending");
				for (int j = 0; j < 3; j++)
					done += hte_json_number(s, k[j]) > 0 ? hte_json_number(s, k[j]) : 0;
				if (offers >= (long)n && done >= (long)n && pending <= 0) {
					free(t);
					close(fd);
					return;
				}
			}
			free(s);
		}
		if (fd >= 0)
			close(fd);
		usleep(100000);
	}
}

/* ---------------------------------------------------------------- running */

static void stderr_tail(const struct ctx *c, char *out, size_t len)
{
	char buf[4096];
	int fd = open(c->errfile, O_RDONLY | O_CLOEXEC);
	off_t end;
	ssize_t n;

	out[0] = 0;
	if (fd < 0)
		return;
	end = lseek(fd, 0, SEEK_END);
	n = pread(fd, buf, sizeof(buf) - 1, end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	{
		char *last = strrchr(buf, '\n');

		snprintf(out, len, "%.199s", last ? last + 1 : buf);
	}
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = '?';
}

static void read_report(const char *path, struct hte_m_report *r)
{
	char *buf;
	size_t len;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return;
	if (read_all(fd, &buf, &len) == 0) {
		hte_m_report_parse(buf, len, r);
		free(buf);
	}
	close(fd);
	unlink(path);
}

static void describe_status(int status, char *out, size_t len)
{
	if (status > 128 && status < 128 + 65)
		snprintf(out, len, "killed by signal %d (%s)", status - 128, strsignal(status - 128));
	else
		snprintf(out, len, "exit status %d", status);
}

/* The page-cache state variant @v starts from, with --no-copies (copies keep theirs apart). */
static void prepare(struct ctx *c, unsigned v)
{
	if (c->copies)
		return;
	for (size_t i = 0; i < c->nobj; i++) {
		if (v == V_PLAIN && (c->defaults_warm || c->warm_at_start))
			hte_small_page_cache(c->objs[i].path);
		if (v == V_DEFAULTS && c->defaults_warm) {
			struct hte_warm w;

			hte_warm_file(c->objs[i].path, 0, &w);
		}
	}
}

/*
 * One run of variant @v: untimed first start (@kind 0), watched check run
 * (1), or timed (2).  Returns: 0, or -1 after printing why (the command
 * failed, timed out, or could not start).
 */
static int run_variant(struct ctx *c, unsigned v, int kind)
{
	struct hte_measure *m = c->m;
	struct hte_m_variant *var = &m->var[v];
	struct hte_run_opts o = {
		.argv = NULL,
		.envp = c->env[v],
		.timeout = c->timeout,
		.trace_exit = kind == 1,
		.sample_ms = kind == 1 && v == V_PLAIN ? WINDOW_MS : 0,
		.ev = m->ev,
		.nev = kind == 2 && m->counters ? m->nev : 0,
		.user_only = 0,
		.stderr_path = c->errfile,
		.stop = &stop_flag,
	};
	char *argv[m->argc + 1], what[96], tail[200];
	struct hte_run_out out;
	struct hte_m_report rep;

	/* Its own name as given (clang++ and clang are one file), run from the variant's copy. */
	for (int i = 0; i < m->argc; i++)
		argv[i] = m->argv[i];
	argv[m->argc] = NULL;
	o.path = c->argv0[v];
	o.argv = argv;
	o.user_only = m->counters == 2;
	prepare(c, v);
	unlink(c->report[v]);
	if (hte_run_once(&o, &out) < 0) {
		hte_error(CMD, "cannot run %s: %s", o.path, strerror(errno));
		return -1;
	}
	read_report(c->report[v], &rep);
	if (out.exec_errno) {
		hte_error(CMD, "cannot start %s: %s", o.path, strerror(out.exec_errno));
		return -1;
	}
	if (out.interrupted) {
		hte_error(CMD, "interrupted");
		return -1;
	}
	if (out.timed_out) {
		hte_error(CMD, "%s did not end within %g s (%s run): killed", m->argv[0], c->timeout, var->name);
		return -1;
	}
	if (out.status != 0) {
		describe_status(out.status, what, sizeof(what));
		stderr_tail(c, tail, sizeof(tail));
		if (v == V_PLAIN)
			hte_error(CMD, "%s failed in a plain run (%s): measure times commands that succeed",
				  m->argv[0], what);
		else
			hte_error(CMD, "%s failed with hugetext's %s (%s) where it ran plain: please report "
				       "this as a bug of hugetext", m->argv[0], var->name, what);
		if (tail[0])
			fprintf(stderr, "  its stderr ended: %s\n", tail);
		return -1;
	}
	if (kind == 0)
		var->check_rep = rep; /* the first start's, until the check run's replaces it */
	if (kind == 1) {
		var->check = out.huge;
		var->check_rep = rep;
		if (v == V_PLAIN && out.traced) {
			m->have_fp = 1;
			m->fp = out.fp;
		}
		if (!out.traced)
			hte_m_note(m, "the exit of %s could not be watched (ptrace not allowed here): "
				      "no smaps figures", m->argv[0]);
	}
	if (kind == 2 && var->nruns < HTE_M_MAX_ROUNDS) {
		struct hte_m_run *r = &var->runs[var->nruns++];

		r->wall = out.wall;
		r->cpu = out.cpu;
		r->status = out.status;
		memcpy(r->counts, out.counts, sizeof(r->counts));
		r->rep = rep;
		if (m->counters)
			for (size_t i = 0; i < m->nev; i++)
				if (out.ev_errno[i] && !m->ev_errno[i])
					m->ev_errno[i] = out.ev_errno[i];
	}
	return 0;
}

/* What each variant's check run must show, or it is not timed. */
static void check_claims(struct ctx *c)
{
	struct hte_measure *m = c->m;
	char h[32];

	for (unsigned v = 0; v < m->nvar; v++) {
		struct hte_m_variant *var = &m->var[v];
		const struct hte_m_huge *k = &var->check;
		unsigned kind = kind_of(m, v);
		char err[sizeof(var->check_rep.error)];

		if (!k->known)
			continue;
		memcpy(err, var->check_rep.error, sizeof(err));
		/* No line failed: say what the report did say. */
		if (!err[0])
			snprintf(err, sizeof(err), "its report had %u line%s, %s on huge pages%s%s",
				 var->check_rep.lines, var->check_rep.lines == 1 ? "" : "s",
				 hte_human(var->check_rep.huge, h, sizeof(h)), var->check_rep.cache[0] ? ", cache " : "",
				 var->check_rep.cache);
		if (kind == V_PLAIN && (k->copy || k->page_cache || k->shared))
			hte_m_note(m, "plain had %s of its code on huge pages (the kernel's own 2 MiB page-cache "
				      "pages): it is not all on 4 KiB pages",
				   hte_human(k->copy + k->page_cache + k->shared, h, sizeof(h)));
		if (kind == V_COPY && !k->copy)
			snprintf(var->na, sizeof(var->na), "the preload made no private copy%s%s",
				 err[0] ? ": " : "", err);
		if (kind == V_SHARE && !k->shared)
			snprintf(var->na, sizeof(var->na), "the code was not mapped from the shared cache%s%s",
				 err[0] ? ": " : "", err);
	}
}

static int all_decided(const struct hte_measure *m)
{
	for (unsigned v = 1; v < m->nvar; v++)
		if (!m->var[v].na[0] && m->var[v].wall.decision == HTE_UNDECIDED)
			return 0;
	return 1;
}

static int rounds(struct ctx *c)
{
	struct hte_measure *m = c->m;
	unsigned order[HTE_M_MAX_VARIANTS], seed = 1;

	for (m->rounds = 0; m->rounds < m->max_rounds;) {
		unsigned n = 0;

		for (unsigned v = 0; v < m->nvar; v++)
			if (!m->var[v].na[0])
				order[n++] = v;
		for (unsigned i = n; i > 1; i--) {
			unsigned j = (unsigned)rand_r(&seed) % i, t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (unsigned i = 0; i < n; i++)
			if (run_variant(c, order[i], 2) < 0)
				return -1;
		m->rounds++;
		if (!m->fixed && hte_stats_look(m->rounds, m->max_rounds)) {
			hte_m_compare(m);
			if (all_decided(m) && m->rounds < m->max_rounds) {
				m->stopped_early = 1;
				break;
			}
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- set-up and clean-up */

static void cleanup(struct ctx *c)
{
	if (c->service > 0) {
		kill(c->service, SIGTERM);
		for (int i = 0; i < 100 && waitpid(c->service, NULL, WNOHANG) != c->service; i++)
			usleep(20000);
		if (waitpid(c->service, NULL, WNOHANG) == 0) {
			kill(c->service, SIGKILL);
			waitpid(c->service, NULL, 0);
		}
		c->service = 0;
	}
	if (c->private_run) {
		umount2(TEXT_DIR, MNT_DETACH);
		umount2(RUN_DIR, MNT_DETACH);
		c->private_run = 0;
	}
	if (c->made_run_dir) {
		rmdir(RUN_DIR); /* only when nothing else has put something there since */
		c->made_run_dir = 0;
	}
	/* --no-copies: the files' page cache as it was. */
	for (size_t i = 0; !c->copies && i < c->nobj; i++) {
		struct hte_warm w;

		if (c->warm_at_start)
			hte_warm_file(c->objs[i].path, 0, &w);
		else if (c->defaults_warm)
			hte_small_page_cache(c->objs[i].path);
	}
	/* --share without a service of ours: the entries measure's copies made. */
	if (c->share_before && c->share_dir[0]) {
		DIR *d = opendir(c->share_dir);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			int known = e->d_name[0] == '.';

			for (size_t k = 0; !known && k < c->nshare_before; k++)
				known = c->share_before[k] && strcmp(c->share_before[k], e->d_name) == 0;
			if (!known)
				unlinkat(dirfd(d), e->d_name, 0);
		}
		if (d)
			closedir(d);
	}
	if (c->made_dir) {
		nftw(c->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		c->made_dir = 0;
	}
}

static int make_dir(struct ctx *c, const char *base)
{
	const char *tmp = base ? base : getenv("TMPDIR");

	if (!tmp || !tmp[0])
		tmp = "/var/tmp";
	if (snprintf(c->dir, sizeof(c->dir), "%s/hugetext-measure.XXXXXX", tmp) >= (int)sizeof(c->dir) ||
	    !mkdtemp(c->dir)) {
		hte_error(CMD, "cannot make a directory in %s: %s", tmp, strerror(errno));
		return -1;
	}
	c->made_dir = 1;
	snprintf(c->errfile, sizeof(c->errfile), "%s/stderr", c->dir);
	for (unsigned v = 0; v < HTE_M_MAX_VARIANTS; v++)
		snprintf(c->report[v], sizeof(c->report[v]), "%s/report.%u.json", c->dir, v);
	return 0;
}

static void describe_isolation(struct ctx *c)
{
	struct hte_measure *m = c->m;
	uint64_t total = 0;
	char h[32];
	int n;

	for (size_t i = 0; i < c->nobj; i++)
		total += c->objs[i].code;
	if (!c->nobj)
		n = snprintf(m->isolation, sizeof(m->isolation),
			     "nothing to keep apart: no object of %s has 4 MiB of code, so the preload moves nothing",
			     m->argv[0]);
	else if (c->copies)
		n = snprintf(m->isolation, sizeof(m->isolation),
			     "each variant ran its own copy of %zu object%s (%s of code), in %s, its page cache "
			     "in 4 KiB pages at first",
			     c->nobj, c->nobj > 1 ? "s" : "", hte_human(total, h, sizeof(h)), c->dir);
	else
		n = snprintf(m->isolation, sizeof(m->isolation),
			     "--no-copies: the variants shared the installed files; plain's runs had their "
			     "page cache made small first, the defaults' the 2 MiB pages they had kept");
	if (n > 0 && (size_t)n < sizeof(m->isolation))
		snprintf(m->isolation + n, sizeof(m->isolation) - (size_t)n, "%s",
			 c->private_run ? "; a text service of measure's own answered the defaults, in a "
					  "private /run/hugetext"
					: "");
}

static void setup_counters(struct hte_measure *m)
{
	struct hte_pmu_facts f;
	int user_only;

	m->nev = hte_pmu_events(&m->cpu, m->ev, HTE_PMU_MAX_EVENTS, m->vendor_why, sizeof(m->vendor_why));
	hte_pmu_probe(&f, &m->cpu);
	if (hte_pmu_explain(&f, m->counters_why, sizeof(m->counters_why), &user_only))
		m->counters = 0;
	else
		m->counters = user_only ? 2 : 1;
}

static int setup_service(struct ctx *c)
{
	struct hte_measure *m = c->m;
	char why[256];

	if (geteuid() == 0) {
		if (private_service(c, why, sizeof(why)) < 0) {
			hte_error(CMD, "%s", why);
			return -1;
		}
		if (c->want_share) {
			if (!mounted_at(TEXT_DIR)) {
				hte_error(CMD, "--share: no shared cache could be mounted at %s in measure's namespace",
					  TEXT_DIR);
				return -1;
			}
		}
		return 0;
	}
	if (access(SERVICE_SOCK, F_OK) == 0)
		hte_m_note(m, "not root: the machine's text service answered the defaults' starts (it may keep "
			      "what it did for measure's copies until it forgets them)");
	else
		hte_m_note(m, "no text service runs here: the defaults' later starts get no 2 MiB page-cache "
			      "pages from it (as root, measure runs one of its own)");
	if (c->want_share) {
		char sub[64];
		DIR *d;
		struct dirent *e;

		if (!mounted_at(TEXT_DIR)) {
			hte_error(CMD, "--share: no shared cache is mounted at %s (hugetext setup mounts one; as "
				       "root, measure uses one of its own)", TEXT_DIR);
			return -1;
		}
		snprintf(sub, sizeof(sub), "hugetext-%u", (unsigned)getuid());
		snprintf(c->share_dir, sizeof(c->share_dir), "%s", TEXT_DIR);
		/* Remember what is there, to take away only what measure's copies add. */
		snprintf(why, sizeof(why), "%s/%s", TEXT_DIR, sub);
		d = opendir(why);
		c->share_before = calloc(4096, sizeof(char *));
		while (d && c->share_before && (e = readdir(d)) && c->nshare_before < 4096)
			c->share_before[c->nshare_before++] = strdup(e->d_name);
		if (d)
			closedir(d);
		snprintf(c->share_dir, sizeof(c->share_dir), "%s", why);
	}
	return 0;
}

/* ---------------------------------------------------------------- the command */

struct opts {
	unsigned runs;
	int fixed, json, copy, share, no_copies, calibrate, no_calibrate, stats;
	double timeout, margin;
	const char *dir, *preload;
};

static int parse_number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "runs", required_argument, NULL, 'n' },   { "fixed", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },         { "copy", no_argument, NULL, 'c' },
		{ "share", no_argument, NULL, 's' },        { "timeout", required_argument, NULL, 't' },
		{ "margin", required_argument, NULL, 'm' }, { "no-copies", no_argument, NULL, 'N' },
		{ "dir", required_argument, NULL, 'd' },    { "preload", required_argument, NULL, 'p' },
		{ "calibrate", no_argument, NULL, 'C' },    { "no-calibrate", no_argument, NULL, 'X' },
		{ "stats", no_argument, NULL, 'S' },        { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->runs = 30;
	o->margin = 0.02;
	/* '+': options end at the command, so its own options stay its own. */
	while ((ch = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (parse_number(optarg, 1, HTE_M_MAX_ROUNDS, &v) < 0 || v != (unsigned)v) {
				hte_error(CMD, "--runs: a whole number from 1 to %d, not '%s'", HTE_M_MAX_ROUNDS, optarg);
				return -1;
			}
			o->runs = (unsigned)v;
			break;
		case 't':
			if (parse_number(optarg, 0.001, 86400 * 7, &o->timeout) < 0) {
				hte_error(CMD, "--timeout: seconds above 0, not '%s'", optarg);
				return -1;
			}
			break;
		case 'm':
			if (parse_number(optarg, 0, 50, &v) < 0) {
				hte_error(CMD, "--margin: a percentage from 0 to 50, not '%s'", optarg);
				return -1;
			}
			o->margin = v / 100;
			break;
		case 'f': o->fixed = 1; break;
		case 'j': o->json = 1; break;
		case 'c': o->copy = 1; break;
		case 's': o->share = 1; break;
		case 'N': o->no_copies = 1; break;
		case 'd': o->dir = optarg; break;
		case 'p': o->preload = optarg; break;
		case 'C': o->calibrate = 1; break;
		case 'X': o->no_calibrate = 1; break;
		case 'S': o->stats = 1; break;
		case 'h':
			fputs(measure_usage, stdout);
			exit(HTE_EXIT_OK);
		default:
			fputs("try 'hugetext measure --help'\n", stderr);
			return -1;
		}
	}
	if (o->calibrate && o->no_calibrate) {
		hte_error(CMD, "--calibrate and --no-calibrate: one or the other");
		return -1;
	}
	if (!o->stats && optind >= argc) {
		hte_error(CMD, "no command to measure");
		fputs(measure_usage, stderr);
		return -1;
	}
	if (o->stats && optind < argc) {
		hte_error(CMD, "--stats takes no command");
		return -1;
	}
	return 0;
}

static void setup_variants(struct hte_measure *m, const struct opts *o)
{
	unsigned kinds[HTE_M_MAX_VARIANTS] = { V_PLAIN, V_DEFAULTS }, n = 2;

	if (o->copy)
		kinds[n++] = V_COPY;
	if (o->share)
		kinds[n++] = V_SHARE;
	m->nvar = n;
	for (unsigned i = 0; i < n; i++) {
		size_t at = 0;

		snprintf(m->var[i].name, sizeof(m->var[i].name), "%s", variant_names[kinds[i]]);
		for (const char *const *s = variant_settings[kinds[i]]; *s; s++)
			at += (size_t)snprintf(m->var[i].settings + at, sizeof(m->var[i].settings) - at, "%s%s",
					       at ? " " : "", *s);
		if (kinds[i] == V_PLAIN)
			snprintf(m->var[i].settings, sizeof(m->var[i].settings), "no preload");
		else if (kinds[i] == V_DEFAULTS)
			snprintf(m->var[i].settings, sizeof(m->var[i].settings), "the preload, nothing set");
	}
}

static int prepare_program(struct ctx *c, const struct opts *o, char *interp, size_t ilen)
{
	struct hte_measure *m = c->m;
	unsigned char head[4] = { 0 };
	struct hte_file f;
	int fd;

	if (find_program(m->argv[0], m->program) < 0) {
		hte_error(CMD, "%s: %s", m->argv[0], errno == EACCES ? "not executable" : "no such program");
		return -1;
	}
	fd = open(m->program, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, head, 4) < 2) {
		hte_error(CMD, "%s: cannot read it: %s", m->program, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	if (head[0] == '#' && head[1] == '!') {
		if (!o->no_copies) {
			hte_error(CMD, "%s is a script: measure copies ELF programs and their libraries, not "
				       "what a script starts; give --no-copies to measure on the installed files",
				  m->program);
			return -1;
		}
		hte_m_note(m, "%s is a script: its page cache is not managed (no object known)", m->program);
		interp[0] = 0;
		return 0;
	}
	if (hte_file_open(&f, m->program, 0, CMD) < 0)
		return -1;
	interp_of(&f, interp, ilen);
	hte_file_close(&f);
	if (add_obj(c, m->program) < 0)
		return -1;
	if (interp[0] && find_libraries(c, interp, environ) < 0)
		hte_m_note(m, "the dynamic loader could not list %s's libraries: only the program is copied",
			   m->program);
	return 0;
}

static int setup_copies(struct ctx *c, const char *interp)
{
	struct hte_measure *m = c->m;
	char why[512];

	for (unsigned v = 0; v < m->nvar; v++) {
		c->argv0[v] = m->program;
		for (size_t i = 0; c->copies && i < c->nobj; i++)
			if (strcmp(c->objs[i].path, m->program) == 0)
				c->argv0[v] = c->objs[i].copy[v];
	}
	if (c->copies && make_copies(c, why, sizeof(why)) < 0) {
		hte_error(CMD, "cannot copy %s: %s", m->program, why);
		return -1;
	}
	for (unsigned v = 0; v < m->nvar; v++) {
		c->env[v] = make_env(c, v, kind_of(m, v));
		if (!c->env[v]) {
			hte_error(CMD, "out of memory");
			return -1;
		}
	}
	if (c->copies && check_copies(c, interp, why, sizeof(why)) < 0) {
		hte_error(CMD, "%s", why);
		return -1;
	}
	return 0;
}

static int measure_all(struct ctx *c)
{
	struct hte_measure *m = c->m;

	/*
	 * Plain first, first start and watched run, before any preloaded start
	 * can change a file (with --no-copies its check sees the files as
	 * found); then each other variant's first start, the service's work,
	 * and their watched second starts.
	 */
	if (run_variant(c, V_PLAIN, 0) < 0 || run_variant(c, V_PLAIN, 1) < 0)
		return -1;
	if (!c->copies)
		c->warm_at_start = m->var[V_PLAIN].check.page_cache > 0;
	for (unsigned v = 1; v < m->nvar; v++)
		if (run_variant(c, v, 0) < 0)
			return -1;
	wait_served(c, m->var[V_DEFAULTS].check_rep.offered);
	for (unsigned v = 1; v < m->nvar; v++) {
		if (run_variant(c, v, 1) < 0)
			return -1;
		if (!c->copies && kind_of(m, v) == V_DEFAULTS)
			c->defaults_warm = m->var[v].check.page_cache > 0;
	}
	check_claims(c);
	if (rounds(c) < 0)
		return -1;
	hte_m_compare(m);
	if (m->have_fp)
		hte_footprint_estimate(&m->fp, &m->cpu.itlb, m->have_calib ? &m->calib : NULL, &m->est);
	return 0;
}

int hte_cmd_measure(int argc, char **argv)
{
	struct hte_measure *m = calloc(1, sizeof(*m));
	struct ctx *c = calloc(1, sizeof(*c));
	struct sigaction sa;
	char interp[PATH_MAX];
	sigset_t chld;
	struct opts o;
	int rc = HTE_EXIT_FAIL;

	if (!m || !c) {
		hte_error(CMD, "out of memory");
		free(m);
		free(c);
		return HTE_EXIT_FAIL;
	}
	c->m = m;
	if (parse_opts(argc, argv, &o) < 0) {
		free(m);
		free(c);
		return HTE_EXIT_USAGE;
	}
	if (o.stats) {
		rc = stats_cmd(o.margin);
		free(m);
		free(c);
		return rc;
	}
	m->argc = argc - optind;
	m->argv = argv + optind;
	m->max_rounds = o.runs;
	m->fixed = o.fixed;
	m->margin = o.margin;
	c->timeout = o.timeout;
	c->copies = !o.no_copies;
	c->want_share = o.share;
	if (o.preload) {
		if (!realpath(o.preload, c->preload) || access(c->preload, R_OK) != 0) {
			hte_error(CMD, "--preload %s: %s", o.preload, strerror(errno));
			goto out;
		}
	} else if (hte_find_preload(c->preload, sizeof(c->preload)) < 0) {
		hte_error(CMD, "cannot find libhugetext-preload.so (give --preload)");
		goto out;
	}
	setup_variants(m, &o);
	if (m->max_rounds < HTE_STATS_MIN_ROUNDS)
		hte_m_note(m, "fewer than %d rounds cannot decide anything: the intervals are shown, no decision",
			   HTE_STATS_MIN_ROUNDS);
	hte_cpu_read(&m->cpu);
	if (prepare_program(c, &o, interp, sizeof(interp)) < 0)
		goto out;
	/* Before the namespace: the calibration's file is the machine's. */
	if (!o.no_calibrate) {
		m->have_calib = hte_calib_get(&m->calib, o.calibrate, 3) == 0;
		if (!m->have_calib)
			snprintf(m->calib_why, sizeof(m->calib_why), "%s", m->calib.why);
	} else {
		snprintf(m->calib_why, sizeof(m->calib_why), "not run (--no-calibrate)");
	}
	setup_counters(m);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* SIGCHLD blocked: the runs wait for it with sigtimedwait(). */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	if (make_dir(c, o.dir) < 0)
		goto out;
	if (setup_service(c) < 0 || setup_copies(c, interp) < 0)
		goto out;
	describe_isolation(c);
	if (measure_all(c) < 0)
		goto out;
	if (o.json)
		hte_m_json(stdout, m);
	else
		hte_m_text(stdout, m);
	rc = fflush(stdout) == 0 ? HTE_EXIT_OK : HTE_EXIT_FAIL;
out:
	cleanup(c);
	for (unsigned v = 0; v < HTE_M_MAX_VARIANTS; v++) {
		for (char **e = c->env[v]; e && *e; e++)
			free(*e);
		free(c->env[v]);
	}
	for (size_t i = 0; i < c->nshare_before; i++)
		free(c->share_before[i]);
	free(c->share_before);
	free(m);
	free(c);
	if (stop_flag && rc != HTE_EXIT_OK)
		return 130;
	return rc;
}
