/* SPDX-License-Identifier: MIT */
/*
 * The OCI hook's links into a new container's view of the shared cache
 * (docs/containers.md, "A new container's view").
 *
 * A container's processes look entries up by the file as they see it: the
 * overlay's device, one per container.  The text service links an entry
 * into a container's view when that container's process offers the file,
 * so without this a new container's first start of a program misses the
 * cache even when another container of the same image filled the entry;
 * for a server that starts once per container, that is every start.
 *
 * At createRuntime, before the container runs anything, the hook links
 * into its new view each entry of the shared cache that this container's
 * overlay shows unchanged:
 *  - the entry is the service's: root's, a regular file no one else may
 *    write, named by a file's identity ("f-<dev>-<ino>-...", never a build
 *    ID), carrying the real file's host path (HTE_REAL_XATTR, set at fill);
 *  - that path lies in one of the container's lower layers, and the rest
 *    of it, looked up as overlayfs does (hte_ovl_lookup: the upper layer
 *    first, where a file is the container's own copy and nothing is
 *    linked; then the lower layers, top first, no link followed), finds
 *    the very file the entry was filled from (device, inode, size, time);
 *  - the same path in the container's rootfs, resolved inside it with no
 *    link and on the overlay itself, is a regular file of that size and
 *    time; its device and inode name the link, as the preload will ask.
 * Nothing of the image is read or opened for writing; the only writes are
 * links in the view, root's directory, bound read-only into the container.
 * The entry's bytes were compared with that real file when it was filled,
 * so the container maps the same bytes it would read.
 *
 * Cost: one read of the cache's directory and a few lookups per entry, at
 * most PRELINK_MAX entries; the hook logs how many it linked.
 */
#include "tool.h"
#include "ocihook.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache.h"
#include "serve.h"

#define PRELINK_MAX 4096u

/* @path's part under one of @o's lower layers ("/usr/lib/..."), or NULL. */
static const char *under_lower(const struct hte_ovl_mount *o, const char *path)
{
	const char *lower = o->lowers;

	for (unsigned i = 0; i < o->nlower; i++, lower += strlen(lower) + 1) {
		size_t n = strlen(lower);

		if (n > 1 && strncmp(path, lower, n) == 0 && path[n] == '/')
			return path + n;
	}
	return NULL;
}

/* The entry @name of @sfd: the service's, with its real file's path in @path.  0, or -1. */
static int entry_of(int sfd, const char *name, struct ht_cache_key *k, char *path, size_t cap)
{
	struct stat st;
	ssize_t n;
	int fd;

	if (hte_cache_name_parse(name, k) < 0)
		return -1;
	fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022)
		    ? fgetxattr(fd, HTE_REAL_XATTR, path, cap - 1)
		    : -1;
	close(fd);
	if (n <= 0)
		return -1;
	path[n] = '\0';
	return path[0] == '/' && strlen(path) == (size_t)n ? 0 : -1;
}

/* Whether the overlay's lower file at @rel is the entry's file (@k).  1, or 0. */
static int is_entry_file(const struct hte_ovl_mount *o, const char *rel, const struct ht_cache_key *k)
{
	struct stat want = { .st_size = (off_t)k->size }, st;
	char real_path[512];
	const char *why;
	int real = -1, same;

	want.st_mtim.tv_sec = (time_t)k->mtime_sec;
	want.st_mtim.tv_nsec = k->mtime_nsec;
	if (hte_ovl_lookup(o, rel, &want, &real, real_path, sizeof(real_path), &why) != HTE_OVL_FOUND)
		return 0;
	same = fstat(real, &st) == 0 && (uint64_t)st.st_dev == k->dev && (uint64_t)st.st_ino == k->ino;
	close(real);
	return same;
}

/* The name the container's processes will ask for @rel by, from its rootfs @root (device @dev).  0, or -1. */
static int view_name_of(int root, dev_t dev, const char *rel, const struct ht_cache_key *k, char *name,
			size_t cap)
{
	struct ht_cache_key v = *k;
	struct stat st;
	int fd = hte_openat2(root, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC,
			     RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV),
	    ok;

	if (fd < 0)
		return -1;
	ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev && (uint64_t)st.st_size == k->size &&
	     st.st_mtim.tv_sec == (time_t)k->mtime_sec && st.st_mtim.tv_nsec == k->mtime_nsec;
	close(fd);
	if (!ok)
		return -1;
	ht_cache_key_of_file(&v, &st);
	v.file_off = k->file_off;
	v.len = k->len;
	v.mapped = k->mapped;
	return ht_cache_name(&v, name, cap) < 0 ? -1 : 0;
}

int hte_oci_prelink(int sfd, int vfd, const char *rootfs, const char *mounts, size_t mounts_len, unsigned *linked,
		    const char **why)
{
	struct hte_ovl_mount *o = NULL;
	struct statfs fs;
	struct stat rst;
	struct dirent *e;
	char path[4096], vname[256], self[64];
	unsigned seen = 0;
	ssize_t n;
	DIR *d = NULL;
	int root, dfd;

	*linked = 0;
	*why = NULL;
	/* The engine's path, on the host, as the host's admin set it up (as for the mounts). */
	root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || fstat(root, &rst) < 0 || fstatfs(root, &fs) < 0 || (unsigned long)fs.f_type != OVERLAYFS_SUPER_MAGIC) {
		*why = "its rootfs is not an overlay the host sees";
		goto out;
	}
	/* Its mount is found by the path the kernel gives it (no link in it). */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", root);
	n = readlink(self, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	o = malloc(sizeof(*o));
	if (!o || n <= 0 || hte_mountinfo_overlay(mounts, mounts_len, rst.st_dev, path, o) != 1 || !o->nlower) {
		*why = "its rootfs's overlay is not in the host's mount table";
		goto out;
	}
	if (hte_ovl_find_base(o) < 0) {
		*why = "its rootfs's overlay names its layers by relative paths from no directory the host has";
		goto out;
	}
	dfd = dup(sfd);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		*why = "cannot read the shared cache";
		goto out;
	}
	while ((e = readdir(d)) && seen++ < PRELINK_MAX) {
		struct ht_cache_key k;
		const char *rel;

		if (entry_of(sfd, e->d_name, &k, path, sizeof(path)) < 0 || !(rel = under_lower(o, path)))
			continue;
		if (!is_entry_file(o, rel, &k) || view_name_of(root, rst.st_dev, rel, &k, vname, sizeof(vname)) < 0)
			continue;
		if (hte_same_entry(sfd, e->d_name, vfd, vname) || hte_link_as(sfd, e->d_name, vfd, vname) == 0)
			(*linked)++;
	}
out:
	if (d)
		closedir(d);
	free(o);
	if (root >= 0)
		close(root);
	return *why ? -1 : 0;
}
