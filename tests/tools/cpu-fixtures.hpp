// CPUID leaves of real processors, for the tests of the CPU description
// (test-cpuinfo.cpp) and of what depends on it (the counters' event tables).
#ifndef HT_CPU_FIXTURES_HPP
#define HT_CPU_FIXTURES_HPP

#include <cstring>
#include <vector>

#include "cpuinfo.h"

namespace cpu_fixtures {

using leaves = std::vector<hte_cpuid_leaf>;

// Leaf 0's registers for a vendor string: EBX, EDX, ECX hold it in that order.
inline hte_cpuid_leaf leaf0(uint32_t max, const char *vendor)
{
	hte_cpuid_leaf l = { 0, 0, max, 0, 0, 0 };
	std::memcpy(&l.ebx, vendor, 4);
	std::memcpy(&l.edx, vendor + 4, 4);
	std::memcpy(&l.ecx, vendor + 8, 4);
	return l;
}

/*
 * The fixtures' vendor, version (leaf 1's EAX) and TLB leaves are the
 * registers these processors return, as recorded and published by others:
 * Bochs's CPU models (bochs/cpu/cpudb/intel/: Skylake-X, Ice Lake-U,
 * Sapphire Rapids), rust-cpuid's test dump of a Ryzen 5 3600X,
 * cpuid_dump_rs's of a Ryzen 5 5600G, an EPYC 9004's as a Hyper-V SNP
 * guest reads them (0x80000005/6), and this machine's (hte_cpu_record()).
 * Leaf 1's feature registers are filled in where they were not part of
 * the record; only their hypervisor bit is read.  Hyper-V's signature is
 * the one Microsoft documents.
 */

// Skylake-X (family 6 model 0x55): no leaf 0x18 (highest leaf 0x16), TLBs in leaf 2's descriptors.
inline leaves skylake_x()
{
	return { leaf0(0x16, "GenuineIntel"),
		 { 1, 0, 0x00050654, 0, 0x7ffefbff, 0xbfebfbff },
		 { 2, 0, 0x76036301, 0x00f0b5ff, 0x00000000, 0x00c30000 },
		 { 0x80000000, 0, 0x80000008, 0, 0, 0 },
		 { 0x80000006, 0, 0, 0, 0x01006040, 0 } };
}

// Ice Lake-U (family 6 model 0x7e): leaf 2 says "see leaf 0x18" (0xfe).
inline leaves icelake_u()
{
	return { leaf0(0x1b, "GenuineIntel"),
		 { 1, 0, 0x000706e5, 0, 0x7ffafbff, 0xbfebfbff },
		 { 2, 0, 0x00feff01, 0x000000f0, 0, 0 },
		 { 0x18, 0, 0x00000007, 0, 0, 0 },
		 { 0x18, 1, 0, 0x00080007, 0x00000001, 0x00004122 },
		 { 0x18, 2, 0, 0x0010000f, 0x00000001, 0x00004125 },
		 { 0x18, 3, 0, 0x00040001, 0x00000010, 0x00004024 },
		 { 0x18, 4, 0, 0x00040006, 0x00000008, 0x00004024 },
		 { 0x18, 5, 0, 0x00080008, 0x00000001, 0x00004124 },
		 { 0x18, 6, 0, 0x00080007, 0x00000080, 0x00004043 },
		 { 0x18, 7, 0, 0x00080009, 0x00000080, 0x00004043 },
		 { 0x80000000, 0, 0x80000008, 0, 0, 0 } };
}

// Sapphire Rapids (Xeon w9-3475X, family 6 model 0x8f).
inline leaves sapphire_rapids()
{
	return { leaf0(0x20, "GenuineIntel"),
		 { 1, 0, 0x000806f8, 0, 0x7ffefbff, 0xbfebfbff },
		 { 2, 0, 0x00feff01, 0x000000f0, 0, 0 },
		 { 0x18, 0, 0x00000008, 0, 0, 0 },
		 { 0x18, 1, 0, 0x00080001, 0x00000020, 0x00004022 },
		 { 0x18, 2, 0, 0x00080006, 0x00000004, 0x00004022 },
		 { 0x18, 3, 0, 0x0010000f, 0x00000001, 0x00004125 },
		 { 0x18, 4, 0, 0x00040001, 0x00000010, 0x00004024 },
		 { 0x18, 5, 0, 0x00040006, 0x00000008, 0x00004024 },
		 { 0x18, 6, 0, 0x00080008, 0x00000001, 0x00004124 },
		 { 0x18, 7, 0, 0x00080007, 0x00000080, 0x00004043 },
		 { 0x18, 8, 0, 0x00080009, 0x00000080, 0x00004043 },
		 { 0x80000000, 0, 0x80000008, 0, 0, 0 } };
}

// Zen 2: Ryzen 5 3600X (family 0x17 model 0x71).
inline leaves zen2()
{
	return { leaf0(0x10, "AuthenticAMD"),
		 { 1, 0, 0x00870f10, 0x000c0800, 0x7ed8320b, 0x178bfbff },
		 { 0x80000000, 0, 0x8000001f, 0, 0, 0 },
		 { 0x80000005, 0, 0xff40ff40, 0xff40ff40, 0x20080140, 0x20080140 },
		 { 0x80000006, 0, 0x48006400, 0x68006400, 0x02006140, 0x01009140 } };
}

// Zen 3: Ryzen 5 5600G (family 0x19 model 0x50).
inline leaves zen3()
{
	return { leaf0(0x10, "AuthenticAMD"),
		 { 1, 0, 0x00a50f00, 0x000c0800, 0x7ef8320b, 0x178bfbff },
		 { 0x80000000, 0, 0x80000023, 0, 0, 0 },
		 { 0x80000005, 0, 0xff40ff40, 0xff40ff40, 0x20080140, 0x20080140 },
		 { 0x80000006, 0, 0x48002200, 0x68004200, 0x02006140, 0x00809140 } };
}

// Zen 4: EPYC 9004 (Genoa, family 0x19 model 0x11), as a guest sees it under Hyper-V.
inline leaves zen4()
{
	return { leaf0(0x10, "AuthenticAMD"),
		 { 1, 0, 0x00a10f11, 0x00000800, 0xfed83203, 0x178bfbff },
		 { 0x40000000, 0, 0x40000006, 0x7263694d, 0x666f736f, 0x76482074 },
		 { 0x80000000, 0, 0x80000028, 0, 0, 0 },
		 { 0x80000005, 0, 0xff48ff40, 0xff48ff40, 0x20080140, 0x20080140 },
		 { 0x80000006, 0, 0x5c002200, 0x6c004200, 0x04006140, 0x01009140 } };
}

// Zen 5: this machine, EPYC family 0x1a model 2 under KVM (a Firecracker kernel).
inline leaves zen5_kvm()
{
	return { leaf0(0x1c, "AuthenticAMD"),
		 { 1, 0, 0x00b00f21, 0x01020800, 0xfffa3203, 0x178bfbff },
		 { 2, 0, 0, 0, 0, 0 },
		 { 0x40000000, 0, 0x40000001, 0x4b4d564b, 0x564b4d56, 0x0000004d },
		 { 0x80000000, 0, 0x80000021, 0x68747541, 0x444d4163, 0x69746e65 },
		 { 0x80000005, 0, 0xff60ff40, 0xff60ff40, 0x300c0140, 0x20080140 },
		 { 0x80000006, 0, 0x40802040, 0x60804040, 0x04008140, 0x0c009140 } };
}


// The decoded processor of a fixture.
inline hte_cpu cpu_of(const leaves &l)
{
	hte_cpu c;
	hte_cpu_decode(&c, l.data(), l.size());
	return c;
}

} // namespace cpu_fixtures

#endif
