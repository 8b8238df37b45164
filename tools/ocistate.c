/* SPDX-License-Identifier: MIT */
/*
 * hugetext oci-hook, the pure half: the runtime's state and config.json
 * (json-c), the decision, the merged ld.so.preload, the record, and the
 * /proc texts the hook reads.  No system call here: tests feed buffers.
 */
#include "ocihook.h"
#include "mountfield.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

int hte_oci_why(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (why && cap) {
		va_start(ap, fmt);
		vsnprintf(why, cap, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/*
 * One JSON document of @len bytes, an object, nothing but whitespace
 * after it.  The depth limit keeps a hostile nesting from the stack.
 */
static json_object *parse_object(const char *buf, size_t len, const char *what, char *err, size_t errlen)
{
	json_tokener *tok;
	json_object *o;
	size_t end;

	if (len == 0) {
		hte_oci_why(err, errlen, "%s is empty", what);
		return NULL;
	}
	if (len > (size_t)INT32_MAX || memchr(buf, '\0', len)) {
		hte_oci_why(err, errlen, "%s is not JSON: it holds a NUL byte", what);
		return NULL;
	}
	tok = json_tokener_new_ex(32);
	if (!tok) {
		hte_oci_why(err, errlen, "out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, buf, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		hte_oci_why(err, errlen, "%s is not JSON: %s", what,
			    e == json_tokener_continue ? "it ends early" : json_tokener_error_desc(e));
		json_object_put(o);
		json_tokener_free(tok);
		return NULL;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	for (; end < len; end++) {
		if (buf[end] != ' ' && buf[end] != '\n' && buf[end] != '\t' && buf[end] != '\r') {
			hte_oci_why(err, errlen, "%s is not one JSON document: more follows it", what);
			json_object_put(o);
			return NULL;
		}
	}
	if (!json_object_is_type(o, json_type_object)) {
		hte_oci_why(err, errlen, "%s is not a JSON object", what);
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The string member @key of @o; NULL (with @err) when absent or not a string. */
static const char *member_str(json_object *o, const char *key, const char *what, size_t *len, char *err,
			      size_t errlen)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v) {
		hte_oci_why(err, errlen, "%s has no \"%s\"", what, key);
		return NULL;
	}
	if (!json_object_is_type(v, json_type_string)) {
		hte_oci_why(err, errlen, "%s: \"%s\" is not a string", what, key);
		return NULL;
	}
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

int hte_oci_id_valid(const char *id, size_t len)
{
	if (len == 0 || len > HTE_OCI_ID_MAX || id[0] == '.')
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '+' || c == '-'))
			return 0;
	}
	return 1;
}

static int state_annotation(json_object *o, struct hte_oci_state *st, char *err, size_t errlen)
{
	json_object *a, *v;
	size_t n;

	if (!json_object_object_get_ex(o, "annotations", &a) || !a)
		return 0;
	if (!json_object_is_type(a, json_type_object))
		return hte_oci_why(err, errlen, "the state: \"annotations\" is not an object");
	if (!json_object_object_get_ex(a, HTE_OCI_ANNOTATION, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return hte_oci_why(err, errlen, "the state: annotation \"%s\" is not a string", HTE_OCI_ANNOTATION);
	n = (size_t)json_object_get_string_len(v);
	st->has_annotation = 1;
	st->annotation_long = n > HTE_OCI_VALUE_MAX;
	if (n > HTE_OCI_VALUE_MAX)
		n = HTE_OCI_VALUE_MAX;
	memcpy(st->annotation, json_object_get_string(v), n);
	st->annotation[n] = '\0';
	return 0;
}

static int state_fields(json_object *o, struct hte_oci_state *st, char *err, size_t errlen)
{
	const char *s;
	json_object *v;
	size_t n;

	if (!member_str(o, "ociVersion", "the state", &n, err, errlen))
		return -1;
	if (!(s = member_str(o, "id", "the state", &n, err, errlen)))
		return -1;
	if (!hte_oci_id_valid(s, n))
		return hte_oci_why(err, errlen, "the state: \"id\" is not a container id (1-%u of A-Z a-z 0-9 _ . + -)",
				   HTE_OCI_ID_MAX);
	memcpy(st->id, s, n + 1);
	if (!(s = member_str(o, "status", "the state", &n, err, errlen)))
		return -1;
	if (strcmp(s, "creating") == 0)
		st->stage = HTE_OCI_INJECT;
	else if (strcmp(s, "stopped") == 0)
		st->stage = HTE_OCI_REMOVE;
	else
		return hte_oci_why(err, errlen, "the state: status \"%.32s\" is neither \"creating\" (createRuntime) "
				   "nor \"stopped\" (poststop): the hook runs at those two stages only", s);
	if (!(s = member_str(o, "bundle", "the state", &n, err, errlen)))
		return -1;
	if (n == 0 || s[0] != '/' || n >= sizeof(st->bundle))
		return hte_oci_why(err, errlen, "the state: \"bundle\" is not an absolute path");
	memcpy(st->bundle, s, n + 1);
	if (json_object_object_get_ex(o, "pid", &v) && v) {
		int64_t pid;

		if (!json_object_is_type(v, json_type_int))
			return hte_oci_why(err, errlen, "the state: \"pid\" is not a whole number");
		errno = 0;
		pid = json_object_get_int64(v);
		if (errno || pid < 0 || pid > INT32_MAX)
			return hte_oci_why(err, errlen, "the state: \"pid\" %lld is no process id", (long long)pid);
		st->pid = (long)pid;
	}
	if (st->stage == HTE_OCI_INJECT && st->pid <= 0)
		return hte_oci_why(err, errlen, "the state has no \"pid\" of the container's process");
	return state_annotation(o, st, err, errlen);
}

int hte_oci_state_parse(const char *buf, size_t len, struct hte_oci_state *st, char *err, size_t errlen)
{
	json_object *o;
	int rc;

	memset(st, 0, sizeof(*st));
	if (err && errlen)
		err[0] = '\0';
	if (len > HTE_OCI_STATE_MAX)
		return hte_oci_why(err, errlen, "the state is longer than %u bytes", HTE_OCI_STATE_MAX);
	o = parse_object(buf, len, "the state", err, errlen);
	if (!o)
		return -1;
	rc = state_fields(o, st, err, errlen);
	json_object_put(o);
	if (rc < 0)
		memset(st, 0, sizeof(*st));
	return rc;
}

static int config_namespaces(json_object *o, struct hte_oci_config *c, char *err, size_t errlen)
{
	json_object *linux_, *ns;
	size_t n;

	if (!json_object_object_get_ex(o, "linux", &linux_) || !linux_ ||
	    !json_object_is_type(linux_, json_type_object))
		return 0;
	if (!json_object_object_get_ex(linux_, "namespaces", &ns) || !ns)
		return 0;
	if (!json_object_is_type(ns, json_type_array))
		return hte_oci_why(err, errlen, "config.json: linux.namespaces is not an array");
	n = json_object_array_length(ns);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(ns, i), *t, *p;

		if (!e || !json_object_is_type(e, json_type_object) || !json_object_object_get_ex(e, "type", &t) ||
		    !t || !json_object_is_type(t, json_type_string))
			return hte_oci_why(err, errlen, "config.json: linux.namespaces[%zu] has no type", i);
		if (strcmp(json_object_get_string(t), "mount") != 0)
			continue;
		c->mount_ns = 1;
		if (json_object_object_get_ex(e, "path", &p) && p && json_object_get_string_len(p) > 0)
			c->mount_ns_joined = 1;
	}
	return 0;
}

static int config_fields(json_object *o, struct hte_oci_config *c, char *err, size_t errlen)
{
	json_object *root, *ro;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(o, "root", &root) || !root || !json_object_is_type(root, json_type_object))
		return hte_oci_why(err, errlen, "config.json has no \"root\" object");
	if (!(s = member_str(root, "path", "config.json's root", &n, err, errlen)))
		return -1;
	if (n == 0 || n >= sizeof(c->root))
		return hte_oci_why(err, errlen, "config.json: root.path is empty or too long");
	memcpy(c->root, s, n + 1);
	if (json_object_object_get_ex(root, "readonly", &ro) && ro) {
		if (!json_object_is_type(ro, json_type_boolean))
			return hte_oci_why(err, errlen, "config.json: root.readonly is not true or false");
		c->root_readonly = json_object_get_boolean(ro);
	}
	return config_namespaces(o, c, err, errlen);
}

int hte_oci_config_parse(const char *buf, size_t len, struct hte_oci_config *c, char *err, size_t errlen)
{
	json_object *o;
	int rc;

	memset(c, 0, sizeof(*c));
	if (err && errlen)
		err[0] = '\0';
	if (len > HTE_OCI_CONFIG_MAX)
		return hte_oci_why(err, errlen, "config.json is longer than %u bytes", HTE_OCI_CONFIG_MAX);
	o = parse_object(buf, len, "config.json", err, errlen);
	if (!o)
		return -1;
	rc = config_fields(o, c, err, errlen);
	json_object_put(o);
	if (rc < 0)
		memset(c, 0, sizeof(*c));
	return rc;
}

enum hte_oci_ask hte_oci_decide(int policy, const struct hte_oci_state *st, const char **why)
{
	int one = st->has_annotation && !st->annotation_long && strcmp(st->annotation, "1") == 0;
	int zero = st->has_annotation && !st->annotation_long && strcmp(st->annotation, "0") == 0;

	if (!st->has_annotation) {
		*why = policy == HT_CONF_CONTAINERS_ALL ? "the host's policy is containers = all"
							: "not asked (no annotation " HTE_OCI_ANNOTATION "=1)";
		return policy == HT_CONF_CONTAINERS_ALL ? HTE_OCI_ASKED : HTE_OCI_NOT_ASKED;
	}
	if (policy == HT_CONF_CONTAINERS_OFF) {
		*why = "the host's policy is containers = off";
		return HTE_OCI_POLICY_OFF;
	}
	if (one) {
		*why = "annotated " HTE_OCI_ANNOTATION "=1";
		return HTE_OCI_ASKED;
	}
	if (zero) {
		*why = "annotated " HTE_OCI_ANNOTATION "=0";
		return HTE_OCI_REFUSED;
	}
	*why = "the annotation " HTE_OCI_ANNOTATION " is neither 0 nor 1";
	return HTE_OCI_BAD_ANNOTATION;
}

/* --- ld.so.preload --- */

static int is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ':';
}

static int put(char *out, size_t cap, size_t *at, const char *s, size_t n)
{
	if (*at + n + 2 > cap)
		return -1;
	memcpy(out + *at, s, n);
	*at += n;
	out[(*at)++] = '\n';
	out[*at] = '\0';
	return 0;
}

long hte_preload_list_merge(const char *image, size_t len, const char *ours, char *out, size_t cap,
			    unsigned *kept)
{
	size_t at = 0, i = 0, olen = strlen(ours);

	*kept = 0;
	if (cap == 0)
		return -1;
	out[0] = '\0';
	if (image && len && memchr(image, '\0', len))
		return -1;
	while (image && i < len) {
		size_t s;

		if (image[i] == '#') { /* a comment: to the end of the line */
			while (i < len && image[i] != '\n')
				i++;
			continue;
		}
		if (is_sep(image[i])) {
			i++;
			continue;
		}
		s = i;
		while (i < len && !is_sep(image[i]) && image[i] != '#')
			i++;
		if (i - s == olen && memcmp(image + s, ours, olen) == 0)
			continue;
		if (put(out, cap, &at, image + s, i - s) < 0)
			return -1;
		(*kept)++;
	}
	if (put(out, cap, &at, ours, olen) < 0)
		return -1;
	return (long)at;
}

/* --- the record --- */

static void add_str(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

static void add_opt(json_object *o, const char *key, int has, const char *v)
{
	json_object_object_add(o, key, has ? json_object_new_string(v) : NULL);
}

char *hte_oci_record_json(const struct hte_oci_record *r)
{
	json_object *o = json_object_new_object();
	const char *s;
	char *out = NULL;

	if (!o)
		return NULL;
	add_str(o, "id", r->id);
	json_object_object_add(o, "pid", json_object_new_int64(r->pid));
	json_object_object_add(o, "pid_start", json_object_new_uint64(r->pid_start));
	json_object_object_add(o, "mntns", json_object_new_uint64(r->mntns));
	add_str(o, "userns", r->userns);
	add_str(o, "cgroup", r->cgroup);
	add_str(o, "rootfs", r->rootfs);
	add_str(o, "upperdir", r->upperdir);
	add_opt(o, "annotation", r->has_annotation, r->annotation);
	json_object_object_add(o, "injected", json_object_new_boolean(r->injected));
	add_str(o, "reason", r->reason);
	add_opt(o, "glibc", r->has_glibc, r->glibc);
	add_opt(o, "view", r->has_view, r->view);
	json_object_object_add(o, "time", json_object_new_int64(r->time));
	add_str(o, "policy", r->policy);
	add_str(o, "preload", r->preload);
	json_object_object_add(o, "socket", json_object_new_boolean(r->socket));
	json_object_object_add(o, "kept", json_object_new_int64(r->kept));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s) {
		size_t n = strlen(s);

		out = malloc(n + 2);
		if (out) {
			memcpy(out, s, n);
			memcpy(out + n, "\n", 2);
		}
	}
	json_object_put(o);
	return out;
}

/* Copies the string @key of @o into @out; 1 when it was a string, 0 when null or absent. */
static int get_str(json_object *o, const char *key, char *out, size_t cap)
{
	json_object *v;
	size_t n;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v) || !v || !json_object_is_type(v, json_type_string))
		return 0;
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, json_object_get_string(v), n);
	out[n] = '\0';
	return 1;
}

static int64_t get_int(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v || !json_object_is_type(v, json_type_int))
		return -1;
	return json_object_get_int64(v);
}

static uint64_t get_uint(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_uint64(v);
}

static int get_bool(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && v && json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

int hte_oci_record_parse(const char *buf, size_t len, struct hte_oci_record *r)
{
	json_object *o;
	char err[8];

	memset(r, 0, sizeof(*r));
	if (len > HTE_OCI_RECORD_MAX)
		return -1;
	o = parse_object(buf, len, "record", err, sizeof(err));
	if (!o)
		return -1;
	if (!get_str(o, "id", r->id, sizeof(r->id)) || !hte_oci_id_valid(r->id, strlen(r->id))) {
		json_object_put(o);
		memset(r, 0, sizeof(*r));
		return -1;
	}
	r->pid = (long)get_int(o, "pid");
	r->pid_start = get_uint(o, "pid_start");
	r->mntns = get_uint(o, "mntns");
	get_str(o, "userns", r->userns, sizeof(r->userns));
	get_str(o, "cgroup", r->cgroup, sizeof(r->cgroup));
	get_str(o, "rootfs", r->rootfs, sizeof(r->rootfs));
	get_str(o, "upperdir", r->upperdir, sizeof(r->upperdir));
	r->has_annotation = get_str(o, "annotation", r->annotation, sizeof(r->annotation));
	r->injected = get_bool(o, "injected");
	get_str(o, "reason", r->reason, sizeof(r->reason));
	r->has_glibc = get_str(o, "glibc", r->glibc, sizeof(r->glibc));
	r->has_view = get_str(o, "view", r->view, sizeof(r->view));
	r->time = get_int(o, "time");
	get_str(o, "policy", r->policy, sizeof(r->policy));
	get_str(o, "preload", r->preload, sizeof(r->preload));
	r->socket = get_bool(o, "socket");
	r->kept = (unsigned)(get_int(o, "kept") > 0 ? get_int(o, "kept") : 0);
	json_object_put(o);
	return 0;
}

/* --- /proc texts --- */

int hte_stat_start_time(const char *buf, size_t len, unsigned long long *out)
{
	const char *p = NULL, *end = buf + len;
	unsigned long long v = 0;
	int field = 2;

	/* The command name may hold spaces and ')': the fields start after the last ')'. */
	for (const char *q = buf; q < end; q++)
		if (*q == ')')
			p = q + 1;
	if (!p)
		return -1;
	while (p < end && field < 22) {
		while (p < end && *p == ' ')
			p++;
		if (++field == 22)
			break;
		while (p < end && *p != ' ')
			p++;
	}
	if (field != 22 || p >= end || *p < '0' || *p > '9')
		return -1;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (v > (~0ULL - 9) / 10)
			return -1;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	*out = v;
	return 0;
}

static size_t line_len(const char *buf, size_t len)
{
	const char *nl = memchr(buf, '\n', len);

	return nl ? (size_t)(nl - buf) : len;
}

/* Copies @n bytes of @s into @out, spaces squeezed, control bytes as '?'. */
static void copy_clean(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	int space = 1;

	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		char c = s[i];

		if (c == ' ' || c == '\t') {
			if (!space)
				out[o++] = ' ';
			space = 1;
			continue;
		}
		out[o++] = (unsigned char)c < 0x20 || c == 0x7f ? '?' : c;
		space = 0;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

void hte_userns_name(const char *uid_map, size_t len, char *out, size_t cap)
{
	size_t n = uid_map ? line_len(uid_map, len) : 0;

	copy_clean(uid_map ? uid_map : "", n, out, cap);
	/* The initial namespace's map, and nothing else: the host's own users. */
	if (strcmp(out, "0 0 4294967295") == 0 && (n + 1 >= len || uid_map[n + 1] == '\0'))
		snprintf(out, cap, "host");
}

void hte_cgroup_path(const char *buf, size_t len, char *out, size_t cap)
{
	size_t pos = 0;
	int first = 1;

	out[0] = '\0';
	while (pos < len) {
		size_t n = line_len(buf + pos, len - pos);
		const char *l = buf + pos, *c1 = memchr(l, ':', n), *c2;

		pos += n + 1;
		if (!c1 || !(c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - l))))
			continue;
		/* cgroup v2's line (0::PATH) is the one every controller shares. */
		if ((c1 == l + 1 && l[0] == '0' && c2 == c1 + 1) || first) {
			copy_clean(c2 + 1, n - (size_t)(c2 + 1 - l), out, cap);
			if (c1 == l + 1 && l[0] == '0' && c2 == c1 + 1)
				return;
			first = 0;
		}
	}
}

static unsigned long long mi_number(const char *s, size_t n, int *ok)
{
	unsigned long long v = 0;

	*ok = n > 0 && n < 20;
	for (size_t i = 0; i < n && *ok; i++) {
		if (s[i] < '0' || s[i] > '9')
			*ok = 0;
		else
			v = v * 10 + (unsigned long long)(s[i] - '0');
	}
	return v;
}

/* upperdir= of overlay's super options; commas inside a path are escaped by the kernel. */
static void mi_upperdir(const char *opts, size_t n, char *out, size_t cap)
{
	static const char key[] = "upperdir=";
	size_t i = 0;

	out[0] = '\0';
	while (i < n) {
		size_t e = i;

		while (e < n && opts[e] != ',') {
			if (opts[e] == '\\' && e + 1 < n)
				e++;
			e++;
		}
		if (e - i > sizeof(key) - 1 && memcmp(opts + i, key, sizeof(key) - 1) == 0) {
			if (hte_mount_unescape(opts + i + sizeof(key) - 1, e - i - (sizeof(key) - 1), out, cap) < 0)
				out[0] = '\0';
			return;
		}
		i = e + 1;
	}
}

/* Parses one mountinfo line.  Returns: 0, or -1 when it is not one. */
static int mi_line(const char *l, size_t n, struct hte_mountinfo *m)
{
	const char *p = l, *end = l + n, *f;
	size_t fn;
	int ok;

	memset(m, 0, sizeof(*m));
	if (!hte_mount_field(&p, end, &f, &fn))
		return -1;
	m->id = mi_number(f, fn, &ok);
	if (!ok || !hte_mount_field(&p, end, &f, &fn) || !hte_mount_field(&p, end, &f, &fn)) /* parent, major:minor */
		return -1;
	if (sscanf(f, "%u:%u", &m->major, &m->minor) != 2)
		return -1;
	if (!hte_mount_field(&p, end, &f, &fn) || !hte_mount_field(&p, end, &f, &fn)) /* root, mount point */
		return -1;
	/* The mount point, then its options. */
	if (hte_mount_unescape(f, fn, m->point, sizeof(m->point)) < 0 || !hte_mount_field(&p, end, &f, &fn))
		return -1;
	for (;;) { /* optional fields, up to "-" */
		if (!hte_mount_field(&p, end, &f, &fn))
			return -1;
		if (fn == 1 && f[0] == '-')
			break;
		if (fn > 7 && memcmp(f, "shared:", 7) == 0)
			m->shared = 1;
	}
	if (!hte_mount_field(&p, end, &f, &fn) || fn >= sizeof(m->fstype))
		return -1;
	memcpy(m->fstype, f, fn);
	if (!hte_mount_field(&p, end, &f, &fn)) /* source */
		return -1;
	if (hte_mount_field(&p, end, &f, &fn) && strcmp(m->fstype, "overlay") == 0)
		mi_upperdir(f, fn, m->upperdir, sizeof(m->upperdir));
	return 0;
}

int hte_mountinfo_find(const char *buf, size_t len, unsigned long long id, struct hte_mountinfo *m)
{
	size_t pos = 0;

	while (pos < len) {
		size_t n = line_len(buf + pos, len - pos);

		if (mi_line(buf + pos, n, m) == 0 && m->id == id)
			return 0;
		pos += n + 1;
	}
	memset(m, 0, sizeof(*m));
	return -1;
}

int hte_mountinfo_has_dev(const char *buf, size_t len, unsigned major, unsigned minor)
{
	size_t pos = 0;
	struct hte_mountinfo m;

	while (pos < len) {
		size_t n = line_len(buf + pos, len - pos);

		if (mi_line(buf + pos, n, &m) == 0 && m.major == major && m.minor == minor)
			return 1;
		pos += n + 1;
	}
	return 0;
}

int hte_fdinfo_mnt_id(const char *buf, size_t len, unsigned long long *out)
{
	size_t pos = 0;

	while (pos < len) {
		size_t n = line_len(buf + pos, len - pos);
		const char *l = buf + pos;

		pos += n + 1;
		if (n > 7 && memcmp(l, "mnt_id:", 7) == 0) {
			size_t i = 7;
			int ok;

			while (i < n && (l[i] == ' ' || l[i] == '\t'))
				i++;
			*out = mi_number(l + i, n - i, &ok);
			return ok ? 0 : -1;
		}
	}
	return -1;
}
