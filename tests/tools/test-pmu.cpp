// Description: the hardware counters of measure (tools/pmu.c): the event
// tables for Intel and AMD generations (the vendors' raw encodings), the
// one-line reasons when nothing can be counted, the figures derived from
// counts, and this machine's probe.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <linux/perf_event.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "cpu-fixtures.hpp"
#include "pmu.h"

using namespace cpu_fixtures;

namespace {

std::vector<hte_pmu_event> events(const hte_cpu &c, std::string *why = nullptr)
{
	hte_pmu_event ev[HTE_PMU_MAX_EVENTS];
	char w[256];
	size_t n = hte_pmu_events(&c, ev, HTE_PMU_MAX_EVENTS, w, sizeof(w));
	if (why)
		*why = w;
	return std::vector<hte_pmu_event>(ev, ev + n);
}

const hte_pmu_event *find(const std::vector<hte_pmu_event> &ev, const std::string &name)
{
	for (auto &e : ev)
		if (name == e.name)
			return &e;
	return nullptr;
}

std::string explain(const hte_pmu_facts &f, int *user_only, int *none)
{
	char why[256];
	*none = hte_pmu_explain(&f, why, sizeof(why), user_only);
	return why;
}

} // namespace

TEST_CASE("every processor counts instructions, cycles and the generic iTLB misses", "[pmu]")
{
	for (const leaves &l : { skylake_x(), icelake_u(), sapphire_rapids(), zen2(), zen4(), zen5_kvm() }) {
		auto ev = events(cpu_of(l));
		REQUIRE(ev.size() >= 3);
		CHECK(ev[0].kind == HTE_EV_INSTRUCTIONS);
		CHECK(ev[0].type == HTE_EV_HARDWARE);
		CHECK(ev[0].config == PERF_COUNT_HW_INSTRUCTIONS);
		CHECK(ev[1].config == PERF_COUNT_HW_CPU_CYCLES);
		CHECK(ev[2].type == HTE_EV_HW_CACHE);
		// iTLB, read, miss: perf's iTLB-load-misses.
		CHECK(ev[2].config == (PERF_COUNT_HW_CACHE_ITLB | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)));
	}
}

TEST_CASE("Intel's page-walk and stall events by generation", "[pmu]")
{
	// Skylake-X: ITLB_MISSES at event 0x85; WALK_ACTIVE with cmask 1; the tag stall 0x83/0x04.
	auto sk = events(cpu_of(skylake_x()));
	REQUIRE(find(sk, "ITLB_MISSES.WALK_COMPLETED"));
	CHECK(find(sk, "ITLB_MISSES.WALK_COMPLETED")->config == 0x0e85);
	CHECK(find(sk, "ITLB_MISSES.WALK_ACTIVE")->config == 0x01001085);
	CHECK(find(sk, "ICACHE_64B.IFTAG_STALL")->config == 0x0483);
	CHECK(find(sk, "ICACHE_64B.IFTAG_STALL")->kind == HTE_EV_TAG_STALL);
	CHECK(find(sk, "ITLB_MISSES.WALK_COMPLETED")->type == HTE_EV_RAW);
	// Ice Lake moved ITLB_MISSES to 0x11.
	auto il = events(cpu_of(icelake_u()));
	CHECK(find(il, "ITLB_MISSES.WALK_COMPLETED")->config == 0x0e11);
	CHECK(find(il, "ITLB_MISSES.WALK_ACTIVE")->config == 0x01001011);
	CHECK(find(il, "ICACHE_64B.IFTAG_STALL"));
	// Golden Cove names the tag stall ICACHE_TAG.STALLS.
	auto spr = events(cpu_of(sapphire_rapids()));
	CHECK(find(spr, "ITLB_MISSES.WALK_COMPLETED")->config == 0x0e11);
	REQUIRE(find(spr, "ICACHE_TAG.STALLS"));
	CHECK(find(spr, "ICACHE_TAG.STALLS")->config == 0x0483);
	CHECK_FALSE(find(spr, "ICACHE_64B.IFTAG_STALL"));
	// Haswell (model 0x3c): WALK_DURATION, no tag stall.
	hte_cpu hsw = cpu_of(skylake_x());
	hsw.model = 0x3c;
	auto h = events(hsw);
	CHECK(find(h, "ITLB_MISSES.WALK_DURATION")->config == 0x1085);
	CHECK(h.size() == 5);
}

TEST_CASE("AMD's walks with their 4 KiB and 2 MiB parts, and the second-level hits", "[pmu]")
{
	auto z2 = events(cpu_of(zen2()));
	REQUIRE(z2.size() == 7);
	CHECK(find(z2, "bp_l1_tlb_miss_l2_tlb_miss")->config == 0xff85);
	CHECK(find(z2, "bp_l1_tlb_miss_l2_tlb_miss.if4k")->config == 0x0185);
	CHECK(find(z2, "bp_l1_tlb_miss_l2_tlb_miss.if2m")->config == 0x0285);
	CHECK(find(z2, "bp_l1_tlb_miss_l2_tlb_hit")->config == 0x0084);
	// Zen 3 on: the walks to coalesced 4 KiB pages count with the 4 KiB ones.
	for (const leaves &l : { zen3(), zen4(), zen5_kvm() }) {
		auto z = events(cpu_of(l));
		REQUIRE(find(z, "bp_l1_tlb_miss_l2_tlb_miss.if4k+coalesced_4k"));
		CHECK(find(z, "bp_l1_tlb_miss_l2_tlb_miss.if4k+coalesced_4k")->config == 0x0985);
		CHECK(find(z, "bp_l1_tlb_miss_l2_tlb_miss.if4k+coalesced_4k")->kind == HTE_EV_WALK_4K);
	}
}

TEST_CASE("a processor without known events gets the generic ones and a reason", "[pmu]")
{
	hte_cpu c = cpu_of(skylake_x());
	c.model = 0x01;
	std::string why;
	auto ev = events(c, &why);
	CHECK(ev.size() == 3);
	CHECK(why == "no page-walk events are known for GenuineIntel family 6 model 1: the generic iTLB event only");
	hte_cpu amd = cpu_of(zen2());
	amd.family = 0x15; // Bulldozer
	CHECK(events(amd, &why).size() == 3);
	CHECK(why.find("family 21") != std::string::npos);
	// A table smaller than the events: no overrun, the first ones kept.
	hte_pmu_event two[2];
	CHECK(hte_pmu_events(&c, two, 2, nullptr, 0) == 2);
	CHECK(two[1].kind == HTE_EV_CYCLES);
}

TEST_CASE("what cannot be counted is said in one line, with the reason", "[pmu]")
{
	hte_pmu_facts f = {};
	int user_only, none;
	f.paranoid = 2;
	// This machine's case: a guest with no CPU PMU.
	f.has_cpu_pmu = 0;
	f.hypervisor = 1;
	std::snprintf(f.hypervisor_id, sizeof(f.hypervisor_id), "KVMKVMKVM");
	CHECK(explain(f, &user_only, &none) ==
	      "not measured: this is a virtual machine (KVMKVMKVM) whose hypervisor gives it no performance "
	      "counters (no CPU PMU in /sys/bus/event_source/devices)");
	CHECK(none == 1);
	f.hypervisor = 0;
	CHECK(explain(f, &user_only, &none).find("the kernel has no driver") != std::string::npos);
	f.has_cpu_pmu = 1;
	f.paranoid = 3;
	CHECK(explain(f, &user_only, &none).find("perf_event_paranoid is 3") != std::string::npos);
	CHECK(none == 1);
	f.privileged = 1;
	CHECK(explain(f, &user_only, &none) == "");
	CHECK(none == 0);
	CHECK(user_only == 0);
	f.privileged = 0;
	f.paranoid = 2;
	CHECK(explain(f, &user_only, &none).find("user space only") == 0);
	CHECK(none == 0);
	CHECK(user_only == 1);
	f.open_errno = ENOENT;
	CHECK(explain(f, &user_only, &none).find("the processor's counters are not there") != std::string::npos);
	CHECK(none == 1);
	f.open_errno = EACCES;
	CHECK(explain(f, &user_only, &none).find("not permitted") != std::string::npos);
}

TEST_CASE("the figures: per 1000 instructions and shares of cycles", "[pmu]")
{
	auto sk = events(cpu_of(skylake_x()));
	std::vector<double> counts(sk.size(), -1);
	for (size_t i = 0; i < sk.size(); i++) {
		switch (sk[i].kind) {
		case HTE_EV_INSTRUCTIONS: counts[i] = 2e9; break;
		case HTE_EV_CYCLES: counts[i] = 4e9; break;
		case HTE_EV_ITLB_MISS: counts[i] = 6e6; break;
		case HTE_EV_WALK: counts[i] = 2e6; break;
		case HTE_EV_WALK_CYCLES: counts[i] = 4e8; break;
		default: break; // the tag stall not counted
		}
	}
	struct hte_pmu_figures g;
	hte_pmu_figures(sk.data(), counts.data(), sk.size(), &g);
	CHECK(g.itlb_pki == Approx(3.0));
	CHECK(g.walk_pki == Approx(1.0));
	CHECK(g.walk_cycles == Approx(0.10));
	CHECK(g.tag_stall == -1);
	CHECK(g.walk_4k_share == -1);
	CHECK(g.l2_hit_pki == -1);

	auto z = events(cpu_of(zen4()));
	std::vector<double> zc(z.size(), -1);
	for (size_t i = 0; i < z.size(); i++) {
		switch (z[i].kind) {
		case HTE_EV_INSTRUCTIONS: zc[i] = 1e9; break;
		case HTE_EV_WALK_4K: zc[i] = 3e6; break;
		case HTE_EV_WALK_2M: zc[i] = 1e6; break;
		case HTE_EV_L2_HIT: zc[i] = 5e6; break;
		default: break;
		}
	}
	hte_pmu_figures(z.data(), zc.data(), z.size(), &g);
	CHECK(g.walk_4k_share == Approx(0.75));
	CHECK(g.l2_hit_pki == Approx(5.0));
	CHECK(g.walk_cycles == -1); // no cycles counted: no share
	// No instructions counted: nothing per instruction.
	std::vector<double> none(z.size(), -1);
	hte_pmu_figures(z.data(), none.data(), z.size(), &g);
	CHECK(g.itlb_pki == -1);
	CHECK(g.instructions == -1);
}

TEST_CASE("this machine: the probe's reason agrees with what /sys shows", "[pmu]")
{
	hte_cpu c;
	REQUIRE(hte_cpu_read(&c) == 0);
	hte_pmu_facts f;
	hte_pmu_probe(&f, &c);
	bool pmu = access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
		   access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;
	CHECK(f.has_cpu_pmu == (int)pmu);
	int user_only, none;
	std::string why = explain(f, &user_only, &none);
	WARN("counters here: " << (why.empty() ? "counted" : why));
	if (!pmu) {
		CHECK(none == 1);
		CHECK(why.find("no CPU PMU") != std::string::npos);
		CHECK(f.open_errno != 0);
	}
}
