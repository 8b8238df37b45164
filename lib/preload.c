/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD=libhugetext-preload.so CMD: moves CMD's code onto huge pages
 * before its main() runs.  Settings come from HUGETEXT_* variables read
 * with secure_getenv(), so set-user-ID programs ignore them.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

__attribute__((constructor)) static void ht_preload(void)
{
	struct ht_options opt;
	char notes[512];
	int saved = errno;

	ht_options_init(&opt);
	ht_options_env(&opt, secure_getenv, notes, sizeof(notes));
	if (notes[0])
		ht_report_note(&opt, notes);
	ht_remap(&opt, NULL, 0, NULL);
	/* The program must not see anything of us, not even errno. */
	errno = saved;
}
