/* SPDX-License-Identifier: MIT */
/* All system calls of the library, behind one replaceable table (see sys.h). */
#include "sys.h"
#include "maps.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
/* Ask for 2 MiB pages even where the default huge page size is 1 GiB. */
#define HT_MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)

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

/*
 * Where an object's dynamic symbol tables are.  glibc rewrites the
 * addresses in a library's own .dynamic to absolute ones (not where that
 * section is read-only): a value inside the object is taken as is, any
 * other is relative to the load bias.
 */
static const void *dyn_ptr(ElfW(Addr) v, uintptr_t base, uintptr_t lo, uintptr_t hi)
{
	return (const void *)(v >= lo && v < hi ? v : v + base);
}

struct found_object {
	const char *want;         /* the file name to find, e.g. "libc.so.6" */
	char *path;
	size_t path_len;
	struct ht_dynsyms *syms;
	int ok;
};

static void read_dynamic(const struct dl_phdr_info *info, struct ht_dynsyms *d)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	const ElfW(Dyn) *dyn = NULL;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_LOAD && info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	memset(d, 0, sizeof(*d));
	d->base = info->dlpi_addr;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		const void *p = dyn_ptr(dyn->d_un.d_ptr, info->dlpi_addr, lo, hi);

		if (dyn->d_tag == DT_GNU_HASH)
			d->gnu_hash = p;
		else if (dyn->d_tag == DT_SYMTAB)
			d->symtab = p;
		else if (dyn->d_tag == DT_STRTAB)
			d->strtab = p;
		else if (dyn->d_tag == DT_VERSYM)
			d->versym = p;
	}
}

static int find_object_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct found_object *f = ctx;
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	if (!slash || strcmp(slash + 1, f->want) != 0 || strlen(info->dlpi_name) >= f->path_len)
		return 0;
	strcpy(f->path, info->dlpi_name);
	read_dynamic(info, f->syms);
	f->ok = f->syms->gnu_hash && f->syms->symtab && f->syms->strtab;
	return 1;
}

int ht_dynsyms_find(const char *file, struct ht_dynsyms *syms, char *path, size_t len)
{
	struct found_object f = { file, path, len, syms, 0 };

	/* dl_iterate_phdr() lists the namespace of its caller: ours. */
	dl_iterate_phdr(find_object_cb, &f);
	return f.ok;
}

struct first_definer {
	const char *name;
	char *path;
	size_t path_len;
	int found;
};

/*
 * The kernel's vDSO defines no allocator; arm64's has a SysV hash table
 * only (no DT_GNU_HASH), which must not count as an object we cannot read.
 * glibc names it by its soname alone; every object loaded from a file is
 * named by its path (the program: "").
 */
static int is_vdso(const struct dl_phdr_info *info)
{
	return info->dlpi_name && strcmp(info->dlpi_name, "linux-vdso.so.1") == 0;
}

static int first_definer_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct first_definer *f = ctx;
	struct ht_dynsyms syms;
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	(void)size;
	if (is_vdso(info))
		return 0;
	read_dynamic(info, &syms);
	if (!syms.symtab || !syms.strtab)
		return 0; /* no dynamic symbols (the vDSO may lack some): defines nothing */
	if (!syms.gnu_hash) {
		f->found = -1;
		return 1;
	}
	if (!ht_dynsym_lookup(&syms, f->name))
		return 0;
	snprintf(f->path, f->path_len, "%s", name);
	f->found = 1;
	return 1;
}

int ht_dynsyms_first_definer(const char *name, char *path, size_t len)
{
	struct first_definer f = { name, path, len, 0 };

	if (len)
		path[0] = '\0';
	dl_iterate_phdr(first_definer_cb, &f);
	return f.found;
}

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
 * libc lacks, or no libc found at all, keeps the binding the linker gave.
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
	libc_fns.field = p ? (__typeof__(libc_fns.field))p : field;
	HT_LIBC_FUNCS(RESOLVE)
#undef RESOLVE
	/* A failed lookup leaves a message that the program's next dlerror() would see. */
	if (missed || (ld.dlopen && !libc))
		ld.dlerror();
}

/* The GNU hash of a symbol name (the ELF gABI extension glibc uses). */
static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

void *ht_dynsym_lookup(const struct ht_dynsyms *d, const char *name)
{
	const uint32_t *ht = d->gnu_hash;
	uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2];
	const uint32_t *buckets = ht + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t h = gnu_hash(name);

	if (!nbuckets)
		return NULL;
	for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
		const ElfW(Sym) *s = (const ElfW(Sym) *)d->symtab + i;
		uint32_t ch = chain[i - symoffset];

		/* A defined function of the default version ("@@"), not a hidden compat one. */
		if ((ch | 1) == (h | 1) && strcmp(d->strtab + s->st_name, name) == 0 &&
		    s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
		    (!d->versym || !(d->versym[i] & 0x8000)))
			return (void *)(d->base + s->st_value);
		if (ch & 1)
			break;
	}
	return NULL;
}

const struct ht_libc *ht_libc(void)
{
	pthread_once(&libc_once, resolve_libc);
	return &libc_fns;
}

static int real_open(const char *path, int flags, mode_t mode)
{
	return ht_libc()->open(path, flags, mode);
}

static int real_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return ht_libc()->openat(dirfd, path, flags, mode);
}

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

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

static int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

int ht_sys_thp_disabled(void)
{
	int saved = errno, ret = ht_sys.prctl(PR_GET_THP_DISABLE, 0);

	ret = ret < 0 ? neg_errno() : ret != 0;
	errno = saved;
	return ret;
}

int ht_sys_unmap(void *addr, size_t len)
{
	return ht_sys.munmap(addr, len) == 0 ? 0 : neg_errno();
}

/*
 * Anonymous read-write memory aligned to @align.  For THP we over-allocate
 * and trim, because the kernel only hands out huge pages for 2 MiB-aligned
 * ranges; hugetlb mappings come aligned from the kernel.
 */
int ht_sys_map_anon(size_t len, size_t align, int hugetlb, void **out)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	size_t total = hugetlb ? len : len + align;
	char *p;

	if (hugetlb)
		flags = (flags & ~MAP_NORESERVE) | MAP_HUGETLB | HT_MAP_HUGE_2MB;
	p = ht_sys.mmap(NULL, total, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return neg_errno();
	if (!hugetlb) {
		uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
		size_t head = a - (uintptr_t)p, tail = total - head - len;

		/* Trimming cannot fail for valid ranges; ignore its result. */
		if (head)
			ht_sys.munmap(p, head);
		if (tail)
			ht_sys.munmap((char *)a + len, tail);
		p = (char *)a;
	}
	*out = p;
	return 0;
}

int ht_sys_advise(void *addr, size_t len, int advice)
{
	return ht_sys.madvise(addr, len, advice) == 0 ? 0 : neg_errno();
}

int ht_sys_protect(void *addr, size_t len, int prot)
{
	return ht_sys.mprotect(addr, len, prot) == 0 ? 0 : neg_errno();
}

/*
 * Moves @copy onto @target in one step: the kernel replaces the old
 * mapping under the mmap lock, so no thread ever sees a hole.
 */
int ht_sys_swap(void *copy, size_t len, void *target)
{
	void *p = ht_sys.mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, target);

	if (p == MAP_FAILED)
		return neg_errno();
	return p == target ? 0 : -EFAULT;
}

/* Maps anonymous memory exactly at @addr, failing if anything is there. */
static int map_exactly(void *addr, size_t len, int prot, int flags)
{
	void *p = ht_sys.mmap(addr, len, prot,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | flags, -1, 0);

	if (p == MAP_FAILED)
		return neg_errno();
	if (p != addr) {
		/* An old kernel took the flag as a hint. */
		ht_sys.munmap(p, len);
		return -EEXIST;
	}
	return 0;
}

/* Claims free address space at @addr, failing if anything is mapped there. */
int ht_sys_reserve_fixed(void *addr, size_t len)
{
	return map_exactly(addr, len, PROT_NONE, MAP_NORESERVE);
}

int ht_sys_unmapped(void *addr)
{
	unsigned char vec;

	return ht_sys.mincore(addr, 4096, &vec) != 0 && errno == ENOMEM;
}

int ht_sys_map_fixed_anon(void *addr, size_t len)
{
	return map_exactly(addr, len, PROT_READ | PROT_WRITE, 0);
}

int ht_sys_open(const char *path, int flags, mode_t mode)
{
	int fd = ht_sys.open(path, flags | O_CLOEXEC, mode);

	return fd >= 0 ? fd : neg_errno();
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
			return neg_errno();
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
			return n < 0 ? neg_errno() : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int ht_sys_close(int fd)
{
	return ht_sys.close(fd) == 0 ? 0 : neg_errno();
}

int ht_sys_fstat(int fd, struct stat *st)
{
	return ht_sys.fstat(fd, st) == 0 ? 0 : neg_errno();
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
			int err = neg_errno();

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

int ht_sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd = ht_sys.openat(dirfd, path, flags | O_CLOEXEC, mode);

	return fd >= 0 ? fd : neg_errno();
}

int ht_sys_mkdirat(int dirfd, const char *path, mode_t mode)
{
	return ht_sys.mkdirat(dirfd, path, mode) == 0 ? 0 : neg_errno();
}

int ht_sys_renameat(int dirfd, const char *old, const char *new_path)
{
	return ht_sys.renameat2(dirfd, old, dirfd, new_path, RENAME_NOREPLACE) == 0 ? 0 : neg_errno();
}

int ht_sys_linkat(int dirfd, const char *old, const char *new_path)
{
	return ht_sys.linkat(dirfd, old, dirfd, new_path, 0) == 0 ? 0 : neg_errno();
}

int ht_sys_unlinkat(int dirfd, const char *path)
{
	return ht_sys.unlinkat(dirfd, path, 0) == 0 ? 0 : neg_errno();
}

int ht_sys_ftruncate(int fd, off_t len)
{
	return ht_sys.ftruncate(fd, len) == 0 ? 0 : neg_errno();
}

int ht_sys_fstatfs(int fd, struct statfs *st)
{
	return ht_sys.fstatfs(fd, st) == 0 ? 0 : neg_errno();
}

int ht_sys_map_file(int fd, size_t len, int prot, int shared, void **out)
{
	/* NORESERVE: a private mapping of a hugetlbfs file would otherwise
	 * reserve a second copy of every page for copy-on-write.  POPULATE:
	 * the pages exist already; mapping them all now costs one entry per
	 * 2 MiB and saves the faults later. */
	int flags = shared ? MAP_SHARED : MAP_PRIVATE | MAP_NORESERVE | MAP_POPULATE;
	void *p = ht_sys.mmap(NULL, len, prot, flags, fd, 0);

	if (p == MAP_FAILED)
		return neg_errno();
	*out = p;
	return 0;
}

int ht_sys_map_file_aligned(int fd, size_t len, int prot, size_t align, void **out)
{
	size_t total = len + align;
	char *p = ht_sys.mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;
	size_t head, tail;

	if (p == MAP_FAILED)
		return neg_errno();
	a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	head = a - (uintptr_t)p;
	tail = total - head - len;
	/* Over our own reservation: MAP_FIXED replaces nothing of the program's. */
	if (ht_sys.mmap((void *)a, len, prot, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
		int err = neg_errno();

		ht_sys.munmap(p, total);
		return err;
	}
	if (head)
		ht_sys.munmap(p, head);
	if (tail)
		ht_sys.munmap((char *)a + len, tail);
	*out = (void *)a;
	return 0;
}

int ht_sys_private_fds(int keep_stderr)
{
	/*
	 * One call unshares the table, copying only the descriptors below the
	 * first one closed: none, or stdin to stderr (closing the copies of
	 * stdin and stdout flushes them, as any close does).
	 */
	if (ht_sys.close_range(keep_stderr ? 3 : 0, ~0U, CLOSE_RANGE_UNSHARE) < 0)
		return neg_errno();
	if (keep_stderr)
		ht_sys.close_range(0, 1, 0);
	return 0;
}

int ht_sys_can_private_fds(void)
{
	/* Descriptor ~0U never exists: this closes nothing where the call is known. */
	return ht_sys.close_range(~0U, ~0U, 0) == 0;
}

/* PAGEMAP_SCAN, from Linux 6.7's <linux/fs.h>; Debian 12's headers predate it. */
struct ht_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct ht_page_region {
	uint64_t start, end, categories;
};
#define HT_PAGEMAP_SCAN _IOWR('f', 16, struct ht_pm_scan_arg)
#define HT_PAGE_IS_HUGE (1ULL << 6)

/* Calls @each for every huge-page run of [@start, @end); -ENOTTY before Linux 6.7. */
static int scan_huge(uintptr_t start, uintptr_t end,
		     void (*each)(uint64_t lo, uint64_t hi, void *ctx), void *ctx)
{
	struct ht_page_region vec[32];
	struct ht_pm_scan_arg arg;
	int fd = ht_sys_open("/proc/self/pagemap", O_RDONLY, 0);
	int err = 0;

	if (fd < 0)
		return fd;
	while (start < end) {
		long n;

		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.start = start;
		arg.end = end;
		arg.vec = (uintptr_t)vec;
		arg.vec_len = sizeof(vec) / sizeof(vec[0]);
		arg.category_mask = HT_PAGE_IS_HUGE;
		arg.return_mask = HT_PAGE_IS_HUGE;
		n = ht_sys.ioctl(fd, HT_PAGEMAP_SCAN, &arg);
		if (n < 0) {
			err = errno == EINVAL ? -ENOTTY : neg_errno();
			break;
		}
		for (long i = 0; i < n && (size_t)i < sizeof(vec) / sizeof(vec[0]); i++)
			if (vec[i].end > vec[i].start && vec[i].start >= start && vec[i].end <= end)
				each(vec[i].start, vec[i].end, ctx);
		/* The walk stops before @end only when the vector is full. */
		if (arg.walk_end <= start || arg.walk_end >= end)
			break;
		start = arg.walk_end;
	}
	ht_sys.close(fd);
	return err;
}

static void add_bytes(uint64_t lo, uint64_t hi, void *ctx)
{
	*(uint64_t *)ctx += hi - lo;
}

int ht_sys_scan_huge(uintptr_t start, uintptr_t end, uint64_t *huge)
{
	*huge = 0;
	return scan_huge(start, end, add_bytes, huge);
}

struct chunk_marks {
	uintptr_t start;
	size_t n;
	unsigned char *huge;
};

static void mark_chunks(uint64_t lo, uint64_t hi, void *ctx)
{
	struct chunk_marks *m = ctx;
	const uint64_t sz = 2u << 20;

	/* Only whole 2 MiB pages count; a huge mapping covers them whole anyway. */
	for (uint64_t at = (lo - m->start + sz - 1) / sz * sz; at + sz <= hi - m->start; at += sz)
		if (at / sz < m->n)
			m->huge[at / sz] = 1;
}

int ht_sys_scan_huge_chunks(uintptr_t start, size_t n, unsigned char *huge)
{
	struct chunk_marks m = { start, n, huge };

	memset(huge, 0, n);
	return scan_huge(start, start + n * (2u << 20), mark_chunks, &m);
}

int ht_sys_self_huge(uintptr_t start, uintptr_t end, uint64_t *huge)
{
	char *buf;
	size_t len;
	int err = ht_sys_scan_huge(start, end, huge);

	if (err != -ENOTTY && err != -ENOENT)
		return err;
	err = ht_sys_read_file("/proc/self/smaps", &buf, &len);
	if (err < 0)
		return err;
	*huge = ht_smaps_huge_in(buf, len, start, end);
	free(buf);
	return 0;
}

uint64_t ht_sys_self_huge_in(uintptr_t start, uintptr_t end)
{
	uint64_t huge;

	return ht_sys_self_huge(start, end, &huge) == 0 ? huge : 0;
}

int ht_sys_drop_cached(int fd, uint64_t off, size_t len)
{
	int err = ht_sys.fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);

	return err > 0 ? -err : err;
}

int64_t ht_sys_read_huge(int fd, uint64_t off, size_t len)
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
		return neg_errno();
	if (st.st_size < 0 || (uint64_t)st.st_size < off + len)
		return -EINVAL;
	/* A 2 MiB-aligned address for a 2 MiB-aligned offset: huge pages can map it. */
	base = ht_sys.mmap(NULL, len + huge_page, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return neg_errno();
	at = (char *)(((uintptr_t)base + huge_page - 1) & ~(uintptr_t)(huge_page - 1));
	/*
	 * MADV_RANDOM: each touch reads its own 2 MiB folio and nothing more.
	 * Without it the fault also reads ahead, in folios the disk's
	 * read_ahead_kb sizes, into the next 2 MiB, which then never comes
	 * back huge (24 of 38 MiB with 2560 KiB of read-ahead).
	 */
	if (ht_sys.mmap(at, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off) == MAP_FAILED ||
	    ht_sys.madvise(at, len, MADV_HUGEPAGE) != 0 || ht_sys.madvise(at, len, MADV_RANDOM) != 0) {
		ret = neg_errno();
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
	ht_sys.munmap(base, len + huge_page);
	return (int64_t)huge;
}
