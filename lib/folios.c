/* SPDX-License-Identifier: MIT */
/* 64 KiB folios for the copy, and what it got (see folios.h). */
#include "folios.h"
#include "pool.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

static int chosen(const char *setting, const char *word)
{
	char w[16];

	snprintf(w, sizeof(w), "[%s]", word);
	return strstr(setting, w) != NULL;
}

int ht_thp_size_setting(const char *size, const char *top, int missing)
{
	int top_on = top && (chosen(top, "always") || chosen(top, "madvise"));

	if (!size)
		return missing && top_on;
	if (chosen(size, "always") || chosen(size, "madvise"))
		return 1;
	return chosen(size, "inherit") && top_on;
}

size_t ht_folio_bytes(size_t len, const struct ht_folio_stats *before,
		      const struct ht_folio_stats *after)
{
	uint64_t chunks = len / HT_FOLIO_SIZE, alloc, fallback, got;

	if (!before->ok || !after->ok || after->alloc < before->alloc ||
	    after->fallback < before->fallback)
		return 0;
	alloc = after->alloc - before->alloc;
	fallback = after->fallback - before->fallback;
	got = fallback >= chunks ? 0 : chunks - fallback;
	if (got > alloc)
		got = alloc;
	return (size_t)got * HT_FOLIO_SIZE;
}

/* A size's answer: its file and THP's, both read as text. */
static int size_on(const char *size_dir, int missing)
{
	char path[128], *size = NULL, *top = NULL;
	size_t len;
	int err, on;

	err = ht_sys_read_file(THP_DIR "/enabled", &top, &len);
	if (err == -ENOENT)
		return 0;
	if (err < 0)
		return err;
	snprintf(path, sizeof(path), THP_DIR "/%s/enabled", size_dir);
	err = ht_sys_read_file(path, &size, &len);
	if (err < 0 && err != -ENOENT) {
		free(top);
		return err;
	}
	on = ht_thp_size_setting(size, top, missing);
	free(size);
	free(top);
	return on;
}

int ht_thp_pmd_on(void)
{
	return size_on("hugepages-2048kB", 1);
}

int ht_folios_available(void)
{
	return size_on("hugepages-64kB", 0);
}

static int read_count(const char *name, uint64_t *v)
{
	char path[128], *buf;
	size_t len;
	int err;

	snprintf(path, sizeof(path), THP_DIR "/hugepages-64kB/stats/%s", name);
	if ((err = ht_sys_read_file(path, &buf, &len)) < 0)
		return err;
	err = ht_parse_count(buf, len, v);
	free(buf);
	return err;
}

void ht_folio_stats_read(struct ht_folio_stats *s)
{
	s->ok = read_count("anon_fault_alloc", &s->alloc) == 0 &&
		read_count("anon_fault_fallback", &s->fallback) == 0;
}
