/* SPDX-License-Identifier: MIT */
/*
 * The shared cache, as the text service keeps it (docs/service.md):
 * HT_TEXT_CACHE_DIR/shared/<key>.text, root's entries, each owned by the
 * client whose offer filled it (the trusted.hugetext.client attribute),
 * evicted by the share rule (hte_share_pick); and each recorded
 * container's view, shared/c/<id>/, of hard links to entries named as the
 * container's processes name them.
 */
#include "tool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache.h"
#include "serve-int.h"
#include "setup.h"
#include "sys.h"

#define OWNER_XATTR "trusted.hugetext.client"
#define ENTRIES_MAX 4096 /* entries looked at for eviction and shares */

/*
 * Moves @name in the cache's mount (@mfd) aside as NAME.untrusted.PID.TIME
 * (root may, in a sticky directory) and logs it among the refusals, with
 * its owner @uid.  Returns: 0, or -errno.
 */
static int move_aside(int mfd, const char *name, uid_t uid)
{
	char aside[320];

	snprintf(aside, sizeof(aside), "%s.untrusted.%ld.%ld", name, (long)getpid(), (long)time(NULL));
	if (renameat(mfd, name, mfd, aside) < 0)
		return -errno;
	log_add(&srv.refused, "%s/%s belonged to uid %u: moved aside as %s", HT_TEXT_CACHE_DIR, name, (unsigned)uid,
		aside);
	return 0;
}

/*
 * The cache's mount is mode 1777 (users keep their own entries there), so
 * a user may make "shared" before the service does, and the service then
 * could fill nothing.  Whatever is there that is not root's own directory,
 * writable by root alone, is moved aside (root may, in a sticky
 * directory) and a new one made.  Returns: 0, or -errno.
 */
static int make_shared_dir(int mfd)
{
	struct stat st;
	int err;

	for (int tries = 0; tries < 2; tries++) {
		if (mkdirat(mfd, HT_SERVICE_SHARED, 0755) == 0)
			return 0;
		if (errno != EEXIST || fstatat(mfd, HT_SERVICE_SHARED, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022))
			return 0;
		err = move_aside(mfd, HT_SERVICE_SHARED, st.st_uid);
		if (err < 0)
			return err;
	}
	return -EPERM;
}

/*
 * The same for each user's directory: a user may make "hugetext-UID" for
 * another UID first (the mount is 1777), and that user's processes then
 * refuse the cache for good.  A hugetext-UID that is not UID's own
 * directory, written by UID alone, is moved aside; the user's next start
 * makes its own.
 */
static void move_aside_squats(int mfd)
{
	int dfd = dup(mfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	struct stat st;
	uid_t uid;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		if (!hte_user_dir_uid(e->d_name, &uid) || fstatat(mfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && st.st_uid == uid && !(st.st_mode & 022))
			continue;
		move_aside(mfd, e->d_name, st.st_uid);
	}
	closedir(d);
}

/* HT_TEXT_CACHE_DIR, mounted (huge tmpfs, srv.cache_size) when absent; its shared/ made. */
int open_shared_dir(int *mfd_out)
{
	char type[64], opts[512];
	int made = 0, mfd, fd, err;

	*mfd_out = -1;
	err = hte_mount_find(HT_TEXT_CACHE_DIR, type, sizeof(type), opts, sizeof(opts));
	if (err == 0) {
		if (!srv.cache_size)
			return -ENOENT;
		err = hte_mount_text_cache(HT_TEXT_CACHE_DIR, srv.cache_size, 0, &made);
		if (err < 0)
			return err;
		printf("serve: mounted the shared text cache at %s (%llu MiB at most)\n", HT_TEXT_CACHE_DIR,
		       (unsigned long long)(srv.cache_size >> 20));
	} else if (err < 0 || strcmp(type, "tmpfs") != 0) {
		return err < 0 ? err : -EINVAL;
	}
	mfd = open(HT_TEXT_CACHE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	err = make_shared_dir(mfd);
	move_aside_squats(mfd);
	if (err < 0) {
		close(mfd);
		return err;
	}
	fd = openat(mfd, HT_SERVICE_SHARED, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = -errno;
	if (fd >= 0) {
		struct stat st;

		/* Ours alone: root's, and nobody else may write in it. */
		if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
			close(fd);
			fd = -1;
			err = -EPERM;
		}
	}
	*mfd_out = mfd;
	return fd >= 0 ? fd : err;
}

/* The directory @name under @dirfd when it is root's own (no link, nobody else writes it); else -1. */
static int own_dir(int dirfd, const char *name)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* --- the entries and their owners --- */

struct entry {
	char name[256];
	struct hte_cache_entry e;
	ino_t ino;
	nlink_t nlink;
	char owner[HTE_ID_MAX + 16];
};

/* An entry's owner: the client its attribute names, "" when none. */
static void owner_of(int dirfd, const char *name, char *out, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = fd >= 0 ? fgetxattr(fd, OWNER_XATTR, out, cap - 1) : -1;

	out[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* The published entries of shared/ (@dirfd): malloc'ed, their number in *@n. */
static struct entry *list_entries(int dirfd, size_t *n)
{
	struct entry *v = calloc(ENTRIES_MAX, sizeof(*v));
	int dfd = dup(dirfd);
	DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *d;

	*n = 0;
	if (!v || !dir) {
		if (dir)
			closedir(dir);
		else if (dfd >= 0)
			close(dfd);
		free(v);
		return NULL;
	}
	while ((d = readdir(dir)) && *n < ENTRIES_MAX) {
		struct entry *x = &v[*n];
		struct stat st;
		size_t len = strlen(d->d_name);

		if (d->d_name[0] == '.' || strstr(d->d_name, ".tmp.") || len < 6 ||
		    strcmp(d->d_name + len - 5, ".text") || len >= sizeof(x->name) ||
		    fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		memcpy(x->name, d->d_name, len + 1);
		/* Nanoseconds: two fills a moment apart are still ordered. */
		x->e = (struct hte_cache_entry){ ns_of(&st.st_atim), ns_of(&st.st_mtim), (uint64_t)st.st_blocks * 512, -1 };
		x->ino = st.st_ino;
		x->nlink = st.st_nlink;
		owner_of(dirfd, d->d_name, x->owner, sizeof(x->owner));
		(*n)++;
	}
	closedir(dir);
	return v;
}

/*
 * Whether an owner still counts as a client: a uid always; a container
 * while its record says its init runs (a stopped container's entries are
 * nobody's: anyone's fill may evict them).
 */
static int owner_live(const char *owner)
{
	if (!strncmp(owner, "uid ", 4))
		return 1;
	if (!strncmp(owner, "container ", 10))
		return container_live(owner + 10);
	return 0;
}

/* Numbers the live owners of @v (e.owner), @who's too; returns their count, @who's number in *@me. */
static int number_owners(struct entry *v, size_t n, const char *who, int *me, char (*names)[HTE_ID_MAX + 16],
			 int max)
{
	int k = 0;

	*me = -1;
	for (size_t i = 0; i <= n; i++) {
		const char *o = i < n ? v[i].owner : who;
		int at = -1;

		if (!o[0] || (i < n && !owner_live(o)))
			continue;
		for (int j = 0; j < k && at < 0; j++)
			if (!strcmp(names[j], o))
				at = j;
		if (at < 0 && k < max) {
			snprintf(names[k], sizeof(names[k]), "%s", o);
			at = k++;
		}
		if (i < n)
			v[i].e.owner = at;
		else
			*me = at;
	}
	return k;
}

/* Removes the links to the entries @gone (inodes, @ng) from every container's view. */
static void unlink_views(int dirfd, const ino_t *gone, size_t ng)
{
	int cfd = ng ? own_dir(dirfd, HTE_VIEWS) : -1, cdup = cfd >= 0 ? dup(cfd) : -1;
	DIR *c = cdup >= 0 ? fdopendir(cdup) : NULL;
	struct dirent *v;

	while (c && (v = readdir(c))) {
		int vfd = v->d_name[0] != '.' ? own_dir(cfd, v->d_name) : -1, vdup = vfd >= 0 ? dup(vfd) : -1;
		DIR *d = vdup >= 0 ? fdopendir(vdup) : NULL;
		struct dirent *e;
		struct stat st;

		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.' && fstatat(vfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				for (size_t i = 0; i < ng; i++)
					if (st.st_ino == gone[i] && S_ISREG(st.st_mode))
						unlinkat(vfd, e->d_name, 0);
		if (d)
			closedir(d);
		else if (vdup >= 0)
			close(vdup);
		if (vfd >= 0)
			close(vfd);
	}
	if (c)
		closedir(c);
	else if (cdup >= 0)
		close(cdup);
	if (cfd >= 0)
		close(cfd);
}

/*
 * Frees room for @need bytes for a fill by client @who by the share rule,
 * entries' links in the views with them (a link keeps the memory).
 * Returns: NULL, or why not.
 */
static const char *make_room(int mfd, int dirfd, uint64_t need, const char *who)
{
	static char why[512];
	char (*names)[HTE_ID_MAX + 16] = NULL;
	struct entry *v = NULL;
	struct statfs sfs;
	size_t n = 0, *out = NULL;
	ino_t *gone = NULL;
	size_t ng = 0;
	uint64_t avail, total, share = 0;
	long k;
	int nowners, me;

	if (fstatfs(mfd, &sfs) < 0)
		return "cannot stat the shared cache";
	avail = (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
	total = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize;
	if (avail >= need)
		return NULL;
	if (total < need)
		return "the shared cache is full (even after eviction)";
	v = list_entries(dirfd, &n);
	names = calloc(n + 1, sizeof(*names));
	out = calloc(n + 1, sizeof(*out));
	gone = calloc(n + 1, sizeof(*gone));
	if (!v || !names || !out || !gone) {
		snprintf(why, sizeof(why), "out of memory");
		goto done;
	}
	nowners = number_owners(v, n, who, &me, names, (int)n + 1);
	{
		struct hte_cache_entry *e = calloc(n + 1, sizeof(*e));

		if (!e) {
			snprintf(why, sizeof(why), "out of memory");
			goto done;
		}
		for (size_t i = 0; i < n; i++)
			e[i] = v[i].e;
		k = hte_share_pick(e, n, nowners, me, total, avail, need, out, &share);
		free(e);
	}
	if (k < 0) {
		uint64_t mine = 0;

		for (size_t i = 0; i < n; i++)
			mine += v[i].e.owner == me && me >= 0 ? v[i].e.bytes : 0;
		snprintf(why, sizeof(why),
			 "the shared cache is full: the rest is other clients' within their share (%s holds %llu MiB, "
			 "a share is %llu MiB)",
			 who, (unsigned long long)(mine >> 20), (unsigned long long)(share >> 20));
		goto done;
	}
	why[0] = '\0';
	for (long i = 0; i < k; i++) {
		struct entry *x = &v[out[i]];

		if (unlinkat(dirfd, x->name, 0) < 0)
			continue;
		if (x->nlink > 1)
			gone[ng++] = x->ino;
		log_add(&srv.evicted, "%s (%llu MiB, %s, for %s)", x->name, (unsigned long long)(x->e.bytes >> 20),
			x->owner[0] ? x->owner : "nobody's", who);
	}
	unlink_views(dirfd, gone, ng);
	/* What the kernel says is free now decides. */
	if (fstatfs(mfd, &sfs) == 0 && (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize < need)
		snprintf(why, sizeof(why), "the shared cache is full (even after eviction)");
done:
	free(v);
	free(names);
	free(out);
	free(gone);
	return why[0] ? why : NULL;
}

/* The new entry's bytes: the file's code, then zeros to the span's end. */
static int fill_bytes(int fd, const struct ht_offer *m, char *p)
{
	uint64_t done = 0;

	while (done < m->mapped) {
		ssize_t n = pread(fd, p + done, m->mapped - done, (off_t)(m->file_off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (uint64_t)n;
	}
	return 0;
}

int entry_matches(int dirfd, const char *name, int fd, const struct ht_offer *m)
{
	static char buf[1 << 16];
	struct stat st;
	const char *p;
	uint64_t at = 0;
	int efd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), same;

	if (efd < 0)
		return 0;
	if (fstat(efd, &st) < 0 || (uint64_t)st.st_size != m->len ||
	    ht_sys_map_file(efd, m->len, PROT_READ, 0, (void **)&p) < 0) {
		close(efd);
		return 0;
	}
	close(efd);
	same = 1;
	while (same && at < m->mapped) {
		size_t want = m->mapped - at < sizeof(buf) ? (size_t)(m->mapped - at) : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)(m->file_off + at));

		same = n > 0 && memcmp(buf, p + at, (size_t)n) == 0;
		at += n > 0 ? (uint64_t)n : 0;
	}
	munmap((void *)p, m->len);
	return same;
}

/* True when the file is still what it was when the offer came. */
static int unchanged(int fd, const struct stat *was)
{
	struct stat now;

	return fstat(fd, &now) == 0 && now.st_size == was->st_size &&
	       now.st_mtim.tv_sec == was->st_mtim.tv_sec && now.st_mtim.tv_nsec == was->st_mtim.tv_nsec &&
	       now.st_ctim.tv_sec == was->st_ctim.tv_sec && now.st_ctim.tv_nsec == was->st_ctim.tv_nsec;
}

/* The name of @p's client, for the entry's owner. */
static void client_name(const struct pending *p, char *out, size_t cap)
{
	pthread_mutex_lock(&srv.mu);
	snprintf(out, cap, "%s", srv.clients[p->client].name);
	pthread_mutex_unlock(&srv.mu);
}

/*
 * Fills the entry @p->name under a temporary name, checks it sits on
 * 2 MiB pages and that the file did not change meanwhile, and publishes
 * it read-only.  A killed service leaves at most the temporary file,
 * which no process maps (its name is no entry's) and the next service
 * removes.  Returns: NULL, or why not.
 */
const char *fill_entry(int mfd, int dirfd, const struct pending *p)
{
	const struct ht_offer *m = &p->m;
	char tmp[300], who[HTE_ID_MAX + 16];
	const char *why = NULL;
	uint64_t huge = 0;
	void *map;
	int efd;

	/* Filled before, for another process: kept when it still holds the file's bytes. */
	if (faccessat(dirfd, p->name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		if (entry_matches(dirfd, p->name, p->real, m))
			return NULL;
		unlinkat(dirfd, p->name, 0);
		log_add(&srv.evicted, "%s (stale: the file changed under it)", p->name);
	}
	client_name(p, who, sizeof(who));
	why = make_room(mfd, dirfd, m->len, who);
	if (why)
		return why;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p->name, (long)getpid());
	unlinkat(dirfd, tmp, 0);
	efd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (efd < 0)
		return "cannot create a cache entry";
	/* Its owner, for the share rule: a file system without it makes the entry nobody's. */
	fsetxattr(efd, OWNER_XATTR, who, strlen(who), 0);
	/* The real file's host path, for the OCI hook's links into new views (ociview.c); only a whole one. */
	if (p->real_path[0] == '/' && strlen(p->real_path) < sizeof(p->real_path) - 1)
		fsetxattr(efd, HTE_REAL_XATTR, p->real_path, strlen(p->real_path), 0);
	if (ftruncate(efd, (off_t)m->len) < 0 || ht_sys_map_file(efd, m->len, PROT_READ | PROT_WRITE, 1, &map) < 0) {
		why = "cannot size or map the new entry";
	} else {
		/* Every page now: over the mount's limit a touch would be SIGBUS. */
		if (madvise(map, m->len, 23 /* MADV_POPULATE_WRITE */) < 0)
			why = "no room for the entry's pages";
		else if (fill_bytes(p->real, m, map) < 0)
			why = "cannot read the file";
		munmap(map, m->len);
	}
	/* As the library will see it: mapped read-only at a 2 MiB boundary, all of it huge. */
	if (!why && ht_sys_map_file_aligned(efd, m->len, PROT_READ, HT_HUGE_PAGE_SIZE, &map) == 0) {
		if (ht_sys_self_huge((uintptr_t)map, (uintptr_t)map + m->len, &huge) < 0 || huge < m->len)
			why = "the entry did not get 2 MiB pages (memory short?)";
		munmap(map, m->len);
	}
	if (!why && !unchanged(p->real, &p->rst))
		why = "the file changed while it was copied";
	if (!why && (fchmod(efd, 0444) < 0 || renameat(dirfd, tmp, dirfd, p->name) < 0))
		why = "cannot publish the entry";
	close(efd);
	if (why)
		unlinkat(dirfd, tmp, 0);
	return why;
}

/* --- the containers' views --- */

int hte_same_entry(int sfd, const char *name, int vfd, const char *vname)
{
	struct stat est, lst;

	return fstatat(sfd, name, &est, AT_SYMLINK_NOFOLLOW) == 0 && fstatat(vfd, vname, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
	       est.st_ino == lst.st_ino && est.st_dev == lst.st_dev;
}

int hte_link_as(int sfd, const char *name, int vfd, const char *vname)
{
	char tmp[300];

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", vname, (long)getpid()) >= (int)sizeof(tmp))
		return -1;
	unlinkat(vfd, tmp, 0);
	if (linkat(sfd, name, vfd, tmp, 0) == 0 && renameat(vfd, tmp, vfd, vname) == 0)
		return 0;
	unlinkat(vfd, tmp, 0);
	return -1;
}

int link_view(int dirfd, const struct pending *p, const char **why)
{
	struct stat est;
	int cfd, vfd, r = -1;

	*why = NULL;
	if (!p->view_name[0] || !p->view_id[0])
		return 0;
	if (!container_live(p->view_id)) {
		*why = "the container stopped before its view was linked";
		return -1;
	}
	if (fstatat(dirfd, p->name, &est, AT_SYMLINK_NOFOLLOW) < 0) {
		*why = "the entry went before its link was made";
		return -1;
	}
	cfd = own_dir(dirfd, HTE_VIEWS);
	vfd = cfd >= 0 ? own_dir(cfd, p->view_id) : -1;
	if (cfd >= 0)
		close(cfd);
	if (vfd < 0) {
		*why = "the container's view is missing or not root's own directory";
		return -1;
	}
	if (hte_same_entry(dirfd, p->name, vfd, p->view_name)) {
		close(vfd);
		return 0;
	}
	/*
	 * The entry holds the lower layer's bytes; the container runs what its
	 * descriptor reads.  Linked only when they are the same, all of them:
	 * a file the container changed (or a path that moved) is not linked.
	 */
	if (!entry_matches(dirfd, p->name, p->fd, &p->m)) {
		*why = "the file the container runs differs from the entry";
		close(vfd);
		return -1;
	}
	if (hte_link_as(dirfd, p->name, vfd, p->view_name) == 0)
		r = 1;
	else
		*why = "cannot link the entry into the container's view";
	close(vfd);
	if (r == 1)
		log_add(&srv.linked, "%s: %s as %s (container %s)", p->real_path, p->name, p->view_name, p->view_id);
	return r;
}

/* Whether the process that made a temporary file is gone (another service's are left alone). */
static int maker_gone(const char *name)
{
	long pid;

	return hte_tmp_pid(name, &pid) && (pid == (long)getpid() || (kill((pid_t)pid, 0) < 0 && errno == ESRCH));
}

/* Removes the temporary files of dead services in @dirfd. */
static void clean_dir(int dirfd)
{
	int dfd = dup(dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && strstr(e->d_name, ".tmp.") && maker_gone(e->d_name)) {
			log_add(&srv.evicted, "%s (left half-made by a service that was killed)", e->d_name);
			unlinkat(dirfd, e->d_name, 0);
		}
	if (d)
		closedir(d);
	else if (dfd >= 0)
		close(dfd);
}

/* The views' directory (shared/c), or -1. */
static int views_dir(int *mfd, int *dirfd)
{
	char type[64], opts[512];

	*mfd = *dirfd = -1;
	if (hte_mount_find(HT_TEXT_CACHE_DIR, type, sizeof(type), opts, sizeof(opts)) != 1 || strcmp(type, "tmpfs"))
		return -1;
	*mfd = open(HT_TEXT_CACHE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	*dirfd = *mfd >= 0 ? own_dir(*mfd, HT_SERVICE_SHARED) : -1;
	return *dirfd >= 0 ? own_dir(*dirfd, HTE_VIEWS) : -1;
}

static void close3(int a, int b, int c)
{
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	if (c >= 0)
		close(c);
}

void clean_leftovers(void)
{
	int mfd, dirfd, cfd = views_dir(&mfd, &dirfd), cdup = cfd >= 0 ? dup(cfd) : -1;
	DIR *c = cdup >= 0 ? fdopendir(cdup) : NULL;
	struct dirent *v;

	if (dirfd >= 0)
		clean_dir(dirfd);
	while (c && (v = readdir(c))) {
		int vfd = v->d_name[0] != '.' ? own_dir(cfd, v->d_name) : -1;

		if (vfd >= 0) {
			clean_dir(vfd);
			close(vfd);
		}
	}
	if (c)
		closedir(c);
	else if (cdup >= 0)
		close(cdup);
	close3(mfd, dirfd, cfd);
}

/* Removes the view @name (its links, then it) from @cfd. */
static void remove_view(int cfd, const char *name)
{
	int vfd = own_dir(cfd, name), vdup = vfd >= 0 ? dup(vfd) : -1;
	DIR *d = vdup >= 0 ? fdopendir(vdup) : NULL;
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d)) && n++ < 100000)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(vfd, e->d_name, 0);
	if (d)
		closedir(d);
	else if (vdup >= 0)
		close(vdup);
	if (vfd >= 0)
		close(vfd);
	if (unlinkat(cfd, name, AT_REMOVEDIR) == 0)
		log_add(&srv.evicted, "view %s/%s/%s/%s (its container is gone)", HT_TEXT_CACHE_DIR, HT_SERVICE_SHARED,
			HTE_VIEWS, name);
}

void sweep_views(void)
{
	int mfd, dirfd, cfd = views_dir(&mfd, &dirfd), cdup = cfd >= 0 ? dup(cfd) : -1;
	DIR *c = cdup >= 0 ? fdopendir(cdup) : NULL;
	struct dirent *v;
	time_t now = time(NULL);

	while (c && (v = readdir(c))) {
		struct stat st;
		int state;

		if (v->d_name[0] == '.' || fstatat(cfd, v->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
		    !hte_id_valid(v->d_name))
			continue;
		/* A record whose init is gone: stopped.  No record: stopped, or being made (the grace). */
		state = container_state(v->d_name);
		if (state == 1 || (state < 0 && now - st.st_ctim.tv_sec < VIEW_GRACE_S))
			continue;
		remove_view(cfd, v->d_name);
	}
	if (c)
		closedir(c);
	else if (cdup >= 0)
		close(cdup);
	close3(mfd, dirfd, cfd);
}

void count_shares(void)
{
	int mfd, dirfd, cfd = views_dir(&mfd, &dirfd);
	struct entry *v = NULL;
	struct statfs sfs;
	size_t n = 0;
	unsigned owners = 0;
	char (*names)[HTE_ID_MAX + 16] = NULL;
	uint64_t used = 0;

	if (dirfd >= 0)
		v = list_entries(dirfd, &n);
	if (v)
		names = calloc(n + 1, sizeof(*names));
	if (v && names) {
		int me;

		owners = (unsigned)number_owners(v, n, "", &me, names, (int)n + 1);
	}
	pthread_mutex_lock(&srv.mu);
	for (int i = 0; i < MAX_CLIENTS; i++) {
		srv.clients[i].cache_bytes = 0;
		srv.clients[i].cache_entries = 0;
	}
	for (size_t i = 0; v && names && i < n; i++) {
		used += v[i].e.bytes;
		if (v[i].e.owner < 0)
			continue;
		for (int c = 0; c < MAX_CLIENTS; c++)
			if (srv.clients[c].used && !strcmp(srv.clients[c].name, names[v[i].e.owner])) {
				srv.clients[c].cache_bytes += v[i].e.bytes;
				srv.clients[c].cache_entries++;
			}
	}
	srv.cache_used = used;
	srv.cache_share = mfd >= 0 && fstatfs(mfd, &sfs) == 0
				  ? (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize / (owners ? owners : 1)
				  : 0;
	pthread_mutex_unlock(&srv.mu);
	free(v);
	free(names);
	close3(mfd, dirfd, cfd);
}
