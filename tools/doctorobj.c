/* SPDX-License-Identifier: MIT */
/*
 * hugetext doctor, the programs and libraries running now: each process's
 * smaps counted per object (a moved copy for the file beside it), summed
 * over processes, and each object's verdict in plain words: what it has
 * on huge pages and how, or why it has nothing.  Pure.
 */
#include "tool.h"
#include "doctor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

#define MIB (1ULL << 20)
#define HUGE_2M (2ULL << 20)

/* --- /proc/PID/status and stat --- */

/* The number after "@key:" at a line's start, or -1. */
static long status_field(const char *buf, size_t len, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i + kl < len; i++) {
		if ((i == 0 || buf[i - 1] == '\n') && memcmp(buf + i, key, kl) == 0 && buf[i + kl] == ':') {
			const char *p = buf + i + kl + 1, *end = buf + len;
			long v = 0;

			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			if (p == end || *p < '0' || *p > '9')
				return -1;
			for (; p < end && *p >= '0' && *p <= '9' && v < 1000000000L; p++)
				v = v * 10 + (*p - '0');
			return v;
		}
	}
	return -1;
}

void hte_doc_proc_status(const char *buf, size_t len, struct hte_doc_proc *p)
{
	long t = status_field(buf, len, "Threads"), thp = status_field(buf, len, "THP_enabled");

	p->threads = t > 0 ? (int)t : 0;
	p->thp_disabled = thp == 0;
}

long long hte_doc_stat_ticks(const char *buf, size_t len)
{
	const char *p = NULL, *end = buf + len;
	long long v[2] = { 0, 0 };
	int field = 2;

	/* The command name may hold spaces and parentheses: fields start after the last ')'. */
	for (const char *q = buf; q < end; q++)
		if (*q == ')')
			p = q + 1;
	if (!p)
		return -1;
	/* utime and stime are fields 14 and 15. */
	while (p < end && field < 15) {
		while (p < end && *p == ' ')
			p++;
		field++;
		if (field >= 14) {
			if (p == end || *p < '0' || *p > '9')
				return -1;
			for (; p < end && *p >= '0' && *p <= '9' && v[field - 14] < (1LL << 50); p++)
				v[field - 14] = v[field - 14] * 10 + (*p - '0');
		}
		while (p < end && *p != ' ')
			p++;
	}
	return field == 15 ? v[0] + v[1] : -1;
}

/* --- one process's objects --- */

/* An object within one process: its executable mappings summed. */
struct one {
	char path[512];
	uint64_t code, huge[HTE_HOW_N];
	int aligned, own;          /* own: one of its file mappings is executable */
	unsigned major, minor;
};

struct proc_objs {
	struct one *o;
	size_t n, cap;
};

static int names_file(const struct ht_smap *s)
{
	return s->map.inode != 0 && s->hugetlb == 0 && s->map.path_len && s->map.path[0] == '/';
}

/* The path lies under one of the huge mounts (hugetlbfs, huge tmpfs): a copy's file, or the cache's. */
static int on_huge_mount(const struct ht_map *m, const struct hte_status *st)
{
	for (size_t i = 0; i < st->nmounts; i++) {
		size_t n = strlen(st->mounts[i].path);

		while (n && st->mounts[i].path[n - 1] == '/')
			n--;
		if (n && m->path_len > n && memcmp(m->path, st->mounts[i].path, n) == 0 && m->path[n] == '/')
			return 1;
	}
	return 0;
}

/*
 * A move leaves anonymous code, a hugetlbfs file or a cache entry where the
 * object's code was; its name is then the file mapped beside it.
 */
static int is_copy(const struct ht_smap *s, const struct hte_status *st)
{
	if (s->map.path_len && s->map.path[0] == '[')
		return 0;
	return s->map.inode == 0 || s->hugetlb > 0 || on_huge_mount(&s->map, st);
}

static struct one *find_one(struct proc_objs *po, const char *path, size_t n)
{
	struct one *p;

	if (n >= sizeof(po->o[0].path))
		n = sizeof(po->o[0].path) - 1;
	for (size_t i = 0; i < po->n; i++)
		if (strlen(po->o[i].path) == n && memcmp(po->o[i].path, path, n) == 0)
			return &po->o[i];
	if (po->n == po->cap) {
		size_t c = po->cap ? po->cap * 2 : 32;

		p = realloc(po->o, c * sizeof(*p));
		if (!p)
			return NULL;
		po->o = p;
		po->cap = c;
	}
	p = &po->o[po->n++];
	memset(p, 0, sizeof(*p));
	memcpy(p->path, path, n);
	p->path[n] = '\0';
	return p;
}

/* The huge bytes of one mapping by how, as status counts them (its text alone given to it). */
static void mapping_huge(const char *vma, size_t len, const struct hte_status *st, uint64_t *huge)
{
	struct hte_proc p;

	memset(&p, 0, sizeof(p));
	hte_status_smaps(vma, len, st, &p);
	for (int h = 0; h < HTE_HOW_N; h++)
		huge[h] += p.huge[h];
}

/* One executable mapping, counted for its object; 0, or -1 out of memory. */
static int add_mapping(struct proc_objs *po, const struct ht_smap *s, const struct ht_smap *prev,
		       const struct ht_smap *next, const char *vma, size_t vlen, const struct hte_status *st)
{
	const struct ht_smap *file = s;
	struct one *o;

	if (is_copy(s, st)) {
		if (prev && prev->map.end == s->map.start && names_file(prev) && !is_copy(prev, st))
			file = prev;
		else if (next && next->map.start == s->map.end && names_file(next) && !is_copy(next, st))
			file = next;
		else
			return 0; /* code of no file: a JIT's, say */
	} else if (!names_file(s)) {
		return 0; /* [vdso] and the like */
	}
	o = find_one(po, file->map.path, file->map.path_len);
	if (!o)
		return -1;
	o->code += s->map.end - s->map.start;
	mapping_huge(vma, vlen, st, o->huge);
	o->major = file->map.dev_major;
	o->minor = file->map.dev_minor;
	if (file == s) {
		o->own = 1;
		o->aligned |= (s->map.start - s->map.offset) % HUGE_2M == 0;
	}
	return 0;
}

static int merge(struct hte_doctor *d, const struct one *o, const struct hte_doc_proc *p)
{
	struct hte_doc_obj *x = NULL;
	uint64_t huge = 0;

	for (size_t i = 0; i < d->nobjs && !x; i++)
		if (strcmp(d->objs[i].path, o->path) == 0)
			x = &d->objs[i];
	if (!x) {
		if (d->nobjs == d->cap_objs) {
			size_t c = d->cap_objs ? d->cap_objs * 2 : 64;
			struct hte_doc_obj *n = realloc(d->objs, c * sizeof(*n));

			if (!n)
				return -1;
			d->objs = n;
			d->cap_objs = c;
		}
		x = &d->objs[d->nobjs++];
		memset(x, 0, sizeof(*x));
		snprintf(x->path, sizeof(x->path), "%s", o->path);
		x->fs_folios = -1;
		x->pid = p->pid;
		snprintf(x->program, sizeof(x->program), "%s", p->exe);
	}
	x->procs++;
	x->code_sum += o->code;
	if (o->code > x->code)
		x->code = o->code;
	for (int h = 0; h < HTE_HOW_N; h++)
		huge += o->huge[h], x->huge[h] += o->huge[h];
	x->served += huge > 0;
	/* A code segment moved whole has no file mapping left to tell: its copy says it was served. */
	x->aligned += o->aligned || (!o->own && huge);
	x->dev_major = o->major;
	x->dev_minor = o->minor;
	if (p->exe[0] && strcmp(p->exe, o->path) == 0)
		x->is_program = 1;
	if (p->preload) {
		x->with_preload++;
		x->thp_off += p->thp_disabled;
		x->single += p->threads == 1;
		if (p->cpu_s > x->cpu_max)
			x->cpu_max = p->cpu_s;
	}
	return 0;
}

int hte_doc_add_smaps(struct hte_doctor *d, const char *buf, size_t len, const struct hte_status *st,
		      const struct hte_doc_proc *p)
{
	struct proc_objs po = { 0 };
	struct ht_smap prev, cur, next;
	size_t pos = 0, at, next_at;
	int have_prev = 0, have_cur, have_next, err = 0;

	at = pos;
	have_cur = ht_smaps_next(buf, len, &pos, &cur);
	while (have_cur && !err) {
		next_at = pos;
		have_next = ht_smaps_next(buf, len, &pos, &next);
		if (cur.map.perms[2] == 'x')
			err = add_mapping(&po, &cur, have_prev ? &prev : NULL, have_next ? &next : NULL, buf + at,
					  next_at - at, st);
		prev = cur;
		have_prev = 1;
		cur = next;
		have_cur = have_next;
		at = next_at;
	}
	/* Objects with less than one 2 MiB page of code can never be huge: not kept. */
	for (size_t i = 0; i < po.n && !err; i++)
		if (po.o[i].code >= HUGE_2M)
			err = merge(d, &po.o[i], p);
	free(po.o);
	return err;
}

static int by_code(const void *a, const void *b)
{
	const struct hte_doc_obj *x = a, *y = b;

	if (x->code != y->code)
		return x->code < y->code ? 1 : -1;
	return strcmp(x->path, y->path);
}

void hte_doc_sort_objects(struct hte_doctor *d)
{
	size_t k = 0;

	for (size_t i = 0; i < d->nobjs; i++)
		if (d->objs[i].code >= d->min_code)
			d->objs[k++] = d->objs[i];
	d->nobjs = k;
	if (k)
		qsort(d->objs, k, sizeof(*d->objs), by_code);
}

/* --- an object's verdict --- */

static uint64_t huge_sum(const struct hte_doc_obj *o)
{
	uint64_t t = 0;

	for (int h = 0; h < HTE_HOW_N; h++)
		t += o->huge[h];
	return t;
}

/* "page cache 80%, private copy 12%" */
static void how_words(const struct hte_doc_obj *o, char *out, size_t len)
{
	static const struct {
		int how[2];
		const char *name;
	} kinds[] = {
		{ { HTE_HOW_PAGE_CACHE, -1 }, "page cache (kept)" },
		{ { HTE_HOW_SHARED_CACHE, -1 }, "shared cache" },
		{ { HTE_HOW_THP, HTE_HOW_HUGETLB }, "private copy" },
		{ { HTE_HOW_TMPFS, -1 }, "huge tmpfs file" },
	};
	uint64_t b[4];
	size_t n = 0, kn = sizeof(kinds) / sizeof(kinds[0]);
	int several = 0;

	for (size_t k = 0; k < kn; k++) {
		b[k] = o->huge[kinds[k].how[0]] + (kinds[k].how[1] >= 0 ? o->huge[kinds[k].how[1]] : 0);
		several += b[k] > 0;
	}
	out[0] = '\0';
	/* One way: its name; several: each with its share. */
	for (size_t k = 0; k < kn && n < len; k++) {
		int w;

		if (!b[k])
			continue;
		if (several > 1)
			w = snprintf(out + n, len - n, "%s%s %.0f%%", n ? ", " : "", kinds[k].name,
				     100.0 * (double)b[k] / (double)(o->code_sum ? o->code_sum : 1));
		else
			w = snprintf(out + n, len - n, "%s", kinds[k].name);
		n += w > 0 ? (size_t)w : 0;
	}
}

/* Why a copy has not been made yet, where one would serve: the copy waits until it pays. */
static enum hte_doc_level waiting(const struct hte_doc_obj *o, const struct hte_doc_env *e, char *out, size_t len)
{
	double due = 0.040 * (double)o->code / (double)MIB; /* the preload's 40 ms per MiB to copy */

	if (o->single == o->with_preload) {
		snprintf(out, len, "nothing yet: single-threaded, so the preload gives it no thread and its copy "
			 "waits for a fork()");
		return HTE_DOC_NOTE;
	}
	if (o->cpu_max < due) {
		snprintf(out, len, "nothing yet: its copy waits until a process has used %.1f s of CPU (the most: "
			 "%.1f s)", due, o->cpu_max);
		return HTE_DOC_NOTE;
	}
	snprintf(out, len, "nothing: its copy came due but got no huge page%s",
		 e->thp_ok ? " (memory too fragmented?)" : " (THP is off)");
	return HTE_DOC_WARN;
}

enum hte_doc_level hte_doc_obj_verdict(const struct hte_doc_obj *o, const struct hte_doc_env *e, char *out,
				       size_t len, char *fix, size_t flen)
{
	uint64_t huge = huge_sum(o);
	char how[160];

	fix[0] = '\0';
	if (huge) {
		int n;

		how_words(o, how, sizeof(how));
		n = snprintf(out, len, "%.0f%% huge: %s", 100.0 * (double)huge / (double)(o->code_sum ? o->code_sum : 1),
			     how);
		/* Those it misses: the processes started without the preload say why most often. */
		if (o->served < o->procs && n > 0 && (size_t)n < len)
			snprintf(out + n, len - (size_t)n, "; nothing in %u of %u processes%s", o->procs - o->served,
				 o->procs, o->with_preload < o->procs ? " (some without the preload)" : "");
		return HTE_DOC_OK;
	}
	if (!o->with_preload) {
		snprintf(out, len, "nothing: the preload is not loaded in %s", o->procs == 1 ? "its process" :
			 "its processes");
		if (o->is_program)
			snprintf(fix, flen, "hugetext run -- %s", o->path);
		else if (o->program[0])
			snprintf(fix, flen, "hugetext run -- %s ...   # the program that loads it", o->program);
		return HTE_DOC_WARN;
	}
	if (o->thp_off == o->with_preload) {
		snprintf(out, len, "nothing: its process turned THP off for itself (PR_SET_THP_DISABLE); "
			 "only explicit pages can serve it");
		snprintf(fix, flen, "hugetext pool --set %llu",
			 (unsigned long long)((o->code + HUGE_2M - 1) / HUGE_2M + 2));
		return HTE_DOC_WARN;
	}
	if (!o->aligned) {
		char w[200];
		enum hte_doc_level l = waiting(o, e, w, sizeof(w));

		/* "nothing yet: ..." or "nothing: ...": the part after the first colon says why. */
		snprintf(out, len, "off the 2 MiB grid (neither page cache nor shared cache can serve it); %s",
			 w);
		snprintf(fix, flen, "hugetext check %s   # says what would align it", o->path);
		return l == HTE_DOC_WARN ? HTE_DOC_WARN : HTE_DOC_NOTE;
	}
	if (o->fs_folios == 1 || e->cache_mounted) {
		if (e->service) {
			snprintf(out, len, "nothing yet: the text service %s it once its processes end",
				 o->fs_folios == 1 ? "warms" : "fills the shared cache for");
			return HTE_DOC_NOTE;
		}
		snprintf(out, len, "nothing: no text service to %s it", o->fs_folios == 1 ? "warm" :
			 "fill the shared cache for");
		snprintf(fix, flen, "hugetext serve &");
		return HTE_DOC_WARN;
	}
	return waiting(o, e, out, len);
}
