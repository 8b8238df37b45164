/* SPDX-License-Identifier: MIT */
/* Files and the page cache: open, read, write, stat, rename, fadvise. */
#include "arch.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int ht_sys_open(const char *path, int flags, mode_t mode)
{
	int fd = ht_sys.open(path, flags | O_CLOEXEC, mode);

	return fd >= 0 ? fd : ht_sys_neg_errno();
}

/* Reads up to @len bytes; a short count means end of file. */
ssize_t ht_sys_pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = ht_sys.pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ht_sys_neg_errno();
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int ht_sys_write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = ht_sys.write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? ht_sys_neg_errno() : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int ht_sys_close(int fd)
{
	return ht_sys.close(fd) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_fstat(int fd, struct stat *st)
{
	return ht_sys.fstat(fd, st) == 0 ? 0 : ht_sys_neg_errno();
}

static int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 16384, used = 0;
	char *p = malloc(cap);

	if (!p)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (cap - used < 4096) {
			char *q = cap < SIZE_MAX / 4 ? realloc(p, cap * 2) : NULL;

			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
			cap *= 2;
		}
		n = ht_sys.read(fd, p + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = ht_sys_neg_errno();

			free(p);
			return err;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	p[used] = '\0';
	*buf = p;
	*len = used;
	return 0;
}

int ht_sys_read_file(const char *path, char **buf, size_t *len)
{
	int fd = ht_sys_open(path, O_RDONLY, 0);
	int err;

	if (fd < 0)
		return fd;
	err = read_all(fd, buf, len);
	ht_sys.close(fd);
	return err;
}

ssize_t ht_sys_read_file_into(const char *path, char *buf, size_t cap)
{
	int fd = cap ? ht_sys_open(path, O_RDONLY, 0) : -EINVAL;
	size_t used = 0;
	ssize_t err = 0;

	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t n;

		if (used == cap - 1) {
			/* Full: it fits only if the file ends here. */
			char c;

			n = ht_sys.read(fd, &c, 1);
			err = n == 0 ? 0 : -EFBIG;
			break;
		}
		n = ht_sys.read(fd, buf + used, cap - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? ht_sys_neg_errno() : 0;
			break;
		}
		used += (size_t)n;
	}
	ht_sys.close(fd);
	if (err < 0)
		return err;
	buf[used] = '\0';
	return (ssize_t)used;
}

int ht_sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd = ht_sys.openat(dirfd, path, flags | O_CLOEXEC, mode);

	return fd >= 0 ? fd : ht_sys_neg_errno();
}

int ht_sys_mkdirat(int dirfd, const char *path, mode_t mode)
{
	return ht_sys.mkdirat(dirfd, path, mode) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_renameat(int dirfd, const char *old, const char *new_path)
{
	return ht_sys.renameat2(dirfd, old, dirfd, new_path, RENAME_NOREPLACE) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_linkat(int dirfd, const char *old, const char *new_path)
{
	return ht_sys.linkat(dirfd, old, dirfd, new_path, 0) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_unlinkat(int dirfd, const char *path)
{
	return ht_sys.unlinkat(dirfd, path, 0) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_ftruncate(int fd, off_t len)
{
	return ht_sys.ftruncate(fd, len) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_fstatfs(int fd, struct statfs *st)
{
	return ht_sys.fstatfs(fd, st) == 0 ? 0 : ht_sys_neg_errno();
}

int ht_sys_drop_cached(int fd, uint64_t off, size_t len)
{
	int err = ht_sys.fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);

	return err > 0 ? -err : err;
}

int ht_sys_resident(void *addr, size_t len, unsigned char *vec)
{
	return ht_sys.mincore(addr, len, vec) == 0 ? 0 : ht_sys_neg_errno();
}

/*
 * A first touch by the CPU of each 4 KiB of memory that the disk's read
 * filled.  Under a hypervisor that maps guest memory into its own page
 * tables lazily, that read (the device writing the page) does not map it
 * for the guest's CPU: the first program to run the code would take one
 * exit per page.  On this project's KVM guests (free memory handed back
 * to the host) that was 60-210 ms for clang's 148 MiB, 9-20 ms once mapped.
 * Done here, off the program's path; only over pages already cached,
 * since a touch of a missing one would read it in 4 KiB.
 */
static void touch_every_page(const char *at, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		(void)*(volatile const char *)(at + i);
}

int64_t ht_sys_read_huge(int fd, uint64_t off, size_t len, int every_page)
{
	const size_t huge_page = 2u << 20;
	char *base, *at;
	uint64_t huge = 0;
	int64_t ret = 0;
	struct stat st;

	if (!len || off % huge_page || len % huge_page || len > SIZE_MAX - huge_page)
		return -EINVAL;
	/* Past the end of the file a read would be SIGBUS. */
	if (ht_sys.fstat(fd, &st) != 0)
		return ht_sys_neg_errno();
	if (st.st_size < 0 || (uint64_t)st.st_size < off + len)
		return -EINVAL;
	/* A 2 MiB-aligned address for a 2 MiB-aligned offset: huge pages can map it. */
	base = ht_sys.mmap(NULL, len + huge_page, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return ht_sys_neg_errno();
	at = (char *)(((uintptr_t)base + huge_page - 1) & ~(uintptr_t)(huge_page - 1));
	/*
	 * MADV_RANDOM: each touch reads its own 2 MiB folio and nothing more.
	 * Without it the fault also reads ahead, in folios the disk's
	 * read_ahead_kb sizes, into the next 2 MiB, which then never comes
	 * back huge (24 of 38 MiB with 2560 KiB of read-ahead).
	 */
	if (ht_sys.mmap(at, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off) == MAP_FAILED ||
	    ht_sys.madvise(at, len, MADV_HUGEPAGE) != 0 || ht_sys.madvise(at, len, MADV_RANDOM) != 0) {
		ret = ht_sys_neg_errno();
		ht_sys.munmap(base, len + huge_page);
		return ret;
	}
	/*
	 * Each first touch reads a whole 2 MiB page where the file system can
	 * hold one.  After the first, ask over the whole mapping: only that
	 * page has been touched, so the total is its count, and it is exact
	 * through smaps too (before Linux 6.7), which gives one FilePmdMapped
	 * per mapping, not per 2 MiB.
	 */
	for (size_t done = 0; done < len; done += huge_page) {
		(void)*(volatile const char *)(at + done);
		if (done == 0 && (ht_sys_self_huge((uintptr_t)at, (uintptr_t)at + len, &huge) < 0 || !huge))
			break;
	}
	if (huge && ht_sys_self_huge((uintptr_t)at, (uintptr_t)at + len, &huge) < 0)
		huge = 0;
	if (every_page && (uint64_t)huge == len)
		touch_every_page(at, len);
	ht_sys.munmap(base, len + huge_page);
	return (int64_t)huge;
}

/*
 * The whole regular file @path into @buf, by system calls made by number
 * (arch.h): no libc function is looked up or called and errno is left
 * alone, so the preload can read its policy file before it has looked
 * anything up (preload.c).  Outside the seam: nothing the fault tests
 * inject reaches it, and its callers treat every failure as "may be".
 */
ssize_t ht_sys_read_small_raw(const char *path, char *buf, size_t cap)
{
	struct stat st;
	size_t done = 0;
	long fd, n = 0;

	if (!HT_ARCH_RAW_SYSCALL)
		return -ENOSYS;
	/* O_NONBLOCK: a FIFO put there must not hang; fstat refuses it next. */
	fd = ht_arch_syscall3(SYS_openat, AT_FDCWD, (long)path,
			      O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fd;
	n = ht_arch_syscall3(SYS_fstat, fd, (long)&st, 0);
	if (n == 0 && !S_ISREG(st.st_mode))
		n = -EINVAL;
	else if (n == 0 && (uint64_t)st.st_size > cap)
		n = -EFBIG;
	while (n >= 0 && done < (size_t)st.st_size) {
		n = ht_arch_syscall3(SYS_read, fd, (long)(buf + done), (long)((size_t)st.st_size - done));
		if (n == -EINTR)
			n = 0;
		else if (n > 0)
			done += (size_t)n;
		else if (n == 0)
			break;
	}
	ht_arch_syscall3(SYS_close, fd, 0, 0);
	return n < 0 ? n : (ssize_t)done;
}
