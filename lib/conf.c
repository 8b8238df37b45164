/* SPDX-License-Identifier: MIT */
/* The policy file: a pure parser, and a loader that checks who may write it. */
#include "conf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sys.h"

/* One line being parsed: where it is, and where to say what is wrong. */
struct line {
	unsigned no;
	char *err;
	size_t errlen;
};

static int bad(const struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(const struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->err && l->errlen) {
		n = snprintf(l->err, l->errlen, "line %u: ", l->no);
		if (n >= 0 && (size_t)n < l->errlen) {
			va_start(ap, fmt);
			vsnprintf(l->err + n, l->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A comment starts with '#' first on the line or after whitespace: "a#b" is a value. */
static size_t strip_comment(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '#' && (i == 0 || is_space(s[i - 1])))
			return i;
	return n;
}

static void trim(const char **s, size_t *n)
{
	const char *p = *s;
	size_t len = *n;

	while (len && is_space(*p))
		p++, len--;
	while (len && is_space(p[len - 1]))
		len--;
	*s = p;
	*n = len;
}

static int copy_str(const struct line *l, const char *key, const char *v, size_t n, char *dst, size_t cap)
{
	if (n >= cap)
		return bad(l, "%s: value longer than %zu bytes", key, cap - 1);
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

int ht_conf_parse_size(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	size_t i = 0;

	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		uint64_t d = (uint64_t)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (i == 0)
		return -EINVAL;
	if (i < len) {
		switch (s[i]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: return -EINVAL;
		}
		if (++i != len)
			return -EINVAL;
	}
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

static int parse_uint(const struct line *l, const char *key, const char *v, size_t n, unsigned max,
		      unsigned *out)
{
	uint64_t x = 0;

	if (n == 0)
		return bad(l, "%s: no value", key);
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return bad(l, "%s: '%.*s' is not a whole number", key, (int)n, v);
		x = x * 10 + (uint64_t)(v[i] - '0');
		if (x > max)
			return bad(l, "%s: larger than %u", key, max);
	}
	*out = (unsigned)x;
	return 0;
}

static int parse_flag(const struct line *l, const char *key, const char *v, size_t n, int *out)
{
	if (n == 1 && (v[0] == '0' || v[0] == '1')) {
		*out = v[0] - '0';
		return 0;
	}
	return bad(l, "%s: '%.*s' is neither 0 nor 1", key, (int)n, v);
}

/* @v is one of @names: *@out is its index. */
static int parse_name(const char *const *names, size_t count, const char *v, size_t n, int *out)
{
	for (size_t i = 0; i < count; i++) {
		if (strlen(names[i]) == n && memcmp(v, names[i], n) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* share, big_libraries = 0|1|auto, in the order of HT_SHARE_* and HT_BIG_LIBRARIES_*. */
static int parse_auto_flag(const struct line *l, const char *key, const char *v, size_t n, int *out)
{
	static const char *const names[] = { "0", "1", "auto" };

	if (parse_name(names, 3, v, n, out) == 0)
		return 0;
	return bad(l, "%s: '%.*s' is not 0, 1 or auto", key, (int)n, v);
}

/* copy = now|auto|never, in the order of HT_COPY_*. */
static int parse_copy(const struct line *l, const char *v, size_t n, int *out)
{
	static const char *const names[] = { "now", "auto", "never" };

	if (parse_name(names, 3, v, n, out) == 0)
		return 0;
	return bad(l, "copy: '%.*s' is not now, auto or never", (int)n, v);
}

/* containers = annotated|all|off, in the order of HT_CONF_CONTAINERS_*. */
static int parse_containers(const struct line *l, const char *v, size_t n, int *out)
{
	static const char *const names[] = { "annotated", "all", "off" };

	if (parse_name(names, 3, v, n, out) == 0)
		return 0;
	return bad(l, "containers: '%.*s' is not annotated, all or off", (int)n, v);
}

static int parse_mode(const struct line *l, const char *v, size_t n, enum ht_conf_mode *out)
{
	static const char *const names[] = { "auto", "thp", "explicit", "off", "folios" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strlen(names[i]) == n && memcmp(v, names[i], n) == 0) {
			*out = (enum ht_conf_mode)i;
			return 0;
		}
	}
	return bad(l, "mode: '%.*s' is not auto, thp, explicit, off or folios", (int)n, v);
}

static int add_warm(const struct line *l, struct ht_conf *c, const char *v, size_t n)
{
	unsigned used = c->nwarm ? c->warm_off[c->nwarm - 1] +
					   (unsigned)strlen(c->warm_buf + c->warm_off[c->nwarm - 1]) + 1
				 : 0;

	if (v[0] != '/')
		return bad(l, "warm: '%.*s' is not an absolute path", (int)n, v);
	if (c->nwarm == HT_CONF_WARM_MAX)
		return bad(l, "warm: more than %u files", HT_CONF_WARM_MAX);
	if (n >= HT_CONF_WARM_BYTES - used)
		return bad(l, "warm: the paths take more than %u bytes in all", HT_CONF_WARM_BYTES);
	memcpy(c->warm_buf + used, v, n);
	c->warm_buf[used + n] = '\0';
	c->warm_off[c->nwarm++] = used;
	return 0;
}

static void note_unknown(struct ht_conf *c, const struct line *l, const char *k, size_t n)
{
	if (c->nunknown < HT_CONF_UNKNOWN_MAX) {
		size_t m = n < HT_CONF_KEY_MAX - 1 ? n : HT_CONF_KEY_MAX - 1;

		memcpy(c->unknown[c->nunknown], k, m);
		c->unknown[c->nunknown][m] = '\0';
		c->unknown_line[c->nunknown] = l->no;
	}
	c->nunknown++;
}

static int key_is(const char *k, size_t n, const char *name)
{
	return strlen(name) == n && memcmp(k, name, n) == 0;
}

/* One "key = value", trimmed and not empty. */
static int set_key(struct ht_conf *c, const struct line *l, const char *k, size_t kn, const char *v,
		   size_t vn)
{
	unsigned bit = 0;
	int err;

	if (vn == 0)
		return bad(l, "%.*s: no value", (int)kn, k);
	if (key_is(k, kn, "mode"))
		err = parse_mode(l, v, vn, &c->mode), bit = HT_CONF_MODE;
	else if (key_is(k, kn, "programs"))
		err = copy_str(l, "programs", v, vn, c->programs, sizeof(c->programs)), bit = HT_CONF_PROGRAMS;
	else if (key_is(k, kn, "match"))
		err = copy_str(l, "match", v, vn, c->match, sizeof(c->match)), bit = HT_CONF_MATCH;
	else if (key_is(k, kn, "ignore"))
		err = copy_str(l, "ignore", v, vn, c->ignore, sizeof(c->ignore)), bit = HT_CONF_IGNORE;
	else if (key_is(k, kn, "min_code")) {
		err = ht_conf_parse_size(v, vn, &c->min_code) < 0
			      ? bad(l, "min_code: '%.*s' is not a size (a number, then K, M or G)", (int)vn, v)
			      : 0;
		bit = HT_CONF_MIN_CODE;
	} else if (key_is(k, kn, "budget_ms"))
		err = parse_uint(l, "budget_ms", v, vn, HT_CONF_BUDGET_MAX, &c->budget_ms), bit = HT_CONF_BUDGET_MS;
	else if (key_is(k, kn, "page_cache"))
		err = parse_flag(l, "page_cache", v, vn, &c->page_cache), bit = HT_CONF_PAGE_CACHE;
	else if (key_is(k, kn, "cover_ends"))
		err = parse_flag(l, "cover_ends", v, vn, &c->cover_ends), bit = HT_CONF_COVER_ENDS;
	else if (key_is(k, kn, "service"))
		err = parse_flag(l, "service", v, vn, &c->service), bit = HT_CONF_SERVICE;
	else if (key_is(k, kn, "copy_hot"))
		err = parse_flag(l, "copy_hot", v, vn, &c->copy_hot), bit = HT_CONF_COPY_HOT;
	else if (key_is(k, kn, "async"))
		err = parse_flag(l, "async", v, vn, &c->async), bit = HT_CONF_ASYNC;
	else if (key_is(k, kn, "share"))
		err = parse_auto_flag(l, "share", v, vn, &c->share), bit = HT_CONF_SHARE;
	else if (key_is(k, kn, "big_libraries"))
		err = parse_auto_flag(l, "big_libraries", v, vn, &c->big_libraries),
		bit = HT_CONF_BIG_LIBRARIES;
	else if (key_is(k, kn, "copy"))
		err = parse_copy(l, v, vn, &c->copy), bit = HT_CONF_COPY;
	else if (key_is(k, kn, "containers"))
		err = parse_containers(l, v, vn, &c->containers), bit = HT_CONF_CONTAINERS;
	else if (key_is(k, kn, "copy_after_ms"))
		err = parse_uint(l, "copy_after_ms", v, vn, HT_CONF_COPY_AFTER_MAX, &c->copy_after_ms),
		bit = HT_CONF_COPY_AFTER_MS;
	else if (key_is(k, kn, "text_cache_size")) {
		err = ht_conf_parse_size(v, vn, &c->text_cache_size) < 0
			      ? bad(l, "text_cache_size: '%.*s' is not a size (a number, then K, M or G)", (int)vn, v)
			      : 0;
		bit = HT_CONF_TEXT_CACHE_SIZE;
	} else if (key_is(k, kn, "verbose"))
		err = parse_flag(l, "verbose", v, vn, &c->verbose), bit = HT_CONF_VERBOSE;
	else if (key_is(k, kn, "pool"))
		err = parse_uint(l, "pool", v, vn, HT_CONF_POOL_MAX, &c->pool), bit = HT_CONF_POOL;
	else if (key_is(k, kn, "hugetlbfs")) {
		err = v[0] == '/' ? copy_str(l, "hugetlbfs", v, vn, c->hugetlbfs, sizeof(c->hugetlbfs))
				  : bad(l, "hugetlbfs: '%.*s' is not an absolute path", (int)vn, v);
		bit = HT_CONF_HUGETLBFS;
	} else if (key_is(k, kn, "warm"))
		err = add_warm(l, c, v, vn), bit = HT_CONF_WARM;
	else {
		note_unknown(c, l, k, kn);
		return 0;
	}
	if (err == 0)
		c->set |= bit;
	return err;
}

static int valid_key(const char *k, size_t n)
{
	if (n == 0 || k[0] < 'a' || k[0] > 'z')
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return 0;
	return 1;
}

static int parse_line(struct ht_conf *c, const struct line *l, const char *s, size_t n)
{
	const char *eq, *k, *v;
	size_t kn, vn;

	if (n > HT_CONF_MAX_LINE)
		return bad(l, "longer than %u bytes", HT_CONF_MAX_LINE);
	if (memchr(s, '\0', n))
		return bad(l, "holds a NUL byte");
	n = strip_comment(s, n);
	trim(&s, &n);
	if (n == 0)
		return 0;
	eq = memchr(s, '=', n);
	if (!eq)
		return bad(l, "not 'key = value'");
	k = s;
	kn = (size_t)(eq - s);
	v = eq + 1;
	vn = n - kn - 1;
	trim(&k, &kn);
	trim(&v, &vn);
	if (!valid_key(k, kn))
		return bad(l, "'%.*s' is not a key (lowercase letters, digits and '_')", (int)(kn < 64 ? kn : 64), k);
	return set_key(c, l, k, kn, v, vn);
}

int ht_conf_parse(const char *buf, size_t len, struct ht_conf *out, char *err, size_t errlen)
{
	struct line l = { 0, err, errlen };
	size_t pos = 0;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	if (!buf && len)
		return -EINVAL;
	if (len > HT_CONF_MAX_BYTES) {
		if (err && errlen)
			snprintf(err, errlen, "longer than %u bytes", HT_CONF_MAX_BYTES);
		return -EINVAL;
	}
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		l.no++;
		if (parse_line(out, &l, buf + pos, n) < 0) {
			memset(out, 0, sizeof(*out));
			return -EINVAL;
		}
		pos += n + 1;
	}
	return 0;
}

const char *ht_conf_warm(const struct ht_conf *c, unsigned i)
{
	return c && i < c->nwarm ? c->warm_buf + c->warm_off[i] : NULL;
}

static int say(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int say(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Why a file with this status must not be trusted, or NULL. */
static const char *distrust(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != 0)
		return "not owned by root";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by others than root";
	return NULL;
}

/* Reads the checked file: at most HT_CONF_MAX_BYTES, even if it grew meanwhile. */
static int read_checked(int fd, const char *path, struct ht_conf *out, char *err, size_t errlen)
{
	char *buf = malloc(HT_CONF_MAX_BYTES + 1);
	ssize_t n;
	int rc;

	if (!buf)
		return say(err, errlen, -ENOMEM, "%s: out of memory", path);
	n = ht_sys_pread_full(fd, buf, HT_CONF_MAX_BYTES + 1, 0);
	if (n < 0)
		rc = say(err, errlen, (int)n, "%s: cannot read: %s", path, strerror((int)-n));
	else if ((size_t)n > HT_CONF_MAX_BYTES)
		rc = say(err, errlen, -EFBIG, "%s: longer than %u bytes", path, HT_CONF_MAX_BYTES);
	else {
		char why[256];

		rc = ht_conf_parse(buf, (size_t)n, out, why, sizeof(why));
		if (rc < 0)
			say(err, errlen, rc, "%s: %s", path, why);
	}
	free(buf);
	return rc;
}

int ht_conf_load(const char *path, struct ht_conf *out, char *err, size_t errlen)
{
	struct stat st;
	const char *why;
	int fd, rc;

	if (!out)
		return -EINVAL;
	if (err && errlen)
		err[0] = '\0';
	if (!path) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	/* O_NONBLOCK: a FIFO put there must not hang the program; fstat refuses it next. */
	fd = ht_sys_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	/*
	 * Every program pays for this call where no policy file exists: it
	 * leaves *out alone, whose 14 KiB a clearing would make the kernel
	 * hand out as fresh pages.
	 */
	if (fd == -ENOENT)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	if (fd == -ELOOP)
		return say(err, errlen, -EPERM, "%s: a symbolic link: ignored", path);
	if (fd < 0)
		return say(err, errlen, fd, "%s: cannot open: %s", path, strerror(-fd));
	rc = ht_sys_fstat(fd, &st);
	if (rc < 0)
		rc = say(err, errlen, rc, "%s: cannot stat: %s", path, strerror(-rc));
	else if ((why = distrust(&st)))
		rc = say(err, errlen, -EPERM, "%s: %s: ignored", path, why);
	else if ((uint64_t)st.st_size > HT_CONF_MAX_BYTES)
		rc = say(err, errlen, -EFBIG, "%s: longer than %u bytes: ignored", path, HT_CONF_MAX_BYTES);
	else
		rc = read_checked(fd, path, out, err, errlen);
	ht_sys_close(fd);
	if (rc < 0)
		memset(out, 0, sizeof(*out));
	return rc;
}
