/*
 * The /proc/self/smaps reader: ht_smaps_next(), ht_smaps_huge_in(), and
 * the pagemap check.  Input: 16 bytes of control (the range to count),
 * then smaps text.
 */
#include "fuzz.h"
#include "maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t lo = take(&data, &size, 8), width = take(&data, &size, 8);
	char *buf = exact_copy(data, size);
	struct ht_smap s;
	size_t pos = 0, prev = 0, n = 0;
	uintptr_t first = 0, last = 0;

	if (!buf)
		return 0;
	while (ht_smaps_next(buf, size, &pos, &s)) {
		PROPERTY(pos > prev && pos <= size);
		PROPERTY(s.map.start < s.map.end);
		PROPERTY(s.map.path >= buf && (size_t)(s.map.path - buf) + s.map.path_len <= size);
		if (!n++)
			first = s.map.start;
		last = s.map.end;
		(void)ht_smap_huge_bytes(&s);
		prev = pos;
	}
	/* Over the whole text, over the range of the entries, and over any range. */
	(void)ht_smaps_huge_in(buf, size, 0, UINTPTR_MAX);
	if (n)
		(void)ht_smaps_huge_in(buf, size, first, last);
	(void)ht_smaps_huge_in(buf, size, (uintptr_t)lo, (uintptr_t)(lo + width));
	(void)ht_pagemap_clean((const uint64_t *)(void *)buf, size / sizeof(uint64_t));
	free(buf);
	return 0;
}
