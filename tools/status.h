/* SPDX-License-Identifier: MIT */
/*
 * hugetext status: which processes of the machine have code worth moving,
 * and how much of it sits on huge pages, by which path.  What is gathered
 * lands in struct hte_status; reading smaps text and writing the three
 * outputs are pure functions on it (statusfmt.c), tested with fixed text.
 */
#ifndef HTE_STATUS_H
#define HTE_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "poolcmd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How code came to sit on huge pages. */
enum hte_how {
	HTE_HOW_THP = 0,      /* an anonymous copy on transparent huge pages */
	HTE_HOW_HUGETLB,      /* a copy on hugetlbfs (explicit pages) */
	HTE_HOW_PAGE_CACHE,   /* the file's own 2 MiB page-cache pages (FilePmdMapped) */
	HTE_HOW_SHARED_CACHE, /* a file of the shared text cache */
	HTE_HOW_TMPFS,        /* a file of a huge tmpfs (ShmemPmdMapped) */
	HTE_HOW_FOLIOS,       /* large folios smaller than a PMD page (root only: pagemap, kpageflags) */
	HTE_HOW_N,
};

/* "thp", "hugetlb", "page_cache", "shared_cache", "tmpfs", "folios". */
const char *hte_how_name(enum hte_how how);

struct hte_proc {
	long pid;
	char program[256];
	uint64_t code;             /* bytes of executable mappings */
	uint64_t huge[HTE_HOW_N];  /* of them on huge pages, by path */
	int folios_seen;           /* huge[HTE_HOW_FOLIOS] was counted (else it is not known) */
	int preload;               /* the preload is mapped (libhugetext-preload.so) */
	unsigned long long mntns;  /* its mount namespace (st_ino of /proc/PID/ns/mnt); 0 unknown */
	size_t container;          /* 1 + its index in hte_status.ctrs; 0: in none of the records */
};

struct hte_oci_record;

/* A container the OCI hook recorded (hugetext oci-hook; /run/hugetext/containers). */
struct hte_container {
	struct hte_oci_record *rec; /* malloc'ed */
	int running;                /* its process runs, with the recorded start time */
	size_t nprocs, npreload;    /* processes listed in its mount namespace; of them with the preload */
	uint64_t code;
	uint64_t huge[HTE_HOW_N];
};

/* A process whose smaps could not be read. */
struct hte_unread {
	long pid;
	int err; /* positive errno */
};

/* A mount that can hold huge pages: hugetlbfs, or tmpfs with huge=. */
struct hte_huge_mount {
	char path[512];
	char type[16];    /* "hugetlbfs" or "tmpfs" */
	uint64_t page_kb; /* hugetlbfs: its page size; 0 for tmpfs */
	char huge[16];    /* tmpfs: the huge= option */
};

struct hte_pool_count {
	uint64_t kb;
	long total, free; /* -1: unreadable */
};

/* The shared text cache's tmpfs at HT_TEXT_CACHE_DIR, as hugetext setup mounts it. */
struct hte_text_cache {
	int mounted;            /* 0: nothing mounted there (nothing else is filled) */
	uint64_t size, used;    /* bytes: the mount's limit, and in use */
	uint64_t entries, entry_bytes;
	unsigned users;         /* hugetext-UID directories */
	uint64_t shared_entries, shared_bytes; /* the text service's, in shared/ */
};

/* Where the text service (tools/serve.c) says what it did. */
#define HTE_SERVE_STATE "/run/hugetext/service.json"

/* The text service's state file, read as it is. */
struct hte_service {
	int present;   /* the state file exists */
	int running;   /* its pid is alive */
	char raw[16384];
};

/* A number after "KEY": in @json; -1 when absent.  Pure. */
long hte_json_number(const char *json, const char *key);
/*
 * The @i-th string of the list "KEY":[...] in @json, unescaped into @out.
 * Returns: 0, or -1 when there is no such item.  Pure.
 */
int hte_json_list_item(const char *json, const char *key, unsigned i, char *out, size_t len);

struct hte_status {
	uint64_t min_code;
	struct hte_proc *procs;
	size_t nprocs, cap_procs;
	struct hte_unread *unread;
	size_t nunread, cap_unread;
	struct hte_pool_count pools[HTE_MAX_SIZES];
	size_t npools;
	struct hte_huge_mount *mounts;
	size_t nmounts, cap_mounts;
	char share_dir[512];   /* $HUGETEXT_SHARE_DIR, or "" */
	char thp_enabled[32], thp_defrag[32], thp_shmem[32]; /* "" when unreadable */
	struct hte_text_cache text_cache;
	struct hte_service service;
	int folios_visible;    /* /proc/kpageflags opened: the processes' folios are counted */
	struct hte_container *ctrs;
	size_t nctrs, cap_ctrs;
	char records[512];     /* the hook's records directory */
	int records_unread;    /* it exists but could not be read (not root) */
};

/*
 * Sums the executable mappings of one process's smaps text into @p's code
 * and huge counts.  A mapping counts as the shared cache when its file
 * lies in @st's share_dir, or in a hugetext-UID directory right under one
 * of @st's mounts.
 */
void hte_status_smaps(const char *buf, size_t len, const struct hte_status *st, struct hte_proc *p);

/*
 * One line of /proc/self/mounts text: fills @m and returns 1 when it is a
 * hugetlbfs mount or a tmpfs mounted with huge=always, within_size or
 * advise; 0 otherwise.  @default_kb is the page size of a hugetlbfs
 * without pagesize=.
 */
int hte_status_mount_line(const char *line, size_t len, uint64_t default_kb, struct hte_huge_mount *m);

/* True when /proc/PID/stat text is a kernel thread's (PF_KTHREAD): it has no code of its own. */
int hte_stat_is_kthread(const char *buf, size_t len);

/*
 * Code on large folios smaller than a PMD page (64 KiB to 1 MiB): smaps
 * counts PMD-mapped pages only, so a copy on 64 KiB folios (mTHP) shows
 * none there.  Root can see them: /proc/PID/pagemap gives the frames of a
 * process's pages, /proc/kpageflags each frame's flags, whose head and
 * tail bits tell where a folio starts and ends (the kernel's
 * Documentation/admin-guide/mm/pagemap.rst).  Counted by 64 KiB pieces:
 * 16 pages of a 64 KiB-aligned address.
 */
#define HTE_PIECE_PAGES 16u
#define HTE_BLOCK_PAGES 512u /* a PMD page's frames: folios smaller than it lie inside one block */
#define HTE_FRAMES_HIDDEN UINT64_MAX

/*
 * The first frame of a 64 KiB piece, from its 16 pagemap entries @pm:
 * when all are present, on consecutive frames from a 16-aligned one.
 * 0 when not; HTE_FRAMES_HIDDEN when a present page shows frame 0 (the
 * kernel hides frames from the unprivileged).  Pure.
 */
uint64_t hte_piece_frame(const uint64_t *pm);

/*
 * Whether the 16 frames from @pfn lie inside one large folio (mapped
 * anonymous or file memory, not hugetlb) of 64 KiB to 1 MiB, a PMD page
 * being counted by smaps.  @fl holds the kpageflags of the @n frames from
 * @block, the 512-aligned block that holds @pfn (fewer than 512 at the end
 * of memory).  Returns 1 or 0.  Pure.
 */
int hte_piece_in_folio(const uint64_t *fl, size_t n, uint64_t block, uint64_t pfn);

/*
 * Adds a container: @rec is copied, @running says whether its process
 * still runs.  Returns: 0, or -1 when out of memory.
 */
int hte_status_add_container(struct hte_status *st, const struct hte_oci_record *rec, int running);
/*
 * Puts each listed process in the running container whose mount namespace
 * it shares, and sums each container's processes.  Pure.
 */
void hte_status_group(struct hte_status *st);
/* Code bytes of @c copied privately (thp, hugetlb, folios) and shared (page cache, caches). */
uint64_t hte_container_copied(const struct hte_container *c);
uint64_t hte_container_shared(const struct hte_container *c);
/* The containers' part of each output (statusctr.c). */
void hte_status_text_containers(FILE *f, const struct hte_status *st);
void hte_status_json_containers(FILE *f, const struct hte_status *st);
void hte_status_prom_containers(FILE *f, const struct hte_status *st);
/* Reads the records of @dir into @st (status.c; not pure). */
int hte_status_read_records(struct hte_status *st, const char *dir);

/* Adds to the growing arrays; -1 when out of memory. */
int hte_status_add_proc(struct hte_status *st, const struct hte_proc *p);
int hte_status_add_unread(struct hte_status *st, long pid, int err);
int hte_status_add_mount(struct hte_status *st, const struct hte_huge_mount *m);
void hte_status_free(struct hte_status *st);

/* The three outputs. */
void hte_status_text(FILE *f, const struct hte_status *st);
void hte_status_json(FILE *f, const struct hte_status *st);
void hte_status_prometheus(FILE *f, const struct hte_status *st);

int hte_cmd_status(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
