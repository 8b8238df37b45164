/* SPDX-License-Identifier: MIT */
/*
 * hugetext doctor: reads the machine (sysfs, /proc, the policy file, the
 * text service's state, the calibration) and hands each piece to its
 * check (doctorchk.c, doctorobj.c), then prints one screen or one JSON
 * object (doctorfmt.c).  As root it reads others' files: nothing under
 * /run/hugetext is believed unless root's and writable by root alone, and
 * no symbolic link is followed there.
 */
#include "tool.h"
#include "doctor.h"
#include "poolcmd.h"
#include "run.h"
#include "setup.h"

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
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "calibrate.h"
#include "conf.h"
#include "cpuinfo.h"
#include "folios.h"
#include "hugetext.h"
#include "maps.h"
#include "service.h"
#include "sys.h"

/* The doctor itself could not look (no /proc, no memory): neither verdict holds. */
#define DOCTOR_EXIT_CANNOT 3
#define CALIB_SECONDS 3.0
#define MAX_MOUNTS 512
/* The service's state file: its logs and clients take tens of KiB; more is not its. */
#define STATE_MAX (1 << 20)

static const char doctor_usage[] =
	"usage: hugetext doctor [--json] [--calibrate] [--config FILE]\n"
	"\n"
	"One screen on what, on this machine, stands in the way of huge pages for\n"
	"code: THP's settings, the page cache's 2 MiB folios per file system,\n"
	"PAGEMAP_SCAN, the iTLB multihit erratum and whether this is a guest, the\n"
	"calibration's verdict (cached per boot in " HTE_CALIB_PATH "),\n"
	"the preload, the policy file, the text service, the shared cache, the\n"
	"hugetlb pool, and the biggest code running now with what it has on huge\n"
	"pages.  Every problem says what to do.\n"
	"\n"
	"  --json         one JSON object for scripts\n"
	"  --calibrate    run the calibration again (a few seconds)\n"
	"  --config FILE  the policy file (default " HT_CONF_PATH ")\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 nothing blocks hugetext here, 1 something does (a BLOCK\n"
	"line), 2 usage, 3 the doctor could not look (no /proc, out of memory).\n";

struct doctor {
	struct hte_doctor d;
	struct hte_status st;      /* the huge mounts (status's parser): which files are the shared cache */
	struct hte_doc_env env;
	struct hte_calib calib;
	struct hte_cpu cpu;
	int have_cpu;
	int kmaj, kmin;
	long pool_free;
	const char *config;
	struct ht_conf *conf;
	int conf_rc;
	char conf_err[512];
	int run_fd;                /* /run/hugetext, opened safely; -1 */
	const char *run_refusal;   /* why it was not opened, or NULL */
	char run_why[96];          /* run_refusal when /run itself was refused */
	struct hte_doc_preload preload;
	int force_calib;
};

/* A sysfs or proc file's text into @buf, trailing newlines cut; NULL when it cannot be read. */
static const char *read_small(const char *path, char *buf, size_t cap)
{
	ssize_t n = ht_sys_read_file_into(path, buf, cap);

	if (n < 0)
		return NULL;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return buf;
}

/* --- /run/hugetext, never through a link --- */

/* Opens @name under @dirfd as a directory root may trust; sets *why when it may not. */
static int open_trusted_dir(int dirfd, const char *name, const char **why)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return -1;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (*why = hte_doc_dir_distrust(&st)))
			return -1;
		*why = "cannot be opened";
		return -1;
	}
	if (fstat(fd, &st) < 0 || (*why = hte_doc_dir_distrust(&st))) {
		if (!*why)
			*why = "cannot be read";
		close(fd);
		return -1;
	}
	return fd;
}

static void open_run_dir(struct doctor *g)
{
	int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), run;

	g->run_fd = -1;
	if (root < 0)
		return;
	run = open_trusted_dir(root, "run", &g->run_refusal);
	close(root);
	if (run < 0) {
		/* Said of /run itself, with its reason: "/run/hugetext is <why>" would blame the wrong one. */
		if (g->run_refusal) {
			snprintf(g->run_why, sizeof(g->run_why), "under a /run that is %s", g->run_refusal);
			g->run_refusal = g->run_why;
		}
		return;
	}
	g->run_fd = open_trusted_dir(run, "hugetext", &g->run_refusal);
	close(run);
}

/* The state file: 1 parsed, 0 absent, -1 garbage, -2 not trusted (why in *why). */
static int read_state(int run_fd, struct hte_doc_service *s, const char **why)
{
	char *buf;
	struct stat st;
	ssize_t n;
	int fd, rc;

	fd = openat(run_fd, "service.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		*why = errno == ELOOP ? "a symbolic link" : "unreadable";
		return -2;
	}
	if (fstat(fd, &st) < 0 || (*why = hte_doc_file_distrust(&st)) || st.st_size > STATE_MAX) {
		if (!*why)
			*why = "larger than 1 MiB";
		close(fd);
		return -2;
	}
	buf = malloc(STATE_MAX + 1);
	n = buf ? ht_sys_pread_full(fd, buf, STATE_MAX + 1, 0) : -1;
	close(fd);
	rc = n > 0 && n <= STATE_MAX && hte_doc_service_parse(buf, (size_t)n, s) == 0 ? 1 : -1;
	free(buf);
	return rc;
}

static int serve_runs(long pid)
{
	char path[64], buf[256];
	ssize_t n;

	if (pid <= 0 || kill((pid_t)pid, 0) < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	n = ht_sys_read_file_into(path, buf, sizeof(buf));
	return n > 0 && hte_doc_is_serve(buf, (size_t)n);
}

static void check_service(struct doctor *g)
{
	struct hte_doc_service_in in = { 0 };
	struct stat st;

	in.policy_off = g->conf_rc == 0 && (g->conf->set & HT_CONF_SERVICE) && !g->conf->service;
	in.dir_refusal = g->run_refusal;
	if (g->run_fd >= 0) {
		in.state = read_state(g->run_fd, &in.s, &in.state_refusal);
		in.running = in.state == 1 && serve_runs(in.s.pid);
		in.socket = fstatat(g->run_fd, "service.sock", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode);
	}
	g->env.service = !in.policy_off && (in.running || (in.state == 0 && in.socket));
	hte_doc_service_check(&g->d, &in);
}

/* --- the shared cache --- */

static void read_cache(struct doctor *g, struct hte_doc_cache *cp)
{
	struct hte_doc_cache c = { 0 };
	struct statfs sfs;
	struct stat st;
	int fd;

	c.mounted = hte_mount_find(HT_TEXT_CACHE_DIR, c.type, sizeof(c.type), c.opts, sizeof(c.opts)) == 1;
	if (c.mounted && g->run_fd >= 0) {
		fd = openat(g->run_fd, "text", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0)
			c.trusted = st.st_uid == 0 && (!(st.st_mode & S_IWOTH) || (st.st_mode & S_ISVTX));
		if (fd >= 0 && fstatfs(fd, &sfs) == 0) {
			c.size = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize;
			c.used = (uint64_t)(sfs.f_blocks - sfs.f_bfree) * (uint64_t)sfs.f_bsize;
		}
		if (fd >= 0)
			close(fd);
	}
	g->env.cache_mounted = c.mounted && c.trusted && strcmp(c.type, "tmpfs") == 0 &&
			       (strstr(c.opts, "huge=within_size") || strstr(c.opts, "huge=always"));
	*cp = c;
}

/* --- THP, pools, the kernel --- */

static void read_pools(struct doctor *g, struct hte_pool_count *p, size_t *n)
{
	uint64_t kb[HTE_MAX_SIZES];
	char dir[256];

	*n = hte_pool_sizes(kb, HTE_MAX_SIZES);
	g->pool_free = 0;
	for (size_t i = 0; i < *n; i++) {
		hte_pool_dir(kb[i], dir, sizeof(dir));
		p[i].kb = kb[i];
		p[i].total = hte_read_count(dir, "nr_hugepages");
		p[i].free = hte_read_count(dir, "free_hugepages");
		if (kb[i] == 2048 && p[i].free > 0)
			g->pool_free = p[i].free;
	}
}

static void check_thp(struct doctor *g)
{
	char en[128], df[128], sh[128], pmd[128], kd[16], ks[32];
	struct hte_doc_thp t = {
		.enabled = read_small(HTE_SYS_THP "/enabled", en, sizeof(en)),
		.defrag = read_small(HTE_SYS_THP "/defrag", df, sizeof(df)),
		.shmem = read_small(HTE_SYS_THP "/shmem_enabled", sh, sizeof(sh)),
		.pmd_enabled = read_small(HTE_SYS_THP "/hugepages-2048kB/enabled", pmd, sizeof(pmd)),
		.khugepaged_defrag = read_small(HTE_SYS_THP "/khugepaged/defrag", kd, sizeof(kd)),
		.khugepaged_sleep_ms = read_small(HTE_SYS_THP "/khugepaged/scan_sleep_millisecs", ks, sizeof(ks)),
		.pool_free = g->pool_free,
	};

	g->env.thp_ok = t.enabled && (strstr(en, "[always]") || strstr(en, "[madvise]")) &&
			(!t.pmd_enabled || ht_thp_size_setting(pmd, en, 1));
	hte_doc_thp_check(&g->d, &t);
}

static void check_pagemap(struct doctor *g)
{
	static char probe[4096] __attribute__((aligned(4096)));
	uint64_t huge;

	probe[0] = 1;
	hte_doc_pagemap_check(&g->d, ht_sys_scan_huge((uintptr_t)probe, (uintptr_t)probe + sizeof(probe), &huge));
}

static void read_kernel(struct doctor *g)
{
	struct utsname u;

	g->kmaj = g->kmin = 0;
	if (uname(&u) == 0) {
		snprintf(g->d.kernel, sizeof(g->d.kernel), "Linux %s %s", u.release, u.machine);
		hte_doc_kernel_version(u.release, &g->kmaj, &g->kmin);
	} else {
		snprintf(g->d.kernel, sizeof(g->d.kernel), "Linux");
	}
}

/* --- the processor --- */

static void check_cpu(struct doctor *g, int calib_rc, const char *calib_from)
{
	char hv[64], dv[256], dp[256], line[256], nx[32];
	struct hte_doc_guest q = { .cpuid_hv = -1 };
	FILE *f;

	g->have_cpu = hte_cpu_read(&g->cpu) == 0;
	if (g->have_cpu && (f = fmemopen(g->d.cpu, sizeof(g->d.cpu) - 1, "w"))) {
		hte_cpu_line(f, &g->cpu);
		fclose(f);
		q.cpuid_hv = g->cpu.hypervisor;
		q.hv_id = g->cpu.hypervisor_id;
	}
	q.sys_hypervisor = read_small("/sys/hypervisor/type", hv, sizeof(hv));
	q.dmi_vendor = read_small("/sys/class/dmi/id/sys_vendor", dv, sizeof(dv));
	q.dmi_product = read_small("/sys/class/dmi/id/product_name", dp, sizeof(dp));
	hte_doc_guest_check(&g->d, &q);
	hte_doc_multihit_check(&g->d, read_small("/sys/devices/system/cpu/vulnerabilities/itlb_multihit", line,
						 sizeof(line)),
			       g->d.guest, g->have_cpu ? g->cpu.vendor_id : NULL,
			       read_small("/sys/module/kvm/parameters/nx_huge_pages", nx, sizeof(nx)),
			       calib_rc == 0 ? (int)g->calib.verdict : HTE_CALIB_UNKNOWN);
	hte_doc_calib_check(&g->d, calib_rc, &g->calib, calib_from);
}

/*
 * The calibration: this boot's from root's file, or run now (kept only
 * where /run/hugetext is trusted).  Returns hte_calib_get()'s answer;
 * @from says where the figures came from.
 */
static int run_calib(struct doctor *g, char *from, size_t flen)
{
	struct stat before, after;
	int had, rc;

	if (g->run_refusal) {
		rc = hte_calibrate(&g->calib, CALIB_SECONDS);
		snprintf(from, flen, "just measured, not kept: /run/hugetext is %s", g->run_refusal);
	} else {
		had = stat(HTE_CALIB_PATH, &before) == 0;
		rc = hte_calib_get(&g->calib, g->force_calib, CALIB_SECONDS);
		if (!g->force_calib && had && stat(HTE_CALIB_PATH, &after) == 0 && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
		    after.st_mtim.tv_nsec == before.st_mtim.tv_nsec && after.st_ino == before.st_ino)
			snprintf(from, flen, "this boot's");
		else
			snprintf(from, flen, "just measured%s", geteuid() == 0 ? ", kept for this boot" : "");
	}
	g->d.calib = rc == 0 ? &g->calib : NULL;
	return rc;
}

/* --- the preload --- */

static void read_preload_file(struct doctor *g)
{
	struct hte_doc_preload *p = &g->preload;
	char (*e)[512] = malloc(64 * sizeof(*e));
	char *buf;
	size_t len, n;
	int err = ht_sys_read_file("/etc/ld.so.preload", &buf, &len);

	if (hte_find_preload(p->install, sizeof(p->install)) < 0)
		p->install[0] = '\0';
	if (err < 0 || !e) {
		p->file = err < 0 ? err : -ENOMEM;
		free(e);
		if (err == 0)
			free(buf);
		return;
	}
	p->file = 1;
	n = hte_doc_preload_entries(buf, len, e, 64);
	free(buf);
	for (size_t i = 0; i < n; i++) {
		int exists = access(e[i], F_OK) == 0;

		if (hte_doc_is_preload(e[i], strlen(e[i])) && !p->ours[0]) {
			snprintf(p->ours, sizeof(p->ours), "%s", e[i]);
			p->ours_exists = exists;
		}
		if (!exists && !p->missing[0])
			snprintf(p->missing, sizeof(p->missing), "%s", e[i]);
	}
	free(e);
}

/* --- the processes --- */

static int preload_mapped(const char *buf, size_t len)
{
	struct ht_map m;
	size_t pos = 0;

	while (ht_maps_next(buf, len, &pos, &m))
		if (m.path_len && m.path[0] == '/' && hte_doc_is_preload(m.path, m.path_len))
			return 1;
	return 0;
}

/* "node 4242, postgres 17": the first three processes with the preload. */
static void name_preloaded(struct hte_doc_preload *pl, long pid)
{
	char path[64], comm[32];
	size_t n = strlen(pl->which);
	ssize_t got;

	if (pl->procs_with > 3)
		return;
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	got = ht_sys_read_file_into(path, comm, sizeof(comm) - 1);
	if (got <= 0)
		snprintf(comm, sizeof(comm), "?");
	else
		comm[got - (comm[got - 1] == '\n')] = '\0';
	snprintf(pl->which + n, sizeof(pl->which) - n, "%s%s %ld", n ? ", " : "", comm, pid);
}

static void proc_facts(long pid, struct hte_doc_proc *p)
{
	char path[64], buf[4096];
	ssize_t n;
	long long ticks;

	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	n = readlink(path, p->exe, sizeof(p->exe) - 1);
	p->exe[n > 0 ? n : 0] = '\0';
	if (!p->preload)
		return;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	n = ht_sys_read_file_into(path, buf, sizeof(buf));
	if (n > 0)
		hte_doc_proc_status(buf, (size_t)n, p);
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	n = ht_sys_read_file_into(path, buf, sizeof(buf));
	ticks = n > 0 ? hte_doc_stat_ticks(buf, (size_t)n) : -1;
	p->cpu_s = ticks > 0 ? (double)ticks / (double)sysconf(_SC_CLK_TCK) : 0;
}

static int kernel_thread(long pid)
{
	char path[64], buf[1024];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	n = ht_sys_read_file_into(path, buf, sizeof(buf));
	return n > 0 && hte_stat_is_kthread(buf, (size_t)n);
}

/* One process; 0, or -1 out of memory. */
static int read_proc(struct doctor *g, long pid)
{
	struct hte_doc_proc p = { .pid = pid };
	struct hte_proc sum = { .pid = pid };
	char path[64], *buf;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "/proc/%ld/smaps", pid);
	err = ht_sys_read_file(path, &buf, &len);
	if (err == -ENOENT || err == -ESRCH)
		return 0;
	if (err < 0) {
		g->d.procs_unread += !kernel_thread(pid);
		return 0;
	}
	hte_status_smaps(buf, len, &g->st, &sum);
	if (!sum.code) {
		free(buf);
		return 0; /* a kernel thread */
	}
	g->d.procs_read++;
	p.preload = preload_mapped(buf, len);
	g->preload.procs_with += p.preload;
	if (p.preload)
		name_preloaded(&g->preload, pid);
	if (sum.code >= g->d.min_code) {
		g->preload.procs_big++;
		g->preload.big_with += p.preload;
	}
	proc_facts(pid, &p);
	err = hte_doc_add_smaps(&g->d, buf, len, &g->st, &p);
	free(buf);
	return err;
}

static int read_procs(struct doctor *g)
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
		err = read_proc(g, pid) < 0 ? -ENOMEM : 0;
	}
	closedir(d);
	return err;
}

static int mount_line(const char *line, size_t len, void *arg)
{
	struct hte_status *st = arg;
	struct hte_huge_mount m;

	if (hte_status_mount_line(line, len, hte_default_kb(), &m) && hte_status_add_mount(st, &m) < 0)
		return -ENOMEM;
	return 0;
}

/* --- file systems --- */

struct mounts {
	struct hte_doc_fs fs[MAX_MOUNTS];
	size_t n;
};

static int read_mountinfo(struct mounts *m)
{
	char *buf;
	size_t len;
	int err = ht_sys_read_file("/proc/self/mountinfo", &buf, &len);

	if (err < 0)
		return err;
	for (char *p = buf, *end = buf + len; p < end && m->n < MAX_MOUNTS;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct hte_doc_fs *f = &m->fs[m->n];

		memset(f, 0, sizeof(*f));
		if (hte_doc_mountinfo_line(p, llen, &f->dev_major, &f->dev_minor, f->mnt, sizeof(f->mnt), f->type,
					   sizeof(f->type), f->opts, sizeof(f->opts)) == 0)
			m->n++;
		p += llen + 1;
	}
	free(buf);
	return 0;
}

/* The first mount of the device: bind mounts of it share its file system. */
static struct hte_doc_fs *fs_of(struct mounts *m, unsigned major, unsigned minor)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->fs[i].dev_major == major && m->fs[i].dev_minor == minor)
			return &m->fs[i];
	return NULL;
}

/* Each object's file system, and the file systems' lines; returns whether any lacks 2 MiB folios. */
static int check_filesystems(struct doctor *g, struct mounts *m)
{
	char how[200];
	struct stat usr;
	int needed = 0;

	for (size_t i = 0; i < g->d.nobjs; i++) {
		struct hte_doc_obj *o = &g->d.objs[i];
		struct hte_doc_fs *f = fs_of(m, o->dev_major, o->dev_minor);

		if (!f)
			continue;
		f->code += o->code;
		f->seen += o->huge[HTE_HOW_PAGE_CACHE];
		f->objects++;
	}
	/* Where programs live, when no big code runs. */
	if (!g->d.nobjs && stat("/usr/bin", &usr) == 0) {
		struct hte_doc_fs *f = fs_of(m, major(usr.st_dev), minor(usr.st_dev));

		if (f)
			f->objects = 1;
	}
	for (size_t i = 0; i < g->d.nobjs; i++) {
		struct hte_doc_obj *o = &g->d.objs[i];
		struct hte_doc_fs *f = fs_of(m, o->dev_major, o->dev_minor);

		if (!f)
			continue;
		snprintf(o->fs, sizeof(o->fs), "%s", f->type);
		o->fs_folios = hte_doc_fs_folios(f->type, f->opts, g->kmaj, g->kmin, f->seen, how, sizeof(how));
	}
	for (size_t i = 0; i < m->n; i++) {
		if (!m->fs[i].objects)
			continue;
		needed |= !hte_doc_fs_folios(m->fs[i].type, m->fs[i].opts, g->kmaj, g->kmin, m->fs[i].seen, how,
					    sizeof(how));
		hte_doc_fs_check(&g->d, &m->fs[i], g->kmaj, g->kmin, g->env.cache_mounted);
	}
	return needed;
}

/* --- the policy --- */

static void read_policy(struct doctor *g)
{
	g->conf_rc = ht_conf_load(g->config, g->conf, g->conf_err, sizeof(g->conf_err));
	if (g->conf_rc == 0 && (g->conf->set & HT_CONF_MIN_CODE))
		g->d.min_code = g->conf->min_code < (2u << 20) ? 2u << 20 : g->conf->min_code;
}

/* --- all of it --- */

static int gather(struct doctor *g)
{
	struct hte_pool_count pools[HTE_MAX_SIZES];
	struct mounts *m = calloc(1, sizeof(*m));
	struct hte_doc_cache cache;
	char from[160];
	size_t npools;
	int err, calib_rc;

	if (!m)
		return -ENOMEM;
	read_kernel(g);
	read_policy(g);
	open_run_dir(g);
	read_pools(g, pools, &npools);
	err = hte_each_mount_line(mount_line, &g->st);
	if (!err)
		err = read_procs(g);
	if (!err) {
		hte_doc_sort_objects(&g->d);
		read_mountinfo(m);
		read_preload_file(g);
		hte_doc_pagesize_check(&g->d, ht_sys_base_page_size());
		check_thp(g);
		check_pagemap(g);
		calib_rc = run_calib(g, from, sizeof(from));
		check_cpu(g, calib_rc, from);
		/* Not root: others' processes, unread, may have it; root's unread ones are a sandbox's init and the like. */
		g->preload.unread = g->d.as_root ? 0 : g->d.procs_unread;
		hte_doc_preload_check(&g->d, &g->preload);
		hte_doc_policy_check(&g->d, g->config, g->conf_rc, g->conf_err, g->conf, g->pool_free);
		check_service(g);
		/* The cache's state first: a file system without folios is no problem where it serves. */
		read_cache(g, &cache);
		cache.needed = check_filesystems(g, m);
		hte_doc_cache_check(&g->d, &cache);
		hte_doc_pool_check(&g->d, pools, npools);
	}
	free(m);
	return err;
}

int hte_cmd_doctor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "calibrate", no_argument, NULL, 'c' },
		{ "config", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct doctor *g = calloc(1, sizeof(*g));
	int c, json = 0, err, rc;

	if (!g || !(g->conf = malloc(sizeof(*g->conf)))) {
		hte_error("doctor", "out of memory");
		free(g);
		return DOCTOR_EXIT_CANNOT;
	}
	hte_doc_init(&g->d);
	g->run_fd = -1;
	g->d.as_root = geteuid() == 0;
	g->config = HT_CONF_PATH;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'c': g->force_calib = 1; break;
		case 'f': g->config = optarg; break;
		case 'h': fputs(doctor_usage, stdout); rc = HTE_EXIT_OK; goto out;
		default: fputs(doctor_usage, stderr); rc = HTE_EXIT_USAGE; goto out;
		}
	}
	if (optind < argc) {
		hte_error("doctor", "unexpected argument '%s'", argv[optind]);
		fputs(doctor_usage, stderr);
		rc = HTE_EXIT_USAGE;
		goto out;
	}
	err = gather(g);
	if (err < 0) {
		hte_error("doctor", "cannot read the processes: %s", strerror(-err));
		rc = DOCTOR_EXIT_CANNOT;
		goto out;
	}
	if (json)
		hte_doc_json(stdout, &g->d, &g->env);
	else
		hte_doc_text(stdout, &g->d, &g->env);
	rc = hte_doc_exit(&g->d);
out:
	if (g->run_fd >= 0)
		close(g->run_fd);
	hte_doc_free(&g->d);
	hte_status_free(&g->st);
	free(g->conf);
	free(g);
	return rc;
}
