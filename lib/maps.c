/* SPDX-License-Identifier: MIT */
/* Parsers for /proc/PID/maps and smaps text (see maps.h). */
#include "maps.h"

#include <errno.h>
#include <string.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses hex digits at *@i up to a non-hex character; at least one digit. */
static int parse_hex(const char *s, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;
	size_t start = *i;

	while (*i < len && hexval(s[*i]) >= 0) {
		if (v >> 60)
			return -EINVAL;
		v = (v << 4) | (uint64_t)hexval(s[*i]);
		(*i)++;
	}
	if (*i == start)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_dec(const char *s, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;
	size_t start = *i;

	while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[*i] - '0');
		(*i)++;
	}
	if (*i == start)
		return -EINVAL;
	*out = v;
	return 0;
}

static int expect(const char *s, size_t len, size_t *i, char c)
{
	if (*i >= len || s[*i] != c)
		return -EINVAL;
	(*i)++;
	return 0;
}

static void skip_spaces(const char *s, size_t len, size_t *i)
{
	while (*i < len && s[*i] == ' ')
		(*i)++;
}

static int parse_perms(const char *s, size_t len, size_t *i, char perms[5])
{
	static const char allowed[4][3] = { "r-", "w-", "x-", "ps" };

	if (len - *i < 4)
		return -EINVAL;
	for (int k = 0; k < 4; k++) {
		char c = s[*i + k];

		if (c != allowed[k][0] && c != allowed[k][1])
			return -EINVAL;
		perms[k] = c;
	}
	perms[4] = '\0';
	*i += 4;
	return 0;
}

static int parse_dev(const char *s, size_t len, size_t *i, struct ht_map *m)
{
	uint64_t maj, min;

	if (parse_hex(s, len, i, &maj) || expect(s, len, i, ':') ||
	    parse_hex(s, len, i, &min) || maj > 0xfffff || min > 0xfffff)
		return -EINVAL;
	m->dev_major = (unsigned)maj;
	m->dev_minor = (unsigned)min;
	return 0;
}

int ht_maps_parse_line(const char *s, size_t len, struct ht_map *m)
{
	uint64_t start, end;
	size_t i = 0;

	memset(m, 0, sizeof(*m));
	if (parse_hex(s, len, &i, &start) || expect(s, len, &i, '-') ||
	    parse_hex(s, len, &i, &end) || expect(s, len, &i, ' ') ||
	    parse_perms(s, len, &i, m->perms) || expect(s, len, &i, ' ') ||
	    parse_hex(s, len, &i, &m->offset) || expect(s, len, &i, ' ') ||
	    parse_dev(s, len, &i, m) || expect(s, len, &i, ' ') ||
	    parse_dec(s, len, &i, &m->inode))
		return -EINVAL;
	if (end <= start || end > UINTPTR_MAX)
		return -EINVAL;
	if (i < len && s[i] != ' ')
		return -EINVAL;
	skip_spaces(s, len, &i);
	m->start = (uintptr_t)start;
	m->end = (uintptr_t)end;
	m->path = s + i;
	m->path_len = len - i;
	return 0;
}

/* The next line at *@pos, without its newline. */
static int next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *llen)
{
	const char *nl;

	if (*pos >= len)
		return 0;
	*line = buf + *pos;
	nl = memchr(*line, '\n', len - *pos);
	*llen = nl ? (size_t)(nl - *line) : len - *pos;
	*pos += *llen + (nl ? 1 : 0);
	return 1;
}

int ht_maps_next(const char *buf, size_t len, size_t *pos, struct ht_map *m)
{
	const char *line;
	size_t llen;

	while (next_line(buf, len, pos, &line, &llen))
		if (ht_maps_parse_line(line, llen, m) == 0)
			return 1;
	return 0;
}

/* "Key:   123 kB" -> bytes; returns 0 when the line has that key. */
static int field_kb(const char *line, size_t llen, const char *key, uint64_t *bytes)
{
	size_t klen = strlen(key), i = klen;
	uint64_t kb;

	if (llen <= klen || memcmp(line, key, klen) != 0)
		return -1;
	skip_spaces(line, llen, &i);
	if (parse_dec(line, llen, &i, &kb) || kb > UINT64_MAX / 1024)
		return -1;
	*bytes = kb * 1024;
	return 0;
}

static void smap_field(struct ht_smap *s, const char *line, size_t llen)
{
	uint64_t v;

	if (field_kb(line, llen, "AnonHugePages:", &v) == 0)
		s->anon_huge = v;
	else if (field_kb(line, llen, "FilePmdMapped:", &v) == 0)
		s->file_pmd = v;
	else if (field_kb(line, llen, "ShmemPmdMapped:", &v) == 0)
		s->shmem_pmd = v;
	else if (field_kb(line, llen, "Shared_Hugetlb:", &v) == 0 ||
		 field_kb(line, llen, "Private_Hugetlb:", &v) == 0)
		s->hugetlb += v;
	else if (field_kb(line, llen, "Anonymous:", &v) == 0)
		s->anonymous = v;
	else if (field_kb(line, llen, "Rss:", &v) == 0)
		s->rss = v;
	else if (field_kb(line, llen, "KernelPageSize:", &v) == 0)
		s->kernel_page_kb = (unsigned)(v / 1024 > 0xffffffffu ? 0 : v / 1024);
}

int ht_smaps_next(const char *buf, size_t len, size_t *pos, struct ht_smap *s)
{
	const char *line;
	size_t llen, before;
	struct ht_map m;
	int have = 0;

	for (;;) {
		before = *pos;
		if (!next_line(buf, len, pos, &line, &llen))
			return have;
		if (ht_maps_parse_line(line, llen, &m) == 0) {
			if (have) {
				*pos = before; /* the next VMA starts here */
				return 1;
			}
			memset(s, 0, sizeof(*s));
			s->map = m;
			have = 1;
		} else if (have) {
			smap_field(s, line, llen);
		}
	}
}

uint64_t ht_smap_huge_bytes(const struct ht_smap *s)
{
	return s->anon_huge + s->file_pmd + s->shmem_pmd + s->hugetlb;
}

#define HUGE_2M (2UL * 1024 * 1024)

uint64_t ht_smaps_huge_in(const char *buf, size_t len, uintptr_t start, uintptr_t end)
{
	struct ht_smap s;
	size_t pos = 0;
	uint64_t total = 0;

	while (ht_smaps_next(buf, len, &pos, &s)) {
		/* Huge pages sit on 2 MiB boundaries: only the VMA's aligned middle can hold them. */
		uintptr_t in_lo = (s.map.start + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1);
		uintptr_t in_hi = s.map.end & ~(uintptr_t)(HUGE_2M - 1);
		uintptr_t lo = in_lo > start ? in_lo : start;
		uintptr_t hi = in_hi < end ? in_hi : end;
		uint64_t huge = ht_smap_huge_bytes(&s), outside;

		if (lo >= hi)
			continue;
		outside = (in_hi - in_lo) - (hi - lo);
		if (huge > outside)
			total += huge - outside;
	}
	return total;
}

int ht_map_path_is(const struct ht_map *m, const char *path)
{
	size_t n = strlen(path);

	return m->path_len == n && memcmp(m->path, path, n) == 0;
}

int ht_pagemap_written(uint64_t entry)
{
	const uint64_t present = 1ULL << 63, swapped = 1ULL << 62, file = 1ULL << 61;

	return (entry & swapped) || ((entry & present) && !(entry & file));
}

int ht_pagemap_clean(const uint64_t *entries, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ht_pagemap_written(entries[i]))
			return 0;
	return 1;
}
