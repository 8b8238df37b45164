/*
 * LD_PRELOAD shim for the edit tests: makes the first pwrite() of the
 * program short (HT_FAULT=short) or fail with ENOSPC (HT_FAULT=enospc), or
 * fsync() fail with EIO (HT_FAULT=fsync), or truncates the file of the
 * first file mapping of 64 KiB or more right after it is made, as another
 * user could meanwhile (HT_FAULT=truncate).  Later calls are real.
 */
/* Both pwrite and pwrite64 are defined here: no redirection of one to the other. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int faulted;

static int fault(const char *kind)
{
	const char *v = getenv("HT_FAULT");

	if (faulted || !v || strcmp(v, kind) != 0)
		return 0;
	faulted = 1;
	return 1;
}

static ssize_t real_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t (*fn)(int, const void *, size_t, off_t) =
		(ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");

	return fn(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (fault("enospc")) {
		errno = ENOSPC;
		return -1;
	}
	if (n > 1 && fault("short"))
		return real_pwrite(fd, buf, n / 2, off);
	return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	return pwrite(fd, buf, n, (off_t)off);
}

int fsync(int fd)
{
	int (*fn)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");

	if (fault("fsync")) {
		errno = EIO;
		return -1;
	}
	return fn(fd);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *(*fn)(void *, size_t, int, int, int, off_t) =
		(void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	void *p = fn(addr, len, prot, flags, fd, off);
	char path[64];
	int w;

	if (p != MAP_FAILED && fd >= 0 && len >= 65536 && fault("truncate")) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		w = open(path, O_WRONLY | O_TRUNC);
		if (w >= 0)
			close(w);
	}
	return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return mmap(addr, len, prot, flags, fd, (off_t)off);
}
