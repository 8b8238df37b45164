/* SPDX-License-Identifier: MIT */
/* The shared text cache (see cache.h). */
#include "cache.h"
#include "pool.h"
#include "service.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* How many places of a hit are compared with the live code. */
#define HT_CACHE_SAMPLES 32
#define HT_CACHE_SAMPLE_LEN 64

/* statfs(2)'s f_type of tmpfs. */
#define HT_TMPFS_MAGIC 0x01021994

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int ht_cache_name(const struct ht_cache_key *k, char *buf, size_t len)
{
	char id[2 * 64 + 1];
	int n;

	if (k->build_id) {
		size_t idlen = k->build_id_len > 64 ? 64 : k->build_id_len;

		for (size_t i = 0; i < idlen; i++)
			snprintf(id + 2 * i, 3, "%02x", k->build_id[i]);
		id[2 * idlen] = '\0';
		n = snprintf(buf, len, "b-%s-%llx-%llx-%llx.text", id,
			     (unsigned long long)k->file_off, (unsigned long long)k->len,
			     (unsigned long long)k->mapped);
	} else {
		n = snprintf(buf, len, "f-%llx-%llx-%llx-%llx.%09ld-%llx-%llx-%llx.text",
			     (unsigned long long)k->dev, (unsigned long long)k->ino,
			     (unsigned long long)k->size, (unsigned long long)k->mtime_sec,
			     k->mtime_nsec, (unsigned long long)k->file_off,
			     (unsigned long long)k->len, (unsigned long long)k->mapped);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

void ht_cache_key_of_file(struct ht_cache_key *k, const struct stat *st)
{
	k->build_id = NULL;
	k->build_id_len = 0;
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->size = (uint64_t)st->st_size;
	k->mtime_sec = st->st_mtim.tv_sec;
	k->mtime_nsec = st->st_mtim.tv_nsec;
}

const char *ht_cache_distrust(const struct stat *st, uid_t euid, int want_dir)
{
	if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return want_dir ? "cache directory is not a directory" : "cache entry is not a regular file";
	if (st->st_uid != euid && st->st_uid != 0)
		return want_dir ? "cache directory belongs to another user" : "cache entry belongs to another user";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return want_dir ? "cache directory is group- or world-writable" : "cache entry is group- or world-writable";
	return NULL;
}

static int refuse(struct ht_region *r, const char *why, int err)
{
	r->cache = "refused";
	r->cache_error = why;
	return err < 0 ? err : -EPERM;
}

/*
 * The directory must be ours (or root's) and private, on a 2 MiB hugetlbfs
 * or on tmpfs; @tmpfs says which.
 */
static int check_dir(int fd, int *tmpfs, struct ht_region *r)
{
	struct stat st;
	struct statfs sfs;
	const char *why;

	if (ht_sys_fstat(fd, &st) < 0 || ht_sys_fstatfs(fd, &sfs) < 0)
		return refuse(r, "cannot stat the cache directory", -EIO);
	why = ht_cache_distrust(&st, ht_geteuid(), 1);
	if (why)
		return refuse(r, why, -EPERM);
	*tmpfs = (unsigned long)sfs.f_type == HT_TMPFS_MAGIC;
	if (!*tmpfs && ((unsigned long)sfs.f_type != HT_HUGETLBFS_MAGIC ||
			(size_t)sfs.f_bsize != HT_HUGE_PAGE_SIZE))
		return refuse(r, "cache directory is neither on a 2 MiB hugetlbfs nor on tmpfs", -EINVAL);
	return 0;
}

/* Opens (making it private if new) hugetext-<euid> under the open @mfd. */
static int open_user_dir(int mfd, struct ht_region *r)
{
	char name[32];
	int fd, err;

	snprintf(name, sizeof(name), "hugetext-%u", (unsigned)ht_geteuid());
	err = ht_sys_mkdirat(mfd, name, 0700);
	fd = err == 0 || err == -EEXIST ? ht_sys_openat(mfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0) : err;
	return fd >= 0 ? fd : refuse(r, "cannot open the cache directory", fd);
}

/* <first 2 MiB hugetlbfs mount>/hugetext-<uid>. */
static int open_hugetlbfs_dir(struct ht_region *r)
{
	char *buf, mnt[512];
	size_t len;
	long def = ht_default_hugepage_kb();
	int mfd, fd, err;

	if (ht_sys_read_file("/proc/self/mounts", &buf, &len) < 0)
		return refuse(r, "cannot read /proc/self/mounts", -EIO);
	err = ht_find_hugetlbfs(buf, len, HT_HUGE_PAGE_SIZE / 1024, def > 0 ? (uint64_t)def : 0,
				mnt, sizeof(mnt));
	free(buf);
	if (err < 0)
		return err; /* no mount: the cache is simply off */
	mfd = ht_sys_open(mnt, O_RDONLY | O_DIRECTORY, 0);
	if (mfd < 0)
		return refuse(r, "cannot open the hugetlbfs mount", mfd);
	fd = open_user_dir(mfd, r);
	ht_sys_close(mfd);
	return fd;
}

/* True when the open directory @fd (of @st) is the root of a file system. */
static int mount_root(int fd, const struct stat *st)
{
	struct stat up;
	int pfd = ht_sys_openat(fd, "..", O_RDONLY | O_DIRECTORY, 0);
	int err;

	if (pfd < 0)
		return 0;
	err = ht_sys_fstat(pfd, &up);
	ht_sys_close(pfd);
	return err == 0 && up.st_dev != st->st_dev;
}

/*
 * Set once HT_TEXT_CACHE_DIR is seen read-only (a container's view, made
 * by the OCI hook): no directory of this user's can be made there, so
 * later spans refuse at once, with no system call.
 */
static int text_dir_readonly;

static const char readonly_why[] = HT_TEXT_CACHE_DIR " is read-only here (a container's view of the "
				   "cache): only the text service's entries are mapped";

/*
 * The service's entries: HT_TEXT_CACHE_DIR/shared, root's directory, made
 * by the service, never by us, and written by root alone.  On the host
 * the text directory is the cache's mount; in a container the hook binds
 * the container's view of it over shared/, on a read-only tmpfs of its
 * own: either is a mount of its own, never a directory left on /run.
 */
static int open_shared_dir(int mfd, const struct stat *mst, struct ht_region *r)
{
	struct stat st;
	int fd = ht_sys_openat(mfd, HT_SERVICE_SHARED, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);

	if (fd < 0)
		return fd;
	if (ht_sys_fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		ht_sys_close(fd);
		return refuse(r, "the service's cache directory is not root's alone", -EPERM);
	}
	if (!mount_root(mfd, mst) && !mount_root(fd, &st)) {
		ht_sys_close(fd);
		return refuse(r, HT_TEXT_CACHE_DIR " is not a mount of its own (hugetext setup mounts it)", -EPERM);
	}
	return fd;
}

/*
 * HT_TEXT_CACHE_DIR/hugetext-<uid>.  Where set-up never ran, the one
 * failed open() is all it costs: -ENOENT, nothing said.  The mount point
 * must be root's tmpfs, writable by others only when sticky (1777), so
 * nobody can rename our directory away and put theirs in its place.
 */
static int open_text_dir(struct ht_region *r, int shared)
{
	struct stat st;
	struct statfs sfs;
	int mfd, fd;

	if (!shared && __atomic_load_n(&text_dir_readonly, __ATOMIC_RELAXED))
		return refuse(r, readonly_why, -EROFS);
	mfd = ht_sys_open(HT_TEXT_CACHE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (mfd == -ENOENT)
		return mfd;
	if (mfd < 0)
		return refuse(r, "cannot open " HT_TEXT_CACHE_DIR, mfd);
	if (ht_sys_fstat(mfd, &st) < 0 || ht_sys_fstatfs(mfd, &sfs) < 0) {
		ht_sys_close(mfd);
		return refuse(r, "cannot stat " HT_TEXT_CACHE_DIR, -EIO);
	}
	if (st.st_uid != 0 || (unsigned long)sfs.f_type != HT_TMPFS_MAGIC ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		ht_sys_close(mfd);
		return refuse(r, HT_TEXT_CACHE_DIR " is not root's tmpfs (sticky if others may write)", -EPERM);
	}
	if (shared) {
		fd = open_shared_dir(mfd, &st, r);
		ht_sys_close(mfd);
		return fd;
	}
	if (sfs.f_flags & ST_RDONLY) {
		ht_sys_close(mfd);
		__atomic_store_n(&text_dir_readonly, 1, __ATOMIC_RELAXED);
		return refuse(r, readonly_why, -EROFS);
	}
	/* A directory left on /run's own tmpfs is no cache: entries would fill /run. */
	if (!mount_root(mfd, &st)) {
		ht_sys_close(mfd);
		return refuse(r, HT_TEXT_CACHE_DIR " is not a mount of its own (hugetext setup mounts it)", -EPERM);
	}
	fd = open_user_dir(mfd, r);
	ht_sys_close(mfd);
	if (fd == -EROFS) {
		__atomic_store_n(&text_dir_readonly, 1, __ATOMIC_RELAXED);
		return refuse(r, readonly_why, fd);
	}
	return fd;
}

int ht_text_cache_present(void)
{
	int fd = ht_sys_open(HT_TEXT_CACHE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);

	if (fd < 0)
		return fd != -ENOENT;
	ht_sys_close(fd);
	return 1;
}

/*
 * auto: the set-up's tmpfs cache only.  on: HUGETEXT_SHARE_DIR, else the
 * set-up's cache, else the first 2 MiB hugetlbfs.
 */
static int open_dir(const struct ht_options *opt, enum ht_cache_use use, int *tmpfs,
		    struct ht_region *r)
{
	int fd, err;

	/*
	 * A user's own entries are the user's to write: never map them into a
	 * process with more privilege than that user (a program with file
	 * capabilities or set-group-ID keeps the user's euid, so the user's
	 * directory, and it could be made to run the user's code).  Root's
	 * shared entries serve it; a set-user-ID-root program uses root's own.
	 */
	if (use != HT_CACHE_SHARED_HIT && ht_geteuid() != 0 && ht_sys_elevated())
		return refuse(r, "a privileged process (set-ID, file capabilities) maps no user's cache entry",
			      -EPERM);
	if (use == HT_CACHE_SHARED_HIT) {
		fd = open_text_dir(r, 1);
	} else if (opt->share == HT_SHARE_AUTO) {
		fd = open_text_dir(r, 0);
	} else if (opt->share_dir) {
		fd = ht_sys_open(opt->share_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (fd < 0)
			return refuse(r, "cannot open HUGETEXT_SHARE_DIR", fd);
	} else {
		fd = open_text_dir(r, 0);
		if (fd == -ENOENT)
			fd = open_hugetlbfs_dir(r);
	}
	if (fd < 0)
		return fd;
	err = check_dir(fd, tmpfs, r);
	/*
	 * A process that turned THP off for itself gets no 2 MiB tmpfs page:
	 * its fill would publish an entry of small pages, refused by every
	 * later start.  The hugetlbfs cache still serves it.
	 */
	if (err == 0 && *tmpfs && ht_sys_thp_disabled() == 1)
		err = refuse(r, "transparent huge pages are off for this process (PR_SET_THP_DISABLE)", -EPERM);
	if (err < 0) {
		ht_sys_close(fd);
		return err;
	}
	return fd;
}

/*
 * A stale or damaged entry differs from the live code somewhere; look in a
 * few places, the first and last bytes included.  Offsets wander inside
 * each stride so that regular code layouts cannot line the samples up on
 * padding.  Reading all of it would cost more than the whole warm start.
 */
static int same_code(const char *copy, struct ht_span span, size_t mapped)
{
	size_t step = mapped / HT_CACHE_SAMPLES;

	/* No span is this short (the callers' spans are whole 2 MiB pages): refuse, never read out. */
	if (mapped < HT_CACHE_SAMPLE_LEN)
		return 0;
	for (size_t i = 0; i < HT_CACHE_SAMPLES; i++) {
		size_t at = i * step + (i * 40503u) % (step > HT_CACHE_SAMPLE_LEN ? step - HT_CACHE_SAMPLE_LEN : 1);

		if (i == HT_CACHE_SAMPLES - 1 || at + HT_CACHE_SAMPLE_LEN > mapped)
			at = mapped - HT_CACHE_SAMPLE_LEN;
		if (memcmp(copy + at, (const char *)span.start + at, HT_CACHE_SAMPLE_LEN) != 0)
			return 0;
	}
	return 1;
}

/*
 * Opens the entry through a private link that is gone before the code
 * runs, so /proc/self/maps shows the mapping as deleted.  Programs that
 * reopen their code's file from maps (V8 remaps its builtins that way,
 * and cannot map a hugetlbfs file at a 4 KiB offset) then fall back to a
 * copy instead of failing.
 */
static int open_entry(int dirfd, const char *name, int shared)
{
	char link[300];
	int fd, err;

	/*
	 * The service's directory is root's: no link of ours can be made
	 * there.  Its entries are on tmpfs, which maps at any 4 KiB offset, so
	 * a program that maps again what /proc/self/maps names gets the same
	 * bytes.
	 */
	if (shared)
		return ht_sys_openat(dirfd, name, O_RDONLY | O_NOFOLLOW, 0);

	snprintf(link, sizeof(link), "%s.tmp.%ld.link", name, (long)ht_getpid());
	err = ht_sys_linkat(dirfd, name, link);
	if (err == -EEXIST) {
		ht_sys_unlinkat(dirfd, link);
		err = ht_sys_linkat(dirfd, name, link);
	}
	if (err < 0)
		return err;
	fd = ht_sys_openat(dirfd, link, O_RDONLY | O_NOFOLLOW, 0);
	ht_sys_unlinkat(dirfd, link);
	return fd;
}

/*
 * A tmpfs entry is shared only where the kernel maps it with PMDs: its
 * folios are 2 MiB only when the mount has huge= and memory allowed it
 * when the entry was filled.  Anything less would be 4 KiB pages for all.
 */
static int entry_huge(const char *p, size_t len)
{
	uint64_t huge = 0;

	return ht_sys_self_huge((uintptr_t)p, (uintptr_t)p + len, &huge) == 0 && huge >= len;
}

/* Maps a complete, trusted entry as a copy ready to swap in. */
static int map_entry(int dirfd, int tmpfs, const char *name, int shared, struct ht_span span,
		     size_t mapped, char **copy, struct ht_region *r)
{
	size_t len = span.end - span.start;
	struct stat st;
	const char *why;
	void *p;
	int fd = open_entry(dirfd, name, shared);
	int err;

	if (fd < 0)
		return fd == -ENOENT ? fd : refuse(r, "cannot open the cache entry", fd);
	/* fstat on the descriptor we map, never on the path: no swap in between. */
	err = ht_sys_fstat(fd, &st);
	why = err < 0 ? "cannot stat the cache entry" : ht_cache_distrust(&st, ht_geteuid(), 0);
	if (!why && shared && st.st_uid != 0)
		why = "the service's cache entry does not belong to root";
	if (!why && (uint64_t)st.st_size != len)
		why = "cache entry has the wrong size (truncated?)";
	if (!why) {
		err = tmpfs ? ht_sys_map_file_aligned(fd, len, PROT_READ | PROT_EXEC, HT_HUGE_PAGE_SIZE, &p)
			    : ht_sys_map_file(fd, len, PROT_READ | PROT_EXEC, 0, &p);
		if (err < 0)
			why = "cannot map the cache entry";
	}
	ht_sys_close(fd);
	if (why)
		return refuse(r, why, err < 0 ? err : -EPERM);
	if (tmpfs && !entry_huge(p, len)) {
		ht_sys_unmap(p, len);
		return refuse(r, "cache entry is not on huge pages (tmpfs without huge=, or memory was "
			      "short when it was filled)", -ENOMEM);
	}
	if (!same_code(p, span, mapped)) {
		ht_sys_unmap(p, len);
		return refuse(r, "cache entry differs from the code (stale or damaged)", -ESTALE);
	}
	*copy = p;
	return 0;
}

/* Fills a new entry under a temporary name and publishes it whole. */
static int fill_entry(const struct ht_options *opt, int dirfd, int tmpfs, const char *name,
		      struct ht_span span, const struct ht_source *src, struct ht_region *r)
{
	size_t len = span.end - span.start;
	char tmp[300];
	void *p;
	int fd, err;

	if (tmpfs) {
		/* tmpfs pages are charged to the filler's memory cgroup, as a THP copy is. */
		if (ht_memcg_room() < len)
			return refuse(r, "too little room in the memory cgroup to fill the cache", -ENOMEM);
	} else {
		long avail = ht_pool_available_2m();

		if (avail < 0 || (size_t)avail < len / HT_HUGE_PAGE_SIZE)
			return refuse(r, "too few free pages in the explicit pool for the cache", -ENOMEM);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)ht_getpid());
	fd = ht_sys_openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0)
		return refuse(r, "cannot create a cache entry", fd);
	/*
	 * A shared hugetlbfs mapping reserves its pages now.  On tmpfs the size
	 * comes first too: huge=within_size gives 2 MiB pages only inside it.
	 */
	err = ht_sys_ftruncate(fd, (off_t)len);
	if (err == 0)
		err = ht_sys_map_file(fd, len, PROT_READ | PROT_WRITE, 1, &p);
	ht_sys_close(fd);
	/* Get every page first: over a hugetlb cgroup or a tmpfs size limit, a touch is SIGBUS. */
	if (err == 0 && (err = ht_sys_advise(p, len, MADV_POPULATE_WRITE)) < 0)
		ht_sys_unmap(p, len);
	if (err == 0) {
		ht_fill(opt, span, src, p, len, r);
		ht_sys_unmap(p, len);
		err = ht_sys_renameat(dirfd, tmp, name);
	}
	if (err < 0)
		ht_sys_unlinkat(dirfd, tmp);
	/* Someone else published the same entry first: theirs is as good. */
	if (err == -EEXIST)
		return 0;
	return err < 0 ? refuse(r, "cannot fill the cache entry", err) : 0;
}

static int cache_move_in(const struct ht_options *opt, int dirfd, int tmpfs, const char *name,
			 enum ht_cache_use use, struct ht_span span, const struct ht_source *src,
			 struct ht_region *r)
{
	const char *how = "hit";
	int shared = use == HT_CACHE_SHARED_HIT, fill = use == HT_CACHE_HIT_OR_FILL;
	char *copy;
	int err = map_entry(dirfd, tmpfs, name, shared, span, src->mapped, &copy, r);

	if (err == -ENOENT && !fill)
		return err;
	if (err == -ENOENT) {
		how = "miss";
		err = fill_entry(opt, dirfd, tmpfs, name, span, src, r);
		if (err == 0)
			err = map_entry(dirfd, tmpfs, name, 0, span, src->mapped, &copy, r);
	}
	if (err < 0)
		return err == -ENOENT ? refuse(r, "cache entry vanished", err) : err;
	/* A background move: the program runs meanwhile and may have written its code. */
	if (src->unchanged && !ht_window_checked(src, span, copy)) {
		ht_sys_unmap(copy, span.end - span.start);
		return refuse(r, "the code changed while the cache entry was mapped", -EBUSY);
	}
	r->cache = how;
	r->mode = tmpfs ? HT_MODE_THP : HT_MODE_EXPLICIT;
	r->huge_bytes = span.end - span.start;
	err = ht_swap_in(copy, span, src, r);
	if (src->unchanged)
		ht_window_close();
	if (err < 0)
		return refuse(r, "cannot swap the cache entry in", err);
	return 0;
}

int ht_cache_move(const struct ht_options *opt, const struct ht_cache_key *key,
		  enum ht_cache_use use, struct ht_span span, const struct ht_source *src,
		  struct ht_region *r)
{
	char name[256];
	int dirfd, tmpfs = 0, err;

	r->cache = "";
	r->cache_error = "";
	if (ht_cache_name(key, name, sizeof(name)) < 0)
		return refuse(r, "cache key too long", -ENAMETOOLONG);
	dirfd = open_dir(opt, use, &tmpfs, r);
	if (dirfd < 0)
		return dirfd;
	err = cache_move_in(opt, dirfd, tmpfs, name, use, span, src, r);
	ht_sys_close(dirfd);
	return err;
}
