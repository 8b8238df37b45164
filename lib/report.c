/* SPDX-License-Identifier: MIT */
/* The report: one JSON object per region, and the human line for verbose. */
#include "internal.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct out {
	char *buf;
	size_t len, used;
	int full;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used)
		o->full = 1;
	else
		o->used += (size_t)n;
}

size_t ht_utf8_len(const unsigned char *s)
{
	unsigned lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80; /* overlong */
		hi = s[0] == 0xed ? 0x9f : 0xbf; /* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		lo = s[0] == 0xf0 ? 0x90 : 0x80; /* overlong */
		hi = s[0] == 0xf4 ? 0x8f : 0xbf; /* past U+10FFFF */
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

size_t ht_json_piece(const unsigned char *s, char out[8])
{
	size_t n = ht_utf8_len(s);

	if (*s == '"' || *s == '\\')
		snprintf(out, 8, "\\%c", *s);
	else if (*s < 0x20 || *s == 0x7f)
		snprintf(out, 8, "\\u%04x", *s);
	else if (n)
		snprintf(out, 8, "%.*s", (int)n, (const char *)s);
	else
		snprintf(out, 8, "\\ufffd");
	return n ? n : 1;
}

/* JSON string body, piece by piece (ht_json_piece). */
static void put_json_string(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char piece[8];

	put(o, "\"");
	while (*p) {
		p += ht_json_piece(p, piece);
		put(o, "%s", piece);
	}
	put(o, "\"");
}

int ht_format_json(const struct ht_region *r, long pid, char *buf, size_t len)
{
	struct out o = { buf, len, 0, 0 };

	if (len == 0)
		return -ENOSPC;
	put(&o, "{\"pid\":%ld,\"object\":", pid);
	put_json_string(&o, r->object);
	put(&o, ",\"start\":%lu,\"end\":%lu,\"bytes\":%zu,\"huge_bytes\":%zu",
	    (unsigned long)r->start, (unsigned long)r->end, r->bytes, r->huge_bytes);
	put(&o, ",\"mode\":\"%s\",\"ms\":%.3f,\"status\":\"%s\"",
	    ht_mode_str(r->mode), r->ms, ht_status_str(r->status));
	if (r->fill && *r->fill)
		put(&o, ",\"fill\":\"%s\"", r->fill);
	if (r->kept_bytes)
		put(&o, ",\"kept_bytes\":%zu", r->kept_bytes);
	if (r->warmed_bytes)
		put(&o, ",\"warmed_bytes\":%zu", r->warmed_bytes);
	if (r->private_huge_bytes || r->private_code_bytes)
		put(&o, ",\"private_huge_bytes\":%zu,\"private_code_bytes\":%zu", r->private_huge_bytes,
		    r->private_code_bytes);
	if (r->hot_bytes || r->cold_bytes)
		put(&o, ",\"hot_bytes\":%zu,\"cold_bytes\":%zu", r->hot_bytes, r->cold_bytes);
	if (r->cache && *r->cache)
		put(&o, ",\"cache\":\"%s\"", r->cache);
	if (r->cache_error && *r->cache_error) {
		put(&o, ",\"cache_error\":");
		put_json_string(&o, r->cache_error);
	}
	if (r->status != HT_STATUS_OK || r->error != HT_E_NONE) {
		put(&o, ",\"error\":");
		put_json_string(&o, ht_error_str(r->error));
		if (r->sys_errno)
			put(&o, ",\"errno\":%d,\"strerror\":\"%s\"", r->sys_errno, strerror(r->sys_errno));
	}
	put(&o, "}\n");
	return o.full ? -ENOSPC : (int)o.used;
}

/* A path for a terminal: control bytes become '?', so a line stays one line. */
static void put_plain(struct out *o, const char *s)
{
	for (; *s; s++)
		put(o, "%c", (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

int ht_format_human(const struct ht_region *r, char *buf, size_t len)
{
	struct out o = { buf, len, 0, 0 };
	const double mib = 1024.0 * 1024.0;

	if (len == 0)
		return -ENOSPC;
	put(&o, "hugetext: ");
	put_plain(&o, r->object[0] ? r->object : "?");
	put(&o, " [%#lx-%#lx) %.1f MiB: %s", (unsigned long)r->start, (unsigned long)r->end, (double)r->bytes / mib,
	    ht_status_str(r->status));
	if (r->status == HT_STATUS_OK)
		put(&o, ", %.1f MiB on huge pages (%s%s%s)", (double)r->huge_bytes / mib,
		    ht_mode_str(r->mode), r->fill && *r->fill ? ", " : "", r->fill ? r->fill : "");
	if (r->kept_bytes)
		put(&o, ", %.1f MiB kept on the page cache's 2 MiB pages", (double)r->kept_bytes / mib);
	if (r->warmed_bytes)
		put(&o, ", %.1f MiB read back as 2 MiB page-cache pages", (double)r->warmed_bytes / mib);
	if (r->private_huge_bytes)
		put(&o, ", %.1f MiB private for %.1f MiB of code", (double)r->private_huge_bytes / mib,
		    (double)r->private_code_bytes / mib);
	if (r->hot_bytes || r->cold_bytes)
		put(&o, ", copied what runs: %.1f MiB hot, %.1f MiB cold", (double)r->hot_bytes / mib,
		    (double)r->cold_bytes / mib);
	if (r->cache && *r->cache)
		put(&o, ", cache %s", r->cache);
	if (r->cache_error && *r->cache_error)
		put(&o, " (%s)", r->cache_error);
	if (r->error != HT_E_NONE)
		put(&o, ", %s", ht_error_str(r->error));
	if (r->sys_errno)
		put(&o, " (%s)", strerror(r->sys_errno));
	put(&o, " in %.2f ms\n", r->ms);
	return o.full ? -ENOSPC : (int)o.used;
}

/*
 * A link another user made (in /tmp, for the name a man page suggests)
 * would have this process write where that user chose; links of ours or
 * root's (/dev/stderr) are followed.  Kernels with protected_symlinks do
 * the same; not every machine sets it.
 */
static int planted_link(const char *path)
{
	int fd = ht_sys_open(path, O_PATH | O_NOFOLLOW, 0);
	struct stat st;
	int planted;

	if (fd < 0)
		return 0; /* absent: open() makes it */
	planted = ht_sys_fstat(fd, &st) < 0 ||
		  (S_ISLNK(st.st_mode) && st.st_uid != ht_geteuid() && st.st_uid != 0);
	ht_sys_close(fd);
	return planted;
}

/* One write per line, so concurrent processes never interleave lines. */
static void append_line(const char *path, const char *line, size_t len)
{
	int fd;

	if (planted_link(path))
		return;
	/* NONBLOCK: a FIFO nobody reads must not stop the program. */
	fd = ht_sys_open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY | O_NONBLOCK, 0644);
	if (fd < 0)
		return;
	ht_sys_write_full(fd, line, len);
	ht_sys_close(fd);
}

void ht_report_emit(const struct ht_options *opt, const struct ht_region *r)
{
	/* Room for the longest object name with every byte escaped (\u00XX). */
	char line[sizeof(r->object) * 6 + 1024];
	int n;

	if (opt->report_path) {
		n = ht_format_json(r, (long)ht_getpid(), line, sizeof(line));
		if (n > 0)
			append_line(opt->report_path, line, (size_t)n);
	}
	if (opt->verbose) {
		n = ht_format_human(r, line, sizeof(line));
		if (n > 0)
			ht_sys_write_full(STDERR_FILENO, line, (size_t)n);
	}
}

void ht_report_note(const struct ht_options *opt, const char *msg)
{
	char line[1024];
	int n;

	if (!opt->verbose)
		return;
	n = snprintf(line, sizeof(line), "hugetext: %s\n", msg);
	if (n > 0)
		ht_sys_write_full(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
