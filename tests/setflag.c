/*
 * Test helper: copies an ELF64 file and sets PF_LINUX_HUGETLB (0x00100000)
 * on its executable PT_LOAD segments, as libhugetlbfs's hugeedit --text
 * does.  Only for files this build made; no checks beyond the basics.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	FILE *in, *out;
	static char buf[64 << 20];
	size_t n;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;

	if (argc != 3 || !(in = fopen(argv[1], "rb")))
		return 2;
	n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	if (n < sizeof(*eh) || memcmp(buf, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > n)
		return 1;
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(buf + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			ph->p_flags |= 0x00100000;
	}
	if (!(out = fopen(argv[2], "wb")) || fwrite(buf, 1, n, out) != n)
		return 1;
	return fclose(out) != 0;
}
