/* SPDX-License-Identifier: MIT */
/*
 * A socket of its own for each container (docs/service.md, "Floods";
 * docs/containers.md, "What a container gets").
 *
 * The contract with the OCI hook: the service makes <sockets>/ (root's,
 * 0700, next to its own socket: /run/hugetext/sockets); its being there
 * tells the hook that the service listens for containers.  Nobody but root
 * reaches into it: a host user cannot connect as a container.  For a
 * container it injects, the hook makes <sockets>/<id>/ (root's, 0755) and
 * binds it, read-only, into the container, which reaches it through that
 * mount only; the container's /run/hugetext/service.sock leads to
 * <id>/service.sock.  The service binds that socket and listens on it, once
 * it sees the directory (inotify), and again after a restart.  At poststop
 * the hook removes the directory, and the service closes the listener.  A
 * runtime that died before poststop leaves the directory: its listener is
 * closed VIEW_GRACE_S after it was made once the record says the init is
 * gone, and the directory is left alone (the service removes nothing; a
 * container started again under that id gets a new directory).  It
 * listens in HTE_CONTAINER_SOCKETS_MAX directories at most; the hook makes
 * none past that many (counting its own), and binds the host's socket.
 *
 * Every connection on a container's socket is that container's, whatever
 * uid it carries: its rate, its held connections, its budget.  A container
 * over its rate is not read for a while (its listener leaves the epoll, 1 s
 * doubling like a uid's shut-out): its connections wait, or fail, in its
 * own queue, at no cost to the host's queue or another container's.
 *
 * Only the acceptor thread calls these.
 */
#include "tool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "serve-int.h"

#define CSOCK_BACKLOG 256 /* a container's own queue */
#define CHECK_S 1.0       /* between two looks for stopped containers */
#define CLOSED (-2)

struct csock {
	int fd;              /* listening; CLOSED: its container is gone, the directory stays; -1: free */
	int dir;             /* O_PATH of <sockets>/<id> */
	char id[HTE_ID_MAX + 1];
	double made;         /* monotonic */
	double paused_until; /* 0: in the epoll */
};

static struct {
	struct csock s[CSOCK_MAX];
	int ep, dir, watch;
	double next_check;
} C = { .ep = -1, .dir = -1, .watch = -1 };

/* <dir of the service's socket>/sockets, into @out. */
static int sockets_path(char *out, size_t cap)
{
	const char *slash = strrchr(srv.socket, '/');
	int n;

	if (!slash || slash == srv.socket)
		return -1;
	n = snprintf(out, cap, "%.*s/" HTE_CONTAINER_SOCKETS_NAME, (int)(slash - srv.socket), srv.socket);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Root's own directory @name under @at (O_PATH), or -1; with @only_root, one nobody else may even search. */
static int root_dir(int at, const char *name, int only_root)
{
	struct stat st;
	int fd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
			(only_root && (st.st_mode & 077)))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A listening socket bound at @dir/service.sock (a socket left there is replaced; anything else is kept). */
static int bind_in(int dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (fstatat(dir, HTE_CONTAINER_SOCKET_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -1;
		unlinkat(dir, HTE_CONTAINER_SOCKET_NAME, 0);
	}
	/* By the descriptor's path: no name on the way can be swapped. */
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/" HTE_CONTAINER_SOCKET_NAME, dir);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || fchmodat(dir, HTE_CONTAINER_SOCKET_NAME, 0666, 0) < 0 ||
	    listen(fd, CSOCK_BACKLOG) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void set_count(void)
{
	unsigned n = 0;

	for (int i = 0; i < CSOCK_MAX; i++)
		n += C.s[i].fd >= 0;
	pthread_mutex_lock(&srv.mu);
	srv.csocks = n;
	pthread_mutex_unlock(&srv.mu);
}

/* Closes slot @i's listener, its socket file too; the slot stays (CLOSED) while its directory does. */
static void close_listener(int i)
{
	struct csock *s = &C.s[i];

	if (s->fd < 0)
		return;
	if (!s->paused_until)
		epoll_ctl(C.ep, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	unlinkat(s->dir, HTE_CONTAINER_SOCKET_NAME, 0);
	s->fd = CLOSED;
}

/* Frees slot @i (its directory went, or the service stops). */
static void drop(int i)
{
	close_listener(i);
	close(C.s[i].dir);
	C.s[i].fd = -1;
}

/* A listener for each directory that has none. */
static void scan(double now)
{
	int d2 = C.dir >= 0 ? openat(C.dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	struct dirent *e;

	if (!d) {
		if (d2 >= 0)
			close(d2);
		return;
	}
	while ((e = readdir(d))) {
		int i, free_ = -1, known = 0;

		if (e->d_name[0] == '.' || !hte_id_valid(e->d_name))
			continue;
		for (i = 0; i < CSOCK_MAX && !known; i++) {
			if (C.s[i].fd != -1 && !strcmp(C.s[i].id, e->d_name))
				known = 1;
			else if (C.s[i].fd == -1 && free_ < 0)
				free_ = i;
		}
		if (known)
			continue;
		if (free_ < 0) {
			log_add(&srv.refused, "container %s: no socket of its own (%d containers have one)", e->d_name,
				CSOCK_MAX);
			continue;
		}
		{
			struct csock *s = &C.s[free_];
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = CSOCK_TAG + (uint32_t)free_ };

			s->dir = root_dir(C.dir, e->d_name, 0);
			s->fd = s->dir >= 0 ? bind_in(s->dir) : -1;
			if (s->fd >= 0 && epoll_ctl(C.ep, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
				close(s->fd);
				s->fd = -1;
			}
			if (s->fd < 0) {
				if (s->dir >= 0)
					close(s->dir);
				log_add(&srv.refused, "container %s: cannot listen in its directory", e->d_name);
				continue;
			}
			snprintf(s->id, sizeof(s->id), "%.*s", HTE_ID_MAX, e->d_name);
			s->made = now;
			s->paused_until = 0;
		}
	}
	closedir(d);
	set_count();
}

/* Slots whose directory went are freed; listeners of containers whose init is gone are closed. */
static void check(double now)
{
	for (int i = 0; i < CSOCK_MAX; i++) {
		struct csock *s = &C.s[i];
		struct stat st;

		if (s->fd == -1)
			continue;
		if (fstat(s->dir, &st) < 0 || st.st_nlink == 0) {
			drop(i);
			continue;
		}
		/*
		 * Only a record that says its init is gone closes it, after the
		 * grace: a container started again under the same id has a new
		 * directory (a new slot) and its old record until the hook writes
		 * the new one.  No record (a hook that could not write it, records
		 * past RECORDS_MAX): it keeps listening.
		 */
		if (s->fd >= 0 && now - s->made > VIEW_GRACE_S && container_state(s->id) == 0)
			close_listener(i);
	}
	C.next_check = now + CHECK_S;
	set_count();
}

int csock_open(int ep)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 16];
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = CSOCK_NOTIFY };

	C.ep = ep;
	for (int i = 0; i < CSOCK_MAX; i++)
		C.s[i].fd = -1;
	if (sockets_path(path, sizeof(path)) < 0)
		return -1;
	mkdir(path, 0700);
	C.dir = root_dir(AT_FDCWD, path, 0);
	/* 0700 whatever made it (an older service made it 0755): through its descriptor, no name followed. */
	if (C.dir >= 0) {
		char self[64];

		snprintf(self, sizeof(self), "/proc/self/fd/%d", C.dir);
		if (chmod(self, 0700) < 0) {
			close(C.dir);
			C.dir = -1;
		}
	}
	if (C.dir < 0) {
		hte_error("serve", "%s: not root's own directory; containers share the host's socket", path);
		return -1;
	}
	C.watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (C.watch >= 0 && (inotify_add_watch(C.watch, path, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM |
							     IN_ONLYDIR | IN_DONT_FOLLOW) < 0 ||
			     epoll_ctl(ep, EPOLL_CTL_ADD, C.watch, &ev) < 0)) {
		close(C.watch);
		C.watch = -1;
	}
	/* Without the watch, new directories are found at each check, a second late. */
	scan(mono_now());
	return 0;
}

void csock_notified(double now)
{
	char buf[4096];

	while (C.watch >= 0 && read(C.watch, buf, sizeof(buf)) > 0) {
	}
	/* The gone first: a directory made again under the same id (a restart) then gets a listener. */
	check(now);
	scan(now);
}

int csock_fd(uint32_t tag, char *id)
{
	uint32_t i = tag - CSOCK_TAG;

	if (tag < CSOCK_TAG || i >= CSOCK_MAX || C.s[i].fd < 0)
		return -1;
	snprintf(id, HTE_ID_MAX + 1, "%s", C.s[i].id);
	return C.s[i].fd;
}

void csock_pause(uint32_t tag, double until)
{
	uint32_t i = tag - CSOCK_TAG;

	if (tag < CSOCK_TAG || i >= CSOCK_MAX || C.s[i].fd < 0 || C.s[i].paused_until)
		return;
	epoll_ctl(C.ep, EPOLL_CTL_DEL, C.s[i].fd, NULL);
	C.s[i].paused_until = until;
}

int csock_paused(uint32_t tag)
{
	uint32_t i = tag - CSOCK_TAG;

	return tag >= CSOCK_TAG && i < CSOCK_MAX && C.s[i].fd >= 0 && C.s[i].paused_until;
}

int csock_tick(double now)
{
	double next;

	for (int i = 0; i < CSOCK_MAX; i++) {
		struct csock *s = &C.s[i];
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = CSOCK_TAG + (uint32_t)i };

		if (s->fd >= 0 && s->paused_until && s->paused_until <= now) {
			s->paused_until = 0;
			epoll_ctl(C.ep, EPOLL_CTL_ADD, s->fd, &ev);
		}
	}
	if (C.dir >= 0 && now >= C.next_check) {
		check(now);
		if (C.watch < 0)
			scan(now);
	}
	next = C.next_check;
	for (int i = 0; i < CSOCK_MAX; i++)
		if (C.s[i].fd >= 0 && C.s[i].paused_until && C.s[i].paused_until < next)
			next = C.s[i].paused_until;
	return C.dir < 0 ? -1 : (int)((next - now) * 1000) + 1;
}

void csock_close(void)
{
	for (int i = 0; i < CSOCK_MAX; i++)
		if (C.s[i].fd != -1)
			drop(i);
	if (C.watch >= 0)
		close(C.watch);
	if (C.dir >= 0)
		close(C.dir);
	C.watch = C.dir = -1;
}
