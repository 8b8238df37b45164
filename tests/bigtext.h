/* The generated code of bigtext.S. */
#ifndef HT_TEST_BIGTEXT_H
#define HT_TEST_BIGTEXT_H

#ifdef __cplusplus
extern "C" {
#endif

extern const unsigned bigtext_count, bigtext_stride;
extern char bigtext_start[], bigtext_end[];

typedef int (*bigtext_fn)(int);

static inline bigtext_fn bigtext_get(unsigned i)
{
	return (bigtext_fn)(void *)(bigtext_start + (unsigned long)i * bigtext_stride);
}

/* Calls every function once; the result depends on all of them. */
static inline unsigned long bigtext_sum(int x)
{
	unsigned long sum = 0;

	for (unsigned i = 0; i < bigtext_count; i++)
		sum = sum * 31 + (unsigned)bigtext_get(i)(x);
	return sum;
}

#ifdef __cplusplus
}
#endif

#endif
