/* SPDX-License-Identifier: MIT */
/* Declarations shared by the hugetext command's files. */
#ifndef HTE_TOOL_H
#define HTE_TOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "elfcheck.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit statuses: 2 for usage errors, 1 for other failures. */
#define HTE_EXIT_OK 0
#define HTE_EXIT_FAIL 1
#define HTE_EXIT_USAGE 2

/* --- util.c --- */

/* "hugetext CMD: " and the message on stderr; @cmd may be NULL. */
void hte_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "2.0 MiB", "512 KiB", "100 B": one decimal above KiB.  Returns @buf. */
const char *hte_human(uint64_t bytes, char *buf, size_t len);

/* Writes @s as a JSON string, quotes included; bytes that are no UTF-8 become U+FFFD. */
void hte_json_str(FILE *f, const char *s);

/*
 * Writes @s, a name another user chose (a path from /proc), for a terminal:
 * control bytes become '?', so no escape sequence reaches it.
 */
void hte_text_name(FILE *f, const char *s);

/* Percentage of @part in @whole with one decimal, 100.0 when @whole is 0. */
double hte_percent(uint64_t part, uint64_t whole);

/*
 * Parses a size such as "2M", "1G", "2048K", "2MB", "2MiB" or "4096"
 * (bytes) into *@out.  Returns: 0, or -1 when it is not such a size.
 */
int hte_parse_size(const char *s, uint64_t *out);

/*
 * openat2(2) with @resolve (RESOLVE_IN_ROOT, RESOLVE_BENEATH, ... from
 * linux/openat2.h): a descriptor, or -1 and errno.  glibc 2.36 has no
 * wrapper for it.
 */
int hte_openat2(int dirfd, const char *path, int flags, unsigned long long resolve);

/* --- elfio.c: an ELF file on disk, mapped and checked --- */

struct hte_file {
	const char *path;
	int fd;
	const unsigned char *map;
	size_t len;
	struct hte_elf elf;
};

/*
 * Opens @path (for writing too when @writable), maps it and checks it
 * with hte_check_buffer().  On failure it prints "hugetext CMD: PATH:
 * reason" and returns -1; the file is never changed.
 */
int hte_file_open(struct hte_file *f, const char *path, int writable, const char *cmd);
void hte_file_close(struct hte_file *f);

/*
 * Applies the hugeedit options @opts to an open, writable file: only
 * p_flags bytes change, with one pwrite() checked against what was read.
 * Returns: the number of segments changed (0: the file was not written),
 * or -1 after printing why (the file is then as it was).
 */
long hte_file_edit(struct hte_file *f, unsigned opts, const char *cmd);

/* A short name for e_type: "executable", "position-independent", ... */
const char *hte_type_str(unsigned type);

/* --- the subcommands; each returns the exit status --- */
int hte_cmd_edit(int argc, char **argv);
int hte_cmd_check(int argc, char **argv);
int hte_cmd_run(int argc, char **argv);
int hte_cmd_pool(int argc, char **argv);
int hte_cmd_warm(int argc, char **argv);
int hte_cmd_measure(int argc, char **argv);

/* --- edit.c: the listing, pure formatting --- */

/*
 * Prints the listing of @e's loadable segments: index, permissions,
 * address, size, what hugeedit's --text/--data would select, and the
 * default page size.  @note is added to the title line, or NULL.
 */
void hte_print_listing(FILE *out, const char *path, const struct hte_elf *e, const char *note);

/* --- check.c: the coverage table of a file, pure formatting --- */
struct hte_file_cover;
void hte_print_file_cover(FILE *out, const char *path, const struct hte_elf *e,
			  const struct hte_file_cover *c);

#ifdef __cplusplus
}
#endif

#endif
