/* SPDX-License-Identifier: MIT */
/* The kernel's page sizes and the 2 MiB moves (see pagesize.h). */
#include "pagesize.h"
#include "arch.h"
#include "pool.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define PMD_SIZE_FILE "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
#define HUGETLB_2M_DIR "/sys/kernel/mm/hugepages/hugepages-2048kB"

uint64_t ht_pmd_size(const struct ht_page_facts *f)
{
	if (f->pmd)
		return f->pmd;
	return f->base == 4096 ? HT_HUGE_PAGE_SIZE : 0;
}

enum ht_error ht_pages_check(const struct ht_page_facts *f, enum ht_mode mode)
{
	/*
	 * Explicit pages too: on a 16 or 64 KiB kernel a 2 MiB hugetlb page
	 * is a run of entries with arm64's contiguous bit, a path never
	 * tested here; the library takes none rather than an untested one.
	 */
	if (ht_pmd_size(f) != HT_HUGE_PAGE_SIZE)
		return HT_E_KERNEL_PAGES;
	if (mode == HT_MODE_EXPLICIT && f->hugetlb_2m != 1)
		return HT_E_NOT_SUPPORTED;
	return HT_E_NONE;
}

/* "4 KiB", "512 MiB", "1 GiB"; a size that is no whole unit in bytes. */
static void size_text(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	int u = -1;

	while (v >= 1024 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu %s", (unsigned long long)v, unit[u]);
}

int ht_pages_reason(const struct ht_page_facts *f, char *buf, size_t len)
{
	char base[32], pmd[32];
	uint64_t p = ht_pmd_size(f);
	int n;

	size_text(f->base, base, sizeof(base));
	size_text(p, pmd, sizeof(pmd));
	if (f->base && p)
		n = snprintf(buf, len, "this kernel's pages are %s and a PMD maps %s; "
			     "hugetext moves 2 MiB pages only", base, pmd);
	else if (f->base)
		n = snprintf(buf, len, "this kernel's pages are %s and its PMD size is unknown; "
			     "hugetext moves 2 MiB pages only", base);
	else
		n = snprintf(buf, len, "this kernel's page sizes are unknown; hugetext moves 2 MiB pages only");
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

/* Read once: 0 not yet, 1 being written, 2 ready. */
static int state;
static struct ht_page_facts facts;
static char reason[160];

/*
 * The base page costs nothing (the auxiliary vector).  With 4 KiB pages
 * on x86-64 and arm64 the page-table format fixes the PMD at 2 MiB
 * (arch.h), so nothing is read where every program runs; other page sizes
 * and processors read the kernel's hpage_pmd_size.
 */
static void read_facts(struct ht_page_facts *f)
{
	char *buf;
	size_t len;
	uint64_t v;

	f->base = ht_sys_base_page_size();
	f->pmd = 0;
	if (f->base == 4096 && HT_ARCH_PMD_4K != 0) {
		f->pmd = HT_ARCH_PMD_4K;
	} else if (ht_sys_read_file(PMD_SIZE_FILE, &buf, &len) == 0) {
		if (ht_parse_count(buf, len, &v) == 0)
			f->pmd = v;
		free(buf);
	}
	f->hugetlb_2m = -1;
}

void ht_page_facts_read(struct ht_page_facts *f)
{
	int expect = 0;

	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2) {
		*f = facts;
		return;
	}
	read_facts(f);
	/* The first reader publishes; a thread that meets it halfway keeps its own read. */
	if (!__atomic_compare_exchange_n(&state, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	facts = *f;
	if (ht_pages_reason(f, reason, sizeof(reason)) < 0)
		reason[0] = '\0';
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

enum ht_error ht_pages_usable(enum ht_mode mode)
{
	struct ht_page_facts f;

	ht_page_facts_read(&f);
	/* Asked only for explicit pages, each time: a move of them costs milliseconds anyway. */
	if (mode == HT_MODE_EXPLICIT && f.hugetlb_2m < 0)
		f.hugetlb_2m = ht_sys_dir_exists(HUGETLB_2M_DIR) == 1;
	return ht_pages_check(&f, mode);
}

const char *ht_pages_reason_text(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2 || !reason[0])
		return NULL;
	return reason;
}

void ht_page_facts_set(const struct ht_page_facts *f)
{
	if (!f) {
		__atomic_store_n(&state, 0, __ATOMIC_RELEASE);
		return;
	}
	facts = *f;
	if (ht_pages_reason(f, reason, sizeof(reason)) < 0)
		reason[0] = '\0';
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}
