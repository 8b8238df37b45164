/* SPDX-License-Identifier: MIT */
/*
 * `hugetext serve`: the text service (the contract is docs/service.md; the
 * library's side is lib/service.c).  Pure parts here, for the tests.
 */
#ifndef HTE_SERVE_H
#define HTE_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
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
	int64_t atime, mtime; /* any one unit (the service gives nanoseconds); tmpfs sets atime when a process maps the entry */
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

/* --- the budgets (serve-pure.c) --- */

/*
 * A token bucket: @level tokens, refilled at a rate up to a burst.  A new
 * bucket (all zeros) starts full.
 */
struct hte_bucket {
	double level, at; /* tokens; when they were counted (seconds, any clock) */
};

/* Refills @b as of @now.  Then takes @cost when at least that many are there.  Returns: 1 taken, 0 not. */
int hte_bucket_take(struct hte_bucket *b, double now, double rate, double burst, double cost);
/* Refills @b as of @now, then charges @cost, which may leave it below zero (a job's CPU, known after). */
void hte_bucket_charge(struct hte_bucket *b, double now, double rate, double burst, double cost);
/* Refills @b as of @now.  Returns: 1 when it is not below zero (its owner may run again). */
int hte_bucket_ready(struct hte_bucket *b, double now, double rate, double burst);

/*
 * The POSIX ACL (the system.posix_acl_access attribute's bytes) of a file
 * of mode @mode with every uid of @uids (@n of them; repeats allowed)
 * denied everything, everyone else as the mode says.  The kernel then
 * refuses those users' connect() to the socket before the service sees
 * them.  Returns: its length, or -1 when @len is too short.
 */
long hte_acl_deny(unsigned mode, const uid_t *uids, size_t n, unsigned char *buf, size_t len);

/* --- the shares of the shared cache --- */

/* An entry as the share rule sees it. */
struct hte_cache_entry {
	int64_t atime, mtime; /* as for hte_entry_age */
	uint64_t bytes;
	int owner;            /* its client, 0..nowners-1; -1: nobody's (its container stopped, or unknown) */
};

/*
 * Which entries to remove so that @need bytes fit (@avail free of @total)
 * for a fill by client @who (0..nowners-1): the share rule.  Each client
 * with entries, and @who, has a fair share of total / (their number).  In
 * the eviction order (hte_eviction_order), an entry is removed when it is
 * @who's own, nobody's, or its owner holds more than its share (counted
 * down as its entries go); others' entries within their share stay.
 * Writes the indices to remove to @out (@n at most), in order, and the
 * share to *@share.  Returns: their number, or -1 when that cannot make
 * room (the fill is refused and nothing is removed).
 */
long hte_share_pick(const struct hte_cache_entry *e, size_t n, int nowners, int who, uint64_t total,
		    uint64_t avail, uint64_t need, size_t *out, uint64_t *share);

/* --- overlay files and containers (serve-real.c's pure parts) --- */

#define HTE_ID_MAX 128            /* a container id */
#define HTE_OVL_LOWERS_MAX 500    /* overlayfs's own limit of lower layers */
/* Where the OCI hook keeps its container records (docs/containers.md). */
#define HTE_CONTAINER_RECORDS "/run/hugetext/containers"
/*
 * The containers' own sockets: <the service's socket's directory>/sockets/<id>/service.sock
 * (tools/serve-socks.c is the contract).
 */
#define HTE_CONTAINER_SOCKETS_NAME "sockets"
#define HTE_CONTAINER_SOCKET_NAME "service.sock"
/* Containers with a socket of their own at once; past it the hook binds the host's socket. */
#define HTE_CONTAINER_SOCKETS_MAX 512
/* The per-container views of the shared cache: HT_TEXT_CACHE_DIR/shared/c/<id>. */
#define HTE_VIEWS "c"

/* An overlay mount as /proc/PID/mountinfo shows it. */
struct hte_ovl_mount {
	char root[4096];   /* the mount's root in its file system */
	char point[4096];  /* where it is mounted */
	char upper[4096];  /* upperdir, "" when none (a read-only overlay) */
	char lowers[65536];/* the lower layers' paths, top first, each ending in a NUL */
	unsigned nlower;
	char rel[4096];    /* the asked path, as a path in the file system (from its root) */
};

/*
 * Layers given to overlayfs as relative paths (containers/storage does so
 * when the absolute ones pass a page: images of many layers) are shown as
 * given, relative to the directory the mounting process was in.  Whether
 * @o has one (upper or lower).
 */
int hte_ovl_relative(const struct hte_ovl_mount *o);
/*
 * Puts @base (an absolute directory) before each of @o's relative layers.
 * Returns: 0, or -1 when a path would not fit (@o unchanged then).
 */
int hte_ovl_rebase(struct hte_ovl_mount *o, const char *base);
/*
 * The directory @o's relative layers were given from (the process's is
 * gone): the nearest ancestor of the mount point under which each of them
 * is a directory; @o rebased on it.  Returns: 0 (nothing relative, or
 * rebased), -1 (no such directory: the layers cannot be looked in).
 */
int hte_ovl_find_base(struct hte_ovl_mount *o);

/*
 * Finds in the mountinfo text @buf the overlay mount of device @dev whose
 * mount point is the longest prefix of @path (a path as readlink() of a
 * descriptor gives it); with none, the first mount of @dev, and @path is
 * taken as relative to that mount's root (a mount of a namespace that is
 * gone is detached, and readlink() then gives the path from its root).
 * Fills @o: its layers (escapes undone: mountinfo's octal ones, then
 * overlayfs's backslashes; data-only layers are left out) and o->rel,
 * @path in the file system.  Returns: 1 found, 0 not, -1 when the line
 * cannot be read (too long, too many layers).
 */
int hte_mountinfo_overlay(const char *buf, size_t len, dev_t dev, const char *path, struct hte_ovl_mount *o);

/* On a text-service entry: the host path of the real file it was filled from (the OCI hook reads it). */
#define HTE_REAL_XATTR "trusted.hugetext.real"

/*
 * A container's view of the shared cache (serve-fill.c; the service and
 * the OCI hook).  hte_same_entry(): 1 when @vname in the view @vfd is a
 * link of the entry @name of @sfd, else 0.  hte_link_as(): links that
 * entry in as @vname through a temporary name renamed over it, so the
 * name is never missing nor half made (a rename onto a link of the same
 * file would leave both names: check hte_same_entry() first); 0, or -1
 * with nothing left behind.
 */
int hte_same_entry(int sfd, const char *name, int vfd, const char *vname);
int hte_link_as(int sfd, const char *name, int vfd, const char *vname);

/* What hte_ovl_lookup() found. */
enum { HTE_OVL_FOUND, HTE_OVL_NOT_HERE, HTE_OVL_REFUSED };

/*
 * Looks @rel (a path from the overlay's root, "/a/b") up in @o's layers as
 * overlayfs does: the upper layer first, then the lower ones, top first,
 * never following a link nor leaving a layer.  HTE_OVL_FOUND: *@real is the
 * lower layer's file, opened for reading, a regular file with @want's size
 * and modification time, and @real_path (@cap bytes) its path, cut with
 * "..." when too long; HTE_OVL_NOT_HERE: no such file there (or another
 * one); HTE_OVL_REFUSED: *@why (in the upper layer: the container's own).
 * Not pure: serve-real.c, used by the service and the OCI hook.
 */
int hte_ovl_lookup(const struct hte_ovl_mount *o, const char *rel, const struct stat *want, int *real,
		   char *real_path, size_t cap, const char **why);

/*
 * Parses a text-service entry's name ("f-<dev>-<ino>-<size>-<sec>.<nsec>-
 * <off>-<len>-<mapped>.text", as ht_cache_name() makes it from a file's
 * identity) into @k (build_id NULL).  Returns 0, or -1 for any other name
 * (a build-ID name, a temporary file, trailing bytes).
 */
struct ht_cache_key;
int hte_cache_name_parse(const char *name, struct ht_cache_key *k);

/*
 * The root, in its file system, of the mount on "/" in the mountinfo text
 * @buf (the last one: a later mount hides an earlier), into @out: "/" on a
 * machine's own root, the directory's path where the reader runs in a
 * chroot made by bind-mounting a directory onto itself.  readlink() of a
 * descriptor whose mount is out of the reader's reach (an overlay mounted
 * only in a container's namespace) prefixes that path.  Returns 0, or -1
 * when there is no such line or it does not fit.
 */
int hte_mountinfo_root(const char *buf, size_t len, char *out, size_t cap);

/* What the service reads of the hook's record (docs/containers-contract). */
struct hte_record {
	char id[HTE_ID_MAX + 1];
	long pid;                     /* the container's init, as the host sees it */
	unsigned long long pid_start; /* field 22 of /proc/PID/stat */
	unsigned long long mntns;     /* st_ino of /proc/PID/ns/mnt */
	int has_view;                 /* the hook made its view of the cache */
};

/* Whether @id may name a container (and a directory): [A-Za-z0-9_.-], 1 to HTE_ID_MAX, not "." or "..". */
int hte_id_valid(const char *id);
/* Parses a record (JSON).  Returns: 0, or -1 when it is not one. */
int hte_record_parse(const char *buf, size_t len, struct hte_record *r);
/* Field 22 (starttime) of /proc/PID/stat text.  Returns: 0, or -1. */
int hte_proc_start_time(const char *buf, size_t len, unsigned long long *out);
/*
 * The pid in a temporary name the service gives what it makes
 * ("NAME.tmp.PID").  Returns: 1 and *@pid, or 0 for any other name.
 */
int hte_tmp_pid(const char *name, long *pid);

int hte_cmd_serve(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
