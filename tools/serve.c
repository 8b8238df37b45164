/* SPDX-License-Identifier: MIT */
/*
 * hugetext serve: the text service.  Processes running the preload hand it
 * the open files of big objects whose code no shared path serves yet; it
 * makes that code huge for every later start, off their critical path:
 *
 *   1. it warms the file's page cache into 2 MiB pages (as `hugetext warm`),
 *      which the kernel maps huge by itself where the file system keeps
 *      such pages (XFS, ext4 from 6.16): no copy at all;
 *   2. where that did not take, it fills the shared cache's entry, root's
 *      and read-only, under HT_TEXT_CACHE_DIR/shared, which every user's
 *      later starts map (the tmpfs is mounted with a size limit when absent);
 *   3. a file still mapped by running processes is warmed again later.
 *
 * Only files that only root can write are served, and only when the
 * sender runs them: nothing a user can write reaches another user.  One
 * thread, one message per connection; a client cannot stall it for more
 * than a moment.  The state file (HTE_SERVE_STATE) says what it did, for
 * `hugetext status`.  The contract is docs/service.md.
 */
#include "tool.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <elf.h>

#include "cache.h"
#include "conf.h"
#include "objects.h"
#include "serve.h"
#include "service.h"
#include "setup.h"
#include "status.h"
#include "sys.h"

#define MAX_PENDING 64     /* files waiting to be warmed again */
#define MAX_PER_UID 8      /* of them, from one user */
#define MAX_DONE 1024      /* offers remembered, so a repeat costs nothing */
#define DONE_FOR_S 60      /* for this long: an offer after it means the entry is gone or unusable */
#define RETRY_S 1          /* between two looks at a file still in use */
#define RETRY_MAX_S 32     /* the most between two warms that can only take part of a file */
#define FILL_AFTER 30      /* warms while the sender runs before the cache is filled */
#define KEEP_TRYING_S 300  /* five minutes of retries, then the file is dropped */
#define GONE_TRIES 5       /* warms that took nothing once the sender was gone, before a fill */
#define LOG_KEEP 32        /* lines of each kind kept for the state file */

static const char serve_usage[] =
	"usage: hugetext serve [--socket PATH] [--state PATH] [--config FILE] [--no-warm] [--once]\n"
	"\n"
	"Run the text service: take the files that processes running the preload\n"
	"offer, and make their code huge for later starts (warm the page cache into\n"
	"2 MiB pages; else fill the shared text cache at " HT_TEXT_CACHE_DIR ", mounted\n"
	"when absent with text_cache_size of /etc/hugetext.conf as its limit, by\n"
	"default 1/16 of memory).  Under systemd the socket comes from\n"
	"hugetext-serve.socket; started by hand it binds " HT_SERVICE_SOCKET " itself.\n"
	"'service = 0' in /etc/hugetext.conf (or --config FILE): exit at once.\n"
	"--state PATH: where it says what it did (default " HTE_SERVE_STATE "; \"\": nowhere).\n"
	"--no-warm: never warm the page cache, fill the shared cache only.\n"
	"--once: serve one offer, then exit (for tests).\n";

/* What one served file is known as, so a repeat costs a lookup. */
struct key {
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_sec, ctime_sec;
	long mtime_nsec, ctime_nsec; /* the change time too: a write that put the time back */
	uint64_t file_off, len, mapped;
};

/* A file being served: its descriptor, what was offered, by whom. */
struct pending {
	int fd;
	struct stat st;
	struct ht_offer m;
	struct key k;
	char name[256];    /* the cache entry's name, from the checks at the offer */
	uid_t uid;
	pid_t sender;
	unsigned tries, gone_tries;
	unsigned wait_s;   /* until the next try: doubles while warms take only part */
	time_t next, until;
};

struct line {
	char text[400];
};

struct log {
	struct line l[LOG_KEEP];
	unsigned n, next;
	unsigned long total;
};

static struct {
	const char *socket, *state, *config;
	uint64_t cache_size;   /* 0: no shared cache */
	int no_warm;           /* --no-warm: the shared cache only */
	struct key done[MAX_DONE];
	time_t done_at[MAX_DONE];
	unsigned ndone, done_next;
	struct pending pend[MAX_PENDING];
	unsigned npend;
	struct log warmed, filled, refused, evicted;
	unsigned long offers, warms, tries; /* tries: attempt() calls, the waits' clock */
	volatile sig_atomic_t stop;
} S;

static void log_add(struct log *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_add(struct log *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->l[g->next].text, sizeof(g->l[0].text), fmt, ap);
	va_end(ap);
	g->next = (g->next + 1) % LOG_KEEP;
	g->n += g->n < LOG_KEEP;
	g->total++;
}

/* --- pure parts --- */

int hte_maps_runs_file(const char *maps, size_t len, dev_t dev, ino_t ino)
{
	const char *p = maps, *end = maps + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char line[512], perms[8];
		unsigned maj, min;
		unsigned long long lo, hi, off, inode;
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &lo, &hi, perms, &off, &maj, &min,
			   &inode) == 7 &&
		    perms[2] == 'x' && inode == (unsigned long long)ino && inode != 0 &&
		    maj == major(dev) && min == minor(dev))
			return 1;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static const struct hte_entry_age *order_of;

int hte_user_dir_uid(const char *name, uid_t *uid)
{
	unsigned long long v = 0;
	const char *p;

	if (strncmp(name, "hugetext-", 9) != 0)
		return 0;
	p = name + 9;
	if (*p < '0' || *p > '9' || (*p == '0' && p[1]))
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > (uid_t)-1)
			return 0;
	}
	if (*p)
		return 0;
	*uid = (uid_t)v;
	return 1;
}

static int unused(const struct hte_entry_age *a)
{
	return a->atime <= a->mtime;
}

static int by_eviction(const void *x, const void *y)
{
	const struct hte_entry_age *a = &order_of[*(const size_t *)x], *b = &order_of[*(const size_t *)y];

	if (unused(a) != unused(b))
		return unused(a) ? -1 : 1;
	if (unused(a))
		return a->mtime < b->mtime ? -1 : a->mtime > b->mtime;
	return a->atime < b->atime ? -1 : a->atime > b->atime;
}

void hte_eviction_order(const struct hte_entry_age *e, size_t n, size_t *idx)
{
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	order_of = e;
	qsort(idx, n, sizeof(*idx), by_eviction);
}

uint64_t hte_auto_cache_size(uint64_t mem_total)
{
	uint64_t s = mem_total / 16;

	s &= ~((2ULL << 20) - 1);
	if (s < (256ULL << 20))
		s = 256ULL << 20;
	return s > (4ULL << 30) ? 4ULL << 30 : s;
}

/* --- the files --- */

static void fd_path(int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(buf, len, "(fd %d)", fd);
}

static void key_of(const struct stat *st, const struct ht_offer *m, struct key *k)
{
	memset(k, 0, sizeof(*k));
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->size = st->st_size;
	k->mtime_sec = st->st_mtim.tv_sec;
	k->mtime_nsec = st->st_mtim.tv_nsec;
	k->ctime_sec = st->st_ctim.tv_sec;
	k->ctime_nsec = st->st_ctim.tv_nsec;
	k->file_off = m->file_off;
	k->len = m->len;
	k->mapped = m->mapped;
}

static int seen(const struct key *k)
{
	time_t now = time(NULL);

	for (unsigned i = 0; i < S.ndone; i++)
		if (!memcmp(&S.done[i], k, sizeof(*k)) && now - S.done_at[i] < DONE_FOR_S)
			return 1;
	for (unsigned i = 0; i < S.npend; i++)
		if (!memcmp(&S.pend[i].k, k, sizeof(*k)))
			return 1;
	return 0;
}

static void remember(const struct key *k)
{
	S.done[S.done_next] = *k;
	S.done_at[S.done_next] = time(NULL);
	S.done_next = (S.done_next + 1) % MAX_DONE;
	S.ndone += S.ndone < MAX_DONE;
}

/*
 * The entry's name, as the library looks it up: by the offered file itself
 * (device, inode, size, time), never by its build ID, which any file can
 * claim (docs/service.md).  The offer's span must lie in an executable
 * segment of a valid ELF file.  Returns: NULL or why not.
 */
static const char *entry_name(int fd, const struct stat *st, const struct ht_offer *m, char *name,
			      size_t len)
{
	struct ht_cache_key ck = { .file_off = m->file_off, .len = m->len, .mapped = m->mapped };
	char path[64];
	struct hte_file f;
	int in_text = 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (hte_file_open(&f, path, 0, "serve") < 0)
		return "not an ELF file hugetext can read";
	for (size_t i = 0; i < f.elf.nload; i++) {
		const struct hte_seg *s = &f.elf.load[i];

		/* The span's code overlaps an executable segment's bytes in the file. */
		if ((s->flags & PF_X) && m->file_off < s->offset + s->filesz &&
		    s->offset < m->file_off + m->mapped)
			in_text = 1;
	}
	hte_file_close(&f);
	if (!in_text)
		return "the span is not in the file's code";
	ht_cache_key_of_file(&ck, st);
	return ht_cache_name(&ck, name, len) < 0 ? "cache key too long" : NULL;
}

/* --- the shared cache --- */

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
	log_add(&S.refused, "%s/%s belonged to uid %u: moved aside as %s", HT_TEXT_CACHE_DIR, name, (unsigned)uid,
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

/* HT_TEXT_CACHE_DIR, mounted (huge tmpfs, S.cache_size) when absent; its shared/ made. */
static int open_shared_dir(int *mfd_out)
{
	char type[64], opts[512];
	int made = 0, mfd, fd, err;

	err = hte_mount_find(HT_TEXT_CACHE_DIR, type, sizeof(type), opts, sizeof(opts));
	if (err == 0) {
		if (!S.cache_size)
			return -ENOENT;
		err = hte_mount_text_cache(HT_TEXT_CACHE_DIR, S.cache_size, 0, &made);
		if (err < 0)
			return err;
		printf("serve: mounted the shared text cache at %s (%llu MiB at most)\n", HT_TEXT_CACHE_DIR,
		       (unsigned long long)(S.cache_size >> 20));
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

/* Frees room for @need bytes by the eviction rule.  Returns: 0, or -ENOSPC. */
static int make_room(int mfd, int dirfd, uint64_t need)
{
	struct hte_entry_age e[256];
	char names[256][256];
	size_t idx[256], n = 0;
	struct statfs sfs;
	struct dirent *d;
	DIR *dir;
	uint64_t avail;

	if (fstatfs(mfd, &sfs) < 0)
		return -errno;
	avail = (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
	if (avail >= need)
		return 0;
	if ((uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize < need)
		return -ENOSPC;
	dir = fdopendir(dup(dirfd));
	if (!dir)
		return -errno;
	while ((d = readdir(dir)) && n < 256) {
		struct stat st;

		if (d->d_name[0] == '.' || strstr(d->d_name, ".tmp.") ||
		    fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		e[n] = (struct hte_entry_age){ st.st_atim.tv_sec, st.st_mtim.tv_sec, (uint64_t)st.st_size };
		snprintf(names[n], sizeof(names[n]), "%s", d->d_name);
		n++;
	}
	closedir(dir);
	hte_eviction_order(e, n, idx);
	for (size_t i = 0; i < n && avail < need; i++) {
		if (unlinkat(dirfd, names[idx[i]], 0) < 0)
			continue;
		log_add(&S.evicted, "%s (%llu MiB)", names[idx[i]], (unsigned long long)(e[idx[i]].bytes >> 20));
		if (fstatfs(mfd, &sfs) == 0)
			avail = (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
	}
	return avail >= need ? 0 : -ENOSPC;
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

/* True when the entry @name holds the span's bytes of the file (all of them compared). */
static int entry_matches(int dirfd, const char *name, int fd, const struct ht_offer *m)
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

/*
 * Fills the entry @name under a temporary name, checks it sits on 2 MiB
 * pages and that the file did not change meanwhile, and publishes it
 * read-only.  Returns: NULL, or why not.
 */
static const char *fill_entry(int mfd, int dirfd, int fd, const struct stat *st,
			      const struct ht_offer *m, const char *name)
{
	char tmp[300];
	const char *why = NULL;
	uint64_t huge = 0;
	void *p;
	int efd;

	/* Filled before, for another process: kept when it still holds the file's bytes. */
	if (faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		if (entry_matches(dirfd, name, fd, m))
			return NULL;
		unlinkat(dirfd, name, 0);
		log_add(&S.evicted, "%s (stale: the file changed under it)", name);
	}
	if (make_room(mfd, dirfd, m->len) < 0)
		return "the shared cache is full (even after eviction)";
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	unlinkat(dirfd, tmp, 0);
	efd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (efd < 0)
		return "cannot create a cache entry";
	if (ftruncate(efd, (off_t)m->len) < 0 ||
	    ht_sys_map_file(efd, m->len, PROT_READ | PROT_WRITE, 1, &p) < 0) {
		why = "cannot size or map the new entry";
	} else {
		/* Every page now: over the mount's limit a touch would be SIGBUS. */
		if (madvise(p, m->len, 23 /* MADV_POPULATE_WRITE */) < 0)
			why = "no room for the entry's pages";
		else if (fill_bytes(fd, m, p) < 0)
			why = "cannot read the file";
		munmap(p, m->len);
	}
	/* As the library will see it: mapped read-only at a 2 MiB boundary, all of it huge. */
	if (!why && ht_sys_map_file_aligned(efd, m->len, PROT_READ, HT_HUGE_PAGE_SIZE, &p) == 0) {
		if (ht_sys_self_huge((uintptr_t)p, (uintptr_t)p + m->len, &huge) < 0 || huge < m->len)
			why = "the entry did not get 2 MiB pages (memory short?)";
		munmap(p, m->len);
	}
	if (!why && !unchanged(fd, st))
		why = "the file changed while it was copied";
	if (!why && (fchmod(efd, 0444) < 0 || renameat(dirfd, tmp, dirfd, name) < 0))
		why = "cannot publish the entry";
	close(efd);
	if (why)
		unlinkat(dirfd, tmp, 0);
	return why;
}

/* --- serving one file --- */

/*
 * Fills the file's shared cache entry @name (named at the offer: fill_entry
 * checks the file did not change since).  Returns 1 when done, 0 with no
 * cache, -1 when refused (@why).
 */
static int fill_file(int fd, const struct stat *st, const struct ht_offer *m, const char *name, uid_t uid,
		     const char *after, const char **why)
{
	char path[512];
	int mfd = -1, dirfd;

	*why = NULL;
	dirfd = open_shared_dir(&mfd);
	if (dirfd < 0) {
		if (mfd >= 0)
			close(mfd);
		return 0;
	}
	*why = fill_entry(mfd, dirfd, fd, st, m, name);
	close(dirfd);
	close(mfd);
	if (*why)
		return -1;
	fd_path(fd, path, sizeof(path));
	log_add(&S.filled, "%s: %s (%llu MiB, uid %u%s)", path, name, (unsigned long long)(m->len >> 20),
		(unsigned)uid, after);
	return 1;
}

/* True while the sender still maps the file: its pages cannot be dropped and read again. */
static int sender_runs(const struct pending *p)
{
	char maps[64], *buf;
	size_t len;
	int runs;

	snprintf(maps, sizeof(maps), "/proc/%ld/maps", (long)p->sender);
	if (ht_sys_read_file(maps, &buf, &len) < 0)
		return 0;
	runs = hte_maps_runs_file(buf, len, p->st.st_dev, p->st.st_ino);
	free(buf);
	return runs;
}

/*
 * One more try counted: 0 (try again, twice as long after the last, up to
 * RETRY_MAX_S) while KEEP_TRYING_S from the offer lasts, else 1.
 */
static int later(struct pending *p)
{
	p->tries++;
	if (time(NULL) >= p->until)
		return 1;
	p->wait_s = p->wait_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : p->wait_s * 2;
	return 0;
}

/*
 * One attempt at a file: warm its page cache (the kernel then maps it huge
 * with no copy and no memory of ours); where that cannot take, fill the
 * shared cache.  Pages that running processes map cannot be dropped and
 * read again, so a warm that did not take all is tried again later, less
 * and less often, for KEEP_TRYING_S when the sender has gone (other
 * processes map the file); the cache is filled when the warm gave nothing GONE_TRIES times
 * once the sender was gone (this file system keeps no 2 MiB pages), or after FILL_AFTER tries
 * while it runs (a server: its next start is served from the cache).
 * Returns 1 when done, 0 to try again, -1 when refused (@why).
 */
static int attempt(struct pending *p, const char **why)
{
	char path[512], buf[32], after[160] = "";
	struct hte_warm w = { 0 };
	int r = 1, runs;

	*why = NULL;
	S.tries++;
	/*
	 * Not while the sender runs, until it has run FILL_AFTER tries: a warm
	 * drops the file's pages that no process maps and reads them again,
	 * and the sender, which has not run most of its code yet, would fault
	 * on them while they are read back (clang's first compile lost 4% so).
	 * A short-lived program is served once it has gone; a server, whose
	 * mapped pages no warm can replace anyway, after FILL_AFTER seconds.
	 */
	if (p->tries + 1 < FILL_AFTER && sender_runs(p)) {
		p->tries++;
		return 0;
	}
	if (!S.no_warm) {
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", p->fd);
		S.warms++;
		r = hte_warm_file(buf, 1, &w);
		if (r == 0 && w.code && w.huge == w.code) {
			fd_path(p->fd, path, sizeof(path));
			log_add(&S.warmed, "%s: %llu MiB in 2 MiB page-cache pages%s, try %u (uid %u)", path,
				(unsigned long long)(w.huge >> 20), w.already ? ", already" : "",
				p->tries + 1, (unsigned)p->uid);
			return 1;
		}
	}
	runs = r == 0 && sender_runs(p);
	/* The sender runs: a server's next start is served from the cache after a while. */
	if (r == 0 && runs && ++p->tries < FILL_AFTER)
		return 0;
	/*
	 * The sender is gone and the file system keeps 2 MiB pages: others
	 * still map it (a compiler's driver, the next compile).  Each warm
	 * maps, drops and reads the code again, so they come less often.
	 */
	if (r == 0 && !runs && w.huge > 0 && later(p) == 0)
		return 0;
	/*
	 * Nothing took: either this file system keeps no 2 MiB pages, or
	 * another process still maps all of the file (a compiler's driver
	 * outlives the cc1 that sent it).  A few more tries tell them apart.
	 */
	if (r == 0 && !runs && w.huge == 0 && ++p->gone_tries < GONE_TRIES)
		return 0;
	/* Why not the page cache: the state file says what the last warm found. */
	if (!S.no_warm)
		snprintf(after, sizeof(after), "; warm %s: %llu of %llu MiB in 2 MiB pages, try %u%s",
			 r < 0 ? "failed" : r > 0 ? "found no whole 2 MiB of code" : "took",
			 (unsigned long long)(w.huge >> 20), (unsigned long long)(w.code >> 20), p->tries + 1,
			 runs ? ", the sender runs" : "");
	r = fill_file(p->fd, &p->st, &p->m, p->name, p->uid, after, why);
	/* No cache to fill: the page cache is the only way, while the tries last. */
	return r != 0 ? r : later(p);
}

/*
 * What root does with the file on the sender's behalf must be what the
 * sender and every other user could do themselves: read it (an O_PATH
 * descriptor or one open for writing only would let root read what the
 * sender cannot; ht_offer_refusal asks that others may read the file), on
 * a mount that no user made (ht_offer_mount_refusal: a disk image or FUSE
 * file system mounted by a user is nosuid, and its root-owned files hold
 * that user's bytes).  Returns: NULL, or why not.
 */
static const char *reader_refusal(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	struct statfs fs;

	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return "the descriptor is not open for reading";
	if (fstatfs(fd, &fs) < 0)
		return "cannot stat the file's mount";
	return ht_offer_mount_refusal(&fs);
}

/* The offer's checks; fills @st and the entry's @name (of @len).  Returns: NULL, or why it is refused. */
static const char *check_offer(int fd, const struct ht_offer *m, const struct ucred *who,
			       struct stat *st, char *name, size_t len)
{
	char maps[64], *buf;
	size_t n;
	const char *why;
	int runs;

	if (fstat(fd, st) < 0)
		return "cannot stat the descriptor";
	why = ht_offer_refusal(st);
	if (!why)
		why = reader_refusal(fd);
	if (!why)
		why = ht_offer_check(m, (uint64_t)st->st_size);
	/* A span that is no code of a readable ELF file is refused now, not after the wait. */
	if (!why)
		why = entry_name(fd, st, m, name, len);
	if (why)
		return why;
	/*
	 * A short-lived sender (a compiler's cc1, a --version) may have exited,
	 * or be a zombie with no maps, before its offer is read: the file's own
	 * checks above then decide.  That gives nothing away: anyone may map
	 * root's code into a process of their own and offer it (docs/service.md).
	 */
	snprintf(maps, sizeof(maps), "/proc/%ld/maps", (long)who->pid);
	if (ht_sys_read_file(maps, &buf, &n) < 0)
		return NULL;
	runs = n == 0 || hte_maps_runs_file(buf, n, st->st_dev, st->st_ino);
	free(buf);
	return runs ? NULL : "the sender does not run this file";
}

static unsigned pending_of(uid_t uid)
{
	unsigned n = 0;

	for (unsigned i = 0; i < S.npend; i++)
		n += S.pend[i].uid == uid;
	return n;
}

/* Ends an attempt: done or refused files are remembered; the descriptor is closed. */
static void settle(struct pending *p, int r, const char *why)
{
	if (r < 0)
		log_add(&S.refused, "%s (uid %u, pid %ld)", why, (unsigned)p->uid, (long)p->sender);
	remember(&p->k);
	close(p->fd);
}

static void handle_offer(int fd, const struct ht_offer *m, const struct ucred *who)
{
	struct pending p = { .fd = fd, .m = *m, .uid = who->uid, .sender = who->pid, .wait_s = RETRY_S,
			     .until = time(NULL) + KEEP_TRYING_S };
	const char *why;
	int r;

	S.offers++;
	why = check_offer(fd, m, who, &p.st, p.name, sizeof(p.name));
	if (why) {
		log_add(&S.refused, "%s (uid %u, pid %ld)", why, (unsigned)who->uid, (long)who->pid);
		close(fd);
		return;
	}
	key_of(&p.st, m, &p.k);
	if (seen(&p.k)) {
		close(fd);
		return;
	}
	r = attempt(&p, &why);
	if (r == 0 && S.npend < MAX_PENDING && pending_of(who->uid) < MAX_PER_UID) {
		p.next = time(NULL) + p.wait_s;
		S.pend[S.npend++] = p;
		return;
	}
	settle(&p, r, why);
}

/* Tries again the files whose time has come. */
static void retry_pending(void)
{
	time_t now = time(NULL);

	for (unsigned i = 0; i < S.npend;) {
		struct pending *p = &S.pend[i];
		const char *why;
		int r;

		if (p->next > now) {
			i++;
			continue;
		}
		r = attempt(p, &why);
		if (r == 0) {
			p->next = now + p->wait_s;
			i++;
			continue;
		}
		settle(p, r, why);
		*p = S.pend[--S.npend];
	}
}

/* --- the state file --- */

static void state_list(FILE *f, const char *name, const struct log *g)
{
	fprintf(f, ",\"%s_total\":%lu,\"%s\":[", name, g->total, name);
	for (unsigned i = 0; i < g->n; i++) {
		unsigned at = (g->next + LOG_KEEP - g->n + i) % LOG_KEEP;

		if (i)
			fputc(',', f);
		hte_json_str(f, g->l[at].text);
	}
	fputc(']', f);
}

static void write_state(void)
{
	char tmp[600];
	FILE *f;

	if (!S.state)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", S.state);
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "{\"pid\":%ld,\"socket\":", (long)getpid());
	hte_json_str(f, S.socket);
	fprintf(f, ",\"cache_dir\":\"%s/%s\",\"cache_size\":%llu,\"offers\":%lu,\"pending\":%u,\"warms\":%lu,\"tries\":%lu",
		HT_TEXT_CACHE_DIR, HT_SERVICE_SHARED, (unsigned long long)S.cache_size, S.offers, S.npend, S.warms,
		S.tries);
	state_list(f, "warmed", &S.warmed);
	state_list(f, "filled", &S.filled);
	state_list(f, "evicted", &S.evicted);
	state_list(f, "refused", &S.refused);
	fprintf(f, "}\n");
	if (fclose(f) == 0)
		rename(tmp, S.state);
	else
		unlink(tmp);
}

/* --- the socket --- */

/* systemd's socket (LISTEN_FDS), else our own, bound at S.socket. */
static int listen_socket(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	char dir[sizeof(a.sun_path)], *slash;
	struct stat st;
	int fd;

	if (pid && n && atol(pid) == (long)getpid() && atoi(n) == 1) {
		struct sockaddr_un got;
		socklen_t len = sizeof(got);
		int type = 0, listening = 0;
		socklen_t tl = sizeof(type), ll = sizeof(listening);

		/* What hugetext-serve.socket hands over: a listening local SEQPACKET socket, or nothing. */
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDS");
		if (getsockname(3, (struct sockaddr *)&got, &len) < 0 || got.sun_family != AF_UNIX ||
		    getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET ||
		    getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) < 0 || !listening)
			return -ENOTSOCK;
		fcntl(3, F_SETFD, FD_CLOEXEC);
		return 3;
	}
	if (strlen(S.socket) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", S.socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	/* A socket left by a dead service is ours to replace; anything else is not. */
	if (lstat(S.socket, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(S.socket);
	}
	memcpy(a.sun_path, S.socket, strlen(S.socket) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Every user's processes may offer: the checks are ours, on what they send. */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(S.socket, 0666) < 0 ||
	    listen(fd, 64) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Takes one message from a new connection: the offer and its one descriptor. */
static void take_one(int lfd)
{
	struct ht_offer m;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct ucred who;
	socklen_t wl = sizeof(who);
	struct pollfd pf;
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), fd = -1, nfd = 0;
	ssize_t n;

	if (c < 0)
		return;
	pf = (struct pollfd){ c, POLLIN, 0 };
	/*
	 * A client sends its offer right after connecting: one that connects
	 * and sends nothing stalls the service 20 ms at most (a flood of them
	 * slows the service, never the programs, which do not wait for it).
	 */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &who, &wl) < 0 || poll(&pf, 1, 20) != 1) {
		close(c);
		return;
	}
	n = recvmsg(c, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	close(c);
	if (n < 0)
		return;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&msg); h; h = CMSG_NXTHDR(&msg, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (nfd++ == 0)
				fd = got;
			else
				close(got); /* one descriptor per offer: the rest are closed unread */
		}
	}
	if (n != (ssize_t)sizeof(m) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfd != 1) {
		S.offers++;
		log_add(&S.refused, "malformed message: %zd bytes, %d descriptors (uid %u, pid %ld)", n, nfd,
			(unsigned)who.uid, (long)who.pid);
		if (fd >= 0)
			close(fd);
		return;
	}
	handle_offer(fd, &m, &who);
}

static void on_signal(int sig)
{
	(void)sig;
	S.stop = 1;
}

/* text_cache_size and service from /etc/hugetext.conf.  Returns: 0, 1 when off, -1 on a bad file. */
static int read_conf(void)
{
	struct ht_conf *c = calloc(1, sizeof(*c));
	char err[256] = "";
	char *buf;
	size_t len;
	uint64_t mem = 0;
	int r = 0;

	if (!c)
		return -1;
	if (ht_conf_load(S.config, c, err, sizeof(err)) < 0 && err[0]) {
		hte_error("serve", "%s", err);
		free(c);
		return -1;
	}
	if ((c->set & HT_CONF_SERVICE) && !c->service)
		r = 1;
	if (ht_sys_read_file("/proc/meminfo", &buf, &len) == 0) {
		char *p = strstr(buf, "MemTotal:");

		mem = p ? strtoull(p + 9, NULL, 10) * 1024 : 0;
		free(buf);
	}
	S.cache_size = (c->set & HT_CONF_TEXT_CACHE_SIZE) ? c->text_cache_size : hte_auto_cache_size(mem);
	free(c);
	return r;
}

int hte_cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "state", required_argument, NULL, 't' },
		{ "once", no_argument, NULL, '1' },
		{ "config", required_argument, NULL, 'c' },
		{ "no-warm", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	int once = 0, c, lfd, conf;

	S.socket = HT_SERVICE_SOCKET;
	S.state = HTE_SERVE_STATE;
	S.config = HT_CONF_PATH;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': S.socket = optarg; break;
		case 't': S.state = *optarg ? optarg : NULL; break;
		case '1': once = 1; break;
		case 'c': S.config = optarg; break;
		case 'w': S.no_warm = 1; break;
		case 'h': fputs(serve_usage, stdout); return HTE_EXIT_OK;
		default: fputs(serve_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fputs(serve_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	conf = read_conf();
	if (conf < 0)
		return HTE_EXIT_FAIL;
	if (conf > 0) {
		printf("serve: off ('service = 0' in %s)\n", S.config);
		return HTE_EXIT_OK;
	}
	if (geteuid() != 0) {
		hte_error("serve", "must run as root (it fills root's cache and reads other users' maps)");
		return HTE_EXIT_FAIL;
	}
	lfd = listen_socket();
	if (lfd == -ENOTSOCK) {
		hte_error("serve", "LISTEN_FDS: descriptor 3 is not a listening local SEQPACKET socket");
		return HTE_EXIT_FAIL;
	}
	if (lfd < 0) {
		hte_error("serve", "%s: %s", S.socket, strerror(-lfd));
		return HTE_EXIT_FAIL;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("serve: listening on %s; shared cache limit %llu MiB\n", S.socket,
	       (unsigned long long)(S.cache_size >> 20));
	write_state();
	while (!S.stop) {
		struct pollfd pf = { lfd, POLLIN, 0 };
		int wait = S.npend ? RETRY_S * 1000 : -1;


		if (poll(&pf, 1, wait) == 1)
			take_one(lfd);
		retry_pending();
		write_state();
		if (once && S.offers)
			break;
	}
	for (unsigned i = 0; i < S.npend; i++)
		close(S.pend[i].fd);
	close(lfd);
	return HTE_EXIT_OK;
}
