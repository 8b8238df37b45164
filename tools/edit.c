/* SPDX-License-Identifier: MIT */
/*
 * hugetext edit: libhugetlbfs's hugeedit, on libelf, refusing what it
 * cannot read instead of crashing on it.
 */
#include "tool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char edit_usage[] =
	"usage: hugetext edit [--text] [--data] [--disable] [--quiet] FILE...\n"
	"\n"
	"Without an option, list the loadable segments of each FILE and whether\n"
	"each defaults to huge or base pages (libhugetlbfs's PF_LINUX_HUGETLB bit).\n"
	"\n"
	"  --text      text segments (r-x, all from the file) default to huge pages\n"
	"  --data      data segments (rw-) default to huge pages\n"
	"  --disable   no segment defaults to huge pages\n"
	"  -q, --quiet do not list the segments after an edit\n"
	"  -h, --help  show this help\n"
	"\n"
	"Only p_flags bytes change, in place; a file that cannot be read as ELF is\n"
	"left untouched.  With --text, the hugetext preload also moves a shared\n"
	"library's code without HUGETEXT_MATCH.\n";

static void perms(uint32_t flags, char out[4])
{
	out[0] = flags & 4 ? 'r' : '-';
	out[1] = flags & 2 ? 'w' : '-';
	out[2] = flags & 1 ? 'x' : '-';
	out[3] = '\0';
}

void hte_print_listing(FILE *out, const char *path, const struct hte_elf *e, const char *note)
{
	fprintf(out, "%s: ELF%d %s %s, %zu loadable segment%s%s%s\n", path, e->elfclass,
		e->msb ? "big-endian" : "little-endian", hte_type_str(e->type), e->nload,
		e->nload == 1 ? "" : "s", note ? ", " : "", note ? note : "");
	if (e->nload == 0)
		return;
	fprintf(out, "  segment  perms  %-18s  %-18s  kind  pages\n", "vaddr", "memsz");
	for (size_t i = 0; i < e->nload; i++) {
		const struct hte_seg *s = &e->load[i];
		char p[4], va[24], sz[24];

		perms(s->flags, p);
		snprintf(va, sizeof(va), "0x%llx", (unsigned long long)s->vaddr);
		snprintf(sz, sizeof(sz), "0x%llx", (unsigned long long)s->memsz);
		fprintf(out, "  %7u  %-5s  %-18s  %-18s  %-4s  %s\n", s->index, p, va, sz,
			hte_seg_is_text(s) ? "text" : hte_seg_is_data(s) ? "data" : "-",
			s->flags & HTE_PF_HUGETLB ? "huge" : "base");
	}
}

/* Prints one listing, after a blank line when another came before. */
static void listing(const char *path, const struct hte_elf *e, const char *note, int *printed)
{
	if ((*printed)++)
		putchar('\n');
	hte_print_listing(stdout, path, e, note);
}

static int edit_one(const char *path, unsigned opts, int quiet, int *printed)
{
	struct hte_file f;
	char note[64];
	long changed;

	if (hte_file_open(&f, path, opts != 0, "edit") < 0)
		return HTE_EXIT_FAIL;
	if (!opts) {
		listing(path, &f.elf, NULL, printed);
		hte_file_close(&f);
		return HTE_EXIT_OK;
	}
	changed = hte_file_edit(&f, opts, "edit");
	if (changed >= 0 && !quiet) {
		if (changed)
			snprintf(note, sizeof(note), "%ld changed", changed);
		else
			snprintf(note, sizeof(note), "already so, not written");
		listing(path, &f.elf, note, printed);
	}
	hte_file_close(&f);
	return changed < 0 ? HTE_EXIT_FAIL : HTE_EXIT_OK;
}

int hte_cmd_edit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "text", no_argument, NULL, 't' },
		{ "data", no_argument, NULL, 'd' },
		{ "disable", no_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned opts = 0;
	int quiet = 0, printed = 0, c, status = HTE_EXIT_OK;

	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case 't': opts |= HTE_EDIT_TEXT; break;
		case 'd': opts |= HTE_EDIT_DATA; break;
		case 'D': opts |= HTE_EDIT_DISABLE; break;
		case 'q': quiet = 1; break;
		case 'h': fputs(edit_usage, stdout); return HTE_EXIT_OK;
		default: fputs(edit_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if ((opts & HTE_EDIT_DISABLE) && opts != HTE_EDIT_DISABLE) {
		hte_error("edit", "--disable cannot be combined with --text or --data");
		return HTE_EXIT_USAGE;
	}
	if (optind >= argc) {
		hte_error("edit", "no FILE given");
		fputs(edit_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++)
		if (edit_one(argv[i], opts, quiet, &printed) != HTE_EXIT_OK)
			status = HTE_EXIT_FAIL;
	return status;
}
