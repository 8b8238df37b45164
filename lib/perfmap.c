/* SPDX-License-Identifier: MIT */
/* perf map files for moved code (see perfmap.h). */
#include "perfmap.h"
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The few libelf calls we need, resolved at run time. */
struct elfapi {
	void *handle;
	unsigned (*version)(unsigned);
	Elf *(*begin)(int, Elf_Cmd, Elf *);
	int (*end)(Elf *);
	Elf_Scn *(*nextscn)(Elf *, Elf_Scn *);
	GElf_Shdr *(*getshdr)(Elf_Scn *, GElf_Shdr *);
	Elf_Data *(*getdata)(Elf_Scn *, Elf_Data *);
	GElf_Sym *(*getsym)(Elf_Data *, int, GElf_Sym *);
	char *(*strptr)(Elf *, size_t, size_t);
};

static int load_elfapi(struct elfapi *e)
{
	e->handle = dlopen("libelf.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!e->handle)
		return -ENOSYS;
	e->version = (unsigned (*)(unsigned))dlsym(e->handle, "elf_version");
	e->begin = (Elf *(*)(int, Elf_Cmd, Elf *))dlsym(e->handle, "elf_begin");
	e->end = (int (*)(Elf *))dlsym(e->handle, "elf_end");
	e->nextscn = (Elf_Scn *(*)(Elf *, Elf_Scn *))dlsym(e->handle, "elf_nextscn");
	e->getshdr = (GElf_Shdr *(*)(Elf_Scn *, GElf_Shdr *))dlsym(e->handle, "gelf_getshdr");
	e->getdata = (Elf_Data *(*)(Elf_Scn *, Elf_Data *))dlsym(e->handle, "elf_getdata");
	e->getsym = (GElf_Sym *(*)(Elf_Data *, int, GElf_Sym *))dlsym(e->handle, "gelf_getsym");
	e->strptr = (char *(*)(Elf *, size_t, size_t))dlsym(e->handle, "elf_strptr");
	if (!e->version || !e->begin || !e->end || !e->nextscn || !e->getshdr ||
	    !e->getdata || !e->getsym || !e->strptr || e->version(EV_CURRENT) == EV_NONE) {
		dlclose(e->handle);
		return -ENOSYS;
	}
	return 0;
}

int ht_perf_map_line(char *buf, size_t len, uintptr_t addr, uint64_t size, const char *name)
{
	int n = snprintf(buf, len, "%lx %llx %s\n", (unsigned long)addr, (unsigned long long)size, name);

	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

/* The symbol table to use: .symtab, or .dynsym when the file is stripped. */
static Elf_Scn *symbol_section(const struct elfapi *e, Elf *elf, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh, dynsh;

	while ((scn = e->nextscn(elf, scn))) {
		if (!e->getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*out = sh;
			return scn;
		}
		if (sh.sh_type == SHT_DYNSYM && !dyn) {
			dyn = scn;
			dynsh = sh;
		}
	}
	if (dyn)
		*out = dynsh;
	return dyn;
}

struct sink {
	int fd;
	char buf[16384];
	size_t used;
	int lines;
};

static void sink_put(struct sink *s, uintptr_t addr, uint64_t size, const char *name)
{
	char line[1024];
	int n = ht_perf_map_line(line, sizeof(line), addr, size, name);

	if (n < 0)
		return;
	if (s->used + (size_t)n > sizeof(s->buf)) {
		ht_sys_write_full(s->fd, s->buf, s->used);
		s->used = 0;
	}
	memcpy(s->buf + s->used, line, (size_t)n);
	s->used += (size_t)n;
	s->lines++;
}

static void write_symbols(const struct elfapi *e, Elf *elf, uintptr_t bias,
			  uintptr_t start, uintptr_t end, struct sink *s)
{
	GElf_Shdr sh;
	Elf_Scn *scn = symbol_section(e, elf, &sh);
	Elf_Data *data = scn ? e->getdata(scn, NULL) : NULL;
	size_t count;

	if (!data || sh.sh_entsize == 0)
		return;
	count = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < count && i < (size_t)INT32_MAX; i++) {
		GElf_Sym sym;
		const char *name;
		uintptr_t addr;

		if (!e->getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_size == 0 || sym.st_shndx == SHN_UNDEF)
			continue;
		addr = bias + (uintptr_t)sym.st_value;
		if (addr >= end || addr + sym.st_size <= start)
			continue;
		name = e->strptr(elf, sh.sh_link, sym.st_name);
		if (name && *name)
			sink_put(s, addr, sym.st_size, name);
	}
}

/*
 * /tmp/perf-PID.map, where perf looks: any user can make that name first,
 * for the PIDs to come.  Not through a link (NOFOLLOW), not a FIFO that
 * would hold us (NONBLOCK, then the type), and not a file of another user's,
 * who would read our code's addresses, or forge its symbols.
 */
static int open_map(const char *map)
{
	int fd = ht_sys_open(map, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
	struct stat st;

	if (fd < 0)
		return fd;
	if (ht_sys_fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != ht_geteuid()) {
		ht_sys_close(fd);
		return -EPERM;
	}
	return fd;
}

int ht_perf_map_write(const char *path, uintptr_t bias, uintptr_t start, uintptr_t end)
{
	struct elfapi e;
	struct sink *s;
	char map[64];
	Elf *elf;
	int fd, err = load_elfapi(&e);

	if (err < 0)
		return err;
	fd = ht_sys_open(path, O_RDONLY, 0);
	s = malloc(sizeof(*s));
	elf = fd >= 0 && s ? e.begin(fd, ELF_C_READ, NULL) : NULL;
	snprintf(map, sizeof(map), "/tmp/perf-%ld.map", (long)ht_getpid());
	err = elf ? open_map(map) : -ENOEXEC;
	if (err >= 0) {
		s->fd = err;
		s->used = 0;
		s->lines = 0;
		write_symbols(&e, elf, bias, start, end, s);
		ht_sys_write_full(s->fd, s->buf, s->used);
		ht_sys_close(s->fd);
		err = s->lines;
	}
	if (elf)
		e.end(elf);
	if (fd >= 0)
		ht_sys_close(fd);
	free(s);
	dlclose(e.handle);
	return err;
}
