/* SPDX-License-Identifier: MIT */
/*
 * Hardware counters for `hugetext measure`, with perf_event_open(2)
 * itself (no perf program): instructions, cycles, the kernel's generic
 * iTLB-miss event, and where the processor is known its vendor's
 * page-walk and stall events.  Where nothing can be counted, one line
 * says what was not measured and why.
 *
 * The event tables and the figures derived from the counts are pure
 * (tested on the CPU fixtures); opening and reading are not.
 */
#ifndef HTE_PMU_H
#define HTE_PMU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuinfo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an event counts, for the figures. */
enum hte_ev_kind {
	HTE_EV_INSTRUCTIONS,
	HTE_EV_CYCLES,
	HTE_EV_ITLB_MISS,    /* the kernel's generic event: iTLB-load-misses */
	HTE_EV_WALK,         /* code page walks (Intel: completed; AMD: L1 and L2 iTLB missed) */
	HTE_EV_WALK_4K,      /* ... of them for 4 KiB pages (AMD) */
	HTE_EV_WALK_2M,      /* ... for 2 MiB pages (AMD) */
	HTE_EV_L2_HIT,       /* missed the first-level iTLB, found in the second (AMD) */
	HTE_EV_WALK_CYCLES,  /* cycles with a code page walk under way (Intel) */
	HTE_EV_TAG_STALL,    /* cycles fetch waited on the L1i tag, iTLB misses included (Intel) */
	HTE_EV_KINDS
};

enum hte_ev_type { HTE_EV_HARDWARE, HTE_EV_HW_CACHE, HTE_EV_RAW };

struct hte_pmu_event {
	const char *name;      /* as perf and the vendor name it */
	enum hte_ev_kind kind;
	enum hte_ev_type type;
	uint64_t config;       /* perf_event_attr.config */
};

#define HTE_PMU_MAX_EVENTS 10

/*
 * The events to count on processor @c: the three generic ones, then the
 * vendor's where its family and model are known.  @why_not (may be
 * NULL) says why there are no vendor events, or is "".  Returns: how
 * many were written (at most @max).  Pure.
 */
size_t hte_pmu_events(const struct hte_cpu *c, struct hte_pmu_event *out, size_t max,
		      char *why_not, size_t why_len);

/* What the machine lets us count, from what probing it found. */
struct hte_pmu_facts {
	int paranoid;          /* /proc/sys/kernel/perf_event_paranoid, -99 unknown */
	int privileged;        /* root or CAP_PERFMON */
	int has_cpu_pmu;       /* /sys/bus/event_source/devices/cpu (or cpu_core) exists */
	int hypervisor;
	char hypervisor_id[13];
	int open_errno;        /* of opening the instructions counter, 0 when it opened */
};

/*
 * One line saying what was not measured and why, or "" when counting
 * works; *@user_only is set when only user space can be counted
 * (perf_event_paranoid 2 without privilege).  Returns: 1 when nothing
 * can be counted, else 0.  Pure.
 */
int hte_pmu_explain(const struct hte_pmu_facts *f, char *why, size_t len, int *user_only);

/* Reads @f from this machine (opens and closes one counter). */
void hte_pmu_probe(struct hte_pmu_facts *f, const struct hte_cpu *c);

/*
 * Counts @n events in process @pid and the threads and children it makes
 * from its next execve() on (enable_on_exec, inherit).  fds[i] is -1
 * where event i could not be opened, with its errno in errs[i].
 * Returns: how many opened.
 */
int hte_pmu_open(const struct hte_pmu_event *ev, size_t n, pid_t pid, int user_only, int *fds,
		 int *errs);

/* Reads and closes the counters; counts[i] scaled for the time each ran, -1 where none. */
void hte_pmu_close(int *fds, size_t n, double *counts);

/* The figures of one run, from its counts. */
struct hte_pmu_figures {
	double instructions, cycles;
	double itlb_pki;       /* generic iTLB misses per 1000 instructions, -1 unknown */
	double walk_pki;       /* vendor code walks per 1000 instructions, -1 unknown */
	double walk_4k_share;  /* of the walks, the part for 4 KiB pages (AMD), -1 unknown */
	double l2_hit_pki;     /* AMD's second-level iTLB hits per 1000 instructions, -1 */
	double walk_cycles;    /* share of cycles with a code walk under way (Intel), -1 */
	double tag_stall;      /* share of cycles fetch stalled on the tag (Intel), -1 */
};

/* Pure: @counts[i] belongs to @ev[i] (-1: not counted). */
void hte_pmu_figures(const struct hte_pmu_event *ev, const double *counts, size_t n,
		     struct hte_pmu_figures *out);

#ifdef __cplusplus
}
#endif

#endif
