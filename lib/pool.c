/* SPDX-License-Identifier: MIT */
/* The explicit pool and hugetlbfs mounts (see pool.h). */
#include "pool.h"
#include "sys.h"

#include <errno.h>
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
