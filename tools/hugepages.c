/* SPDX-License-Identifier: MIT */
/*
 * The kernel's explicit huge page pools and THP settings, for `hugetext
 * pool` and `hugetext setup`: reading them, and sizing a pool.
 */
#include "tool.h"
#include "poolcmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"
#include "sys.h"

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


/* --- reading the kernel's settings --- */

long hte_read_count(const char *dir, const char *file)
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
size_t hte_pool_sizes(uint64_t *kb, size_t max)
{
	DIR *d = opendir(HTE_SYS_POOLS);
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

void hte_pool_dir(uint64_t kb, char *buf, size_t len)
{
	snprintf(buf, len, HTE_SYS_POOLS "/hugepages-%llukB", (unsigned long long)kb);
}

uint64_t hte_default_kb(void)
{
	long kb = ht_default_hugepage_kb();

	return kb > 0 ? (uint64_t)kb : 0;
}

/* --- setting the pool and mounting --- */

/* The page size asked for, checked against the pools the kernel has. */
int hte_pick_size(const char *arg, uint64_t *kb_out)
{
	uint64_t kb[HTE_MAX_SIZES], bytes;
	size_t n = hte_pool_sizes(kb, HTE_MAX_SIZES);

	if (!arg) {
		*kb_out = hte_default_kb();
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
	hte_error("pool", "--size %s: the kernel has no pool of that page size (see %s)", arg, HTE_SYS_POOLS);
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

int hte_pool_resize(uint64_t kb, uint64_t want, long *got)
{
	char dir[256], path[300], text[32];
	int err;

	hte_pool_dir(kb, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/nr_hugepages", dir);
	snprintf(text, sizeof(text), "%llu\n", (unsigned long long)want);
	err = write_text(path, text);
	/* The kernel may give fewer pages than asked, without an error: read back. */
	*got = hte_read_count(dir, "nr_hugepages");
	return err;
}

int hte_set_pool(uint64_t kb, const char *count)
{
	char dir[256], h[32];
	uint64_t want;
	long got;
	int err;

	if (ht_parse_count(count, strlen(count), &want) < 0 || want > (uint64_t)1 << 40) {
		hte_error("pool", "--set '%s': not a number of pages", count);
		return HTE_EXIT_USAGE;
	}
	err = hte_pool_resize(kb, want, &got);
	if (err < 0) {
		hte_pool_dir(kb, dir, sizeof(dir));
		hte_error("pool", "%s/nr_hugepages: %s%s", dir, strerror(-err),
			  needs_root(err) ? ": changing the pool needs root" : "");
		return HTE_EXIT_FAIL;
	}
	hte_human(kb * 1024, h, sizeof(h));
	if (got < 0 || (uint64_t)got != want) {
		hte_error("pool", "%s pool: asked for %llu pages, the kernel gave %ld (memory too fragmented? "
			  "retry, or reserve them at boot with hugepages=)", h, (unsigned long long)want, got);
		return HTE_EXIT_FAIL;
	}
	printf("%s pool: %ld pages\n", h, got);
	return HTE_EXIT_OK;
}
