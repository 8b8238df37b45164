/* SPDX-License-Identifier: MIT */
/*
 * A hostile tenant of the text service, and an honest client beside it
 * (tests/test-service-containers.cpp's flood case; bench/service-flood.sh).
 *
 *   service-flood flood SOCKET KIND UID PROCS SECONDS [FILE OFF LEN MAPPED]
 *       PROCS processes of UID hammer SOCKET for SECONDS: KIND "silent"
 *       (connect, send nothing, keep the connection), "garbage" (connect,
 *       send 7 bytes), "offers" (connect, offer FILE's span: a valid offer
 *       of a root file the process maps, thousands a second), "files:DIR"
 *       (offers of root's regular files of at least 4 MiB in DIR, each a
 *       new job for the service's worker), "none" (nothing: the
 *       baseline).  Prints one
 *       JSON line: its attempts, connections, errors.
 *   service-flood probe SOCKET TRIES INTERVAL_MS FILE OFF LEN MAPPED
 *       TRIES offers as the library makes them (non-blocking connect and
 *       send), each then waiting (2 s at most) for the service to close
 *       the connection, which it does once it has read the offer: prints
 *       how many connected, were sent and were taken, and how long the
 *       taking took.
 *   service-flood bench SOCKET SERVICE_PID SERVED_DIR KIND UID PROCS SECONDS TRIES INTERVAL_MS FILE OFF LEN MAPPED FRESH
 *       Both at once, and the service's CPU time and memory over the flood
 *       (from /proc/SERVICE_PID), and, as the flood ends, how long the
 *       service took to fill the entry of FRESH (a file never offered,
 *       same span) in SERVED_DIR for an offer from root.
 *
 * Exit status: 0, or 2 on bad arguments, 1 when something could not be
 * set up.  No timing is asserted here: the test checks what was served.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* lib/service.h's message, spelt out: this program stands for any client. */
struct offer {
	char magic[8];
	uint64_t file_off, len, mapped;
};

struct counts {
	unsigned long attempts, connected, sent, eacces, eagain, other;
};

static struct sockaddr_un addr = { .sun_family = AF_UNIX };
/* Where the flood connects: addr, or (bench's FLOOD_SOCKET) a container's own socket. */
static struct sockaddr_un flood_addr = { .sun_family = AF_UNIX };

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int send_offer(int s, int fd, uint64_t off, uint64_t len, uint64_t mapped)
{
	struct offer m = { .file_off = off, .len = len, .mapped = mapped };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;

	memcpy(m.magic, "HTOFFER1", 8);
	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(s, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(m) ? 0 : -1;
}

/* A file opened and mapped executable, as the process that offers it runs it. */
static int open_running(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
		close(fd);
		return -1;
	}
	return fd;
}

static void drop_to(uid_t uid)
{
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) {
		perror("service-flood: cannot become the flooding user");
		_exit(1);
	}
}

static void count_error(struct counts *c, int err)
{
	if (err == EACCES)
		c->eacces++;
	else if (err == EAGAIN)
		c->eagain++;
	else
		c->other++;
}

struct flood {
	const char *kind;
	uid_t uid;
	int procs;
	double seconds;
	const char *file;
	uint64_t off, len, mapped;
};

/* The files of at least 4 MiB under @dir, opened, for "files": up to @max. */
static int open_big_files(const char *dir, int *fds, int max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) && n < max) {
		struct stat st;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (4 << 20) && st.st_uid == 0)
			fds[n++] = fd;
		else
			close(fd);
	}
	if (d)
		closedir(d);
	return n;
}

/* One flooding process: its counts in @c, until @until. */
static void flood_one(const struct flood *f, struct counts *c, double until)
{
	static int held[900], files[512];
	int nheld = 0, nfiles = 0, fd = -1, k = 0;

	if (!strcmp(f->kind, "offers")) {
		fd = open_running(f->file);
	} else if (!strncmp(f->kind, "files:", 6)) {
		nfiles = open_big_files(f->kind + 6, files, 512);
		if (nfiles == 0) {
			fprintf(stderr, "service-flood: no file of 4 MiB or more under %s\n", f->kind + 6);
			_exit(1);
		}
	}
	if (!strcmp(f->kind, "offers") && fd < 0) {
		fprintf(stderr, "service-flood: %s: %s\n", f->file, strerror(errno));
		_exit(1);
	}
	drop_to(f->uid);
	/* "none": the baseline, the service alone with the honest client. */
	while (!strcmp(f->kind, "none") && now_s() < until)
		usleep(10000);
	while (now_s() < until) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (s < 0) {
			/* Out of descriptors: let one held go. */
			if (nheld) {
				close(held[0]);
				memmove(held, held + 1, (size_t)--nheld * sizeof(int));
			}
			continue;
		}
		c->attempts++;
		if (connect(s, (struct sockaddr *)&flood_addr, sizeof(flood_addr)) < 0) {
			count_error(c, errno);
			close(s);
			continue;
		}
		c->connected++;
		if (!strcmp(f->kind, "silent")) {
			if (nheld == 900) {
				close(held[0]);
				memmove(held, held + 1, (size_t)--nheld * sizeof(int));
			}
			held[nheld++] = s;
			continue;
		}
		if (!strcmp(f->kind, "garbage"))
			c->sent += send(s, "garbage", 7, MSG_DONTWAIT | MSG_NOSIGNAL) == 7;
		else if (!strcmp(f->kind, "offers"))
			c->sent += send_offer(s, fd, f->off, f->len, f->mapped) == 0;
		else
			c->sent += send_offer(s, files[k++ % nfiles], 0, 2 << 20, 2 << 20) == 0;
		close(s);
	}
	_exit(0);
}

/* Starts the flood; its processes' pids into @pids; their counts in shared memory @c. */
static int flood_start(const struct flood *f, struct counts *c, pid_t *pids)
{
	double until = now_s() + f->seconds;

	for (int i = 0; i < f->procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return -1;
		if (pids[i] == 0)
			flood_one(f, &c[i], until);
	}
	return 0;
}

static void flood_wait(const struct flood *f, pid_t *pids)
{
	for (int i = 0; i < f->procs; i++)
		waitpid(pids[i], NULL, 0);
}

static void flood_print(FILE *o, const struct flood *f, const struct counts *c)
{
	struct counts t = { 0 };

	for (int i = 0; i < f->procs; i++) {
		t.attempts += c[i].attempts;
		t.connected += c[i].connected;
		t.sent += c[i].sent;
		t.eacces += c[i].eacces;
		t.eagain += c[i].eagain;
		t.other += c[i].other;
	}
	fprintf(o,
		"{\"kind\":\"%s\",\"uid\":%u,\"procs\":%d,\"seconds\":%.1f,\"attempts\":%lu,\"connected\":%lu,"
		"\"sent\":%lu,\"eacces\":%lu,\"eagain\":%lu,\"other_errors\":%lu}",
		f->kind, (unsigned)f->uid, f->procs, f->seconds, t.attempts, t.connected, t.sent, t.eacces, t.eagain,
		t.other);
}

struct probe {
	int tries, interval_ms;
	const char *file;
	uint64_t off, len, mapped;
};

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Errors by their words, counted; when the first few came (s since the start). */
struct errs {
	char what[8][64];
	int n[8], kinds;
	double at[8], t0;
	int nat;
};

static void err_add(struct errs *e, const char *op, int err)
{
	char w[64];

	if (e->nat < 8)
		e->at[e->nat++] = now_s() - e->t0;

	snprintf(w, sizeof(w), "%s: %s", op, strerror(err));
	for (int i = 0; i < e->kinds; i++)
		if (!strcmp(e->what[i], w)) {
			e->n[i]++;
			return;
		}
	if (e->kinds < 8) {
		snprintf(e->what[e->kinds], sizeof(e->what[0]), "%s", w);
		e->n[e->kinds++] = 1;
	}
}

/* The honest client: prints its JSON line to @o.  Returns: 0, or -1 when the file cannot be used. */
static int probe_run(const struct probe *p, FILE *o)
{
	double taken_ms[1000];
	int fd = open_running(p->file), connected = 0, sent = 0, taken = 0;
	struct errs e = { .t0 = now_s() };

	if (fd < 0 || p->tries > 1000) {
		fprintf(stderr, "service-flood: %s: %s\n", p->file, strerror(errno));
		return -1;
	}
	for (int i = 0; i < p->tries; i++) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		double t0 = now_s();
		struct pollfd pf = { s, POLLIN, 0 };

		if (connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
			err_add(&e, "connect", errno);
		} else if (connected++, send_offer(s, fd, p->off, p->len, p->mapped) < 0) {
			err_add(&e, "send", errno);
		} else {
			sent++;
			/* The service closes its end once it has read the offer: end of file here. */
			if (poll(&pf, 1, 2000) == 1) {
				char b;
				ssize_t n = recv(s, &b, 1, MSG_DONTWAIT);

				if (n == 0)
					taken_ms[taken++] = (now_s() - t0) * 1000;
				else
					err_add(&e, "closed unread", n < 0 ? errno : EPROTO);
			} else {
				err_add(&e, "not taken in 2 s", ETIMEDOUT);
			}
		}
		close(s);
		usleep((useconds_t)p->interval_ms * 1000);
	}
	qsort(taken_ms, (size_t)taken, sizeof(double), by_double);
	fprintf(o, "{\"tries\":%d,\"connected\":%d,\"sent\":%d,\"taken\":%d,\"taken_ms_median\":%.3f,"
		   "\"taken_ms_max\":%.3f,\"errors\":{",
		p->tries, connected, sent, taken, taken ? taken_ms[taken / 2] : -1.0,
		taken ? taken_ms[taken - 1] : -1.0);
	for (int i = 0; i < e.kinds; i++)
		fprintf(o, "%s\"%s\":%d", i ? "," : "", e.what[i], e.n[i]);
	fprintf(o, "},\"errors_at_s\":[");
	for (int i = 0; i < e.nat; i++)
		fprintf(o, "%s%.3f", i ? "," : "", e.at[i]);
	fprintf(o, "]}");
	close(fd);
	return 0;
}

/* utime + stime of @pid, seconds; its resident memory, KiB. */
static double cpu_of(pid_t pid, long *rss_kib)
{
	char path[64], buf[4096];
	unsigned long ut = 0, st = 0;
	long rss = 0;
	FILE *f;
	char *p;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %*u %*u %ld",
			 &ut, &st, &rss) != 3)
		return -1;
	*rss_kib = rss * (sysconf(_SC_PAGESIZE) / 1024);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Whether SERVED_DIR has an entry of @fresh's inode (its name carries it in hex). */
static int served(const char *dir, ino_t ino)
{
	char want[32];
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	snprintf(want, sizeof(want), "-%llx-", (unsigned long long)ino);
	while (d && (e = readdir(d)) && !found) {
		size_t n = strlen(e->d_name);

		found = strstr(e->d_name, want) && n > 5 && !strcmp(e->d_name + n - 5, ".text");
	}
	if (d)
		closedir(d);
	return found;
}

/* An offer of @fresh from a root process that exits at once; the ms until its entry is there (-1: 30 s passed). */
static double time_to_serve(const char *dir, const char *fresh, uint64_t off, uint64_t len, uint64_t mapped)
{
	struct stat st;
	double t0 = now_s();
	pid_t pid;

	if (stat(fresh, &st) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open_running(fresh), s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		_exit(fd >= 0 && connect(s, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
				      send_offer(s, fd, off, len, mapped) == 0
			      ? 0
			      : 1);
	}
	waitpid(pid, NULL, 0);
	while (now_s() - t0 < 30) {
		if (served(dir, st.st_ino))
			return (now_s() - t0) * 1000;
		usleep(2000);
	}
	return -1;
}

static int usage(void)
{
	fputs("usage: service-flood flood SOCKET KIND UID PROCS SECONDS [FILE OFF LEN MAPPED]\n"
	      "       service-flood probe SOCKET TRIES INTERVAL_MS FILE OFF LEN MAPPED\n"
	      "       service-flood bench SOCKET SERVICE_PID SERVED_DIR KIND UID PROCS SECONDS TRIES INTERVAL_MS\n"
	      "                           FILE OFF LEN MAPPED FRESH [FLOOD_SOCKET]\n",
	      stderr);
	return 2;
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
	struct counts *c;
	pid_t pids[64];

	if (argc < 3 || strlen(argv[2]) >= sizeof(addr.sun_path))
		return usage();
	strcpy(addr.sun_path, argv[2]);
	flood_addr = addr;
	signal(SIGPIPE, SIG_IGN);
	c = mmap(NULL, sizeof(*c) * 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return 1;
	if (!strcmp(argv[1], "flood") && (argc == 7 || argc == 11)) {
		struct flood f = { argv[3], (uid_t)num(argv[4]), (int)num(argv[5]), atof(argv[6]),
				   argc == 11 ? argv[7] : NULL, argc == 11 ? num(argv[8]) : 0,
				   argc == 11 ? num(argv[9]) : 0, argc == 11 ? num(argv[10]) : 0 };

		if (f.procs < 1 || f.procs > 64 || (!strcmp(f.kind, "offers") && !f.file))
			return usage();
		if (flood_start(&f, c, pids) < 0)
			return 1;
		flood_wait(&f, pids);
		flood_print(stdout, &f, c);
		putchar('\n');
		return 0;
	}
	if (!strcmp(argv[1], "probe") && argc == 9) {
		struct probe p = { (int)num(argv[3]), (int)num(argv[4]), argv[5], num(argv[6]), num(argv[7]), num(argv[8]) };
		int r = probe_run(&p, stdout);

		putchar('\n');
		return r < 0 ? 1 : 0;
	}
	if (!strcmp(argv[1], "bench") && (argc == 16 || argc == 17)) {
		pid_t svc = (pid_t)num(argv[3]);
		struct flood f = { argv[5], (uid_t)num(argv[6]), (int)num(argv[7]), atof(argv[8]),
				   argv[11], num(argv[12]), num(argv[13]), num(argv[14]) };
		struct probe p = { (int)num(argv[9]), (int)num(argv[10]), argv[11], f.off, f.len, f.mapped };
		long rss0 = 0, rss1 = 0;
		double cpu0 = cpu_of(svc, &rss0), t0 = now_s(), cpu1, t1, ms;

		if (cpu0 < 0 || f.procs < 1 || f.procs > 64 || (argc == 17 && strlen(argv[16]) >= sizeof(addr.sun_path)))
			return usage();
		if (argc == 17)
			strcpy(flood_addr.sun_path, argv[16]);
		if (flood_start(&f, c, pids) < 0)
			return 1;
		/* The flood has a moment to fill what it can first. */
		usleep(300 * 1000);
		printf("{\"probe\":");
		if (probe_run(&p, stdout) < 0)
			return 1;
		ms = time_to_serve(argv[4], argv[15], p.off, p.len, p.mapped);
		flood_wait(&f, pids);
		t1 = now_s();
		cpu1 = cpu_of(svc, &rss1);
		printf(",\"served_ms\":%.1f,\"flood\":", ms);
		flood_print(stdout, &f, c);
		printf(",\"service_cpu_s\":%.2f,\"wall_s\":%.2f,\"service_rss_kib\":%ld}\n", cpu1 - cpu0, t1 - t0, rss1);
		return 0;
	}
	return usage();
}
