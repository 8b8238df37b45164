/* SPDX-License-Identifier: MIT */
/* The shared text cache's directory: listing it and clearing it. */
#include "tool.h"
#include "poolcmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "hugetext.h"

/* --- pure helpers --- */

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
	if (kb != HTE_CACHE_PAGE_KB)
		return 0;
	snprintf(arg, 4096, "%s", dir);
	return 1;
}

/* The cache directory, as the library finds it.  Returns: 0, or -ENOENT. */
static int cache_dir(char *out, size_t len)
{
	const char *env = getenv("HUGETEXT_SHARE_DIR");
	uint64_t kb[HTE_MAX_SIZES];
	size_t n = hte_pool_sizes(kb, HTE_MAX_SIZES);
	char mnt[4096] = "";

	struct stat st;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	/* The set-up's tmpfs cache comes before any hugetlbfs, as in the library. */
	if (stat(HT_TEXT_CACHE_DIR, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(out, len, "%s/hugetext-%u", HT_TEXT_CACHE_DIR, (unsigned)geteuid());
		return 0;
	}
	if (hte_each_mount(kb, n, hte_default_kb(), first_2m_mount, mnt) <= 0 || !mnt[0])
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

int hte_cache_cmd(int list, int clear)
{
	char dir[4096];
	struct cache_file *files;
	size_t n;
	int fd, err, status;

	if (cache_dir(dir, sizeof(dir)) < 0) {
		printf("no shared text cache: HUGETEXT_SHARE_DIR is unset, no " HT_TEXT_CACHE_DIR
		       " (hugetext setup) and no 2 MiB hugetlbfs is mounted\n");
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
