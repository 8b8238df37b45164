/* SPDX-License-Identifier: MIT */
/*
 * hugetext: move a running program's code onto huge pages.
 *
 * The library copies each executable segment's 2 MiB-aligned span into
 * fresh memory backed by huge pages and swaps the copy in with a single
 * mremap().  The code is never unmapped, so threads that run it during the
 * swap keep running, and any failure before the swap leaves the program
 * exactly as it was.
 *
 * Conventions: functions that can fail return 0 or a negative errno value.
 * Linking the library has no side effect: nothing happens until a function
 * is called.  The library never prints unless asked (ht_options.verbose).
 */
#ifndef HUGETEXT_H
#define HUGETEXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HT_VERSION_MAJOR 0
#define HT_VERSION_MINOR 1
#define HT_VERSION_PATCH 0

/*
 * Size of the huge pages the library moves: what a PMD maps on kernels
 * with 4 KiB pages (x86-64, Debian's arm64).  Other kernels are skipped
 * (HT_E_KERNEL_PAGES).
 */
#define HT_HUGE_PAGE_SIZE (2UL * 1024 * 1024)

/* Where the copy of the code comes from. */
enum ht_mode {
	HT_MODE_AUTO = 0,     /* explicit pages when the pool has room, else THP */
	HT_MODE_THP = 1,      /* transparent huge pages (MADV_HUGEPAGE) */
	HT_MODE_EXPLICIT = 2, /* pages from the hugetlb pool (MAP_HUGETLB) */
	HT_MODE_OFF = 3,      /* do nothing */
	/*
	 * A copy on 64 KiB folios (multi-size THP) or larger: the kernel
	 * gives the largest size it allows.  Where no 2 MiB page can be had,
	 * arm64 falls back to it from thp and auto by itself; on x86-64 it
	 * gains nothing and is only taken when asked for.
	 */
	HT_MODE_FOLIOS = 4,
};

/* What happened to one region. */
enum ht_status {
	HT_STATUS_OK = 0,      /* swapped in; see huge_bytes for what the kernel gave */
	HT_STATUS_SKIPPED = 1, /* left alone on purpose; see error for why */
	HT_STATUS_FAILED = 2,  /* a step failed; the region is exactly as before */
};

/*
 * Why a region was skipped or failed.  Values are stable; ht_error_str()
 * gives a short English text for each.
 */
enum ht_error {
	HT_E_NONE = 0,
	HT_E_TOO_SMALL,    /* skipped: the 2 MiB-aligned span is under 2 MiB */
	HT_E_ALREADY,      /* skipped: the span was already moved by hugetext */
	HT_E_MODE_OFF,     /* skipped: mode is off */
	HT_E_BUDGET,       /* skipped: the time budget was spent */
	HT_E_IGNORED,      /* skipped: the object matches the ignore pattern */
	HT_E_PROC,         /* failed: /proc/self/maps or smaps could not be read */
	HT_E_NOT_MAPPED,   /* failed: program headers and /proc/self/maps disagree */
	HT_E_ALLOC,        /* failed: no memory for the copy (mmap) */
	HT_E_ADVISE,       /* failed: madvise(MADV_HUGEPAGE) was refused */
	HT_E_NO_HUGE,      /* failed: the kernel gave no huge page for the copy */
	HT_E_FILL,         /* failed: the code could not be copied */
	HT_E_PROTECT,      /* failed: mprotect(PROT_READ|PROT_EXEC) was refused */
	HT_E_SWAP,         /* failed: mremap() could not swap the copy in */
	HT_E_POOL,         /* failed: too few free pages in the explicit pool */
	HT_E_PAGE_SIZE,    /* failed: the default hugetlb page size is not 2 MiB */
	HT_E_BAD_REGEX,    /* failed: the match or ignore pattern does not compile */
	HT_E_BAD_RANGE,    /* failed: the range given is not executable code */
	HT_E_NOT_SUPPORTED,/* failed: the platform or kernel lacks a feature */
	HT_E_MEMCG,        /* failed: the memory cgroup has too little room for the copy */
	HT_E_THP_OFF,      /* failed: transparent huge pages are set to "never" */
	HT_E_CHANGED,      /* failed: the code changed while it was copied (background move) */
	HT_E_BELOW_MIN,    /* skipped: no object has the policy's minimum of code (preload) */
	HT_E_DEFERRED,     /* skipped for now: a private copy waits until the process can pay for it */
	HT_E_NO_COPY,      /* skipped: only a private copy could move it, and copy is "never" */
	HT_E_THP_PROCESS,  /* skipped: the process turned THP off (PR_SET_THP_DISABLE), no pool room */
	HT_E_KERNEL_PAGES, /* skipped: the kernel's PMD does not map 2 MiB (16 or 64 KiB pages) */
	HT_E_COLD,         /* skipped: copy_hot, and the process has run none of this span's code */
	HT_E_FOLIOS_OFF,   /* failed: the kernel offers no 64 KiB folios (absent, or "never") */
	HT_E__COUNT
};

/* Settings for a remap.  Initialise with ht_options_init(). */
struct ht_options {
	enum ht_mode mode;
	int verbose;             /* nonzero: one line per region on stderr */
	const char *report_path; /* NULL, or a file that gets one JSON line per region */
	const char *match;       /* NULL, or an ERE: shared libraries to remap too */
	const char *ignore;      /* NULL, or an ERE: objects to leave alone */
	unsigned budget_ms;      /* 0: no limit; else stop starting regions after it */
	int share;               /* HT_SHARE_OFF, HT_SHARE_ON or HT_SHARE_AUTO (the default) */
	int perf_map;            /* nonzero: write /tmp/perf-PID.map entries */
	int fill;                /* 0: automatic; 1: pread from the file; 2: memcpy */
	const char *share_dir;   /* NULL, or the cache directory (on hugetlbfs) */
	/*
	 * Nonzero (the default): use the page cache's 2 MiB pages.  Code the
	 * kernel already maps from them is kept, not copied; and after a
	 * copy, the code's 2 MiB pages that no process maps any more are read
	 * again into the page cache as 2 MiB pages (ext4, XFS), so that later
	 * starts of the program need no copy.  Not with HT_MODE_EXPLICIT.
	 * Zero: always copy, and leave the page cache alone.
	 */
	int page_cache;
	/*
	 * When a span can only be moved by a private copy (no kept page-cache
	 * pages, no shared cache entry): HT_COPY_NOW (the API's default) copies
	 * it at once; HT_COPY_AUTO (the preload's default) leaves it for a
	 * background thread that copies it only once the process has used
	 * enough CPU time for the copy to pay (copy_after_ms); HT_COPY_NEVER
	 * never makes a private copy.
	 */
	int copy;
	/* With HT_COPY_AUTO: process CPU ms before the copy; -1: from its cost. */
	int copy_after_ms;
	/*
	 * Nonzero: a deferred private copy (HT_COPY_AUTO's background thread)
	 * takes only the 2 MiB ranges the process has run, from the first to
	 * the last (pages present in its page tables), and its wait counts
	 * those bytes, not the whole span's; later passes add what turns hot
	 * after the copy.  1 is the default; 0: the whole span.  A copy made
	 * at start (HT_COPY_NOW) or by HUGETEXT_ASYNC's background move, and
	 * one made before a fork(), always take the whole span.
	 */
	int copy_hot;
	/*
	 * Objects (the program or a library) with less code than this are
	 * left alone, reported as HT_E_BELOW_MIN; segments flagged with
	 * hugeedit's flag are moved whatever their size.  0: no minimum.
	 */
	uint64_t min_code;
	/*
	 * Nonzero: the huge pages at the two ends of a code segment also take
	 * the object's read-only bytes that share them (ELF headers, symbol
	 * tables, .rodata), which become executable in the copy; a page with
	 * anything writable, another object or a hole is never taken.  0 (the
	 * default): only pages of code, and the tail over free space.
	 */
	int cover_ends;
	/*
	 * Nonzero (the default): a span that only a private copy could move
	 * now, of a file only root can write, is handed to the text service
	 * (`hugetext serve`, when it runs), which warms the file's page cache
	 * or fills the shared cache so that later starts map the code huge
	 * with no copy; this process goes on as without it.  0: never.
	 */
	int service;
	/*
	 * Which shared libraries move besides the program, the ones match
	 * names and the flagged segments: HT_BIG_LIBRARIES_ON takes every
	 * library with at least min_code bytes of code (never less than one
	 * 2 MiB page) without its being named; HT_BIG_LIBRARIES_AUTO (the
	 * preload's default) does so unless match is set, which then names
	 * the libraries alone, as before; HT_BIG_LIBRARIES_OFF (the API's
	 * default) takes only what match names.
	 */
	int big_libraries;
};

/* ht_options.share */
enum {
	HT_SHARE_OFF = 0,
	HT_SHARE_ON = 1,   /* HUGETEXT_SHARE_DIR, the set-up's tmpfs cache, or a hugetlbfs mount */
	HT_SHARE_AUTO = 2, /* the set-up's huge tmpfs cache (HT_TEXT_CACHE_DIR) when it exists */
};

/* Where `hugetext setup` mounts the shared cache's tmpfs (huge=within_size). */
#define HT_TEXT_CACHE_DIR "/run/hugetext/text"

/* ht_options.copy */
enum {
	HT_COPY_NOW = 0,
	HT_COPY_AUTO = 1,
	HT_COPY_NEVER = 2,
};

/* ht_options.big_libraries: the order of HT_SHARE_* (0, 1, auto). */
enum {
	HT_BIG_LIBRARIES_OFF = 0,
	HT_BIG_LIBRARIES_ON = 1,
	HT_BIG_LIBRARIES_AUTO = 2,
};

/* The outcome for one region (one executable segment of one object). */
struct ht_region {
	char object[512];     /* path of the object, or "" if unknown */
	uintptr_t start, end; /* the 2 MiB-aligned span considered (end exclusive) */
	size_t bytes;         /* end - start: the bytes tried */
	/*
	 * Bytes of the span on huge pages, read from smaps.  In folios mode:
	 * the 2 MiB pages there, plus a lower bound on the 64 KiB folios
	 * (the kernel's counters, folios.h).
	 */
	size_t huge_bytes;
	enum ht_mode mode;    /* THP, EXPLICIT or FOLIOS when swapped; the request otherwise */
	double ms;            /* time spent on this region, in milliseconds */
	enum ht_status status;
	enum ht_error error;  /* HT_E_NONE when status is HT_STATUS_OK */
	int sys_errno;        /* errno of the failing call, or 0 */
	const char *fill;     /* "pread", "memcpy" or "" */
	const char *cache;    /* with share: "hit", "miss", "refused"; else "" */
	const char *cache_error; /* why the cache was refused, or "" */
	size_t kept_bytes;    /* bytes left on the kernel's 2 MiB page-cache pages, not copied */
	size_t warmed_bytes;  /* bytes read again into 2 MiB page-cache pages after the copy */
	/*
	 * Memory spent: bytes of huge pages private to this process (the copy;
	 * not the page cache's kept pages, not the shared cache's), and the
	 * bytes of code they hold.  The planner never lets the first exceed
	 * twice the second.
	 */
	size_t private_huge_bytes;
	size_t private_code_bytes;
	/*
	 * With copy_hot, when a private copy was made: the bytes of the span's
	 * 2 MiB ranges the process had run (hot) and had not (cold) when it was
	 * made; both 0 otherwise.
	 */
	size_t hot_bytes;
	size_t cold_bytes;
};

/**
 * ht_options_init - set every option to its default (auto mode, silent).
 * @opt: options to fill; must not be NULL.
 */
void ht_options_init(struct ht_options *opt);

/**
 * ht_options_from_env - read the HUGETEXT_* environment variables into @opt.
 * @opt: options, already initialised; fields with no variable stay as they are.
 *
 * Uses secure_getenv(), so a set-user-ID program ignores them.  Invalid
 * values are ignored (an unknown mode means auto).
 *
 * Returns: 0, or -EINVAL if @opt is NULL.
 */
int ht_options_from_env(struct ht_options *opt);

/**
 * ht_remap - move the main executable's code (and, with opt->match, the
 * matching shared libraries'; with opt->big_libraries, the big ones')
 * onto huge pages.
 * @opt: options, or NULL for the defaults.
 * @regions: array that receives one entry per region considered, or NULL.
 * @max: number of entries @regions can hold.
 * @count: receives the number of regions considered (may exceed @max), or NULL.
 *
 * Returns: 0 when no region failed; the negative errno of the first failure
 * otherwise (-EIO when it had none); -EINVAL for bad arguments.  A failed
 * region is left exactly as it was.
 */
int ht_remap(const struct ht_options *opt, struct ht_region *regions,
	     size_t max, size_t *count);

/**
 * ht_remap_range - move the code in [@from, @to) onto huge pages.
 * @opt: options, or NULL for the defaults.
 * @from: start of the range; it is rounded up to 2 MiB.
 * @to: end of the range; it is rounded down to 2 MiB.
 * @region: receives the outcome, or NULL.
 *
 * The range must be private executable memory.
 *
 * Returns: 0 on success or skip, a negative errno on failure.
 */
int ht_remap_range(const struct ht_options *opt, const void *from,
		   const void *to, struct ht_region *region);

/**
 * ht_thp_available - tell whether transparent huge pages can back code.
 *
 * Returns: 1 when THP is enabled in "always" or "madvise" mode, 0 when it
 * is "never" or absent, a negative errno when the setting cannot be read.
 */
int ht_thp_available(void);

/**
 * ht_status_str - name of a status: "ok", "skipped" or "failed".
 *
 * Returns: a static string; "unknown" for values out of range.
 */
const char *ht_status_str(enum ht_status status);

/**
 * ht_mode_str - name of a mode: "auto", "thp", "explicit", "off" or "folios".
 *
 * Returns: a static string; "unknown" for values out of range.
 */
const char *ht_mode_str(enum ht_mode mode);

/**
 * ht_error_str - short description of an error value.
 *
 * Returns: a static string; "unknown error" for values out of range.
 */
const char *ht_error_str(enum ht_error error);

/**
 * ht_version - the library's version as "MAJOR.MINOR.PATCH".
 *
 * Returns: a static string.
 */
const char *ht_version(void);

#ifdef __cplusplus
}
#endif

#endif /* HUGETEXT_H */
