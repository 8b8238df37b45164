/* SPDX-License-Identifier: MIT */
/*
 * The text service: the library's side of it (the service is tools/serve.c;
 * the contract, both sides, is docs/service.md).
 *
 * A process that found an object worth moving, whose code no shared path
 * serves yet (no 2 MiB page-cache pages, no shared cache entry), hands the
 * object's open file to the service and goes on as it would have: the
 * service, not the program, warms the file's page cache into 2 MiB pages
 * or fills the machine's shared cache entry, so a later start maps the
 * code huge with no copy.  The descriptor, not a path, travels (SCM_RIGHTS
 * over a local socket): no name can be swapped in between.  Only files
 * that only root can write are offered: nothing a user can write is ever
 * mapped into another user's process.
 *
 * The offer never blocks and never fails the program: no service, a dead
 * one or a full queue costs one failed socket call and is not reported.
 */
#ifndef HT_SERVICE_H
#define HT_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>

/* The service's socket (a SOCK_SEQPACKET listener); tests may bind another. */
#define HT_SERVICE_SOCKET "/run/hugetext/service.sock"
/* Where the service's fills go: the shared cache's directory of root's entries. */
#define HT_SERVICE_SHARED "shared"

/* One message: these bytes, and the object's file as the one SCM_RIGHTS descriptor. */
#define HT_OFFER_MAGIC "HTOFFER1"
struct ht_offer {
	char magic[8];     /* HT_OFFER_MAGIC, no NUL */
	uint64_t file_off; /* file offset of the span's first byte (page aligned) */
	uint64_t len;      /* the span's length, whole 2 MiB pages */
	uint64_t mapped;   /* bytes of the span that are the file's; the rest is zeros */
};

/*
 * Whether a file may be offered (and, on the service's side, served):
 * a regular file that belongs to root, that nobody else may write and
 * that everyone may read (an entry, mode 0444, shows it to every user).
 * Returns: NULL, or why not.  Pure.
 */
const char *ht_offer_refusal(const struct stat *st);

/*
 * Whether the mount a file lies on (@fs, its fstatfs) may hold served
 * files: not a nosuid or FUSE mount, which users can make (a disk image,
 * a FUSE file system), so that their root-owned files hold a user's bytes.
 * Returns: NULL, or why not.  Pure.
 */
const char *ht_offer_mount_refusal(const struct statfs *fs);

/*
 * Checks an offer's numbers against the file's size.  Returns: NULL, or
 * why the offer is malformed.  Pure.
 */
const char *ht_offer_check(const struct ht_offer *m, uint64_t file_size);

/*
 * Sends the offer to the service at @sock (HT_SERVICE_SOCKET normally).
 * Returns: 0 when the service took it; a negative errno otherwise
 * (-ENOENT or -ECONNREFUSED: no service; -EAGAIN: its queue is full).
 */
int ht_service_offer(const char *sock, int fd, uint64_t file_off, uint64_t len, uint64_t mapped);

#endif
