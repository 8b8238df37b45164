/* SPDX-License-Identifier: MIT */
/*
 * hugetext doctor, the checks: each turns what was read from the machine
 * into verdict lines, plain words and a command to run where something
 * is wrong.  No system call here: the tests give fixed inputs.
 */
#include "tool.h"
#include "mountfield.h"
#include "doctor.h"
#include "poolcmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "calibrate.h"
#include "conf.h"
#include "folios.h"
#include "hugetext.h"
#include "service.h"

#define MIB (1ULL << 20)
#define HUGE_2M (2ULL << 20)
#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

static const char *const level_names[] = { "ok", "note", "warn", "BLOCK" };

const char *hte_doc_level_name(enum hte_doc_level l)
{
	return l <= HTE_DOC_BLOCK ? level_names[l] : "?";
}

void hte_doc_init(struct hte_doctor *d)
{
	memset(d, 0, sizeof(*d));
	d->min_code = 4 * MIB;
	d->guest = -1;
}

void hte_doc_free(struct hte_doctor *d)
{
	free(d->objs);
	d->objs = NULL;
	d->nobjs = d->cap_objs = 0;
}

struct hte_doc_line *hte_doc_add(struct hte_doctor *d, enum hte_doc_section s, enum hte_doc_level l,
				 const char *id, const char *value, const char *fix, const char *fmt, ...)
{
	struct hte_doc_line *ln;
	va_list ap;

	if (d->nlines == HTE_DOC_MAX_LINES)
		return NULL;
	ln = &d->lines[d->nlines++];
	memset(ln, 0, sizeof(*ln));
	ln->section = s;
	ln->level = l;
	snprintf(ln->id, sizeof(ln->id), "%s", id);
	snprintf(ln->value, sizeof(ln->value), "%s", value ? value : "");
	snprintf(ln->fix, sizeof(ln->fix), "%s", fix ? fix : "");
	va_start(ap, fmt);
	vsnprintf(ln->text, sizeof(ln->text), fmt, ap);
	va_end(ap);
	return ln;
}

enum hte_doc_level hte_doc_worst(const struct hte_doctor *d)
{
	enum hte_doc_level w = HTE_DOC_OK;

	for (size_t i = 0; i < d->nlines; i++)
		if (d->lines[i].level > w)
			w = d->lines[i].level;
	return w;
}

int hte_doc_exit(const struct hte_doctor *d)
{
	return hte_doc_worst(d) == HTE_DOC_BLOCK ? HTE_EXIT_FAIL : HTE_EXIT_OK;
}

int hte_doc_kernel_version(const char *release, int *major, int *minor)
{
	char *end;
	long a, b;

	if (!release)
		return -1;
	a = strtol(release, &end, 10);
	if (end == release || *end != '.')
		return -1;
	release = end + 1;
	b = strtol(release, &end, 10);
	if (end == release || a < 2 || a > 1000 || b < 0 || b > 1000)
		return -1;
	*major = (int)a;
	*minor = (int)b;
	return 0;
}

static int at_least(int maj, int min, int want_maj, int want_min)
{
	return maj > want_maj || (maj == want_maj && min >= want_min);
}

/* --- THP --- */

/* The bracketed choice of a sysfs setting, "" when there is none. */
static void choice(const char *text, char *out, size_t len)
{
	if (!text || hte_thp_choice(text, out, len) < 0)
		out[0] = '\0';
}

static void thp_enabled(struct hte_doctor *d, const struct hte_doc_thp *t)
{
	const char *fix = "echo madvise > " THP_DIR "/enabled";
	char en[32], pmd[32];
	enum hte_doc_level veto = t->pool_free > 0 ? HTE_DOC_WARN : HTE_DOC_BLOCK;
	const char *pool = t->pool_free > 0 ? "only the explicit pool's free pages take copies" :
		"and the explicit pool has no free page: no copy of code gets huge pages";

	if (!t->enabled) {
		hte_doc_add(d, HTE_DOC_KERNEL, veto, "thp", "", "hugetext pool --set 64   # or a kernel with CONFIG_TRANSPARENT_HUGEPAGE",
			    "THP: this kernel has none (no %s), %s", THP_DIR, pool);
		return;
	}
	choice(t->enabled, en, sizeof(en));
	choice(t->pmd_enabled, pmd, sizeof(pmd));
	if (strcmp(en, "never") == 0) {
		hte_doc_add(d, HTE_DOC_KERNEL, veto, "thp", en, fix,
			    "THP enabled [never]: the administrator's veto, kept by the library, %s", pool);
	} else if (t->pmd_enabled && !ht_thp_size_setting(t->pmd_enabled, t->enabled, 1)) {
		hte_doc_add(d, HTE_DOC_KERNEL, veto, "thp", pmd[0] ? pmd : "?",
			    "echo inherit > " THP_DIR "/hugepages-2048kB/enabled",
			    "THP enabled [%s], its 2 MiB size [%s]: a veto, kept by the library, %s", en,
			    pmd[0] ? pmd : "?", pool);
	} else if (strcmp(en, "always") == 0) {
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_OK, "thp", en, NULL,
			    "THP enabled [always]: copies of code get 2 MiB pages (as may any memory)");
	} else if (strcmp(en, "madvise") == 0) {
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_OK, "thp", en, NULL,
			    "THP enabled [madvise]: the library asks for 2 MiB pages where it copies code");
	} else {
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_WARN, "thp", en[0] ? en : "?", fix,
			    "THP enabled [%s]: a setting the library does not know", en[0] ? en : "?");
	}
}

/* defrag and khugepaged: the library asks MADV_COLLAPSE, which compacts by itself and waits for no one. */
static void thp_defrag(struct hte_doctor *d, const struct hte_doc_thp *t)
{
	char df[32], val[96];
	long sleep_ms = t->khugepaged_sleep_ms ? strtol(t->khugepaged_sleep_ms, NULL, 10) : -1;
	const char *kd = t->khugepaged_defrag && t->khugepaged_defrag[0] == '0' ? "0" : "1";

	if (!t->defrag)
		return;
	choice(t->defrag, df, sizeof(df));
	snprintf(val, sizeof(val), "%s; khugepaged defrag %s", df[0] ? df : "?", kd);
	if (strcmp(df, "always") == 0)
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_NOTE, "thp_defrag", val, NULL,
			    "THP defrag [always]: any program's huge page fault may stall to compact memory; "
			    "[madvise] is enough");
	else
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_OK, "thp_defrag", val, NULL,
			    "THP defrag [%s], khugepaged every %ld s: the library compacts by itself "
			    "(MADV_COLLAPSE)", df[0] ? df : "?",
			    sleep_ms >= 0 ? sleep_ms / 1000 : -1L);
}

static void thp_shmem(struct hte_doctor *d, const struct hte_doc_thp *t)
{
	char sh[32];

	if (!t->shmem)
		return;
	choice(t->shmem, sh, sizeof(sh));
	if (strcmp(sh, "deny") == 0)
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_WARN, "thp_shmem", sh, "echo never > " THP_DIR "/shmem_enabled",
			    "THP shmem_enabled [deny]: no tmpfs gets 2 MiB pages: the shared cache refuses "
			    "every entry");
	else if (strcmp(sh, "force") == 0)
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_OK, "thp_shmem", sh, NULL,
			    "THP shmem_enabled [force]: every tmpfs file gets 2 MiB pages");
	else
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_OK, "thp_shmem", sh[0] ? sh : "?", NULL,
			    "THP shmem_enabled [%s]: the shared cache's tmpfs decides by its huge= option",
			    sh[0] ? sh : "?");
}

void hte_doc_thp_check(struct hte_doctor *d, const struct hte_doc_thp *t)
{
	thp_enabled(d, t);
	thp_defrag(d, t);
	thp_shmem(d, t);
}

void hte_doc_pagesize_check(struct hte_doctor *d, uint64_t page)
{
	char v[32];

	if (page == 4096 || page == 0)
		return;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)page);
	hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_BLOCK, "page_size", v, "boot a kernel with 4 KiB pages",
		    "pages of %llu KiB: the library moves nothing on such a kernel (docs/failure-model.md, "
		    "\"Page sizes\")", (unsigned long long)page / 1024);
}

void hte_doc_pagemap_check(struct hte_doctor *d, int rc)
{
	if (rc == 0)
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_OK, "pagemap_scan", "yes", NULL,
			    "PAGEMAP_SCAN: yes: per 2 MiB page, the library keeps what is huge, copies what runs");
	else if (rc == -ENOTTY)
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_NOTE, "pagemap_scan", "no", NULL,
			    "PAGEMAP_SCAN: no (Linux 6.7 adds it): from smaps, the library keeps page cache "
			    "only where all of a span is huge");
	else
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_NOTE, "pagemap_scan", "unknown", NULL,
			    "PAGEMAP_SCAN: could not be tried (%s)", strerror(-rc));
}

/* --- page-cache folios per file system --- */

int hte_doc_fs_folios(const char *type, const char *opts, int kmaj, int kmin, uint64_t seen, char *how,
		      size_t len)
{
	const char *huge = opts ? strstr(opts, "huge=") : NULL;

	if (seen) {
		snprintf(how, len, "seen: %llu MiB of running code mapped from them",
			 (unsigned long long)(seen / MIB));
		return 1;
	}
	if (strcmp(type, "xfs") == 0) {
		snprintf(how, len, "XFS from Linux 5.18, docs/kernels.md; this is %d.%d",
			 kmaj, kmin);
		return at_least(kmaj, kmin, 5, 18);
	}
	if (strcmp(type, "ext4") == 0) {
		snprintf(how, len, "ext4 from Linux 6.16, docs/kernels.md; this is %d.%d", kmaj, kmin);
		return at_least(kmaj, kmin, 6, 16);
	}
	if (strcmp(type, "tmpfs") == 0) {
		int on = huge && (strncmp(huge, "huge=always", 11) == 0 || strncmp(huge, "huge=within_size", 16) == 0);

		snprintf(how, len, "tmpfs %s", on ? "with huge=" : "without huge=always or within_size");
		return on;
	}
	/*
	 * A container's files: their page cache is the layer's below, but
	 * overlayfs places mappings without the 2 MiB hook (docs/kernels.md,
	 * "Where code loads") and the library reads back on ext4 and XFS only.
	 */
	if (strcmp(type, "overlay") == 0) {
		snprintf(how, len, "overlay places code off the 2 MiB grid, and the library makes them on ext4 "
			 "and XFS only");
		return 0;
	}
	snprintf(how, len, "the library makes them on ext4 and XFS only");
	return 0;
}

void hte_doc_fs_check(struct hte_doctor *d, const struct hte_doc_fs *fs, int kmaj, int kmin, int cache_mounted)
{
	char how[200], val[300], code[32];
	int yes = hte_doc_fs_folios(fs->type, fs->opts, kmaj, kmin, fs->seen, how, sizeof(how));

	snprintf(val, sizeof(val), "%s %s", fs->type, fs->mnt);
	hte_human(fs->code, code, sizeof(code));
	if (yes)
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_OK, "fs", val, NULL,
			    "page cache on %s (%s): 2 MiB folios: yes (%s)", fs->type, fs->mnt, how);
	else if (cache_mounted)
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_NOTE, "fs", val, NULL,
			    "page cache on %s (%s): 2 MiB folios: no (%s); the shared cache serves instead",
			    fs->type, fs->mnt, how);
	else
		hte_doc_add(d, HTE_DOC_KERNEL, HTE_DOC_WARN, "fs", val,
			    "echo 'text_cache_size = 2G' >> /etc/hugetext.conf && hugetext setup",
			    "page cache on %s (%s): 2 MiB folios: no (%s); so its %s of big code copies",
			    fs->type, fs->mnt, how, code);
}

/* "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue" */
int hte_doc_mountinfo_line(const char *line, size_t len, unsigned *major, unsigned *minor, char *mnt,
			   size_t mlen, char *type, size_t tlen, char *opts, size_t olen)
{
	const char *p = line, *end = line + len, *f, *mp = NULL;
	size_t n, mpn = 0;
	char dev[32];
	int i;

	for (i = 0; i < 5; i++) {
		if (!hte_mount_field(&p, end, &f, &n))
			return -1;
		if (i == 2) {
			if (n >= sizeof(dev))
				return -1;
			memcpy(dev, f, n);
			dev[n] = '\0';
			if (sscanf(dev, "%u:%u", major, minor) != 2)
				return -1;
		}
		if (i == 4) {
			mp = f;
			mpn = n;
		}
	}
	/* Optional fields up to the lone "-". */
	do {
		if (!hte_mount_field(&p, end, &f, &n))
			return -1;
	} while (!(n == 1 && f[0] == '-'));
	if (!hte_mount_field(&p, end, &f, &n) || n >= tlen)
		return -1;
	memcpy(type, f, n);
	type[n] = '\0';
	if (!hte_mount_field(&p, end, &f, &n)) /* the source */
		return -1;
	if (!hte_mount_field(&p, end, &f, &n) || n >= olen)
		return -1;
	memcpy(opts, f, n);
	opts[n] = '\0';
	return hte_mount_unescape(mp, mpn, mnt, mlen);
}

/* --- guest, iTLB multihit --- */

/* DMI's names of virtual machines, vendor or product, as their makers set them. */
static const char *const dmi_guests[] = { "QEMU", "KVM", "Amazon EC2", "Google Compute Engine", "VMware",
					  "VirtualBox", "innotek GmbH", "Xen", "Virtual Machine", "Parallels",
					  "OpenStack", "Bochs", "BHYVE", "Cloud Hypervisor" };

static int dmi_guest(const char *s)
{
	if (!s)
		return 0;
	for (size_t i = 0; i < sizeof(dmi_guests) / sizeof(dmi_guests[0]); i++)
		if (strstr(s, dmi_guests[i]))
			return 1;
	return 0;
}

int hte_doc_is_guest(const struct hte_doc_guest *g, char *how, size_t len)
{
	int dmi = dmi_guest(g->dmi_vendor) || dmi_guest(g->dmi_product);
	int n;

	n = snprintf(how, len, "CPUID hypervisor bit %s",
		     g->cpuid_hv < 0 ? "not known" : g->cpuid_hv ? "set" : "clear");
	if (g->cpuid_hv > 0 && g->hv_id && g->hv_id[0] && n >= 0 && (size_t)n < len)
		n += snprintf(how + n, len - (size_t)n, " (%s)", g->hv_id);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(how + n, len - (size_t)n, g->sys_hypervisor ? ", /sys/hypervisor: %s" : "%s",
			      g->sys_hypervisor ? g->sys_hypervisor : ", no /sys/hypervisor");
	if (n >= 0 && (size_t)n < len) {
		if (g->dmi_vendor || g->dmi_product)
			snprintf(how + n, len - (size_t)n, ", DMI: %s %s", g->dmi_vendor ? g->dmi_vendor : "",
				 g->dmi_product ? g->dmi_product : "");
		else
			snprintf(how + n, len - (size_t)n, ", no DMI");
	}
	if (g->cpuid_hv > 0 || (g->sys_hypervisor && g->sys_hypervisor[0]) || dmi)
		return 1;
	return g->cpuid_hv == 0 || g->dmi_vendor || g->dmi_product ? 0 : -1;
}

void hte_doc_guest_check(struct hte_doctor *d, const struct hte_doc_guest *g)
{
	char how[300];
	int guest = hte_doc_is_guest(g, how, sizeof(how));

	d->guest = guest;
	hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_NOTE, "guest", guest > 0 ? "yes" : guest == 0 ? "no" : "unknown", NULL,
		    "%s: %s", guest > 0 ? "a guest" : guest == 0 ? "not a guest" : "guest or not: not known", how);
}

static int is_vendor(const char *vendor, const char *want)
{
	return vendor && strcmp(vendor, want) == 0;
}

/* A guest's own line is the virtual CPU's: what counts is the host's processor and KVM. */
static void multihit_guest(struct hte_doctor *d, const char *line, const char *vendor, int calib)
{
	const char *host = "on the host: cat /sys/module/kvm/parameters/nx_huge_pages   # Y: split; N or never: not";

	if (is_vendor(vendor, "AuthenticAMD"))
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_OK, "itlb_multihit", line, NULL,
			    "iTLB multihit: %s (as the guest sees it); an AMD host has no such erratum: "
			    "KVM splits no code pages", line);
	else if (is_vendor(vendor, "GenuineIntel") && calib == HTE_CALIB_HUGE_GAINS)
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_OK, "itlb_multihit", line, NULL,
			    "iTLB multihit: %s (as the guest sees it); the calibration gains from 2 MiB code "
			    "pages, so this Intel host does not split them (KVM nx_huge_pages)", line);
	else if (is_vendor(vendor, "GenuineIntel"))
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_WARN, "itlb_multihit", line, host,
			    "iTLB multihit: %s (as the guest sees it). An Intel host with the erratum splits "
			    "the guest's 2 MiB code pages (KVM nx_huge_pages): %s", line,
			    calib == HTE_CALIB_NO_GAIN ? "likely why the calibration gains nothing" :
			    "no gain; the calibration tells");
	else
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_NOTE, "itlb_multihit", line, NULL,
			    "iTLB multihit: %s (as the guest sees it); only Intel hosts split guests' code "
			    "pages (KVM nx_huge_pages)", line);
}

void hte_doc_multihit_check(struct hte_doctor *d, const char *line, int guest, const char *vendor,
			    const char *nx, int calib)
{
	int split = nx && (nx[0] == 'Y' || nx[0] == 'y' || strncmp(nx, "force", 5) == 0);

	if (!line) {
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_NOTE, "itlb_multihit", "", NULL,
			    "iTLB multihit: not reported by this kernel");
		return;
	}
	if (guest > 0) {
		multihit_guest(d, line, vendor, calib);
		return;
	}
	if (strcmp(line, "Not affected") == 0)
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_OK, "itlb_multihit", line, NULL,
			    "iTLB multihit: not affected");
	else if (strstr(line, "Split huge pages") || split)
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_NOTE, "itlb_multihit", line, NULL,
			    "iTLB multihit: %s: this machine's KVM splits its VMs' code pages; its own "
			    "programs are not concerned", line);
	else
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_NOTE, "itlb_multihit", line, NULL,
			    "iTLB multihit: %s: concerns only VMs this machine runs, not its own programs",
			    line);
}

/* --- the preload --- */

int hte_doc_is_preload(const char *path, size_t len)
{
	static const char name[] = "libhugetext-preload";
	const char *base = path;

	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	return (size_t)(path + len - base) >= sizeof(name) - 1 && memcmp(base, name, sizeof(name) - 1) == 0;
}

size_t hte_doc_preload_entries(const char *text, size_t len, char (*out)[512], size_t max)
{
	size_t n = 0, i = 0;

	while (i < len && n < max) {
		size_t s;

		while (i < len && strchr(" \t\n:", text[i]) && text[i])
			i++;
		s = i;
		while (i < len && text[i] && !strchr(" \t\n:", text[i]))
			i++;
		if (i == s) {
			if (i < len && !text[i])
				i++; /* a NUL byte: no separator to ld.so either, skipped here */
			continue;
		}
		snprintf(out[n++], 512, "%.*s", (int)(i - s), text + s);
	}
	return n;
}

void hte_doc_preload_check(struct hte_doctor *d, const struct hte_doc_preload *p)
{
	char fix[700];
	const char *lib = p->install[0] ? p->install : "/usr/lib/x86_64-linux-gnu/libhugetext-preload.so";

	if (p->missing[0]) {
		snprintf(fix, sizeof(fix), "sed -i 's|%s||' /etc/ld.so.preload", p->missing);
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "preload_missing", p->missing, fix,
			    "/etc/ld.so.preload names %s, which does not exist: every program's start "
			    "complains", p->missing);
	}
	if (p->file < 0 && p->file != -ENOENT)
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "preload_file", "", NULL,
			    "/etc/ld.so.preload: cannot be read (%s)", strerror(-p->file));
	if (p->ours[0] && p->ours_exists) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_OK, "preload", p->ours, NULL,
			    "preload: in /etc/ld.so.preload (%s); in %u running process%s, %u of %u with "
			    "big code%s%s%s%s", p->ours, p->procs_with, p->procs_with == 1 ? "" : "es", p->big_with,
			    p->procs_big, p->which[0] ? " (" : "", p->which, p->procs_with > 3 ? ", ..." : "",
			    p->which[0] ? ")" : "");
		return;
	}
	snprintf(fix, sizeof(fix), "hugetext run -- PROGRAM   # one program\necho %s >> /etc/ld.so.preload"
		 "   # every program", lib);
	if (p->procs_with)
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "preload", "", fix,
			    "preload: not in /etc/ld.so.preload; in %u running process%s (%s%s), %u of %u with "
			    "big code", p->procs_with, p->procs_with == 1 ? "" : "es",
			    p->which[0] ? p->which : "hugetext run, LD_PRELOAD", p->procs_with > 3 ? ", ..." : "",
			    p->big_with, p->procs_big);
	else if (p->unread)
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "preload", "", fix,
			    "preload: in none of the processes read%s; %u could not be read (run as root)",
			    p->ours[0] ? " (/etc/ld.so.preload names it, but the file is missing)" : "", p->unread);
	else
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "preload", "", fix,
			    "preload: in no running process%s: hugetext moves nothing yet",
			    p->ours[0] ? " (/etc/ld.so.preload names it, but the file is missing)" : "");
}

/* --- the policy file --- */

static const struct {
	unsigned bit;
	const char *name;
} conf_keys[] = {
	{ HT_CONF_MODE, "mode" }, { HT_CONF_PROGRAMS, "programs" }, { HT_CONF_MATCH, "match" },
	{ HT_CONF_IGNORE, "ignore" }, { HT_CONF_MIN_CODE, "min_code" }, { HT_CONF_BIG_LIBRARIES, "big_libraries" },
	{ HT_CONF_BUDGET_MS, "budget_ms" }, { HT_CONF_PAGE_CACHE, "page_cache" },
	{ HT_CONF_COVER_ENDS, "cover_ends" }, { HT_CONF_ASYNC, "async" }, { HT_CONF_COPY, "copy" },
	{ HT_CONF_COPY_AFTER_MS, "copy_after_ms" }, { HT_CONF_COPY_HOT, "copy_hot" }, { HT_CONF_SHARE, "share" },
	{ HT_CONF_SERVICE, "service" }, { HT_CONF_VERBOSE, "verbose" }, { HT_CONF_POOL, "pool" },
	{ HT_CONF_HUGETLBFS, "hugetlbfs" }, { HT_CONF_TEXT_CACHE_SIZE, "text_cache_size" },
	{ HT_CONF_WARM, "warm" },
};

/* "mode, min_code, warm" */
static void keys_set(const struct ht_conf *c, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]) && n < len; i++)
		if (c->set & conf_keys[i].bit) {
			int w = snprintf(out + n, len - n, "%s%s", n ? ", " : "", conf_keys[i].name);

			n += w > 0 ? (size_t)w : 0;
		}
	if (!out[0])
		snprintf(out, len, "nothing (every key commented out)");
}

static void policy_unknown(struct hte_doctor *d, const char *path, const struct ht_conf *c)
{
	char keys[200], fix[700];
	size_t n = 0;

	if (!c->nunknown)
		return;
	keys[0] = '\0';
	for (unsigned i = 0; i < c->nunknown && i < HT_CONF_UNKNOWN_MAX && n < sizeof(keys); i++) {
		int w = snprintf(keys + n, sizeof(keys) - n, "%s'%s' (line %u)", i ? ", " : "", c->unknown[i],
				 c->unknown_line[i]);

		n += w > 0 ? (size_t)w : 0;
	}
	snprintf(fix, sizeof(fix), "man 7 hugetext   # the keys; then correct or remove them in %s", path);
	hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "policy_unknown", keys, fix,
		    "policy: %u unknown key%s, ignored: %s%s", c->nunknown, c->nunknown == 1 ? "" : "s", keys,
		    c->nunknown > HT_CONF_UNKNOWN_MAX ? ", ..." : "");
}

/* What the file's settings take away, each a line of its own. */
static void policy_effects(struct hte_doctor *d, const char *path, const struct ht_conf *c, long pool_free)
{
	char fix[700];

	if ((c->set & HT_CONF_MODE) && c->mode == HT_CONF_MODE_OFF) {
		snprintf(fix, sizeof(fix), "sed -i '/^ *mode *=/d' %s", path);
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_BLOCK, "policy_mode", "off", fix,
			    "policy: mode = off: the preload moves nothing in any program");
	}
	if ((c->set & HT_CONF_MODE) && c->mode == HT_CONF_MODE_EXPLICIT && pool_free <= 0)
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_BLOCK, "policy_mode", "explicit",
			    "hugetext pool --set 64   # or pool = 64 in the policy, then hugetext setup",
			    "policy: mode = explicit, but the hugetlb pool has no free 2 MiB page: every copy "
			    "fails, and explicit mode keeps no page-cache pages");
	if ((c->set & HT_CONF_SERVICE) && !c->service)
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "policy_service", "0", NULL,
			    "policy: service = 0: no program hands its code to the text service");
	if ((c->set & HT_CONF_PROGRAMS) && c->programs[0])
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "policy_programs", c->programs, NULL,
			    "policy: programs = %s: the preload acts only in programs whose path matches",
			    c->programs);
	if ((c->set & HT_CONF_COPY) && c->copy == 2)
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "policy_copy", "never", NULL,
			    "policy: copy = never: no private copy; only the page cache and the shared cache serve");
}

void hte_doc_policy_check(struct hte_doctor *d, const char *path, int rc, const char *err,
			  const struct ht_conf *c, long pool_free)
{
	char keys[400], fix[700];

	if (rc == -ENOENT) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_OK, "policy", "absent", NULL,
			    "policy: no %s: the defaults apply", path);
		return;
	}
	if (rc == -EPERM) {
		snprintf(fix, sizeof(fix), "chown root:root %s && chmod 644 %s   # a link: put the file itself there",
			 path, path);
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "policy", "untrusted", fix,
			    "policy: %s: so the preload ignores the whole file", err && err[0] ? err : path);
		return;
	}
	if (rc < 0) {
		snprintf(fix, sizeof(fix), "man 7 hugetext   # the format; then correct %s", path);
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "policy", rc == -EINVAL ? "invalid" : "unreadable", fix,
			    "policy: %s: the preload ignores the whole file", err && err[0] ? err : strerror(-rc));
		return;
	}
	keys_set(c, keys, sizeof(keys));
	hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_OK, "policy", "trusted", NULL, "policy: %s (trusted) sets %s",
		    path, keys);
	policy_unknown(d, path, c);
	policy_effects(d, path, c, pool_free);
}

/* --- /run/hugetext and the text service --- */

const char *hte_doc_dir_distrust(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return "a symbolic link";
	if (!S_ISDIR(st->st_mode))
		return "not a directory";
	if (st->st_uid != 0)
		return "not owned by root";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by others than root";
	return NULL;
}

const char *hte_doc_file_distrust(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return "a symbolic link";
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != 0)
		return "not owned by root";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by others than root";
	return NULL;
}

int hte_doc_is_serve(const char *buf, size_t len)
{
	const char *nul = memchr(buf, '\0', len), *base;
	size_t rest;

	if (!nul)
		return 0;
	rest = len - (size_t)(nul - buf) - 1;
	base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	/* argv[0] ends in "hugetext", argv[1] is "serve" with its NUL. */
	return strcmp(base, "hugetext") == 0 && rest >= 6 && memcmp(nul + 1, "serve", 6) == 0;
}

void hte_doc_service_check(struct hte_doctor *d, const struct hte_doc_service_in *in)
{
	const struct hte_doc_service *s = &in->s;
	const char *start = "hugetext serve &   # systemd: systemctl enable --now hugetext-serve.socket";

	if (in->policy_off)
		return; /* the policy line says it */
	if (in->dir_refusal) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "run_dir", in->dir_refusal,
			    "ls -la /run/hugetext   # not hugetext's: remove it, then: hugetext serve &",
			    "/run/hugetext is %s: root must not follow it: its state file and calibration "
			    "not read", in->dir_refusal);
		return;
	}
	if (in->state == -2) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "service", "untrusted",
			    "rm " HTE_SERVE_STATE "   # the service writes it again",
			    "text service: its state file %s is %s: not read", HTE_SERVE_STATE, in->state_refusal);
		return;
	}
	if (in->state == -1) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "service", "garbage",
			    "rm " HTE_SERVE_STATE "   # the service writes it again",
			    "text service: %s is not the service's (no JSON object with its pid and counts)",
			    HTE_SERVE_STATE);
		return;
	}
	if (in->state == 0) {
		if (in->socket)
			hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "service", "socket", NULL,
				    "text service: its socket waits (" HT_SERVICE_SOCKET "); no offer yet");
		else
			hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "service", "absent", start,
				    "text service: not running: nothing warms or caches big code for its next starts");
		return;
	}
	hte_doc_add(d, HTE_DOC_HUGETEXT, in->running ? HTE_DOC_OK : HTE_DOC_WARN, "service",
		    in->running ? "running" : "stopped", in->running ? NULL : start,
		    "text service: %s (pid %ld): %ld offer%s; %ld warmed, %ld filled, %ld evicted, %ld refused",
		    in->running ? "running" : "not running; its state file",
		    s->pid, s->offers, s->offers == 1 ? "" : "s", s->warmed, s->filled, s->evicted, s->refused);
	if (s->last_warmed[0] || s->last_filled[0])
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "service_last", "", NULL, "text service: last %s%s%s%s%s",
			    s->last_warmed[0] ? "warmed: " : "", s->last_warmed,
			    s->last_warmed[0] && s->last_filled[0] ? "; last " : "",
			    s->last_filled[0] ? "filled: " : "", s->last_filled);
	if (s->nrefused)
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "service_refused", s->last_refused[s->nrefused - 1],
			    NULL, "text service: last refusal: %s", s->last_refused[s->nrefused - 1]);
}

/* --- the shared cache and the pool --- */

void hte_doc_cache_check(struct hte_doctor *d, const struct hte_doc_cache *c)
{
	char used[32], size[32];
	const char *fix = "echo 'text_cache_size = 2G' >> /etc/hugetext.conf && hugetext setup";

	if (!c->mounted) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, c->needed ? HTE_DOC_WARN : HTE_DOC_NOTE, "text_cache", "absent",
			    c->needed ? fix : NULL, "shared cache: not mounted at %s%s", HT_TEXT_CACHE_DIR,
			    c->needed ? ", and big code lies where the page cache has no 2 MiB folios" :
			    " (not needed: the page cache has 2 MiB folios)");
		return;
	}
	if (strcmp(c->type, "tmpfs") != 0 || !(strstr(c->opts, "huge=within_size") || strstr(c->opts, "huge=always"))) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "text_cache", c->type,
			    "umount " HT_TEXT_CACHE_DIR " && hugetext setup",
			    "shared cache: %s is a %s without huge=: the library refuses its entries",
			    HT_TEXT_CACHE_DIR, c->type);
		return;
	}
	if (!c->trusted) {
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_WARN, "text_cache", "untrusted",
			    "umount " HT_TEXT_CACHE_DIR " && hugetext setup",
			    "shared cache: %s is not root's, or writable by all but not sticky: refused",
			    HT_TEXT_CACHE_DIR);
		return;
	}
	hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_OK, "text_cache", "mounted", NULL,
		    "shared cache: %s, tmpfs with huge pages, %s used of %s", HT_TEXT_CACHE_DIR,
		    hte_human(c->used, used, sizeof(used)), hte_human(c->size, size, sizeof(size)));
}

void hte_doc_pool_check(struct hte_doctor *d, const struct hte_pool_count *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char v[64];

		if (p[i].kb != 2048)
			continue;
		snprintf(v, sizeof(v), "%ld/%ld", p[i].free, p[i].total);
		hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_OK, "pool", v, NULL,
			    "hugetlb pool: %ld pages of 2 MiB, %ld free%s", p[i].total, p[i].free,
			    p[i].total > 0 ? ": copies take them first" : " (not needed: copies use THP)");
		return;
	}
	hte_doc_add(d, HTE_DOC_HUGETEXT, HTE_DOC_NOTE, "pool", "none", NULL,
		    "hugetlb pool: none of 2 MiB pages (not needed: copies use THP)");
}

/* --- the calibration --- */

void hte_doc_calib_check(struct hte_doctor *d, int rc, const struct hte_calib *c, const char *from)
{
	const char *again = "hugetext doctor --calibrate";
	char src[160];

	snprintf(src, sizeof(src), "%s", from && from[0] ? from : "measured now");
	if (rc < 0) {
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_NOTE, "calibration", "failed", again,
			    "calibration: could not run: %s", c->why[0] ? c->why : "no reason given");
		return;
	}
	switch (c->verdict) {
	case HTE_CALIB_HUGE_GAINS:
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_OK, "calibration", "huge_gains", NULL,
			    "calibration (%s): 2 MiB pages of code gain here: %s", src, c->why);
		break;
	case HTE_CALIB_NO_GAIN:
		/* One run on a busy machine can say so too: measuring again comes first. */
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_BLOCK, "calibration", "no_gain",
			    d->guest > 0 ? "hugetext doctor --calibrate   # again, on a quiet machine\n"
			    "on the host: back the guest's memory with huge pages (Intel: kvm nx_huge_pages=never)" :
			    "hugetext doctor --calibrate   # again, on a quiet machine",
			    "calibration (%s): 2 MiB pages of code gain nothing here: %s", src, c->why);
		break;
	case HTE_CALIB_NO_HUGE:
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_BLOCK, "calibration", "no_huge", again,
			    "calibration (%s): its code could not be put on 2 MiB pages here: %s", src, c->why);
		break;
	default:
		hte_doc_add(d, HTE_DOC_CPU, HTE_DOC_NOTE, "calibration", "unknown", again,
			    "calibration (%s): not decided: %s", src, c->why[0] ? c->why : "no reason given");
		break;
	}
}

/* --- the text service's state file --- */

static int get_long(struct json_object *o, const char *key, long *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	*out = (long)json_object_get_int64(v);
	return *out < 0 ? -1 : 0;
}

/* The last @max strings of the list @key into @out (newest last); -1 when it is no list of strings. */
static int get_last(struct json_object *o, const char *key, char (*out)[256], unsigned max, unsigned *n)
{
	struct json_object *a;
	size_t len, from;

	*n = 0;
	if (!json_object_object_get_ex(o, key, &a))
		return 0;
	if (!json_object_is_type(a, json_type_array))
		return -1;
	len = json_object_array_length(a);
	from = len > max ? len - max : 0;
	for (size_t i = 0; i < len; i++) {
		struct json_object *s = json_object_array_get_idx(a, i);

		if (!json_object_is_type(s, json_type_string))
			return -1;
		if (i >= from)
			snprintf(out[(*n)++], 256, "%s", json_object_get_string(s));
	}
	return 0;
}

static int service_fields(struct json_object *o, struct hte_doc_service *s)
{
	char one[1][256];
	unsigned n;

	if (get_long(o, "pid", &s->pid) < 0 || s->pid == 0 || get_long(o, "offers", &s->offers) < 0 ||
	    get_long(o, "warmed_total", &s->warmed) < 0 || get_long(o, "filled_total", &s->filled) < 0 ||
	    get_long(o, "evicted_total", &s->evicted) < 0 || get_long(o, "refused_total", &s->refused) < 0)
		return -1;
	if (get_long(o, "pending", &s->pending) < 0)
		s->pending = 0;
	if (get_long(o, "warms", &s->warms) < 0)
		s->warms = 0;
	if (get_last(o, "refused", s->last_refused, HTE_DOC_LAST, &s->nrefused) < 0)
		return -1;
	if (get_last(o, "filled", one, 1, &n) < 0)
		return -1;
	if (n)
		snprintf(s->last_filled, sizeof(s->last_filled), "%s", one[0]);
	if (get_last(o, "warmed", one, 1, &n) < 0)
		return -1;
	if (n)
		snprintf(s->last_warmed, sizeof(s->last_warmed), "%s", one[0]);
	return 0;
}

int hte_doc_service_parse(const char *json, size_t len, struct hte_doc_service *s)
{
	struct json_tokener *tok;
	struct json_object *o;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	/* A NUL inside would end the text json-c sees early: not the service's. */
	if (len == 0 || len > 1u << 20 || memchr(json, '\0', len) || !(tok = json_tokener_new()))
		return -1;
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (o && json_tokener_get_error(tok) == json_tokener_success &&
	    json_object_is_type(o, json_type_object)) {
		size_t end = json_tokener_get_parse_end(tok);

		/* Only white space may follow the object. */
		while (end < len && strchr(" \t\r\n", json[end]))
			end++;
		if (end == len)
			rc = service_fields(o, s);
	}
	json_object_put(o);
	json_tokener_free(tok);
	if (rc < 0)
		memset(s, 0, sizeof(*s));
	return rc;
}
