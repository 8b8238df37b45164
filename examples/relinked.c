/*
 * Example: a program relinked with
 *   -Wl,-zmax-page-size=0x200000 -Wl,-zcommon-page-size=0x200000
 * so its code segment starts on a 2 MiB boundary and nothing else shares
 * its last 2 MiB page: hugetext can move all of it, not only the aligned
 * middle.  Run it with the preload and HUGETEXT_VERBOSE=1 to see.
 */
#include <stdio.h>

#include "bigtext.h"

int main(void)
{
	printf("sum %lu\n", bigtext_sum(3));
	return 0;
}
