/* SPDX-License-Identifier: MIT */
/*
 * hugetext oci-hook: run by Podman and CRI-O (hooks.d) at createRuntime
 * and poststop of every container.  At createRuntime, for a container that
 * asks (io.hugetext/enable=1, or the host's policy containers = all), and
 * whose image's glibc can load the preload, it makes the container's mount
 * namespace show, read-only and without touching the image's files:
 *
 *	/run/hugetext/                         a tmpfs of ours
 *	/run/hugetext/libhugetext-preload.so   the host's preload (a bind; by default its pinned build)
 *	/run/hugetext/ld.so.preload            the image's entries, then ours
 *	/run/hugetext/service.sock             the text service: a link to sock/service.sock
 *	/run/hugetext/sock/                    the container's own socket's directory (a bind of
 *	                                       <socket's dir>/sockets/<id>/, serve-socks.c), or,
 *	                                       with a service that makes none, service.sock is
 *	                                       the host's socket (a bind)
 *	/run/hugetext/text/                    a tmpfs of ours, and in it
 *	/run/hugetext/text/shared/             the container's view of the cache (a bind)
 *	/etc/ld.so.preload                     /run/hugetext/ld.so.preload (a bind)
 *
 * and records what it did in /run/hugetext/containers/<id>.json.  At
 * poststop it removes the record and the view.  The rootfs is the image
 * author's: every path in it is resolved inside it (openat2 with
 * RESOLVE_IN_ROOT), a symbolic link is never followed where something is
 * mounted on, nothing on the host is opened for writing through it, and
 * mounts go onto descriptors only (open_tree of the host's files before
 * setns, move_mount onto O_PATH descriptors).  docs/containers.md is the
 * contract; the pure parts are in ocistate.c and ocielf.c.
 */
#include "tool.h"
#include "ocihook.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "conf.h"
#include "hugetext.h"
#include "run.h"
#include "serve.h"
#include "service.h"

#define TMPFS_MAGIC_ 0x01021994
#define FILE_MAX (64u << 20) /* the most of a loader, libc or preload read */
#define LOG_MAX (1u << 20)   /* the log is moved to .old past this */
#define VIEW_FILES_MAX 100000

static const char usage_text[] =
	"usage: hugetext oci-hook [--preload PATH] [--socket PATH] [--cache DIR] [--records DIR]\n"
	"                         [--log FILE] [--config FILE]\n"
	"\n"
	"The OCI hook (hooks.d: stages createRuntime and poststop; the runtime's state\n"
	"on standard input).  At createRuntime it gives a container that asks for it\n"
	"(annotation io.hugetext/enable=1, or containers = all in the policy file) the\n"
	"preload, an /etc/ld.so.preload naming it, the text service's socket and its\n"
	"view of the shared cache, read-only, when the image's glibc can load the\n"
	"preload; at poststop it removes its record and the view.\n"
	"\n"
	"  --preload PATH  the host's preload (default: " HTE_OCI_PRELOAD_PINNED ",\n"
	"                  on a 2 MiB boundary, else " HTE_OCI_PRELOAD_NAME "; next to\n"
	"                  the command, then the libdir)\n"
	"  --socket PATH   the text service's socket (default " HT_SERVICE_SOCKET ");\n"
	"                  each container gets its own in its directory's sockets/\n"
	"                  when the service made that\n"
	"  --cache DIR     the shared text cache (default " HT_TEXT_CACHE_DIR ")\n"
	"  --records DIR   the records (default " HTE_OCI_RECORDS ")\n"
	"  --log FILE      the log (default " HTE_OCI_LOG "; \"\": standard error only)\n"
	"  --config FILE   the policy file (default " HT_CONF_PATH ")\n"
	"\n"
	"Exit status: 0 when the container may start (changed or, with a log line\n"
	"saying why, unchanged; run by a user but root, nothing is done), 1 when the\n"
	"state on standard input is unusable or the container's process is gone, 2\n"
	"for a usage error.\n";

struct opts {
	const char *preload, *socket, *cache, *records, *log, *config;
};

/* Descriptors and facts of one createRuntime, host side then container side. */
struct inject {
	int proc;           /* /proc, opened on the host */
	int pidfd;
	int mntns;          /* the container's mount namespace */
	int croot;          /* its process's root directory (/proc/PID/root) */
	int pre_fd;         /* the host's preload, read */
	int pre_tree;       /* its clone, detached */
	int sock_tree;      /* the socket's clone (or its directory's: own_sock), or -1 */
	int sock_dir;       /* <sockets>/<id>, made for the container, or -1 */
	int own_sock;       /* sock_tree is the container's own socket's directory */
	int sockets_full;   /* as many containers as the service listens for have one: the host's socket */
	int view_tree;      /* the view's clone, or -1 */
	int cfd;            /* <cache>/shared/c, or -1 */
	char *host_mounts;  /* the host's mountinfo */
	size_t host_mounts_len;
	struct hte_elf_versions *pre_v;
	struct hte_oci_config cfg;
	/* in the container's namespace */
	int root, etc, run, run_ht, etc_pre;
	unsigned long long root_mnt;
	int root_overlay;
	int made_etc_pre, made_run, made_run_ht;
	unsigned linked;    /* entries linked into its new view (ociview.c) */
	char list[HTE_OCI_PRELOAD_LIST_MAX + PATH_MAX + 64];
	long list_len;
};

struct hook {
	struct timespec t0; /* the hook's start, for the time it took */
	struct opts o;
	struct hte_oci_state st;
	struct hte_oci_record *rec;
	int logfd;
	int recdir;
};

/* --- small I/O helpers --- */

/* Reads all of @fd, at most @max bytes.  Returns: 0, -EFBIG past @max, or a negative errno. */
static int read_all(int fd, size_t max, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *b;

			if (cap > max) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			b = realloc(buf, cap + 1);
			if (!b) {
				free(buf);
				return -ENOMEM;
			}
			buf = b;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;

			free(buf);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(buf);
			return -EFBIG;
		}
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* A /proc file under the open @proc ("self/mountinfo", "123/stat"). */
static int read_proc(int proc, const char *rel, size_t max, char **out, size_t *len)
{
	int fd = openat(proc, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int rc;

	if (fd < 0)
		return -errno;
	rc = read_all(fd, max, out, len);
	close(fd);
	return rc;
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static long sys_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	int fd = hte_openat2(dirfd, path, flags, resolve);

	return fd < 0 ? -errno : fd;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The mount id of the open @fd, from /proc/self/fdinfo. */
static int fd_mnt_id(int proc, int fd, unsigned long long *id)
{
	char rel[64], *buf;
	size_t len;
	int rc;

	snprintf(rel, sizeof(rel), "self/fdinfo/%d", fd);
	if (read_proc(proc, rel, 65536, &buf, &len) < 0)
		return -1;
	rc = hte_fdinfo_mnt_id(buf, len, id);
	free(buf);
	return rc;
}

/* The mountinfo line of @fd's mount, in the namespace we are in. */
static int fd_mount(int proc, int fd, struct hte_mountinfo *m)
{
	unsigned long long id;
	char *buf;
	size_t len;
	int rc;

	if (fd_mnt_id(proc, fd, &id) < 0 || read_proc(proc, "self/mountinfo", 16u << 20, &buf, &len) < 0)
		return -1;
	rc = hte_mountinfo_find(buf, len, id, m);
	free(buf);
	return rc;
}

/* --- the log --- */

/* Since the hook started: the log says what each decision cost. */
static double elapsed_ms(const struct hook *h)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - h->t0.tv_sec) * 1e3 + (double)(t.tv_nsec - h->t0.tv_nsec) / 1e6;
}


static void vlog_line(struct hook *h, const char *fmt, va_list ap)
{
	char msg[2048], line[2200], when[32];
	struct tm tm;
	time_t now = time(NULL);
	int n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "hugetext oci-hook: %.12s: %s\n", h->st.id[0] ? h->st.id : "-", msg);
	if (h->logfd < 0)
		return;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = snprintf(line, sizeof(line), "%s %s %s\n", when, h->st.id[0] ? h->st.id : "-", msg);
	if (n > 0)
		write_all(h->logfd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void say(struct hook *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct hook *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_line(h, fmt, ap);
	va_end(ap);
}

/* Makes @path a directory of root's with @mode unless it is one; its parent must exist. */
static int root_dir(const char *path, mode_t mode, int *fdout)
{
	struct stat st;
	int fd;

	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	*fdout = fd;
	return 0;
}

/* The parent directory of @path made (root's, 0755) when missing: /run/hugetext for its files. */
static void parent_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir) || !(slash = strrchr(dir, '/')) || slash == dir)
		return;
	*slash = '\0';
	if (root_dir(dir, 0755, &fd) == 0)
		close(fd);
}

/* The log file: root's, appended, moved to PATH.old once past LOG_MAX. */
static int open_log(const char *path)
{
	struct stat st;
	char old[PATH_MAX];
	int fd;

	if (!path || !*path)
		return -1;
	parent_dir(path);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
		close(fd);
		return -1;
	}
	if ((uint64_t)st.st_size > LOG_MAX && snprintf(old, sizeof(old), "%s.old", path) < (int)sizeof(old) &&
	    rename(path, old) == 0) {
		close(fd);
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	}
	return fd;
}

/* --- the records and the views (host side) --- */

static int open_records(struct hook *h)
{
	int rc;

	if (h->recdir >= 0)
		return 0;
	parent_dir(h->o.records);
	rc = root_dir(h->o.records, 0700, &h->recdir);
	if (rc < 0)
		say(h, "cannot keep records in %s: %s", h->o.records,
		    rc == -EPERM ? "not root's own directory" : strerror(-rc));
	return rc;
}

/* Writes the record: a temporary file, then a rename over <id>.json. */
static int write_record(struct hook *h)
{
	char name[HTE_OCI_ID_MAX + 8], tmp[HTE_OCI_ID_MAX + 40];
	char *json;
	int fd, rc = -1;

	if (open_records(h) < 0)
		return -1;
	json = hte_oci_record_json(h->rec);
	if (!json)
		return -1;
	snprintf(name, sizeof(name), "%s.json", h->st.id);
	snprintf(tmp, sizeof(tmp), ".%s.tmp.%ld", h->st.id, (long)getpid());
	fd = openat(h->recdir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		rc = write_all(fd, json, strlen(json));
		if (close(fd) < 0)
			rc = -1;
		if (rc == 0)
			rc = renameat(h->recdir, tmp, h->recdir, name);
		if (rc < 0)
			unlinkat(h->recdir, tmp, 0);
	}
	if (rc < 0)
		say(h, "cannot write its record %s/%s: %s", h->o.records, name, strerror(errno));
	free(json);
	return rc;
}

/* Removes the files of the directory @name under @parent, then it; never follows a link. */
static int remove_view(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	int n = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	/* The service puts hard links to entries here, nothing else: no directories. */
	while ((e = readdir(d)) && n++ < VIEW_FILES_MAX)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	return unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

/* A directory @name under @dirfd, root's and 0755, made when missing and @make. */
static int view_parent(int dirfd, const char *name, int make)
{
	struct stat st;
	int fd;

	if (make && mkdirat(dirfd, name, 0755) == 0)
		fchmodat(dirfd, name, 0755, 0);
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* <cache>/shared/c, when the cache is mounted (root's tmpfs of its own); made when @make. */
static int open_views(const char *cache, int make, const char **why)
{
	struct stat st, up;
	struct statfs sfs;
	int mfd = open(cache, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), pfd, sfd, cfd;

	*why = "no shared text cache is mounted";
	if (mfd < 0)
		return -1;
	pfd = openat(mfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 || fstat(mfd, &st) < 0 || fstat(pfd, &up) < 0 || fstatfs(mfd, &sfs) < 0 ||
	    (unsigned long)sfs.f_type != TMPFS_MAGIC_ || st.st_dev == up.st_dev || st.st_uid != 0) {
		if (pfd >= 0)
			close(pfd);
		close(mfd);
		return -1;
	}
	close(pfd);
	sfd = view_parent(mfd, HT_SERVICE_SHARED, make);
	close(mfd);
	if (sfd < 0) {
		*why = "the cache's shared/ is not root's own directory";
		return -1;
	}
	cfd = view_parent(sfd, HTE_OCI_VIEWS, make);
	close(sfd);
	if (cfd < 0) {
		*why = "the cache's shared/" HTE_OCI_VIEWS "/ is not root's own directory";
		return -1;
	}
	return cfd;
}

/*
 * The directory of the containers' sockets: <the service's socket's
 * directory>/sockets, root's and 0700 (a host user reaching a container's
 * socket would count as that container).
 */
static int sockets_dir(struct hook *h)
{
	char path[PATH_MAX];
	const char *slash = strrchr(h->o.socket, '/');
	struct stat st;
	int fd;

	if (!slash || slash == h->o.socket ||
	    snprintf(path, sizeof(path), "%.*s/" HTE_CONTAINER_SOCKETS_NAME, (int)(slash - h->o.socket),
		     h->o.socket) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 077))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Removes <sockets>/<id>: the socket the service made in it, then it.  Returns 1 when it was there. */
static int remove_own_socket(int sd, const char *id)
{
	int d = openat(sd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (d >= 0) {
		unlinkat(d, HTE_CONTAINER_SOCKET_NAME, 0);
		close(d);
	}
	return unlinkat(sd, id, AT_REMOVEDIR) == 0;
}

/* --- poststop --- */

static int do_remove(struct hook *h)
{
	char name[HTE_OCI_ID_MAX + 8];
	const char *why;
	int cfd, sd, sock = 0;

	snprintf(name, sizeof(name), "%s.json", h->st.id);
	h->recdir = open(h->o.records, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/*
	 * A container that asked nothing has no record, and no view: its stop
	 * costs the exec and the parse, and writes nothing (not even the log).
	 */
	if (h->recdir < 0 || unlinkat(h->recdir, name, 0) < 0)
		return HTE_EXIT_OK;
	cfd = open_views(h->o.cache, 0, &why);
	if (cfd >= 0) {
		remove_view(cfd, h->st.id);
		close(cfd);
	}
	sd = sockets_dir(h);
	if (sd >= 0) {
		sock = remove_own_socket(sd, h->st.id);
		close(sd);
	}
	h->logfd = open_log(h->o.log);
	say(h, "stopped: record%s cache view removed", sock ? ", socket and" : " and");
	return HTE_EXIT_OK;
}

/* --- createRuntime, the host's side --- */

/* The container's process: its start time, mount namespace, user namespace and cgroup. */
static int target_process(struct hook *h, struct inject *in)
{
	char rel[64], *buf;
	size_t len;
	struct stat ns, own;
	long pid = h->st.pid;

	in->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (in->pidfd < 0)
		return -errno;
	snprintf(rel, sizeof(rel), "%ld/stat", pid);
	if (read_proc(in->proc, rel, 65536, &buf, &len) < 0)
		return -ESRCH;
	if (hte_stat_start_time(buf, len, &h->rec->pid_start) < 0) {
		free(buf);
		return -ESRCH;
	}
	free(buf);
	snprintf(rel, sizeof(rel), "%ld/ns/mnt", pid);
	in->mntns = openat(in->proc, rel, O_RDONLY | O_CLOEXEC);
	if (in->mntns < 0 || fstat(in->mntns, &ns) < 0 || fstatat(in->proc, "self/ns/mnt", &own, 0) < 0)
		return -ESRCH;
	h->rec->mntns = (unsigned long long)ns.st_ino;
	/*
	 * setns() puts the caller at the root of the namespace's mounts, which
	 * is not where the engine runs when it runs in a chroot (a build root,
	 * a machine's image): the container's process still sees the engine's
	 * root, and the rootfs path is the engine's.  Its root is taken now,
	 * and entered after setns().
	 */
	snprintf(rel, sizeof(rel), "%ld/root", pid);
	in->croot = openat(in->proc, rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (in->croot < 0)
		return -ESRCH;
	snprintf(rel, sizeof(rel), "%ld/uid_map", pid);
	if (read_proc(in->proc, rel, 65536, &buf, &len) == 0) {
		hte_userns_name(buf, len, h->rec->userns, sizeof(h->rec->userns));
		free(buf);
	}
	snprintf(rel, sizeof(rel), "%ld/cgroup", pid);
	if (read_proc(in->proc, rel, 65536, &buf, &len) == 0) {
		hte_cgroup_path(buf, len, h->rec->cgroup, sizeof(h->rec->cgroup));
		free(buf);
	}
	/* What was read is that process's only while the descriptor still names a live one. */
	if (syscall(SYS_pidfd_send_signal, in->pidfd, 0, NULL, 0) < 0)
		return -ESRCH;
	h->rec->pid = pid;
	return ns.st_ino == own.st_ino && ns.st_dev == own.st_dev ? -EEXIST : 0;
}

static int read_config(struct hook *h, struct inject *in, char *why, size_t cap)
{
	char path[PATH_MAX + 16], err[256], *buf;
	size_t len;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/config.json", h->st.bundle);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		return hte_oci_why(why, cap, "cannot open %s: %s", path, strerror(errno));
	}
	rc = read_all(fd, HTE_OCI_CONFIG_MAX, &buf, &len);
	close(fd);
	if (rc < 0) {
		return hte_oci_why(why, cap, "cannot read %s: %s", path, rc == -EFBIG ? "too long" : strerror(-rc));
	}
	rc = hte_oci_config_parse(buf, len, &in->cfg, err, sizeof(err));
	free(buf);
	if (rc < 0) {
		return hte_oci_why(why, cap, "%s", err);
	}
	if (!in->cfg.mount_ns) {
		return hte_oci_why(why, cap, "it has no mount namespace of its own: nothing is mounted");
	}
	if (in->cfg.mount_ns_joined) {
		return hte_oci_why(why, cap, "it joins another process's mount namespace: nothing is mounted");
	}
	return 0;
}

/*
 * A detached, read-only clone (open_tree) of @name under @dirfd ("": @dirfd
 * itself), private, with @attr set too.  Returns: its descriptor, or a
 * negative errno.
 */
static int clone_ro_at(int dirfd, const char *name, unsigned long long attr)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY | attr, .propagation = MS_PRIVATE };
	int t = open_tree(dirfd, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW |
				       (name[0] ? 0 : AT_EMPTY_PATH));

	if (t < 0)
		return -errno;
	if (mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0) {
		int e = -errno;

		close(t);
		return e;
	}
	return t;
}

static int clone_ro(int fd, unsigned long long attr)
{
	return clone_ro_at(fd, "", attr);
}

/* The host's preload: root's, nobody else may write it; its versions read. */
static int host_preload(struct hook *h, struct inject *in, char *why, size_t cap)
{
	struct stat st;
	char *buf, err[256];
	size_t len;
	int rc;

	in->pre_fd = open(h->o.preload, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (in->pre_fd < 0 || fstat(in->pre_fd, &st) < 0) {
		return hte_oci_why(why, cap, "the host's preload %s: %s", h->o.preload, strerror(errno));
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    (uint64_t)st.st_size > FILE_MAX) {
		return hte_oci_why(why, cap, "the host's preload %s is not a regular file that only root may write",
				   h->o.preload);
	}
	rc = read_all(in->pre_fd, FILE_MAX, &buf, &len);
	if (rc < 0) {
		return hte_oci_why(why, cap, "the host's preload %s: %s", h->o.preload, strerror(-rc));
	}
	in->pre_v = malloc(sizeof(*in->pre_v));
	rc = in->pre_v ? hte_elf_versions_read(buf, len, in->pre_v, err, sizeof(err)) : -1;
	free(buf);
	if (rc < 0 || !hte_loader_path(in->pre_v->machine, in->pre_v->elfclass)) {
		return hte_oci_why(why, cap, "the host's preload %s: %s", h->o.preload,
				   rc < 0 ? err : "built for a machine the hook does not know");
	}
	in->pre_tree = clone_ro(in->pre_fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (in->pre_tree < 0) {
		return hte_oci_why(why, cap, "cannot clone the host's preload (open_tree): %s",
				   strerror(-in->pre_tree));
	}
	return 0;
}

/*
 * How many containers' directories <sockets>/ holds (the names the service
 * takes), counted up to @most + 1, or -1 when it cannot be read: the
 * service listens in at most HTE_CONTAINER_SOCKETS_MAX of them.
 * Directories a runtime left behind count too: past the limit a container
 * gets the host's socket, never a link that leads nowhere.
 */
static int sockets_count(int sd, int most)
{
	int d2 = openat(sd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	struct dirent *e;

	if (!d) {
		if (d2 >= 0)
			close(d2);
		return -1;
	}
	while (n <= most && (e = readdir(d)))
		n += e->d_name[0] != '.' && hte_id_valid(e->d_name);
	closedir(d);
	return n;
}

/*
 * A socket of its own (serve-socks.c): when the service made <sockets>/,
 * the container's directory there, made and cloned; the service listens
 * in it once it sees it.  Else nothing (host_socket() then).
 */
static void own_socket(struct hook *h, struct inject *in)
{
	struct stat st;
	int sd, d, n;

	/* No service socket: nothing (as without a service).  An id the service would not take: the host's. */
	if (lstat(h->o.socket, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != 0 || !hte_id_valid(h->st.id))
		return;
	sd = sockets_dir(h);
	if (sd < 0)
		return;
	/* One left by a hook that died: made again. */
	remove_own_socket(sd, h->st.id);
	if (mkdirat(sd, h->st.id, 0755) < 0 || fchmodat(sd, h->st.id, 0755, 0) < 0) {
		close(sd);
		return;
	}
	/*
	 * Counted with ours, so two hooks at the last place do not both take
	 * it (both may leave it: they get the host's socket).  A service that
	 * bound a socket in ours meanwhile keeps the directory until poststop.
	 */
	n = sockets_count(sd, HTE_CONTAINER_SOCKETS_MAX);
	if (n < 0 || n > HTE_CONTAINER_SOCKETS_MAX) {
		remove_own_socket(sd, h->st.id);
		close(sd);
		in->sockets_full = n > 0;
		return;
	}
	d = openat(sd, h->st.id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d >= 0 && fstat(d, &st) == 0 && st.st_uid == 0)
		in->sock_tree = clone_ro(d, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (d >= 0)
		close(d);
	if (in->sock_tree < 0) {
		in->sock_tree = -1;
		remove_own_socket(sd, h->st.id);
		close(sd);
		return;
	}
	in->sock_dir = sd;
	in->own_sock = 1;
}

/*
 * Whether the service listens in the container's directory: the host's
 * socket is connected to once (and closed unsaid), which starts a
 * socket-activated service, then the hook waits 300 ms at most.  A service
 * that starts later listens there then.
 */
static int own_socket_ready(struct hook *h, struct inject *in)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int d = openat(in->sock_dir, h->st.id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ok = 0, up = 0;
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (c >= 0 && strlen(h->o.socket) < sizeof(a.sun_path)) {
		memcpy(a.sun_path, h->o.socket, strlen(h->o.socket) + 1);
		up = connect(c, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EAGAIN || errno == EINPROGRESS;
	}
	if (c >= 0)
		close(c);
	for (int i = 0; d >= 0 && up && i < 60 && !ok; i++) {
		ok = fstatat(d, HTE_CONTAINER_SOCKET_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode);
		if (!ok)
			usleep(5000);
	}
	if (d >= 0)
		close(d);
	return ok;
}

/* The service's socket, when there is one (root's socket): cloned. */
static void host_socket(struct hook *h, struct inject *in)
{
	struct stat st;
	int fd = open(h->o.socket, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == 0)
		in->sock_tree = clone_ro(fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	close(fd);
	if (in->sock_tree < 0)
		in->sock_tree = -1;
}

/* The rootfs's path: root.path, absolute or from the bundle. */
static void rootfs_path(struct hook *h, struct inject *in, char *path, size_t cap)
{
	if (in->cfg.root[0] == '/')
		snprintf(path, cap, "%s", in->cfg.root);
	else
		snprintf(path, cap, "%s/%s", h->st.bundle, in->cfg.root);
}

/* The entries other containers of its layers filled, linked into its new view before it runs anything. */
static void prelink_view(struct hook *h, struct inject *in)
{
	char path[2 * PATH_MAX + 2];
	const char *why;
	int sfd = openat(in->cfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int vfd = openat(in->cfd, h->st.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	rootfs_path(h, in, path, sizeof(path));
	/* shared/: root's own directory (open_views() checked it; checked again through ".."). */
	if (sfd >= 0 && vfd >= 0 && fstat(sfd, &st) == 0 && st.st_uid == 0 && !(st.st_mode & 022) &&
	    hte_oci_prelink(sfd, vfd, path, in->host_mounts, in->host_mounts_len, &in->linked, &why) < 0)
		say(h, "no entry linked into its view: %s", why);
	if (sfd >= 0)
		close(sfd);
	if (vfd >= 0)
		close(vfd);
}

/* The container's view of the cache, made empty, cloned, and given the entries its layers' files have. */
static void host_view(struct hook *h, struct inject *in, const char **why)
{
	int fd;

	in->cfd = open_views(h->o.cache, 1, why);
	if (in->cfd < 0)
		return;
	remove_view(in->cfd, h->st.id);
	if (mkdirat(in->cfd, h->st.id, 0755) < 0 || fchmodat(in->cfd, h->st.id, 0755, 0) < 0) {
		*why = "cannot make its cache view";
		return;
	}
	fd = openat(in->cfd, h->st.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = "cannot open its cache view";
		return;
	}
	/* Mapped executable from here: no noexec. */
	in->view_tree = clone_ro(fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	close(fd);
	if (in->view_tree < 0) {
		in->view_tree = -1;
		*why = "cannot clone its cache view (open_tree)";
		return;
	}
	h->rec->has_view = 1;
	snprintf(h->rec->view, sizeof(h->rec->view), "%s/%s/%s/%s", h->o.cache, HT_SERVICE_SHARED, HTE_OCI_VIEWS,
		 h->st.id);
	prelink_view(h, in);
}

/* --- createRuntime, inside the container's mount namespace --- */

/* Opens @path of the rootfs, resolved inside it; O_PATH.  Negative errno on failure. */
static int in_root(struct inject *in, const char *path, int dir, int no_symlinks)
{
	unsigned long long res = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | (no_symlinks ? RESOLVE_NO_SYMLINKS : 0);
	int flags = O_PATH | O_CLOEXEC | (dir ? O_DIRECTORY : 0);

	return (int)sys_openat2(in->root, path, flags, res);
}

/*
 * Reads a regular file of the rootfs (symbolic links followed inside it):
 * opened O_PATH, checked, then opened for reading through /proc/self/fd,
 * so that no device, FIFO or socket of the image is ever opened.
 */
static int read_in_root(struct inject *in, const char *path, size_t max, char **buf, size_t *len)
{
	struct stat st;
	char rel[64];
	int p = in_root(in, path, 0, 0), fd, rc;

	if (p < 0)
		return p;
	if (fstat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(p);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > max) {
		close(p);
		return -EFBIG;
	}
	snprintf(rel, sizeof(rel), "self/fd/%d", p);
	fd = openat(in->proc, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	close(p);
	if (fd < 0)
		return -errno;
	rc = read_all(fd, max, buf, len);
	close(fd);
	return rc;
}

static const char *read_error(int rc)
{
	return rc == -EINVAL ? "not a regular file" : rc == -EFBIG ? "too long" : strerror(-rc);
}

/* The versions of the image's file @path, checked against the preload's machine. */
static int image_versions(struct inject *in, const char *path, struct hte_elf_versions *v, char *why,
			  size_t cap)
{
	char *buf, err[256];
	size_t len;
	int rc = read_in_root(in, path, FILE_MAX, &buf, &len);

	if (rc < 0) {
		hte_oci_why(why, cap, "the image's %s: %s", path, read_error(rc));
		return rc;
	}
	rc = hte_elf_versions_read(buf, len, v, err, sizeof(err));
	free(buf);
	if (rc < 0) {
		hte_oci_why(why, cap, "the image's %s: %s", path, err);
		return -EINVAL;
	}
	if (v->machine != in->pre_v->machine || v->elfclass != in->pre_v->elfclass || v->msb != in->pre_v->msb) {
		hte_oci_why(why, cap, "the image's %s is for another machine (e_machine %u, %d-bit) than the "
			    "preload (e_machine %u, %d-bit)", path, v->machine, v->elfclass, in->pre_v->machine,
			    in->pre_v->elfclass);
		return -EINVAL;
	}
	return 0;
}

/* Finds the library @file in the loader's directories of the image; its path in @out. */
static int find_library(struct inject *in, const char *file, char *out, size_t cap)
{
	const char *arch = hte_multiarch(in->pre_v->machine, in->pre_v->elfclass);
	const char *dirs[] = { "/lib/%s", "/usr/lib/%s", "/lib64", "/usr/lib64", "/lib", "/usr/lib" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[64];
		struct stat st;
		int fd;

		snprintf(dir, sizeof(dir), dirs[i], arch);
		snprintf(out, cap, "%s/%s", dir, file);
		fd = in_root(in, out, 0, 0);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			close(fd);
			return 0;
		}
		close(fd);
	}
	return -ENOENT;
}

/* Whether the image's loader and libraries define every version the preload needs. */
static int glibc_check(struct hook *h, struct inject *in, char *why, size_t cap)
{
	const char *loader = hte_loader_path(in->pre_v->machine, in->pre_v->elfclass);
	struct hte_elf_versions *ld = malloc(sizeof(*ld)), *lib = malloc(sizeof(*lib));
	int rc = -1;

	if (!ld || !lib) {
		hte_oci_why(why, cap, "out of memory");
		goto out;
	}
	rc = image_versions(in, loader, ld, why, cap);
	if (rc == -ENOENT)
		hte_oci_why(why, cap, "no glibc loader %s in the image (musl, static, or another architecture): "
			    "left as it is", loader);
	if (rc < 0)
		goto out;
	for (unsigned i = 0; i < in->pre_v->nfiles; i++) {
		const struct hte_verneed *need = &in->pre_v->need[i];
		const struct hte_elf_versions *have = ld;
		char path[PATH_MAX], missing[512], ver[32];

		/* The loader names itself in its first version definition (its soname). */
		if (!(ld->ndef && strcmp(ld->def[0], need->file) == 0)) {
			rc = find_library(in, need->file, path, sizeof(path));
			if (rc < 0) {
				hte_oci_why(why, cap, "no %s (which the preload needs) in the image's library "
					    "directories: left as it is", need->file);
				goto out;
			}
			rc = image_versions(in, path, lib, why, cap);
			if (rc < 0)
				goto out;
			have = lib;
			if (strcmp(need->file, "libc.so.6") == 0 && hte_glibc_version(lib, ver, sizeof(ver)) == 0) {
				h->rec->has_glibc = 1;
				snprintf(h->rec->glibc, sizeof(h->rec->glibc), "%s", ver);
			}
		}
		if (!hte_versions_cover(have, need, missing, sizeof(missing))) {
			rc = -1;
			if (have == lib && h->rec->has_glibc)
				hte_oci_why(why, cap, "the image's %s (glibc %s) lacks %s, which the preload needs: "
					    "left as it is", path, h->rec->glibc, missing);
			else
				hte_oci_why(why, cap, "the image's %s lacks %s, which the preload needs: left as it is",
					    have == lib ? path : loader, missing);
			goto out;
		}
	}
	rc = 0;
out:
	free(ld);
	free(lib);
	return rc;
}

/*
 * Whether a mount point may be made in the directory @dirfd: only in the
 * container's own layer (the rootfs's overlay mount) or in a tmpfs of the
 * container's alone (mounted in no host mount), never in a volume, a bind
 * of the host's or a rootfs that is a plain host directory.
 */
static int may_create(struct inject *in, int dirfd)
{
	struct hte_mountinfo m;
	unsigned long long id;

	if (fd_mnt_id(in->proc, dirfd, &id) < 0)
		return 0;
	if (id == in->root_mnt)
		return in->root_overlay;
	if (fd_mount(in->proc, dirfd, &m) < 0 || strcmp(m.fstype, "tmpfs") != 0)
		return 0;
	return !hte_mountinfo_has_dev(in->host_mounts, in->host_mounts_len, m.major, m.minor);
}

/* A directory @name under @dirfd, no link followed; made (0755) when missing and allowed. */
static int target_dir(struct inject *in, int dirfd, const char *name, const char *shown, int *made, char *why,
		      size_t cap)
{
	int fd = (int)sys_openat2(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC,
				  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);

	if (fd == -ENOENT && made) {
		if (!may_create(in, dirfd)) {
			return hte_oci_why(why, cap, "%s is missing and its directory is not the container's own "
					   "layer: nothing is made there", shown);
		}
		if (mkdirat(dirfd, name, 0755) < 0) {
			return hte_oci_why(why, cap, "cannot make %s: %s", shown, strerror(errno));
		}
		fchmodat(dirfd, name, 0755, 0);
		*made = 1;
		fd = (int)sys_openat2(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC,
				      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	}
	if (fd >= 0)
		return fd;
	if (fd == -ELOOP)
		hte_oci_why(why, cap, "%s is a symbolic link: refused", shown);
	else if (fd == -ENOTDIR)
		hte_oci_why(why, cap, "%s is not a directory: refused", shown);
	else if (fd == -ENOENT)
		hte_oci_why(why, cap, "the image has no %s: refused", shown);
	else
		hte_oci_why(why, cap, "cannot open %s: %s", shown, strerror(-fd));
	return -1;
}

/* The image's /etc/ld.so.preload: read when it is a regular file, made empty when missing. */
static int target_preload_list(struct inject *in, char *why, size_t cap, char **text, size_t *len)
{
	struct stat st;
	char rel[64];
	int fd, rd, rc;

	*text = NULL;
	*len = 0;
	in->etc_pre = (int)sys_openat2(in->etc, "ld.so.preload", O_PATH | O_CLOEXEC,
				       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (in->etc_pre == -ENOENT) {
		if (!may_create(in, in->etc)) {
			return hte_oci_why(why, cap, "/etc/ld.so.preload is missing and /etc is not the container's "
					   "own layer (a volume?): nothing is made there");
		}
		/* O_EXCL: never through a link, never over a file that appeared meanwhile. */
		fd = openat(in->etc, "ld.so.preload", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0) {
			return hte_oci_why(why, cap, "cannot make /etc/ld.so.preload: %s", strerror(errno));
		}
		in->made_etc_pre = 1;
		fchmod(fd, 0644);
		close(fd);
		in->etc_pre = (int)sys_openat2(in->etc, "ld.so.preload", O_PATH | O_CLOEXEC,
					       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	}
	if (in->etc_pre == -ELOOP) {
		return hte_oci_why(why, cap, "/etc/ld.so.preload is a symbolic link: refused");
	}
	if (in->etc_pre < 0) {
		return hte_oci_why(why, cap, "cannot open /etc/ld.so.preload: %s", strerror(-in->etc_pre));
	}
	if (fstat(in->etc_pre, &st) < 0 || !S_ISREG(st.st_mode)) {
		return hte_oci_why(why, cap, "/etc/ld.so.preload is not a regular file: refused");
	}
	if ((uint64_t)st.st_size > HTE_OCI_PRELOAD_LIST_MAX) {
		return hte_oci_why(why, cap, "/etc/ld.so.preload is longer than %u bytes: refused",
				   HTE_OCI_PRELOAD_LIST_MAX);
	}
	if (in->made_etc_pre)
		return 0;
	snprintf(rel, sizeof(rel), "self/fd/%d", in->etc_pre);
	rd = openat(in->proc, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (rd < 0) {
		return hte_oci_why(why, cap, "cannot read /etc/ld.so.preload: %s", strerror(errno));
	}
	rc = read_all(rd, HTE_OCI_PRELOAD_LIST_MAX, text, len);
	close(rd);
	if (rc < 0) {
		return hte_oci_why(why, cap, "cannot read /etc/ld.so.preload: %s",
				   rc == -EFBIG ? "too long" : strerror(-rc));
	}
	return 0;
}

/* Every place mounted on, resolved and checked before anything is mounted. */
static int targets(struct hook *h, struct inject *in, char *why, size_t cap)
{
	struct hte_mountinfo m;
	char *text;
	size_t len;
	long n;

	in->etc = target_dir(in, in->root, "etc", "/etc", NULL, why, cap);
	if (in->etc < 0)
		return -1;
	if (target_preload_list(in, why, cap, &text, &len) < 0)
		return -1;
	n = hte_preload_list_merge(text, len, HTE_OCI_PRELOAD_IN, in->list, sizeof(in->list), &h->rec->kept);
	free(text);
	if (n < 0) {
		return hte_oci_why(why, cap, "/etc/ld.so.preload holds a NUL byte or too much: refused");
	}
	in->list_len = n;
	in->run = target_dir(in, in->root, "run", "/run", &in->made_run, why, cap);
	if (in->run < 0)
		return -1;
	in->run_ht = target_dir(in, in->run, "hugetext", "/run/hugetext", &in->made_run_ht, why, cap);
	if (in->run_ht < 0)
		return -1;
	/* A mount under a shared one would propagate to its peers, maybe the host's. */
	if (fd_mount(in->proc, in->run_ht, &m) < 0 || m.shared) {
		return hte_oci_why(why, cap,
				   "/run/hugetext lies on a shared mount (its mounts would propagate out): refused");
	}
	if (fd_mount(in->proc, in->etc_pre, &m) < 0 || m.shared) {
		return hte_oci_why(why, cap, "/etc/ld.so.preload lies on a shared mount: refused");
	}
	return 0;
}

/* A tmpfs of ours, detached: root's, 0755, small, nosuid, nodev, noexec. */
static int our_tmpfs(const char *size)
{
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC), m = -1;

	if (fs < 0)
		return -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", "64", 0) == 0 &&
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	close(fs);
	return m;
}

/* A file of ours in the detached tmpfs @mfd: @text, mode 0644. */
static int our_file(int mfd, const char *name, const char *text, size_t len)
{
	int fd = openat(mfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int rc;

	if (fd < 0)
		return -1;
	rc = fchmod(fd, 0644) == 0 && write_all(fd, text, len) == 0 ? 0 : -1;
	return close(fd) == 0 ? rc : -1;
}

/* Mounts the detached @tree on @name of the (attached) tmpfs @mfd. */
static int attach_at(int tree, int mfd, const char *name, int dir)
{
	int t = openat(mfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
	int rc;

	if (t < 0)
		return -1;
	rc = move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	close(t);
	return rc;
}

static int set_ro(int fd, int recursive)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };

	return mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof(a));
}

/* Unmounts the attached mount whose root @fd holds (lazily: nothing runs there yet). */
static void detach(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	umount2(path, MNT_DETACH);
}

/* /run/hugetext/text: a tmpfs of ours with the view bound on shared/. */
static int mount_text(int a, int view_tree)
{
	int b = our_tmpfs("64k"), rc = -1;

	if (b < 0)
		return -1;
	if (mkdirat(b, HT_SERVICE_SHARED, 0755) == 0 && fchmodat(b, HT_SERVICE_SHARED, 0755, 0) == 0 &&
	    attach_at(b, a, "text", 1) == 0)
		rc = attach_at(view_tree, b, HT_SERVICE_SHARED, 1) == 0 ? 0 : -1;
	close(b);
	return rc;
}

/* Builds /run/hugetext and binds /etc/ld.so.preload; on failure undoes what it mounted. */
static int mount_all(struct inject *in, char *why, size_t cap)
{
	int a = our_tmpfs("1m"), lt = -1;

	if (a < 0) {
		return hte_oci_why(why, cap, "cannot make a tmpfs (fsopen): %s", strerror(errno));
	}
	if (our_file(a, "ld.so.preload", in->list, (size_t)in->list_len) < 0 ||
	    our_file(a, HTE_OCI_PRELOAD_NAME, "", 0) < 0 ||
	    (in->sock_tree >= 0 && !in->own_sock && our_file(a, "service.sock", "", 0) < 0) ||
	    (in->own_sock && (mkdirat(a, "sock", 0755) < 0 || fchmodat(a, "sock", 0755, 0) < 0 ||
			      symlinkat("sock/" HTE_CONTAINER_SOCKET_NAME, a, "service.sock") < 0)) ||
	    (in->view_tree >= 0 && (mkdirat(a, "text", 0755) < 0 || fchmodat(a, "text", 0755, 0) < 0))) {
		hte_oci_why(why, cap, "cannot fill our tmpfs: %s", strerror(errno));
		close(a);
		return -1;
	}
	if (move_mount(a, "", in->run_ht, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		hte_oci_why(why, cap, "cannot mount on /run/hugetext (move_mount): %s", strerror(errno));
		close(a);
		return -1;
	}
	if (attach_at(in->pre_tree, a, HTE_OCI_PRELOAD_NAME, 0) < 0) {
		hte_oci_why(why, cap, "cannot bind the preload: %s", strerror(errno));
		goto undo;
	}
	if (in->sock_tree >= 0 && attach_at(in->sock_tree, a, in->own_sock ? "sock" : "service.sock", in->own_sock) < 0) {
		hte_oci_why(why, cap, "cannot bind the service's socket: %s", strerror(errno));
		goto undo;
	}
	if (in->view_tree >= 0 && mount_text(a, in->view_tree) < 0) {
		hte_oci_why(why, cap, "cannot mount the cache view: %s", strerror(errno));
		goto undo;
	}
	if (set_ro(a, 1) < 0) {
		hte_oci_why(why, cap, "cannot make /run/hugetext read-only: %s", strerror(errno));
		goto undo;
	}
	/* Last: the one mount that makes the loader load the preload. */
	lt = clone_ro_at(a, "ld.so.preload", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (lt < 0 || move_mount(lt, "", in->etc_pre, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		hte_oci_why(why, cap, "cannot bind /etc/ld.so.preload: %s", strerror(lt < 0 ? -lt : errno));
		close_fd(&lt);
		goto undo;
	}
	close(lt);
	close(a);
	return 0;
undo:
	detach(a);
	close(a);
	return -1;
}

/* Takes back the mount points made in the image, after a failure. */
static void unmake(struct inject *in)
{
	if (in->made_etc_pre && in->etc >= 0)
		unlinkat(in->etc, "ld.so.preload", 0);
	if (in->made_run_ht && in->run >= 0)
		unlinkat(in->run, "hugetext", AT_REMOVEDIR);
	if (in->made_run && in->root >= 0)
		unlinkat(in->root, "run", AT_REMOVEDIR);
}

static int container_side(struct hook *h, struct inject *in, char *why, size_t cap)
{
	char path[2 * PATH_MAX + 2];
	struct hte_mountinfo m;

	if (setns(in->mntns, CLONE_NEWNS) < 0) {
		return hte_oci_why(why, cap, "cannot enter its mount namespace (setns): %s", strerror(errno));
	}
	if (fchdir(in->croot) < 0 || chroot(".") < 0) {
		return hte_oci_why(why, cap, "cannot take its process's root: %s", strerror(errno));
	}
	rootfs_path(h, in, path, sizeof(path));
	hte_oci_why(h->rec->rootfs, sizeof(h->rec->rootfs), "%s", path); /* cut, as a reason is */
	/* The engine's path, not the image's: followed as the host's admin set it up. */
	in->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (in->root < 0) {
		return hte_oci_why(why, cap, "cannot open its rootfs %s: %s", path, strerror(errno));
	}
	if (fd_mnt_id(in->proc, in->root, &in->root_mnt) < 0 || fd_mount(in->proc, in->root, &m) < 0) {
		return hte_oci_why(why, cap, "cannot find its rootfs's mount");
	}
	in->root_overlay = strcmp(m.fstype, "overlay") == 0;
	snprintf(h->rec->upperdir, sizeof(h->rec->upperdir), "%s", m.upperdir);
	if (glibc_check(h, in, why, cap) < 0)
		return -1;
	if (targets(h, in, why, cap) < 0 || mount_all(in, why, cap) < 0) {
		unmake(in);
		return -1;
	}
	return 0;
}

static void inject_free(struct inject *in)
{
	int *fds[] = { &in->proc, &in->pidfd, &in->mntns, &in->pre_fd, &in->pre_tree, &in->sock_tree,
		       &in->sock_dir, &in->view_tree, &in->cfd, &in->root, &in->etc, &in->run, &in->run_ht, &in->etc_pre };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close_fd(fds[i]);
	free(in->host_mounts);
	free(in->pre_v);
}

/* What the container got, in words, for the log and the record. */
static void injected_reason(struct hook *h, struct inject *in, const char *noview, int ready)
{
	struct hte_oci_record *r = h->rec;
	const char *sock = !in->own_sock ? (in->sock_tree < 0 ? "no service socket (none was listening)"
					    : in->sockets_full ? "the service's socket (as many containers as it "
								 "listens for have one of their own)"
							       : "the service's socket")
			   : ready ? "a socket of its own to the service"
				   : "a socket of its own to the service (not listening yet)";

	snprintf(r->reason, sizeof(r->reason),
		 "injected (glibc %s): the preload, /etc/ld.so.preload (%u entr%s of the image kept), %s, %s%s",
		 r->has_glibc ? r->glibc : "?", r->kept, r->kept == 1 ? "y" : "ies",
		 sock,
		 in->view_tree >= 0 ? "the cache view" : "no cache view: ", in->view_tree >= 0 ? "" : noview);
	if (in->view_tree >= 0 && in->linked) {
		size_t n = strlen(r->reason);

		snprintf(r->reason + n, sizeof(r->reason) - n, " (%u cache entr%s linked into it)", in->linked,
			 in->linked == 1 ? "y" : "ies");
	}
}

static int do_inject(struct hook *h)
{
	struct inject in = { .proc = -1, .pidfd = -1, .mntns = -1, .croot = -1, .pre_fd = -1, .pre_tree = -1,
			     .sock_tree = -1, .sock_dir = -1, .view_tree = -1, .cfd = -1, .root = -1, .etc = -1, .run = -1,
			     .run_ht = -1, .etc_pre = -1 };
	char why[1024] = "";
	const char *noview = "";
	int rc, ok = 0;

	in.proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	rc = in.proc < 0 ? -errno : target_process(h, &in);
	if (rc == -ESRCH || rc == -ENOENT || (rc < 0 && rc != -EEXIST)) {
		hte_error("oci-hook", "%s: the container's process %ld is gone (%s)", h->st.id, h->st.pid,
			  strerror(rc == -ENOENT ? ESRCH : -rc));
		inject_free(&in);
		return HTE_EXIT_FAIL;
	}
	if (rc == -EEXIST) {
		hte_oci_why(why, sizeof(why), "its process shares the host's mount namespace: nothing is mounted");
	} else if (read_config(h, &in, why, sizeof(why)) < 0) {
		/* why says it */
	} else if (open_records(h) < 0) {
		hte_oci_why(why, sizeof(why), "cannot keep its record in %s", h->o.records);
	} else if (host_preload(h, &in, why, sizeof(why)) < 0) {
		/* why says it */
	} else if (read_proc(in.proc, "self/mountinfo", 16u << 20, &in.host_mounts, &in.host_mounts_len) < 0) {
		hte_oci_why(why, sizeof(why), "cannot read the host's mount table");
	} else {
		snprintf(h->rec->preload, sizeof(h->rec->preload), "%s", h->o.preload);
		own_socket(h, &in);
		if (in.sock_tree < 0)
			host_socket(h, &in);
		host_view(h, &in, &noview);
		ok = container_side(h, &in, why, sizeof(why)) == 0;
	}
	h->rec->socket = ok && in.sock_tree >= 0;
	if (!ok) {
		/* Nothing reached the container: its view goes too. */
		if (in.cfd >= 0)
			remove_view(in.cfd, h->st.id);
		h->rec->has_view = 0;
		h->rec->view[0] = '\0';
		h->rec->preload[0] = '\0';
		if (in.own_sock)
			remove_own_socket(in.sock_dir, h->st.id);
		snprintf(h->rec->reason, sizeof(h->rec->reason), "not injected: %s", why);
	} else {
		injected_reason(h, &in, noview, in.own_sock && own_socket_ready(h, &in));
	}
	h->rec->injected = ok;
	inject_free(&in);
	/* The record is the host's: written from the host's view, by descriptor. */
	if (write_record(h) < 0 && ok)
		say(h, "the container keeps what it got, but the text service cannot tell it apart");
	say(h, "%s (%.1f ms)", h->rec->reason, elapsed_ms(h));
	return HTE_EXIT_OK;
}

/* --- the command --- */

static int policy_of(struct hook *h)
{
	struct ht_conf *c = malloc(sizeof(*c));
	char err[512];
	int rc, p = HT_CONF_CONTAINERS_ANNOTATED;

	if (!c)
		return p;
	rc = ht_conf_load(h->o.config, c, err, sizeof(err));
	if (rc == 0 && (c->set & HT_CONF_CONTAINERS))
		p = c->containers;
	else if (rc < 0 && rc != -ENOENT)
		fprintf(stderr, "hugetext oci-hook: %s (containers = annotated assumed)\n", err);
	free(c);
	return p;
}

static const char *const policy_names[] = { "annotated", "all", "off" };

static int hook_run(struct hook *h)
{
	char *buf, err[512];
	size_t len;
	int rc, policy;
	enum hte_oci_ask ask;
	const char *why;

	clock_gettime(CLOCK_MONOTONIC, &h->t0);
	rc = read_all(0, HTE_OCI_STATE_MAX, &buf, &len);
	if (rc < 0) {
		hte_error("oci-hook", "cannot read the state on standard input: %s",
			  rc == -EFBIG ? "longer than 1 MiB" : strerror(-rc));
		return HTE_EXIT_FAIL;
	}
	rc = hte_oci_state_parse(buf, len, &h->st, err, sizeof(err));
	free(buf);
	if (rc < 0) {
		hte_error("oci-hook", "%s", err);
		return HTE_EXIT_FAIL;
	}
	if (h->st.stage == HTE_OCI_REMOVE)
		return geteuid() == 0 ? do_remove(h) : HTE_EXIT_OK; /* rootless: nothing was recorded */
	policy = policy_of(h);
	ask = hte_oci_decide(policy, &h->st, &why);
	/* A container that did not ask costs this exec and this parse, and leaves no trace. */
	if (ask == HTE_OCI_NOT_ASKED)
		return HTE_EXIT_OK;
	/* A rootless engine given our hooks.d: nothing can be mounted, and the container must not fail. */
	if (geteuid() != 0) {
		hte_error("oci-hook", "%s: not root (a rootless engine?): the container starts unchanged", h->st.id);
		return HTE_EXIT_OK;
	}
	h->logfd = open_log(h->o.log);
	h->rec = calloc(1, sizeof(*h->rec));
	if (!h->rec) {
		hte_error("oci-hook", "out of memory");
		return HTE_EXIT_FAIL;
	}
	snprintf(h->rec->id, sizeof(h->rec->id), "%s", h->st.id);
	h->rec->has_annotation = h->st.has_annotation;
	snprintf(h->rec->annotation, sizeof(h->rec->annotation), "%s", h->st.annotation);
	snprintf(h->rec->policy, sizeof(h->rec->policy), "%s", policy_names[policy]);
	snprintf(h->rec->userns, sizeof(h->rec->userns), "?");
	h->rec->time = (long long)time(NULL);
	h->rec->pid = h->st.pid;
	if (ask == HTE_OCI_ASKED)
		return do_inject(h);
	snprintf(h->rec->reason, sizeof(h->rec->reason), "not injected: %s", why);
	write_record(h);
	say(h, "%s (%.1f ms)", h->rec->reason, elapsed_ms(h));
	return HTE_EXIT_OK;
}

int hte_cmd_oci_hook(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "preload", required_argument, NULL, 'p' },
		{ "socket", required_argument, NULL, 's' },
		{ "cache", required_argument, NULL, 'c' },
		{ "records", required_argument, NULL, 'r' },
		{ "log", required_argument, NULL, 'l' },
		{ "config", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static char found[PATH_MAX];
	struct hook h = { .o = { NULL, HT_SERVICE_SOCKET, HT_TEXT_CACHE_DIR, HTE_OCI_RECORDS, HTE_OCI_LOG,
				 HT_CONF_PATH },
			  .logfd = -1, .recdir = -1 };
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': h.o.preload = optarg; break;
		case 's': h.o.socket = optarg; break;
		case 'c': h.o.cache = optarg; break;
		case 'r': h.o.records = optarg; break;
		case 'l': h.o.log = optarg; break;
		case 'f': h.o.config = optarg; break;
		case 'h': fputs(usage_text, stdout); return HTE_EXIT_OK;
		default: fputs(usage_text, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		hte_error("oci-hook", "unexpected argument '%s'", argv[optind]);
		fputs(usage_text, stderr);
		return HTE_EXIT_USAGE;
	}
	if (!h.o.preload) {
		/* The pinned build first: it lets libraries off the 2 MiB grid share (lib/meson.build). */
		if (hte_find_lib(HTE_OCI_PRELOAD_PINNED, found, sizeof(found)) < 0 &&
		    hte_find_preload(found, sizeof(found)) < 0)
			snprintf(found, sizeof(found), "/nonexistent/" HTE_OCI_PRELOAD_NAME);
		h.o.preload = found;
	}
	{
		const char *paths[] = { h.o.preload, h.o.socket, h.o.cache, h.o.records, h.o.config };

		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			if (paths[i][0] != '/') {
				hte_error("oci-hook", "'%s': the hook's paths are absolute", paths[i]);
				return HTE_EXIT_USAGE;
			}
		}
		if (h.o.log[0] && h.o.log[0] != '/') {
			hte_error("oci-hook", "'%s': the hook's paths are absolute", h.o.log);
			return HTE_EXIT_USAGE;
		}
	}
	rc = hook_run(&h);
	if (h.logfd >= 0)
		close(h.logfd);
	if (h.recdir >= 0)
		close(h.recdir);
	free(h.rec);
	return rc;
}
