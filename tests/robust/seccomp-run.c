/*
 * seccomp-run [-e NAME=VALUE]... RULE[:ERRNO][,RULE[:ERRNO]...] PROGRAM [ARG...]
 *
 * Installs a seccomp filter that makes the matching system calls fail with
 * ERRNO (a number, default EPERM), sets the -e variables (LD_PRELOAD, say,
 * so that the preload acts in PROGRAM and not in this launcher), then
 * execs PROGRAM.  Raw system calls cannot dodge the filter, unlike the
 * library's own fault-injection table.
 *
 * Rules:
 *   mremap          every mremap
 *   madv-hugepage   madvise(..., MADV_HUGEPAGE)
 *   madv-collapse   madvise(..., MADV_COLLAPSE)
 *   map-hugetlb     mmap with MAP_HUGETLB
 *   mprotect-exec   mprotect adding PROT_EXEC: what an execmem policy such
 *                   as SELinux's refuses (it answers EACCES)
 *   mmap-anon-exec  anonymous mmap with PROT_EXEC (execmem again)
 *   memfd           memfd_create
 *   clone, clone3   new threads and processes (fork() is clone too)
 *
 * ERRNO may also be "kill": the call kills the process (SIGSYS), as the
 * default action of a systemd SystemCallFilter= does.
 *
 * Why the filter is installed here, before exec, and matches so narrowly:
 * it then covers the whole life of the program, but it must not stop the
 * program itself from starting.  The dynamic loader maps libraries from
 * their files (file-backed PROT_EXEC mmap, never anonymous) and only ever
 * mprotects RELRO to PROT_READ, and glibc's start-up makes no mremap,
 * madvise or MAP_HUGETLB call; so none of these rules hits a normal
 * program before the preload's constructor runs.  The tests check this
 * every time by running the program under the same filter without the
 * preload first: it must print the same output.  (Had a rule hit the
 * loader, the way out would be a tiny extra preload, listed before
 * hugetext's, whose constructor installs the filter from inside.)
 *
 * x86-64 and arm64 (both little-endian, with the same argument order for
 * these calls; only the audit architecture differs); elsewhere it exits
 * 77.  Written with classic BPF and prctl(), so it needs no libseccomp.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define MAX_INSNS 256

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FILTER_ARCH AUDIT_ARCH_AARCH64
#endif

struct cond {
	int arg;         /* argument index */
	unsigned mask;   /* JSET mask, or 0 for JEQ */
	unsigned value;  /* JEQ value */
};

struct rule {
	const char *name;
	int nr;
	struct cond conds[2];
	int nconds;
	int default_errno;
};

static const struct rule rules[] = {
	{ "mremap", SYS_mremap, { { 0 } }, 0, EPERM },
	{ "madv-hugepage", SYS_madvise, { { 2, 0, MADV_HUGEPAGE } }, 1, EPERM },
	{ "madv-collapse", SYS_madvise, { { 2, 0, MADV_COLLAPSE } }, 1, EPERM },
	{ "map-hugetlb", SYS_mmap, { { 3, MAP_HUGETLB, 0 } }, 1, EPERM },
	{ "mprotect-exec", SYS_mprotect, { { 2, PROT_EXEC, 0 } }, 1, EACCES },
	{ "mmap-anon-exec", SYS_mmap, { { 2, PROT_EXEC, 0 }, { 3, MAP_ANONYMOUS, 0 } }, 2, EACCES },
	{ "memfd", SYS_memfd_create, { { 0 } }, 0, EPERM },
	{ "clone", SYS_clone, { { 0 } }, 0, EPERM },
	{ "clone3", 435, { { 0 } }, 0, EPERM },
};

#define ACTION_KILL (-1)

static struct sock_filter prog[MAX_INSNS];
static int len;

static void emit(struct sock_filter f)
{
	if (len >= MAX_INSNS) {
		fprintf(stderr, "seccomp-run: filter too long\n");
		exit(2);
	}
	prog[len++] = f;
}

/* Low 32 bits of an argument (x86-64 and arm64 are little-endian). */
static unsigned arg_lo(int i)
{
	return (unsigned)(offsetof(struct seccomp_data, args) + 8 * (unsigned)i);
}

/*
 * if (nr == r->nr && all conds) return ERRNO(e);
 * Each failed test jumps past the end of the block.
 */
static void emit_rule(const struct rule *r, int e)
{
	int size = 2 + 1;

	for (int i = 0; i < r->nconds; i++)
		size += 2;
	int start = len;
	int end = start + size; /* index after the block */

	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)r->nr, 0,
					  (unsigned char)(end - (len + 1))));
	for (int i = 0; i < r->nconds; i++) {
		const struct cond *c = &r->conds[i];

		emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg_lo(c->arg)));
		if (c->mask)
			emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, c->mask, 0,
							  (unsigned char)(end - (len + 1))));
		else
			emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c->value, 0,
							  (unsigned char)(end - (len + 1))));
	}
	if (e == ACTION_KILL)
		emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	else
		emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						  SECCOMP_RET_ERRNO | ((unsigned)e & SECCOMP_RET_DATA)));
}

static const struct rule *find_rule(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (strlen(rules[i].name) == n && strncmp(rules[i].name, name, n) == 0)
			return &rules[i];
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: seccomp-run [-e NAME=VALUE]... RULE[:ERRNO][,...] PROGRAM [ARG...]\nrules:");
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		fprintf(stderr, " %s", rules[i].name);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
#ifndef FILTER_ARCH
	fprintf(stderr, "seccomp-run: x86-64 and arm64 only\n");
	return 77;
#else
	int first = 1;

	while (first + 1 < argc && strcmp(argv[first], "-e") == 0) {
		if (!strchr(argv[first + 1], '=') || putenv(argv[first + 1]) != 0)
			usage();
		first += 2;
	}
	if (argc - first < 2)
		usage();

	/* The architecture check: a foreign ABI gets no rule, so refuse it. */
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FILTER_ARCH, 1, 0));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));

	for (char *p = argv[first]; *p;) {
		size_t n = strcspn(p, ",");
		char *colon = memchr(p, ':', n);
		size_t name_len = colon ? (size_t)(colon - p) : n;
		const struct rule *r = find_rule(p, name_len);
		int e;

		if (!r) {
			fprintf(stderr, "seccomp-run: unknown rule '%.*s'\n", (int)name_len, p);
			usage();
		}
		if (colon && strncmp(colon + 1, "kill", 4) == 0)
			e = ACTION_KILL;
		else
			e = colon ? atoi(colon + 1) : r->default_errno;
		emit_rule(r, e);
		p += n + (p[n] == ',');
	}
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));

	struct sock_fprog fprog = { .len = (unsigned short)len, .filter = prog };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("seccomp-run: PR_SET_NO_NEW_PRIVS");
		return 77;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
		perror("seccomp-run: PR_SET_SECCOMP");
		return 77;
	}
	execvp(argv[first + 1], argv + first + 1);
	perror("seccomp-run: exec");
	return 127;
#endif
}
