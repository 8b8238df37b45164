// SPDX-License-Identifier: MIT
// Description: arm64's return sites for the preload's dlopen() entry
// (lib/arch/aarch64/insn.h), decoded from buffers on any machine; on an
// arm64 build, the instruction-cache sync (arch.h) on code rewritten in
// place, and the return site the preload finds in a real object.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "arch/aarch64/insn.h"

#if defined(__aarch64__)
#include "arch.h"
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#endif

namespace {

// Encodings as the assembler writes them (aarch64-linux-gnu-as, objdump).
constexpr uint32_t ldp_16 = 0xa8c17bfd;     // ldp x29, x30, [sp], #16
constexpr uint32_t ldp_32 = 0xa8c27bfd;     // ldp x29, x30, [sp], #32
constexpr uint32_t ldp_496 = 0xa8df7bfd;    // ldp x29, x30, [sp], #496
constexpr uint32_t ldp_8 = 0xa8c0fbfd;      // ldp x29, x30, [sp], #8
constexpr uint32_t ldp_neg16 = 0xa8ff7bfd;  // ldp x29, x30, [sp], #-16
constexpr uint32_t ldp_pre = 0xa9c17bfd;    // ldp x29, x30, [sp, #16]!
constexpr uint32_t ldp_off = 0xa9417bfd;    // ldp x29, x30, [sp, #16]
constexpr uint32_t ldp_x19 = 0xa8c153f3;    // ldp x19, x20, [sp], #16
constexpr uint32_t ldp_w = 0x28c27bfd;      // ldp w29, w30, [sp], #16
constexpr uint32_t ldp_x1 = 0xa8c1783d;     // ldp x29, x30, [x1], #16
constexpr uint32_t ret = 0xd65f03c0;        // ret
constexpr uint32_t ret_x1 = 0xd65f0020;     // ret x1
constexpr uint32_t autiasp = 0xd50323bf;    // autiasp
constexpr uint32_t paciasp = 0xd503233f;    // paciasp
constexpr uint32_t nop = 0xd503201f;        // nop

// The words as bytes, at @shift bytes into the buffer.
std::vector<unsigned char> code(std::initializer_list<uint32_t> words, size_t shift = 0)
{
	std::vector<unsigned char> b(shift + words.size() * 4, 0xff);
	size_t k = shift;

	for (uint32_t w : words) {
		std::memcpy(&b[k], &w, 4);
		k += 4;
	}
	return b;
}

// Offset of the return site found in @b from byte @from, or -1.
long site(const std::vector<unsigned char> &b, size_t from = 0)
{
	const unsigned char *p = ht_a64_return_site(b.data() + from, b.size() - from);

	return p ? (long)(p - b.data()) : -1;
}

} // namespace

TEST_CASE("the epilogue's pop is read from ldp x29, x30, [sp], #N only")
{
	CHECK(ht_a64_epilogue_pop(ldp_16) == 16);
	CHECK(ht_a64_epilogue_pop(ldp_32) == 32);
	CHECK(ht_a64_epilogue_pop(ldp_496) == 496);
	// 8 would leave sp misaligned; a negative pop is no epilogue.
	CHECK(ht_a64_epilogue_pop(ldp_8) == 0);
	CHECK(ht_a64_epilogue_pop(ldp_neg16) == 0);
	// Other addressing modes, registers and widths.
	CHECK(ht_a64_epilogue_pop(ldp_pre) == 0);
	CHECK(ht_a64_epilogue_pop(ldp_off) == 0);
	CHECK(ht_a64_epilogue_pop(ldp_x19) == 0);
	CHECK(ht_a64_epilogue_pop(ldp_w) == 0);
	CHECK(ht_a64_epilogue_pop(ldp_x1) == 0);
	CHECK(ht_a64_epilogue_pop(ret) == 0);
}

TEST_CASE("a return site is an epilogue followed by ret, or autiasp then ret")
{
	CHECK(site(code({ nop, ldp_16, ret })) == 4);
	CHECK(site(code({ ldp_32, autiasp, ret })) == 0);
	CHECK(site(code({ ldp_16, nop, ret, ldp_32, ret })) == 12);
	// ret to another register, or an ldp that pops nothing usable.
	CHECK(site(code({ ldp_16, ret_x1 })) == -1);
	CHECK(site(code({ ldp_8, ret, ldp_pre, ret, ldp_x19, ret })) == -1);
	CHECK(site(code({ ldp_16, paciasp, ret })) == -1);
	CHECK(site(code({ ret, ldp_16 })) == -1);
}

TEST_CASE("the search stays inside the buffer")
{
	auto b = code({ nop, ldp_16, ret });

	// The ret lies beyond the bytes given.
	CHECK(ht_a64_return_site(b.data(), 8) == nullptr);
	CHECK(ht_a64_return_site(b.data(), 12) == b.data() + 4);
	// autiasp as the last word given: its ret is not looked at.
	auto a = code({ ldp_16, autiasp, ret });
	CHECK(ht_a64_return_site(a.data(), 8) == nullptr);
	CHECK(ht_a64_return_site(a.data(), 0) == nullptr);
}

TEST_CASE("only 4-byte aligned words are instructions")
{
	alignas(16) unsigned char b[32];
	uint32_t w[2] = { ldp_16, ret };

	// At an address 2 bytes past alignment the pair is no instruction.
	std::memset(b, 0, sizeof(b));
	std::memcpy(b + 2, w, 8);
	CHECK(ht_a64_return_site(b, sizeof(b)) == nullptr);
	CHECK(ht_a64_return_site(b + 1, sizeof(b) - 1) == nullptr);
	// Aligned, it is found from an unaligned start too.
	std::memset(b, 0, sizeof(b));
	std::memcpy(b + 8, w, 8);
	CHECK(ht_a64_return_site(b + 1, sizeof(b) - 1) == b + 8);
}

#if defined(__aarch64__)
namespace {

// "mov w0, #value; ret" at @p.
void write_return(void *p, unsigned value)
{
	uint32_t fn[2] = { 0x52800000u | (value & 0xffff) << 5, ret };

	std::memcpy(p, fn, sizeof(fn));
}

int first_object_site(struct dl_phdr_info *info, size_t, void *data)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			auto *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
			*(const unsigned char **)data = ht_arch_return_site(p, ph->p_filesz);
			return 1;
		}
	}
	return 1;
}

} // namespace

TEST_CASE("code rewritten in place runs as rewritten after the sync")
{
	const size_t len = 1 << 16;
	void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);

	// Many rounds over the same bytes: a stale line would answer the round before.
	for (unsigned round = 1; round <= 200; round++) {
		REQUIRE(mprotect(m, len, PROT_READ | PROT_WRITE) == 0);
		for (size_t off = 0; off < len; off += 4096)
			write_return((char *)m + off, round + (unsigned)(off >> 12));
		ht_arch_sync_code(m, len);
		REQUIRE(mprotect(m, len, PROT_READ | PROT_EXEC) == 0);
		for (size_t off = 0; off < len; off += 4096) {
			auto fn = (unsigned (*)(void))((char *)m + off);
			REQUIRE(fn() == round + (unsigned)(off >> 12));
		}
	}
	munmap(m, len);
}

TEST_CASE("the program has a return site for the preload's dlopen() entry")
{
	const unsigned char *p = nullptr;

	dl_iterate_phdr(first_object_site, &p);
	REQUIRE(p != nullptr);
	uint32_t w[2];
	std::memcpy(w, p, 8);
	CHECK(ht_a64_epilogue_pop(w[0]) >= 16);
	CHECK((w[1] == ret || w[1] == autiasp));
}
#endif
