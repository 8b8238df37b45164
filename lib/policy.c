/* SPDX-License-Identifier: MIT */
/* The policy: which programs, which objects, and whether any code is worth moving. */
#include "policy.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

#include "internal.h"

void ht_policy_init(struct ht_policy *p)
{
	p->programs = NULL;
	p->min_code = HT_POLICY_MIN_CODE_DEFAULT;
	p->async = 0;
}

void ht_policy_from_conf(const struct ht_conf *c, struct ht_options *opt, struct ht_policy *p)
{
	if (c->set & HT_CONF_MODE)
		opt->mode = (enum ht_mode)c->mode;
	if (c->set & HT_CONF_MATCH)
		opt->match = c->match;
	if (c->set & HT_CONF_IGNORE)
		opt->ignore = c->ignore;
	if (c->set & HT_CONF_BUDGET_MS)
		opt->budget_ms = c->budget_ms;
	if (c->set & HT_CONF_PAGE_CACHE)
		opt->page_cache = c->page_cache;
	if (c->set & HT_CONF_VERBOSE)
		opt->verbose = c->verbose;
	if (c->set & HT_CONF_COVER_ENDS)
		opt->cover_ends = c->cover_ends;
	if (c->set & HT_CONF_SERVICE)
		opt->service = c->service;
	if (c->set & HT_CONF_COPY_HOT)
		opt->copy_hot = c->copy_hot;
	if (c->set & HT_CONF_SHARE)
		opt->share = c->share;
	if (c->set & HT_CONF_COPY)
		opt->copy = c->copy;
	if (c->set & HT_CONF_BIG_LIBRARIES)
		opt->big_libraries = c->big_libraries;
	if (c->set & HT_CONF_COPY_AFTER_MS)
		opt->copy_after_ms = (int)c->copy_after_ms;
	if (c->set & HT_CONF_PROGRAMS)
		p->programs = c->programs;
	if (c->set & HT_CONF_MIN_CODE)
		p->min_code = c->min_code;
	if (c->set & HT_CONF_ASYNC)
		p->async = c->async;
}

void ht_policy_env(struct ht_policy *p, char *(*get)(const char *), char *notes, size_t len)
{
	const char *v = get("HUGETEXT_PROGRAMS");

	if (v)
		p->programs = *v ? v : NULL;
	v = get("HUGETEXT_MIN_CODE");
	if (v && ht_conf_parse_size(v, strlen(v), &p->min_code) < 0)
		ht_note_ignored(notes, len, "HUGETEXT_MIN_CODE", v);
	v = get("HUGETEXT_ASYNC");
	if (v && ht_parse_bool(v, &p->async) < 0)
		ht_note_ignored(notes, len, "HUGETEXT_ASYNC", v);
}

uint64_t ht_object_code_bytes(const struct ht_object *o)
{
	uint64_t n = 0;

	for (int i = 0; i < o->nseg && i < HT_MAX_SEGS; i++)
		if (o->segs[i].flags & PF_X)
			n += o->segs[i].end - o->segs[i].start;
	return n;
}

int ht_object_big_enough(const struct ht_options *opt, const struct ht_object *o)
{
	uint64_t code = ht_object_code_bytes(o);

	/* Less than one 2 MiB page of code never goes on a huge page. */
	return code >= opt->min_code && code >= HT_HUGE_PAGE_SIZE;
}

static int big_libraries_taken(const struct ht_options *opt)
{
	return opt->big_libraries == HT_BIG_LIBRARIES_ON ||
	       (opt->big_libraries == HT_BIG_LIBRARIES_AUTO && !opt->match);
}

enum ht_take ht_policy_take(const struct ht_options *opt, const struct ht_object *o, int named)
{
	if (o->is_main || named)
		return HT_TAKE_WHOLE;
	if (big_libraries_taken(opt) && ht_object_big_enough(opt, o))
		return HT_TAKE_WHOLE;
	return ht_object_flagged(o) ? HT_TAKE_FLAGGED : HT_TAKE_NONE;
}

int ht_policy_worth(const struct ht_options *opt, const struct ht_object *objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ht_object_big_enough(opt, &objs[i]) &&
		    ht_policy_take(opt, &objs[i], opt->match != NULL) != HT_TAKE_NONE)
			return 1;
	return 0;
}

int ht_policy_repair_now(size_t kept, size_t rest)
{
	return kept > 0 && rest <= kept;
}

/* Whether @key (NUL-terminated) starts at @s, before @end; no libc call (preload.c's path binds none). */
static int key_at(const char *s, const char *end, const char *key)
{
	while (*key && s < end && *s == *key)
		s++, key++;
	return *key == '\0';
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int ht_conf_may_set(const char *buf, size_t len, const char *key)
{
	const char *p = buf, *end = buf + len;

	if (!*key)
		return 0;
	while (p < end) {
		const char *eol = p;

		while (eol < end && *eol != '\n')
			eol++;
		/* conf.c's comments: '#' first on the line, after blanks. */
		while (p < eol && is_blank(*p))
			p++;
		for (const char *at = p; at < eol && *p != '#'; at++)
			if (key_at(at, eol, key))
				return 1;
		p = eol + 1;
	}
	return 0;
}
