/* SPDX-License-Identifier: MIT */
/* The library's side of the text service (see service.h, docs/service.md). */
#include "service.h"
#include "internal.h"
#include "sys.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/un.h>

const char *ht_offer_refusal(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != 0)
		return "the file does not belong to root";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "the file is group- or world-writable";
	if (!(st->st_mode & S_IROTH))
		return "others may not read the file";
	return NULL;
}

/* statfs(2)'s f_type of FUSE. */
#define HT_FUSE_MAGIC 0x65735546

const char *ht_offer_mount_refusal(const struct statfs *fs)
{
	/* statfs's f_flags carries the mount's ST_ flags (Linux 2.6.36 on). */
	if ((fs->f_flags & ST_NOSUID) || fs->f_type == HT_FUSE_MAGIC)
		return "the file is on a nosuid or FUSE mount (users can make those)";
	return NULL;
}

const char *ht_offer_check(const struct ht_offer *m, uint64_t file_size)
{
	if (memcmp(m->magic, HT_OFFER_MAGIC, sizeof(m->magic)) != 0)
		return "not an offer";
	if (m->file_off % HT_PAGE)
		return "file offset not page aligned";
	if (m->len == 0 || m->len % HT_HUGE_PAGE_SIZE || m->len > (1ULL << 36))
		return "span length not whole 2 MiB pages";
	/* A span is the code plus at most the padding up to its last 2 MiB page. */
	if (m->mapped == 0 || m->mapped > m->len || m->len - m->mapped >= HT_HUGE_PAGE_SIZE)
		return "span and code lengths disagree";
	if (m->file_off > file_size || m->mapped > file_size - m->file_off)
		return "span lies outside the file";
	return NULL;
}

/* Connects without waiting: a service that does not answer at once is no service. */
static int connect_to(const char *sock)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(sock) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, sock, strlen(sock) + 1);
	fd = ht_sys_socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	err = ht_sys_connect(fd, (const struct sockaddr *)&a, sizeof(a));
	if (err < 0) {
		ht_sys_close(fd);
		return err;
	}
	return fd;
}

int ht_service_offer(const char *sock, int fd, uint64_t file_off, uint64_t len, uint64_t mapped)
{
	struct ht_offer m = { .file_off = file_off, .len = len, .mapped = mapped };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int s = connect_to(sock);
	long n;

	if (s < 0)
		return s;
	memcpy(m.magic, HT_OFFER_MAGIC, sizeof(m.magic));
	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	n = ht_sys_sendmsg(s, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	ht_sys_close(s);
	if (n < 0)
		return (int)n;
	return n == (long)sizeof(m) ? 0 : -EIO;
}
