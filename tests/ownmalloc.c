/*
 * An allocator of the program's own, as some programs have: here it only
 * counts and passes on to glibc, but the library cannot know that, so a
 * background move must not run beside it.
 */
#include <stdlib.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

static unsigned long calls;

void *malloc(size_t n)
{
	calls++;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	calls++;
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	calls++;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}
