/*
 * Example: a program that moves its own code onto huge pages at start-up
 * with iodlr's call, then reports what the native API sees.
 *
 *   cc api-startup.c $(pkg-config --cflags --libs hugetext)
 */
#include <stdio.h>

#include "hugetext.h"
#include "large_page.h"

int main(void)
{
	bool enabled = false;
	map_status st;

	if (IsLargePagesEnabled(&enabled) != map_ok || !enabled) {
		printf("transparent huge pages are off: nothing to do\n");
		return 0;
	}
	/* First thing in main(): the earlier, the more of the run benefits. */
	st = MapStaticCodeToLargePages();
	printf("MapStaticCodeToLargePages: %s (%s)\n", MAP_STATUS_STR_SHORT(st), MAP_STATUS_STR(st));

	/* ... the program's real work goes here ... */
	return st == map_ok || st == map_region_too_small ? 0 : 1;
}
