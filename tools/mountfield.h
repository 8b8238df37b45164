/* SPDX-License-Identifier: MIT */
/*
 * The fields of the kernel's mount tables (/proc/PID/mounts and
 * /proc/PID/mountinfo), read from buffers: pure, no system calls.  The
 * doctor, the status view, the OCI hook and the text service read these
 * tables; they share this one reading of a line's fields and of the
 * kernel's \ooo escapes (a space in a path is "\040").
 */
#ifndef HTE_MOUNTFIELD_H
#define HTE_MOUNTFIELD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The next space-separated field of [*p, end): *f and *n are its start and
 * length, and *p moves past it.  Returns: 1, or 0 when none is left. */
int hte_mount_field(const char **p, const char *end, const char **f, size_t *n);

/* Copies the @n bytes of @s into @out (@cap bytes, NUL-terminated),
 * undoing the kernel's \ooo escapes.  Returns: 0, or -1 when it does not
 * fit. */
int hte_mount_unescape(const char *s, size_t n, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
