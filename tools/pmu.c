/* SPDX-License-Identifier: MIT */
/*
 * Hardware counters (pmu.h).
 *
 * The vendors' encodings, as perf_event_attr.config for a raw event:
 * Intel event | umask << 8 | cmask << 24; AMD event[7:0] | umask << 8.
 * Taken from the public event lists: Intel's perfmon files and the
 * kernel's copies of them (tools/perf/pmu-events/arch/x86/<cpu>/
 * virtual-memory.json and frontend.json: haswell, skylake, skylakex,
 * icelake, icelakex, sapphirerapids, alderlake) and AMD's Processor
 * Programming Reference for families 17h, 19h and 1Ah as the kernel has
 * them (tools/perf/pmu-events/arch/x86/amdzen1..amdzen5/branch.json):
 *   ITLB_MISSES.WALK_COMPLETED   Haswell to Coffee Lake 0x85/0x0e;
 *                                Ice Lake and later 0x11/0x0e
 *   ITLB_MISSES.WALK_ACTIVE      0x85/0x10 (0x11/0x10 from Ice Lake),
 *                                cmask 1: cycles with a walk under way
 *                                (Haswell's WALK_DURATION, no cmask)
 *   ICACHE_64B.IFTAG_STALL,      0x83/0x04 (Skylake on; Golden Cove names
 *   ICACHE_TAG.STALLS            it ICACHE_TAG.STALLS): perf's
 *                                tma_itlb_misses metric is it / cycles
 *   bp_l1_tlb_miss_l2_tlb_hit    PMCx084
 *   bp_l1_tlb_miss_l2_tlb_miss   PMCx085, umask 0xff; .if4k 0x01, .if2m
 *                                0x02, .coalesced_4k 0x08 (Zen 3 on)
 */
#include "pmu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RAW(ev, umask, cmask) ((uint64_t)(ev) | (uint64_t)(umask) << 8 | (uint64_t)(cmask) << 24)

enum intel_gen { GEN_NONE, GEN_HASWELL, GEN_SKYLAKE, GEN_ICELAKE, GEN_GOLDEN_COVE };

/* Display models of family 6, by the generation their events belong to. */
static enum intel_gen intel_generation(unsigned model)
{
	static const struct {
		unsigned char model;
		enum intel_gen gen;
	} t[] = {
		/* Haswell, Broadwell */
		{ 0x3c, GEN_HASWELL }, { 0x3f, GEN_HASWELL }, { 0x45, GEN_HASWELL }, { 0x46, GEN_HASWELL },
		{ 0x3d, GEN_HASWELL }, { 0x47, GEN_HASWELL }, { 0x4f, GEN_HASWELL }, { 0x56, GEN_HASWELL },
		/* Skylake, Skylake-X/Cascade Lake/Cooper Lake, Kaby/Coffee/Comet Lake */
		{ 0x4e, GEN_SKYLAKE }, { 0x5e, GEN_SKYLAKE }, { 0x55, GEN_SKYLAKE }, { 0x8e, GEN_SKYLAKE },
		{ 0x9e, GEN_SKYLAKE }, { 0xa5, GEN_SKYLAKE }, { 0xa6, GEN_SKYLAKE },
		/* Ice Lake client and server, Tiger Lake, Rocket Lake */
		{ 0x7d, GEN_ICELAKE }, { 0x7e, GEN_ICELAKE }, { 0x6a, GEN_ICELAKE }, { 0x6c, GEN_ICELAKE },
		{ 0x8c, GEN_ICELAKE }, { 0x8d, GEN_ICELAKE }, { 0xa7, GEN_ICELAKE },
		/* Sapphire/Emerald/Granite Rapids, Alder/Raptor/Meteor/Arrow Lake (their P-cores) */
		{ 0x8f, GEN_GOLDEN_COVE }, { 0xcf, GEN_GOLDEN_COVE }, { 0xad, GEN_GOLDEN_COVE },
		{ 0xae, GEN_GOLDEN_COVE }, { 0x97, GEN_GOLDEN_COVE }, { 0x9a, GEN_GOLDEN_COVE },
		{ 0xb7, GEN_GOLDEN_COVE }, { 0xba, GEN_GOLDEN_COVE }, { 0xbf, GEN_GOLDEN_COVE },
		{ 0xaa, GEN_GOLDEN_COVE }, { 0xac, GEN_GOLDEN_COVE }, { 0xc5, GEN_GOLDEN_COVE },
		{ 0xc6, GEN_GOLDEN_COVE },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].model == model)
			return t[i].gen;
	return GEN_NONE;
}

static size_t add(struct hte_pmu_event *out, size_t n, size_t max, const char *name,
		  enum hte_ev_kind kind, enum hte_ev_type type, uint64_t config)
{
	if (n < max)
		out[n] = (struct hte_pmu_event){ name, kind, type, config };
	return n + 1;
}

static size_t intel_events(enum intel_gen g, struct hte_pmu_event *out, size_t n, size_t max)
{
	unsigned walk_ev = g >= GEN_ICELAKE ? 0x11 : 0x85;

	n = add(out, n, max, "ITLB_MISSES.WALK_COMPLETED", HTE_EV_WALK, HTE_EV_RAW, RAW(walk_ev, 0x0e, 0));
	if (g == GEN_HASWELL)
		return add(out, n, max, "ITLB_MISSES.WALK_DURATION", HTE_EV_WALK_CYCLES, HTE_EV_RAW,
			   RAW(0x85, 0x10, 0));
	n = add(out, n, max, "ITLB_MISSES.WALK_ACTIVE", HTE_EV_WALK_CYCLES, HTE_EV_RAW, RAW(walk_ev, 0x10, 1));
	return add(out, n, max, g == GEN_GOLDEN_COVE ? "ICACHE_TAG.STALLS" : "ICACHE_64B.IFTAG_STALL",
		   HTE_EV_TAG_STALL, HTE_EV_RAW, RAW(0x83, 0x04, 0));
}

static size_t amd_events(unsigned family, struct hte_pmu_event *out, size_t n, size_t max)
{
	/* Zen 3 on also count walks to 4 KiB pages the TLB coalesced into larger entries. */
	unsigned small = family >= 0x19 ? 0x09 : 0x01;

	n = add(out, n, max, "bp_l1_tlb_miss_l2_tlb_miss", HTE_EV_WALK, HTE_EV_RAW, RAW(0x85, 0xff, 0));
	n = add(out, n, max, family >= 0x19 ? "bp_l1_tlb_miss_l2_tlb_miss.if4k+coalesced_4k"
					    : "bp_l1_tlb_miss_l2_tlb_miss.if4k",
		HTE_EV_WALK_4K, HTE_EV_RAW, RAW(0x85, small, 0));
	n = add(out, n, max, "bp_l1_tlb_miss_l2_tlb_miss.if2m", HTE_EV_WALK_2M, HTE_EV_RAW, RAW(0x85, 0x02, 0));
	return add(out, n, max, "bp_l1_tlb_miss_l2_tlb_hit", HTE_EV_L2_HIT, HTE_EV_RAW, RAW(0x84, 0x00, 0));
}

size_t hte_pmu_events(const struct hte_cpu *c, struct hte_pmu_event *out, size_t max,
		      char *why_not, size_t why_len)
{
	size_t n = 0;
	enum intel_gen g;

	n = add(out, n, max, "instructions", HTE_EV_INSTRUCTIONS, HTE_EV_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	n = add(out, n, max, "cycles", HTE_EV_CYCLES, HTE_EV_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	n = add(out, n, max, "iTLB-load-misses", HTE_EV_ITLB_MISS, HTE_EV_HW_CACHE,
		PERF_COUNT_HW_CACHE_ITLB | PERF_COUNT_HW_CACHE_OP_READ << 8 |
			PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
	if (why_not && why_len)
		why_not[0] = 0;
	if (c->vendor == HTE_VENDOR_INTEL && c->family == 6 && (g = intel_generation(c->model)) != GEN_NONE)
		n = intel_events(g, out, n, max);
	else if (c->vendor == HTE_VENDOR_AMD && c->family >= 0x17 && c->family <= 0x1a)
		n = amd_events(c->family, out, n, max);
	else if (why_not && why_len)
		snprintf(why_not, why_len,
			 "no page-walk events are known for %s family %u model %u: the generic iTLB event only",
			 c->vendor_id[0] ? c->vendor_id : "this processor", c->family, c->model);
	return n < max ? n : max;
}

int hte_pmu_explain(const struct hte_pmu_facts *f, char *why, size_t len, int *user_only)
{
	*user_only = 0;
	why[0] = 0;
	if (!f->has_cpu_pmu && f->hypervisor) {
		snprintf(why, len,
			 "not measured: this is a virtual machine (%s) whose hypervisor gives it no "
			 "performance counters (no CPU PMU in /sys/bus/event_source/devices)",
			 f->hypervisor_id[0] ? f->hypervisor_id : "hypervisor");
		return 1;
	}
	if (!f->has_cpu_pmu) {
		snprintf(why, len,
			 "not measured: the kernel has no driver for this processor's counters (no CPU "
			 "PMU in /sys/bus/event_source/devices)");
		return 1;
	}
	if (f->paranoid > 2 && !f->privileged) {
		snprintf(why, len,
			 "not measured: kernel.perf_event_paranoid is %d, which lets only root (or "
			 "CAP_PERFMON) count; run as root, or sysctl kernel.perf_event_paranoid=2",
			 f->paranoid);
		return 1;
	}
	if (f->open_errno) {
		const char *what = f->open_errno == EACCES || f->open_errno == EPERM
					   ? "counting is not permitted here (a seccomp filter or a container's rules)"
				   : f->open_errno == ENOENT || f->open_errno == EOPNOTSUPP
					   ? "the processor's counters are not there"
					   : "opening a counter failed";
		snprintf(why, len, "not measured: %s: perf_event_open: %s", what, strerror(f->open_errno));
		return 1;
	}
	if (f->paranoid == 2 && !f->privileged) {
		*user_only = 1;
		snprintf(why, len, "user space only: kernel.perf_event_paranoid is 2 (root counts the kernel too)");
	}
	return 0;
}

static long perf_open(struct perf_event_attr *a, pid_t pid)
{
	return syscall(SYS_perf_event_open, a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The type of the core PMU for raw events: "cpu", or a hybrid's performance cores. */
static uint32_t raw_type(void)
{
	const char *paths[] = { "/sys/bus/event_source/devices/cpu/type",
				"/sys/bus/event_source/devices/cpu_core/type" };

	for (size_t i = 0; i < 2; i++) {
		FILE *f = fopen(paths[i], "re");
		unsigned t;

		if (!f)
			continue;
		if (fscanf(f, "%u", &t) == 1) {
			fclose(f);
			return t;
		}
		fclose(f);
	}
	return PERF_TYPE_RAW;
}

static void attr_of(const struct hte_pmu_event *e, int user_only, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = e->type == HTE_EV_HARDWARE ? PERF_TYPE_HARDWARE
		  : e->type == HTE_EV_HW_CACHE ? PERF_TYPE_HW_CACHE
					       : raw_type();
	a->config = e->config;
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a->exclude_kernel = user_only;
	a->exclude_hv = 1;
}

/* CAP_PERFMON (38) or CAP_SYS_ADMIN (21) in the effective set: the kernel lets it count as root. */
static int has_perfmon(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *s = fopen("/proc/self/status", "re");

	if (!s)
		return 0;
	while (fgets(line, sizeof(line), s))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(s);
	return (eff >> 38 & 1) || (eff >> 21 & 1);
}

void hte_pmu_probe(struct hte_pmu_facts *f, const struct hte_cpu *c)
{
	struct hte_pmu_event ev = { "instructions", HTE_EV_INSTRUCTIONS, HTE_EV_HARDWARE,
				    PERF_COUNT_HW_INSTRUCTIONS };
	struct perf_event_attr a;
	FILE *p = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	long fd;

	memset(f, 0, sizeof(*f));
	f->paranoid = -99;
	if (p) {
		if (fscanf(p, "%d", &f->paranoid) != 1)
			f->paranoid = -99;
		fclose(p);
	}
	f->privileged = geteuid() == 0 || has_perfmon();
	f->has_cpu_pmu = access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
			 access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;
	f->hypervisor = c->hypervisor;
	memcpy(f->hypervisor_id, c->hypervisor_id, sizeof(f->hypervisor_id));
	attr_of(&ev, f->paranoid >= 2 && !f->privileged, &a);
	a.disabled = 1;
	fd = perf_open(&a, 0);
	if (fd < 0)
		f->open_errno = errno;
	else
		close((int)fd);
}

int hte_pmu_open(const struct hte_pmu_event *ev, size_t n, pid_t pid, int user_only, int *fds,
		 int *errs)
{
	int opened = 0;

	for (size_t i = 0; i < n; i++) {
		struct perf_event_attr a;
		long fd;

		attr_of(&ev[i], user_only, &a);
		a.disabled = 1;
		a.enable_on_exec = 1;
		a.inherit = 1;
		fd = perf_open(&a, pid);
		fds[i] = fd < 0 ? -1 : (int)fd;
		errs[i] = fd < 0 ? errno : 0;
		opened += fd >= 0;
	}
	return opened;
}

void hte_pmu_close(int *fds, size_t n, double *counts)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v[3] = { 0, 0, 0 };

		counts[i] = -1;
		if (fds[i] < 0)
			continue;
		/* value, time enabled, time running: scaled where the counter was shared. */
		if (read(fds[i], v, sizeof(v)) == (ssize_t)sizeof(v))
			/* never enabled (v[1] 0): the command did not get to run */
			counts[i] = v[2] > 0 ? (double)v[0] * ((double)v[1] / (double)v[2]) : 0;
		close(fds[i]);
		fds[i] = -1;
	}
}

void hte_pmu_figures(const struct hte_pmu_event *ev, const double *counts, size_t n,
		     struct hte_pmu_figures *out)
{
	double k[HTE_EV_KINDS];

	for (int i = 0; i < HTE_EV_KINDS; i++)
		k[i] = -1;
	for (size_t i = 0; i < n; i++)
		if (counts[i] >= 0)
			k[ev[i].kind] = counts[i];
	out->instructions = k[HTE_EV_INSTRUCTIONS];
	out->cycles = k[HTE_EV_CYCLES];
#define PER_KI(x) (k[x] >= 0 && k[HTE_EV_INSTRUCTIONS] > 0 ? 1000 * k[x] / k[HTE_EV_INSTRUCTIONS] : -1)
#define SHARE(x) (k[x] >= 0 && k[HTE_EV_CYCLES] > 0 ? k[x] / k[HTE_EV_CYCLES] : -1)
	out->itlb_pki = PER_KI(HTE_EV_ITLB_MISS);
	out->walk_pki = PER_KI(HTE_EV_WALK);
	out->l2_hit_pki = PER_KI(HTE_EV_L2_HIT);
	out->walk_cycles = SHARE(HTE_EV_WALK_CYCLES);
	out->tag_stall = SHARE(HTE_EV_TAG_STALL);
#undef PER_KI
#undef SHARE
	out->walk_4k_share = -1;
	if (k[HTE_EV_WALK_4K] >= 0 && k[HTE_EV_WALK_2M] >= 0 && k[HTE_EV_WALK_4K] + k[HTE_EV_WALK_2M] > 0)
		out->walk_4k_share = k[HTE_EV_WALK_4K] / (k[HTE_EV_WALK_4K] + k[HTE_EV_WALK_2M]);
}
