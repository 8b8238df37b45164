/* SPDX-License-Identifier: MIT */
/* Library search from a caller's point of view (see dlsearch.h). */
#include "dlsearch.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ht_expand_dir(const char *dir, size_t len, const char *origin, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		const char *add = NULL;
		size_t skip = 1, alen = 1;

		if (dir[i] == '$') {
			if (len - i >= 7 && memcmp(dir + i, "$ORIGIN", 7) == 0)
				skip = 7;
			else if (len - i >= 9 && memcmp(dir + i, "${ORIGIN}", 9) == 0)
				skip = 9;
			else
				return -EINVAL;
			add = origin;
			alen = strlen(origin);
		} else {
			add = dir + i;
		}
		if (o + alen + 1 > outlen)
			return -ENAMETOOLONG;
		memcpy(out + o, add, alen);
		o += alen;
		i += skip;
	}
	out[o] = '\0';
	return o ? 0 : -EINVAL;
}

int ht_search_list(const char *list, const char *origin, const char *file,
		   int (*exists)(const char *path), char *out, size_t outlen)
{
	const char *p = list;

	while (p && *p) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		size_t used;

		if (len && ht_expand_dir(p, len, origin, out, outlen) == 0) {
			used = strlen(out);
			if (used + 1 + strlen(file) + 1 <= outlen) {
				out[used] = '/';
				strcpy(out + used + 1, file);
				if (exists(out))
					return 1;
			}
		}
		p = colon ? colon + 1 : NULL;
	}
	return 0;
}

/* The machine this library was built for: the loader takes no other. */
#if defined(__x86_64__)
#define HT_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HT_MACHINE EM_AARCH64
#elif defined(__i386__)
#define HT_MACHINE EM_386
#else
#define HT_MACHINE EM_NONE
#endif

/*
 * Would the loader take this file?  It skips files of another class or
 * machine (a 32-bit directory first in a RUNPATH) and goes on searching,
 * so we must too.
 */
static int file_exists(const char *path)
{
	ElfW(Ehdr) eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, &eh, sizeof(eh), 0);
	close(fd);
	return n == (ssize_t)sizeof(eh) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	       eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
	       eh.e_ident[EI_DATA] == ELFDATA2LSB &&
	       (HT_MACHINE == EM_NONE || eh.e_machine == HT_MACHINE) &&
	       eh.e_type == ET_DYN;
}

/* The caller's DT_RPATH and DT_RUNPATH strings, from its dynamic section. */
static void caller_paths(const struct link_map *lm, const char **rpath, const char **runpath)
{
	uintptr_t strtab = 0;
	long rp = -1, rup = -1;

	*rpath = *runpath = NULL;
	for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = d->d_un.d_ptr;
		else if (d->d_tag == DT_RPATH)
			rp = (long)d->d_un.d_val;
		else if (d->d_tag == DT_RUNPATH)
			rup = (long)d->d_un.d_val;
	}
	if (!strtab)
		return;
	/* glibc relocates these entries in place on x86-64; be safe anyway. */
	if (strtab < lm->l_addr)
		strtab += lm->l_addr;
	if (rp >= 0)
		*rpath = (const char *)strtab + rp;
	if (rup >= 0)
		*runpath = (const char *)strtab + rup;
}

/* The directory holding the caller's file, for $ORIGIN. */
static void caller_origin(const struct link_map *lm, char *buf, size_t len)
{
	const char *name = lm->l_name;
	ssize_t n;
	char *slash;

	buf[0] = '\0';
	if (name && name[0] == '/') {
		strncpy(buf, name, len - 1);
		buf[len - 1] = '\0';
	} else {
		n = readlink("/proc/self/exe", buf, len - 1);
		buf[n > 0 ? n : 0] = '\0';
	}
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

/* Loaded already, by name or soname?  Then the bare name finds it from anywhere. */
static int already_loaded(const char *file)
{
	void *h = dlopen(file, RTLD_LAZY | RTLD_NOLOAD);

	if (!h)
		return 0;
	dlclose(h);
	return 1;
}

const char *ht_dlopen_path(const char *file, const void *caller, char *buf, size_t len)
{
	struct link_map *lm = NULL;
	const char *rpath, *runpath, *env;
	char origin[4096];
	Dl_info info;

	if (!file || strchr(file, '/') ||
	    !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return file;
	caller_paths(lm, &rpath, &runpath);
	if ((!rpath && !runpath) || already_loaded(file))
		return file;
	caller_origin(lm, origin, sizeof(origin));
	/* RUNPATH comes after LD_LIBRARY_PATH, which the loader searches for anyone. */
	env = runpath ? secure_getenv("LD_LIBRARY_PATH") : NULL;
	if (env && ht_search_list(env, origin, file, file_exists, buf, len))
		return file;
	if (ht_search_list(runpath ? runpath : rpath, origin, file, file_exists, buf, len))
		return buf;
	return file;
}
