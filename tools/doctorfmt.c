/* SPDX-License-Identifier: MIT */
/*
 * hugetext doctor, the outputs: one screen of text for people (the verdict
 * lines by section, each problem with the command that fixes it, then the
 * biggest code running now) and one JSON object for scripts.  Pure: the
 * tests compare both with golden files.
 */
#include "tool.h"
#include "doctor.h"

#include <inttypes.h>
#include <string.h>

#include "calibrate.h"

static const char *const section_names[] = { "Kernel", "Processor", "hugetext on this machine" };
static const char *const section_ids[] = { "kernel", "cpu", "hugetext" };

static unsigned count_level(const struct hte_doctor *d, enum hte_doc_level l)
{
	unsigned n = 0;

	for (size_t i = 0; i < d->nlines; i++)
		n += d->lines[i].level == l;
	return n;
}

/* "  warn  text" and, under it, "        do: fix". */
static void text_line(FILE *f, enum hte_doc_level l, const char *text, const char *fix)
{
	fprintf(f, "  %-5s ", hte_doc_level_name(l));
	hte_text_name(f, text);
	fputc('\n', f);
	/* One "do:" line per command of the fix. */
	while (fix && fix[0]) {
		const char *nl = strchr(fix, '\n');
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "%.*s", nl ? (int)(nl - fix) : (int)strlen(fix), fix);
		fputs("        do: ", f);
		hte_text_name(f, cmd);
		fputc('\n', f);
		fix = nl ? nl + 1 : NULL;
	}
}

/*
 * A path in at most @max bytes, so that a row fits on a line: whole, or
 * ".../" and as many of its last components as fit (the file's name at
 * least, cut at its end when even that is too long).
 */
static void short_path(const char *path, char *out, size_t len, size_t max)
{
	size_t n = strlen(path);
	const char *tail = NULL;

	if (n <= max) {
		snprintf(out, len, "%s", path);
		return;
	}
	for (const char *p = path + n; p > path; p--)
		if (p[-1] == '/' && (size_t)(path + n - p) + 4 <= max)
			tail = p;
	if (tail)
		snprintf(out, len, ".../%s", tail);
	else
		snprintf(out, len, "%.*s...", (int)(max - 3), strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
}

static void text_objects(FILE *f, const struct hte_doctor *d, const struct hte_doc_env *e)
{
	char m[32], row[700], verdict[400], fix[600], p[64];

	fprintf(f, "Biggest code running now (%u processes read", d->procs_read);
	if (d->procs_unread)
		fprintf(f, ", %u not readable%s", d->procs_unread, d->as_root ? "" : ": run as root");
	fputs(")\n", f);
	if (!d->nobjs)
		fprintf(f, "  none: no program or library with %s of code runs\n", hte_human(d->min_code, m, sizeof(m)));
	for (size_t i = 0; i < d->nobjs && i < HTE_DOC_ROWS; i++) {
		const struct hte_doc_obj *o = &d->objs[i];
		enum hte_doc_level l = hte_doc_obj_verdict(o, e, verdict, sizeof(verdict), fix, sizeof(fix));

		short_path(o->path, p, sizeof(p), 36);
		snprintf(row, sizeof(row), "%-36s %9s x%-2u %s", p, hte_human(o->code, m, sizeof(m)), o->procs, verdict);
		text_line(f, l, row, fix);
	}
	if (d->nobjs > HTE_DOC_ROWS)
		fprintf(f, "  (%zu more with %s or more: hugetext doctor --json, hugetext status)\n",
			d->nobjs - HTE_DOC_ROWS, hte_human(d->min_code, m, sizeof(m)));
}

static void text_summary(FILE *f, const struct hte_doctor *d)
{
	unsigned blocks = count_level(d, HTE_DOC_BLOCK), warns = count_level(d, HTE_DOC_WARN);

	if (blocks)
		fprintf(f, "%u thing%s block%s hugetext here (BLOCK above)", blocks, blocks == 1 ? "" : "s",
			blocks == 1 ? "s" : "");
	else
		fputs("Nothing blocks hugetext here", f);
	if (warns)
		fprintf(f, "; %u warning%s say%s what to do", warns, warns == 1 ? "" : "s", warns == 1 ? "s" : "");
	fprintf(f, ". Exit status %d.\n", hte_doc_exit(d));
}

void hte_doc_text(FILE *f, const struct hte_doctor *d, const struct hte_doc_env *e)
{
	fputs("hugetext doctor: ", f);
	hte_text_name(f, d->kernel);
	if (d->cpu[0]) {
		fputs("\n  ", f);
		hte_text_name(f, d->cpu);
	}
	fputc('\n', f);
	for (int s = 0; s < HTE_DOC_SECTIONS; s++) {
		int head = 0;

		for (size_t i = 0; i < d->nlines; i++) {
			const struct hte_doc_line *l = &d->lines[i];

			if ((int)l->section != s)
				continue;
			if (!head++)
				fprintf(f, "%s\n", section_names[s]);
			text_line(f, l->level, l->text, l->fix);
		}
	}
	text_objects(f, d, e);
	text_summary(f, d);
}

/* --- JSON --- */

static void json_kv(FILE *f, const char *key, const char *value, int comma)
{
	fprintf(f, "%s\"%s\": ", comma ? ", " : "", key);
	hte_json_str(f, value);
}

static void json_lines(FILE *f, const struct hte_doctor *d)
{
	fputs("  \"checks\": [", f);
	for (size_t i = 0; i < d->nlines; i++) {
		const struct hte_doc_line *l = &d->lines[i];

		fprintf(f, "%s\n    {", i ? "," : "");
		json_kv(f, "id", l->id, 0);
		json_kv(f, "section", section_ids[l->section], 1);
		json_kv(f, "level", hte_doc_level_name(l->level), 1);
		json_kv(f, "value", l->value, 1);
		json_kv(f, "text", l->text, 1);
		json_kv(f, "fix", l->fix, 1);
		fputc('}', f);
	}
	fputs(d->nlines ? "\n  ],\n" : "],\n", f);
}

static void json_object_row(FILE *f, const struct hte_doc_obj *o, const struct hte_doc_env *e)
{
	char verdict[400], fix[600];
	enum hte_doc_level l = hte_doc_obj_verdict(o, e, verdict, sizeof(verdict), fix, sizeof(fix));

	fputs("    {", f);
	json_kv(f, "path", o->path, 0);
	fprintf(f, ", \"code_bytes\": %" PRIu64 ", \"code_bytes_all\": %" PRIu64 ", \"processes\": %u, "
		"\"with_preload\": %u, \"aligned\": %u, \"huge\": {", o->code, o->code_sum, o->procs,
		o->with_preload, o->aligned);
	for (int h = 0; h < HTE_HOW_N; h++)
		if (h != HTE_HOW_FOLIOS)
			fprintf(f, "%s\"%s\": %" PRIu64, h ? ", " : "", hte_how_name(h), o->huge[h]);
	fputs("}", f);
	json_kv(f, "fs", o->fs, 1);
	fprintf(f, ", \"fs_folios\": %s", o->fs_folios < 0 ? "null" : o->fs_folios ? "true" : "false");
	json_kv(f, "level", hte_doc_level_name(l), 1);
	json_kv(f, "verdict", verdict, 1);
	json_kv(f, "fix", fix, 1);
	fputc('}', f);
}

static void json_calib(FILE *f, const struct hte_calib *c)
{
	static const char *const verdicts[] = { "unknown", "huge_gains", "no_gain", "no_huge" };

	if (!c) {
		fputs("  \"calibration\": null,\n", f);
		return;
	}
	fprintf(f, "  \"calibration\": {\"verdict\": \"%s\"",
		(unsigned)c->verdict < 4 ? verdicts[c->verdict] : "unknown");
	json_kv(f, "why", c->why, 1);
	fprintf(f, ", \"seconds\": %.3f, \"walk_ns_per_page\": %.3f, \"points\": [", c->seconds,
		c->walk_ns_per_page);
	for (unsigned i = 0; i < c->npoints && i < HTE_CALIB_MAX_POINTS; i++) {
		const struct hte_calib_point *p = &c->point[i];

		fprintf(f, "%s{\"code_bytes\": %" PRIu64 ", \"ns_4k\": %.3f, \"ns_2m\": %.3f, \"lo\": %.4f, "
			"\"hi\": %.4f, \"huge_ok\": %s}", i ? ", " : "", p->code_bytes, p->ns_4k, p->ns_2m, p->lo,
			p->hi, p->huge_ok ? "true" : "false");
	}
	fputs("]},\n", f);
}

void hte_doc_json(FILE *f, const struct hte_doctor *d, const struct hte_doc_env *e)
{
	fputs("{\n", f);
	fputs("  ", f);
	json_kv(f, "kernel", d->kernel, 0);
	fputs(",\n  ", f);
	json_kv(f, "cpu", d->cpu, 0);
	fprintf(f, ",\n  \"guest\": %s,\n", d->guest < 0 ? "null" : d->guest ? "true" : "false");
	fprintf(f, "  \"exit\": %d,\n  \"blocks\": %u,\n  \"warnings\": %u,\n", hte_doc_exit(d),
		count_level(d, HTE_DOC_BLOCK), count_level(d, HTE_DOC_WARN));
	json_lines(f, d);
	json_calib(f, d->calib);
	fprintf(f, "  \"processes_read\": %u,\n  \"processes_unreadable\": %u,\n  \"min_code\": %" PRIu64
		",\n  \"objects\": [", d->procs_read, d->procs_unread, d->min_code);
	for (size_t i = 0; i < d->nobjs; i++) {
		fputs(i ? ",\n" : "\n", f);
		json_object_row(f, &d->objs[i], e);
	}
	fputs(d->nobjs ? "\n  ]\n}\n" : "]\n}\n", f);
}
