/*
 * A program with 8 MiB of code of its own, linked with libtinytext (a few
 * KiB of code on 2 MiB segments).  Prints "sum X" over both, and "tiny_huge_kb
 * N": the kB of the library's code mapping on huge pages, counted here
 * from /proc/self/smaps, independently of the library.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>

#include "bigtext.h"
#include "smaps-count.h"

int tiny_sum(int x);

int main(void)
{
	const char *at = (const char *)(void *)tiny_sum;

	printf("sum %lu %d\n", bigtext_sum(3), tiny_sum(5));
	printf("tiny_huge_kb %lu\n", huge_kb_in(at, at + 1));
	return 0;
}
