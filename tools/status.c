/* SPDX-License-Identifier: MIT */
/*
 * hugetext status: every process of the machine with code worth moving,
 * how much of that code sits on huge pages and by which path, and the
 * machine's pools, huge mounts and THP settings.  This half reads /proc
 * and /sys; statusfmt.c turns what it read into the outputs.
 */
#include "tool.h"
#include "status.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "hugetext.h"
#include "service.h"
#include "sys.h"

static const char status_usage[] =
	"usage: hugetext status [--json | --prometheus] [--min-code SIZE]\n"
	"\n"
	"List every process with at least SIZE (default 2M) of executable code:\n"
	"its code, how much of it is on huge pages and how (thp: an anonymous copy\n"
	"on transparent huge pages; hugetlb: a copy on explicit pages; page_cache:\n"
	"the file's own 2 MiB page-cache pages; shared_cache: the shared text\n"
	"cache; tmpfs: a huge tmpfs file), then the huge page pools, the hugetlbfs\n"
	"and huge tmpfs mounts and the THP settings.  Processes whose memory map\n"
	"cannot be read (other users' without root) are counted, with the reason.\n"
	"\n"
	"  --json           one JSON object\n"
	"  --prometheus     node_exporter's textfile format\n"
	"  --min-code SIZE  list processes with at least SIZE of code (0: all)\n"
	"  -h, --help       show this help\n";

/* The executable's path, or [comm] when it cannot be read. */
static void program_name(long pid, char *out, size_t len)
{
	char path[64], *buf;
	size_t n;
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	r = readlink(path, out, len - 1);
	if (r > 0) {
		out[r] = '\0';
		return;
	}
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if (ht_sys_read_file(path, &buf, &n) == 0) {
		while (n && buf[n - 1] == '\n')
			n--;
		snprintf(out, len, "[%.*s]", (int)n, buf);
		free(buf);
		return;
	}
	snprintf(out, len, "?");
}

/* Kernel threads have no code; their smaps are closed to other users all the same. */
static int kernel_thread(long pid)
{
	char path[64], *buf;
	size_t len;
	int k;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (ht_sys_read_file(path, &buf, &len) < 0)
		return 0;
	k = hte_stat_is_kthread(buf, len);
	free(buf);
	return k;
}

/* One process: added when its code reaches min_code; 0, or -1 out of memory. */
static int read_proc(struct hte_status *st, long pid)
{
	struct hte_proc p = { .pid = pid };
	char path[64], *buf;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "/proc/%ld/smaps", pid);
	err = ht_sys_read_file(path, &buf, &len);
	if (err == -ENOENT || err == -ESRCH)
		return 0; /* gone meanwhile */
	if (err < 0)
		return kernel_thread(pid) ? 0 : hte_status_add_unread(st, pid, -err);
	hte_status_smaps(buf, len, st, &p);
	free(buf);
	/* Kernel threads have no mappings at all. */
	if (p.code == 0 || p.code < st->min_code)
		return 0;
	program_name(pid, p.program, sizeof(p.program));
	return hte_status_add_proc(st, &p);
}

static int by_pid(const void *a, const void *b)
{
	long x = ((const struct hte_proc *)a)->pid, y = ((const struct hte_proc *)b)->pid;

	return x < y ? -1 : x > y;
}

static int by_unread_pid(const void *a, const void *b)
{
	long x = ((const struct hte_unread *)a)->pid, y = ((const struct hte_unread *)b)->pid;

	return x < y ? -1 : x > y;
}

static int read_procs(struct hte_status *st)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || !isdigit((unsigned char)de->d_name[0]))
			continue;
		err = read_proc(st, pid) < 0 ? -ENOMEM : 0;
	}
	closedir(d);
	if (st->nprocs)
		qsort(st->procs, st->nprocs, sizeof(*st->procs), by_pid);
	if (st->nunread)
		qsort(st->unread, st->nunread, sizeof(*st->unread), by_unread_pid);
	return err;
}

static void read_pools(struct hte_status *st)
{
	uint64_t kb[HTE_MAX_SIZES];
	char dir[256];

	st->npools = hte_pool_sizes(kb, HTE_MAX_SIZES);
	for (size_t i = 0; i < st->npools; i++) {
		hte_pool_dir(kb[i], dir, sizeof(dir));
		st->pools[i].kb = kb[i];
		st->pools[i].total = hte_read_count(dir, "nr_hugepages");
		st->pools[i].free = hte_read_count(dir, "free_hugepages");
		if (st->pools[i].total < 0)
			st->pools[i].total = -1;
		if (st->pools[i].free < 0)
			st->pools[i].free = -1;
	}
}

struct mounts_read {
	struct hte_status *st;
	uint64_t def;
};

static int mount_line(const char *line, size_t len, void *arg)
{
	struct mounts_read *r = arg;
	struct hte_huge_mount m;

	if (hte_status_mount_line(line, len, r->def, &m) && hte_status_add_mount(r->st, &m) < 0)
		return -ENOMEM;
	return 0;
}

static int read_mounts(struct hte_status *st)
{
	struct mounts_read r = { st, hte_default_kb() };

	return hte_each_mount_line(mount_line, &r);
}

static void read_thp(const char *file, char *out, size_t len)
{
	char path[128], *buf;
	size_t n;

	out[0] = '\0';
	snprintf(path, sizeof(path), HTE_SYS_THP "/%s", file);
	if (ht_sys_read_file(path, &buf, &n) < 0)
		return;
	if (hte_thp_choice(buf, out, len) < 0)
		out[0] = '\0';
	free(buf);
}

/* The text service's entries: shared/ under the cache's mount @fd. */
static void count_shared(int fd, struct hte_text_cache *c)
{
	int sfd = openat(fd, HT_SERVICE_SHARED, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
	struct dirent *e;

	if (!d) {
		if (sfd >= 0)
			close(sfd);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;
		size_t len = strlen(e->d_name);

		if (len > 5 && strcmp(e->d_name + len - 5, ".text") == 0 && !strstr(e->d_name, ".tmp.") &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
			c->shared_entries++;
			c->shared_bytes += (uint64_t)st.st_size;
		}
	}
	closedir(d);
}

/* Counts the entries of each hugetext-UID directory under the open @fd. */
static void count_entries(int fd, struct hte_text_cache *c)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int ufd;
		DIR *u;
		struct dirent *e;

		if (strcmp(de->d_name, HT_SERVICE_SHARED) == 0) {
			count_shared(dirfd(d), c);
			continue;
		}
		if (strncmp(de->d_name, "hugetext-", 9) != 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		c->users++;
		ufd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		u = ufd >= 0 ? fdopendir(ufd) : NULL;
		if (!u) {
			if (ufd >= 0)
				close(ufd);
			continue;
		}
		while ((e = readdir(u))) {
			size_t len = strlen(e->d_name);

			if (len > 5 && strcmp(e->d_name + len - 5, ".text") == 0 && !strstr(e->d_name, ".tmp.") &&
			    fstatat(dirfd(u), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
				c->entries++;
				c->entry_bytes += (uint64_t)st.st_size;
			}
		}
		closedir(u);
	}
	closedir(d);
}

/* The set-up's tmpfs cache, when one of the huge mounts found is it. */
static void read_text_cache(struct hte_status *st)
{
	struct hte_text_cache *c = &st->text_cache;
	struct statfs sfs;
	int fd = -1;

	for (size_t i = 0; i < st->nmounts; i++)
		if (strcmp(st->mounts[i].path, HT_TEXT_CACHE_DIR) == 0 && strcmp(st->mounts[i].type, "tmpfs") == 0)
			c->mounted = 1;
	if (!c->mounted)
		return;
	fd = open(HT_TEXT_CACHE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstatfs(fd, &sfs) == 0) {
		c->size = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize;
		c->used = (uint64_t)(sfs.f_blocks - sfs.f_bfree) * (uint64_t)sfs.f_bsize;
	}
	count_entries(fd, c);
}

/* The text service's state file; a file that is no JSON object is not shown. */
static void read_service(struct hte_service *s)
{
	FILE *f = fopen(HTE_SERVE_STATE, "re");
	size_t n;
	long pid;

	if (!f)
		return;
	n = fread(s->raw, 1, sizeof(s->raw) - 1, f);
	fclose(f);
	s->raw[n] = '\0';
	while (n && (s->raw[n - 1] == '\n' || s->raw[n - 1] == ' '))
		s->raw[--n] = '\0';
	if (n == 0 || s->raw[0] != '{' || s->raw[n - 1] != '}' || n == sizeof(s->raw) - 1)
		return;
	s->present = 1;
	pid = hte_json_number(s->raw, "pid");
	s->running = pid > 0 && kill((pid_t)pid, 0) == 0;
}

static int gather(struct hte_status *st)
{
	const char *share = getenv("HUGETEXT_SHARE_DIR");

	if (share && *share)
		snprintf(st->share_dir, sizeof(st->share_dir), "%s", share);
	read_pools(st);
	read_thp("enabled", st->thp_enabled, sizeof(st->thp_enabled));
	read_thp("defrag", st->thp_defrag, sizeof(st->thp_defrag));
	read_thp("shmem_enabled", st->thp_shmem, sizeof(st->thp_shmem));
	/* The mounts first: they tell which mapped files are the shared cache. */
	if (read_mounts(st) == -ENOMEM)
		return -ENOMEM;
	read_text_cache(st);
	read_service(&st->service);
	return read_procs(st);
}

int hte_cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "min-code", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct hte_status st = { .min_code = 2u << 20 };
	int c, json = 0, prom = 0, err;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'p': prom = 1; break;
		case 'm':
			if (hte_parse_size(optarg, &st.min_code) < 0) {
				hte_error("status", "--min-code '%s': not a size such as 2M", optarg);
				return HTE_EXIT_USAGE;
			}
			break;
		case 'h': fputs(status_usage, stdout); return HTE_EXIT_OK;
		default: fputs(status_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (optind < argc || (json && prom)) {
		if (optind < argc)
			hte_error("status", "unexpected argument '%s'", argv[optind]);
		else
			hte_error("status", "--json and --prometheus exclude each other");
		fputs(status_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	err = gather(&st);
	if (err < 0) {
		hte_error("status", "cannot read the processes: %s", strerror(-err));
		hte_status_free(&st);
		return HTE_EXIT_FAIL;
	}
	if (json)
		hte_status_json(stdout, &st);
	else if (prom)
		hte_status_prometheus(stdout, &st);
	else
		hte_status_text(stdout, &st);
	hte_status_free(&st);
	return HTE_EXIT_OK;
}
