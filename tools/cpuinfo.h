/* SPDX-License-Identifier: MIT */
/*
 * What the processor says of itself (CPUID on x86-64; what the kernel
 * exposes elsewhere): vendor, family, model, whether this is a guest, and
 * the instruction TLB's sizes.  Used by `hugetext measure` (the estimate
 * without counters, the vendor's events) and `hugetext doctor`.
 *
 * The decoding is pure (hte_cpu_decode on recorded leaves), so the tests
 * run it on fixtures of every family named in docs/measure.md; only
 * hte_cpu_read() executes CPUID.
 */
#ifndef HTE_CPUINFO_H
#define HTE_CPUINFO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One CPUID answer, as recorded: leaf, subleaf, eax..edx. */
struct hte_cpuid_leaf {
	uint32_t leaf, subleaf;
	uint32_t eax, ebx, ecx, edx;
};

/* Entries of one level of the instruction TLB; 0 where the CPU does not say. */
struct hte_itlb {
	unsigned l1_4k, l1_2m;  /* first level: 4 KiB and 2 MiB entries */
	unsigned l2_4k, l2_2m;  /* second level (shared or instruction) */
	int l2_shared;          /* the second level also holds data translations */
};

enum hte_vendor { HTE_VENDOR_OTHER, HTE_VENDOR_INTEL, HTE_VENDOR_AMD };

struct hte_cpu {
	enum hte_vendor vendor;
	char vendor_id[13];     /* "GenuineIntel", "AuthenticAMD", ... */
	unsigned family, model, stepping; /* display family and model */
	int hypervisor;         /* CPUID.1:ECX[31]: this is a guest */
	char hypervisor_id[13]; /* leaf 0x40000000's signature, "" when none */
	struct hte_itlb itlb;
	char tlb_source[64];    /* where the sizes came from: "CPUID 0x80000005/6", ... */
};

/*
 * Decodes @n recorded leaves into @c.  Returns: 0, or -1 when the leaves
 * say too little (no vendor leaf).  Pure.
 */
int hte_cpu_decode(struct hte_cpu *c, const struct hte_cpuid_leaf *leaves, size_t n);

/*
 * Records this processor's leaves that hte_cpu_decode() reads, at most
 * @max.  Returns: how many (0 without CPUID).
 */
size_t hte_cpu_record(struct hte_cpuid_leaf *out, size_t max);

/* Reads this processor (CPUID where there is one).  Returns: 0, or -1. */
int hte_cpu_read(struct hte_cpu *c);

/*
 * The code this TLB reaches: bytes covered by its 4 KiB entries (and by
 * its 2 MiB entries in *@reach_2m), the larger level counted.
 */
uint64_t hte_itlb_reach_4k(const struct hte_itlb *t, uint64_t *reach_2m);

/* "AMD family 25 model 17 (guest: KVMKVMKVM); iTLB 64+512 4 KiB, 64+2048 2 MiB entries" */
void hte_cpu_line(FILE *f, const struct hte_cpu *c);

#ifdef __cplusplus
}
#endif

#endif
