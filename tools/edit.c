/* SPDX-License-Identifier: MIT */
/*
 * hugetext edit: libhugetlbfs's hugeedit, on libelf, refusing what it
 * cannot read instead of crashing on it; and --align, the p_align that
 * makes the loaders put code where the page cache can map it huge.
 */
#include "tool.h"

#include <elf.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cover.h"

static const char edit_usage[] =
	"usage: hugetext edit [--text] [--data] [--disable] [--quiet] FILE...\n"
	"       hugetext edit --align [--disable] [--quiet] FILE...\n"
	"\n"
	"Without an option, list the loadable segments of each FILE and whether\n"
	"each defaults to huge or base pages (libhugetlbfs's PF_LINUX_HUGETLB bit).\n"
	"\n"
	"  --text      text segments (r-x, all from the file) default to huge pages\n"
	"  --data      data segments (rw-) default to huge pages\n"
	"  --disable   no segment defaults to huge pages\n"
	"  --align     raise p_align of executable segments whose file offset agrees\n"
	"              with their address modulo 2 MiB to 2 MiB: ld.so and the kernel\n"
	"              then load the file on a 2 MiB boundary, where the page cache's\n"
	"              2 MiB pages of its code can be mapped huge\n"
	"  --align --disable  put the original p_align back\n"
	"  -q, --quiet do not list the segments after an edit\n"
	"  -h, --help  show this help\n"
	"\n"
	"Only p_flags bytes (p_align bytes with --align) change, in place; a file\n"
	"that cannot be read as ELF is left untouched.  With --text, the hugetext\n"
	"preload also moves a shared library's code without HUGETEXT_MATCH.\n";

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

/* --- --align --- */

/*
 * Opens @path for --align, refusing a symbolic link: the edit is in place,
 * and through a link it would change a file the command line does not
 * name (a system library instead of one's copy, say).  The inode opened
 * must be the one lstat() saw, or a link was swapped in meanwhile.
 */
static int open_unlinked(struct hte_file *f, const char *path)
{
	struct stat ln, st;
	int seen = lstat(path, &ln) == 0;

	if (seen && S_ISLNK(ln.st_mode)) {
		hte_error("edit", "%s: is a symbolic link; --align edits in place, so give the file itself "
			  "(readlink -f)", path);
		return -1;
	}
	if (hte_file_open(f, path, 1, "edit") < 0)
		return -1;
	if (!seen || fstat(f->fd, &st) < 0 || st.st_dev != ln.st_dev || st.st_ino != ln.st_ino) {
		hte_error("edit", "%s: replaced while being opened, left alone", path);
		hte_file_close(f);
		return -1;
	}
	return 0;
}

static void seg_line(FILE *out, const struct hte_seg *s)
{
	char p[4];

	perms(s->flags, p);
	fprintf(out, "  segment %u (%s, offset 0x%llx, vaddr 0x%llx): ", s->index, p,
		(unsigned long long)s->offset, (unsigned long long)s->vaddr);
}

/* One line per executable segment: what --align did or why it did not. */
static void align_lines(FILE *out, const struct hte_elf *before, const struct hte_elf *after)
{
	for (size_t i = 0; i < before->nload; i++) {
		const struct hte_seg *s = &before->load[i];
		uint64_t now = after->load[i].align;
		enum hte_align_seg v = hte_align_segment(s);

		if (v == HTE_ALIGN_KEEP)
			continue;
		seg_line(out, s);
		if (v == HTE_ALIGN_INCONGRUENT)
			fprintf(out, "left alone: offset and address differ by %#llx modulo 2 MiB "
				"(relink with -Wl,-zmax-page-size=0x200000)\n",
				(unsigned long long)((s->vaddr - s->offset) % HTE_ALIGN_HUGE));
		else if (now == s->align)
			fprintf(out, "p_align %#llx, unchanged\n", (unsigned long long)now);
		else
			fprintf(out, "p_align %#llx, was %#llx\n", (unsigned long long)now,
				(unsigned long long)s->align);
	}
}

static int align_one(const char *path, int undo, int quiet, int *printed)
{
	size_t raise = 0, done = 0, incongruent = 0;
	struct hte_elf before;
	struct hte_file f;
	char why[200];
	uint64_t orig;
	long changed;

	if (open_unlinked(&f, path) < 0)
		return HTE_EXIT_FAIL;
	if (hte_align_check(&f.elf, &orig, why, sizeof(why)) < 0) {
		hte_error("edit", "%s: %s; left untouched", path, why);
		hte_file_close(&f);
		return HTE_EXIT_FAIL;
	}
	for (size_t i = 0; i < f.elf.nload; i++) {
		enum hte_align_seg v = hte_align_segment(&f.elf.load[i]);

		raise += v == HTE_ALIGN_RAISE;
		done += v == HTE_ALIGN_DONE;
		incongruent += v == HTE_ALIGN_INCONGRUENT;
	}
	if (!undo && raise + done == 0 && !hte_align_loads_huge(&f.elf)) {
		hte_error("edit", "%s: %s; left untouched", path, incongruent ?
			  "no executable segment has its file offset and address agreeing modulo 2 MiB" :
			  "no executable segment");
		align_lines(stderr, &f.elf, &f.elf);
		hte_file_close(&f);
		return HTE_EXIT_FAIL;
	}
	before = f.elf;
	before.load = malloc((f.elf.nload ? f.elf.nload : 1) * sizeof(*before.load));
	if (!before.load) {
		hte_error("edit", "%s: out of memory", path);
		hte_file_close(&f);
		return HTE_EXIT_FAIL;
	}
	memcpy(before.load, f.elf.load, f.elf.nload * sizeof(*before.load));
	changed = hte_file_edit(&f, undo ? HTE_EDIT_UNALIGN : HTE_EDIT_ALIGN, "edit");
	if (changed >= 0 && !quiet) {
		if ((*printed)++)
			putchar('\n');
		if (changed == 0)
			printf("%s: %s, not written\n", path, undo ? "no p_align of 2 MiB to put back" :
			       "already loads on a 2 MiB boundary");
		else if (undo)
			printf("%s: p_align %#llx put back on %ld segment%s\n", path, (unsigned long long)orig,
			       changed, changed == 1 ? "" : "s");
		else
			printf("%s: %ld segment%s now load%s on a 2 MiB boundary (p_align was %#llx; "
			       "--align --disable puts it back)\n", path, changed, changed == 1 ? "" : "s",
			       changed == 1 ? "s" : "", (unsigned long long)orig);
		align_lines(stdout, &before, &f.elf);
	}
	free(before.load);
	hte_file_close(&f);
	return changed < 0 ? HTE_EXIT_FAIL : HTE_EXIT_OK;
}

int hte_cmd_edit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "text", no_argument, NULL, 't' },
		{ "data", no_argument, NULL, 'd' },
		{ "disable", no_argument, NULL, 'D' },
		{ "align", no_argument, NULL, 'a' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned opts = 0;
	int quiet = 0, printed = 0, align = 0, c, status = HTE_EXIT_OK;

	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case 't': opts |= HTE_EDIT_TEXT; break;
		case 'd': opts |= HTE_EDIT_DATA; break;
		case 'D': opts |= HTE_EDIT_DISABLE; break;
		case 'a': align = 1; break;
		case 'q': quiet = 1; break;
		case 'h': fputs(edit_usage, stdout); return HTE_EXIT_OK;
		default: fputs(edit_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (align && (opts & (HTE_EDIT_TEXT | HTE_EDIT_DATA))) {
		hte_error("edit", "--align cannot be combined with --text or --data");
		return HTE_EXIT_USAGE;
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
		if ((align ? align_one(argv[i], opts != 0, quiet, &printed) :
			     edit_one(argv[i], opts, quiet, &printed)) != HTE_EXIT_OK)
			status = HTE_EXIT_FAIL;
	return status;
}
