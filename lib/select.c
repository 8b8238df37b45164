/* SPDX-License-Identifier: MIT */
/*
 * Which objects move: the main program, the libraries the patterns name
 * (compiled once per run) or that are big enough (policy.c), the segments
 * flagged by hugeedit; never those seen before or ignored.
 */
#include "policy.h"
#include "run.h"
#include "sys.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <regex.h>
#include <string.h>

/* Whether @at lies in a 2 MiB page that some executable segment of @o reaches. */
static int near_code(const struct ht_object *o, uintptr_t at)
{
	for (int k = 0; k < o->nseg; k++)
		if ((o->segs[k].flags & PF_X) && ht_round_down(o->segs[k].start, HT_HUGE_PAGE_SIZE) <= at &&
		    at < ht_round_up(o->segs[k].end, HT_HUGE_PAGE_SIZE))
			return 1;
	return 0;
}

/*
 * An address inside one of the object's segments that is never moved (not
 * executable): its maps entry names the object's file even after a move.
 * The cover-ends setting moves read-only data in the code's end pages
 * too, so a segment start outside those pages comes first (the data
 * segment's, often); else the first that is not code.
 */
uintptr_t ht_object_id_addr(const struct ht_object *o)
{
	for (int k = 0; k < o->nseg; k++)
		if (!(o->segs[k].flags & PF_X) && !near_code(o, o->segs[k].start))
			return o->segs[k].start;
	for (int k = 0; k < o->nseg; k++)
		if (!(o->segs[k].flags & PF_X))
			return o->segs[k].start;
	return o->nseg ? o->segs[0].start : 0;
}

int ht_matches(const regex_t *re, const char *s)
{
	return ht_regexec(re, s, 0, NULL, 0) == 0;
}

/* The object's path as the maps give it. */
void ht_object_path(const struct run *r, const struct ht_object *o, char *buf, size_t len)
{
	uintptr_t at = ht_object_id_addr(o);
	struct ht_map m;
	size_t pos = 0;

	buf[0] = '\0';
	while (at && ht_maps_next(r->maps, r->maps_len, &pos, &m)) {
		if (m.start <= at && at < m.end) {
			size_t n = m.path_len < len - 1 ? m.path_len : len - 1;

			memcpy(buf, m.path, n);
			buf[n] = '\0';
			return;
		}
	}
}

/*
 * The policy's rule (ht_policy_take); or, for iodlr's MapDSOToLargePages,
 * the first library the basic regular expression names and nothing else.
 */
int ht_selected(struct run *r, const struct ht_object *o, const char *path)
{
	if (r->has_dso) {
		if (o->is_main || r->dso_found || !ht_matches(&r->dso, path))
			return HT_TAKE_NONE;
		r->dso_found = 1;
		return HT_TAKE_WHOLE;
	}
	return ht_policy_take(r->opt, o, !o->is_main && r->has_match && ht_matches(&r->match, path));
}

/* Objects the caller has seen already (the dlopen hook's snapshot). */
int ht_known(const struct run *r, const struct ht_object *o)
{
	for (size_t i = 0; i < r->nknown; i++)
		if (r->known[i].base == o->base && strcmp(r->known[i].name, o->name) == 0)
			return 1;
	return 0;
}

static int compile(struct run *r, regex_t *re, int *has, const char *pat, int flags)
{
	if (!pat)
		return 0;
	if (ht_regcomp(re, pat, flags | REG_NOSUB) != 0)
		return ht_run_failed(r, HT_E_BAD_REGEX, -EINVAL, pat);
	*has = 1;
	return 0;
}

int ht_compile_all(struct run *r, const char *dso_bre)
{
	if (compile(r, &r->match, &r->has_match, r->opt->match, REG_EXTENDED) < 0 ||
	    compile(r, &r->ignore, &r->has_ignore, r->opt->ignore, REG_EXTENDED) < 0 ||
	    compile(r, &r->dso, &r->has_dso, dso_bre, 0) < 0)
		return -EINVAL;
	return 0;
}
