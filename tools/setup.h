/* SPDX-License-Identifier: MIT */
/* `hugetext setup`: its state file (pure) and the warm step it shares with `hugetext warm`. */
#ifndef HTE_SETUP_H
#define HTE_SETUP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What setup changed, so that --undo puts back only that. */
struct hte_setup_state {
	long pool_was;       /* 2 MiB pool size found; -1: the pool was not changed */
	char mounted[1024];  /* the hugetlbfs mount made, or "" */
	char made_dir[1024]; /* the directory made for it, or "" */
	char text_mounted[1024];  /* the shared cache's tmpfs mounted, or "" */
	char text_made_dir[1024]; /* the directory made for it, or "" */
};

void hte_setup_state_init(struct hte_setup_state *s);
/* "key=value" lines, '#' comments.  Returns: 0, or -EINVAL (nothing trusted). */
int hte_setup_state_parse(const char *buf, size_t len, struct hte_setup_state *s);
/* The text of @s.  Returns: its length, or -1 when @len is too short. */
int hte_setup_state_format(const struct hte_setup_state *s, char *buf, size_t len);

/* --- warm.c --- */
struct hte_warm {
	uint64_t code;  /* bytes of whole 2 MiB file chunks of executable code */
	uint64_t huge;  /* of them in 2 MiB page-cache pages now */
	int congruent;  /* addresses and offsets agree modulo 2 MiB */
	int exec_file;  /* ET_EXEC: loaded where its headers say */
	int already;    /* all were in 2 MiB pages before: nothing dropped or read */
};

/*
 * Warms @path's code (see warm.c).  With @probe, first looks whether the
 * code already sits in 2 MiB pages, and then leaves it as it is.
 * Returns: 0, 1 when the file has no whole 2 MiB of code, or -1 after
 * printing why ("hugetext warm: PATH: ...").
 */
int hte_warm_file(const char *path, int probe, struct hte_warm *w);

/* --- mounts.c: the shared cache's tmpfs --- */
/*
 * The mount on top at @dir: its type and options into @type and @opts.
 * Returns: 1 when found, 0 when nothing is mounted there, or a negative errno.
 */
int hte_mount_find(const char *dir, char *type, size_t tlen, char *opts, size_t olen);
/* The bytes of the "size=" option of a /proc/self/mounts line's options; 0 if none. */
uint64_t hte_mount_opt_size(const char *opts);
/*
 * Mounts a tmpfs with huge=within_size, size=@size, mode 1777, nosuid and
 * nodev at @dir (made, with its parent, if missing: *@made_dir 1 when @dir
 * was made, -1 when making it failed); with @remount, only resizes it.
 * Returns: 0 or a negative errno.
 */
int hte_mount_text_cache(const char *dir, uint64_t size, int remount, int *made_dir);

int hte_cmd_setup(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
