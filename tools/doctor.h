/* SPDX-License-Identifier: MIT */
/*
 * hugetext doctor: one screen on what, on this machine, stands in the way
 * of huge pages for code, and what to do about it.
 *
 * Each check is a pure function (doctorchk.c) that takes what was read
 * (sysfs text, mount lines, the policy, the service's state file, smaps)
 * and adds verdict lines to a struct hte_doctor; doctor.c reads the
 * machine, and doctorfmt.c writes the text and the JSON.  The tests feed
 * the checks fixed inputs (tests/tools/test-doctor.cpp).
 */
#ifndef HTE_DOCTOR_H
#define HTE_DOCTOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ht_conf;
struct hte_calib;

enum hte_doc_level {
	HTE_DOC_OK = 0, /* works as hugetext needs */
	HTE_DOC_NOTE,   /* worth knowing; nothing to do */
	HTE_DOC_WARN,   /* a problem that costs hugetext part of its gain: the line says what to do */
	HTE_DOC_BLOCK,  /* hugetext cannot put code on huge pages (or gain from them) here */
};

/* "ok", "note", "warn", "BLOCK". */
const char *hte_doc_level_name(enum hte_doc_level l);

enum hte_doc_section {
	HTE_DOC_KERNEL = 0,
	HTE_DOC_CPU,
	HTE_DOC_HUGETEXT,
	HTE_DOC_SECTIONS,
};

struct hte_doc_line {
	enum hte_doc_section section;
	enum hte_doc_level level;
	char id[24];     /* stable, for scripts: "thp", "fs", "preload", ... */
	char value[128]; /* the raw value the line is about ("madvise", "ext4 /", "Not affected") */
	char text[600];  /* plain words, one line */
	char fix[700];   /* what to do: a command; "" when nothing is to be done */
};

/* One program or library running now, over every process that maps it. */
struct hte_doc_obj {
	char path[512];
	uint64_t code;            /* bytes of its code in one process (the largest) */
	uint64_t code_sum;        /* summed over its processes */
	uint64_t huge[HTE_HOW_N]; /* of code_sum, on huge pages by how (folios not counted) */
	unsigned procs;           /* processes that map it */
	unsigned served;          /* of them, with some of its code on huge pages */
	unsigned with_preload;    /* of them, with the preload loaded */
	unsigned aligned;         /* of them, loaded where address and file offset agree modulo 2 MiB */
	unsigned thp_off;         /* of those with the preload, turned THP off (PR_SET_THP_DISABLE) */
	unsigned single;          /* of those with the preload, single-threaded */
	double cpu_max;           /* the most CPU seconds one of those with the preload has used */
	unsigned dev_major, dev_minor;
	long pid;                 /* one of its processes, for the fix */
	char program[512];        /* that process's program, "" unknown */
	int is_program;           /* some process runs it as its program */
	char fs[32];              /* the file system it lies on ("" unknown) */
	int fs_folios;            /* that file system keeps 2 MiB page-cache folios: 1, 0, -1 unknown */
};

/* What one process is, beside its smaps. */
struct hte_doc_proc {
	long pid;
	int preload;        /* the preload is mapped */
	int threads;        /* Threads: of /proc/PID/status; 0 unknown */
	int thp_disabled;   /* THP_enabled: 0 */
	double cpu_s;       /* utime + stime */
	char exe[512];      /* /proc/PID/exe, "" unknown */
};

#define HTE_DOC_MAX_LINES 48
#define HTE_DOC_ROWS 5 /* objects shown as text */

struct hte_doctor {
	struct hte_doc_line lines[HTE_DOC_MAX_LINES];
	size_t nlines;
	struct hte_doc_obj *objs;
	size_t nobjs, cap_objs;
	unsigned procs_read, procs_unread;
	int as_root;         /* run by root: unreadable processes are not a matter of rights */
	char kernel[160];    /* "Linux 6.18.44 x86_64" */
	char cpu[200];       /* the processor in one line */
	uint64_t min_code;   /* objects with less code are not listed */
	int guest;           /* 1 guest, 0 not, -1 unknown */
	const struct hte_calib *calib; /* its figures for --json; NULL: not run */
};

void hte_doc_init(struct hte_doctor *d);
void hte_doc_free(struct hte_doctor *d);

/*
 * Adds a line (text and fix are printf formats; fix may be NULL).
 * Returns the line, or NULL when the table is full (the line is dropped).
 */
struct hte_doc_line *hte_doc_add(struct hte_doctor *d, enum hte_doc_section s, enum hte_doc_level l,
				 const char *id, const char *value, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* The worst level of all lines. */
enum hte_doc_level hte_doc_worst(const struct hte_doctor *d);
/* The exit status: 0 nothing blocks, 1 something blocks. */
int hte_doc_exit(const struct hte_doctor *d);

/* --- the checks (doctorchk.c): pure --- */

/* "6.18.44-fc" to 6 and 18.  Returns: 0, or -1. */
int hte_doc_kernel_version(const char *release, int *major, int *minor);

/* The THP settings, each the text of its sysfs file (NULL: no such file). */
struct hte_doc_thp {
	const char *enabled, *defrag, *shmem;
	const char *pmd_enabled;      /* hugepages-2048kB/enabled (Linux 6.8+), or NULL */
	const char *khugepaged_defrag, *khugepaged_sleep_ms;
	long pool_free;               /* free 2 MiB hugetlb pages; explicit copies need them */
};
void hte_doc_thp_check(struct hte_doctor *d, const struct hte_doc_thp *t);

/* The base page size: the library moves nothing on 16 and 64 KiB kernels. */
void hte_doc_pagesize_check(struct hte_doctor *d, uint64_t page);

/* PAGEMAP_SCAN: @rc of one scan of our own memory (0 works, -ENOTTY: absent). */
void hte_doc_pagemap_check(struct hte_doctor *d, int rc);

/*
 * Whether the page cache of file system @type (mount options @opts) holds
 * 2 MiB folios of code on Linux @kmaj.@kmin: as the library decides where
 * it reads copied code back (ext4 and XFS) and as docs/kernels.md found it
 * kernel by kernel (XFS from 5.18, ext4 from 6.16); tmpfs by its huge=
 * option.  @seen: bytes of code the kernel maps now from 2 MiB page-cache
 * pages of it, which decide it when not 0.  @how says how it was decided.
 * Returns: 1 or 0.
 */
int hte_doc_fs_folios(const char *type, const char *opts, int kmaj, int kmin, uint64_t seen, char *how,
		      size_t len);

/* One file system that holds big code running now (or /usr's when none runs). */
struct hte_doc_fs {
	char mnt[256], type[32], opts[256];
	unsigned dev_major, dev_minor;
	uint64_t code;      /* big code running from it */
	uint64_t seen;      /* of it, mapped from 2 MiB page-cache pages now */
	unsigned objects;
};
void hte_doc_fs_check(struct hte_doctor *d, const struct hte_doc_fs *fs, int kmaj, int kmin, int cache_mounted);

/*
 * One line of /proc/self/mountinfo: the device, mount point (escapes
 * decoded), type and super options.  Returns: 0, or -1 when it is not one.
 */
int hte_doc_mountinfo_line(const char *line, size_t len, unsigned *major, unsigned *minor, char *mnt,
			   size_t mlen, char *type, size_t tlen, char *opts, size_t olen);

/* Whether this is a guest, and how that was found. */
struct hte_doc_guest {
	int cpuid_hv;               /* CPUID.1:ECX[31]: 1, 0, -1 not known (no CPUID) */
	const char *hv_id;          /* leaf 0x40000000's signature, or NULL */
	const char *sys_hypervisor; /* /sys/hypervisor/type, or NULL */
	const char *dmi_vendor;     /* /sys/class/dmi/id/sys_vendor, or NULL */
	const char *dmi_product;    /* /sys/class/dmi/id/product_name, or NULL */
};
/* Returns 1 (a guest), 0, or -1 (nothing said); @how names the evidence. */
int hte_doc_is_guest(const struct hte_doc_guest *g, char *how, size_t len);
void hte_doc_guest_check(struct hte_doctor *d, const struct hte_doc_guest *g);

/*
 * The iTLB multihit line (/sys/devices/system/cpu/vulnerabilities/
 * itlb_multihit, NULL when absent), read in the light of whether this is a
 * guest and of the processor's vendor ("GenuineIntel", "AuthenticAMD",
 * NULL unknown); @nx: this kernel's /sys/module/kvm/parameters/nx_huge_pages
 * (the VMs it runs itself), or NULL; @calib: the calibration's verdict
 * (enum hte_calib_verdict; HTE_CALIB_UNKNOWN when none), which tells
 * whether the host splits a guest's code pages where only the host knows.
 */
void hte_doc_multihit_check(struct hte_doctor *d, const char *line, int guest, const char *vendor,
			    const char *nx, int calib);

/* The calibration: @rc of hte_calib_get(), @from where it came ("" run now). */
void hte_doc_calib_check(struct hte_doctor *d, int rc, const struct hte_calib *c, const char *from);

/*
 * /etc/ld.so.preload's entries (ld.so splits it at white space and ':'),
 * each into @out[i] (at most @max of @plen bytes).  Returns: how many.
 */
size_t hte_doc_preload_entries(const char *text, size_t len, char (*out)[512], size_t max);
/* True when @path names the preload library (its file name starts libhugetext-preload). */
int hte_doc_is_preload(const char *path, size_t len);

struct hte_doc_preload {
	int file;                 /* /etc/ld.so.preload: 1 read, 0 absent, -errno unreadable */
	char ours[512];           /* its entry naming the preload, "" none */
	int ours_exists;          /* that file exists */
	char missing[512];        /* an entry that names no file, "" none */
	char install[512];        /* the preload found on this machine (for the fix), "" none */
	unsigned procs_with;      /* running processes with the preload loaded */
	unsigned procs_big, big_with; /* processes with big code; of them with the preload */
	unsigned unread;          /* processes whose maps could not be read (not root) */
	char which[160];          /* a few of those with it: "node 4242, postgres 17", "" none */
};
void hte_doc_preload_check(struct hte_doctor *d, const struct hte_doc_preload *p);

/*
 * The policy file as the preload reads it: @rc and @err of ht_conf_load()
 * on @path, @c what it parsed; @pool_free the free 2 MiB pool pages.
 */
void hte_doc_policy_check(struct hte_doctor *d, const char *path, int rc, const char *err,
			  const struct ht_conf *c, long pool_free);

/* Why root must not trust a directory of /run (its lstat), or NULL. */
const char *hte_doc_dir_distrust(const struct stat *st);
/* Why root must not trust a state file there (its fstat), or NULL. */
const char *hte_doc_file_distrust(const struct stat *st);

/* The text service's state file (tools/serve.c's write_state), parsed. */
#define HTE_DOC_LAST 2
struct hte_doc_service {
	long pid, offers, pending, warms;
	long warmed, filled, evicted, refused; /* the *_total counts */
	char last_refused[HTE_DOC_LAST][256];  /* the latest refusals, newest last */
	unsigned nrefused;
	char last_filled[256], last_warmed[256];
};
/* Parses @json (json-c).  Returns: 0, or -1 when it is not the service's state. */
int hte_doc_service_parse(const char *json, size_t len, struct hte_doc_service *s);
/* True when /proc/PID/cmdline text @buf is `hugetext serve ...`. */
int hte_doc_is_serve(const char *buf, size_t len);

struct hte_doc_service_in {
	int policy_off;           /* service = 0 in a trusted policy file */
	const char *dir_refusal;  /* why /run/hugetext was not read, or NULL */
	int state;                /* 1 read and parsed, 0 absent, -1 garbage, -2 not trusted */
	const char *state_refusal;/* with -2: why */
	struct hte_doc_service s; /* with 1 */
	int running;              /* s.pid runs `hugetext serve` */
	int socket;               /* /run/hugetext/service.sock is a socket */
};
void hte_doc_service_check(struct hte_doctor *d, const struct hte_doc_service_in *in);

/* The shared text cache at HT_TEXT_CACHE_DIR. */
struct hte_doc_cache {
	int mounted;              /* something is mounted there */
	char type[32], opts[256]; /* what */
	int trusted;              /* the mount's root is root's, and sticky or writable by root alone */
	uint64_t size, used;
	int needed;               /* some big code runs from a file system without 2 MiB folios */
};
void hte_doc_cache_check(struct hte_doctor *d, const struct hte_doc_cache *c);

/* The hugetlb pools: @n sizes with their totals and free pages. */
void hte_doc_pool_check(struct hte_doctor *d, const struct hte_pool_count *p, size_t n);

/*
 * /proc/PID/status text: Threads and THP_enabled.  Pure.
 */
void hte_doc_proc_status(const char *buf, size_t len, struct hte_doc_proc *p);
/* utime + stime of /proc/PID/stat text, in clock ticks; -1 when unreadable. */
long long hte_doc_stat_ticks(const char *buf, size_t len);

/*
 * Adds one process's smaps to the objects: each executable mapping is
 * counted for the object it belongs to (a moved copy for the file beside
 * it), its huge pages by how (hte_status_smaps() on that mapping, with
 * @st's mounts telling the shared cache).  Returns: 0, or -1 out of memory.
 */
int hte_doc_add_smaps(struct hte_doctor *d, const char *buf, size_t len, const struct hte_status *st,
		      const struct hte_doc_proc *p);

/* Sorts the objects, biggest code first, and drops those below d->min_code. */
void hte_doc_sort_objects(struct hte_doctor *d);

/* What the machine offers an object: the facts its "why nothing" needs. */
struct hte_doc_env {
	int thp_ok;          /* copies can get 2 MiB pages */
	int cache_mounted;   /* the shared text cache */
	int service;         /* the text service runs */
};
/*
 * What @o has on huge pages, in plain words ("page cache 26.0 MiB",
 * "nothing: the preload is not loaded"), and, when something can be done,
 * the command in @fix.  Returns: the level of the row.
 */
enum hte_doc_level hte_doc_obj_verdict(const struct hte_doc_obj *o, const struct hte_doc_env *e, char *out,
				       size_t len, char *fix, size_t flen);

/* --- the outputs (doctorfmt.c) --- */
void hte_doc_text(FILE *f, const struct hte_doctor *d, const struct hte_doc_env *e);
void hte_doc_json(FILE *f, const struct hte_doctor *d, const struct hte_doc_env *e);

int hte_cmd_doctor(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
