/* SPDX-License-Identifier: MIT */
/*
 * The preload's dlopen(): glibc's own dlopen(), entered so that glibc sees
 * the program's caller, and the new objects moved before it returns.
 *
 * glibc decides from its caller where a name is searched ($ORIGIN, the
 * caller's DT_RPATH/DT_RUNPATH) and, for a caller in another namespace,
 * where the object goes.  It takes the caller from its own return address
 * and looks up the object that contains it.  A hook that simply calls
 * glibc makes the preload the caller; resolving names in the hook instead
 * copies ld.so's rules (and their bugs).  So glibc is entered with a
 * return address inside the caller's object that still gives control back
 * to us, a return site of that object's code (lib/arch/<cpu>/dlcall.S):
 * on x86-64 a byte 0xC3 (ret), on arm64 an epilogue that reloads the link
 * register from the stack and returns.  glibc then does everything itself,
 * for every caller, and only this call decides when the move happens.
 *
 * Rejected: rtld-audit (la_activity) needs LD_AUDIT, which a preload and
 * /etc/ld.so.preload cannot set; a tail call to glibc (exact) with the new
 * objects found later through dl_iterate_phdr's dlpi_adds cannot move them
 * before dlopen() returns.  Both remain the fallback here: where the trick
 * is not possible (no return site, a shadow stack, a caller in another
 * namespace) the call is a tail jump to glibc, exact but without the move.
 * Processors without a dlcall.S (lib/arch/generic) export no dlopen().
 *
 * Calls that need no move also tail-jump: HUGETEXT_MODE=off, dlopen(NULL),
 * RTLD_NOLOAD, our own dlopen() of libelf (made under ht_lock), and calls
 * nested in an outer one (a constructor's dlopen()), whose objects the
 * outer call moves after glibc returns.
 */
#include "arch.h"
#include "background.h"
#include "internal.h"
#include "objects.h"
#include "plan.h"
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if HT_ARCH_DLCALL

#define HIDDEN __attribute__((visibility("hidden")))

/* Used by dlcall.S. */
HIDDEN void *(*ht_real_dlopen)(const char *, int);
HIDDEN uintptr_t ht_dlopen_route(const char *file, int mode, const void *caller,
				 unsigned long ssp);
HIDDEN void *ht_dlopen_hook(const char *file, int mode, const void *ret_insn);
HIDDEN void *ht_call_as(void *(*fn)(const char *, int), const char *file, int mode,
			const void *ret_insn);

/* Set while this thread is inside glibc's dlopen() for an outer call. */
static __thread int in_hook;

/*
 * How far into an executable segment a return site is looked for.  The
 * first bytes (_init, the PLT, the first functions) nearly always hold one;
 * the bound keeps a strange object from costing a scan of all its code.
 */
#define RET_SCAN_MAX (1u << 20)

/* Where glibc's dlopen() cannot be found: fail as a dlopen() can. */
static void *no_dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}

static void resolve_real(void)
{
	void *(*fn)(const char *, int);

	if (__atomic_load_n(&ht_real_dlopen, __ATOMIC_ACQUIRE))
		return;
	fn = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	__atomic_store_n(&ht_real_dlopen, fn ? fn : no_dlopen, __ATOMIC_RELEASE);
}

/* The first return site (arch.h) in a readable and executable segment of @info, or 0. */
static uintptr_t return_site_in(const struct dl_phdr_info *info)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p, *site;
		size_t n;

		if (ph->p_type != PT_LOAD || (ph->p_flags & (PF_R | PF_X)) != (PF_R | PF_X))
			continue;
		p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		n = ph->p_filesz < ph->p_memsz ? ph->p_filesz : ph->p_memsz;
		if (n > RET_SCAN_MAX)
			n = RET_SCAN_MAX;
		site = ht_arch_return_site(p, n);
		if (site)
			return (uintptr_t)site;
	}
	return 0;
}

/* As glibc tells a caller's object: @pc lies in one of its PT_LOAD segments. */
static int holds(const struct dl_phdr_info *info, uintptr_t pc)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && pc - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			return 1;
	}
	return 0;
}

struct ret_search {
	uintptr_t pc;  /* the caller; 0: take the first object (the program) */
	int found;
	uintptr_t ret; /* a return site in the object found, or 0 */
};

static int ret_search_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct ret_search *s = data;

	(void)size;
	if (s->pc && !holds(info, s->pc))
		return 0;
	s->found = 1;
	s->ret = return_site_in(info);
	return 1;
}

/*
 * A return site in the object glibc will take as @caller's, or 0 when there
 * is none to use.  dl_iterate_phdr() lists our namespace only.  A caller in
 * no object at all (generated code) is taken by glibc as the program; one
 * in an object of another namespace (dladdr() sees all) gets 0.
 */
static uintptr_t return_site_for(const void *caller)
{
	struct ret_search s = { .pc = (uintptr_t)caller };
	Dl_info info;

	dl_iterate_phdr(ret_search_cb, &s);
	if (s.found)
		return s.ret;
	if (dladdr(caller, &info))
		return 0;
	s.pc = 0;
	dl_iterate_phdr(ret_search_cb, &s);
	return s.ret;
}

/* Called by dlopen() in dlcall.S: 0 for a tail jump to glibc, else a return site. */
uintptr_t ht_dlopen_route(const char *file, int mode, const void *caller, unsigned long ssp)
{
	int saved = errno;
	uintptr_t ret = 0;

	resolve_real();
	/* Under a shadow stack, glibc's return to the return site would be fatal. */
	if (file && !(mode & RTLD_NOLOAD) && !in_hook && !ht_lock_held && !ssp && ht_preload_ready())
		ret = return_site_for(caller);
	errno = saved;
	return ret;
}

/*
 * The objects loaded before the call, as ht_remap_new() tells objects
 * apart (load bias and name), and glibc's count of loads.  Lighter than
 * ht_objects_list(), and the names are ours: another thread may dlclose()
 * an object meanwhile.
 */
struct snap_entry {
	uintptr_t base;
	char *name;
};

struct snapshot {
	struct snap_entry *e;
	size_t n, cap;
	unsigned long long adds;
	int failed;
};

static int snap_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct snapshot *s = data;
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		s->adds = info->dlpi_adds;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct snap_entry *e = realloc(s->e, cap * sizeof(*e));

		if (!e)
			return s->failed = 1;
		s->e = e;
		s->cap = cap;
	}
	s->e[s->n].base = info->dlpi_addr;
	s->e[s->n].name = strdup(name);
	if (!s->e[s->n].name)
		return s->failed = 1;
	s->n++;
	return 0;
}

static void snap_free(struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->e[i].name);
	free(s->e);
}

/* Takes @s; false when it could not (nothing will be moved then). */
static int snap_take(struct snapshot *s)
{
	dl_iterate_phdr(snap_cb, s);
	if (s->failed || !s->n) {
		snap_free(s);
		return 0;
	}
	return 1;
}

static int adds_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

/* True when glibc loaded nothing since @s (a dlopen() of a loaded library). */
static int nothing_new(const struct snapshot *s)
{
	unsigned long long adds = s->adds + 1;

	dl_iterate_phdr(adds_cb, &adds);
	return adds == s->adds;
}

static int in_snapshot(const struct snapshot *s, const struct ht_object *o)
{
	for (size_t k = 0; k < s->n; k++)
		if (s->e[k].base == o->base && strcmp(s->e[k].name, o->name) == 0)
			return 1;
	return 0;
}

/*
 * Could one huge page of @o pay (plan.h)?  Only for an object with the
 * policy's minimum of code (policy.h), and where an executable
 * segment holds at least what one page needs.  It spares the library's run
 * (which reads /proc/self/maps: hundreds of us) for every small library a
 * broad HUGETEXT_MATCH lets through.
 */
static int may_pay(const struct ht_object *o)
{
	if (!ht_object_big_enough(&ht_preload_opt, o))
		return 0;
	for (int i = 0; i < o->nseg; i++)
		if ((o->segs[i].flags & PF_X) &&
		    ht_page_pays(o->segs[i].end - o->segs[i].start, (size_t)2 << 20))
			return 1;
	return 0;
}

/* Could the dlopen() have brought in something to move?  Cheap, no /proc. */
static int any_candidate(const struct ht_object *objs, size_t n, const struct snapshot *s)
{
	for (size_t i = 0; i < n; i++)
		if (!in_snapshot(s, &objs[i]) && may_pay(&objs[i]) &&
		    ht_policy_take(&ht_preload_opt, &objs[i], ht_preload_matches(objs[i].name)) !=
			    HT_TAKE_NONE)
			return 1;
	return 0;
}

/* Moves, lock held, what is not in @s. */
static void remap_since(const struct snapshot *s)
{
	struct ht_object *known = calloc(s->n, sizeof(*known));

	if (!known)
		return;
	for (size_t i = 0; i < s->n; i++) {
		known[i].base = s->e[i].base;
		known[i].name = s->e[i].name;
	}
	ht_lock_acquire();
	ht_remap_new(&ht_preload_opt, NULL, known, s->n, NULL, 0, NULL);
	ht_lock_release();
	free(known);
	/* A copy the run deferred waits in the background thread until it pays. */
	ht_background_kick(0);
}

/* Moves what came in since @s; true when the library ran. */
static int remap_new(const struct snapshot *s)
{
	struct ht_object *after;
	size_t nafter;
	int ran = 0;

	if (nothing_new(s) || ht_objects_list(&after, &nafter) < 0)
		return 0;
	if (any_candidate(after, nafter, s)) {
		remap_since(s);
		ran = 1;
	}
	free(after);
	return ran;
}

/*
 * The outermost dlopen() of this thread that may load something to move.
 * What glibc's dlopen() said, its result, errno and dlerror(), is what the
 * caller sees; errno is also as the caller left it when glibc starts.
 */
void *ht_dlopen_hook(const char *file, int mode, const void *ret_insn)
{
	struct snapshot before = { 0 };
	int saved = errno, have = snap_take(&before);
	void *handle;

	in_hook = 1;
	errno = saved;
	handle = ht_call_as(ht_real_dlopen, file, mode, ret_insn);
	saved = errno;
	/*
	 * After a successful dlopen() dlerror() has nothing to say; the move
	 * may dlopen() libelf (perf maps), and dlerror() drops what that left.
	 */
	if (handle && have && remap_new(&before))
		(void)dlerror();
	if (have)
		snap_free(&before);
	in_hook = 0;
	errno = saved;
	return handle;
}

#endif
