/* SPDX-License-Identifier: MIT */
/*
 * hugetext status, the containers: the OCI hook's records (which
 * containers asked, what each got or why not) joined with the processes by
 * mount namespace, and each container's code on huge pages, shared (the
 * page cache's 2 MiB pages, the shared cache, a huge tmpfs) or copied into
 * its own memory.  Pure: status.c reads the records and the processes.
 */
#include "tool.h"
#include "status.h"
#include "ocihook.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int hte_status_add_container(struct hte_status *st, const struct hte_oci_record *rec, int running)
{
	struct hte_container *c;

	if (st->nctrs == st->cap_ctrs) {
		size_t cap = st->cap_ctrs ? 2 * st->cap_ctrs : 16;
		void *p = realloc(st->ctrs, cap * sizeof(*st->ctrs));

		if (!p)
			return -1;
		st->ctrs = p;
		st->cap_ctrs = cap;
	}
	c = &st->ctrs[st->nctrs];
	memset(c, 0, sizeof(*c));
	c->rec = malloc(sizeof(*c->rec));
	if (!c->rec)
		return -1;
	memcpy(c->rec, rec, sizeof(*rec));
	c->running = running;
	st->nctrs++;
	return 0;
}

void hte_status_group(struct hte_status *st)
{
	for (size_t k = 0; k < st->nctrs; k++) {
		struct hte_container *c = &st->ctrs[k];

		c->nprocs = c->npreload = 0;
		c->code = 0;
		memset(c->huge, 0, sizeof(c->huge));
	}
	for (size_t i = 0; i < st->nprocs; i++) {
		struct hte_proc *p = &st->procs[i];

		p->container = 0;
		if (!p->mntns)
			continue;
		/* A gone container's namespace number may be another's now: running ones only. */
		for (size_t k = 0; k < st->nctrs && !p->container; k++) {
			struct hte_container *c = &st->ctrs[k];

			if (!c->running || c->rec->mntns != p->mntns)
				continue;
			p->container = k + 1;
			c->nprocs++;
			c->npreload += p->preload != 0;
			c->code += p->code;
			for (int h = 0; h < HTE_HOW_N; h++)
				c->huge[h] += p->huge[h];
		}
	}
}

uint64_t hte_container_copied(const struct hte_container *c)
{
	return c->huge[HTE_HOW_THP] + c->huge[HTE_HOW_HUGETLB] + c->huge[HTE_HOW_FOLIOS];
}

uint64_t hte_container_shared(const struct hte_container *c)
{
	return c->huge[HTE_HOW_PAGE_CACHE] + c->huge[HTE_HOW_SHARED_CACHE] + c->huge[HTE_HOW_TMPFS];
}

/* "io.hugetext/enable=1", "the policy (all)": what made the hook look at it. */
static void asked_by(FILE *f, const struct hte_oci_record *r)
{
	if (r->has_annotation) {
		fputs(HTE_OCI_ANNOTATION "=", f);
		hte_text_name(f, r->annotation);
	} else {
		fputs("containers = ", f);
		hte_text_name(f, r->policy[0] ? r->policy : "?");
	}
}

void hte_status_text_containers(FILE *f, const struct hte_status *st)
{
	if (st->records_unread) {
		fprintf(f, "Containers: the OCI hook's records (%s) are root's to read\n", st->records);
		return;
	}
	if (!st->nctrs)
		return;
	fprintf(f, "Containers the OCI hook looked at (%s): %zu\n", st->records, st->nctrs);
	for (size_t k = 0; k < st->nctrs; k++) {
		const struct hte_container *c = &st->ctrs[k];
		char a[32], b[32], s[32], p[32];
		int any = 0;

		fprintf(f, "  %.12s  %s, asked by ", c->rec->id, c->running ? "running" : "gone");
		asked_by(f, c->rec);
		fputs(": ", f);
		hte_text_name(f, c->rec->reason);
		fputc('\n', f);
		if (!c->running)
			continue;
		hte_human(c->code, a, sizeof(a));
		hte_human(hte_container_copied(c) + hte_container_shared(c), b, sizeof(b));
		hte_human(hte_container_shared(c), s, sizeof(s));
		hte_human(hte_container_copied(c), p, sizeof(p));
		fprintf(f, "      %zu process%s listed (%zu with the preload): %s of code, %s on huge pages, %s shared, "
			"%s copied", c->nprocs, c->nprocs == 1 ? "" : "es", c->npreload, a, b, s, p);
		for (int h = 0; h < HTE_HOW_N; h++) {
			if (!c->huge[h])
				continue;
			fprintf(f, "%s%s %s", any ? ", " : "  [", hte_how_name((enum hte_how)h),
				hte_human(c->huge[h], a, sizeof(a)));
			any = 1;
		}
		fputs(any ? "]\n" : "\n", f);
	}
}

static void json_opt(FILE *f, int has, const char *s)
{
	if (has)
		hte_json_str(f, s);
	else
		fputs("null", f);
}

static void json_container(FILE *f, const struct hte_status *st, size_t k)
{
	const struct hte_container *c = &st->ctrs[k];
	const struct hte_oci_record *r = c->rec;
	int first = 1;

	fputs("{\"id\": ", f);
	hte_json_str(f, r->id);
	fprintf(f, ", \"running\": %s, \"pid\": %ld, \"mntns\": %llu, \"userns\": ", c->running ? "true" : "false",
		r->pid, r->mntns);
	hte_json_str(f, r->userns);
	fputs(", \"cgroup\": ", f);
	hte_json_str(f, r->cgroup);
	fputs(", \"rootfs\": ", f);
	hte_json_str(f, r->rootfs);
	fputs(", \"annotation\": ", f);
	json_opt(f, r->has_annotation, r->annotation);
	fputs(", \"policy\": ", f);
	hte_json_str(f, r->policy);
	fprintf(f, ", \"injected\": %s, \"reason\": ", r->injected ? "true" : "false");
	hte_json_str(f, r->reason);
	fputs(", \"glibc\": ", f);
	json_opt(f, r->has_glibc, r->glibc);
	fputs(", \"view\": ", f);
	json_opt(f, r->has_view, r->view);
	fprintf(f, ", \"socket\": %s, \"time\": %lld, \"processes\": [", r->socket ? "true" : "false", r->time);
	for (size_t i = 0; i < st->nprocs; i++) {
		if (st->procs[i].container != k + 1)
			continue;
		fprintf(f, "%s%ld", first ? "" : ", ", st->procs[i].pid);
		first = 0;
	}
	fprintf(f, "], \"preload_processes\": %zu, \"code_bytes\": %" PRIu64 ", \"huge_bytes\": %" PRIu64
		", \"shared_bytes\": %" PRIu64 ", \"copied_bytes\": %" PRIu64 ", \"huge\": {", c->npreload, c->code,
		hte_container_copied(c) + hte_container_shared(c), hte_container_shared(c), hte_container_copied(c));
	for (int h = 0; h < HTE_HOW_N; h++)
		fprintf(f, "%s\"%s\": %" PRIu64, h ? ", " : "", hte_how_name((enum hte_how)h), c->huge[h]);
	fputs("}}", f);
}

/* Only where the hook has records: a machine without containers keeps its output as it was. */
void hte_status_json_containers(FILE *f, const struct hte_status *st)
{
	if (!st->nctrs)
		return;
	fputs(",\n  \"containers\": [", f);
	for (size_t k = 0; k < st->nctrs; k++) {
		fputs(k ? ",\n    " : "\n    ", f);
		json_container(f, st, k);
	}
	fputs("\n  ]", f);
}

static void prom_id(FILE *f, const char *name, const struct hte_container *c)
{
	fprintf(f, "%s{id=\"%s\"", name, c->rec->id); /* ids are [A-Za-z0-9_.+-]: nothing to escape */
}

void hte_status_prom_containers(FILE *f, const struct hte_status *st)
{
	if (!st->nctrs)
		return;
	fputs("# HELP hugetext_container_injected Whether the OCI hook gave a running container the preload.\n"
	      "# TYPE hugetext_container_injected gauge\n", f);
	for (size_t k = 0; k < st->nctrs; k++) {
		if (!st->ctrs[k].running)
			continue;
		prom_id(f, "hugetext_container_injected", &st->ctrs[k]);
		fprintf(f, "} %d\n", st->ctrs[k].rec->injected ? 1 : 0);
	}
	fputs("# HELP hugetext_container_huge_bytes Bytes of a container's code on huge pages, by how they got there.\n"
	      "# TYPE hugetext_container_huge_bytes gauge\n", f);
	for (size_t k = 0; k < st->nctrs; k++) {
		if (!st->ctrs[k].running)
			continue;
		for (int h = 0; h < HTE_HOW_N; h++) {
			prom_id(f, "hugetext_container_huge_bytes", &st->ctrs[k]);
			fprintf(f, ",how=\"%s\"} %" PRIu64 "\n", hte_how_name((enum hte_how)h), st->ctrs[k].huge[h]);
		}
	}
}
