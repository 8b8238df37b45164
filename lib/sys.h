/* SPDX-License-Identifier: MIT */
/*
 * The one place that talks to the kernel.  Every system call the library
 * makes goes through the table below, so tests can make any of them fail
 * (ht_sys_set) and nothing else in lib/ calls mmap, mremap, madvise or
 * mprotect directly.
 *
 * Contract: each wrapper returns 0 (or a count, or a pointer through an
 * out-parameter) on success and a negative errno on failure.  Addresses and
 * lengths handed to the mapping calls are page aligned; callers check.
 *
 * The one header of the seam; its sections follow the files: the table and
 * glibc's functions (sys.c), dynamic symbol lookup (sys-dynsyms.c), memory
 * mappings (sys-mem.c), files and the page cache (sys-file.c), this
 * process's own state (sys-proc.c).
 */
#ifndef HT_SYS_H
#define HT_SYS_H

#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <time.h>

struct ht_sys {
	void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
	int (*munmap)(void *addr, size_t len);
	void *(*mremap)(void *old, size_t old_len, size_t new_len, int flags, void *new_addr);
	int (*madvise)(void *addr, size_t len, int advice);
	int (*mprotect)(void *addr, size_t len, int prot);
	int (*open)(const char *path, int flags, mode_t mode);
	ssize_t (*read)(int fd, void *buf, size_t len);
	ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*close)(int fd);
	int (*fstat)(int fd, struct stat *st);
	/* hugetlbfs and the shared cache */
	int (*openat)(int dirfd, const char *path, int flags, mode_t mode);
	int (*mkdirat)(int dirfd, const char *path, mode_t mode);
	int (*renameat2)(int olddir, const char *old, int newdir, const char *new_path, unsigned flags);
	int (*unlinkat)(int dirfd, const char *path, int flags);
	int (*linkat)(int olddir, const char *old, int newdir, const char *new_path, int flags);
	int (*ftruncate)(int fd, off_t len);
	int (*fstatfs)(int fd, struct statfs *st);
	int (*mincore)(void *addr, size_t len, unsigned char *vec);
	/* close_range(2), for a thread's own descriptor table */
	int (*close_range)(unsigned first, unsigned last, unsigned flags);
	/* PAGEMAP_SCAN on /proc/self/pagemap; posix_fadvise for the page cache */
	int (*ioctl)(int fd, unsigned long request, void *arg);
	int (*fadvise)(int fd, off_t off, off_t len, int advice);
	/* the monotonic clock, in ms, so tests can make time pass */
	double (*clock_ms)(void);
	/* libc functions a program may define too; see ht_libc() */
	int (*regcomp)(regex_t *re, const char *pattern, int flags);
	int (*regexec)(const regex_t *re, const char *s, size_t nmatch, regmatch_t *m, int flags);
	void (*regfree)(regex_t *re);
	char *(*getenv)(const char *name); /* secure_getenv */
	pid_t (*getpid)(void);
	uid_t (*geteuid)(void);
	/* prctl(2) with one argument: PR_GET_THP_DISABLE */
	int (*prctl)(int option, unsigned long arg);
	/* the text service's socket (service.c): AF_UNIX, SOCK_SEQPACKET, one message */
	int (*socket)(int domain, int type, int protocol);
	int (*connect)(int fd, const struct sockaddr *addr, socklen_t len);
	long (*sendmsg)(int fd, const struct msghdr *msg, int flags);
};

/* The table in use.  Tests replace entries to inject failures. */
extern struct ht_sys ht_sys;

/* Restore the real system calls. */
void ht_sys_reset(void);

/*
 * glibc's own functions, looked up once (thread-safely) in libc's own
 * scope, so that a program exporting the same name (gpg's regcomp,
 * patch's renameat2) is never called by us.  The table above calls
 * through these; code outside sys.c that needs one without a fault seam
 * (the preload, the background thread) calls them here.
 */
struct ht_libc {
	void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
	int (*munmap)(void *addr, size_t len);
	void *(*mremap)(void *old, size_t old_len, size_t new_len, int flags, ...);
	int (*madvise)(void *addr, size_t len, int advice);
	int (*mprotect)(void *addr, size_t len, int prot);
	int (*mincore)(void *addr, size_t len, unsigned char *vec);
	int (*open)(const char *path, int flags, ...);
	int (*openat)(int dirfd, const char *path, int flags, ...);
	ssize_t (*read)(int fd, void *buf, size_t len);
	ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*close)(int fd);
	int (*fstat)(int fd, struct stat *st);
	int (*fstatfs)(int fd, struct statfs *st);
	int (*ftruncate)(int fd, off_t len);
	int (*posix_fadvise)(int fd, off_t off, off_t len, int advice);
	int (*ioctl)(int fd, unsigned long request, ...);
	int (*mkdirat)(int dirfd, const char *path, mode_t mode);
	int (*renameat2)(int olddir, const char *old, int newdir, const char *new_path, unsigned flags);
	int (*unlinkat)(int dirfd, const char *path, int flags);
	int (*linkat)(int olddir, const char *old, int newdir, const char *new_path, int flags);
	ssize_t (*readlink)(const char *path, char *buf, size_t len);
	char *(*getcwd)(char *buf, size_t len);
	long (*syscall)(long number, ...);
	int (*clock_gettime)(clockid_t clock, struct timespec *ts);
	int (*nanosleep)(const struct timespec *req, struct timespec *rem);
	pid_t (*getpid)(void);
	uid_t (*geteuid)(void);
	char *(*secure_getenv)(const char *name);
	int (*sigfillset)(sigset_t *set);
	int (*regcomp)(regex_t *re, const char *pattern, int flags);
	int (*regexec)(const regex_t *re, const char *s, size_t nmatch, regmatch_t *m, int flags);
	void (*regfree)(regex_t *re);
};
const struct ht_libc *ht_libc(void);
/*
 * 1 while glibc runs the process in its single-threaded ways (no thread
 * was ever made: __libc_single_threaded), 0 once one was, -1 unknown
 * (glibc before 2.32).
 */
int ht_sys_single_threaded(void);

/* An object's dynamic symbol tables, where the loader mapped them (sys-dynsyms.c). */
struct ht_dynsyms {
	const uint32_t *gnu_hash; /* DT_GNU_HASH */
	const void *symtab;       /* DT_SYMTAB: ElfW(Sym) */
	const char *strtab;       /* DT_STRTAB */
	const uint16_t *versym;   /* DT_VERSYM, or NULL */
	uintptr_t base;           /* the load bias */
};
/*
 * The address of @name's definition of the default version ("name@@V")
 * as a plain function (not an IFUNC), or NULL.  Pure: reads the tables.
 */
void *ht_dynsym_lookup(const struct ht_dynsyms *d, const char *name);
/* The same for a variable (STT_OBJECT). */
void *ht_dynsym_lookup_object(const struct ht_dynsyms *d, const char *name);
/*
 * The tables of the loaded object whose file name is @file (e.g.
 * "libc.so.6"), in the caller's namespace; its path into @path.
 * Returns: 1 when found with a GNU hash table, else 0.
 */
int ht_dynsyms_find(const char *file, struct ht_dynsyms *syms, char *path, size_t len);
/*
 * The first loaded object, in the loader's order (the program, preloads,
 * then their libraries), that defines the function @name: the one calls
 * by that name reach.  Its path into @path ("" for the program).
 * Returns: 1 when found; 0 when none defines it; -1 when an object before
 * it has no GNU hash table, so the answer is not known.
 */
int ht_dynsyms_first_definer(const char *name, char *path, size_t len);

/* regcomp(3) and co. through the table: glibc's, whatever the program exports. */
int ht_regcomp(regex_t *re, const char *pattern, int flags);
int ht_regexec(const regex_t *re, const char *s, size_t nmatch, regmatch_t *m, int flags);
void ht_regfree(regex_t *re);
/* secure_getenv(3), getpid(2), geteuid(2) through the table. */
char *ht_secure_getenv(const char *name);
pid_t ht_getpid(void);
uid_t ht_geteuid(void);

/*
 * The wrappers, by concern: 0 (or a count, or a descriptor) on success,
 * a negative errno on failure.
 */
/* For the seam's own files: errno as a negative return. */
static inline int ht_sys_neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* Memory mappings (sys-mem.c). */
int ht_sys_map_anon(size_t len, size_t align, int hugetlb, void **out);
int ht_sys_unmap(void *addr, size_t len);
int ht_sys_advise(void *addr, size_t len, int advice);
int ht_sys_protect(void *addr, size_t len, int prot);
int ht_sys_swap(void *copy, size_t len, void *target);
int ht_sys_reserve_fixed(void *addr, size_t len);
/* True when nothing at all is mapped at the page @addr. */
int ht_sys_unmapped(void *addr);
/* Maps fresh anonymous memory exactly at @addr, which must be free. */
int ht_sys_map_fixed_anon(void *addr, size_t len);
/* Maps @len bytes of @fd; hugetlbfs files come back 2 MiB aligned. */
int ht_sys_map_file(int fd, size_t len, int prot, int shared, void **out);
/*
 * Maps @len bytes of @fd privately and populated at an @align-aligned
 * address (a power of two): a file of huge pages there can map with PMDs.
 */
int ht_sys_map_file_aligned(int fd, size_t len, int prot, size_t align, void **out);

/*
 * Maps @len bytes of @fd from @off privately at @addr.  With @replace the
 * mapping takes the place of what is there in one step (the kernel swaps
 * it under the mmap lock: no thread ever sees a hole); without, it fails
 * (-EEXIST) when anything at all is mapped there.
 */
int ht_sys_map_file_at(void *addr, size_t len, int prot, int fd, uint64_t off, int replace);

/* Files and the page cache (sys-file.c). */
int ht_sys_open(const char *path, int flags, mode_t mode);
ssize_t ht_sys_pread_full(int fd, void *buf, size_t len, off_t off);
int ht_sys_write_full(int fd, const void *buf, size_t len);
int ht_sys_close(int fd);
int ht_sys_fstat(int fd, struct stat *st);

int ht_sys_openat(int dirfd, const char *path, int flags, mode_t mode);
int ht_sys_mkdirat(int dirfd, const char *path, mode_t mode);
/* Never replaces an existing @new_path: -EEXIST instead. */
int ht_sys_renameat(int dirfd, const char *old, const char *new_path);
int ht_sys_unlinkat(int dirfd, const char *path);
int ht_sys_linkat(int dirfd, const char *old, const char *new_path);
int ht_sys_ftruncate(int fd, off_t len);
int ht_sys_fstatfs(int fd, struct statfs *st);

/* Read a whole (proc) file into a malloc'ed, NUL-terminated buffer. */
int ht_sys_read_file(const char *path, char **buf, size_t *len);
/*
 * The same into @buf of @cap bytes, NUL-terminated, without the allocator:
 * its length, or -EFBIG when it does not fit.
 */
ssize_t ht_sys_read_file_into(const char *path, char *buf, size_t cap);
/*
 * Reads the regular file @path whole into @buf by system calls made by
 * number, with no libc call (the preload's cheapest path; sys-file.c).
 * Returns: its length; -ENOENT when absent; -EFBIG when longer than @cap;
 * -EINVAL when not a regular file; -ENOSYS where the processor has no
 * such calls here (arch.h); another -errno.
 */
ssize_t ht_sys_read_small_raw(const char *path, char *buf, size_t cap);

/* posix_fadvise(POSIX_FADV_DONTNEED): drops the clean, unmapped cached pages. */
int ht_sys_drop_cached(int fd, uint64_t off, size_t len);
/* mincore(2): bit 0 of @vec[i] tells whether the i-th page from @addr is in memory. */
int ht_sys_resident(void *addr, size_t len, unsigned char *vec);
/*
 * Reads [@off, @off + @len) of @fd (both 2 MiB multiples) through a
 * 2 MiB-aligned MADV_HUGEPAGE mapping of our own, one touch per 2 MiB, so
 * that pages missing from the page cache come in as 2 MiB pages; stops
 * after the first 2 MiB when that one did not.  With @every_page, and when
 * all of it sits in 2 MiB pages, then touches each 4 KiB of it too.
 * Returns the bytes that sit in 2 MiB pages, or a negative errno.
 */
int64_t ht_sys_read_huge(int fd, uint64_t off, size_t len, int every_page);

/* This process: its THP setting, descriptor table and page tables (sys-proc.c). */
/*
 * Whether the process turned transparent huge pages off for itself
 * (prctl(PR_SET_THP_DISABLE), inherited over fork and exec): 1 when off,
 * 0 when on, a negative errno when the kernel cannot say.  Only asked,
 * never changed: the setting is the program's.
 */
int ht_sys_thp_disabled(void);

/*
 * Whether the process runs with more privilege than the user who started
 * it, or could regain some: the loader's AT_SECURE (set-ID, file
 * capabilities, an LSM's transition), real, effective and saved IDs that
 * differ (a root daemon that lent itself to a user with seteuid), or a
 * non-root process that holds capabilities.  1 when so, or when the kernel
 * cannot say; 0 otherwise.  Asked each time: IDs change as a program runs.
 */
int ht_sys_elevated(void);

/*
 * Gives the calling thread a descriptor table of its own, holding only
 * stderr (and only when @keep_stderr): the program can then neither close
 * our descriptors nor have its own closed or read by us.
 */
int ht_sys_private_fds(int keep_stderr);
/* True when the kernel has close_range(2) with CLOSE_RANGE_UNSHARE (5.9+). */
int ht_sys_can_private_fds(void);

/*
 * Bytes of [@start, @end) of this process mapped with huge pages (THP,
 * 2 MiB page-cache pages, hugetlb) into @huge.  PAGEMAP_SCAN (Linux 6.7)
 * walks only the range; older kernels get the whole of smaps read.
 * Returns 0 or a negative errno when neither can be read.
 */
int ht_sys_self_huge(uintptr_t start, uintptr_t end, uint64_t *huge);
/* The same, or 0 when unreadable. */
uint64_t ht_sys_self_huge_in(uintptr_t start, uintptr_t end);
/* The same through PAGEMAP_SCAN only: -ENOTTY on kernels before 6.7. */
int ht_sys_scan_huge(uintptr_t start, uintptr_t end, uint64_t *huge);
/* Sets @huge[i] when the i-th 2 MiB page from @start is mapped huge; -ENOTTY before 6.7. */
int ht_sys_scan_huge_chunks(uintptr_t start, size_t n, unsigned char *huge);
/*
 * The pages of the @n 2 MiB ranges from @start (2 MiB aligned) that are
 * present in this process's page tables: @present[i] counts the i-th
 * range's 4 KiB pages (0 to 512).  Present means run or read since it was
 * mapped, or mapped with its neighbours by the kernel's fault-around.
 * PAGEMAP_SCAN (6.7) where the kernel has it, else /proc/self/pagemap's
 * bit 63 (readable without privileges; only the frame numbers are hidden).
 */
int ht_sys_present_pages(uintptr_t start, size_t n, uint16_t *present);
/*
 * The same, counting only the pages below @end (rounded up to 4 KiB):
 * the code's own pages in a last range it shares with free space or other
 * mappings.
 */
int ht_sys_present_pages_to(uintptr_t start, size_t n, uintptr_t end, uint16_t *present);
/* The same through PAGEMAP_SCAN only: -ENOTTY on kernels before 6.7. */
int ht_sys_scan_present(uintptr_t start, size_t n, uint16_t *present);

/* Local sockets, for the text service's offer (sys-net.c). */
int ht_sys_socket(int domain, int type, int protocol);
int ht_sys_connect(int fd, const struct sockaddr *addr, socklen_t len);
long ht_sys_sendmsg(int fd, const struct msghdr *msg, int flags);

/* The running kernel's page sizes (sys-kernel.c). */
/* The base page size (AT_PAGESZ), in bytes; 0 when unknown. */
uint64_t ht_sys_base_page_size(void);
/* Where the kernel mapped the program's interpreter (AT_BASE); 0 for none. */
uintptr_t ht_sys_interp_base(void);
/* 1 when the directory @path exists (a sysfs hugetlb size), else a negative errno. */
int ht_sys_dir_exists(const char *path);

#endif
