/* SPDX-License-Identifier: MIT */
/*
 * hugetext measure's results (measure.h): the preload's report lines
 * summed, the paired comparisons, and the text and JSON written from
 * them.  Pure: the tests feed it fixtures.
 */
#include "measure.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

void hte_m_note(struct hte_measure *m, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (unsigned i = 0; i < m->nnotes; i++)
		if (strcmp(m->notes[i], buf) == 0)
			return;
	if (m->nnotes < HTE_M_MAX_NOTES)
		memcpy(m->notes[m->nnotes++], buf, sizeof(buf));
}

/* ---------------------------------------------------------------- the report */

static uint64_t num(struct json_object *o, const char *key)
{
	struct json_object *v;
	int64_t x;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	x = json_object_get_int64(v);
	return x > 0 ? (uint64_t)x : 0;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

/*
 * A region reported twice (the deferred copy's line after the start's,
 * for the same span) counts once, as its last line says: its earlier
 * contribution is taken back.
 */
struct region {
	uint64_t pid, start;
	unsigned long hash;   /* of the object's path */
	uint64_t huge, kept, copied;
};

#define MAX_REGIONS 256

static unsigned long path_hash(const char *s)
{
	unsigned long h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static struct region *region_of(struct region *t, size_t *n, struct json_object *o)
{
	struct region k = { num(o, "pid"), num(o, "start"), path_hash(str(o, "object")), 0, 0, 0 };

	if (!t)
		return NULL;
	for (size_t i = 0; i < *n; i++)
		if (t[i].pid == k.pid && t[i].start == k.start && t[i].hash == k.hash)
			return &t[i];
	if (*n == MAX_REGIONS)
		return NULL;
	t[*n] = k;
	return &t[(*n)++];
}

static void report_line(struct json_object *o, struct hte_m_report *r, struct region *t, size_t *nt)
{
	const char *status = str(o, "status"), *cache = str(o, "cache"), *error = str(o, "error");
	uint64_t huge = num(o, "huge_bytes"), kept = num(o, "kept_bytes");
	uint64_t copied = strcmp(cache, "hit") != 0 && huge > kept ? huge - kept : 0;
	struct region *g;

	r->lines++;
	if (strstr(error, "deferred"))
		r->deferred++;
	if (strcmp(cache, "offered") == 0)
		r->offered++;
	if (cache[0] && !r->cache[0])
		snprintf(r->cache, sizeof(r->cache), "%s", cache);
	r->warmed += num(o, "warmed_bytes");
	if (strcmp(status, "failed") == 0) {
		r->failed++;
		if (!r->error[0])
			snprintf(r->error, sizeof(r->error), "%s", error[0] ? error : "failed");
		return;
	}
	/*
	 * A skipped line may still have kept the kernel's 2 MiB page-cache
	 * pages (the rest of its span deferred): what it says is on huge
	 * pages counts whatever its status.  A cache hit maps the cache's
	 * copy: nothing was copied by this process.
	 */
	r->ok += strcmp(status, "ok") == 0;
	g = region_of(t, nt, o);
	if (g) {
		r->huge -= g->huge;
		r->kept -= g->kept;
		r->copied -= g->copied;
		g->huge = huge;
		g->kept = kept;
		g->copied = copied;
	}
	r->huge += huge;
	r->kept += kept;
	r->copied += copied;
}

void hte_m_report_parse(const char *buf, size_t len, struct hte_m_report *r)
{
	struct region *t = calloc(MAX_REGIONS, sizeof(*t));
	size_t at = 0, nt = 0;

	memset(r, 0, sizeof(*r));
	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t l = nl ? (size_t)(nl - (buf + at)) : len - at;
		struct json_tokener *tk;
		struct json_object *o;

		if (l > 0 && l < 65536 && (tk = json_tokener_new())) {
			o = json_tokener_parse_ex(tk, buf + at, (int)l);
			if (o && json_tokener_get_error(tk) == json_tokener_success &&
			    json_object_is_type(o, json_type_object))
				report_line(o, r, t, &nt);
			json_object_put(o);
			json_tokener_free(tk);
		}
		at += l + 1;
	}
	free(t);
}

/* ---------------------------------------------------------------- comparisons */

static void figures(struct hte_measure *m, struct hte_m_variant *v)
{
	double counts[HTE_PMU_MAX_EVENTS], col[HTE_M_MAX_ROUNDS];

	for (size_t e = 0; e < m->nev; e++) {
		unsigned n = 0;

		for (unsigned r = 0; r < v->nruns; r++)
			if (v->runs[r].counts[e] >= 0)
				col[n++] = v->runs[r].counts[e];
		counts[e] = n ? hte_median(col, n) : -1;
	}
	hte_pmu_figures(m->ev, counts, m->nev, &v->fig);
}

void hte_m_compare(struct hte_measure *m)
{
	const struct hte_m_variant *plain = &m->var[0];

	for (unsigned i = 0; i < m->nvar; i++) {
		struct hte_m_variant *v = &m->var[i];
		double a[HTE_M_MAX_ROUNDS], b[HTE_M_MAX_ROUNDS], ac[HTE_M_MAX_ROUNDS], bc[HTE_M_MAX_ROUNDS];
		unsigned n = v->nruns < plain->nruns ? v->nruns : plain->nruns;

		figures(m, v);
		if (i == 0 || v->na[0] || !n)
			continue;
		for (unsigned r = 0; r < n; r++) {
			a[r] = v->runs[r].wall;
			b[r] = plain->runs[r].wall;
			/* CPU time 0 (a run shorter than the clock's tick) would be no ratio. */
			ac[r] = v->runs[r].cpu > 0 ? v->runs[r].cpu : 1e-6;
			bc[r] = plain->runs[r].cpu > 0 ? plain->runs[r].cpu : 1e-6;
		}
		hte_paired_compare(a, b, n, m->margin, &v->wall);
		hte_paired_compare(ac, bc, n, m->margin, &v->cpu);
		if (!v->decided_at && v->wall.decision != HTE_UNDECIDED)
			v->decided_at = n;
	}
}

/* ---------------------------------------------------------------- text */

static const char *mib(uint64_t b, char *buf, size_t len)
{
	return hte_human(b, buf, len);
}

static void text_huge(FILE *f, const struct hte_m_variant *v)
{
	const struct hte_m_huge *h = &v->check;
	char a[32], b[32];
	int any = 0;

	if (!h->known) {
		fputs("not seen (the exit could not be watched)", f);
		return;
	}
	if (h->copy)
		fprintf(f, "%s%s copied", any++ ? ", " : "", mib(h->copy, a, sizeof(a)));
	if (h->page_cache)
		fprintf(f, "%s%s page cache", any++ ? ", " : "", mib(h->page_cache, a, sizeof(a)));
	if (h->shared)
		fprintf(f, "%s%s shared cache", any++ ? ", " : "", mib(h->shared, a, sizeof(a)));
	if (h->hugetlb)
		fprintf(f, "%s%s hugetlb", any++ ? ", " : "", mib(h->hugetlb, a, sizeof(a)));
	fprintf(f, "%s of %s", any ? "" : "none", mib(h->code, b, sizeof(b)));
}

static void text_report(FILE *f, const struct hte_m_report *r)
{
	char a[32], b[32];

	if (!r->lines)
		return;
	fprintf(f, "; report: %s huge", mib(r->huge, a, sizeof(a)));
	if (r->kept)
		fprintf(f, " (%s the kernel's page cache, kept)", mib(r->kept, a, sizeof(a)));
	if (r->copied)
		fprintf(f, ", %s copied", mib(r->copied, b, sizeof(b)));
	if (r->cache[0])
		fprintf(f, ", cache %s", r->cache);
	if (r->deferred)
		fputs(", copy deferred", f);
	if (r->failed)
		fprintf(f, ", failed: %s", r->error);
}

/* What the preload's reports said in the timed runs (the watched run is one start only). */
static void timed_reports(FILE *f, const struct hte_m_variant *v)
{
	double huge[HTE_M_MAX_ROUNDS], copied[HTE_M_MAX_ROUNDS];
	unsigned n = 0;
	char a[32], b[32];

	for (unsigned r = 0; r < v->nruns; r++) {
		if (!v->runs[r].rep.lines)
			continue;
		huge[n] = (double)v->runs[r].rep.huge;
		copied[n++] = (double)v->runs[r].rep.copied;
	}
	if (!n)
		return;
	fprintf(f, "    its %u timed runs' reports: %s huge, %s copied (medians)\n", n,
		mib((uint64_t)hte_median(huge, n), a, sizeof(a)), mib((uint64_t)hte_median(copied, n), b, sizeof(b)));
}

static const char *decision_words(enum hte_decision d)
{
	switch (d) {
	case HTE_LOWER:
		return "faster";
	case HTE_HIGHER:
		return "slower";
	case HTE_SAME:
		return "the same";
	default:
		return "";
	}
}

static void text_ratio(FILE *f, const char *what, const struct hte_paired *p, unsigned decided_at,
		       unsigned rounds, double margin)
{
	fprintf(f, "%s %.3fx plain's", what, p->ratio);
	if (p->lo > 0)
		fprintf(f, " (95%%: %.3f-%.3f)", p->lo, p->hi);
	if (p->decision == HTE_SAME)
		fprintf(f, ": the same within %.0f%%, decided at %u runs", 100 * margin, decided_at ? decided_at : p->n);
	else if (p->decision != HTE_UNDECIDED && decided_at)
		fprintf(f, ": %s, decided at %u runs", decision_words(p->decision), decided_at);
	else if (p->decision != HTE_UNDECIDED)
		fprintf(f, ": %s", decision_words(p->decision));
	else
		fprintf(f, ": not decided at %u runs", rounds);
}

static void text_counters(FILE *f, const struct hte_measure *m, const struct hte_m_variant *v)
{
	const struct hte_pmu_figures *g = &v->fig;

	if (!m->counters)
		return;
	fputs("    counters:", f);
	if (g->instructions > 0)
		fprintf(f, " %.3g instructions", g->instructions);
	if (g->cycles > 0)
		fprintf(f, ", %.3g cycles", g->cycles);
	if (g->itlb_pki >= 0)
		fprintf(f, ", %.2f iTLB misses per 1000 instructions", g->itlb_pki);
	if (g->walk_pki >= 0)
		fprintf(f, ", %.2f code walks per 1000", g->walk_pki);
	if (g->walk_4k_share >= 0)
		fprintf(f, " (%.0f%% to 4 KiB pages)", 100 * g->walk_4k_share);
	if (g->l2_hit_pki >= 0)
		fprintf(f, ", %.2f second-level iTLB hits per 1000", g->l2_hit_pki);
	if (g->walk_cycles >= 0)
		fprintf(f, ", walks under way %.1f%% of cycles", 100 * g->walk_cycles);
	if (g->tag_stall >= 0)
		fprintf(f, ", fetch stalled on the tag %.1f%% of cycles", 100 * g->tag_stall);
	fputc('\n', f);
}

static void text_variant(FILE *f, const struct hte_measure *m, const struct hte_m_variant *v, int first)
{
	double w[HTE_M_MAX_ROUNDS], c[HTE_M_MAX_ROUNDS];

	for (unsigned r = 0; r < v->nruns; r++) {
		w[r] = v->runs[r].wall;
		c[r] = v->runs[r].cpu;
	}
	fprintf(f, "  %-9s", v->name);
	if (v->na[0]) {
		fprintf(f, "not timed: %s\n", v->na);
		return;
	}
	fprintf(f, "wall %.4g s, CPU %.4g s (medians of %u)", hte_median(w, v->nruns), hte_median(c, v->nruns),
		v->nruns);
	if (v->settings[0])
		fprintf(f, "; %s", v->settings);
	fputs("\n    code on huge pages: ", f);
	text_huge(f, v);
	text_report(f, &v->check_rep);
	fputc('\n', f);
	timed_reports(f, v);
	if (!first) {
		fputs("    ", f);
		text_ratio(f, "time", &v->wall, v->decided_at, m->rounds, m->margin);
		fputs("\n    ", f);
		text_ratio(f, "CPU", &v->cpu, 0, m->rounds, m->margin);
		fputc('\n', f);
	}
	text_counters(f, m, v);
}

void hte_m_text(FILE *f, const struct hte_measure *m)
{
	fputs("hugetext measure:", f);
	for (int i = 0; i < m->argc; i++) {
		fputc(' ', f);
		hte_text_name(f, m->argv[i]);
	}
	fprintf(f, "\n  %u rounds of %u variants, interleaved, the order shuffled each round", m->rounds, m->nvar);
	if (m->fixed)
		fputs(" (all rounds asked for)", f);
	else if (m->stopped_early)
		fprintf(f, " (stopped: decided; at most %u)", m->max_rounds);
	else
		fprintf(f, " (at most %u)", m->max_rounds);
	fputs("\nmachine: ", f);
	hte_cpu_line(f, &m->cpu);
	if (m->cpu.tlb_source[0])
		fprintf(f, " (%s%s)", m->cpu.tlb_source, m->cpu.hypervisor ? ", as the hypervisor tells it" : "");
	fputc('\n', f);
	if (m->have_calib)
		hte_calib_print(f, &m->calib);
	else
		fprintf(f, "calibration: %s\n", m->calib_why[0] ? m->calib_why : "not run");
	fprintf(f, "counters: %s\n", m->counters ? (m->counters_why[0] ? m->counters_why : "counted") : m->counters_why);
	if (m->counters && m->vendor_why[0])
		fprintf(f, "  %s\n", m->vendor_why);
	for (size_t i = 0; m->counters && i < m->nev; i++)
		if (m->ev_errno[i])
			fprintf(f, "  %s: not counted: %s\n", m->ev[i].name, strerror(m->ev_errno[i]));
	if (m->have_fp)
		fprintf(f, "footprint (plain, one untimed run): %s\n", m->est.text);
	if (m->isolation[0])
		fprintf(f, "kept apart: %s\n", m->isolation);
	fputs("variants:\n", f);
	for (unsigned i = 0; i < m->nvar; i++)
		text_variant(f, m, &m->var[i], i == 0);
	for (unsigned i = 0; i < m->nnotes; i++)
		fprintf(f, "note: %s\n", m->notes[i]);
}

/* ---------------------------------------------------------------- JSON */

static void json_paired(FILE *f, const struct hte_paired *p)
{
	fprintf(f, "{\"n\":%u,\"ratio\":%.5f,\"lo\":%.5f,\"hi\":%.5f,\"decide_lo\":%.5f,\"decide_hi\":%.5f,"
		   "\"decision\":\"%s\"}",
		p->n, p->ratio, p->lo, p->hi, p->dlo, p->dhi, hte_decision_name(p->decision));
}

static void json_num(FILE *f, const char *key, double v, int comma)
{
	if (v < 0)
		fprintf(f, "%s\"%s\":null", comma ? "," : "", key);
	else
		fprintf(f, "%s\"%s\":%.6g", comma ? "," : "", key, v);
}

static void json_variant(FILE *f, const struct hte_measure *m, const struct hte_m_variant *v)
{
	const struct hte_m_huge *h = &v->check;
	const struct hte_m_report *r = &v->check_rep;

	fputs("{\"name\":", f);
	hte_json_str(f, v->name);
	fputs(",\"settings\":", f);
	hte_json_str(f, v->settings);
	if (v->na[0]) {
		fputs(",\"na\":", f);
		hte_json_str(f, v->na);
	}
	fputs(",\"runs\":[", f);
	for (unsigned i = 0; i < v->nruns; i++)
		fprintf(f, "%s{\"wall\":%.6f,\"cpu\":%.6f,\"huge\":%llu,\"copied\":%llu}", i ? "," : "",
			v->runs[i].wall, v->runs[i].cpu, (unsigned long long)v->runs[i].rep.huge,
			(unsigned long long)v->runs[i].rep.copied);
	fprintf(f, "],\"check\":{\"known\":%s,\"code\":%llu,\"copy\":%llu,\"page_cache\":%llu,\"shared\":%llu,"
		   "\"hugetlb\":%llu}",
		h->known ? "true" : "false", (unsigned long long)h->code, (unsigned long long)h->copy,
		(unsigned long long)h->page_cache, (unsigned long long)h->shared, (unsigned long long)h->hugetlb);
	fprintf(f, ",\"report\":{\"lines\":%u,\"ok\":%u,\"failed\":%u,\"deferred\":%u,\"huge\":%llu,\"kept\":%llu,"
		   "\"copied\":%llu,\"warmed\":%llu,\"cache\":",
		r->lines, r->ok, r->failed, r->deferred, (unsigned long long)r->huge, (unsigned long long)r->kept,
		(unsigned long long)r->copied, (unsigned long long)r->warmed);
	hte_json_str(f, r->cache);
	fputs(",\"error\":", f);
	hte_json_str(f, r->error);
	fputc('}', f);
	if (v != &m->var[0] && !v->na[0]) {
		fputs(",\"time\":", f);
		json_paired(f, &v->wall);
		fputs(",\"cpu_time\":", f);
		json_paired(f, &v->cpu);
		fprintf(f, ",\"decided_at\":%u", v->decided_at);
	}
	if (m->counters) {
		fputs(",\"counters\":{", f);
		json_num(f, "instructions", v->fig.instructions, 0);
		json_num(f, "cycles", v->fig.cycles, 1);
		json_num(f, "itlb_misses_pki", v->fig.itlb_pki, 1);
		json_num(f, "walks_pki", v->fig.walk_pki, 1);
		json_num(f, "walks_4k_share", v->fig.walk_4k_share, 1);
		json_num(f, "l2_itlb_hits_pki", v->fig.l2_hit_pki, 1);
		json_num(f, "walk_cycles_share", v->fig.walk_cycles, 1);
		json_num(f, "tag_stall_share", v->fig.tag_stall, 1);
		fputc('}', f);
	}
	fputc('}', f);
}

void hte_m_json(FILE *f, const struct hte_measure *m)
{
	fputs("{\"command\":[", f);
	for (int i = 0; i < m->argc; i++) {
		fputs(i ? "," : "", f);
		hte_json_str(f, m->argv[i]);
	}
	fputs("],\"program\":", f);
	hte_json_str(f, m->program);
	fprintf(f, ",\"rounds\":%u,\"max_rounds\":%u,\"stopped_early\":%s,\"margin\":%.4f,\"method\":",
		m->rounds, m->max_rounds, m->stopped_early ? "true" : "false", m->margin);
	hte_json_str(f, "paired log-ratios: Hodges-Lehmann estimate, exact Wilcoxon signed-rank "
			"interval (95%; 99.5% decides)");
	fputs(",\"cpu\":{\"vendor\":", f);
	hte_json_str(f, m->cpu.vendor_id);
	fprintf(f, ",\"family\":%u,\"model\":%u,\"stepping\":%u,\"hypervisor\":", m->cpu.family, m->cpu.model,
		m->cpu.stepping);
	hte_json_str(f, m->cpu.hypervisor ? (m->cpu.hypervisor_id[0] ? m->cpu.hypervisor_id : "unknown") : "");
	fprintf(f, ",\"itlb\":{\"l1_4k\":%u,\"l2_4k\":%u,\"l1_2m\":%u,\"l2_2m\":%u,\"l2_shared\":%s,\"source\":",
		m->cpu.itlb.l1_4k, m->cpu.itlb.l2_4k, m->cpu.itlb.l1_2m, m->cpu.itlb.l2_2m,
		m->cpu.itlb.l2_shared ? "true" : "false");
	hte_json_str(f, m->cpu.tlb_source);
	fputs("}},\"calibration\":", f);
	if (m->have_calib)
		hte_calib_json(f, &m->calib);
	else {
		fputs("{\"verdict\":\"unknown\",\"why\":", f);
		hte_json_str(f, m->calib_why);
		fputc('}', f);
	}
	fprintf(f, ",\"counters\":{\"counted\":%s,\"why\":", m->counters ? "true" : "false");
	hte_json_str(f, m->counters_why);
	fputs(",\"events\":[", f);
	for (size_t i = 0; m->counters && i < m->nev; i++) {
		fputs(i ? "," : "", f);
		fputs("{\"name\":", f);
		hte_json_str(f, m->ev[i].name);
		fprintf(f, ",\"config\":%llu,\"error\":", (unsigned long long)m->ev[i].config);
		hte_json_str(f, m->ev_errno[i] ? strerror(m->ev_errno[i]) : "");
		fputc('}', f);
	}
	fputs("]},\"footprint\":", f);
	if (m->have_fp) {
		fprintf(f, "{\"code_bytes\":%llu,\"pages_4k\":%llu,\"pages_2m\":%llu,\"pages_known\":%s,"
			   "\"windows\":%u,\"window_ms\":%.1f,\"working_set_max\":%llu,\"working_set_median\":%llu,"
			   "\"over_4k\":%.3f,\"over_2m\":%.3f,\"estimate\":",
			(unsigned long long)m->fp.code_bytes, (unsigned long long)m->fp.pages_4k,
			(unsigned long long)m->fp.pages_2m, m->fp.pages_known ? "true" : "false", m->fp.windows,
			m->fp.window_ms, (unsigned long long)m->fp.ws_max, (unsigned long long)m->fp.ws_median,
			m->est.over_4k, m->est.over_2m);
		hte_json_str(f, m->est.text);
		fputc('}', f);
	} else {
		fputs("null", f);
	}
	fputs(",\"isolation\":", f);
	hte_json_str(f, m->isolation);
	fputs(",\"variants\":[", f);
	for (unsigned i = 0; i < m->nvar; i++) {
		fputs(i ? "," : "", f);
		json_variant(f, m, &m->var[i]);
	}
	fputs("],\"notes\":[", f);
	for (unsigned i = 0; i < m->nnotes; i++) {
		fputs(i ? "," : "", f);
		hte_json_str(f, m->notes[i]);
	}
	fputs("]}\n", f);
}
