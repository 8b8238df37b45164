/* SPDX-License-Identifier: MIT */
/* The seam's local socket calls: the text service's offer (service.c). */
#include "sys.h"

int ht_sys_socket(int domain, int type, int protocol)
{
	int fd = ht_sys.socket(domain, type, protocol);

	return fd >= 0 ? fd : ht_sys_neg_errno();
}

int ht_sys_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return ht_sys.connect(fd, addr, len) == 0 ? 0 : ht_sys_neg_errno();
}

long ht_sys_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	long n = ht_sys.sendmsg(fd, msg, flags);

	return n >= 0 ? n : ht_sys_neg_errno();
}
