/* SPDX-License-Identifier: MIT */
/*
 * The real file behind an offered overlay file, and the containers the
 * OCI hook recorded (docs/service.md, "Containers").
 *
 * A container's files are overlayfs files: fstat() shows the overlay's
 * device (one per container) and the real file's inode; the page cache
 * is the real file's, the lower layer's file on the host, which every
 * container of that layer shares.  The service judges, warms and fills
 * from that real file, opened by the service itself in the layer's
 * directory on the host, never from the bytes of the offered descriptor:
 * a lower layer is the engine's (root's), an upper layer the container's
 * root's, and a file found in the upper layer is refused.
 *
 * How it finds the file: readlink() of the descriptor gives its path; the
 * overlay's mount (in the sender's /proc/PID/mountinfo, else the
 * service's own) gives its layers; the path is looked up in the upper
 * layer (present: refused), then in each lower layer, top first, without
 * following any link and without leaving the layer (openat2), and must
 * have the offered file's size and modification time.  A path that
 * changed meanwhile (a rename in the container) finds another file or
 * none: nothing is then served that was not the engine's, and an entry is
 * linked into the container's view only once it is compared, whole, with
 * the offered descriptor (serve-fill.c).
 *
 * (/proc/self/map_files of a mapping of the descriptor, which on Linux
 * 6.1 opens the real file, since 6.6 opens the overlay file again, as
 * /proc/PID/maps shows it: on 6.18 it gives the overlay's device.  The
 * path works on both.)
 */
#include "tool.h"

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

#include "serve-int.h"
#include "sys.h"

static int openat2_(int dirfd, const char *path, int flags)
{
	return hte_openat2(dirfd, path, flags,
			   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
}

/* @rel (a path from the layer's root, "/a/b") in the layer @dir, as O_PATH: -1 and errno when not there. */
static int in_layer(const char *dir, const char *rel)
{
	int d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), fd, err;

	if (d < 0)
		return -1;
	while (*rel == '/')
		rel++;
	fd = openat2_(d, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	err = errno;
	close(d);
	errno = err;
	return fd;
}

/* Whether each of @o's relative layers is a directory under @base, root's own directory. */
static int layers_under(const struct hte_ovl_mount *o, const char *base)
{
	int d = open(base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), all = d >= 0;
	const char *lower = o->lowers;
	struct stat st;

	/* An engine's storage: nobody but root could have put layers there. */
	if (all)
		all = fstat(d, &st) == 0 && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));

	/* The layers as overlayfs took them: a link among them (containers/storage's l/ names) is followed. */
	if (all && o->upper[0] && o->upper[0] != '/')
		all = fstatat(d, o->upper, &st, 0) == 0 && S_ISDIR(st.st_mode);
	for (unsigned i = 0; all && i < o->nlower; i++, lower += strlen(lower) + 1)
		if (lower[0] != '/')
			all = fstatat(d, lower, &st, 0) == 0 && S_ISDIR(st.st_mode);
	if (d >= 0)
		close(d);
	return all;
}

int hte_ovl_find_base(struct hte_ovl_mount *o)
{
	char base[sizeof(o->point)];
	char *slash;

	if (!hte_ovl_relative(o))
		return 0;
	snprintf(base, sizeof(base), "%s", o->point);
	/* The mount point's parent first (the mount hides what is under the point itself). */
	while ((slash = strrchr(base, '/')) != NULL) {
		if (slash == base) {
			base[1] = '\0';
			return layers_under(o, base) ? hte_ovl_rebase(o, base) : -1;
		}
		*slash = '\0';
		if (layers_under(o, base))
			return hte_ovl_rebase(o, base);
	}
	return -1;
}

/* Whether @fd is an overlayfs metadata-only copy (its bytes are elsewhere). */
static int metacopy(int fd)
{
	return fgetxattr(fd, "trusted.overlay.metacopy", NULL, 0) >= 0 ||
	       fgetxattr(fd, "user.overlay.metacopy", NULL, 0) >= 0;
}

int hte_ovl_lookup(const struct hte_ovl_mount *o, const char *rel, const struct stat *want, int *real,
		   char *real_path, size_t cap, const char **why)
{
	const char *lower = o->lowers;
	struct stat st;
	int fd;

	if (o->upper[0]) {
		fd = in_layer(o->upper, rel);
		/* There, or hidden behind something of the upper layer's (a link, another mount). */
		if (fd >= 0 || (errno != ENOENT && errno != ENOTDIR)) {
			if (fd >= 0)
				close(fd);
			*why = "a file of the overlay's upper (writable) layer: its bytes are the container's";
			return HTE_OVL_REFUSED;
		}
	}
	for (unsigned i = 0; i < o->nlower; i++, lower += strlen(lower) + 1) {
		char self[64];
		int rfd;

		fd = in_layer(lower, rel);
		if (fd < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			*why = "the overlay's lower layer holds a link or a mount on the file's path";
			return HTE_OVL_REFUSED;
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			/* A whiteout (a 0:0 device): the file was removed above this layer. */
			close(fd);
			return HTE_OVL_NOT_HERE;
		}
		if (st.st_size != want->st_size || st.st_mtim.tv_sec != want->st_mtim.tv_sec ||
		    st.st_mtim.tv_nsec != want->st_mtim.tv_nsec) {
			close(fd);
			return HTE_OVL_NOT_HERE;
		}
		/* Opened for reading only now that it is known to be a regular file (no device is opened). */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		rfd = open(self, O_RDONLY | O_CLOEXEC);
		close(fd);
		if (rfd < 0) {
			*why = "cannot open the overlay's lower file";
			return HTE_OVL_REFUSED;
		}
		if (metacopy(rfd)) {
			close(rfd);
			*why = "the overlay's lower file is a metadata-only copy";
			return HTE_OVL_REFUSED;
		}
		*real = rfd;
		/* For the logs: a path too long is cut. */
		if (snprintf(real_path, cap, "%s%s", lower, rel) >= (int)cap && cap >= 4)
			memcpy(real_path + cap - 4, "...", 4);
		return HTE_OVL_FOUND;
	}
	return HTE_OVL_NOT_HERE;
}

/*
 * @path without the prefix of the chroot the service runs in (the root of
 * its mount on "/", read once), or NULL: not in a chroot, or @path does
 * not start with it.
 */
static const char *unchrooted(const char *path)
{
	static char prefix[4096];
	static int known;
	size_t n;

	if (!known) {
		char *buf;
		size_t len;

		known = 1;
		if (ht_sys_read_file("/proc/self/mountinfo", &buf, &len) == 0) {
			if (hte_mountinfo_root(buf, len, prefix, sizeof(prefix)) < 0)
				prefix[0] = '\0';
			free(buf);
		}
	}
	n = strlen(prefix);
	if (n <= 1 || strncmp(path, prefix, n) != 0 || path[n] != '/')
		return NULL;
	return path + n;
}

const char *find_real_file(struct pending *p)
{
	struct statfs fs;
	char link[64], path[4096], src[64];
	struct hte_ovl_mount *o;
	const char *why = NULL;
	int seen = 0, relative = 0, r = HTE_OVL_NOT_HERE;
	ssize_t n;

	if (fstatfs(p->fd, &fs) < 0)
		return "cannot stat the file's mount";
	snprintf(link, sizeof(link), "/proc/self/fd/%d", p->fd);
	n = readlink(link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	if ((unsigned long)fs.f_type != OVERLAYFS_SUPER_MAGIC) {
		p->real = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
		p->rst = p->st;
		if (snprintf(p->real_path, sizeof(p->real_path), "%s", n > 0 ? path : "(unknown)") >=
		    (int)sizeof(p->real_path))
			memcpy(p->real_path + sizeof(p->real_path) - 4, "...", 4);
		return p->real < 0 ? "out of descriptors" : NULL;
	}
	if (n <= 0 || path[0] != '/')
		return "cannot read the overlay file's path";
	if (n > 10 && !strcmp(path + n - 10, " (deleted)"))
		return "the overlay file was removed";
	o = malloc(sizeof(*o));
	if (!o)
		return "out of memory";
	/*
	 * The sender's own view of its mounts first (while it runs), then ours;
	 * in each, the path as readlink() gave it and then, where the service
	 * runs in a chroot, without the chroot's own prefix, which readlink()
	 * puts before a path out of our reach (a container's own overlay).
	 * Each mountinfo is read once.
	 */
	const char *paths[2] = { path, unchrooted(path) };
	char *info[2] = { NULL, NULL };
	size_t info_len[2] = { 0, 0 };

	snprintf(src, sizeof(src), "/proc/%ld/mountinfo", (long)p->sender);
	if (ht_sys_read_file(src, &info[0], &info_len[0]) < 0)
		info[0] = NULL;
	if (ht_sys_read_file("/proc/self/mountinfo", &info[1], &info_len[1]) < 0)
		info[1] = NULL;
	for (int i = 0; i < 2 && paths[i] && r == HTE_OVL_NOT_HERE; i++)
		for (int k = 0; k < 2 && r == HTE_OVL_NOT_HERE; k++)
			if (info[k] && hte_mountinfo_overlay(info[k], info_len[k], p->st.st_dev, paths[i], o) == 1) {
				seen = 1;
				/*
				 * Relative layers are taken only from the service's own view
				 * (k 1), whose mount point is a path the service resolves as
				 * it is: in the sender's, it may be "/" or a name of its own.
				 */
				if ((k == 0 && hte_ovl_relative(o)) || hte_ovl_find_base(o) < 0) {
					relative = 1;
					continue;
				}
				relative = 0;
				r = hte_ovl_lookup(o, o->rel, &p->st, &p->real, p->real_path,
						   sizeof(p->real_path), &why);
			}
	free(info[0]);
	free(info[1]);
	free(o);
	if (r == HTE_OVL_REFUSED)
		return why;
	if (r == HTE_OVL_NOT_HERE && relative)
		return "the overlay's layers are relative paths from no directory the service sees";
	if (r == HTE_OVL_NOT_HERE)
		return seen ? "the overlay file is in none of its lower layers (renamed meanwhile?)"
			    : "the overlay's mount is visible neither to the service nor in the sender's namespace";
	if (fstat(p->real, &p->rst) < 0 || fstatfs(p->real, &fs) < 0 || (unsigned long)fs.f_type == OVERLAYFS_SUPER_MAGIC) {
		close(p->real);
		p->real = -1;
		return "the overlay's lower file is on another overlay";
	}
	return NULL;
}

/* --- the hook's records --- */

struct rec {
	struct hte_record r;
	double checked; /* when its init was last looked at */
	int live;
	unsigned long long netns; /* its init's network namespace, 0 when unknown */
};

static struct {
	pthread_mutex_t mu;
	struct rec r[RECORDS_MAX];
	unsigned n;
	struct timespec dir_mtime;
	ino_t dir_ino;
} R = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* A record file: root's, written by nobody else, small.  Returns: 0, or -1. */
static int read_record(int dir, const char *name, struct hte_record *out)
{
	char buf[64 << 10];
	struct stat st;
	ssize_t n;
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -1;
	n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
			    st.st_size < (off_t)sizeof(buf)
		    ? read(fd, buf, sizeof(buf))
		    : -1;
	close(fd);
	return n > 0 && hte_record_parse(buf, (size_t)n, out) == 0 ? 0 : -1;
}

/* Reads the records again when their directory changed (a record is written by a rename).  Under R.mu. */
static void load_records(void)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	int fd;

	fd = open(srv.records, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* Only root's own directory: a user's records would say anything. */
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		if (fd >= 0)
			close(fd);
		R.n = 0;
		R.dir_ino = 0;
		return;
	}
	if (st.st_mtim.tv_sec == R.dir_mtime.tv_sec && st.st_mtim.tv_nsec == R.dir_mtime.tv_nsec &&
	    st.st_ino == R.dir_ino) {
		close(fd);
		return;
	}
	R.dir_mtime = st.st_mtim;
	R.dir_ino = st.st_ino;
	R.n = 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) && R.n < RECORDS_MAX) {
		size_t len = strlen(e->d_name);
		struct rec *x = &R.r[R.n];

		if (len < 6 || strcmp(e->d_name + len - 5, ".json") || e->d_name[0] == '.')
			continue;
		if (read_record(dirfd(d), e->d_name, &x->r) < 0)
			continue;
		/* Named by its id, as the hook writes it. */
		if (strlen(x->r.id) + 5 != len || strncmp(e->d_name, x->r.id, len - 5))
			continue;
		x->checked = 0;
		R.n++;
	}
	closedir(d);
}

/* Whether the record's init still runs: the same pid, started at the same time.  Under R.mu. */
static int rec_live(struct rec *x, double now)
{
	char path[64], buf[1024];
	unsigned long long start;
	ssize_t n;

	if (x->checked && now - x->checked < 1)
		return x->live;
	x->checked = now;
	snprintf(path, sizeof(path), "/proc/%ld/stat", x->r.pid);
	n = ht_sys_read_file_into(path, buf, sizeof(buf));
	x->live = n > 0 && hte_proc_start_time(buf, (size_t)n, &start) == 0 && start == x->r.pid_start;
	if (x->live && !x->netns) {
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%ld/ns/net", x->r.pid);
		x->netns = stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
	}
	return x->live;
}

int container_of_mntns(unsigned long long mntns, char *id, int *has_view)
{
	double now = mono_now();
	int found = 0;

	pthread_mutex_lock(&R.mu);
	load_records();
	for (unsigned i = 0; i < R.n && !found; i++)
		if (R.r[i].r.mntns == mntns && rec_live(&R.r[i], now)) {
			snprintf(id, HTE_ID_MAX + 1, "%s", R.r[i].r.id);
			*has_view = R.r[i].r.has_view;
			found = 1;
		}
	pthread_mutex_unlock(&R.mu);
	return found;
}

int container_of_netns(unsigned long long netns, char *id, int *has_view)
{
	static unsigned long long own;
	double now = mono_now();
	int found = 0;
	struct stat st;

	/* The host's own network namespace names no container. */
	if (!own && stat("/proc/self/ns/net", &st) == 0)
		own = (unsigned long long)st.st_ino;
	if (!netns || netns == own)
		return 0;
	pthread_mutex_lock(&R.mu);
	load_records();
	for (unsigned i = 0; i < R.n; i++)
		if (rec_live(&R.r[i], now) && R.r[i].netns == netns) {
			/* Containers that share one (a pod's) cannot be told apart: none. */
			if (found++)
				break;
			snprintf(id, HTE_ID_MAX + 1, "%s", R.r[i].r.id);
			*has_view = R.r[i].r.has_view;
		}
	pthread_mutex_unlock(&R.mu);
	return found == 1;
}

/* The record of @id (one file per id), NULL for none.  Under R.mu, records loaded. */
static struct rec *rec_of(const char *id)
{
	for (unsigned i = 0; i < R.n; i++)
		if (!strcmp(R.r[i].r.id, id))
			return &R.r[i];
	return NULL;
}

int container_state(const char *id)
{
	struct rec *x;
	int state;

	pthread_mutex_lock(&R.mu);
	load_records();
	x = rec_of(id);
	state = x ? rec_live(x, mono_now()) : -1;
	pthread_mutex_unlock(&R.mu);
	return state;
}

int container_live(const char *id)
{
	return container_state(id) == 1;
}

int container_has_view(const char *id)
{
	struct rec *x;
	int v;

	pthread_mutex_lock(&R.mu);
	load_records();
	x = rec_of(id);
	v = x && rec_live(x, mono_now()) ? x->r.has_view : 0;
	pthread_mutex_unlock(&R.mu);
	return v;
}
