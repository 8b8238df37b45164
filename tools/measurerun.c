/* SPDX-License-Identifier: MIT */
/*
 * One run of the measured command (measure.h): started in a process group
 * of its own, counted from its execve() (perf_event_open's
 * enable_on_exec), timed from the moment it is let go to its exit, killed
 * with its group when the time is up or measure is interrupted.
 *
 * A check run also stops it at its exit (PTRACE_O_TRACEEXIT): its memory
 * is still there, so its smaps say what of its code was on huge pages at
 * the end and its pagemap which code pages it had.  During such a run the
 * footprint's windows are sampled (footprint.h).  Timed runs are neither
 * traced nor sampled: clearing the accessed bits slows page walks.
 */
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "status.h"

#define PM_PRESENT (1ULL << 63)
#define MAX_WINDOWS 4096

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The whole of /proc/PID/FILE, NUL-terminated; NULL when it cannot be read. */
static char *read_proc(pid_t pid, const char *file, size_t *len)
{
	char path[64], *buf = NULL;
	size_t cap = 0, n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (n + 4096 + 1 > cap) {
			char *b = realloc(buf, cap ? cap * 2 : 65536);

			if (!b)
				break;
			buf = b;
			cap = cap ? cap * 2 : 65536;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[n] = 0;
	*len = n;
	return buf;
}

/* One window: the Referenced bytes of the code since the last, then cleared. */
static void sample_window(pid_t pid, uint64_t *refs, size_t *n)
{
	size_t len;
	char *smaps = read_proc(pid, "smaps", &len);
	uint64_t code, ref;
	char path[64];
	int fd;

	if (!smaps)
		return;
	hte_smaps_code(smaps, len, NULL, 0, &code, &ref);
	free(smaps);
	if (*n < MAX_WINDOWS)
		refs[(*n)++] = ref;
	snprintf(path, sizeof(path), "/proc/%ld/clear_refs", (long)pid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			*n = MAX_WINDOWS + 1; /* cannot clear: the windows would grow, not slide */
		close(fd);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The code pages present in @pid's page tables: 4 KiB pages and the 2 MiB pages they lie in. */
static void present_pages(pid_t pid, const struct hte_range *r, size_t nr, struct hte_footprint *fp)
{
	char path[64];
	uint64_t *vpn = NULL, buf[512];
	size_t n = 0, cap = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/pagemap", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t i = 0; i < nr; i++) {
		for (uint64_t p = r[i].start >> 12; p < r[i].end >> 12;) {
			size_t want = (size_t)((r[i].end >> 12) - p);
			ssize_t got;

			want = want > 512 ? 512 : want;
			got = pread(fd, buf, want * 8, (off_t)(p * 8));
			if (got <= 0)
				break;
			for (size_t k = 0; k < (size_t)got / 8; k++) {
				if (!(buf[k] & PM_PRESENT))
					continue;
				if (n == cap) {
					uint64_t *v = realloc(vpn, (cap ? cap * 2 : 4096) * sizeof(*v));

					if (!v)
						goto out;
					vpn = v;
					cap = cap ? cap * 2 : 4096;
				}
				vpn[n++] = p + k;
			}
			p += (uint64_t)got / 8;
		}
	}
	qsort(vpn, n, sizeof(*vpn), cmp_u64);
	fp->pages_4k = n;
	fp->pages_2m = hte_pages_2m(vpn, n);
	fp->pages_known = 1;
out:
	free(vpn);
	close(fd);
}

/* At the exit stop: what of the code is on huge pages, and which pages it had. */
static void at_exit(pid_t pid, struct hte_run_out *out, int footprint)
{
	struct hte_status st;
	struct hte_proc p;
	size_t len, nr;
	char *smaps = read_proc(pid, "smaps", &len);
	struct hte_range *r;
	uint64_t code, ref;

	if (!smaps)
		return;
	memset(&st, 0, sizeof(st));
	memset(&p, 0, sizeof(p));
	hte_status_smaps(smaps, len, &st, &p);
	out->huge.known = 1;
	out->huge.code = p.code;
	out->huge.copy = p.huge[HTE_HOW_THP];
	out->huge.page_cache = p.huge[HTE_HOW_PAGE_CACHE];
	out->huge.shared = p.huge[HTE_HOW_SHARED_CACHE] + p.huge[HTE_HOW_TMPFS];
	out->huge.hugetlb = p.huge[HTE_HOW_HUGETLB];
	nr = hte_smaps_code(smaps, len, NULL, 0, &code, &ref);
	out->fp.code_bytes = code;
	if (footprint && nr && (r = calloc(nr, sizeof(*r)))) {
		hte_smaps_code(smaps, len, r, nr, &code, &ref);
		present_pages(pid, r, nr, &out->fp);
		free(r);
	}
	free(smaps);
}

/* The child: its own group, quiet descriptors, our signal mask undone, then the command. */
static void child(const struct hte_run_opts *o, int go, int err)
{
	sigset_t none;
	char c;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), e;

	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	if (o->stderr_path) {
		int fd = open(o->stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd >= 0)
			dup2(fd, 2);
	}
	/* Wait until the parent has attached its counters (and ptrace). */
	if (read(go, &c, 1) != 1)
		_exit(127);
	execve(o->path ? o->path : o->argv[0], o->argv, o->envp);
	e = errno;
	if (write(err, &e, sizeof(e)) != sizeof(e))
		_exit(127);
	_exit(127);
}

static void kill_group(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

/* Handles one wait status of a traced child; returns 1 when it has exited. */
static int traced_status(pid_t pid, int st, struct hte_run_out *out, double *t_end, int footprint,
			 uint64_t *refs, size_t *nrefs)
{
	if (!WIFSTOPPED(st))
		return WIFEXITED(st) || WIFSIGNALED(st);
	if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
		*t_end = now_s();
		out->traced = 1;
		if (footprint)
			sample_window(pid, refs, nrefs);
		at_exit(pid, out, footprint);
		ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (st >> 16 == PTRACE_EVENT_STOP) {
		ptrace(PTRACE_LISTEN, pid, 0, 0); /* a group stop: it stays stopped as untraced */
	} else {
		ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st)); /* pass its signal on */
	}
	return 0;
}

static int wait_run(const struct hte_run_opts *o, pid_t pid, double t0, struct hte_run_out *out,
		    uint64_t *refs, size_t *nrefs)
{
	double t_end = 0, next_sample = t0 + o->sample_ms / 1000.0;
	sigset_t chld;
	struct rusage ru;
	int footprint = o->trace_exit && o->sample_ms;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		double now = now_s(), wait = 0.5;
		struct timespec ts;
		int st;
		pid_t w;

		while ((w = wait4(pid, &st, WNOHANG | __WALL, &ru)) == pid) {
			if (o->trace_exit ? traced_status(pid, st, out, &t_end, footprint, refs, nrefs)
					  : WIFEXITED(st) || WIFSIGNALED(st)) {
				out->wall = (t_end ? t_end : now_s()) - t0;
				out->cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
					   ru.ru_stime.tv_usec / 1e6;
				out->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				kill(-pid, SIGKILL); /* what it left running in its group */
				return 0;
			}
		}
		if (w < 0 && errno != EINTR)
			return -1;
		if (o->stop && *o->stop && !out->interrupted) {
			out->interrupted = 1;
			kill_group(pid);
		}
		if (o->timeout > 0 && now - t0 > o->timeout && !out->timed_out) {
			out->timed_out = 1;
			kill_group(pid);
		}
		if (footprint && now >= next_sample && !out->timed_out) {
			sample_window(pid, refs, nrefs);
			next_sample = now + o->sample_ms / 1000.0;
		}
		if (footprint)
			wait = next_sample - now;
		if (o->timeout > 0 && !out->timed_out && t0 + o->timeout - now < wait)
			wait = t0 + o->timeout - now;
		wait = wait < 0.0005 ? 0.0005 : wait > 0.5 ? 0.5 : wait;
		ts.tv_sec = (time_t)wait;
		ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
		sigtimedwait(&chld, NULL, &ts);
	}
}

int hte_run_once(const struct hte_run_opts *o, struct hte_run_out *out)
{
	int go[2], err[2], e = 0;
	uint64_t *refs = NULL;
	size_t nrefs = 0;
	double t0;
	pid_t pid;
	int rc;

	memset(out, 0, sizeof(*out));
	out->status = -1;
	for (size_t i = 0; i < o->nev; i++)
		out->counts[i] = -1;
	if (o->trace_exit && o->sample_ms && !(refs = calloc(MAX_WINDOWS + 1, sizeof(*refs))))
		return -1;
	if (pipe2(go, O_CLOEXEC) < 0) {
		free(refs);
		return -1;
	}
	if (pipe2(err, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		free(refs);
		return -1;
	}
	pid = fork();
	if (pid == 0)
		child(o, go[0], err[1]);
	close(go[0]);
	close(err[1]);
	if (pid < 0) {
		close(go[1]);
		close(err[0]);
		free(refs);
		return -1;
	}
	setpgid(pid, pid);
	if (o->trace_exit && ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL) != 0)
		out->traced = -1; /* not allowed here (Yama): no exit stop */
	int fds[HTE_PMU_MAX_EVENTS];

	hte_pmu_open(o->ev, o->nev, pid, o->user_only, fds, out->ev_errno);
	t0 = now_s();
	if (write(go[1], "g", 1) != 1)
		kill_group(pid);
	close(go[1]);
	/* EOF: it exec'ed (the pipe is close-on-exec); an int: execve's errno. */
	if (read(err[0], &e, sizeof(e)) == sizeof(e))
		out->exec_errno = e;
	close(err[0]);
	if (out->traced < 0)
		out->traced = 0;
	rc = wait_run(o, pid, t0, out, refs, &nrefs);
	hte_pmu_close(fds, o->nev, out->counts);
	if (refs && nrefs <= MAX_WINDOWS)
		hte_footprint_windows(&out->fp, refs, nrefs, o->sample_ms);
	free(refs);
	return rc;
}

int hte_small_page_cache(const char *path)
{
	char buf[4096];
	off_t at = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	/* Dirty pages are not dropped: a file just written must reach the disk first. */
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	while ((n = pread(fd, buf, sizeof(buf), at)) > 0)
		at += n;
	close(fd);
	return n < 0 ? -1 : 0;
}
