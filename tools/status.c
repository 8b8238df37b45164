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
#include "maps.h"
#include "ocihook.h"
#include "service.h"
#include "sys.h"

static const char status_usage[] =
	"usage: hugetext status [--json | --prometheus] [--min-code SIZE] [--records DIR]\n"
	"\n"
	"List every process with at least SIZE (default 2M) of executable code:\n"
	"its code, how much of it is on huge pages and how (thp: an anonymous copy\n"
	"on transparent huge pages; hugetlb: a copy on explicit pages; page_cache:\n"
	"the file's own 2 MiB page-cache pages; shared_cache: the shared text\n"
	"cache; tmpfs: a huge tmpfs file; folios: large folios of 64 KiB to 1 MiB,\n"
	"such as a copy made with HUGETEXT_MODE=folios, counted as root only),\n"
	"then the huge page pools, the hugetlbfs and huge tmpfs mounts and the\n"
	"THP settings.  Processes whose memory map cannot be read (other users'\n"
	"without root) are counted, with the reason.  Containers the OCI hook\n"
	"looked at (hugetext oci-hook) are listed with what they asked and got,\n"
	"and their processes' code on huge pages, shared or copied.\n"
	"\n"
	"  --json           one JSON object\n"
	"  --prometheus     node_exporter's textfile format\n"
	"  --min-code SIZE  list processes with at least SIZE of code (0: all)\n"
	"  --records DIR    the OCI hook's records (default " HTE_OCI_RECORDS ")\n"
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

/* /proc/kpageflags and the last 512-frame block read from it. */
struct folio_reader {
	int kf;          /* -1: folios are not counted */
	int have;        /* block and fl hold a block */
	uint64_t block;
	size_t n;        /* frames read: fewer at the end of memory */
	uint64_t fl[HTE_BLOCK_PAGES];
};

/* Whether the piece from frame @pfn is on a folio below a PMD page. */
static int piece_in_folio(struct folio_reader *r, uint64_t pfn)
{
	uint64_t block = pfn - pfn % HTE_BLOCK_PAGES;
	ssize_t got;

	if (!r->have || r->block != block) {
		got = ht_sys_pread_full(r->kf, r->fl, sizeof(r->fl), (off_t)(block * sizeof(uint64_t)));
		r->have = got >= 0;
		r->block = block;
		r->n = got > 0 ? (size_t)got / sizeof(uint64_t) : 0;
	}
	return r->have && hte_piece_in_folio(r->fl, r->n, r->block, pfn);
}

/* The most of one mapping's address space whose folios are counted. */
#define HTE_SCAN_MAX (1ULL << 30)

/*
 * Adds to *@bytes the 64 KiB pieces of [@start, @end) on large folios below
 * a PMD page, read 2 MiB of pagemap at a time.  Returns 0, or a negative
 * errno: -EPERM when the frames are hidden.  A short read is the end of
 * the address space (or of the process): nothing is mapped after it.
 */
static int scan_folios(int pm, struct folio_reader *r, uint64_t start, uint64_t end, uint64_t *bytes)
{
	const uint64_t piece = HTE_PIECE_PAGES * 4096ULL;
	uint64_t e[HTE_BLOCK_PAGES];
	uint64_t a = (start + piece - 1) & ~(piece - 1);

	while (a < end && end - a >= piece) {
		size_t pages = (size_t)((end - a) / piece * HTE_PIECE_PAGES);
		ssize_t got;

		if (pages > HTE_BLOCK_PAGES)
			pages = HTE_BLOCK_PAGES;
		got = ht_sys_pread_full(pm, e, pages * sizeof(e[0]), (off_t)(a / 4096 * sizeof(e[0])));
		if (got < 0)
			return (int)got;
		for (size_t k = 0; (k + 1) * HTE_PIECE_PAGES * sizeof(e[0]) <= (size_t)got; k++) {
			uint64_t pfn = hte_piece_frame(e + k * HTE_PIECE_PAGES);

			if (pfn == HTE_FRAMES_HIDDEN)
				return -EPERM;
			if (pfn && piece_in_folio(r, pfn))
				*bytes += piece;
		}
		if ((size_t)got < pages * sizeof(e[0]))
			break;
		a += pages * 4096ULL;
	}
	return 0;
}

/*
 * The code of @p copied onto folios below a PMD page, from its smaps'
 * anonymous executable mappings (a copy swapped over the code is
 * anonymous).  A file's mapping is left out: the page cache holds files
 * in large folios of its own (ext4 on 6.18 reads node's code into them),
 * which every process shares and nobody copied.  Returns -EPERM when its
 * frames are hidden (no CAP_SYS_ADMIN), else 0, @p's count left unknown
 * when a read failed.
 */
static int read_folios(struct folio_reader *r, long pid, const char *smaps, size_t len, struct hte_proc *p)
{
	struct ht_smap s;
	size_t pos = 0;
	uint64_t bytes = 0;
	char path[64];
	int pm, err = 0;

	snprintf(path, sizeof(path), "/proc/%ld/pagemap", pid);
	pm = ht_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (pm < 0)
		return 0; /* gone meanwhile, or not ours to read: not known */
	/*
	 * Any user can map terabytes of a small file executable: a mapping
	 * with no page present is skipped, and no more than HTE_SCAN_MAX of
	 * one is read (real code mappings are a few hundred MiB at most), so
	 * root's status costs some milliseconds per process, not minutes.
	 */
	while (!err && ht_smaps_next(smaps, len, &pos, &s))
		if (s.map.perms[2] == 'x' && s.map.inode == 0 && s.rss > 0)
			err = scan_folios(pm, r, s.map.start,
					  s.map.end - s.map.start > HTE_SCAN_MAX ? s.map.start + HTE_SCAN_MAX : s.map.end,
					  &bytes);
	ht_sys_close(pm);
	if (err)
		return err == -EPERM ? err : 0;
	p->huge[HTE_HOW_FOLIOS] = bytes;
	p->folios_seen = 1;
	return 0;
}

/* The inode of @pid's mount namespace, which its container's record names; 0 unknown. */
static unsigned long long mount_ns(long pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
	return stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* Whether the recorded container's process still runs: the same pid, started at the same time. */
static int record_running(const struct hte_oci_record *r)
{
	char path[64], *buf;
	size_t len;
	unsigned long long start;
	int ok;

	if (r->pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", r->pid);
	if (ht_sys_read_file(path, &buf, &len) < 0)
		return 0;
	ok = hte_stat_start_time(buf, len, &start) == 0 && start == r->pid_start;
	free(buf);
	return ok;
}

/* A record file, regular and small, into a malloc'ed buffer; 0 or -1. */
static int read_record(int fd, char **buf, size_t *len)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)HTE_OCI_RECORD_MAX)
		return -1;
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf)
		return -1;
	n = ht_sys_pread_full(fd, *buf, (size_t)st.st_size, 0);
	if (n < 0) {
		free(*buf);
		return -1;
	}
	(*buf)[n] = '\0';
	*len = (size_t)n;
	return 0;
}

int hte_status_read_records(struct hte_status *st, const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct hte_oci_record *r;
	struct dirent *e;
	DIR *d;
	unsigned n = 0;

	snprintf(st->records, sizeof(st->records), "%s", dir);
	if (dfd < 0) {
		st->records_unread = errno == EACCES || errno == EPERM;
		return 0;
	}
	d = fdopendir(dfd);
	r = malloc(sizeof(*r));
	if (!d || !r) {
		if (d)
			closedir(d);
		else
			close(dfd);
		free(r);
		return -ENOMEM;
	}
	/* The hook writes them; a few thousand at most are read (each is a container). */
	while ((e = readdir(d)) && n < 4096) {
		size_t len = strlen(e->d_name);
		char *buf;
		size_t blen;
		int fd;

		if (len < 6 || e->d_name[0] == '.' || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		n++;
		if (read_record(fd, &buf, &blen) == 0) {
			if (hte_oci_record_parse(buf, blen, r) == 0 && hte_status_add_container(st, r, record_running(r)) < 0) {
				free(buf);
				close(fd);
				closedir(d);
				free(r);
				return -ENOMEM;
			}
			free(buf);
		}
		close(fd);
	}
	closedir(d);
	free(r);
	return 0;
}

/* One process: added when its code reaches min_code; 0, or -1 out of memory. */
static int read_proc(struct hte_status *st, struct folio_reader *fr, long pid)
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
	p.mntns = mount_ns(pid);
	/* Kernel threads have no mappings at all. */
	if (p.code == 0 || p.code < st->min_code) {
		free(buf);
		return 0;
	}
	/* Frames hidden from us are hidden in every process: folios cannot be seen at all. */
	if (fr->kf >= 0 && read_folios(fr, pid, buf, len, &p) == -EPERM) {
		ht_sys_close(fr->kf);
		fr->kf = -1;
		st->folios_visible = 0;
		for (size_t i = 0; i < st->nprocs; i++)
			st->procs[i].folios_seen = 0, st->procs[i].huge[HTE_HOW_FOLIOS] = 0;
	}
	free(buf);
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

/*
 * Folios are counted when kpageflags can be read (root) and pages are
 * 4 KiB, the size whose 16 make the 64 KiB the pieces are counted by.
 */
static int open_kpageflags(void)
{
	return sysconf(_SC_PAGESIZE) == 4096 ? ht_sys_open("/proc/kpageflags", O_RDONLY | O_CLOEXEC, 0) : -1;
}

static int read_procs(struct hte_status *st)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	struct folio_reader *fr = calloc(1, sizeof(*fr));
	int err = 0;

	if (!d || !fr) {
		err = d ? -ENOMEM : -errno;
		if (d)
			closedir(d);
		free(fr);
		return err;
	}
	fr->kf = open_kpageflags();
	st->folios_visible = fr->kf >= 0;
	while (!err && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || !isdigit((unsigned char)de->d_name[0]))
			continue;
		err = read_proc(st, fr, pid) < 0 ? -ENOMEM : 0;
	}
	closedir(d);
	if (fr->kf >= 0)
		ht_sys_close(fr->kf);
	free(fr);
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
		{ "records", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct hte_status st = { .min_code = 2u << 20 };
	int c, json = 0, prom = 0, err;
	const char *records = HTE_OCI_RECORDS;

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
		case 'r': records = optarg; break;
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
	if (err == 0)
		err = hte_status_read_records(&st, records);
	hte_status_group(&st);
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
