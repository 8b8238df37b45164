/* SPDX-License-Identifier: MIT */
/*
 * hugetext measure: what hugetext does for one program on this machine.
 * measure.c runs the variants; measurerun.c runs a command once;
 * measurefmt.c writes the results (pure, tested on fixtures).
 */
#ifndef HTE_MEASURE_H
#define HTE_MEASURE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "calibrate.h"
#include "cpuinfo.h"
#include "footprint.h"
#include "pmu.h"
#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HTE_M_MAX_VARIANTS 4
#define HTE_M_MAX_ROUNDS 100
#define HTE_M_MAX_NOTES 12

/* Code on huge pages in one process, bytes, as its smaps shows it. */
struct hte_m_huge {
	int known;              /* smaps was read (at the process's exit) */
	uint64_t code;          /* its executable mappings */
	uint64_t copy;          /* private copies (AnonHugePages) */
	uint64_t page_cache;    /* the kernel's 2 MiB page-cache pages (FilePmdMapped) */
	uint64_t shared;        /* the shared cache (tmpfs or hugetlbfs) */
	uint64_t hugetlb;       /* other hugetlb pages */
};

/* The preload's report lines of one run (HUGETEXT_REPORT), summed. */
struct hte_m_report {
	unsigned lines, ok, failed, deferred, offered;
	uint64_t huge, kept, copied, warmed;
	char cache[16];          /* the first "cache" value seen: hit, miss, offered, ... */
	char error[160];         /* the first error of a line that failed */
};

struct hte_m_run {
	double wall, cpu;        /* seconds */
	int status;              /* exit status, 128 + signal */
	double counts[HTE_PMU_MAX_EVENTS];
	struct hte_m_report rep;
};

struct hte_m_variant {
	char name[16];           /* plain, defaults, copy, share */
	char settings[256];      /* the environment it adds, for people */
	unsigned nruns;
	struct hte_m_run runs[HTE_M_MAX_ROUNDS];
	struct hte_m_huge check;     /* smaps at the exit of its untimed check run */
	struct hte_m_report check_rep;
	struct hte_paired wall, cpu; /* against plain, round by round (not plain's own) */
	unsigned decided_at;         /* the round the wall time was first decided, 0 never */
	struct hte_pmu_figures fig;  /* from the medians of its runs' counts */
	char na[256];                /* why it was not timed; "" when it was */
};

struct hte_measure {
	int argc;
	char *const *argv;       /* the command as given */
	char program[PATH_MAX];  /* argv[0] found */
	unsigned max_rounds, rounds;
	int fixed;               /* all rounds, no early stop */
	int stopped_early;
	double margin;
	struct hte_cpu cpu;
	int have_calib;
	struct hte_calib calib;
	char calib_why[256];     /* when there is none */
	int counters;            /* counted */
	char counters_why[256];  /* what was not measured and why, "" */
	char vendor_why[256];    /* no vendor events known, "" */
	size_t nev;
	struct hte_pmu_event ev[HTE_PMU_MAX_EVENTS];
	int ev_errno[HTE_PMU_MAX_EVENTS]; /* of opening each, 0 */
	int have_fp;
	struct hte_footprint fp;
	struct hte_estimate est;
	char isolation[512];     /* how the variants were kept apart */
	unsigned nvar;
	struct hte_m_variant var[HTE_M_MAX_VARIANTS];
	unsigned nnotes;
	char notes[HTE_M_MAX_NOTES][256];
};

/* Adds a note (at most HTE_M_MAX_NOTES; the same one once). */
void hte_m_note(struct hte_measure *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The paired comparisons and figures from the runs so far.  Pure. */
void hte_m_compare(struct hte_measure *m);

/* Text for people, one JSON object for scripts.  Pure. */
void hte_m_text(FILE *f, const struct hte_measure *m);
void hte_m_json(FILE *f, const struct hte_measure *m);

/* Sums report lines (one JSON object a line) into @r; other lines are skipped.  Pure. */
void hte_m_report_parse(const char *buf, size_t len, struct hte_m_report *r);

/* --- measurerun.c: one run of a command --- */

struct hte_run_opts {
	const char *path;        /* the file to execute (NULL: argv[0]) */
	char *const *argv;       /* argv[0] as the user gave it: a program may look at its name */
	char *const *envp;
	double timeout;          /* seconds, 0: none */
	int trace_exit;          /* stop it at its exit (ptrace) to read its smaps and pagemap */
	unsigned sample_ms;      /* with trace_exit: the footprint's window, 0 none */
	const struct hte_pmu_event *ev;
	size_t nev;
	int user_only;
	const char *stderr_path; /* the command's stderr goes there (NULL: /dev/null) */
	const volatile int *stop;/* set by a signal handler: end the run */
};

struct hte_run_out {
	double wall, cpu;
	int status;              /* exit status, 128 + signal; -1 not run */
	int timed_out, interrupted;
	int exec_errno;          /* the command could not be started */
	int traced;              /* its exit was seen */
	double counts[HTE_PMU_MAX_EVENTS];
	int ev_errno[HTE_PMU_MAX_EVENTS];
	struct hte_m_huge huge;
	struct hte_footprint fp;
};

/* Runs the command once.  Returns: 0 when it ran (whatever its status), or -1. */
int hte_run_once(const struct hte_run_opts *o, struct hte_run_out *out);

/* Leaves @path's page cache in 4 KiB pages: dropped, then read 4 KiB at a time. */
int hte_small_page_cache(const char *path);

#ifdef __cplusplus
}
#endif

#endif
