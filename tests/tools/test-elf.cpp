// Description: the pure ELF checks and hugeedit's segment choice, on
// synthetic images in memory (tools/elfcheck.h).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <sys/mman.h>

#include "elfcheck.h"
#include "tooltest.hpp"

namespace {

const uint32_t R = 4, W = 2, X = 1, HUGE_BIT = 0x00100000;
const uint32_t LOAD = 1, DYNAMIC = 2, NOTE = 4;

// A typical executable: headers, text, read-only data, data with bss.
gen_elf typical(int cls = 64, bool msb = false)
{
	gen_elf g;
	g.cls = cls;
	g.msb = msb;
	g.segs = {
		{ 6, R, 0x40, 0x400040, 0xe0, 0xe0, 8 },          // PT_PHDR
		{ LOAD, R, 0, 0x400000, 0x1000, 0x1000, 0x1000 },
		{ LOAD, R | X, 0x1000, 0x401000, 0x3000, 0x3000, 0x1000 },
		{ LOAD, R, 0x4000, 0x404000, 0x1000, 0x1000, 0x1000 },
		{ LOAD, R | W, 0x5000, 0x405000, 0x800, 0x2000, 0x1000 },
		{ NOTE, R, 0x200, 0x400200, 0x20, 0x20, 4 },
	};
	return g;
}

struct checked {
	hte_elf e;
	enum hte_error err;
	explicit checked(const std::string &b) { err = hte_check_buffer(b.data(), b.size(), &e); }
	~checked() { hte_elf_release(&e); }
};

} // namespace

TEST_CASE("a well-formed file of each class and byte order is read with its PT_LOAD entries", "[elf]")
{
	for (int cls : { 32, 64 }) {
		for (bool msb : { false, true }) {
			checked c(make_elf(typical(cls, msb)));
			INFO("class " << cls << " msb " << msb);
			REQUIRE(c.err == HTE_OK);
			CHECK(c.e.elfclass == cls);
			CHECK(c.e.msb == (int)msb);
			CHECK(c.e.type == 2);
			CHECK(c.e.phnum == 6);
			REQUIRE(c.e.nload == 4);
			CHECK(c.e.load[1].index == 2);
			CHECK(c.e.load[1].flags == (R | X));
			CHECK(c.e.load[1].vaddr == 0x401000);
			CHECK(c.e.load[1].memsz == 0x3000);
			CHECK(c.e.load[3].filesz == 0x800);
			// p_flags is the second field in 64-bit headers, the seventh in 32-bit ones.
			size_t ehsize = cls == 64 ? 64 : 52, entsize = cls == 64 ? 56 : 32;
			CHECK(c.e.load[1].flags_at == ehsize + 2 * entsize + (cls == 64 ? 4 : 24));
		}
	}
}

TEST_CASE("each kind of refusal is named", "[elf]")
{
	std::string good = make_elf(typical());

	SECTION("no magic") {
		checked c(std::string("\x7f" "ELG", 4) + good.substr(4));
		CHECK(c.err == HTE_E_NOT_ELF);
		CHECK(std::string(c.e.why).find("not an ELF file") != std::string::npos);
	}
	SECTION("empty and tiny buffers") {
		CHECK(checked(std::string()).err == HTE_E_NOT_ELF);
		CHECK(checked(good.substr(0, 3)).err == HTE_E_NOT_ELF);
		CHECK(checked(good.substr(0, 10)).err == HTE_E_TRUNCATED);
		CHECK(checked(good.substr(0, 40)).err == HTE_E_TRUNCATED);
		hte_elf e;
		CHECK(hte_check_buffer(nullptr, 0, &e) == HTE_E_NOT_ELF);
		hte_elf_release(&e);
	}
	SECTION("class") {
		std::string b = good;
		b[4] = 3;
		checked c(b);
		CHECK(c.err == HTE_E_CLASS);
		CHECK(std::string(c.e.why).find("class 3") != std::string::npos);
	}
	SECTION("byte order") {
		std::string b = good;
		b[5] = 0;
		CHECK(checked(b).err == HTE_E_BYTE_ORDER);
	}
	SECTION("version") {
		std::string b = good;
		b[6] = 2;
		CHECK(checked(b).err == HTE_E_VERSION);
	}
	SECTION("program headers outside the file") {
		std::string b = good;
		put_uint(b, 0x20, 8, b.size() - 0x10, false);
		checked c(b);
		CHECK(c.err == HTE_E_OUTSIDE);
		CHECK(std::string(c.e.why).find("program header table") != std::string::npos);
		put_uint(b, 0x20, 8, ~0ULL - 8, false); // the sum wraps
		CHECK(checked(b).err == HTE_E_OUTSIDE);
	}
	SECTION("section headers outside the file") {
		std::string b = good;
		put_uint(b, 0x28, 8, b.size() + 0x1000, false);
		put_uint(b, 0x3c, 2, 3, false);
		CHECK(checked(b).err == HTE_E_OUTSIDE);
	}
	SECTION("program header entry size") {
		std::string b = good;
		put_uint(b, 0x36, 2, 0x38 + 8, false);
		CHECK(checked(b).err == HTE_E_BAD_HEADER);
	}
	SECTION("a segment beyond the end of the file is a truncation") {
		std::string b = good.substr(0, 0x4800);
		checked c(b);
		CHECK(c.err == HTE_E_TRUNCATED);
		CHECK(std::string(c.e.why).find("segment 3 needs bytes up to 0x5000") != std::string::npos);
	}
	SECTION("file size larger than memory size") {
		gen_elf g = typical();
		g.segs[4].filesz = 0x3000;
		CHECK(checked(make_elf(g)).err == HTE_E_BAD_HEADER);
	}
	SECTION("addresses that wrap") {
		gen_elf g = typical();
		g.segs[2].vaddr = ~0ULL - 0x100;
		CHECK(checked(make_elf(g)).err == HTE_E_BAD_HEADER);
		gen_elf h = typical(32);
		h.segs[2].vaddr = 0xffffff00;
		CHECK(checked(make_elf(h)).err == HTE_E_BAD_HEADER);
	}
	for (int e = 0; e <= HTE_E__COUNT; e++)
		CHECK(std::strlen(hte_error_str((enum hte_error)e)) > 0);
}

TEST_CASE("more than 0xfffe program headers: the count comes from section 0", "[elf]")
{
	gen_elf g = typical();
	g.shdrs = true;
	std::string b = make_elf(g);
	uint64_t shoff = get_uint(b, 0x28, 8, false);
	put_uint(b, 0x38, 2, 0xffff, false); // PN_XNUM
	put_uint(b, shoff + 44, 4, 6, false); // sh_info of section 0
	checked c(b);
	REQUIRE(c.err == HTE_OK);
	CHECK(c.e.phnum == 6);
	CHECK(c.e.nload == 4);

	put_uint(b, shoff + 44, 4, 100000, false); // a table far larger than the file
	checked d(b);
	CHECK(d.err == HTE_E_OUTSIDE);
}

TEST_CASE("a file without program headers is valid and has no segment", "[elf]")
{
	gen_elf g;
	g.type = 1; // ET_REL
	g.shdrs = true;
	checked c(make_elf(g));
	CHECK(c.err == HTE_OK);
	CHECK(c.e.phnum == 0);
	CHECK(c.e.nload == 0);
}

TEST_CASE("the checker never writes to the buffer", "[elf]")
{
	// A read-only mapping: any write would fault.  Both byte orders, since
	// libelf converts the foreign one.
	for (bool msb : { false, true }) {
		std::string b = make_elf(typical(64, msb));
		void *p = mmap(nullptr, b.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		REQUIRE(p != MAP_FAILED);
		std::memcpy(p, b.data(), b.size());
		REQUIRE(mprotect(p, b.size(), PROT_READ) == 0);
		hte_elf e;
		CHECK(hte_check_buffer(p, b.size(), &e) == HTE_OK);
		hte_elf_release(&e);
		munmap(p, b.size());
	}
}

TEST_CASE("hugeedit's text is r-x with all bytes in the file; its data is rw-", "[edit]")
{
	hte_seg s{};
	s.filesz = s.memsz = 0x1000;
	s.flags = R | X;
	CHECK(hte_seg_is_text(&s));
	CHECK_FALSE(hte_seg_is_data(&s));
	s.flags = R | X | HUGE_BIT | 0x8;
	CHECK(hte_seg_is_text(&s)); // bits outside rwx do not matter
	s.memsz = 0x2000;
	CHECK_FALSE(hte_seg_is_text(&s)); // a bss tail
	s.memsz = s.filesz;
	s.flags = R | W | X;
	CHECK_FALSE(hte_seg_is_text(&s));
	CHECK_FALSE(hte_seg_is_data(&s));
	s.flags = X;
	CHECK_FALSE(hte_seg_is_text(&s));
	s.flags = R | W;
	s.memsz = 0x5000;
	CHECK(hte_seg_is_data(&s)); // bss does not matter for data
	s.flags = R;
	CHECK_FALSE(hte_seg_is_data(&s));
}

TEST_CASE("an option clears the bit everywhere, then sets it on the chosen kinds", "[edit]")
{
	hte_seg text{}, data{}, ro{};
	text.flags = R | X;
	text.filesz = text.memsz = 0x1000;
	data.flags = R | W | HUGE_BIT;
	data.filesz = 0x10;
	data.memsz = 0x20;
	ro.flags = R | HUGE_BIT;

	CHECK(hte_edit_flags(&text, 0) == (R | X));
	CHECK(hte_edit_flags(&data, 0) == (R | W | HUGE_BIT));
	CHECK(hte_edit_flags(&text, HTE_EDIT_TEXT) == (R | X | HUGE_BIT));
	CHECK(hte_edit_flags(&data, HTE_EDIT_TEXT) == (R | W));
	CHECK(hte_edit_flags(&ro, HTE_EDIT_TEXT) == R);
	CHECK(hte_edit_flags(&text, HTE_EDIT_DATA) == (R | X));
	CHECK(hte_edit_flags(&data, HTE_EDIT_DATA) == (R | W | HUGE_BIT));
	CHECK(hte_edit_flags(&text, HTE_EDIT_TEXT | HTE_EDIT_DATA) == (R | X | HUGE_BIT));
	CHECK(hte_edit_flags(&data, HTE_EDIT_DISABLE) == (R | W));
	CHECK(hte_edit_flags(&ro, HTE_EDIT_DISABLE) == R);
}

TEST_CASE("the table edit changes only p_flags of PT_LOAD entries, in the file's byte order", "[edit]")
{
	for (int cls : { 32, 64 }) {
		for (bool msb : { false, true }) {
			INFO("class " << cls << " msb " << msb);
			gen_elf g = typical(cls, msb);
			g.segs[5].flags |= HUGE_BIT; // a PT_NOTE with the bit: not touched
			std::string b = make_elf(g);
			checked c(b);
			REQUIRE(c.err == HTE_OK);
			size_t len = c.e.phnum * c.e.phentsize, first, end;
			std::string table = b.substr(c.e.phoff, len);

			long n = hte_edit_table(&c.e, HTE_EDIT_TEXT | HTE_EDIT_DATA, (unsigned char *)&table[0], len,
						&first, &end);
			CHECK(n == 2);
			std::string after = b;
			after.replace(c.e.phoff, len, table);
			std::vector<uint32_t> f = phdr_flags(after);
			CHECK(f[0] == R);
			CHECK(f[1] == R);
			CHECK(f[2] == (R | X | HUGE_BIT));
			CHECK(f[3] == R);
			CHECK(f[4] == (R | W | HUGE_BIT));
			CHECK(f[5] == (R | HUGE_BIT));
			// The changed range starts at the text's flags and ends after the data's.
			CHECK(first == c.e.load[1].flags_at - c.e.phoff);
			CHECK(end == c.e.load[3].flags_at - c.e.phoff + 4);
			for (size_t i = 0; i < b.size(); i++) {
				bool in_flags = i >= c.e.load[1].flags_at && i < c.e.load[1].flags_at + 4;
				in_flags = in_flags || (i >= c.e.load[3].flags_at && i < c.e.load[3].flags_at + 4);
				if (!in_flags && b[i] != after[i])
					FAIL("byte " << i << " changed outside p_flags");
			}
			// Applying it again changes nothing, to the edited table or to the edited file.
			CHECK(hte_edit_table(&c.e, HTE_EDIT_TEXT | HTE_EDIT_DATA, (unsigned char *)&table[0], len, &first,
					     &end) == 0);
			checked again(after);
			std::string t2 = after.substr(c.e.phoff, len);
			CHECK(hte_edit_table(&again.e, HTE_EDIT_TEXT | HTE_EDIT_DATA, (unsigned char *)&t2[0], len, &first,
					     &end) == 0);
			CHECK(first == 0);
			CHECK(end == 0);
			CHECK(hte_edit_table(&c.e, HTE_EDIT_TEXT, (unsigned char *)&table[0], len - 1, &first, &end) == -1);
		}
	}
}

TEST_CASE("32-bit fields are read and written in either byte order", "[edit]")
{
	unsigned char b[4];
	hte_put32(b, 0x00100005, 0);
	CHECK(b[0] == 0x05);
	CHECK(b[2] == 0x10);
	CHECK(hte_get32(b, 0) == 0x00100005);
	hte_put32(b, 0x00100005, 1);
	CHECK(b[3] == 0x05);
	CHECK(b[1] == 0x10);
	CHECK(hte_get32(b, 1) == 0x00100005);
}

TEST_CASE("twenty thousand mutated headers never crash the checker", "[elf][hostile]")
{
	std::mt19937 rng(20261122);
	const std::string bases[] = { make_elf(typical(64, false)), make_elf(typical(32, false)),
				      make_elf(typical(64, true)), make_elf(typical(32, true)) };
	size_t accepted = 0, refused = 0;

	for (int i = 0; i < 20000; i++) {
		std::string b = bases[i % 4];
		size_t hdr = 64 + 6 * 56;
		int flips = 1 + (int)(rng() % 8);
		for (int k = 0; k < flips; k++) {
			size_t at = rng() % std::min(hdr, b.size());
			b[at] = (char)(rng() % 3 == 0 ? 0xff : rng());
		}
		if (rng() % 5 == 0)
			b.resize(rng() % b.size());
		hte_elf e;
		enum hte_error err = hte_check_buffer(b.data(), b.size(), &e);
		if (err == HTE_OK) {
			accepted++;
			// What is accepted is consistent with the buffer.
			for (size_t s = 0; s < e.nload; s++) {
				REQUIRE(e.load[s].flags_at + 4 <= b.size());
				REQUIRE(e.load[s].offset + e.load[s].filesz <= b.size());
			}
		} else {
			refused++;
			REQUIRE(std::strlen(e.why) > 0);
		}
		hte_elf_release(&e);
	}
	CHECK(accepted > 0);
	CHECK(refused > 0);
}
