/*
 * A program that calls the API itself, twice, through both interfaces:
 * for "the API called twice" and "the preload plus a program that calls
 * the API".  It prints each call's outcome, then a checksum that needs
 * every generated function.  The native calls take their options from the
 * HUGETEXT_* variables, as the iodlr ones do.
 */
#include <stdio.h>
#include <string.h>

#include "../bigtext.h"
#include "hugetext.h"
#include "large_page.h"

static void show(const char *name, int rc, const struct ht_region *r, size_t n)
{
	printf("%s rc=%d", name, rc);
	for (size_t i = 0; i < n && i < 4; i++)
		printf(" [%s %s]", ht_status_str(r[i].status), ht_error_str(r[i].error));
	printf("\n");
}

int main(void)
{
	struct ht_options opt;
	struct ht_region r[4];
	size_t n = 0;
	int rc;

	ht_options_init(&opt);
	ht_options_from_env(&opt);
	rc = ht_remap(&opt, r, 4, &n);
	show("remap1", rc, r, n);
	rc = ht_remap(&opt, r, 4, &n);
	show("remap2", rc, r, n);
	printf("iodlr1 %s\n", MapStatusStr(MapStaticCodeToLargePages(), false));
	printf("iodlr2 %s\n", MapStatusStr(MapStaticCodeToLargePages(), false));
	rc = ht_remap_range(&opt, bigtext_start, bigtext_end, &r[0]);
	show("range", rc, r, 1);
	printf("sum %lu\n", bigtext_sum(9));
	return 0;
}
