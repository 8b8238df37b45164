/* SPDX-License-Identifier: MIT */
/*
 * The text service's pure parts (serve.h): what it reads of /proc and of
 * the hook's records, the budgets, the cache's eviction and share rules,
 * the socket's ACL.  Buffers in, results out: tests/test-service.cpp
 * checks them on fixtures.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cache.h"
#include "mountfield.h"
#include "serve.h"

int hte_maps_runs_file(const char *maps, size_t len, dev_t dev, ino_t ino)
{
	const char *p = maps, *end = maps + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char line[512], perms[8];
		unsigned maj, min;
		unsigned long long lo, hi, off, inode;
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &lo, &hi, perms, &off, &maj, &min,
			   &inode) == 7 &&
		    perms[2] == 'x' && inode == (unsigned long long)ino && inode != 0 &&
		    maj == major(dev) && min == minor(dev))
			return 1;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int hte_user_dir_uid(const char *name, uid_t *uid)
{
	unsigned long long v = 0;
	const char *p;

	if (strncmp(name, "hugetext-", 9) != 0)
		return 0;
	p = name + 9;
	if (*p < '0' || *p > '9' || (*p == '0' && p[1]))
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > (uid_t)-1)
			return 0;
	}
	if (*p)
		return 0;
	*uid = (uid_t)v;
	return 1;
}

/* --- the eviction order --- */

static const struct hte_entry_age *order_of;

static int unused(const struct hte_entry_age *a)
{
	return a->atime <= a->mtime;
}

static int by_eviction(const void *x, const void *y)
{
	const struct hte_entry_age *a = &order_of[*(const size_t *)x], *b = &order_of[*(const size_t *)y];

	int64_t p, q;

	if (unused(a) != unused(b))
		return unused(a) ? -1 : 1;
	p = unused(a) ? a->mtime : a->atime;
	q = unused(a) ? b->mtime : b->atime;
	if (p != q)
		return p < q ? -1 : 1;
	/* The same time: the order they were listed in, so that the sort is the same every time. */
	return *(const size_t *)x < *(const size_t *)y ? -1 : *(const size_t *)x > *(const size_t *)y;
}

void hte_eviction_order(const struct hte_entry_age *e, size_t n, size_t *idx)
{
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	order_of = e;
	qsort(idx, n, sizeof(*idx), by_eviction);
}

uint64_t hte_auto_cache_size(uint64_t mem_total)
{
	uint64_t s = mem_total / 16;

	s &= ~((2ULL << 20) - 1);
	if (s < (256ULL << 20))
		s = 256ULL << 20;
	return s > (4ULL << 30) ? 4ULL << 30 : s;
}

/* --- the budgets --- */

static void refill(struct hte_bucket *b, double now, double rate, double burst)
{
	/* A new bucket starts full; a clock that went back refills nothing. */
	if (b->at == 0) {
		b->level = burst;
	} else if (now > b->at) {
		b->level += (now - b->at) * rate;
		if (b->level > burst)
			b->level = burst;
	}
	if (now > b->at)
		b->at = now;
}

int hte_bucket_take(struct hte_bucket *b, double now, double rate, double burst, double cost)
{
	refill(b, now, rate, burst);
	if (b->level < cost)
		return 0;
	b->level -= cost;
	return 1;
}

void hte_bucket_charge(struct hte_bucket *b, double now, double rate, double burst, double cost)
{
	refill(b, now, rate, burst);
	b->level -= cost;
}

int hte_bucket_ready(struct hte_bucket *b, double now, double rate, double burst)
{
	refill(b, now, rate, burst);
	return b->level >= 0;
}

/* --- the socket's ACL --- */

/* linux/posix_acl_xattr.h, in the kernel's byte order (little-endian) on every architecture. */
#define ACL_XATTR_VERSION 2
#define TAG_USER_OBJ 0x01
#define TAG_USER 0x02
#define TAG_GROUP_OBJ 0x04
#define TAG_MASK 0x10
#define TAG_OTHER 0x20
#define ID_NONE 0xffffffffu

static unsigned char *le16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	return p + 2;
}

static unsigned char *le32(unsigned char *p, unsigned v)
{
	p = le16(p, v & 0xffff);
	return le16(p, v >> 16);
}

static unsigned char *acl_entry(unsigned char *p, unsigned tag, unsigned perm, unsigned id)
{
	return le32(le16(le16(p, tag), perm), id);
}

static int by_uid(const void *x, const void *y)
{
	uid_t a = *(const uid_t *)x, b = *(const uid_t *)y;

	return a < b ? -1 : a > b;
}

long hte_acl_deny(unsigned mode, const uid_t *uids, size_t n, unsigned char *buf, size_t len)
{
	uid_t sorted[256];
	size_t m = 0, need;
	unsigned char *p = buf;

	/* The kernel wants named users in order, each once. */
	if (n > sizeof(sorted) / sizeof(sorted[0]))
		return -1;
	if (n)
		memcpy(sorted, uids, n * sizeof(*uids));
	qsort(sorted, n, sizeof(*sorted), by_uid);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || sorted[m - 1] != sorted[i])
			sorted[m++] = sorted[i];
	need = 4 + 8 * (4 + m);
	if (len < need)
		return -1;
	p = le32(p, ACL_XATTR_VERSION);
	p = acl_entry(p, TAG_USER_OBJ, (mode >> 6) & 7, ID_NONE);
	for (size_t i = 0; i < m; i++)
		p = acl_entry(p, TAG_USER, 0, (unsigned)sorted[i]);
	/* The mask is the group's bits: the group and other users keep what the mode gave them. */
	p = acl_entry(p, TAG_GROUP_OBJ, (mode >> 3) & 7, ID_NONE);
	p = acl_entry(p, TAG_MASK, (mode >> 3) & 7, ID_NONE);
	p = acl_entry(p, TAG_OTHER, mode & 7, ID_NONE);
	return (long)(p - buf);
}

/* --- the share rule --- */

long hte_share_pick(const struct hte_cache_entry *e, size_t n, int nowners, int who, uint64_t total,
		    uint64_t avail, uint64_t need, size_t *out, uint64_t *share)
{
	struct hte_entry_age *age = calloc(n ? n : 1, sizeof(*age));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	uint64_t *use = calloc((size_t)(nowners > 0 ? nowners : 1), sizeof(*use));
	unsigned active = 0;
	long k = 0;

	*share = total;
	if (!age || !idx || !use || need > total) {
		k = -1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		age[i] = (struct hte_entry_age){ e[i].atime, e[i].mtime, e[i].bytes };
		if (e[i].owner >= 0 && e[i].owner < nowners)
			use[e[i].owner] += e[i].bytes;
	}
	for (int c = 0; c < nowners; c++)
		active += use[c] > 0 || c == who;
	*share = total / (active ? active : 1);
	hte_eviction_order(age, n, idx);
	for (size_t i = 0; i < n && avail < need; i++) {
		const struct hte_cache_entry *x = &e[idx[i]];
		int mine = x->owner == who, nobodys = x->owner < 0 || x->owner >= nowners;

		if (!mine && !nobodys && use[x->owner] <= *share)
			continue;
		if (!nobodys)
			use[x->owner] -= x->bytes;
		avail += x->bytes;
		out[k++] = idx[i];
	}
	if (avail < need)
		k = -1;
out:
	free(age);
	free(idx);
	free(use);
	return k;
}

/* --- mountinfo --- */

/* Appends the path @s to o->lowers.  Returns: 0, or -1 when they do not fit. */
static int add_lower(struct hte_ovl_mount *o, const char *s, size_t n)
{
	size_t used = 0;

	for (unsigned i = 0; i < o->nlower; i++)
		used += strlen(o->lowers + used) + 1;
	if (o->nlower >= HTE_OVL_LOWERS_MAX || used + n + 1 > sizeof(o->lowers) || n == 0)
		return -1;
	memcpy(o->lowers + used, s, n);
	o->lowers[used + n] = '\0';
	o->nlower++;
	return 0;
}

/*
 * lowerdir=A:B::C as overlayfs reads it: a backslash makes the next byte
 * plain, ':' ends a layer, "::" starts the data-only layers (left out:
 * no path is looked up in them).
 */
static int split_lowers(struct hte_ovl_mount *o, const char *v)
{
	char cur[4096];
	size_t n = 0;

	for (const char *p = v;; p++) {
		if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == ':' || *p == '\0') {
			if (n && add_lower(o, cur, n) < 0)
				return -1;
			n = 0;
			if (*p == '\0' || p[1] == ':')
				return 0;
			continue;
		}
		if (n + 1 >= sizeof(cur))
			return -1;
		cur[n++] = *p;
	}
}

/* The super options of a line (a comma-separated list, values escaped by mountinfo). */
static int read_options(struct hte_ovl_mount *o, const char *s, size_t n)
{
	const char *end = s + n;

	o->upper[0] = '\0';
	o->nlower = 0;
	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		size_t len = (size_t)((comma ? comma : end) - s);
		char opt[sizeof(o->lowers)];

		if (hte_mount_unescape(s, len, opt, sizeof(opt)) < 0)
			return -1;
		if (!strncmp(opt, "upperdir=", 9)) {
			if (strlen(opt + 9) >= sizeof(o->upper))
				return -1;
			memcpy(o->upper, opt + 9, strlen(opt + 9) + 1);
		} else if (!strncmp(opt, "lowerdir=", 9) && split_lowers(o, opt + 9) < 0)
			return -1;
		else if (!strncmp(opt, "lowerdir+=", 10) && add_lower(o, opt + 10, strlen(opt + 10)) < 0)
			return -1;
		s = comma ? comma + 1 : end;
	}
	return o->nlower ? 0 : -1;
}

/* Whether the mount point @point is @path or one of its parent directories; the rest's offset. */
static int under(const char *point, const char *path, size_t *rest)
{
	size_t n = strlen(point);

	if (!strcmp(point, "/")) {
		*rest = 0;
		return path[0] == '/';
	}
	if (strncmp(point, path, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return 0;
	*rest = n;
	return 1;
}

/* o->rel: the mount's root, then @tail (a path from that root). */
static int join_rel(struct hte_ovl_mount *o, const char *tail)
{
	int n;

	if (!strcmp(o->root, "/"))
		n = snprintf(o->rel, sizeof(o->rel), "%s", *tail ? tail : "/");
	else
		n = snprintf(o->rel, sizeof(o->rel), "%s%s", o->root, tail);
	return n < 0 || (size_t)n >= sizeof(o->rel) ? -1 : 0;
}

int hte_mountinfo_overlay(const char *buf, size_t len, dev_t dev, const char *path, struct hte_ovl_mount *o)
{
	const char *p = buf, *end = buf + len, *first = NULL;
	size_t best = 0, first_len = 0, best_len = 0, rest = 0;
	const char *best_line = NULL;
	int found = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end, *q = p, *f;
		size_t n, r;
		char point[4096];
		unsigned maj, min;
		char mm[32];

		/* ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER */
		if (hte_mount_field(&q, le, &f, &n) && hte_mount_field(&q, le, &f, &n) && hte_mount_field(&q, le, &f, &n) && n < sizeof(mm)) {
			memcpy(mm, f, n);
			mm[n] = '\0';
			if (sscanf(mm, "%u:%u", &maj, &min) == 2 && maj == major(dev) && min == minor(dev) &&
			    hte_mount_field(&q, le, &f, &n) && hte_mount_field(&q, le, &f, &n) &&
			    hte_mount_unescape(f, n, point, sizeof(point)) == 0) {
				const char *sep = strstr(q, " - overlay ");

				if (sep && sep < le) {
					if (!first) {
						first = p;
						first_len = (size_t)(le - p);
					}
					if (path && under(point, path, &r) && (!best_line || strlen(point) > best)) {
						best = strlen(point);
						best_line = p;
						best_len = (size_t)(le - p);
						rest = r;
					}
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!first)
		return 0;
	if (!best_line) {
		best_line = first;
		best_len = first_len;
		rest = 0;
	}
	/* The chosen line again, in full. */
	{
		const char *q = best_line, *le = best_line + best_len, *f, *sep;
		size_t n;

		memset(o, 0, sizeof(*o));
		for (int i = 0; i < 3; i++)
			hte_mount_field(&q, le, &f, &n);
		if (!hte_mount_field(&q, le, &f, &n) || hte_mount_unescape(f, n, o->root, sizeof(o->root)) < 0 ||
		    !hte_mount_field(&q, le, &f, &n) || hte_mount_unescape(f, n, o->point, sizeof(o->point)) < 0)
			return -1;
		sep = strstr(q, " - overlay ");
		if (!sep || sep >= le)
			return -1;
		q = sep + 11;
		if (!hte_mount_field(&q, le, &f, &n) || !hte_mount_field(&q, le, &f, &n) || read_options(o, f, n) < 0)
			return -1;
		found = 1;
	}
	if (path && join_rel(o, path + rest) < 0)
		return -1;
	return found;
}

int hte_ovl_relative(const struct hte_ovl_mount *o)
{
	const char *lower = o->lowers;

	if (o->upper[0] && o->upper[0] != '/')
		return 1;
	for (unsigned i = 0; i < o->nlower; i++, lower += strlen(lower) + 1)
		if (lower[0] != '/')
			return 1;
	return 0;
}

int hte_ovl_rebase(struct hte_ovl_mount *o, const char *base)
{
	char upper[sizeof(o->upper)], *lowers;
	const char *lower = o->lowers;
	size_t used = 0, b = strlen(base);

	if (base[0] != '/')
		return -1;
	/* "/" as the base: one slash, not two. */
	if (b == 1)
		b = 0;
	if (o->upper[0] && o->upper[0] != '/') {
		if (b + 1 + strlen(o->upper) >= sizeof(upper))
			return -1;
		snprintf(upper, sizeof(upper), "%.*s/%s", (int)b, base, o->upper);
	} else {
		memcpy(upper, o->upper, strlen(o->upper) + 1);
	}
	lowers = malloc(sizeof(o->lowers));
	if (!lowers)
		return -1;
	for (unsigned i = 0; i < o->nlower; i++, lower += strlen(lower) + 1) {
		size_t n = strlen(lower), extra = lower[0] == '/' ? 0 : b + 1;

		if (used + extra + n + 1 > sizeof(o->lowers)) {
			free(lowers);
			return -1;
		}
		if (extra) {
			memcpy(lowers + used, base, b);
			lowers[used + b] = '/';
		}
		memcpy(lowers + used + extra, lower, n + 1);
		used += extra + n + 1;
	}
	memcpy(o->lowers, lowers, used);
	memcpy(o->upper, upper, strlen(upper) + 1);
	free(lowers);
	return 0;
}

int hte_mountinfo_root(const char *buf, size_t len, char *out, size_t cap)
{
	const char *p = buf, *end = buf + len;
	int found = -1;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end, *q = p, *f, *root;
		size_t n, root_n = 0;
		char point[8];

		/* ID PARENT MAJ:MIN ROOT POINT ... */
		if (hte_mount_field(&q, le, &f, &n) && hte_mount_field(&q, le, &f, &n) && hte_mount_field(&q, le, &f, &n) &&
		    hte_mount_field(&q, le, &root, &root_n) && hte_mount_field(&q, le, &f, &n) && n == 1 &&
		    hte_mount_unescape(f, n, point, sizeof(point)) == 0 && !strcmp(point, "/"))
			found = hte_mount_unescape(root, root_n, out, cap) == 0 ? 0 : -1;
		p = nl ? nl + 1 : end;
	}
	return found;
}

/* --- the hook's records --- */

int hte_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > HTE_ID_MAX || !strcmp(id, ".") || !strcmp(id, ".."))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

/* A whole number >= 0 of @o's @key. */
static int get_count(json_object *o, const char *key, unsigned long long *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	errno = 0;
	*out = json_object_get_uint64(v);
	return errno || json_object_get_int64(v) < 0 ? -1 : 0;
}

int hte_record_parse(const char *buf, size_t len, struct hte_record *r)
{
	json_tokener *tok;
	json_object *o, *v;
	unsigned long long pid = 0;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (len > (64u << 10) || memchr(buf, '\0', len))
		return -1;
	tok = json_tokener_new();
	if (!tok)
		return -1;
	o = json_tokener_parse_ex(tok, buf, (int)len);
	/* One object and nothing after it but white space. */
	if (o && json_tokener_get_error(tok) == json_tokener_success) {
		size_t at = json_tokener_get_parse_end(tok);

		while (at < len && (buf[at] == ' ' || buf[at] == '\n' || buf[at] == '\t' || buf[at] == '\r'))
			at++;
		if (at == len && json_object_is_type(o, json_type_object) &&
		    json_object_object_get_ex(o, "id", &v) && json_object_is_type(v, json_type_string) &&
		    (size_t)json_object_get_string_len(v) <= HTE_ID_MAX && get_count(o, "pid", &pid) == 0 &&
		    pid > 0 && pid < (1u << 30) && get_count(o, "pid_start", &r->pid_start) == 0 &&
		    get_count(o, "mntns", &r->mntns) == 0 && r->mntns) {
			snprintf(r->id, sizeof(r->id), "%s", json_object_get_string(v));
			r->pid = (long)pid;
			r->has_view = json_object_object_get_ex(o, "view", &v) && json_object_is_type(v, json_type_string);
			rc = hte_id_valid(r->id) ? 0 : -1;
		}
	}
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}

int hte_proc_start_time(const char *buf, size_t len, unsigned long long *out)
{
	const char *p = NULL, *end = buf + len;

	/* The name (field 2) is in parentheses and may hold any byte: from the last ')'. */
	for (const char *q = buf; q < end; q++)
		if (*q == ')')
			p = q;
	if (!p)
		return -1;
	p++;
	/* Fields 3 to 21, then starttime. */
	for (int f = 3; f <= 22; f++) {
		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			return -1;
		if (f == 22) {
			unsigned long long v = 0;
			const char *s = p;

			for (; p < end && *p >= '0' && *p <= '9'; p++)
				v = v * 10 + (unsigned long long)(*p - '0');
			if (p == s)
				return -1;
			*out = v;
			return 0;
		}
		while (p < end && *p != ' ')
			p++;
	}
	return -1;
}

int hte_tmp_pid(const char *name, long *pid)
{
	const char *t = strstr(name, ".tmp.");
	long v = 0;

	if (!t || !t[5])
		return 0;
	for (t += 5; *t; t++) {
		if (*t < '0' || *t > '9' || v > (1L << 30))
			return 0;
		v = v * 10 + (*t - '0');
	}
	*pid = v;
	return v > 0;
}

int hte_cache_name_parse(const char *name, struct ht_cache_key *k)
{
	unsigned long long dev, ino, size, sec, off, len, mapped;
	char again[256];
	long nsec;
	int end = 0;

	if (!name || strncmp(name, "f-", 2) != 0 || strlen(name) >= sizeof(again))
		return -1;
	if (sscanf(name, "f-%llx-%llx-%llx-%llx.%9ld-%llx-%llx-%llx.text%n", &dev, &ino, &size, &sec, &nsec, &off, &len,
		   &mapped, &end) != 8 || end <= 0 || name[end] != '\0' || nsec < 0 || nsec > 999999999)
		return -1;
	*k = (struct ht_cache_key){ .dev = dev, .ino = ino, .size = size, .mtime_sec = (int64_t)sec,
				    .mtime_nsec = nsec, .file_off = off, .len = len, .mapped = mapped };
	/* Only the name ht_cache_name() makes of it: no sign, no "0x", no leading zeros, no spaces. */
	if (ht_cache_name(k, again, sizeof(again)) < 0 || strcmp(again, name) != 0)
		return -1;
	return 0;
}
