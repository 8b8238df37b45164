/* SPDX-License-Identifier: MIT */
/*
 * ELF files on disk: open, map, check, and the in-place edit of p_flags
 * (or, for edit --align, of p_align).
 * The checks themselves are the pure ones of elfcheck.c.
 */
#include "tool.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *hte_type_str(unsigned type)
{
	switch (type) {
	case ET_EXEC: return "executable";
	case ET_DYN: return "position-independent";
	case ET_REL: return "relocatable";
	case ET_CORE: return "core";
	default: return "unknown type";
	}
}

/*
 * O_NONBLOCK so that a FIFO given by mistake cannot hang the command
 * before fstat() shows what it is.
 */
static int open_regular(struct hte_file *f, int writable, const char *cmd)
{
	struct stat st;
	int fd = open(f->path, (writable ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		int err = errno;

		if (err == ETXTBSY)
			hte_error(cmd, "%s: cannot open for writing: a running program uses it (%s)",
				  f->path, strerror(err));
		else
			hte_error(cmd, "%s: cannot open%s: %s", f->path, writable ? " for writing" : "",
				  strerror(err));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		hte_error(cmd, "%s: cannot stat: %s", f->path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		hte_error(cmd, "%s: %s", f->path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		close(fd);
		return -1;
	}
	f->fd = fd;
	f->len = (size_t)st.st_size;
	return 0;
}

/* The file hte_file_open mapped last: the SIGBUS message names it. */
static const char *volatile reading;

/*
 * A mapped file that shrinks under us (another user truncating their own
 * file while root checks it) faults on the next read: a clear message and
 * exit 1, not a core dump.  Only async-signal-safe calls here.
 */
static void on_sigbus(int sig)
{
	static const char a[] = "hugetext: ", b[] = ": the file shrank while it was read; stopped\n";
	const char *p = reading ? reading : "a mapped file";

	(void)sig;
	if (write(STDERR_FILENO, a, sizeof(a) - 1) >= 0 && write(STDERR_FILENO, p, strlen(p)) >= 0)
		(void)!write(STDERR_FILENO, b, sizeof(b) - 1);
	_exit(HTE_EXIT_FAIL);
}

static void catch_sigbus(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

int hte_file_open(struct hte_file *f, const char *path, int writable, const char *cmd)
{
	void *p;

	memset(f, 0, sizeof(*f));
	f->path = path;
	f->fd = -1;
	if (open_regular(f, writable, cmd) < 0)
		return -1;
	if (f->len < EI_NIDENT) {
		/* Too short to map usefully; the checker words the refusal. */
		unsigned char head[EI_NIDENT];
		ssize_t n = pread(f->fd, head, sizeof(head), 0);

		hte_check_buffer(head, n > 0 ? (size_t)n : 0, &f->elf);
	} else {
		/* Read-only: the checker promises not to write, so a write would fault loudly. */
		reading = path;
		catch_sigbus();
		p = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, f->fd, 0);
		if (p == MAP_FAILED) {
			hte_error(cmd, "%s: cannot map: %s", path, strerror(errno));
			hte_file_close(f);
			return -1;
		}
		f->map = p;
		hte_check_buffer(f->map, f->len, &f->elf);
	}
	if (f->elf.error != HTE_OK) {
		hte_error(cmd, "%s: %s", path, f->elf.why);
		hte_file_close(f);
		return -1;
	}
	return 0;
}

void hte_file_close(struct hte_file *f)
{
	if (reading == f->path)
		reading = NULL;
	hte_elf_release(&f->elf);
	if (f->map)
		munmap((void *)(uintptr_t)f->map, f->len);
	if (f->fd >= 0)
		close(f->fd);
	f->map = NULL;
	f->fd = -1;
}

static int pread_all(int fd, unsigned char *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * One pwrite() of the changed range.  A short write is undone with the
 * original bytes, so the file ends either old or new, not in between.
 */
static int write_range(struct hte_file *f, const unsigned char *new_bytes,
		       const unsigned char *old_bytes, size_t len, off_t off, const char *cmd)
{
	ssize_t n = pwrite(f->fd, new_bytes, len, off);
	int err = errno;

	if (n == (ssize_t)len) {
		if (fsync(f->fd) == 0)
			return 0;
		hte_error(cmd, "%s: written, but fsync failed: %s", f->path, strerror(errno));
		return -1;
	}
	if (n > 0 && pwrite(f->fd, old_bytes, (size_t)n, off) != n) {
		hte_error(cmd, "%s: short write, and restoring the old bytes failed: the program headers "
			  "at %#llx may be damaged", f->path, (unsigned long long)off);
		return -1;
	}
	hte_error(cmd, "%s: cannot write the program headers: %s", f->path,
		  n < 0 ? strerror(err) : "short write");
	return -1;
}

long hte_file_edit(struct hte_file *f, unsigned opts, const char *cmd)
{
	struct hte_elf *e = &f->elf;
	size_t tlen = e->phnum * e->phentsize, first, end;
	unsigned char *table, *orig, *now;
	long changed;
	int err = -1;

	if (e->type != ET_EXEC && e->type != ET_DYN) {
		hte_error(cmd, "%s: not an executable or shared library (%s ELF file), left alone",
			  f->path, hte_type_str(e->type));
		return -1;
	}
	if (e->nload == 0) {
		hte_error(cmd, "%s: no loadable segment to edit", f->path);
		return -1;
	}
	table = malloc(3 * tlen);
	if (!table) {
		hte_error(cmd, "%s: out of memory", f->path);
		return -1;
	}
	orig = table + tlen;
	now = orig + tlen;
	/* A copy: the shared mapping would show another writer's changes too. */
	memcpy(orig, f->map + e->phoff, tlen);
	memcpy(table, orig, tlen);
	changed = hte_edit_table(e, opts, table, tlen, &first, &end);
	if (changed < 0)
		hte_error(cmd, "%s: the program headers do not allow this edit, left alone", f->path);
	if (changed <= 0) {
		free(table);
		return changed;
	}
	/* The bytes the write spans must still be those read, or someone else is editing too. */
	if (pread_all(f->fd, now, end - first, (off_t)(e->phoff + first)) < 0 ||
	    memcmp(now, orig + first, end - first) != 0)
		hte_error(cmd, "%s: changed on disk while being edited, left alone", f->path);
	else
		err = write_range(f, table + first, orig + first, end - first, (off_t)(e->phoff + first), cmd);
	free(table);
	if (err < 0)
		return -1;
	if (opts & (HTE_EDIT_ALIGN | HTE_EDIT_UNALIGN)) {
		uint64_t *want = calloc(e->nload ? e->nload : 1, sizeof(*want));
		uint64_t shared;
		char why[200];

		/* The values just written: all computed from the headers as they were, then stored. */
		if (want && hte_align_check(e, &shared, why, sizeof(why)) == 0) {
			for (size_t i = 0; i < e->nload; i++)
				want[i] = hte_align_value(e, i, (opts & HTE_EDIT_UNALIGN) != 0, shared);
			for (size_t i = 0; i < e->nload; i++)
				e->load[i].align = want[i];
		}
		free(want);
		return changed;
	}
	for (size_t i = 0; i < e->nload; i++)
		e->load[i].flags = hte_edit_flags(&e->load[i], opts);
	return changed;
}
