/*
 * A program whose code segment has partial 2 MiB pages at both ends, shared
 * with its read-only neighbours: linked at 0x400000 (not PIE), 5 MiB of
 * code after its ELF headers, then 1.5 MiB of .rodata, then data.  Prints,
 * counted here independently of the library:
 *   sum X             over all of the code
 *   compared N, same S: S=1 when every byte of its read-only segments
 *                     (headers, code, .rodata) equals its file's
 *   code_bytes N      the code segment's size
 *   code_huge_kb N    kB of huge pages in the mappings over the code
 *   rodata_perms P    the maps' permissions over .rodata's first page
 *   data X            a write to its data still works
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigtext.h"
#include "smaps-count.h"

/* Non-zero first and last bytes keep it in .rodata, not .bss. */
__attribute__((used)) static const unsigned char table[3 << 19] = { [0] = 1, [(3 << 19) - 1] = 2 };
static volatile int data_word = 7;

struct seen {
	FILE *exe;
	size_t compared;
	int same;
	uintptr_t code_lo, code_hi;
};

/*
 * Whether @n bytes at @mem equal @buf.  A byte loop the address sanitizer
 * leaves alone: the segments hold its redzones around globals, which are
 * the program's own bytes here and match the file like the rest.
 */
__attribute__((no_sanitize_address)) static int same_bytes(const char *buf, const volatile char *mem, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != mem[i])
			return 0;
	return 1;
}

static int check_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct seen *s = arg;
	char *buf;

	(void)size;
	if (info->dlpi_name[0])
		return 1; /* the main program comes first */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W))
			continue;
		if (ph->p_flags & PF_X) {
			s->code_lo = info->dlpi_addr + ph->p_vaddr;
			s->code_hi = s->code_lo + ph->p_memsz;
		}
		buf = malloc(ph->p_filesz);
		if (!buf || fseek(s->exe, (long)ph->p_offset, SEEK_SET) != 0 ||
		    fread(buf, 1, ph->p_filesz, s->exe) != ph->p_filesz ||
		    !same_bytes(buf, (const volatile char *)(info->dlpi_addr + ph->p_vaddr), ph->p_filesz))
			s->same = 0;
		s->compared += ph->p_filesz;
		free(buf);
	}
	return 1;
}

static void print_perms(const void *at)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], perms[8] = "?";
	unsigned long a, b;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) == 3 && a <= (unsigned long)at &&
		    (unsigned long)at < b)
			break;
	if (f)
		fclose(f);
	printf("rodata_perms %s\n", perms);
}

int main(void)
{
	struct seen s = { fopen("/proc/self/exe", "rb"), 0, 1, 0, 0 };

	printf("sum %lu %d\n", bigtext_sum(3), table[0] + table[sizeof(table) - 1]);
	if (!s.exe)
		return 1;
	dl_iterate_phdr(check_object, &s);
	fclose(s.exe);
	printf("compared %zu\nsame %d\n", s.compared, s.same);
	printf("code_bytes %lu\n", (unsigned long)(s.code_hi - s.code_lo));
	printf("code_huge_kb %lu\n", huge_kb_in((void *)s.code_lo, (void *)s.code_hi));
	print_perms(table);
	data_word += 1;
	printf("data %d\n", data_word);
	return 0;
}
