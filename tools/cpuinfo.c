/* SPDX-License-Identifier: MIT */
/*
 * The processor's description (cpuinfo.h): decoded from recorded CPUID
 * leaves, so that the decoding runs on fixtures of every family.
 *
 * Where the instruction TLB's sizes come from:
 * - AMD (and Hygon): leaves 0x80000005 (first level: EAX for 2 MiB/4 MiB
 *   pages, EBX for 4 KiB, the instruction TLB's entries in bits 7:0) and
 *   0x80000006 (second level: the same registers, entries in bits 11:0,
 *   associativity in bits 15:12, 0 meaning "no such TLB"); AMD64
 *   Architecture Programmer's Manual vol. 3, appendix E.4.
 * - Intel: leaf 0x18, "deterministic address translation parameters": one
 *   subleaf per structure, EDX[4:0] its type (2 instruction, 3 unified),
 *   EDX[7:5] its level, EBX[3:0] the page sizes it holds (4K, 2M, 4M, 1G),
 *   EBX[31:16] ways, ECX sets; entries = ways x sets.  Processors that do
 *   not have the leaf (Skylake: its highest leaf is 0x16) describe their
 *   TLBs with the one-byte descriptors of leaf 2; Intel SDM vol. 2A, CPUID,
 *   table "Encoding of CPUID Leaf 2 Descriptors".
 * A hypervisor may pass its own numbers through these leaves: they are
 * what the guest is told, which the calibration (calibrate.c) checks.
 */
#include "cpuinfo.h"

#include <stdio.h>
#include <string.h>

#include "tool-arch.h"

static const struct hte_cpuid_leaf *find_leaf(const struct hte_cpuid_leaf *l, size_t n,
					      uint32_t leaf, uint32_t sub)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].leaf == leaf && l[i].subleaf == sub)
			return &l[i];
	return NULL;
}

/* Twelve bytes of a signature, from three registers in the order given. */
static void signature(char out[13], uint32_t a, uint32_t b, uint32_t c)
{
	memcpy(out, &a, 4);
	memcpy(out + 4, &b, 4);
	memcpy(out + 8, &c, 4);
	out[12] = 0;
	/* A signature is printable ASCII padded with NULs; anything else is cut. */
	for (int i = 0; i < 12; i++)
		if (out[i] && (out[i] < 0x20 || out[i] > 0x7e))
			out[i] = 0;
}

/* Family and model as the vendors' manuals compute them for display. */
static void version(struct hte_cpu *c, uint32_t eax)
{
	unsigned fam = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;

	c->stepping = eax & 0xf;
	c->family = fam == 0xf ? fam + ((eax >> 20) & 0xff) : fam;
	/* Intel adds the extended model for families 6 and 15, AMD for 15 only. */
	if (fam == 0xf || (fam == 6 && c->vendor != HTE_VENDOR_AMD))
		model |= ((eax >> 16) & 0xf) << 4;
	c->model = model;
}

static void amd_tlb(struct hte_cpu *c, const struct hte_cpuid_leaf *l, size_t n, uint32_t max_ext)
{
	const struct hte_cpuid_leaf *l1 = max_ext >= 0x80000005 ? find_leaf(l, n, 0x80000005, 0) : NULL;
	const struct hte_cpuid_leaf *l2 = max_ext >= 0x80000006 ? find_leaf(l, n, 0x80000006, 0) : NULL;

	if (l1) {
		c->itlb.l1_4k = l1->ebx & 0xff;
		c->itlb.l1_2m = l1->eax & 0xff;
	}
	if (l2) {
		/* Associativity 0: the level is not there, whatever its size field says. */
		if ((l2->ebx >> 12) & 0xf)
			c->itlb.l2_4k = l2->ebx & 0xfff;
		if ((l2->eax >> 12) & 0xf)
			c->itlb.l2_2m = l2->eax & 0xfff;
	}
	if (l1 || l2)
		snprintf(c->tlb_source, sizeof(c->tlb_source), "CPUID 0x80000005/0x80000006");
}

/* No TLB has 16 million entries: a count beyond is a lie, and stops there. */
#define MAX_ENTRIES (1u << 24)

static void add_entries(unsigned *to, uint64_t n)
{
	*to = *to + n > MAX_ENTRIES ? MAX_ENTRIES : (unsigned)(*to + n);
}

/* Leaf 0x18: returns 1 when it described an instruction TLB, else 0. */
static int intel_leaf18(struct hte_cpu *c, const struct hte_cpuid_leaf *l, size_t n)
{
	const struct hte_cpuid_leaf *s0 = find_leaf(l, n, 0x18, 0);
	uint32_t max_sub;
	int found = 0;

	if (!s0)
		return 0;
	max_sub = s0->eax > 63 ? 63 : s0->eax;
	for (uint32_t sub = 0; sub <= max_sub; sub++) {
		const struct hte_cpuid_leaf *s = sub ? find_leaf(l, n, 0x18, sub) : s0;
		unsigned type, level;
		uint64_t entries;

		if (!s)
			continue;
		type = s->edx & 0x1f;
		level = (s->edx >> 5) & 7;
		entries = (uint64_t)(s->ebx >> 16) * s->ecx;
		if ((type != 2 && type != 3) || !entries || (level != 1 && level != 2))
			continue;
		/* Subleaves add up: one structure may be described in several (4K, 2M/4M). */
		if (level == 1) {
			if (s->ebx & 1)
				add_entries(&c->itlb.l1_4k, entries);
			if (s->ebx & 2)
				add_entries(&c->itlb.l1_2m, entries);
		} else {
			if (s->ebx & 1)
				add_entries(&c->itlb.l2_4k, entries);
			if (s->ebx & 2)
				add_entries(&c->itlb.l2_2m, entries);
			c->itlb.l2_shared |= type == 3;
		}
		found = 1;
	}
	if (found)
		snprintf(c->tlb_source, sizeof(c->tlb_source), "CPUID 0x18");
	return found;
}

/* The instruction-TLB descriptors of leaf 2 (Intel SDM vol. 2A, table 3-12). */
static const struct {
	uint8_t code;
	uint8_t level;     /* 1, or 2 for the shared second level */
	uint8_t sizes;     /* 1: 4 KiB, 2: 2 MiB (with 4 MiB), 3: both */
	uint16_t entries;
} leaf2_itlb[] = {
	{ 0x01, 1, 1, 32 },  { 0x02, 1, 2, 2 },   { 0x0b, 1, 2, 4 },   { 0x4f, 1, 1, 32 },
	{ 0x50, 1, 3, 64 },  { 0x51, 1, 3, 128 }, { 0x52, 1, 3, 256 }, { 0x55, 1, 2, 7 },
	{ 0x61, 1, 1, 48 },  { 0x76, 1, 2, 8 },   { 0xb0, 1, 1, 128 }, { 0xb1, 1, 2, 8 },
	{ 0xb2, 1, 1, 64 },  { 0xb5, 1, 1, 64 },  { 0xb6, 1, 1, 128 }, { 0xc1, 2, 3, 1024 },
	{ 0xc3, 2, 3, 1536 }, { 0xca, 2, 1, 512 },
};

static void leaf2_byte(struct hte_cpu *c, uint8_t b, int *found)
{
	for (size_t i = 0; i < sizeof(leaf2_itlb) / sizeof(leaf2_itlb[0]); i++) {
		if (leaf2_itlb[i].code != b)
			continue;
		if (leaf2_itlb[i].level == 1) {
			if (leaf2_itlb[i].sizes & 1)
				c->itlb.l1_4k += leaf2_itlb[i].entries;
			if (leaf2_itlb[i].sizes & 2)
				c->itlb.l1_2m += leaf2_itlb[i].entries;
		} else {
			if (leaf2_itlb[i].sizes & 1)
				c->itlb.l2_4k += leaf2_itlb[i].entries;
			if (leaf2_itlb[i].sizes & 2)
				c->itlb.l2_2m += leaf2_itlb[i].entries;
			c->itlb.l2_shared = 1;
		}
		*found = 1;
	}
}

static void intel_leaf2(struct hte_cpu *c, const struct hte_cpuid_leaf *l)
{
	uint32_t r[4] = { l->eax, l->ebx, l->ecx, l->edx };
	int found = 0;

	for (int i = 0; i < 4; i++) {
		if (r[i] >> 31)
			continue; /* bit 31 set: the register holds no descriptors */
		/* The low byte of EAX is the count of calls to make, not a descriptor. */
		for (int k = i == 0 ? 1 : 0; k < 4; k++)
			leaf2_byte(c, (uint8_t)(r[i] >> (8 * k)), &found);
	}
	if (found)
		snprintf(c->tlb_source, sizeof(c->tlb_source), "CPUID 2");
}

int hte_cpu_decode(struct hte_cpu *c, const struct hte_cpuid_leaf *leaves, size_t n)
{
	const struct hte_cpuid_leaf *l0 = find_leaf(leaves, n, 0, 0), *l1, *x0;
	uint32_t max_ext = 0;

	memset(c, 0, sizeof(*c));
	if (!l0)
		return -1;
	signature(c->vendor_id, l0->ebx, l0->edx, l0->ecx);
	if (strcmp(c->vendor_id, "GenuineIntel") == 0)
		c->vendor = HTE_VENDOR_INTEL;
	else if (strcmp(c->vendor_id, "AuthenticAMD") == 0 || strcmp(c->vendor_id, "HygonGenuine") == 0)
		c->vendor = HTE_VENDOR_AMD; /* Hygon's Dhyana is AMD's Zen, and says so the same way */
	l1 = l0->eax >= 1 ? find_leaf(leaves, n, 1, 0) : NULL;
	if (l1) {
		version(c, l1->eax);
		c->hypervisor = (int)(l1->ecx >> 31);
	}
	if (c->hypervisor) {
		const struct hte_cpuid_leaf *h = find_leaf(leaves, n, 0x40000000, 0);

		if (h)
			signature(c->hypervisor_id, h->ebx, h->ecx, h->edx);
	}
	x0 = find_leaf(leaves, n, 0x80000000, 0);
	if (x0 && x0->eax >= 0x80000000 && x0->eax < 0x8000ffff)
		max_ext = x0->eax;
	if (c->vendor == HTE_VENDOR_AMD) {
		amd_tlb(c, leaves, n, max_ext);
	} else if (c->vendor == HTE_VENDOR_INTEL) {
		const struct hte_cpuid_leaf *l2 = l0->eax >= 2 ? find_leaf(leaves, n, 2, 0) : NULL;

		if (!(l0->eax >= 0x18 && intel_leaf18(c, leaves, n)) && l2)
			intel_leaf2(c, l2);
	}
	return 0;
}

/* The leaves hte_cpu_decode() reads, from this processor. */
size_t hte_cpu_record(struct hte_cpuid_leaf *out, size_t max)
{
	size_t n = 0;
	uint32_t r[4];

	if (!HTE_ARCH_CPUID || hte_arch_cpuid(0, 0, r) < 0)
		return 0;
#define KEEP(lf, sub)                                                                  \
	do {                                                                           \
		if (n < max && hte_arch_cpuid((lf), (sub), r) == 0)                    \
			out[n++] = (struct hte_cpuid_leaf){ (lf), (sub), r[0], r[1], r[2], r[3] }; \
	} while (0)
	uint32_t max_std = r[0];

	KEEP(0, 0);
	if (max_std >= 1)
		KEEP(1, 0);
	if (max_std >= 2)
		KEEP(2, 0);
	if (max_std >= 0x18) {
		KEEP(0x18, 0);
		uint32_t subs = n && out[n - 1].leaf == 0x18 ? out[n - 1].eax : 0;

		for (uint32_t s = 1; s <= subs && s < 64; s++)
			KEEP(0x18, s);
	}
	if (hte_arch_cpuid(1, 0, r) == 0 && (r[2] >> 31))
		KEEP(0x40000000, 0);
	KEEP(0x80000000, 0);
	if (n && out[n - 1].leaf == 0x80000000) {
		uint32_t max_ext = out[n - 1].eax;

		if (max_ext >= 0x80000005 && max_ext < 0x8000ffff)
			KEEP(0x80000005, 0);
		if (max_ext >= 0x80000006 && max_ext < 0x8000ffff)
			KEEP(0x80000006, 0);
	}
#undef KEEP
	return n;
}

/* Without CPUID: the implementer and part the kernel shows (arm64's MIDR). */
static int read_proc_cpuinfo(struct hte_cpu *c)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");
	unsigned v;

	memset(c, 0, sizeof(*c));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CPU implementer : %x", &v) == 1)
			snprintf(c->vendor_id, sizeof(c->vendor_id), "0x%02x", v & 0xff);
		else if (sscanf(line, "CPU part : %x", &v) == 1)
			c->model = v;
		else if (sscanf(line, "CPU variant : %x", &v) == 1)
			c->family = v;
		else if (sscanf(line, "CPU revision : %u", &v) == 1)
			c->stepping = v;
		if (line[0] == '\n' && c->vendor_id[0])
			break; /* the first processor is enough */
	}
	fclose(f);
	return c->vendor_id[0] ? 0 : -1;
}

int hte_cpu_read(struct hte_cpu *c)
{
	struct hte_cpuid_leaf l[80];
	size_t n = hte_cpu_record(l, sizeof(l) / sizeof(l[0]));

	if (n)
		return hte_cpu_decode(c, l, n);
	return read_proc_cpuinfo(c);
}

uint64_t hte_itlb_reach_4k(const struct hte_itlb *t, uint64_t *reach_2m)
{
	unsigned e4 = t->l2_4k > t->l1_4k ? t->l2_4k : t->l1_4k;
	unsigned e2 = t->l2_2m > t->l1_2m ? t->l2_2m : t->l1_2m;

	if (reach_2m)
		*reach_2m = (uint64_t)e2 << 21;
	return (uint64_t)e4 << 12;
}

static const char *vendor_word(const struct hte_cpu *c)
{
	if (c->vendor == HTE_VENDOR_INTEL)
		return "Intel";
	if (c->vendor == HTE_VENDOR_AMD)
		return strcmp(c->vendor_id, "HygonGenuine") == 0 ? "Hygon" : "AMD";
	return c->vendor_id[0] ? c->vendor_id : "unknown CPU";
}

void hte_cpu_line(FILE *f, const struct hte_cpu *c)
{
	const struct hte_itlb *t = &c->itlb;

	fprintf(f, "%s family %u model %u", vendor_word(c), c->family, c->model);
	if (c->hypervisor)
		fprintf(f, " (guest: %s)", c->hypervisor_id[0] ? c->hypervisor_id : "hypervisor");
	if (!t->l1_4k && !t->l2_4k && !t->l1_2m && !t->l2_2m) {
		fputs("; iTLB sizes not known", f);
		return;
	}
	fprintf(f, "; iTLB %u+%u 4 KiB, %u+%u 2 MiB entries", t->l1_4k, t->l2_4k, t->l1_2m, t->l2_2m);
	if (t->l2_shared)
		fputs(" (second level shared with data)", f);
}
