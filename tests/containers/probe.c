/* SPDX-License-Identifier: MIT */
/*
 * What a container's process sees of hugetext: its /etc/ld.so.preload,
 * /run/hugetext, whether the preload (and the image's own preloaded
 * library) is mapped.  Built three ways: against glibc, static, and with
 * musl.  "probe write" also tries to change what the hook mounted; "probe
 * wait" then reads its standard input to the end, to stay alive.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? "absent" : "unreadable";
	if (S_ISLNK(st.st_mode))
		return "symlink";
	if (S_ISDIR(st.st_mode))
		return "directory";
	if (S_ISFIFO(st.st_mode))
		return "fifo";
	if (S_ISSOCK(st.st_mode))
		return "socket";
	return S_ISREG(st.st_mode) ? "file" : "other";
}

/* A file's first bytes, newlines as '|', other control bytes as '?'. */
static void show(const char *key, const char *path)
{
	char buf[512];
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	printf("%s: %s", key, kind(path));
	if (n >= 0) {
		printf(" [");
		for (ssize_t i = 0; i < n; i++)
			putchar(buf[i] == '\n' ? '|' : (unsigned char)buf[i] < 0x20 ? '?' : buf[i]);
		printf("]");
	}
	putchar('\n');
	if (fd >= 0)
		close(fd);
}

static int mapped(const char *name)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, name))
			found = 1;
	if (f)
		fclose(f);
	return found;
}

/* errno's name: musl has no strerrorname_np(). */
static const char *errno_name(int e)
{
	static const struct { int e; const char *name; } names[] = {
		{ EROFS, "EROFS" }, { EPERM, "EPERM" }, { EACCES, "EACCES" }, { ENOENT, "ENOENT" },
		{ EINVAL, "EINVAL" }, { EBUSY, "EBUSY" }, { ENOTDIR, "ENOTDIR" }, { ELOOP, "ELOOP" },
		{ EEXIST, "EEXIST" }, { EISDIR, "EISDIR" }, { ENXIO, "ENXIO" },
	};
	static char other[16];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(other, sizeof(other), "errno %d", e);
	return other;
}

static void try_errno(const char *what, int rc)
{
	printf("%s: %s\n", what, rc == 0 ? "done" : errno_name(errno));
}

static int try_open(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	show("etc-ld.so.preload", "/etc/ld.so.preload");
	printf("run-hugetext: %s\n", kind("/run/hugetext"));
	printf("preload-mapped: %s\n", mapped("libhugetext-preload.so") ? "yes" : "no");
	printf("keep-mapped: %s\n", mapped("libkeep.so") ? "yes" : "no");
	if (argc > 1 && strcmp(argv[1], "write") == 0) {
		show("run-ld.so.preload", "/run/hugetext/ld.so.preload");
		printf("service-sock: %s\n", kind("/run/hugetext/service.sock"));
		{
			struct stat st;

			/* What the link leads to: the container's own socket (its directory bound from the host). */
			printf("service-sock-target: %s\n", stat("/run/hugetext/service.sock", &st) < 0 ? "absent"
							     : S_ISSOCK(st.st_mode)			 ? "socket"
												 : "other");
		}
		printf("text-shared: %s\n", kind("/run/hugetext/text/shared"));
		try_errno("write-etc-ld.so.preload", try_open("/etc/ld.so.preload", O_WRONLY | O_APPEND));
		try_errno("write-preload", try_open("/run/hugetext/libhugetext-preload.so", O_WRONLY));
		try_errno("create-run-hugetext", try_open("/run/hugetext/new", O_WRONLY | O_CREAT));
		try_errno("create-text-shared", try_open("/run/hugetext/text/shared/new", O_WRONLY | O_CREAT));
		try_errno("create-sock", try_open("/run/hugetext/sock/new", O_WRONLY | O_CREAT));
		try_errno("umount-run-hugetext", umount2("/run/hugetext", MNT_DETACH));
		try_errno("remount-rw", mount(NULL, "/run/hugetext", NULL, MS_REMOUNT | MS_BIND, NULL));
	}
	fflush(stdout);
	if (argc > 1 && strcmp(argv[argc - 1], "wait") == 0) {
		char buf[256];

		while (read(0, buf, sizeof(buf)) > 0)
			;
	}
	return 0;
}
