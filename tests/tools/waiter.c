/*
 * A program with 8 MiB of code that stays alive for `hugetext check PID`:
 * it runs every function, prints "ready", and exits when its standard
 * input closes.
 */
#include <stdio.h>
#include <unistd.h>

#include "bigtext.h"

int main(void)
{
	char c;

	printf("ready %lu\n", bigtext_sum(1));
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
