/*
 * Shared bits of the libFuzzer harnesses: a property that must hold, and
 * reading little-endian control values from the front of an input.
 */
#ifndef HT_FUZZ_H
#define HT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken property is a crash, so libFuzzer keeps the input. */
#define PROPERTY(cond)                                                                 \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "property failed: %s (%s:%d)\n", #cond, __FILE__, \
				__LINE__);                                             \
			abort();                                                       \
		}                                                                      \
	} while (0)

/* Consumes @n bytes of control from the front of the input (zeros past its end). */
static inline uint64_t take(const uint8_t **data, size_t *size, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t b = 0;

		if (*size) {
			b = **data;
			(*data)++;
			(*size)--;
		}
		v |= b << (8 * i);
	}
	return v;
}

/* A private copy of exactly @size bytes, so ASan sees any read past it. */
static inline char *exact_copy(const uint8_t *data, size_t size)
{
	char *p = malloc(size ? size : 1);

	if (p && size)
		memcpy(p, data, size);
	return p;
}

#endif
