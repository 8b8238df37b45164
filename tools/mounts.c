/* SPDX-License-Identifier: MIT */
/* hugetlbfs mounts: finding them, and mounting one (hugeadm's job). */
#include "tool.h"
#include "poolcmd.h"
#include "setup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "pool.h"
#include "sys.h"

int hte_each_mount_line(int (*fn)(const char *line, size_t len, void *arg), void *arg)
{
	char *buf;
	size_t len;
	int err = ht_sys_read_file("/proc/self/mounts", &buf, &len);

	if (err < 0)
		return err;
	for (char *p = buf, *end = buf + len; p < end && !err;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = nl ? (size_t)(nl - p) : (size_t)(end - p);

		err = fn(p, llen, arg);
		p += llen + 1;
	}
	free(buf);
	return err;
}

struct each_hugetlbfs {
	const uint64_t *kb;
	size_t n;
	uint64_t def;
	int (*fn)(const char *dir, uint64_t kb, void *arg);
	void *arg;
};

/* One mount line, asked per page size through the library's parser. */
static int hugetlbfs_line(const char *line, size_t len, void *arg)
{
	struct each_hugetlbfs *e = arg;
	char dir[4096];

	for (size_t i = 0; i < e->n; i++)
		if (ht_find_hugetlbfs(line, len, e->kb[i], e->def, dir, sizeof(dir)) == 0)
			return e->fn(dir, e->kb[i], e->arg);
	return 0;
}

int hte_each_mount(const uint64_t *kb, size_t n, uint64_t def,
		      int (*fn)(const char *dir, uint64_t kb, void *arg), void *arg)
{
	struct each_hugetlbfs e = { kb, n, def, fn, arg };

	return hte_each_mount_line(hugetlbfs_line, &e);
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

int hte_mount_state(uint64_t kb, const char *dir)
{
	uint64_t sizes[HTE_MAX_SIZES], def = hte_default_kb();
	size_t n = hte_pool_sizes(sizes, HTE_MAX_SIZES);
	struct find_mount m = { dir, kb, 0 };

	hte_each_mount(sizes, n, def, same_mount, &m);
	return m.found;
}

int hte_mount_hugetlbfs(uint64_t kb, const char *dir, int *made_dir)
{
	char opts[64];

	*made_dir = 0;
	if (mkdir(dir, 0755) == 0)
		*made_dir = 1;
	else if (errno != EEXIST)
		return *made_dir = -1, -errno;
	/*
	 * Sticky and world-writable like /tmp: each user's processes make their
	 * own private hugetext-UID there.  Not noexec: cached code is mapped
	 * executable.
	 */
	snprintf(opts, sizeof(opts), "pagesize=%lluK,mode=1777", (unsigned long long)kb);
	if (mount("hugetlbfs", dir, "hugetlbfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	return 0;
}

int hte_do_mount(uint64_t kb, const char *dir)
{
	int found, made, err;
	char h[32];

	hte_human(kb * 1024, h, sizeof(h));
	if (dir[0] != '/') {
		hte_error("pool", "--mount %s: give an absolute path", dir);
		return HTE_EXIT_USAGE;
	}
	found = hte_mount_state(kb, dir);
	if (found) {
		if (found < 0) {
			hte_error("pool", "%s: already a hugetlbfs mount of another page size", dir);
			return HTE_EXIT_FAIL;
		}
		printf("%s: already hugetlbfs with %s pages\n", dir, h);
		return HTE_EXIT_OK;
	}
	err = hte_mount_hugetlbfs(kb, dir, &made);
	if (err < 0 && made < 0) {
		hte_error("pool", "%s: cannot make the directory: %s", dir, strerror(-err));
		return HTE_EXIT_FAIL;
	}
	if (err < 0) {
		hte_error("pool", "%s: cannot mount hugetlbfs: %s%s", dir, strerror(-err),
			  err == -EPERM ? ": mounting needs root (CAP_SYS_ADMIN)" :
			  err == -ENODEV ? ": the kernel has no hugetlbfs" : "");
		return HTE_EXIT_FAIL;
	}
	printf("%s: hugetlbfs with %s pages\n", dir, h);
	return HTE_EXIT_OK;
}

/* --- the shared text cache's tmpfs (hugetext setup) --- */

struct mount_find {
	const char *dir;
	char *type, *opts;
	size_t tlen, olen;
	int found;
};

/* "dev dir type opts 0 0"; the last line for the directory is the mount on top. */
static int find_line(const char *p, size_t llen, void *arg)
{
	struct mount_find *m = arg;
	size_t dn = strlen(m->dir), n[4];
	const char *f[4], *q = p;

	for (int i = 0; i < 4; i++) {
		const char *sp;

		f[i] = q;
		sp = memchr(q, ' ', (size_t)(p + llen - q));
		n[i] = sp ? (size_t)(sp - q) : (size_t)(p + llen - q);
		q = sp ? sp + 1 : p + llen;
	}
	if (n[1] == dn && memcmp(f[1], m->dir, dn) == 0 && n[2] < m->tlen && n[3] < m->olen) {
		memcpy(m->type, f[2], n[2]);
		m->type[n[2]] = '\0';
		memcpy(m->opts, f[3], n[3]);
		m->opts[n[3]] = '\0';
		m->found = 1;
	}
	return 0;
}

int hte_mount_find(const char *dir, char *type, size_t tlen, char *opts, size_t olen)
{
	struct mount_find m = { dir, type, opts, tlen, olen, 0 };
	int err = hte_each_mount_line(find_line, &m);

	return err < 0 ? err : m.found;
}

uint64_t hte_mount_opt_size(const char *opts)
{
	const char *p = strstr(opts, "size=");
	uint64_t x = 0;

	/* "nr_inodes=" and the like also end in "size="-less names; take only a whole option. */
	while (p && p != opts && p[-1] != ',')
		p = strstr(p + 1, "size=");
	if (!p)
		return 0;
	for (p += 5; *p >= '0' && *p <= '9' && x < (1ULL << 50); p++)
		x = x * 10 + (uint64_t)(*p - '0');
	switch (*p) {
	case 'k': x <<= 10; break;
	case 'm': x <<= 20; break;
	case 'g': x <<= 30; break;
	default: break;
	}
	return x;
}

int hte_mount_text_cache(const char *dir, uint64_t size, int remount, int *made_dir)
{
	char opts[96], parent[4096], *slash;

	*made_dir = 0;
	if (remount) {
		snprintf(opts, sizeof(opts), "huge=within_size,size=%llu", (unsigned long long)size);
		return mount("hugetext-text", dir, "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0 ? -errno : 0;
	}
	snprintf(opts, sizeof(opts), "huge=within_size,size=%llu,mode=1777", (unsigned long long)size);
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (mkdir(parent, 0755) < 0 && errno != EEXIST)
			return *made_dir = -1, -errno;
	}
	if (mkdir(dir, 0755) == 0)
		*made_dir = 1;
	else if (errno != EEXIST)
		return *made_dir = -1, -errno;
	/*
	 * huge=within_size: files get 2 MiB pages wherever they reach, as the
	 * cache's entries (2 MiB multiples) always do.  Not noexec: the
	 * entries are mapped executable.  Sticky and writable by all, as /tmp:
	 * each user's processes make their own private hugetext-UID there.
	 */
	if (mount("hugetext-text", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	return 0;
}
