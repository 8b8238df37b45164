/* SPDX-License-Identifier: MIT */
/*
 * The seam itself: the table every system call of the library goes
 * through (see sys.h), and glibc's own functions behind it.  The wrappers
 * live by concern in sys-mem.c, sys-file.c and sys-proc.c.
 */
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * glibc's own functions.  A name the library calls binds, like any other
 * name, to the first definition in the global scope: the program's when it
 * exports one (gpg exports its own regcomp() with a bigger regex_t, patch
 * its own renameat2()).  So every call of ours that a program could define
 * with another meaning is looked up here instead, once, in libc's own
 * scope: the system calls, the functions whose types libc defines
 * (regex_t, sigset_t), and secure_getenv().  What stays bound by name, and
 * why, is in docs/failure-model.md ("What the library calls"), and
 * tests/test-libc.cpp checks the list against the built libraries.
 */
#if defined(_FILE_OFFSET_BITS) && _FILE_OFFSET_BITS == 64
#define LFS(name) #name "64" /* the names <fcntl.h> and co. link to */
#else
#define LFS(name) #name
#endif

#define HT_LIBC_FUNCS(X) \
	X(mmap, LFS(mmap)) X(munmap, "munmap") X(mremap, "mremap") X(madvise, "madvise") \
	X(mprotect, "mprotect") X(mincore, "mincore") \
	X(open, LFS(open)) X(openat, LFS(openat)) X(read, "read") X(pread, LFS(pread)) \
	X(write, "write") X(close, "close") X(fstat, LFS(fstat)) X(fstatfs, LFS(fstatfs)) \
	X(ftruncate, LFS(ftruncate)) X(posix_fadvise, LFS(posix_fadvise)) X(ioctl, "ioctl") \
	X(mkdirat, "mkdirat") X(renameat2, "renameat2") X(unlinkat, "unlinkat") \
	X(linkat, "linkat") X(readlink, "readlink") X(getcwd, "getcwd") \
	X(syscall, "syscall") X(clock_gettime, "clock_gettime") X(nanosleep, "nanosleep") \
	X(getpid, "getpid") X(geteuid, "geteuid") X(secure_getenv, "secure_getenv") \
	X(sigfillset, "sigfillset") \
	X(regcomp, "regcomp") X(regexec, "regexec") X(regfree, "regfree")

static struct ht_libc libc_fns;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

/* The loader's own dlopen() and dlsym(), from libc (glibc 2.34+) or libdl. */
struct loader {
	void *(*dlopen)(const char *file, int mode);
	void *(*dlsym)(void *handle, const char *name);
	char *(*dlerror)(void);
	char path[512];
};

static int find_loader(const char *file, struct loader *l)
{
	struct ht_dynsyms syms;

	if (!ht_dynsyms_find(file, &syms, l->path, sizeof(l->path)))
		return 0;
	l->dlopen = (void *(*)(const char *, int))ht_dynsym_lookup(&syms, "dlopen");
	l->dlsym = (void *(*)(void *, const char *))ht_dynsym_lookup(&syms, "dlsym");
	l->dlerror = (char *(*)(void))ht_dynsym_lookup(&syms, "dlerror");
	return l->dlopen && l->dlsym && l->dlerror;
}

/*
 * libc's own functions, looked up by hand in libc's GNU hash table: a
 * call by name could reach the program's function of that name, and a
 * dlsym() for each costs a preloaded program about a microsecond apiece
 * (the lookups were most of what a small program paid for the preload).
 * The lookup takes the default version, as the linker would.  A name it
 * misses (an IFUNC, glibc before 2.33's fstat64) is asked of glibc's
 * dlsym() on a libc handle, which searches libc and ld.so only; a name
 * libc lacks, or no libc found at all, gets a call that fails with ENOSYS
 * (libc_missing).  No name is bound by the linker as a fallback: taking
 * its address made ld.so look up all 33 names in every process at load
 * (GLOB_DAT relocations, about 24k instructions of /bin/true's 189k under
 * the preload), and such a binding reached the program's own function of
 * that name first.
 */
static void *libc_dlsym(struct loader *ld, void **libc, int *tried, const char *sym)
{
	if (!*tried) {
		*tried = 1;
		if (find_loader("libc.so.6", ld) || find_loader("libdl.so.2", ld))
			*libc = ld->dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	}
	return *libc ? ld->dlsym(*libc, sym) : NULL;
}

/*
 * What a name no lookup found is called through: it fails as a system call
 * the kernel lacks does.  Reached only where libc itself cannot be found in
 * our namespace (every name the library routes is in glibc 2.34, which the
 * preload's other imports need anyway).  The table's types differ from
 * these; the ABIs of Linux's processors let a callee that reads no
 * argument be called so.
 */
static long libc_missing(void)
{
	errno = ENOSYS;
	return -1;
}

static void *libc_missing_ptr(void)
{
	errno = ENOSYS;
	return NULL;
}

static void resolve_libc(void)
{
	struct loader ld = { 0 };
	struct ht_dynsyms syms;
	char path[512];
	void *libc = NULL, *p;
	int have = ht_dynsyms_find("libc.so.6", &syms, path, sizeof(path));
	int tried = 0, missed = 0;

#define RESOLVE(field, sym) \
	p = have ? ht_dynsym_lookup(&syms, sym) : NULL; \
	if (!p) { \
		p = libc_dlsym(&ld, &libc, &tried, sym); \
		missed |= libc && !p; \
	} \
	libc_fns.field = (__typeof__(libc_fns.field))(p ? p : (void *)libc_missing);
	HT_LIBC_FUNCS(RESOLVE)
#undef RESOLVE
	/* The two that return a string say "none" with NULL (mmap's -1 is MAP_FAILED). */
	if ((void *)libc_fns.getcwd == (void *)libc_missing)
		libc_fns.getcwd = (char *(*)(char *, size_t))(void *)libc_missing_ptr;
	if ((void *)libc_fns.secure_getenv == (void *)libc_missing)
		libc_fns.secure_getenv = (char *(*)(const char *))(void *)libc_missing_ptr;
	/* A failed lookup leaves a message that the program's next dlerror() would see. */
	if (missed || (ld.dlopen && !libc))
		ld.dlerror();
}

const struct ht_libc *ht_libc(void)
{
	pthread_once(&libc_once, resolve_libc);
	return &libc_fns;
}

/*
 * glibc's __libc_single_threaded (2.32 and later), found in libc's table
 * when first asked rather than bound by the linker, which would make
 * ld.so look it up in every process at load (test-libc).
 */
static const char *single_threaded_flag;

static void find_single_threaded(void)
{
	struct ht_dynsyms syms;
	char path[512];

	if (ht_dynsyms_find("libc.so.6", &syms, path, sizeof(path)))
		single_threaded_flag = ht_dynsym_lookup_object(&syms, "__libc_single_threaded");
}

int ht_sys_single_threaded(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, find_single_threaded);
	return single_threaded_flag ? __atomic_load_n(single_threaded_flag, __ATOMIC_RELAXED) != 0 : -1;
}

static int real_open(const char *path, int flags, mode_t mode)
{
	return ht_libc()->open(path, flags, mode);
}

static int real_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return ht_libc()->openat(dirfd, path, flags, mode);
}


/* By number: glibc before 2.34 has no wrapper. */
static int real_close_range(unsigned first, unsigned last, unsigned flags)
{
#ifdef SYS_close_range
	return (int)ht_libc()->syscall(SYS_close_range, first, last, flags);
#else
	(void)first, (void)last, (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

static int real_ioctl(int fd, unsigned long request, void *arg)
{
	return ht_libc()->ioctl(fd, request, arg);
}

static double real_clock_ms(void)
{
	struct timespec ts;

	ht_libc()->clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return ht_libc()->mmap(addr, len, prot, flags, fd, off);
}

static int real_munmap(void *addr, size_t len)
{
	return ht_libc()->munmap(addr, len);
}

static void *real_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	return ht_libc()->mremap(old, old_len, new_len, flags, new_addr);
}

static int real_madvise(void *addr, size_t len, int advice)
{
	return ht_libc()->madvise(addr, len, advice);
}

static int real_mprotect(void *addr, size_t len, int prot)
{
	return ht_libc()->mprotect(addr, len, prot);
}

static ssize_t real_read(int fd, void *buf, size_t len)
{
	return ht_libc()->read(fd, buf, len);
}

static ssize_t real_pread(int fd, void *buf, size_t len, off_t off)
{
	return ht_libc()->pread(fd, buf, len, off);
}

static ssize_t real_write(int fd, const void *buf, size_t len)
{
	return ht_libc()->write(fd, buf, len);
}

static int real_close(int fd)
{
	return ht_libc()->close(fd);
}

static int real_fstat(int fd, struct stat *st)
{
	return ht_libc()->fstat(fd, st);
}

static int real_mkdirat(int dirfd, const char *path, mode_t mode)
{
	return ht_libc()->mkdirat(dirfd, path, mode);
}

static int real_renameat2(int olddir, const char *old, int newdir, const char *new_path, unsigned flags)
{
	return ht_libc()->renameat2(olddir, old, newdir, new_path, flags);
}

static int real_unlinkat(int dirfd, const char *path, int flags)
{
	return ht_libc()->unlinkat(dirfd, path, flags);
}

static int real_linkat(int olddir, const char *old, int newdir, const char *new_path, int flags)
{
	return ht_libc()->linkat(olddir, old, newdir, new_path, flags);
}

static int real_ftruncate(int fd, off_t len)
{
	return ht_libc()->ftruncate(fd, len);
}

static int real_fstatfs(int fd, struct statfs *st)
{
	return ht_libc()->fstatfs(fd, st);
}

static int real_mincore(void *addr, size_t len, unsigned char *vec)
{
	return ht_libc()->mincore(addr, len, vec);
}

static int real_fadvise(int fd, off_t off, off_t len, int advice)
{
	return ht_libc()->posix_fadvise(fd, off, len, advice);
}

static int real_regcomp(regex_t *re, const char *pattern, int flags)
{
	return ht_libc()->regcomp(re, pattern, flags);
}

static int real_regexec(const regex_t *re, const char *s, size_t n, regmatch_t *m, int flags)
{
	return ht_libc()->regexec(re, s, n, m, flags);
}

static void real_regfree(regex_t *re)
{
	ht_libc()->regfree(re);
}

static char *real_getenv(const char *name)
{
	return ht_libc()->secure_getenv(name);
}

static pid_t real_getpid(void)
{
	return ht_libc()->getpid();
}

static uid_t real_geteuid(void)
{
	return ht_libc()->geteuid();
}

static int real_prctl(int option, unsigned long arg)
{
	return (int)ht_libc()->syscall(SYS_prctl, option, arg, 0UL, 0UL, 0UL);
}

/* Raw system calls: glibc's socket functions would need looking up for three calls. */
static int real_socket(int domain, int type, int protocol)
{
	return (int)ht_libc()->syscall(SYS_socket, domain, type, protocol);
}

static int real_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return (int)ht_libc()->syscall(SYS_connect, fd, addr, len);
}

static long real_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return ht_libc()->syscall(SYS_sendmsg, fd, msg, flags);
}

/* One initializer for both tables: ISO C cannot copy a const object here. */
#define HT_REAL_SYS { \
	.mmap = real_mmap, \
	.munmap = real_munmap, \
	.mremap = real_mremap, \
	.madvise = real_madvise, \
	.mprotect = real_mprotect, \
	.open = real_open, \
	.read = real_read, \
	.pread = real_pread, \
	.write = real_write, \
	.close = real_close, \
	.fstat = real_fstat, \
	.openat = real_openat, \
	.mkdirat = real_mkdirat, \
	.renameat2 = real_renameat2, \
	.unlinkat = real_unlinkat, \
	.linkat = real_linkat, \
	.ftruncate = real_ftruncate, \
	.fstatfs = real_fstatfs, \
	.mincore = real_mincore, \
	.close_range = real_close_range, \
	.ioctl = real_ioctl, \
	.fadvise = real_fadvise, \
	.clock_ms = real_clock_ms, \
	.regcomp = real_regcomp, \
	.regexec = real_regexec, \
	.regfree = real_regfree, \
	.getenv = real_getenv, \
	.getpid = real_getpid, \
	.geteuid = real_geteuid, \
	.prctl = real_prctl, \
	.socket = real_socket, \
	.connect = real_connect, \
	.sendmsg = real_sendmsg, \
}

static const struct ht_sys real_sys = HT_REAL_SYS;
struct ht_sys ht_sys = HT_REAL_SYS;

void ht_sys_reset(void)
{
	ht_sys = real_sys;
}

int ht_regcomp(regex_t *re, const char *pattern, int flags)
{
	return ht_sys.regcomp(re, pattern, flags);
}

int ht_regexec(const regex_t *re, const char *s, size_t nmatch, regmatch_t *m, int flags)
{
	return ht_sys.regexec(re, s, nmatch, m, flags);
}

void ht_regfree(regex_t *re)
{
	ht_sys.regfree(re);
}

char *ht_secure_getenv(const char *name)
{
	return ht_sys.getenv(name);
}

pid_t ht_getpid(void)
{
	return ht_sys.getpid();
}

uid_t ht_geteuid(void)
{
	return ht_sys.geteuid();
}
