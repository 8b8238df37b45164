/* SPDX-License-Identifier: MIT */
/*
 * The text service's socket (docs/service.md, "Floods").
 *
 * Every connection is accepted at once, in a loop driven by epoll, and
 * costs only cheap work here: its credentials, one read, fstat of the
 * descriptor and the file's own checks, the dedup.  What costs (ELF
 * checks, /proc reads, warms, fills) is the worker's, within each
 * client's budget.  So the listen queue stays short whatever one client
 * does, and a client that floods is stopped where it costs nothing:
 *
 *   - a connection whose message is not there yet is held, 20 ms at most,
 *     HELD_PER_UID of one uid at once, HELD_MAX in all; past that it is
 *     closed unread;
 *   - a uid that opens more than CONN_BURST connections at once or
 *     CONN_RATE a second is shut out: the socket gets a POSIX ACL entry
 *     that denies that uid, so the kernel refuses its connect() (EACCES)
 *     before the service sees it, for 1 s, doubling at each repeat up to
 *     BAN_MAX_S.  Its processes then do what they do without a service.
 *     Root (and a container's root that is the host's root) passes any
 *     ACL: its connections past the rate are closed unread instead;
 *   - a container the hook injected connects on a socket of its own
 *     (serve-socks.c): its connections are the container's, whatever
 *     their uid, and past its rate its socket is not read for a while.
 */
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "serve-int.h"

#define ACL_XATTR "system.posix_acl_access"
#define LISTEN_BACKLOG 4096 /* the kernel caps it at net.core.somaxconn (4096 by default) */
#define ACCEPT_BATCH 256    /* connections taken before the held ones are looked at again */

struct held {
	int fd; /* -1: free */
	uid_t uid;
	int client;
	pid_t pid;
	double until;
};

static struct {
	struct held h[HELD_MAX];
	int ep;
	int sock_path;          /* O_PATH of the socket's file: its ACL is the gate */
	unsigned sock_mode;
	uid_t banned[256];
	size_t nbanned;
	double next_expiry;     /* of a shut-out, 0: none */
} N = { .ep = -1, .sock_path = -1 };

/* --- the gate: a uid shut out of the socket by its ACL --- */

static void path_of_fd(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* Writes the ACL for the uids shut out now (none: the plain mode).  Under srv.mu. */
static void gate_write(void)
{
	unsigned char acl[4 + 8 * 260];
	char path[64];
	long n;

	if (N.sock_path < 0)
		return;
	path_of_fd(N.sock_path, path, sizeof(path));
	if (N.nbanned == 0) {
		if (removexattr(path, ACL_XATTR) < 0 && errno != ENODATA)
			srv.gate = "cannot write the socket's ACL";
		return;
	}
	n = hte_acl_deny(N.sock_mode, N.banned, N.nbanned, acl, sizeof(acl));
	if (n < 0 || setxattr(path, ACL_XATTR, acl, (size_t)n, 0) < 0)
		srv.gate = "cannot write the socket's ACL";
}

/* The uids shut out as of @now, and when the next one is let in again.  Under srv.mu. */
static void gate_update(double now)
{
	size_t n = 0;

	N.next_expiry = 0;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &srv.clients[i];

		if (!c->used || c->kind != CLIENT_UID || c->uid == 0 || c->banned_until <= now)
			continue;
		if (n < sizeof(N.banned) / sizeof(N.banned[0]))
			N.banned[n++] = c->uid;
		if (!N.next_expiry || c->banned_until < N.next_expiry)
			N.next_expiry = c->banned_until;
	}
	/* Called when one is shut out or let in: the set changed. */
	N.nbanned = n;
	gate_write();
}

/*
 * Opens the socket's file for its ACL and checks that the file system
 * keeps ACLs (one written that says what the mode says, which the kernel
 * folds back into the mode).
 */
static void gate_open(const char *path)
{
	unsigned char acl[64];
	struct stat st;
	char p[64];
	long n;

	srv.gate = "the socket has no path";
	if (!path || path[0] != '/')
		return;
	N.sock_path = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (N.sock_path < 0 || fstat(N.sock_path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != 0) {
		srv.gate = "the socket's file is not root's socket";
		if (N.sock_path >= 0)
			close(N.sock_path);
		N.sock_path = -1;
		return;
	}
	N.sock_mode = st.st_mode & 0777;
	path_of_fd(N.sock_path, p, sizeof(p));
	/* A killed service's shut-outs are lifted: the service owns the socket's ACL. */
	removexattr(p, ACL_XATTR);
	n = hte_acl_deny(N.sock_mode, NULL, 0, acl, sizeof(acl));
	if (n < 0 || setxattr(p, ACL_XATTR, acl, (size_t)n, 0) < 0) {
		srv.gate = errno == EOPNOTSUPP ? "the socket's file system keeps no ACLs" : "cannot write the socket's ACL";
		close(N.sock_path);
		N.sock_path = -1;
		return;
	}
	removexattr(p, ACL_XATTR);
	srv.gate = "acl";
}

void gate_clear(void)
{
	pthread_mutex_lock(&srv.mu);
	N.nbanned = 0;
	gate_write();
	pthread_mutex_unlock(&srv.mu);
}

/* Shuts @c's uid out: 1 s, doubling at each repeat within BAN_FORGET_S.  Under srv.mu. */
static void ban(struct client *c, double now)
{
	unsigned s;

	if (c->last_ban && now - c->last_ban > BAN_FORGET_S)
		c->strikes = 0;
	s = c->strikes < 6 ? 1u << c->strikes : BAN_MAX_S;
	c->strikes += c->strikes < 6;
	c->banned_until = now + s;
	c->last_ban = now;
	/* Let in again with nothing saved up: its next burst is shut out at once, not after CONN_BURST more. */
	c->conn.level = 0;
	c->conn.at = c->banned_until;
	c->bans++;
	srv.bans_total++;
	log_add(&srv.refused, "%s opened more than %.0f connections at once or %.0f a second: %s for %u s",
		c->name, CONN_BURST, CONN_RATE,
		c->kind == CLIENT_CONTAINER ? "its own socket not read"
		: c->uid == 0		    ? "its connections closed unread"
					    : "shut out of the socket",
		s);
	gate_update(now);
}

/* --- the socket --- */

/* systemd's socket (LISTEN_FDS), else our own, bound at srv.socket. */
int listen_socket(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	char dir[sizeof(a.sun_path)], *slash;
	struct stat st;
	int fd;

	if (pid && n && atol(pid) == (long)getpid() && atoi(n) == 1) {
		struct sockaddr_un got = { 0 };
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
		fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK);
		/* Listening again only sets the queue's length: systemd's default is shorter. */
		listen(3, LISTEN_BACKLOG);
		if (len > offsetof(struct sockaddr_un, sun_path) && got.sun_path[0] == '/') {
			got.sun_path[sizeof(got.sun_path) - 1] = '\0';
			gate_open(got.sun_path);
		} else {
			gate_open(NULL);
		}
		return 3;
	}
	if (strlen(srv.socket) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", srv.socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	/* A socket left by a dead service is ours to replace; anything else is not. */
	if (lstat(srv.socket, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(srv.socket);
	}
	memcpy(a.sun_path, srv.socket, strlen(srv.socket) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Every user's processes may offer: the checks are ours, on what they send. */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(srv.socket, 0666) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	gate_open(srv.socket);
	return fd;
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
const char *reader_refusal(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	struct statfs fs;

	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return "the descriptor is not open for reading";
	if (fstatfs(fd, &fs) < 0)
		return "cannot stat the file's mount";
	return ht_offer_mount_refusal(&fs);
}

/* The sender's mount namespace (st_ino of /proc/PID/ns/mnt), 0 when it is gone. */
static unsigned long long mntns_of(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", (long)pid);
	return stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* The network namespace of the connection @c's peer (its socket's, as the kernel keeps it), 0 when unknown. */
static unsigned long long netns_of(int c)
{
	struct stat st;
	int ns = ioctl(c, SIOCGSKNS);
	unsigned long long ino = ns >= 0 && fstat(ns, &st) == 0 ? (unsigned long long)st.st_ino : 0;

	if (ns >= 0)
		close(ns);
	return ino;
}

/*
 * An offer of the right shape: the file's own checks, then the dedup,
 * then (for a new file only) the sender's container: one stat in /proc,
 * or, when the sender has gone already, the network namespace of its
 * connection @c.  Queued for the worker, or refused.  Owns @fd.
 */
static void offer_cheap(int fd, const struct ht_offer *m, const struct ucred *who, int uc, int c)
{
	struct pending p = { .fd = fd, .real = -1, .m = *m, .uid = who->uid, .sender = who->pid,
			     .wait_s = RETRY_S, .until = time(NULL) + KEEP_TRYING_S, .client = uc };
	const char *why;
	char id[HTE_ID_MAX + 1];
	int has_view = 0, seen, own;

	if (fstat(fd, &p.st) < 0)
		why = "cannot stat the descriptor";
	else if (!(why = ht_offer_refusal(&p.st)) && !(why = reader_refusal(fd)))
		why = ht_offer_check(m, (uint64_t)p.st.st_size);
	pthread_mutex_lock(&srv.mu);
	srv.offers++;
	srv.clients[uc].offers++;
	if (why) {
		refuse_log(uc, "%s (uid %u, pid %ld)", why, (unsigned)who->uid, (long)who->pid);
		srv.settled++;
		pthread_mutex_unlock(&srv.mu);
		close(fd);
		return;
	}
	key_of(&p.st, m, &p.k);
	seen = key_seen(&p.k);
	pthread_mutex_unlock(&srv.mu);
	if (seen) {
		close(fd);
		return;
	}
	p.mntns = mntns_of(who->pid);
	/* On its own socket, a container is who the socket says; on the host's, it is looked up. */
	pthread_mutex_lock(&srv.mu);
	own = srv.clients[uc].kind == CLIENT_CONTAINER;
	if (own)
		snprintf(id, sizeof(id), "%s", srv.clients[uc].id);
	pthread_mutex_unlock(&srv.mu);
	if (own)
		has_view = container_has_view(id);
	if (own || (p.mntns && container_of_mntns(p.mntns, id, &has_view)) ||
	    (!p.mntns && container_of_netns(netns_of(c), id, &has_view))) {
		if (has_view)
			snprintf(p.view_id, sizeof(p.view_id), "%s", id);
		pthread_mutex_lock(&srv.mu);
		p.client = client_of_container(id, p.mntns, who->uid);
		if (p.client < 0)
			p.client = uc;
	} else {
		pthread_mutex_lock(&srv.mu);
	}
	srv.clients[p.client].offers += p.client != uc;
	if (queue_offer(&p) < 0) {
		srv.clients[p.client].dropped++;
		srv.dropped++;
		pthread_mutex_unlock(&srv.mu);
		close(fd);
		return;
	}
	pthread_cond_signal(&srv.work);
	pthread_mutex_unlock(&srv.mu);
}

/*
 * Reads the one message of connection @c (its sender @who, client @uc).
 * Returns: 0 when nothing is there yet (the caller holds @c), else 1 and
 * @c is closed.
 */
static int read_offer(int c, const struct ucred *who, int uc)
{
	struct ht_offer m;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	int fd = -1, nfd = 0;
	ssize_t n = recvmsg(c, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* Closed with nothing said: nothing to count but the connection. */
	if (n <= 0) {
		close(c);
		return 1;
	}
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
		pthread_mutex_lock(&srv.mu);
		srv.offers++;
		srv.clients[uc].offers++;
		refuse_log(uc, "malformed message: %zd bytes, %d descriptors (uid %u, pid %ld)", n, nfd,
			   (unsigned)who->uid, (long)who->pid);
		srv.settled++;
		pthread_mutex_unlock(&srv.mu);
		if (fd >= 0)
			close(fd);
		close(c);
		return 1;
	}
	offer_cheap(fd, &m, who, uc, c);
	close(c);
	return 1;
}

static void unhold(int i)
{
	struct held *h = &N.h[i];

	epoll_ctl(N.ep, EPOLL_CTL_DEL, h->fd, NULL);
	h->fd = -1;
	pthread_mutex_lock(&srv.mu);
	srv.clients[h->client].held--;
	srv.held--;
	pthread_mutex_unlock(&srv.mu);
}

/* Holds @c until its message comes or @until, when its uid has a slot free.  Returns: 0 held, -1 not. */
static int hold(int c, const struct ucred *who, int uc, double until)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	int slot = -1;

	pthread_mutex_lock(&srv.mu);
	if (srv.clients[uc].held < HELD_PER_UID && srv.held < HELD_MAX)
		for (int i = 0; i < HELD_MAX && slot < 0; i++)
			if (N.h[i].fd < 0)
				slot = i;
	ev.data.u32 = (uint32_t)slot;
	if (slot >= 0 && epoll_ctl(N.ep, EPOLL_CTL_ADD, c, &ev) == 0) {
		N.h[slot] = (struct held){ c, who->uid, uc, who->pid, until };
		srv.clients[uc].held++;
		srv.held++;
		srv.held_total++;
	} else {
		slot = -1;
		srv.clients[uc].dropped++;
		srv.dropped++;
	}
	pthread_mutex_unlock(&srv.mu);
	return slot >= 0 ? 0 : -1;
}

/*
 * A new connection: its client's gate and rate, then its message (now, or
 * held).  Its client: the container @cid when it came on that container's
 * own socket (epoll tag @tag), else its uid.
 */
static void take(int c, double now, const char *cid, uint32_t tag)
{
	struct ucred who;
	socklen_t wl = sizeof(who);
	int uc, open_;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &who, &wl) < 0) {
		close(c);
		return;
	}
	pthread_mutex_lock(&srv.mu);
	srv.conns++;
	uc = cid ? client_of_container(cid, 0, who.uid) : client_of_uid(who.uid);
	open_ = uc >= 0;
	if (open_) {
		struct client *cl = &srv.clients[uc];

		cl->conns++;
		cl->last_seen = now;
		/* Queued before its uid was shut out, or root's past the rate: closed unread. */
		if (cl->banned_until > now) {
			open_ = 0;
		} else if (!hte_bucket_take(&cl->conn, now, CONN_RATE, CONN_BURST, 1)) {
			ban(cl, now);
			if (cid)
				csock_pause(tag, cl->banned_until);
			open_ = 0;
		}
		if (!open_)
			cl->dropped++;
	}
	if (!open_)
		srv.dropped++;
	pthread_mutex_unlock(&srv.mu);
	if (!open_) {
		close(c);
		return;
	}
	if (!read_offer(c, &who, uc) && hold(c, &who, uc, now + HOLD_MS / 1000.0) < 0)
		close(c);
}

/* Held connections whose time is up are closed; returns the ms until the next one's, -1 for none. */
static int expire_held(double now)
{
	double next = 0;

	for (int i = 0; i < HELD_MAX; i++) {
		if (N.h[i].fd < 0)
			continue;
		if (N.h[i].until <= now) {
			int fd = N.h[i].fd;

			unhold(i);
			close(fd);
		} else if (!next || N.h[i].until < next) {
			next = N.h[i].until;
		}
	}
	return next ? (int)((next - now) * 1000) + 1 : -1;
}

int accept_open(int lfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };

	for (int i = 0; i < HELD_MAX; i++)
		N.h[i].fd = -1;
	N.ep = epoll_create1(EPOLL_CLOEXEC);
	if (N.ep < 0 || epoll_ctl(N.ep, EPOLL_CTL_ADD, lfd, &ev) < 0) {
		hte_error("serve", "epoll: %s", strerror(errno));
		if (N.ep >= 0)
			close(N.ep);
		N.ep = -1;
		return -1;
	}
	/* Without it (said), containers connect on the host's socket, as the hook then binds it. */
	csock_open(N.ep);
	return 0;
}

/* Takes what @lfd's queue holds, up to ACCEPT_BATCH: the host's socket (@cid NULL) or container @cid's. */
static void take_all(int lfd, double now, const char *cid, uint32_t tag)
{
	for (int k = 0; k < ACCEPT_BATCH; k++) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		/* Out of descriptors (the caps keep it far): a pause, not a busy loop. */
		if (c < 0 && (errno == EMFILE || errno == ENFILE))
			usleep(1000);
		if (c < 0)
			break;
		take(c, now, cid, tag);
		/* Paused: the rest of its queue waits there. */
		if (cid && csock_paused(tag))
			break;
	}
}

void accept_loop(int lfd)
{
	struct epoll_event evs[64];

	while (!srv.stop) {
		double now = mono_now();
		int wait = expire_held(now), n;

		pthread_mutex_lock(&srv.mu);
		if (N.next_expiry && N.next_expiry <= now)
			gate_update(now);
		if (N.next_expiry) {
			int ms = (int)((N.next_expiry - now) * 1000) + 1;

			wait = wait < 0 || ms < wait ? ms : wait;
		}
		pthread_mutex_unlock(&srv.mu);
		{
			int ms = csock_tick(now);

			wait = ms >= 0 && (wait < 0 || ms < wait) ? ms : wait;
		}
		if (srv.once && srv.settled)
			break;
		n = epoll_wait(N.ep, evs, 64, wait < 0 || wait > 500 ? 500 : wait);
		now = mono_now();
		for (int i = 0; i < n; i++) {
			uint32_t slot = evs[i].data.u32;

			if (slot == UINT32_MAX) {
				take_all(lfd, now, NULL, 0);
			} else if (slot == CSOCK_NOTIFY) {
				csock_notified(now);
			} else if (slot >= CSOCK_TAG) {
				char id[HTE_ID_MAX + 1];
				int cfd = csock_fd(slot, id);

				if (cfd >= 0)
					take_all(cfd, now, id, slot);
			} else if (slot < HELD_MAX && N.h[slot].fd >= 0) {
				struct held h = N.h[slot];
				struct ucred who = { .pid = h.pid, .uid = h.uid };

				/* Out of the slot first: read_offer() closes it, or it is held again till its time. */
				unhold((int)slot);
				if (!read_offer(h.fd, &who, h.client) && hold(h.fd, &who, h.client, h.until) < 0)
					close(h.fd);
			}
		}
	}
	for (int i = 0; i < HELD_MAX; i++)
		if (N.h[i].fd >= 0) {
			int fd = N.h[i].fd;

			unhold(i);
			close(fd);
		}
	csock_close();
	close(N.ep);
}
