/* SPDX-License-Identifier: MIT */
/* The code footprint and the estimate without counters (footprint.h): pure. */
#include "footprint.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

/* "Key:   123 kB" at @line: the value in bytes when the key matches, else -1. */
static long long kb_field(const char *line, size_t len, const char *key)
{
	size_t k = strlen(key);
	unsigned long long v = 0;
	size_t i = k;
	int digits = 0;

	if (len <= k || memcmp(line, key, k) != 0)
		return -1;
	while (i < len && line[i] == ' ')
		i++;
	for (; i < len && line[i] >= '0' && line[i] <= '9' && v < (1ULL << 50); i++, digits++)
		v = v * 10 + (unsigned)(line[i] - '0');
	return digits ? (long long)(v * 1024) : -1;
}

/* The kernel's own executable mappings, which no program runs from its files. */
static int special(const struct ht_map *m)
{
	return m->path_len && m->path[0] == '[';
}

size_t hte_smaps_code(const char *buf, size_t len, struct hte_range *out, size_t max,
		      uint64_t *code_bytes, uint64_t *referenced)
{
	size_t pos = 0, n = 0;
	int in_code = 0;

	*code_bytes = 0;
	*referenced = 0;
	while (pos < len) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - line) : len - pos;
		struct ht_map m;
		long long v;

		pos += l + 1;
		if (ht_maps_parse_line(line, l, &m) == 0) {
			in_code = m.perms[2] == 'x' && !special(&m) && m.end > m.start;
			if (in_code) {
				if (n < max)
					out[n] = (struct hte_range){ m.start, m.end };
				n++;
				*code_bytes += m.end - m.start;
			}
			continue;
		}
		if (in_code && (v = kb_field(line, l, "Referenced:")) >= 0)
			*referenced += (uint64_t)v;
	}
	return n;
}

uint64_t hte_pages_2m(const uint64_t *vpn, size_t n)
{
	uint64_t count = 0;

	for (size_t i = 0; i < n; i++)
		if (i == 0 || vpn[i] >> 9 != vpn[i - 1] >> 9)
			count++;
	return count;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void hte_footprint_windows(struct hte_footprint *f, const uint64_t *referenced, size_t n, double window_ms)
{
	uint64_t *c;

	f->windows = (unsigned)n;
	f->window_ms = window_ms;
	f->ws_max = f->ws_median = 0;
	if (!n || !(c = malloc(n * sizeof(*c))))
		return;
	for (size_t i = 0; i < n; i++)
		c[i] = referenced[i] >> 12;
	qsort(c, n, sizeof(*c), cmp_u64);
	f->ws_max = c[n - 1];
	f->ws_median = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
}

static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (at >= len)
		return at;
	va_start(ap, fmt);
	n = vsnprintf(buf + at, len - at, fmt, ap);
	va_end(ap);
	return n < 0 ? at : at + (size_t)n;
}

void hte_footprint_estimate(const struct hte_footprint *f, const struct hte_itlb *t,
			    const struct hte_calib *cal, struct hte_estimate *out)
{
	unsigned e4 = t->l2_4k > t->l1_4k ? t->l2_4k : t->l1_4k;
	unsigned e2 = t->l2_2m > t->l1_2m ? t->l2_2m : t->l1_2m;
	size_t at = 0, len = sizeof(out->text);

	memset(out, 0, sizeof(*out));
	if (!f->windows && !f->pages_known) {
		snprintf(out->text, len, "no footprint: the program ended before it could be sampled");
		return;
	}
	if (!e4) {
		snprintf(out->text, len,
			 "this CPU does not say how big its iTLB is: the footprint (%llu pages of 4 KiB "
			 "in a %.0f ms window at most) cannot be compared with it",
			 (unsigned long long)f->ws_max, f->window_ms);
		return;
	}
	out->over_4k = (double)f->ws_max / e4;
	out->misses_4k = f->ws_max > e4;
	if (f->pages_known && e2) {
		out->over_2m = (double)f->pages_2m / e2;
		out->fits_2m = f->pages_2m <= e2;
	}
	if (!out->misses_4k) {
		at = put(out->text, len, at,
			 "its code's working set (at most %llu pages of 4 KiB in a %.0f ms window) fits "
			 "the %u 4 KiB iTLB entries: huge pages cannot help it through the iTLB",
			 (unsigned long long)f->ws_max, f->window_ms, e4);
	} else {
		at = put(out->text, len, at,
			 "its code's working set (at most %llu pages of 4 KiB in a %.0f ms window) is "
			 "%.1fx the %u 4 KiB iTLB entries, so it misses the iTLB on 4 KiB pages",
			 (unsigned long long)f->ws_max, f->window_ms, out->over_4k, e4);
		if (f->pages_known && e2)
			at = put(out->text, len, at,
				 out->fits_2m ? "; the %llu pages of 2 MiB its code lies in fit the %u 2 MiB entries"
					      : "; even the %llu pages of 2 MiB its code lies in are more than the "
						"%u 2 MiB entries: huge pages make the misses fewer, not none",
				 (unsigned long long)f->pages_2m, e2);
	}
	if (cal && cal->verdict == HTE_CALIB_NO_GAIN)
		at = put(out->text, len, at, ". But 2 MiB pages of code gain nothing on this machine (calibration)");
	else if (cal && cal->walk_ns_per_page > 0 && out->misses_4k)
		at = put(out->text, len, at, ". A miss costs about %.0f ns here (calibration)",
			 cal->walk_ns_per_page);
	put(out->text, len, at,
	    ". How often it misses is what counters tell; the timings tell whether it matters");
}
