/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the subcommands. */
#include "tool.h"
#include "internal.h"

#include <errno.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

void hte_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, cmd ? "hugetext %s: " : "hugetext: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *hte_human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

void hte_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char piece[8];

	fputc('"', f);
	while (*p) {
		p += ht_json_piece(p, piece);
		fputs(piece, f);
	}
	fputc('"', f);
}

void hte_text_name(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

/*
 * Rounded down to a tenth, as the tools print it: anything short of all
 * never reads "100.0%" (40.02 MiB of which 40 can be covered is 99.9%).
 */
double hte_percent(uint64_t part, uint64_t whole)
{
	if (whole == 0)
		return 100.0;
	if (part >= whole)
		return (double)part * 100.0 / (double)whole;
	return (double)(unsigned long long)((long double)part * 1000.0L / (long double)whole) / 10.0;
}

int hte_parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *suffix; unsigned shift; } units[] = {
		{ "", 0 }, { "B", 0 },
		{ "K", 10 }, { "KB", 10 }, { "KiB", 10 },
		{ "M", 20 }, { "MB", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GB", 30 }, { "GiB", 30 },
	};
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].suffix) != 0)
			continue;
		if (v > (UINT64_MAX >> units[i].shift))
			return -1;
		*out = (uint64_t)v << units[i].shift;
		return 0;
	}
	return -1;
}

int hte_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = { .flags = (unsigned long long)flags, .mode = 0, .resolve = resolve };

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}
