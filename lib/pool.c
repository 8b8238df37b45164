/* SPDX-License-Identifier: MIT */
/* The explicit pool and hugetlbfs mounts (see pool.h). */
#include "pool.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define POOL_2M "/sys/kernel/mm/hugepages/hugepages-2048kB/"

int ht_parse_count(const char *buf, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < len && buf[i] >= '0' && buf[i] <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(buf[i++] - '0');
	}
	if (i == 0 || (i < len && buf[i] != '\n'))
		return -EINVAL;
	*out = v;
	return 0;
}

uint64_t ht_parse_meminfo_hugepagesize(const char *buf, size_t len)
{
	static const char key[] = "Hugepagesize:";
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (llen > sizeof(key) - 1 && memcmp(p, key, sizeof(key) - 1) == 0) {
			size_t i = sizeof(key) - 1;
			uint64_t kb = 0;

			while (i < llen && p[i] == ' ')
				i++;
			while (i < llen && p[i] >= '0' && p[i] <= '9' && kb < (UINT64_MAX / 10 - 9))
				kb = kb * 10 + (uint64_t)(p[i++] - '0');
			return kb;
		}
		p += llen + 1;
	}
	return 0;
}

/* Decodes the \040-style escapes of /proc/self/mounts. */
static int unescape(const char *s, size_t n, char *dst, size_t dlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= dlen)
			return -ENAMETOOLONG;
		dst[o++] = c;
	}
	dst[o] = '\0';
	return 0;
}

/* Page size of a hugetlbfs mount from its options, in kB. */
static uint64_t mount_page_kb(const char *opts, size_t n, uint64_t default_kb)
{
	static const char key[] = "pagesize=";
	const char *p = opts, *end = opts + n;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t olen = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (olen > sizeof(key) - 1 && memcmp(p, key, sizeof(key) - 1) == 0) {
			uint64_t v = 0;
			size_t i = sizeof(key) - 1;

			while (i < olen && p[i] >= '0' && p[i] <= '9' && v < (1ULL << 40))
				v = v * 10 + (uint64_t)(p[i++] - '0');
			if (i < olen && (p[i] == 'M' || p[i] == 'm'))
				return v * 1024;
			if (i < olen && (p[i] == 'G' || p[i] == 'g'))
				return v * 1024 * 1024;
			if (i < olen && (p[i] == 'K' || p[i] == 'k'))
				return v;
			return v / 1024;
		}
		p += olen + 1;
	}
	return default_kb;
}

/* Splits a mounts line into its first four fields. */
static int split_fields(const char *line, size_t len, const char *f[4], size_t flen[4])
{
	size_t i = 0;

	for (int k = 0; k < 4; k++) {
		while (i < len && line[i] == ' ')
			i++;
		f[k] = line + i;
		while (i < len && line[i] != ' ')
			i++;
		flen[k] = (size_t)(line + i - f[k]);
		if (flen[k] == 0)
			return -EINVAL;
	}
	return 0;
}

int ht_find_hugetlbfs(const char *buf, size_t len, uint64_t page_kb,
		      uint64_t default_kb, char *dir, size_t dirlen)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *f[4];
		size_t fl[4];

		if (split_fields(p, llen, f, fl) == 0 && fl[2] == 9 &&
		    memcmp(f[2], "hugetlbfs", 9) == 0 &&
		    mount_page_kb(f[3], fl[3], default_kb) == page_kb)
			return unescape(f[1], fl[1], dir, dirlen);
		p += llen + 1;
	}
	return -ENOENT;
}

static long read_count(const char *path)
{
	char *buf;
	size_t len;
	uint64_t v = 0;
	int err = ht_sys_read_file(path, &buf, &len);

	if (err < 0)
		return err;
	err = ht_parse_count(buf, len, &v);
	free(buf);
	if (err < 0)
		return err;
	return v > (uint64_t)LONG_MAX ? LONG_MAX : (long)v;
}

long ht_pool_available_2m(void)
{
	long free_pages = read_count(POOL_2M "free_hugepages");
	long resv = read_count(POOL_2M "resv_hugepages");

	if (free_pages < 0)
		return free_pages;
	if (resv < 0)
		return resv;
	return free_pages > resv ? free_pages - resv : 0;
}

long ht_default_hugepage_kb(void)
{
	char *buf;
	size_t len;
	uint64_t kb;
	int err = ht_sys_read_file("/proc/meminfo", &buf, &len);

	if (err < 0)
		return err;
	kb = ht_parse_meminfo_hugepagesize(buf, len);
	free(buf);
	return kb ? (long)kb : -ENOENT;
}

/*
 * The memory cgroup's path from /proc/self/cgroup: the cgroup v1 line whose
 * controllers include "memory" when there is one (hybrid layouts), else
 * the v2 line "0::/path".  *@v1 says which.
 */
int ht_parse_memcg_path(const char *buf, size_t len, char *out, size_t outlen, int *v1)
{
	const char *p = buf, *end = buf + len, *found = NULL;
	size_t flen = 0;

	*v1 = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *c1 = memchr(p, ':', llen);
		const char *c2 = c1 ? memchr(c1 + 1, ':', llen - (size_t)(c1 + 1 - p)) : NULL;

		if (c2) {
			size_t clen = (size_t)(c2 - c1 - 1);
			int memory = 0;

			/* The controllers: a comma-separated list, "memory" among them. */
			for (const char *q = c1 + 1; q < c2;) {
				const char *comma = memchr(q, ',', (size_t)(c2 - q));
				size_t n = comma ? (size_t)(comma - q) : (size_t)(c2 - q);

				memory |= n == 6 && memcmp(q, "memory", 6) == 0;
				q += n + 1;
			}
			if (memory || (clen == 0 && !*v1 && c1 == p + 1 && p[0] == '0')) {
				found = c2 + 1;
				flen = llen - (size_t)(c2 + 1 - p);
				*v1 = memory;
			}
		}
		p += llen + 1;
	}
	if (!found || flen == 0 || found[0] != '/')
		return -ENOENT;
	if (flen >= outlen)
		return -ENAMETOOLONG;
	memcpy(out, found, flen);
	out[flen] = '\0';
	return 0;
}

int ht_parse_memory_max(const char *buf, size_t len, uint64_t *out)
{
	if (len >= 3 && memcmp(buf, "max", 3) == 0 && (len == 3 || buf[3] == '\n')) {
		*out = UINT64_MAX;
		return 0;
	}
	return ht_parse_count(buf, len, out);
}

uint64_t ht_memory_stat_field(const char *buf, size_t len, const char *key)
{
	size_t klen = strlen(key);
	const char *p = buf, *end = buf + len;
	uint64_t v = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (llen > klen + 1 && memcmp(p, key, klen) == 0 && p[klen] == ' ' &&
		    ht_parse_count(p + klen + 1, llen - klen - 1, &v) == 0)
			return v;
		p += llen + 1;
	}
	return 0;
}

/* The files of one cgroup hierarchy's memory controller. */
struct memcg_files {
	const char *base, *max, *usage, *inactive;
};

static const struct memcg_files memcg_v1 = {
	"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
};
static const struct memcg_files memcg_v2 = {
	"/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file"
};

static int cg_read(const struct memcg_files *f, const char *dir, const char *file,
		   char **buf, size_t *len)
{
	char path[4300];

	if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", f->base, dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	return ht_sys_read_file(path, buf, len);
}

static uint64_t cg_number(const struct memcg_files *f, const char *dir, const char *file,
			  uint64_t dflt)
{
	char *buf;
	size_t len;
	uint64_t v;

	if (cg_read(f, dir, file, &buf, &len) < 0)
		return dflt;
	if (ht_parse_memory_max(buf, len, &v) < 0)
		v = dflt;
	free(buf);
	return v;
}

/* Room left under one cgroup's limit, or UINT64_MAX without one. */
static uint64_t level_room(const struct memcg_files *f, const char *dir)
{
	uint64_t max = cg_number(f, dir, f->max, UINT64_MAX), cur, inactive = 0;
	char *buf;
	size_t len;

	/* v1 writes "no limit" as a huge page-rounded number. */
	if (max >= (UINT64_MAX >> 2))
		return UINT64_MAX;
	cur = cg_number(f, dir, f->usage, 0);
	if (cg_read(f, dir, "memory.stat", &buf, &len) == 0) {
		inactive = ht_memory_stat_field(buf, len, f->inactive);
		free(buf);
	}
	return cur >= max ? inactive : max - cur + inactive;
}

uint64_t ht_memcg_room(void)
{
	char *buf, path[4096];
	size_t len;
	uint64_t room = UINT64_MAX;
	int err, v1;

	if (ht_sys_read_file("/proc/self/cgroup", &buf, &len) < 0)
		return UINT64_MAX;
	err = ht_parse_memcg_path(buf, len, path, sizeof(path), &v1);
	free(buf);
	if (err < 0)
		return UINT64_MAX;
	/* Every ancestor's limit counts too. */
	for (;;) {
		uint64_t r = level_room(v1 ? &memcg_v1 : &memcg_v2, path);
		char *slash = strrchr(path, '/');

		if (r < room)
			room = r;
		if (!slash || slash == path)
			break;
		*slash = '\0';
	}
	return room;
}
