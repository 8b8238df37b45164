/*
 * The ELF checks of `hugetext edit` and `hugetext check`:
 * hte_check_buffer() on any bytes, then hte_edit_table() with every option
 * (hugeedit's flags, and --align with and without --disable) on the program
 * header table it accepted.
 */
#include "elfcheck.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hte_elf e;
	char *buf = exact_copy(data, size);

	if (!buf)
		return 0;
	memset(&e, 0, sizeof(e));
	if (hte_check_buffer(size ? buf : NULL, size, &e) == HTE_OK) {
		PROPERTY(e.elfclass == 32 || e.elfclass == 64);
		PROPERTY(e.phentsize == 0 || e.phnum <= size / e.phentsize);
		size_t tlen = e.phnum * e.phentsize;
		/* An empty table may point anywhere; a real one lies in the file. */
		PROPERTY(tlen == 0 || (e.phoff <= size && tlen <= size - e.phoff));
		for (size_t i = 0; i < e.nload; i++) {
			const struct hte_seg *s = &e.load[i];
			PROPERTY(s->offset <= size && s->filesz <= size - s->offset);
			PROPERTY(s->filesz <= s->memsz);
			PROPERTY(s->flags_at + 4 <= size);
		}
		unsigned char *table = malloc(tlen ? tlen : 1), *orig = malloc(tlen ? tlen : 1);
		for (unsigned opts = 0; table && orig && opts <= 7; opts++) {
			size_t first = 0, end = 0;

			if (tlen)
				memcpy(table, buf + e.phoff, tlen);
			memcpy(orig, table, tlen);
			long n = hte_edit_table(&e, opts, table, tlen, &first, &end);
			PROPERTY(n >= 0 && (size_t)n <= e.nload);
			PROPERTY(first <= end && end <= tlen);
			/* Only p_flags fields change, and only inside [first, end). */
			PROPERTY(memcmp(table, orig, first) == 0);
			PROPERTY(memcmp(table + end, orig + end, tlen - end) == 0);
			if (n == 0)
				PROPERTY(memcmp(table, orig, tlen) == 0);
			PROPERTY(hte_edit_table(&e, opts, table, tlen + 1, &first, &end) == -1);
		}
		/*
		 * --align and --align --disable: refused (-1) or a change inside
		 * the table; an accepted --align is undone byte for byte.
		 */
		for (int k = 0; table && orig && k < 2; k++) {
			unsigned opts = k ? HTE_EDIT_UNALIGN : HTE_EDIT_ALIGN;
			size_t first = 0, end = 0;

			if (tlen)
				memcpy(table, buf + e.phoff, tlen);
			memcpy(orig, table, tlen);
			long n = hte_edit_table(&e, opts, table, tlen, &first, &end);
			PROPERTY(n >= -1 && (n < 0 || (size_t)n <= e.nload));
			if (n <= 0) {
				PROPERTY(memcmp(table, orig, tlen) == 0);
				continue;
			}
			PROPERTY(first <= end && end <= tlen);
			PROPERTY(memcmp(table, orig, first) == 0);
			PROPERTY(memcmp(table + end, orig + end, tlen - end) == 0);
		}
		free(table);
		free(orig);
	} else {
		PROPERTY(e.error != HTE_OK && strlen(hte_error_str(e.error)) > 0);
	}
	hte_elf_release(&e);
	hte_elf_release(&e);
	free(buf);
	return 0;
}
