/* SPDX-License-Identifier: MIT */
/*
 * hugetext status, the pure half: smaps text to code and huge-page counts,
 * mount lines to huge mounts, and the text, JSON and Prometheus outputs.
 * No system call here: the tests feed fixed text and compare the outputs.
 */
#include "tool.h"
#include "mountfield.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hugetext.h"
#include "maps.h"
#include "ocihook.h"
#include "service.h"

static const char *const how_names[HTE_HOW_N] = { "thp", "hugetlb", "page_cache", "shared_cache", "tmpfs",
						  "folios" };

const char *hte_how_name(enum hte_how how)
{
	return how < HTE_HOW_N ? how_names[how] : "?";
}

/* --- smaps --- */

/* True when @name (not NUL-terminated) is "hugetext-" and a number, or the service's "shared". */
static int is_user_dir(const char *name, size_t n)
{
	static const char prefix[] = "hugetext-";
	size_t p = sizeof(prefix) - 1;

	if (n == sizeof(HT_SERVICE_SHARED) - 1 && memcmp(name, HT_SERVICE_SHARED, n) == 0)
		return 1;
	if (n <= p || memcmp(name, prefix, p) != 0)
		return 0;
	for (; p < n; p++)
		if (name[p] < '0' || name[p] > '9')
			return 0;
	return 1;
}

/* True when @path[0..n) names a file right inside directory @dir. */
static int file_in(const char *path, size_t n, const char *dir)
{
	size_t dn = strlen(dir);

	while (dn && dir[dn - 1] == '/')
		dn--;
	if (n <= dn + 1 || memcmp(path, dir, dn) != 0 || path[dn] != '/')
		return 0;
	return memchr(path + dn + 1, '/', n - dn - 1) == NULL;
}

/* The length of @s without its trailing slashes ("/" gives 0). */
static size_t dir_len(const char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == '/')
		n--;
	return n;
}

static int in_cache(const struct ht_map *m, const struct hte_status *st)
{
	const char *path = m->path;
	size_t n = m->path_len, file, dir;

	if (n == 0 || path[0] != '/')
		return 0;
	if (st->share_dir[0] && file_in(path, n, st->share_dir))
		return 1;
	/* <mount>/hugetext-UID/<entry>: the directory the library makes per user. */
	for (file = n - 1; path[file] != '/'; file--)
		;
	if (file == 0)
		return 0;
	for (dir = file - 1; path[dir] != '/'; dir--)
		;
	if (!is_user_dir(path + dir + 1, file - dir - 1))
		return 0;
	for (size_t i = 0; i < st->nmounts; i++)
		if (dir_len(st->mounts[i].path) == dir && memcmp(path, st->mounts[i].path, dir) == 0)
			return 1;
	return 0;
}

void hte_status_smaps(const char *buf, size_t len, const struct hte_status *st, struct hte_proc *p)
{
	struct ht_smap s;
	size_t pos = 0;

	p->code = 0;
	p->preload = 0;
	memset(p->huge, 0, sizeof(p->huge));
	while (ht_smaps_next(buf, len, &pos, &s)) {
		uint64_t hugetlb = s.hugetlb;
		static const char pre[] = "/libhugetext-preload.so";

		if (s.map.path_len >= sizeof(pre) - 1 &&
		    memcmp(s.map.path + s.map.path_len - (sizeof(pre) - 1), pre, sizeof(pre) - 1) == 0)
			p->preload = 1;
		if (s.map.perms[2] != 'x')
			continue;
		p->code += s.map.end - s.map.start;
		/* hugetlb pages show in Shared/Private_Hugetlb; older kernels only in the page size. */
		if (!hugetlb && s.kernel_page_kb >= 2048)
			hugetlb = s.rss;
		if (in_cache(&s.map, st)) {
			p->huge[HTE_HOW_SHARED_CACHE] += hugetlb + s.file_pmd + s.shmem_pmd + s.anon_huge;
			continue;
		}
		p->huge[HTE_HOW_THP] += s.anon_huge;
		p->huge[HTE_HOW_HUGETLB] += hugetlb;
		p->huge[HTE_HOW_PAGE_CACHE] += s.file_pmd;
		p->huge[HTE_HOW_TMPFS] += s.shmem_pmd;
	}
}

/* --- large folios: pagemap entries and kpageflags --- */

#define PM_PRESENT (1ULL << 63)
#define PM_PFN ((1ULL << 55) - 1)
#define KPF_HEAD (1ULL << 15) /* KPF_COMPOUND_HEAD */
#define KPF_TAIL (1ULL << 16) /* KPF_COMPOUND_TAIL */
#define KPF_HUGE (1ULL << 17) /* hugetlb: counted from smaps */
#define KPF_THP (1ULL << 22)  /* a large folio of anonymous or page-cache memory, any size */

uint64_t hte_piece_frame(const uint64_t *pm)
{
	uint64_t pfn0 = pm[0] & PM_PFN;

	for (unsigned i = 0; i < HTE_PIECE_PAGES; i++)
		if ((pm[i] & PM_PRESENT) && !(pm[i] & PM_PFN))
			return HTE_FRAMES_HIDDEN;
	for (unsigned i = 0; i < HTE_PIECE_PAGES; i++)
		if (!(pm[i] & PM_PRESENT) || (pm[i] & PM_PFN) != pfn0 + i)
			return 0;
	/* A folio of 64 KiB or more starts on a frame aligned to its size. */
	return pfn0 % HTE_PIECE_PAGES ? 0 : pfn0;
}

int hte_piece_in_folio(const uint64_t *fl, size_t n, uint64_t block, uint64_t pfn)
{
	size_t i, h, e, size;

	if (n > HTE_BLOCK_PAGES || pfn < block || pfn - block > n || n - (pfn - block) < HTE_PIECE_PAGES)
		return 0;
	i = (size_t)(pfn - block);
	/* Back over the tails to the head; a folio that starts before the block is a PMD page or more. */
	for (h = i; h > 0 && (fl[h] & KPF_TAIL); h--)
		;
	if (!(fl[h] & KPF_HEAD) || (fl[h] & KPF_TAIL))
		return 0;
	for (e = h + 1; e < n && (fl[e] & KPF_TAIL); e++)
		;
	size = e - h;
	/*
	 * A folio is 2^order frames on a frame aligned so, and holds the whole
	 * piece; flags that say otherwise were read while the folio changed.
	 * One of a whole block is a PMD page, which smaps counts.
	 */
	if (size < HTE_PIECE_PAGES || size >= HTE_BLOCK_PAGES || (size & (size - 1)) || h % size ||
	    i + HTE_PIECE_PAGES > e)
		return 0;
	for (size_t k = h; k < e; k++)
		if (!(fl[k] & KPF_THP) || (fl[k] & KPF_HUGE))
			return 0;
	return 1;
}

/* --- the text service's state file (tools/serve.c writes it) --- */

long hte_json_number(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(json, k);
	return p ? strtol(p + strlen(k), NULL, 10) : -1;
}

int hte_json_list_item(const char *json, const char *key, unsigned i, char *out, size_t len)
{
	char k[64];
	const char *p;
	size_t n = 0;

	snprintf(k, sizeof(k), "\"%s\":[", key);
	p = strstr(json, k);
	if (!p || !len)
		return -1;
	p += strlen(k);
	for (;;) {
		if (*p != '"')
			return -1;
		p++;
		n = 0;
		/* One string, its escapes undone; a short @out keeps its start. */
		while (*p && *p != '"') {
			char c = *p++;

			if (c == '\\' && *p)
				c = *p++ == 'n' ? ' ' : p[-1];
			if (n + 1 < len)
				out[n++] = c;
		}
		if (*p != '"')
			return -1;
		p++;
		out[n] = '\0';
		if (i-- == 0)
			return 0;
		if (*p != ',')
			return -1;
		p++;
	}
}

/* --- /proc/PID/stat --- */

#define PF_KTHREAD_FLAG 0x00200000u

int hte_stat_is_kthread(const char *buf, size_t len)
{
	const char *p = NULL, *end = buf + len;
	unsigned long long flags = 0;
	int field = 2;

	/* The command name may hold spaces and parentheses: fields start after the last ')'. */
	for (const char *q = buf; q < end; q++)
		if (*q == ')')
			p = q + 1;
	if (!p)
		return 0;
	while (p < end && field < 9) {
		while (p < end && *p == ' ')
			p++;
		field++;
		if (field == 9)
			break;
		while (p < end && *p != ' ')
			p++;
	}
	if (field != 9 || p >= end || *p < '0' || *p > '9')
		return 0;
	for (; p < end && *p >= '0' && *p <= '9' && flags < (1ULL << 40); p++)
		flags = flags * 10 + (unsigned long long)(*p - '0');
	return (flags & PF_KTHREAD_FLAG) != 0;
}

/* --- mounts --- */

/* The value of option @key ("pagesize=") in a comma-separated list, or NULL. */
static const char *option(const char *opts, size_t n, const char *key, size_t *vlen)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i < n;) {
		const char *c = memchr(opts + i, ',', n - i);
		size_t e = c ? (size_t)(c - opts) : n;

		if (e - i >= kl && memcmp(opts + i, key, kl) == 0) {
			*vlen = e - i - kl;
			return opts + i + kl;
		}
		i = e + 1;
	}
	return NULL;
}

static uint64_t size_kb(const char *v, size_t n)
{
	uint64_t x = 0;
	size_t i = 0;

	for (; i < n && v[i] >= '0' && v[i] <= '9' && x < (1ULL << 40); i++)
		x = x * 10 + (uint64_t)(v[i] - '0');
	if (i + 1 != n)
		return i == n ? x / 1024 : 0;
	switch (v[i]) {
	case 'k': case 'K': return x;
	case 'm': case 'M': return x << 10;
	case 'g': case 'G': return x << 20;
	default: return 0;
	}
}

int hte_status_mount_line(const char *line, size_t len, uint64_t default_kb, struct hte_huge_mount *m)
{
	const char *p = line, *end = line + len, *dev, *mnt, *type, *opts, *v;
	size_t dn, mn, tn, on, vn;

	if (!hte_mount_field(&p, end, &dev, &dn) || !hte_mount_field(&p, end, &mnt, &mn) || !hte_mount_field(&p, end, &type, &tn) ||
	    !hte_mount_field(&p, end, &opts, &on))
		return 0;
	memset(m, 0, sizeof(*m));
	if (tn == 9 && memcmp(type, "hugetlbfs", 9) == 0) {
		v = option(opts, on, "pagesize=", &vn);
		m->page_kb = v ? size_kb(v, vn) : default_kb;
	} else if (tn == 5 && memcmp(type, "tmpfs", 5) == 0) {
		v = option(opts, on, "huge=", &vn);
		if (!v || vn >= sizeof(m->huge) || (vn == 5 && memcmp(v, "never", 5) == 0) ||
		    (vn == 4 && memcmp(v, "deny", 4) == 0))
			return 0;
		memcpy(m->huge, v, vn);
	} else {
		return 0;
	}
	memcpy(m->type, type, tn);
	return hte_mount_unescape(mnt, mn, m->path, sizeof(m->path)) == 0;
}

/* --- the growing arrays --- */

static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : 64;
	p = realloc(*arr, c * size);
	if (!p)
		return -1;
	*arr = p;
	*cap = c;
	return 0;
}

int hte_status_add_proc(struct hte_status *st, const struct hte_proc *p)
{
	if (grow((void **)&st->procs, &st->cap_procs, st->nprocs, sizeof(*p)) < 0)
		return -1;
	st->procs[st->nprocs++] = *p;
	return 0;
}

int hte_status_add_unread(struct hte_status *st, long pid, int err)
{
	if (grow((void **)&st->unread, &st->cap_unread, st->nunread, sizeof(*st->unread)) < 0)
		return -1;
	st->unread[st->nunread].pid = pid;
	st->unread[st->nunread++].err = err;
	return 0;
}

int hte_status_add_mount(struct hte_status *st, const struct hte_huge_mount *m)
{
	if (grow((void **)&st->mounts, &st->cap_mounts, st->nmounts, sizeof(*m)) < 0)
		return -1;
	st->mounts[st->nmounts++] = *m;
	return 0;
}

void hte_status_free(struct hte_status *st)
{
	for (size_t k = 0; k < st->nctrs; k++)
		free(st->ctrs[k].rec);
	free(st->ctrs);
	st->ctrs = NULL;
	st->nctrs = st->cap_ctrs = 0;
	free(st->procs);
	free(st->unread);
	free(st->mounts);
	st->procs = NULL;
	st->unread = NULL;
	st->mounts = NULL;
	st->nprocs = st->nunread = st->nmounts = 0;
	st->cap_procs = st->cap_unread = st->cap_mounts = 0;
}

/* --- outputs --- */

static uint64_t huge_total(const struct hte_proc *p)
{
	uint64_t t = 0;

	for (int h = 0; h < HTE_HOW_N; h++)
		t += p->huge[h];
	return t;
}

/* Folios not counted (no root) are not known: left out rather than shown as 0. */
static int shown(const struct hte_proc *p, int how)
{
	return how != HTE_HOW_FOLIOS || p->folios_seen;
}

static const char *reason(int err)
{
	return err == EACCES || err == EPERM ? "permission denied" : strerror(err);
}

/* The distinct reasons, in order of first appearance, with their counts. */
struct reason_count {
	const char *why;
	size_t n;
};

static size_t count_reasons(const struct hte_status *st, struct reason_count *out, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < st->nunread; i++) {
		const char *why = reason(st->unread[i].err);
		size_t j = 0;

		while (j < k && strcmp(out[j].why, why) != 0)
			j++;
		if (j == k) {
			if (k == max)
				continue;
			out[k].why = why;
			out[k++].n = 0;
		}
		out[j].n++;
	}
	return k;
}

/* "  [page_cache 8.0 MiB, thp 2.0 MiB]", or nothing when no code is huge. */
static void text_how(FILE *f, const struct hte_proc *p)
{
	char h[32];
	int any = 0;

	for (int i = 0; i < HTE_HOW_N; i++) {
		if (!p->huge[i])
			continue;
		fprintf(f, "%s%s %s", any ? ", " : "  [", how_names[i], hte_human(p->huge[i], h, sizeof(h)));
		any = 1;
	}
	if (any)
		fputc(']', f);
}

static void text_procs(FILE *f, const struct hte_status *st)
{
	char a[32], b[32];

	fprintf(f, "Processes with at least %s of code: %zu\n", hte_human(st->min_code, a, sizeof(a)), st->nprocs);
	if (st->nprocs)
		fprintf(f, "  %8s  %10s  %10s  %s\n", "PID", "CODE", "HUGE", "PROGRAM  [HOW]");
	for (size_t i = 0; i < st->nprocs; i++) {
		const struct hte_proc *p = &st->procs[i];

		fprintf(f, "  %8ld  %10s  %10s  ", p->pid, hte_human(p->code, a, sizeof(a)),
			hte_human(huge_total(p), b, sizeof(b)));
		hte_text_name(f, p->program);
		text_how(f, p);
		if (p->container)
			fprintf(f, "  (container %.12s)", st->ctrs[p->container - 1].rec->id);
		fputc('\n', f);
	}
}

/* Without root the processes' folios cannot be seen: say so rather than show none. */
static void text_folios(FILE *f, const struct hte_status *st)
{
	if (!st->folios_visible && st->nprocs)
		fputs("Code on 64 KiB folios: not counted (needs root with CAP_SYS_ADMIN: the frames in "
		      "/proc/PID/pagemap, /proc/kpageflags)\n", f);
}

static void text_unread(FILE *f, const struct hte_status *st)
{
	struct reason_count r[8];
	size_t k = count_reasons(st, r, 8);

	if (!st->nunread)
		return;
	fprintf(f, "Not read: %zu process%s (", st->nunread, st->nunread == 1 ? "" : "es");
	for (size_t j = 0; j < k; j++)
		fprintf(f, "%s%s: %zu", j ? ", " : "", r[j].why, r[j].n);
	fputs("):", f);
	for (size_t i = 0; i < st->nunread && i < 10; i++)
		fprintf(f, " %ld", st->unread[i].pid);
	fputs(st->nunread > 10 ? " ...\n" : "\n", f);
}

/* The text service's state file: its counts and its latest lines of each kind. */
static void text_service(FILE *f, const struct hte_service *s)
{
	static const char *const lists[] = { "warmed", "filled", "evicted", "refused" };

	if (!s->present) {
		fputs("Text service: not running (no state file; `hugetext serve` or hugetext-serve.socket)\n", f);
		return;
	}
	fprintf(f, "Text service: pid %ld%s, %ld offers, %ld warmed, %ld filled, %ld evicted, %ld refused "
		"(%s)\n", hte_json_number(s->raw, "pid"), s->running ? "" : " (not running)",
		hte_json_number(s->raw, "offers"), hte_json_number(s->raw, "warmed_total"),
		hte_json_number(s->raw, "filled_total"), hte_json_number(s->raw, "evicted_total"),
		hte_json_number(s->raw, "refused_total"), HTE_SERVE_STATE);
	/* Files whose warm took part (others map the rest): tried again, less and less often. */
	if (hte_json_number(s->raw, "pending") > 0)
		fprintf(f, "  %ld file(s) waiting to be warmed again (%ld warms so far)\n",
			hte_json_number(s->raw, "pending"), hte_json_number(s->raw, "warms"));
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		char line[512];

		for (unsigned k = 0; hte_json_list_item(s->raw, lists[i], k, line, sizeof(line)) == 0; k++)
			fprintf(f, "  %s: %s\n", lists[i], line);
	}
}

static void text_machine(FILE *f, const struct hte_status *st)
{
	fputs("Huge page pools:\n", f);
	if (!st->npools)
		fputs("  none\n", f);
	for (size_t i = 0; i < st->npools; i++) {
		const struct hte_pool_count *c = &st->pools[i];

		fprintf(f, "  %" PRIu64 "kB: %ld total, %ld free\n", c->kb, c->total, c->free);
	}
	fputs("Huge page mounts:\n", f);
	if (!st->nmounts)
		fputs("  none\n", f);
	for (size_t i = 0; i < st->nmounts; i++) {
		const struct hte_huge_mount *m = &st->mounts[i];

		if (m->page_kb)
			fprintf(f, "  %s  %s, %" PRIu64 "kB pages\n", m->path, m->type, m->page_kb);
		else
			fprintf(f, "  %s  %s, huge=%s\n", m->path, m->type, m->huge);
	}
	if (st->text_cache.mounted) {
		const struct hte_text_cache *c = &st->text_cache;
		char a[32], b[32], e[32], s[32];

		fprintf(f, "Shared text cache: %s  %s used of %s, %" PRIu64 " entr%s (%s), %u user%s; "
			"the text service's: %" PRIu64 " entr%s (%s), for every user\n",
			HT_TEXT_CACHE_DIR, hte_human(c->used, a, sizeof(a)), hte_human(c->size, b, sizeof(b)),
			c->entries, c->entries == 1 ? "y" : "ies", hte_human(c->entry_bytes, e, sizeof(e)),
			c->users, c->users == 1 ? "" : "s", c->shared_entries,
			c->shared_entries == 1 ? "y" : "ies", hte_human(c->shared_bytes, s, sizeof(s)));
	}
	text_service(f, &st->service);
	fprintf(f, "Transparent huge pages: enabled [%s], defrag [%s], shmem_enabled [%s]\n",
		st->thp_enabled[0] ? st->thp_enabled : "?", st->thp_defrag[0] ? st->thp_defrag : "?",
		st->thp_shmem[0] ? st->thp_shmem : "?");
}

void hte_status_text(FILE *f, const struct hte_status *st)
{
	text_procs(f, st);
	text_folios(f, st);
	text_unread(f, st);
	hte_status_text_containers(f, st);
	text_machine(f, st);
}

void hte_status_json(FILE *f, const struct hte_status *st)
{
	fprintf(f, "{\n  \"min_code\": %" PRIu64 ",\n  \"processes\": [", st->min_code);
	for (size_t i = 0; i < st->nprocs; i++) {
		const struct hte_proc *p = &st->procs[i];

		fprintf(f, "%s\n    {\"pid\": %ld, \"program\": ", i ? "," : "", p->pid);
		hte_json_str(f, p->program);
		fprintf(f, ", \"code_bytes\": %" PRIu64 ", \"huge_bytes\": %" PRIu64 ", \"huge\": {", p->code,
			huge_total(p));
		for (int h = 0; h < HTE_HOW_N; h++)
			if (shown(p, h))
				fprintf(f, "%s\"%s\": %" PRIu64, h ? ", " : "", how_names[h], p->huge[h]);
		fputc('}', f);
		if (p->container) {
			fputs(", \"container\": ", f);
			hte_json_str(f, st->ctrs[p->container - 1].rec->id);
		}
		fputc('}', f);
	}
	fputs(st->nprocs ? "\n  ],\n  \"unreadable\": [" : "],\n  \"unreadable\": [", f);
	for (size_t i = 0; i < st->nunread; i++) {
		fprintf(f, "%s\n    {\"pid\": %ld, \"reason\": ", i ? "," : "", st->unread[i].pid);
		hte_json_str(f, reason(st->unread[i].err));
		fputc('}', f);
	}
	fputs(st->nunread ? "\n  ],\n  \"pools\": [" : "],\n  \"pools\": [", f);
	for (size_t i = 0; i < st->npools; i++)
		fprintf(f, "%s\n    {\"page_kb\": %" PRIu64 ", \"total\": %ld, \"free\": %ld}", i ? "," : "",
			st->pools[i].kb, st->pools[i].total, st->pools[i].free);
	fputs(st->npools ? "\n  ],\n  \"mounts\": [" : "],\n  \"mounts\": [", f);
	for (size_t i = 0; i < st->nmounts; i++) {
		const struct hte_huge_mount *m = &st->mounts[i];

		fprintf(f, "%s\n    {\"path\": ", i ? "," : "");
		hte_json_str(f, m->path);
		fprintf(f, ", \"type\": \"%s\", \"page_kb\": %" PRIu64 ", \"huge\": ", m->type, m->page_kb);
		hte_json_str(f, m->huge);
		fputc('}', f);
	}
	fputs(st->nmounts ? "\n  ],\n  \"thp\": {\"enabled\": " : "],\n  \"thp\": {\"enabled\": ", f);
	hte_json_str(f, st->thp_enabled);
	fputs(", \"defrag\": ", f);
	hte_json_str(f, st->thp_defrag);
	fputs(", \"shmem_enabled\": ", f);
	hte_json_str(f, st->thp_shmem);
	fputc('}', f);
	if (st->text_cache.mounted) {
		const struct hte_text_cache *c = &st->text_cache;

		fputs(",\n  \"text_cache\": {\"path\": ", f);
		hte_json_str(f, HT_TEXT_CACHE_DIR);
		fprintf(f, ", \"size\": %" PRIu64 ", \"used\": %" PRIu64 ", \"entries\": %" PRIu64
			", \"entry_bytes\": %" PRIu64 ", \"users\": %u, \"service_entries\": %" PRIu64
			", \"service_bytes\": %" PRIu64 "}", c->size, c->used, c->entries,
			c->entry_bytes, c->users, c->shared_entries, c->shared_bytes);
	}
	/* The service's own state file, as it wrote it (a JSON object), and whether it runs. */
	if (st->service.present)
		fprintf(f, ",\n  \"service\": {\"running\": %s, \"state\": %s}",
			st->service.running ? "true" : "false", st->service.raw);
	hte_status_json_containers(f, st);
	fputs("\n}\n", f);
}

/* A label value in the text exposition format: \, " and newline escaped. */
static void prom_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void prom_head(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void prom_proc_labels(FILE *f, const struct hte_proc *p)
{
	fprintf(f, "{pid=\"%ld\",program=", p->pid);
	prom_label(f, p->program);
}

static void prom_procs(FILE *f, const struct hte_status *st)
{
	prom_head(f, "hugetext_process_code_bytes", "Bytes of executable mappings of a process with code worth moving.");
	for (size_t i = 0; i < st->nprocs; i++) {
		fputs("hugetext_process_code_bytes", f);
		prom_proc_labels(f, &st->procs[i]);
		fprintf(f, "} %" PRIu64 "\n", st->procs[i].code);
	}
	prom_head(f, "hugetext_process_huge_bytes", "Bytes of a process's code on huge pages, by how they got there.");
	for (size_t i = 0; i < st->nprocs; i++) {
		for (int h = 0; h < HTE_HOW_N; h++) {
			if (!shown(&st->procs[i], h))
				continue;
			fputs("hugetext_process_huge_bytes", f);
			prom_proc_labels(f, &st->procs[i]);
			fprintf(f, ",how=\"%s\"} %" PRIu64 "\n", how_names[h], st->procs[i].huge[h]);
		}
	}
	prom_head(f, "hugetext_unreadable_processes", "Processes whose memory map could not be read, by reason.");
	{
		struct reason_count r[8];
		size_t k = count_reasons(st, r, 8);

		for (size_t j = 0; j < k; j++) {
			fputs("hugetext_unreadable_processes{reason=", f);
			prom_label(f, r[j].why);
			fprintf(f, "} %zu\n", r[j].n);
		}
	}
}

static void prom_machine(FILE *f, const struct hte_status *st)
{
	static const char *const thp_files[] = { "enabled", "defrag", "shmem_enabled" };
	const char *thp_vals[] = { st->thp_enabled, st->thp_defrag, st->thp_shmem };

	prom_head(f, "hugetext_pool_pages", "Pages of an explicit (hugetlb) huge page pool.");
	for (size_t i = 0; i < st->npools; i++) {
		const struct hte_pool_count *c = &st->pools[i];

		if (c->total >= 0)
			fprintf(f, "hugetext_pool_pages{size=\"%" PRIu64 "kB\",state=\"total\"} %ld\n", c->kb, c->total);
		if (c->free >= 0)
			fprintf(f, "hugetext_pool_pages{size=\"%" PRIu64 "kB\",state=\"free\"} %ld\n", c->kb, c->free);
	}
	prom_head(f, "hugetext_mount_info", "A hugetlbfs or huge tmpfs mount.");
	for (size_t i = 0; i < st->nmounts; i++) {
		const struct hte_huge_mount *m = &st->mounts[i];

		fputs("hugetext_mount_info{path=", f);
		prom_label(f, m->path);
		fprintf(f, ",type=\"%s\",", m->type);
		if (m->page_kb)
			fprintf(f, "pagesize=\"%" PRIu64 "kB\"} 1\n", m->page_kb);
		else {
			fputs("huge=", f);
			prom_label(f, m->huge);
			fputs("} 1\n", f);
		}
	}
	prom_head(f, "hugetext_thp_setting", "The chosen value of a transparent huge page setting.");
	for (int i = 0; i < 3; i++) {
		if (!thp_vals[i][0])
			continue;
		fprintf(f, "hugetext_thp_setting{file=\"%s\",value=", thp_files[i]);
		prom_label(f, thp_vals[i]);
		fputs("} 1\n", f);
	}
}

void hte_status_prometheus(FILE *f, const struct hte_status *st)
{
	prom_procs(f, st);
	prom_machine(f, st);
	hte_status_prom_containers(f, st);
}
