/* SPDX-License-Identifier: MIT */
/*
 * hugetext check: for a file, how much of its code can go onto 2 MiB
 * pages and what a relink would add; for a process, how much is there now.
 */
#include "tool.h"

#include <elf.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cover.h"
#include "maps.h"
#include "symbols.h"
#include "sys.h"

static const char check_usage[] =
	"usage: hugetext check [--json] [--symbols] FILE\n"
	"       hugetext check [--json] PID\n"
	"\n"
	"For an ELF FILE: one row per executable segment with the bytes that can go\n"
	"onto 2 MiB pages at run time, and the relink flags that would cover the rest;\n"
	"then whether the page cache can map the code huge, or needs 'edit --align'\n"
	"or a relink for that.\n"
	"For a PID (an argument made of digits only; write ./123 for a file named 123):\n"
	"one row per executable mapping with the bytes on huge pages now.\n"
	"\n"
	"  --json      print {\"regions\": [...]} instead of the table\n"
	"  --symbols   list the functions that fall outside the coverable span\n"
	"  -h, --help  show this help\n";

struct check_opts {
	int json;
	int symbols;
};

static int is_pid(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && n <= 10 && s[n] == '\0';
}

/* --- files --- */

static void print_hex(FILE *out, int width, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	fprintf(out, "%-*s", width, buf);
}

/* What the page cache needs to map a segment's code with 2 MiB pages. */
enum page_cache_need {
	PC_OK,         /* loads at an address congruent with its file offset modulo 2 MiB */
	PC_SMALL,      /* no whole 2 MiB page of the file inside: nothing to map huge */
	PC_EDIT_ALIGN, /* congruent, but the load address is only page-aligned: edit --align */
	PC_RELINK,     /* offset and address differ modulo 2 MiB, or --align refuses the file */
};

static const char *const page_cache_str[] = { "ok", "small", "edit-align", "relink" };

/*
 * The kernel maps a 2 MiB page-cache folio with one PMD only where the
 * address and the file offset agree modulo 2 MiB (and a whole aligned
 * 2 MiB of the file lies inside the mapping).  @why gets --align's
 * refusal when that is why a relink is needed.
 */
static enum page_cache_need page_cache_need(const struct hte_elf *e, const struct hte_seg *s,
					    uint64_t load_align, char *why, size_t len)
{
	uint64_t first = (s->offset + HTE_HUGE - 1) & ~(HTE_HUGE - 1);
	uint64_t orig;

	why[0] = '\0';
	if (first > s->offset + s->filesz || s->offset + s->filesz - first < HTE_HUGE)
		return PC_SMALL;
	if ((s->vaddr - s->offset) % HTE_HUGE != 0)
		return PC_RELINK;
	if (e->type == ET_EXEC || (load_align >= HTE_HUGE && e->load[0].vaddr % HTE_HUGE == 0))
		return PC_OK;
	if (hte_align_check(e, &orig, why, len) < 0)
		return PC_RELINK;
	return PC_EDIT_ALIGN;
}

static void print_page_cache(FILE *out, const char *path, const struct hte_elf *e,
			     const struct hte_file_cover *c)
{
	char why[200];

	for (size_t i = 0; i < c->n; i++) {
		const struct hte_seg *s = c->segs[i];

		switch (page_cache_need(e, s, c->align, why, sizeof(why))) {
		case PC_OK:
		case PC_SMALL:
			break;
		case PC_EDIT_ALIGN:
			fprintf(out, "  Segment %u loads at a multiple of %#llx only, where the page cache cannot map\n"
				"  its code huge; this makes the loaders put it on a 2 MiB boundary:\n"
				"    hugetext edit --align %s\n", s->index, (unsigned long long)c->align, path);
			break;
		case PC_RELINK:
			if (why[0])
				fprintf(out, "  Segment %u loads at a multiple of %#llx only, and edit --align refuses the file\n"
					"  (%s);\n  relinking with -Wl,-zmax-page-size=0x200000 lets the page cache map it huge.\n",
					s->index, (unsigned long long)c->align, why);
			else
				fprintf(out, "  Segment %u's file offset and address differ modulo 2 MiB, so the page cache\n"
					"  cannot map its code huge; relinking with -Wl,-zmax-page-size=0x200000 makes\n"
					"  them agree.\n", s->index);
			break;
		}
	}
}

/*
 * What HUGETEXT_COVER_ENDS=1 adds where the code shares its end pages
 * with read-only data of the file, at any load address and at a 2 MiB
 * boundary (what edit --align gives a position-independent file).
 */
static void print_cover_ends(FILE *out, const char *path, const struct hte_elf *e,
			     const struct hte_file_cover *c)
{
	char h1[32], h2[32];

	fprintf(out, "  With HUGETEXT_COVER_ENDS=1 (the read-only bytes that share the code's end pages\n"
		"  become executable; nothing writable): %s (%.1f%%)%s", hte_human(c->ends_covered, h1, sizeof(h1)),
		hte_percent(c->ends_covered, c->bytes), c->exact ? ".\n" : " guaranteed");
	if (!c->exact)
		fprintf(out, ", %s at best;\n  loaded on a 2 MiB boundary: %s (%.1f%%)%s\n",
			hte_human(c->ends_best, h1, sizeof(h1)), hte_human(c->ends_aligned, h2, sizeof(h2)),
			hte_percent(c->ends_aligned, c->bytes),
			e->type == ET_DYN ? ", which edit --align makes sure of" : "");
	(void)path;
}

void hte_print_file_cover(FILE *out, const char *path, const struct hte_elf *e,
			  const struct hte_file_cover *c)
{
	char h1[32], h2[32], h3[32];

	fprintf(out, "%s: ELF%d %s %s, %zu executable segment%s\n", path, e->elfclass,
		e->msb ? "big-endian" : "little-endian", hte_type_str(e->type), c->n, c->n == 1 ? "" : "s");
	fprintf(out, "  segment  %-18s  %-10s  %-10s  %-9s  %-10s  %7s  flag\n", "vaddr", "offset", "size",
		"align", "coverable", "percent");
	for (size_t i = 0; i < c->n; i++) {
		const struct hte_seg *s = c->segs[i];

		fprintf(out, "  %7u  ", s->index);
		print_hex(out, 18, s->vaddr);
		fputs("  ", out);
		print_hex(out, 10, s->offset);
		fputs("  ", out);
		print_hex(out, 10, s->memsz);
		fputs("  ", out);
		print_hex(out, 9, s->align);
		fputs("  ", out);
		print_hex(out, 10, c->cov[i].covered);
		fprintf(out, "  %6.1f%%  %s\n", hte_percent(c->cov[i].covered, c->cov[i].bytes),
			s->flags & HTE_PF_HUGETLB ? "huge" : "-");
	}
	if (!c->exact)
		fprintf(out, "  The load address is only known to be a multiple of %#llx, so these are the\n"
			"  guaranteed figures; the best placement covers %s.\n",
			(unsigned long long)c->align, hte_human(c->best, h1, sizeof(h1)));
	if (c->covered == c->bytes) {
		fprintf(out, "  All %s of code can go onto 2 MiB pages.\n", hte_human(c->bytes, h1, sizeof(h1)));
	} else {
		fprintf(out, "  %s of %s of code can go onto 2 MiB pages (%.1f%%).\n",
			hte_human(c->covered, h1, sizeof(h1)), hte_human(c->bytes, h2, sizeof(h2)),
			hte_percent(c->covered, c->bytes));
		fprintf(out, "  Relinking with %s\n  would cover all %s (%s more).\n", HTE_RELINK_FLAGS,
			hte_human(c->bytes, h2, sizeof(h2)), hte_human(c->bytes - c->covered, h3, sizeof(h3)));
	}
	if (c->ends_aligned > c->covered || c->ends_covered > c->covered)
		print_cover_ends(out, path, e, c);
	print_page_cache(out, path, e, c);
}

static int outside(const struct hte_sym *s, const struct hte_cover *v)
{
	uint64_t end = s->addr + (s->size ? s->size : 1);

	return v->span_end == 0 || s->addr < v->span_start || end > v->span_end;
}

static void print_name(FILE *out, const char *name, int json)
{
	char *d = hte_demangle(name);

	if (json)
		hte_json_str(out, d ? d : name);
	else
		fputs(d ? d : name, out);
	free(d);
}

/* The functions of one segment outside its span: text or a JSON array. */
static void print_outside(FILE *out, const struct hte_symtab *t, const struct hte_seg *s,
			  const struct hte_cover *v, int json)
{
	size_t count = 0;
	uint64_t bytes = 0;

	if (!json)
		fprintf(out, "\n  Functions of segment %u outside the coverable span [0x%llx, 0x%llx)%s, from %s:\n"
			"  %-18s  %-10s  name\n", s->index, (unsigned long long)v->span_start,
			(unsigned long long)v->span_end, v->exact ? "" : " of the worst load address", t->source,
			"address", "size");
	for (size_t k = 0; k < t->n; k++) {
		const struct hte_sym *y = &t->syms[k];

		if (!outside(y, v))
			continue;
		if (json) {
			fprintf(out, "%s{\"name\": ", count ? ", " : "");
			print_name(out, y->name, 1);
			fprintf(out, ", \"address\": %llu, \"size\": %llu}", (unsigned long long)y->addr,
				(unsigned long long)y->size);
		} else {
			fputs("  ", out);
			print_hex(out, 18, y->addr);
			fputs("  ", out);
			print_hex(out, 10, y->size);
			fputs("  ", out);
			print_name(out, y->name, 0);
			fputc('\n', out);
		}
		count++;
		bytes += y->size;
	}
	if (!json)
		fprintf(out, "  %zu function%s, 0x%llx bytes\n", count, count == 1 ? "" : "s",
			(unsigned long long)bytes);
}

static void free_symbols(struct hte_symtab *tabs, size_t n)
{
	for (size_t i = 0; tabs && i < n; i++)
		hte_symtab_release(&tabs[i]);
	free(tabs);
}

/*
 * The function symbols of every executable segment, read before anything
 * is printed so that a file without symbols gives a message, not half a
 * table.  Returns: a malloc'ed array of c->n tables, or NULL after a message.
 */
static struct hte_symtab *load_symbols(const struct hte_file *f, const struct hte_file_cover *c)
{
	struct hte_symtab *tabs = calloc(c->n, sizeof(*tabs));
	int err = tabs ? 0 : -ENOMEM;

	for (size_t i = 0; i < c->n && err == 0; i++)
		err = hte_functions_in(f->map, f->len, c->segs[i]->vaddr, c->segs[i]->vaddr + c->segs[i]->memsz,
				       &tabs[i]);
	if (err == 0)
		return tabs;
	if (err == -ENOENT)
		hte_error("check", "%s: no symbol table (stripped?): --symbols needs .symtab or .dynsym", f->path);
	else
		hte_error("check", "%s: cannot read the symbol table: %s", f->path, strerror(-err));
	free_symbols(tabs, c->n);
	return NULL;
}

static void print_file_json(FILE *out, const struct hte_file *f, const struct hte_file_cover *c,
			    const struct hte_symtab *tabs)
{
	fputs("{\"regions\": [", out);
	for (size_t i = 0; i < c->n; i++) {
		const struct hte_seg *s = c->segs[i];
		const struct hte_cover *v = &c->cov[i];

		fprintf(out, "%s{\"object\": ", i ? ", " : "");
		hte_json_str(out, f->path);
		fprintf(out, ", \"segment\": %u, \"vaddr\": %llu, \"offset\": %llu, \"bytes\": %llu, "
			"\"align\": %llu, \"huge_bytes\": %llu, \"best_huge_bytes\": %llu, \"exact\": %s, "
			"\"span_start\": %llu, \"span_end\": %llu, \"flag\": %s, \"relink_huge_bytes\": %llu, "
			"\"cover_ends_huge_bytes\": %llu, \"cover_ends_best_huge_bytes\": %llu, "
			"\"cover_ends_aligned_huge_bytes\": %llu",
			s->index, (unsigned long long)s->vaddr, (unsigned long long)s->offset,
			(unsigned long long)v->bytes, (unsigned long long)s->align,
			(unsigned long long)v->covered, (unsigned long long)v->best, v->exact ? "true" : "false",
			(unsigned long long)v->span_start, (unsigned long long)v->span_end,
			s->flags & HTE_PF_HUGETLB ? "true" : "false", (unsigned long long)v->bytes,
			(unsigned long long)v->ends_covered, (unsigned long long)v->ends_best,
			(unsigned long long)v->ends_aligned);
		{
			char why[200];

			fputs(", \"page_cache\": ", out);
			hte_json_str(out, page_cache_str[page_cache_need(&f->elf, s, c->align, why, sizeof(why))]);
		}
		if (tabs) {
			fputs(", \"outside_functions\": [", out);
			print_outside(out, &tabs[i], s, v, 1);
			fputc(']', out);
		}
		fputc('}', out);
	}
	fputs("]}\n", out);
}

static int check_file(const char *path, const struct check_opts *o)
{
	struct hte_symtab *tabs = NULL;
	struct hte_file_cover c;
	struct hte_file f;
	int err;

	if (hte_file_open(&f, path, 0, "check") < 0)
		return HTE_EXIT_FAIL;
	if (f.elf.type != ET_EXEC && f.elf.type != ET_DYN) {
		hte_error("check", "%s: not an executable or shared library (%s ELF file)", path,
			  hte_type_str(f.elf.type));
		hte_file_close(&f);
		return HTE_EXIT_FAIL;
	}
	err = hte_file_cover(&f.elf, &c);
	if (err < 0)
		hte_error("check", "%s: %s", path, err == -ENOENT ? "no executable segment" : strerror(-err));
	else if (o->symbols && !(tabs = load_symbols(&f, &c)))
		err = -1;
	else if (o->json)
		print_file_json(stdout, &f, &c, tabs);
	else {
		hte_print_file_cover(stdout, path, &f.elf, &c);
		for (size_t i = 0; tabs && i < c.n; i++)
			print_outside(stdout, &tabs[i], c.segs[i], &c.cov[i], 0);
	}
	if (tabs)
		free_symbols(tabs, c.n);
	hte_file_cover_release(&c);
	hte_file_close(&f);
	return err < 0 ? HTE_EXIT_FAIL : HTE_EXIT_OK;
}

/* --- processes --- */

struct pid_row {
	struct ht_smap s;
	char object[512];
	int moved;      /* a copy made by a remap, named after its neighbour */
};

static void copy_path(const struct ht_map *m, char *dst, size_t len)
{
	size_t n = m->path_len < len - 1 ? m->path_len : len - 1;

	memcpy(dst, m->path, n);
	dst[n] = '\0';
}

/*
 * A remap leaves anonymous code (or a hugetlbfs file) where the object's
 * code was: no path of its own, or not the object's.  Pseudo-files such
 * as [vdso] are themselves.
 */
static int looks_copied(const struct ht_smap *s)
{
	if (s->map.path_len && s->map.path[0] == '[')
		return 0;
	return s->map.inode == 0 || s->hugetlb > 0;
}

static int names_file(const struct ht_smap *s)
{
	return s->map.inode != 0 && s->hugetlb == 0 && s->map.path_len && s->map.path[0] == '/';
}

/* Names a copied mapping after an adjacent mapping of a file, before or after it. */
static void name_row(struct pid_row *r, const struct ht_smap *prev, const struct ht_smap *next)
{
	copy_path(&r->s.map, r->object, sizeof(r->object));
	if (!looks_copied(&r->s))
		return;
	if (prev && prev->map.end == r->s.map.start && names_file(prev))
		copy_path(&prev->map, r->object, sizeof(r->object));
	else if (next && next->map.start == r->s.map.end && names_file(next))
		copy_path(&next->map, r->object, sizeof(r->object));
	else
		return;
	r->moved = 1;
}

static int pid_rows(const char *buf, size_t len, struct pid_row **rows, size_t *n)
{
	struct ht_smap prev, cur, next;
	size_t pos = 0, cap = 0;
	int have_prev = 0, have_cur, have_next;

	*rows = NULL;
	*n = 0;
	have_cur = ht_smaps_next(buf, len, &pos, &cur);
	while (have_cur) {
		have_next = ht_smaps_next(buf, len, &pos, &next);
		if (cur.map.perms[2] == 'x') {
			if (*n == cap) {
				struct pid_row *p = realloc(*rows, (cap = cap ? cap * 2 : 32) * sizeof(*p));

				if (!p)
					return -ENOMEM;
				*rows = p;
			}
			memset(&(*rows)[*n], 0, sizeof(**rows));
			(*rows)[*n].s = cur;
			name_row(&(*rows)[*n], have_prev ? &prev : NULL, have_next ? &next : NULL);
			(*n)++;
		}
		prev = cur;
		have_prev = 1;
		cur = next;
		have_cur = have_next;
	}
	return 0;
}

static const char *huge_kind(const struct ht_smap *s)
{
	if (s->hugetlb)
		return "hugetlb";
	if (s->anon_huge)
		return "thp";
	if (s->file_pmd)
		return "file-pmd";
	if (s->shmem_pmd)
		return "shmem-pmd";
	return "-";
}

static void print_pid_json(FILE *out, const struct pid_row *rows, size_t n)
{
	fputs("{\"regions\": [", out);
	for (size_t i = 0; i < n; i++) {
		const struct ht_smap *s = &rows[i].s;

		fprintf(out, "%s{\"object\": ", i ? ", " : "");
		hte_json_str(out, rows[i].object);
		fprintf(out, ", \"start\": %llu, \"end\": %llu, \"bytes\": %llu, \"huge_bytes\": %llu, "
			"\"thp\": %llu, \"hugetlb\": %llu, \"file_pmd\": %llu, \"shmem_pmd\": %llu, \"moved\": %s}",
			(unsigned long long)s->map.start, (unsigned long long)s->map.end,
			(unsigned long long)(s->map.end - s->map.start), (unsigned long long)ht_smap_huge_bytes(s),
			(unsigned long long)s->anon_huge, (unsigned long long)s->hugetlb,
			(unsigned long long)s->file_pmd, (unsigned long long)s->shmem_pmd,
			rows[i].moved ? "true" : "false");
	}
	fputs("]}\n", out);
}

static void print_pid_text(FILE *out, const char *pid, const char *exe, const struct pid_row *rows, size_t n)
{
	uint64_t total = 0, huge = 0;
	char h1[32], h2[32];

	fprintf(out, "pid %s (", pid);
	hte_text_name(out, exe);
	fprintf(out, "): %zu executable mapping%s\n", n, n == 1 ? "" : "s");
	fprintf(out, "  %-18s  %-18s  %10s  %10s  %-9s  object\n", "start", "end", "size", "huge", "kind");
	for (size_t i = 0; i < n; i++) {
		const struct ht_smap *s = &rows[i].s;
		uint64_t b = s->map.end - s->map.start, h = ht_smap_huge_bytes(s);

		fputs("  ", out);
		print_hex(out, 18, s->map.start);
		fputs("  ", out);
		print_hex(out, 18, s->map.end);
		fprintf(out, "  %10s  %10s  %-9s  ", hte_human(b, h1, sizeof(h1)), hte_human(h, h2, sizeof(h2)),
			huge_kind(s));
		hte_text_name(out, rows[i].object[0] ? rows[i].object : "[anonymous]");
		fputs(rows[i].moved ? " (moved)\n" : "\n", out);
		total += b;
		huge += h;
	}
	fprintf(out, "  %s of %s of code on huge pages (%.1f%%).\n", hte_human(huge, h1, sizeof(h1)),
		hte_human(total, h2, sizeof(h2)), hte_percent(huge, total));
}

static int check_pid(const char *pid, const struct check_opts *o)
{
	char path[64], exe[512];
	struct pid_row *rows;
	size_t len, n;
	ssize_t elen;
	char *buf;
	int err;

	snprintf(path, sizeof(path), "/proc/%s/smaps", pid);
	err = ht_sys_read_file(path, &buf, &len);
	if (err < 0) {
		if (err == -ENOENT)
			hte_error("check", "no process %s (%s does not exist)", pid, path);
		else
			hte_error("check", "%s: cannot read: %s", path, strerror(-err));
		return HTE_EXIT_FAIL;
	}
	err = pid_rows(buf, len, &rows, &n);
	if (err < 0) {
		hte_error("check", "%s: %s", path, strerror(-err));
		free(buf);
		free(rows);
		return HTE_EXIT_FAIL;
	}
	snprintf(path, sizeof(path), "/proc/%s/exe", pid);
	elen = readlink(path, exe, sizeof(exe) - 1);
	exe[elen > 0 ? elen : 0] = '\0';
	if (o->json)
		print_pid_json(stdout, rows, n);
	else
		print_pid_text(stdout, pid, elen > 0 ? exe : "?", rows, n);
	free(rows);
	free(buf);
	return HTE_EXIT_OK;
}

int hte_cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "symbols", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct check_opts o = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': o.json = 1; break;
		case 's': o.symbols = 1; break;
		case 'h': fputs(check_usage, stdout); return HTE_EXIT_OK;
		default: fputs(check_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		hte_error("check", optind >= argc ? "no FILE or PID given" : "one FILE or PID at a time");
		fputs(check_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	if (is_pid(argv[optind])) {
		if (o.symbols) {
			hte_error("check", "--symbols works on a FILE, not a PID");
			return HTE_EXIT_USAGE;
		}
		return check_pid(argv[optind], &o);
	}
#ifndef HTE_HAVE_SYMBOLS
	if (o.symbols) {
		hte_error("check", "--symbols is not built in (meson setup -Dsymbols=enabled)");
		return HTE_EXIT_FAIL;
	}
#endif
	return check_file(argv[optind], &o);
}
