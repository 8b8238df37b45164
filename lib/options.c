/* SPDX-License-Identifier: MIT */
/* Settings: defaults, parsing and the environment. */
#include "internal.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longest budget accepted: one hour. */
#define HT_BUDGET_MAX 3600000u
/* Longest wait for a deferred copy: a day of CPU time. */
#define HT_COPY_AFTER_MAX 86400000u

void ht_options_init(struct ht_options *opt)
{
	if (!opt)
		return;
	memset(opt, 0, sizeof(*opt));
	opt->mode = HT_MODE_AUTO;
	opt->page_cache = 1;
	opt->share = HT_SHARE_AUTO;
	opt->copy = HT_COPY_NOW;
	opt->copy_after_ms = -1;
	opt->service = 1;
	opt->copy_hot = 1;
}

_Static_assert((int)HT_SHARE_OFF == HT_BIG_LIBRARIES_OFF && (int)HT_SHARE_ON == HT_BIG_LIBRARIES_ON &&
		       (int)HT_SHARE_AUTO == HT_BIG_LIBRARIES_AUTO,
	       "share and big_libraries take the same values");

int ht_parse_auto_bool(const char *s, int *out)
{
	int on;

	if (s && strcasecmp(s, "auto") == 0)
		return *out = HT_SHARE_AUTO, 0;
	if (ht_parse_bool(s, &on) < 0)
		return -EINVAL;
	*out = on ? HT_SHARE_ON : HT_SHARE_OFF;
	return 0;
}

int ht_parse_copy(const char *s, int *out)
{
	static const struct { const char *name; int copy; } names[] = {
		{ "now", HT_COPY_NOW }, { "auto", HT_COPY_AUTO }, { "never", HT_COPY_NEVER },
	};

	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s, names[i].name) == 0)
			return *out = names[i].copy, 0;
	return -EINVAL;
}

int ht_parse_mode(const char *s, enum ht_mode *mode)
{
	static const struct { const char *name; enum ht_mode mode; } names[] = {
		{ "auto", HT_MODE_AUTO }, { "thp", HT_MODE_THP },
		{ "explicit", HT_MODE_EXPLICIT }, { "off", HT_MODE_OFF },
		{ "folios", HT_MODE_FOLIOS },
	};

	*mode = HT_MODE_AUTO;
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*mode = names[i].mode;
			return 0;
		}
	}
	return -EINVAL;
}

int ht_parse_uint(const char *s, unsigned max, unsigned *out)
{
	unsigned long v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > max)
			return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

int ht_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false", "" };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcasecmp(s, yes[i]) == 0)
			return *out = 1, 0;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strcasecmp(s, no[i]) == 0)
			return *out = 0, 0;
	return -EINVAL;
}

void ht_note_ignored(char *notes, size_t len, const char *var, const char *val)
{
	size_t used;

	if (!notes || len == 0)
		return;
	used = strnlen(notes, len);
	if (used + 1 >= len)
		return;
	/* Cut long values: the note is for a human, not a log of the input. */
	snprintf(notes + used, len - used, "%signored %s=\"%.40s%s\"",
		 used ? "; " : "", var, val, strlen(val) > 40 ? "..." : "");
}

static void env_bool(char *(*get)(const char *), const char *var, int *field,
		     char *notes, size_t len)
{
	const char *v = get(var);

	if (v && ht_parse_bool(v, field) < 0)
		ht_note_ignored(notes, len, var, v);
}

/* An empty pattern means "not set", so HUGETEXT_MATCH= switches it off. */
static const char *env_pattern(char *(*get)(const char *), const char *var, const char *cur)
{
	const char *v = get(var);

	if (!v)
		return cur;
	return *v ? v : NULL;
}

void ht_options_env(struct ht_options *opt, char *(*get)(const char *),
		    char *notes, size_t len)
{
	const char *v;
	int iodlr_explicit = 0;

	if (notes && len)
		notes[0] = '\0';
	v = get("HUGETEXT_MODE");
	if (v && ht_parse_mode(v, &opt->mode) < 0)
		ht_note_ignored(notes, len, "HUGETEXT_MODE", v);
	/* iodlr's switch, honoured when our own mode is not set. */
	v = get("IODLR_USE_EXPLICIT_HP");
	if (v && ht_parse_bool(v, &iodlr_explicit) == 0 && iodlr_explicit && !get("HUGETEXT_MODE"))
		opt->mode = HT_MODE_EXPLICIT;
	env_bool(get, "HUGETEXT_VERBOSE", &opt->verbose, notes, len);
	v = get("HUGETEXT_SHARE");
	if (v && ht_parse_auto_bool(v, &opt->share) < 0)
		ht_note_ignored(notes, len, "HUGETEXT_SHARE", v);
	v = get("HUGETEXT_BIG_LIBRARIES");
	if (v && ht_parse_auto_bool(v, &opt->big_libraries) < 0)
		ht_note_ignored(notes, len, "HUGETEXT_BIG_LIBRARIES", v);
	v = get("HUGETEXT_COPY");
	if (v && ht_parse_copy(v, &opt->copy) < 0)
		ht_note_ignored(notes, len, "HUGETEXT_COPY", v);
	v = get("HUGETEXT_COPY_AFTER_MS");
	if (v) {
		unsigned ms;

		if (ht_parse_uint(v, HT_COPY_AFTER_MAX, &ms) < 0)
			ht_note_ignored(notes, len, "HUGETEXT_COPY_AFTER_MS", v);
		else
			opt->copy_after_ms = (int)ms;
	}
	env_bool(get, "HUGETEXT_PERF_MAP", &opt->perf_map, notes, len);
	env_bool(get, "HUGETEXT_PAGE_CACHE", &opt->page_cache, notes, len);
	env_bool(get, "HUGETEXT_COVER_ENDS", &opt->cover_ends, notes, len);
	env_bool(get, "HUGETEXT_COPY_HOT", &opt->copy_hot, notes, len);
	env_bool(get, "HUGETEXT_SERVICE", &opt->service, notes, len);
	v = get("HUGETEXT_REPORT");
	if (v)
		opt->report_path = *v ? v : NULL;
	v = get("HUGETEXT_SHARE_DIR");
	if (v)
		opt->share_dir = *v ? v : NULL;
	opt->match = env_pattern(get, "HUGETEXT_MATCH", opt->match);
	opt->ignore = env_pattern(get, "HUGETEXT_IGNORE", opt->ignore);
	v = get("HUGETEXT_BUDGET_MS");
	if (v && ht_parse_uint(v, HT_BUDGET_MAX, &opt->budget_ms) < 0)
		ht_note_ignored(notes, len, "HUGETEXT_BUDGET_MS", v);
	v = get("HUGETEXT_FILL");
	if (v) {
		if (strcmp(v, "pread") == 0)
			opt->fill = 1;
		else if (strcmp(v, "memcpy") == 0)
			opt->fill = 2;
		else if (strcmp(v, "auto") == 0)
			opt->fill = 0;
		else
			ht_note_ignored(notes, len, "HUGETEXT_FILL", v);
	}
}

int ht_options_from_env(struct ht_options *opt)
{
	if (!opt)
		return -EINVAL;
	ht_options_env(opt, ht_secure_getenv, NULL, 0);
	return 0;
}
