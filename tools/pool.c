/* SPDX-License-Identifier: MIT */
/*
 * hugetext pool: the explicit pools, THP's settings and the hugetlbfs
 * mounts (hugeadm's job), and the shared text cache.  The parsers of the
 * kernel's text are the library's (lib/pool.h).
 */
#include "tool.h"
#include "poolcmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "pool.h"
#include "sys.h"

#define SYS_POOLS "/sys/kernel/mm/hugepages"
#define SYS_THP "/sys/kernel/mm/transparent_hugepage"
#define MAX_SIZES 8
/* The library's cache lives on 2 MiB hugetlbfs (lib/cache.c). */
#define CACHE_PAGE_KB 2048

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
	"The cache is $HUGETEXT_SHARE_DIR, else hugetext-UID in the first 2 MiB\n"
	"hugetlbfs mount.\n";

/* --- pure helpers --- */

int hte_thp_choice(const char *buf, char *out, size_t len)
{
	const char *open = strchr(buf, '['), *close;
	size_t n;

	if (!open || !(close = strchr(open, ']')))
		return -1;
	n = (size_t)(close - open - 1);
	if (n == 0 || n >= len)
		return -1;
	memcpy(out, open + 1, n);
	out[n] = '\0';
	return 0;
}

uint64_t hte_pool_dir_kb(const char *name)
{
	static const char prefix[] = "hugepages-";
	uint64_t kb = 0;
	const char *p;

	if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	for (p = name + sizeof(prefix) - 1; *p >= '0' && *p <= '9' && kb < (1ULL << 40); p++)
		kb = kb * 10 + (uint64_t)(*p - '0');
	return strcmp(p, "kB") == 0 ? kb : 0;
}

enum hte_cache_kind hte_cache_classify(const char *name)
{
	size_t n = strlen(name);

	if (name[0] == '.')
		return HTE_CACHE_OTHER;
	if (strstr(name, ".tmp."))
		return HTE_CACHE_FILL;
	if (n > 5 && strcmp(name + n - 5, ".text") == 0)
		return HTE_CACHE_ENTRY;
	return HTE_CACHE_OTHER;
}

long hte_cache_fill_pid(const char *name)
{
	const char *p = strstr(name, ".tmp.");
	long pid = 0;
	int digits = 0;

	if (!p)
		return -1;
	for (p += 5; *p >= '0' && *p <= '9'; p++, digits++) {
		if (pid > 100000000)
			return -1;
		pid = pid * 10 + (*p - '0');
	}
	if (!digits || pid <= 0 || (*p != '\0' && *p != '.'))
		return -1;
	return pid;
}

int hte_cache_fill_stale(const char *name, double age_s, int (*alive)(long pid))
{
	long pid = hte_cache_fill_pid(name);

	if (pid < 0)
		return age_s >= 3600;
	return !alive(pid);
}

/* --- reading the kernel's settings --- */

static long read_count(const char *dir, const char *file)
{
	char path[512], *buf;
	size_t len;
	uint64_t v;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	err = ht_sys_read_file(path, &buf, &len);
	if (err < 0)
		return err;
	err = ht_parse_count(buf, len, &v);
	free(buf);
	return err < 0 ? err : (long)v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The page sizes the kernel has pools for, in kB, ascending. */
static size_t pool_sizes(uint64_t *kb, size_t max)
{
	DIR *d = opendir(SYS_POOLS);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max)
		if ((kb[n] = hte_pool_dir_kb(de->d_name)))
			n++;
	closedir(d);
	qsort(kb, n, sizeof(kb[0]), cmp_u64);
	return n;
}

static void pool_dir(uint64_t kb, char *buf, size_t len)
{
	snprintf(buf, len, SYS_POOLS "/hugepages-%llukB", (unsigned long long)kb);
}

static uint64_t default_kb(void)
{
	long kb = ht_default_hugepage_kb();

	return kb > 0 ? (uint64_t)kb : 0;
}

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
		pool_dir(kb[i], dir, sizeof(dir));
		printf("  %-9s", hte_human(kb[i] * 1024, h, sizeof(h)));
		for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
			long v = read_count(dir, files[f]);

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
		snprintf(path, sizeof(path), SYS_THP "/%s", files[i]);
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

/*
 * Calls @fn for each hugetlbfs mount: each line of /proc/self/mounts is
 * asked, per page size, through the library's parser.
 */
static int each_mount(const uint64_t *kb, size_t n, uint64_t def,
		      int (*fn)(const char *dir, uint64_t kb, void *arg), void *arg)
{
	char *buf, dir[4096];
	size_t len;
	int err = ht_sys_read_file("/proc/self/mounts", &buf, &len);

	if (err < 0)
		return err;
	for (char *p = buf, *end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = nl ? (size_t)(nl - p) : (size_t)(end - p);

		for (size_t i = 0; i < n; i++) {
			if (ht_find_hugetlbfs(p, llen, kb[i], def, dir, sizeof(dir)) == 0) {
				err = fn(dir, kb[i], arg);
				if (err)
					goto out;
				break;
			}
		}
		p += llen + 1;
	}
out:
	free(buf);
	return err;
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
	uint64_t kb[MAX_SIZES], def = default_kb();
	size_t n = pool_sizes(kb, MAX_SIZES);
	int mounts = 0;

	print_pools(kb, n, def);
	print_thp();
	printf("hugetlbfs mounts:\n");
	if (each_mount(kb, n, def, print_mount, &mounts) < 0)
		printf("  /proc/self/mounts unreadable\n");
	else if (!mounts)
		printf("  none\n");
	return HTE_EXIT_OK;
}

/* --- setting the pool and mounting --- */

/* The page size asked for, checked against the pools the kernel has. */
static int pick_size(const char *arg, uint64_t *kb_out)
{
	uint64_t kb[MAX_SIZES], bytes;
	size_t n = pool_sizes(kb, MAX_SIZES);

	if (!arg) {
		*kb_out = default_kb();
		if (*kb_out)
			return 0;
		hte_error("pool", "the kernel reports no default huge page size (no hugetlb support?)");
		return HTE_EXIT_FAIL;
	}
	if (hte_parse_size(arg, &bytes) < 0 || bytes % 1024) {
		hte_error("pool", "--size '%s': not a size such as 2M or 1G", arg);
		return HTE_EXIT_USAGE;
	}
	for (size_t i = 0; i < n; i++) {
		if (kb[i] * 1024 == bytes) {
			*kb_out = kb[i];
			return 0;
		}
	}
	hte_error("pool", "--size %s: the kernel has no pool of that page size (see %s)", arg, SYS_POOLS);
	return HTE_EXIT_FAIL;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	err = n == (ssize_t)strlen(text) ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static int needs_root(int err)
{
	return err == -EACCES || err == -EPERM || err == -EROFS;
}

static int set_pool(uint64_t kb, const char *count)
{
	char dir[256], path[300], text[32], h[32];
	uint64_t want;
	long got;
	int err;

	if (ht_parse_count(count, strlen(count), &want) < 0 || want > (uint64_t)1 << 40) {
		hte_error("pool", "--set '%s': not a number of pages", count);
		return HTE_EXIT_USAGE;
	}
	pool_dir(kb, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/nr_hugepages", dir);
	snprintf(text, sizeof(text), "%llu\n", (unsigned long long)want);
	err = write_text(path, text);
	if (err < 0) {
		hte_error("pool", "%s: %s%s", path, strerror(-err),
			  needs_root(err) ? ": changing the pool needs root" : "");
		return HTE_EXIT_FAIL;
	}
	got = read_count(dir, "nr_hugepages");
	hte_human(kb * 1024, h, sizeof(h));
	if (got < 0 || (uint64_t)got != want) {
		hte_error("pool", "%s pool: asked for %llu pages, the kernel gave %ld (memory too fragmented? "
			  "retry, or reserve them at boot with hugepages=)", h, (unsigned long long)want, got);
		return HTE_EXIT_FAIL;
	}
	printf("%s pool: %ld pages\n", h, got);
	return HTE_EXIT_OK;
}

struct find_mount {
	const char *dir;
	uint64_t kb;
	int found; /* 1: same page size; -1: another page size */
};

static int same_mount(const char *dir, uint64_t kb, void *arg)
{
	struct find_mount *m = arg;

	if (strcmp(dir, m->dir) == 0)
		m->found = kb == m->kb ? 1 : -1;
	return 0;
}

static int do_mount(uint64_t kb, const char *dir)
{
	uint64_t sizes[MAX_SIZES], def = default_kb();
	size_t n = pool_sizes(sizes, MAX_SIZES);
	struct find_mount m = { dir, kb, 0 };
	char opts[64], h[32];

	hte_human(kb * 1024, h, sizeof(h));
	if (dir[0] != '/') {
		hte_error("pool", "--mount %s: give an absolute path", dir);
		return HTE_EXIT_USAGE;
	}
	each_mount(sizes, n, def, same_mount, &m);
	if (m.found) {
		if (m.found < 0) {
			hte_error("pool", "%s: already a hugetlbfs mount of another page size", dir);
			return HTE_EXIT_FAIL;
		}
		printf("%s: already hugetlbfs with %s pages\n", dir, h);
		return HTE_EXIT_OK;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		hte_error("pool", "%s: cannot make the directory: %s", dir, strerror(errno));
		return HTE_EXIT_FAIL;
	}
	/*
	 * Sticky and world-writable like /tmp: each user's processes make their
	 * own private hugetext-UID there.  Not noexec: cached code is mapped
	 * executable.
	 */
	snprintf(opts, sizeof(opts), "pagesize=%lluK,mode=1777", (unsigned long long)kb);
	if (mount("hugetlbfs", dir, "hugetlbfs", MS_NOSUID | MS_NODEV, opts) < 0) {
		int err = errno;

		hte_error("pool", "%s: cannot mount hugetlbfs: %s%s", dir, strerror(err),
			  err == EPERM ? ": mounting needs root (CAP_SYS_ADMIN)" :
			  err == ENODEV ? ": the kernel has no hugetlbfs" : "");
		return HTE_EXIT_FAIL;
	}
	printf("%s: hugetlbfs with %s pages\n", dir, h);
	return HTE_EXIT_OK;
}

/* --- the shared text cache --- */

struct cache_file {
	char name[256];
	struct stat st;
	enum hte_cache_kind kind;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct cache_file *)a)->name, ((const struct cache_file *)b)->name);
}

static int first_2m_mount(const char *dir, uint64_t kb, void *arg)
{
	if (kb != CACHE_PAGE_KB)
		return 0;
	snprintf(arg, 4096, "%s", dir);
	return 1;
}

/* The cache directory, as the library finds it.  Returns: 0, or -ENOENT. */
static int cache_dir(char *out, size_t len)
{
	const char *env = getenv("HUGETEXT_SHARE_DIR");
	uint64_t kb[MAX_SIZES];
	size_t n = pool_sizes(kb, MAX_SIZES);
	char mnt[4096] = "";

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	if (each_mount(kb, n, default_kb(), first_2m_mount, mnt) <= 0 || !mnt[0])
		return -ENOENT;
	snprintf(out, len, "%s/hugetext-%u", mnt, (unsigned)geteuid());
	return 0;
}

/* Opens the directory itself, never through a symbolic link. */
static int open_cache(const char *dir, int *fd)
{
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd >= 0)
		return 0;
	if (errno == ENOENT) {
		printf("%s: no cache (the directory does not exist)\n", dir);
		return 1;
	}
	hte_error("pool", "%s: cannot open the cache directory: %s", dir,
		  errno == ELOOP || errno == ENOTDIR ? "not a directory (or a symbolic link), left alone"
						      : strerror(errno));
	return -1;
}

/* Reads the directory's files (never following links), sorted by name. */
static int read_cache(int fd, struct cache_file **files, size_t *n)
{
	DIR *d = fdopendir(dup(fd));
	struct dirent *de;
	size_t cap = 0;

	*files = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct cache_file *f;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (*n == cap) {
			struct cache_file *p = realloc(*files, (cap = cap ? 2 * cap : 32) * sizeof(*p));

			if (!p) {
				closedir(d);
				return -ENOMEM;
			}
			*files = p;
		}
		f = &(*files)[*n];
		snprintf(f->name, sizeof(f->name), "%s", de->d_name);
		if (fstatat(fd, de->d_name, &f->st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		f->kind = S_ISREG(f->st.st_mode) ? hte_cache_classify(f->name) : HTE_CACHE_OTHER;
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(*files, *n, sizeof(**files), by_name);
	return 0;
}

static void owner(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
}

static void cache_list(const char *dir, int fd, const struct cache_file *files, size_t n)
{
	static const char *const kind[] = { "other", "entry", "fill" };
	char who[64], when[32];
	uint64_t total = 0;
	struct stat st;
	const char *why;

	printf("%s: %zu file%s\n", dir, n, n == 1 ? "" : "s");
	if (fstat(fd, &st) == 0 && (why = ht_cache_distrust(&st, geteuid(), 1)))
		printf("  note: the library does not use this directory: %s\n", why);
	if (n)
		printf("  %-5s  %12s  %-10s  %-19s  name\n", "kind", "bytes", "owner", "modified");
	for (size_t i = 0; i < n; i++) {
		const struct cache_file *f = &files[i];
		struct tm tm;

		owner(f->st.st_uid, who, sizeof(who));
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&f->st.st_mtime, &tm));
		printf("  %-5s  %12llu  %-10s  %-19s  %s\n", kind[f->kind], (unsigned long long)f->st.st_size,
		       who, when, f->name);
		total += (uint64_t)f->st.st_size;
	}
	if (n)
		printf("  %llu bytes in all\n", (unsigned long long)total);
}

static int process_alive(long pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static int cache_clear(const char *dir, int fd, const struct cache_file *files, size_t n)
{
	size_t entries = 0, fills = 0, kept = 0;
	uint64_t bytes = 0;
	time_t now = time(NULL);
	int status = HTE_EXIT_OK;

	for (size_t i = 0; i < n; i++) {
		const struct cache_file *f = &files[i];

		if (f->kind == HTE_CACHE_OTHER)
			continue;
		if (f->kind == HTE_CACHE_FILL &&
		    !hte_cache_fill_stale(f->name, difftime(now, f->st.st_mtime), process_alive)) {
			kept++;
			continue;
		}
		/* unlinkat() removes the name itself, whatever replaced the file meanwhile. */
		if (unlinkat(fd, f->name, 0) < 0) {
			hte_error("pool", "%s/%s: cannot remove: %s", dir, f->name, strerror(errno));
			status = HTE_EXIT_FAIL;
			continue;
		}
		*(f->kind == HTE_CACHE_ENTRY ? &entries : &fills) += 1;
		bytes += (uint64_t)f->st.st_size;
	}
	printf("%s: removed %zu entr%s and %zu stale fill%s (%llu bytes); %zu fill%s in progress kept\n", dir,
	       entries, entries == 1 ? "y" : "ies", fills, fills == 1 ? "" : "s", (unsigned long long)bytes,
	       kept, kept == 1 ? "" : "s");
	return status;
}

static int cache(int list, int clear)
{
	char dir[4096];
	struct cache_file *files;
	size_t n;
	int fd, err, status;

	if (cache_dir(dir, sizeof(dir)) < 0) {
		printf("no shared text cache: HUGETEXT_SHARE_DIR is unset and no 2 MiB hugetlbfs is mounted\n");
		return HTE_EXIT_OK;
	}
	err = open_cache(dir, &fd);
	if (err)
		return err > 0 ? HTE_EXIT_OK : HTE_EXIT_FAIL;
	err = read_cache(fd, &files, &n);
	if (err < 0) {
		hte_error("pool", "%s: cannot read the directory: %s", dir, strerror(-err));
		free(files);
		close(fd);
		return HTE_EXIT_FAIL;
	}
	if (list)
		cache_list(dir, fd, files, n);
	status = clear ? cache_clear(dir, fd, files, n) : HTE_EXIT_OK;
	free(files);
	close(fd);
	return status;
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
	if ((set || mnt) && (status = pick_size(size, &kb)) != 0)
		return status;
	if (set && (status = set_pool(kb, set)) != HTE_EXIT_OK)
		return status;
	if (mnt && (status = do_mount(kb, mnt)) != HTE_EXIT_OK)
		return status;
	return list || clear ? cache(list, clear) : HTE_EXIT_OK;
}
