/* SPDX-License-Identifier: MIT */
/*
 * `hugetext serve`: the text service (the contract is docs/service.md; the
 * library's side is lib/service.c).  Pure parts here, for the tests.
 */
#ifndef HTE_SERVE_H
#define HTE_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * True when the /proc/PID/maps text @maps (@len bytes) has an executable
 * mapping of the file (@dev, @ino): the sender runs the code it offers.
 */
int hte_maps_runs_file(const char *maps, size_t len, dev_t dev, ino_t ino);

/*
 * The user a directory of the cache's mount is for: "hugetext-UID" (the
 * library's per-user directory), UID in decimal with no sign or leading
 * zero.  Returns: 1 and @uid set, or 0 for any other name.
 */
int hte_user_dir_uid(const char *name, uid_t *uid);

/* A cache entry, as the eviction rule sees it. */
struct hte_entry_age {
	int64_t atime, mtime; /* seconds; tmpfs sets atime when a process maps the entry */
	uint64_t bytes;
};

/*
 * Eviction order: entries no process has mapped since they were filled
 * (atime not after mtime) first, oldest fill first; then the others, least
 * recently mapped first.  Sorts @idx (indices into @e) in that order.
 */
void hte_eviction_order(const struct hte_entry_age *e, size_t n, size_t *idx);

/* The shared cache's default size: 1/16 of the machine's memory, within [256 MiB, 4 GiB]. */
uint64_t hte_auto_cache_size(uint64_t mem_total);

int hte_cmd_serve(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
