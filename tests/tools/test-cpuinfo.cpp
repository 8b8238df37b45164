// Description: the CPU description of measure and doctor (tools/cpuinfo.c):
// vendor, family, model, guest, and the instruction TLB's sizes decoded from
// recorded CPUID leaves of Intel and AMD processors, hostile leaves, and
// this machine's own.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cpu-fixtures.hpp"
#include "cpuinfo.h"

using namespace cpu_fixtures;

namespace {

hte_cpu decode(const leaves &l)
{
	hte_cpu c;
	REQUIRE(hte_cpu_decode(&c, l.data(), l.size()) == 0);
	return c;
}

std::string line(const hte_cpu &c)
{
	char buf[512] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	REQUIRE(f);
	hte_cpu_line(f, &c);
	std::fclose(f);
	return buf;
}

} // namespace

TEST_CASE("Skylake's iTLB comes from leaf 2's descriptors, its second level shared with data", "[cpuinfo]")
{
	hte_cpu c = decode(skylake_x());
	CHECK(c.vendor == HTE_VENDOR_INTEL);
	CHECK(std::string(c.vendor_id) == "GenuineIntel");
	CHECK(c.family == 6);
	CHECK(c.model == 0x55);
	CHECK(c.stepping == 4);
	CHECK_FALSE(c.hypervisor);
	// 0xb5: 64 4 KiB entries; 0x76: 8 2 MiB entries; 0xc3: the STLB, 1536 4K/2M.
	CHECK(c.itlb.l1_4k == 64);
	CHECK(c.itlb.l1_2m == 8);
	CHECK(c.itlb.l2_4k == 1536);
	CHECK(c.itlb.l2_2m == 1536);
	CHECK(c.itlb.l2_shared);
	CHECK(std::string(c.tlb_source) == "CPUID 2");
	CHECK(line(c) == "Intel family 6 model 85; iTLB 64+1536 4 KiB, 8+1536 2 MiB entries "
			 "(second level shared with data)");
}

TEST_CASE("Ice Lake and Sapphire Rapids describe their TLBs in leaf 0x18", "[cpuinfo]")
{
	hte_cpu c = decode(icelake_u());
	CHECK(c.model == 0x7e);
	CHECK(std::string(c.tlb_source) == "CPUID 0x18");
	// Subleaf 1: the instruction TLB, 8 ways x 1 set, 4K/2M/4M; the data
	// subleaves (types 4 and 5) do not count; 6 and 7: the unified STLB.
	CHECK(c.itlb.l1_4k == 8);
	CHECK(c.itlb.l1_2m == 8);
	CHECK(c.itlb.l2_4k == 2048);
	CHECK(c.itlb.l2_2m == 1024);
	CHECK(c.itlb.l2_shared);

	hte_cpu s = decode(sapphire_rapids());
	CHECK(s.family == 6);
	CHECK(s.model == 0x8f);
	// 256 4 KiB entries (8 x 32), 32 2M/4M entries (8 x 4); the STLB as Ice Lake's.
	CHECK(s.itlb.l1_4k == 256);
	CHECK(s.itlb.l1_2m == 32);
	CHECK(s.itlb.l2_4k == 2048);
	CHECK(s.itlb.l2_2m == 1024);
	uint64_t r2 = 0;
	CHECK(hte_itlb_reach_4k(&s.itlb, &r2) == 2048ull * 4096);
	CHECK(r2 == 1024ull << 21);
}

TEST_CASE("Zen 2, 3 and 4 read their TLBs from 0x80000005 and 0x80000006", "[cpuinfo]")
{
	hte_cpu z2 = decode(zen2());
	CHECK(z2.vendor == HTE_VENDOR_AMD);
	CHECK(z2.family == 0x17);
	CHECK(z2.model == 0x71);
	CHECK(z2.itlb.l1_4k == 64);
	CHECK(z2.itlb.l1_2m == 64);
	CHECK(z2.itlb.l2_4k == 1024);
	CHECK(z2.itlb.l2_2m == 1024);
	CHECK_FALSE(z2.itlb.l2_shared);
	CHECK(std::string(z2.tlb_source) == "CPUID 0x80000005/0x80000006");

	hte_cpu z3 = decode(zen3());
	CHECK(z3.family == 0x19);
	CHECK(z3.model == 0x50);
	CHECK(z3.itlb.l2_4k == 512);
	CHECK(z3.itlb.l2_2m == 512);

	hte_cpu z4 = decode(zen4());
	CHECK(z4.family == 0x19);
	CHECK(z4.model == 0x11);
	CHECK(z4.stepping == 1);
	CHECK(z4.hypervisor);
	CHECK(std::string(z4.hypervisor_id) == "Microsoft Hv");
	CHECK(z4.itlb.l1_4k == 64);
	CHECK(z4.itlb.l2_4k == 512);
	CHECK(z4.itlb.l2_2m == 512);
	CHECK(line(z4) == "AMD family 25 model 17 (guest: Microsoft Hv); iTLB 64+512 4 KiB, 64+512 2 MiB entries");
}

TEST_CASE("this machine's Zen 5 under KVM: what the hypervisor passes through", "[cpuinfo]")
{
	hte_cpu c = decode(zen5_kvm());
	CHECK(c.family == 26);
	CHECK(c.model == 2);
	CHECK(c.hypervisor);
	CHECK(std::string(c.hypervisor_id) == "KVMKVMKVM");
	// The first level as the silicon has it; the second as the hypervisor
	// says (64 entries; Zen 5 has 2048): the calibration measures the rest.
	CHECK(c.itlb.l1_4k == 64);
	CHECK(c.itlb.l1_2m == 64);
	CHECK(c.itlb.l2_4k == 64);
	CHECK(c.itlb.l2_2m == 64);
	CHECK(hte_itlb_reach_4k(&c.itlb, nullptr) == 64 * 4096);
	CHECK(line(c) == "AMD family 26 model 2 (guest: KVMKVMKVM); iTLB 64+64 4 KiB, 64+64 2 MiB entries");
}

TEST_CASE("leaves that say too little or lie are decoded to what they can mean", "[cpuinfo]")
{
	hte_cpu c;
	CHECK(hte_cpu_decode(&c, nullptr, 0) == -1);
	leaves only1 = { { 1, 0, 0x00a50f00, 0, 0, 0 } };
	CHECK(hte_cpu_decode(&c, only1.data(), only1.size()) == -1);

	// An unknown vendor: family and model as Intel's rule, no TLB read.
	leaves other = { leaf0(1, "CentaurHauls"), { 1, 0, 0x000006f2, 0, 0, 0 } };
	c = decode(other);
	CHECK(c.vendor == HTE_VENDOR_OTHER);
	CHECK(c.model == 0x0f);
	CHECK(line(c) == "CentaurHauls family 6 model 15; iTLB sizes not known");

	// Control bytes in a signature are cut, not printed.
	hte_cpuid_leaf bad = leaf0(1, "Genu\x1bineInte");
	leaves esc = { bad };
	c = decode(esc);
	CHECK(std::string(c.vendor_id) == "Genu");

	// The extended leaves are not believed past the highest one announced.
	leaves amd = zen3();
	amd[2].eax = 0x80000004;
	c = decode(amd);
	CHECK(c.itlb.l1_4k == 0);
	CHECK(c.itlb.l2_4k == 0);

	// A second level whose associativity field is 0 is not there.
	amd = zen3();
	amd[4].ebx &= ~0xf000u;
	c = decode(amd);
	CHECK(c.itlb.l2_4k == 0);
	CHECK(c.itlb.l2_2m == 512);

	// Leaf 0x18 announcing 0xffffffff subleaves, and two of absurd size:
	// only what is recorded is read, and no count wraps.
	leaves il = icelake_u();
	il[3].eax = 0xffffffff;
	il[4].ebx = 0xffff0007;
	il[4].ecx = 0xffffffff;
	il.push_back({ 0x18, 9, 0, 0xffff0003, 0xffffffff, 0x00004022 });
	c = decode(il);
	CHECK(c.itlb.l1_4k == 1u << 24);
	CHECK(c.itlb.l1_2m == 1u << 24);
	CHECK(hte_itlb_reach_4k(&c.itlb, nullptr) == (1ull << 24) * 4096);

	// A hypervisor bit with no 0x40000000 leaf: a guest, unnamed.
	leaves g = zen5_kvm();
	g.erase(g.begin() + 3);
	c = decode(g);
	CHECK(c.hypervisor);
	CHECK(std::string(c.hypervisor_id).empty());
	CHECK(line(c).find("(guest: hypervisor)") != std::string::npos);
}

TEST_CASE("this processor: what CPUID says agrees with /proc/cpuinfo", "[cpuinfo]")
{
	hte_cpu c;
	REQUIRE(hte_cpu_read(&c) == 0);
	std::ifstream f("/proc/cpuinfo");
	std::string l, vendor, flags;
	unsigned family = ~0u, model = ~0u;
	while (std::getline(f, l)) {
		if (l.rfind("vendor_id", 0) == 0 && vendor.empty())
			vendor = l.substr(l.find(':') + 2);
		else if (l.rfind("cpu family", 0) == 0 && family == ~0u)
			family = std::stoul(l.substr(l.find(':') + 2));
		else if (l.rfind("model\t", 0) == 0 && model == ~0u)
			model = std::stoul(l.substr(l.find(':') + 2));
		else if (l.rfind("flags", 0) == 0 && flags.empty())
			flags = l + " ";
	}
	if (vendor.empty())
		SUCCEED("no x86 /proc/cpuinfo: nothing to compare with");
	else {
		CHECK(std::string(c.vendor_id) == vendor);
		CHECK(c.family == family);
		CHECK(c.model == model);
		CHECK(c.hypervisor == (flags.find(" hypervisor ") != std::string::npos));
		hte_cpuid_leaf rec[80];
		size_t n = hte_cpu_record(rec, 80);
		CHECK(n >= 3);
		hte_cpu again;
		REQUIRE(hte_cpu_decode(&again, rec, n) == 0);
		CHECK(std::memcmp(&again, &c, sizeof(c)) == 0);
		INFO(line(c));
		CHECK(line(c).find(c.vendor == HTE_VENDOR_AMD ? "AMD family" : "family") != std::string::npos);
	}
}
