// Description: `hugetext check` on files: golden tables and JSON for
// synthetic layouts, real programs, refusals and usage errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <unistd.h>

#include "tooltest.hpp"

namespace {

const uint32_t R = 4, W = 2, X = 1, HUGE_BIT = 0x00100000, LOAD = 1;

gen_elf layout(uint16_t type, std::vector<gen_seg> segs, int cls = 64, bool msb = false)
{
	gen_elf g;
	g.type = type;
	g.cls = cls;
	g.msb = msb;
	g.segs = std::move(segs);
	return g;
}

// Segments whose file offsets follow their addresses modulo 4 KiB, small
// on disk: the file holds only the first 0x100 bytes of each.
gen_seg load(uint32_t flags, uint64_t vaddr, uint64_t memsz, uint64_t align = 0x1000)
{
	return { LOAD, flags, vaddr & 0xfffff, vaddr, std::min<uint64_t>(memsz, 0x100), memsz, align };
}

// The layouts the golden files describe, by name.
std::vector<std::pair<std::string, gen_elf>> layouts()
{
	return {
		{ "exec-aligned", layout(2, { load(R, 0x400000, 0x1000), load(R | X, 0x600000, 0x600000),
					     load(R, 0xc00000, 0x1000) }) },
		{ "exec-tail-blocked", layout(2, { load(R, 0x400000, 0x1000), load(R | X, 0x401000, 0x2802009),
						  load(R, 0x2c04000, 0x1fc), load(R | W, 0x2c05dd0, 0x2b8) }) },
		{ "exec-tail-free", layout(2, { load(R | X, 0x401000, 0x500000), load(R | W, 0x1000000, 0x1000) }) },
		{ "pie-4k", layout(3, { load(R, 0, 0x928), load(R | X, 0x1000, 0x2802009), load(R, 0x2804000, 0x1fc) }) },
		{ "pie-2m", layout(3, { load(R, 0, 0x928, 0x200000), load(R | X, 0x200000, 0x1402009, 0x200000),
				       load(R, 0x1800000, 0x1fc, 0x200000) }) },
		{ "small-text", layout(2, { load(R | X, 0x401000, 0x10000), load(R, 0x411000, 0x1000) }) },
		{ "two-code-32msb", layout(2, { load(R | X | HUGE_BIT, 0x8048000, 0x500000),
						load(R, 0x8600000, 0x1000), load(R | X, 0x8800000, 0x400000),
						load(R | W, 0x8c00000, 0x100) }, 32, true) },
	};
}

// What check must say of a program with one code segment that the next
// segment's first page shares its last 2 MiB page with: its whole 2 MiB
// pages, of all its bytes.  The figures follow the linker's layout:
// bigtext-nopie has 38 of 40 MiB on x86-64 (code from 0x401000), 40 of
// 40 MiB on arm64 (headers and code in one segment from 0x400000).
std::string below_100(const std::string &path)
{
	const uint64_t huge = 0x200000;
	const gen_seg *code = nullptr, *next = nullptr;
	std::vector<gen_seg> segs = read_phdrs(read_file(path));

	for (auto &s : segs) {
		if (s.type != LOAD)
			continue;
		if (code && !next)
			next = &s;
		if (!code && (s.flags & X))
			code = &s;
	}
	REQUIRE(code);
	REQUIRE(next);
	uint64_t lo = (code->vaddr + huge - 1) / huge * huge, hi = (code->vaddr + code->memsz) / huge * huge;
	REQUIRE(hi > lo);
	REQUIRE(next->vaddr < hi + huge); // the tail page cannot be claimed
	REQUIRE(hi - lo < code->memsz);   // so below 100%
	char want[100];
	std::snprintf(want, sizeof(want), "%.1f MiB of %.1f MiB of code can go onto 2 MiB pages",
		      (hi - lo) / 1048576.0, code->memsz / 1048576.0);
	return want;
}

} // namespace

TEST_CASE("the table for each layout matches its golden file", "[check][golden]")
{
	temp_dir d("check-golden");
	std::string text, json;

	for (auto &l : layouts()) {
		write_file(d / l.first, make_elf(l.second));
		run_result r = tool({ "check", d / l.first });
		INFO(l.first << ": " << r.err);
		CHECK(r.status == 0);
		CHECK(r.err == "");
		text += r.out + "\n";
		r = tool({ "check", "--json", d / l.first });
		CHECK(r.status == 0);
		json += r.out;
	}
	CHECK(golden_diff("check-files.txt", replace_all(text, d.path + "/", "")) == "");
	CHECK(golden_diff("check-files.json", replace_all(json, d.path + "/", "")) == "");
}

TEST_CASE("a file below 100% gets the relink flags, a file at 100% does not", "[check]")
{
	const std::string flags = "-Wl,-zmax-page-size=0x200000 -Wl,-zcommon-page-size=0x200000";
	const std::string prog = build_path("tests/bigtext-nopie");
	run_result r = tool({ "check", prog });
	CHECK(r.status == 0);
	CHECK(r.out.find(flags) != std::string::npos);
	CHECK(r.out.find(below_100(prog)) != std::string::npos);

	// examples/relinked is linked with those flags.
	r = tool({ "check", build_path("examples/relinked") });
	CHECK(r.status == 0);
	CHECK(r.out.find(flags) == std::string::npos);
	CHECK(r.out.find("All 20.0 MiB of code can go onto 2 MiB pages.") != std::string::npos);
	CHECK(r.out.find("guaranteed") == std::string::npos); // p_align is 2 MiB: exact

	r = tool({ "check", "--json", build_path("examples/relinked") });
	CHECK(r.out.find("\"exact\": true") != std::string::npos);
}

TEST_CASE("a position-independent file with small p_align reports guaranteed figures", "[check]")
{
	run_result r = tool({ "check", build_path("tests/bigtext-pie") });
	CHECK(r.status == 0);
	CHECK(r.out.find("only known to be a multiple of 0x1000") != std::string::npos);
	CHECK(r.out.find("the best placement covers 40.0 MiB") != std::string::npos);
	r = tool({ "check", "--json", build_path("tests/bigtext-pie") });
	CHECK(r.out.find("\"exact\": false") != std::string::npos);
	CHECK(r.out.find("\"huge_bytes\": 39845888") != std::string::npos);
}

TEST_CASE("check refuses what it cannot read, naming the file", "[check][refuse]")
{
	temp_dir d("check-refuse");
	write_file(d / "text", "hello\n");
	gen_elf rel;
	rel.type = 1;
	rel.shdrs = true;
	write_file(d / "object", make_elf(rel));
	write_file(d / "data-only", make_elf(layout(2, { load(R, 0x400000, 0x1000), load(R | W, 0x401000, 0x1000) })));

	struct { std::string path, msg; } cases[] = {
		{ d / "text", ": not an ELF file (no ELF magic)" },
		{ d / "missing", ": cannot open: No such file or directory" },
		{ d.path, ": is a directory" },
		{ d / "object", ": not an executable or shared library (relocatable ELF file)" },
		{ d / "data-only", ": no executable segment" },
	};
	for (auto &c : cases) {
		run_result r = tool({ "check", c.path });
		INFO(c.path);
		CHECK(r.status == 1);
		CHECK(r.out == "");
		CHECK(r.err == "hugetext check: " + c.path + c.msg + "\n");
	}
}

TEST_CASE("check's usage errors exit 2", "[check][usage]")
{
	run_result r = tool({ "check" });
	CHECK(r.status == 2);
	CHECK(r.err.find("no FILE or PID given") != std::string::npos);
	CHECK(tool({ "check", "a", "b" }).status == 2);
	CHECK(tool({ "check", "--bogus", "a" }).status == 2);
	r = tool({ "check", "--symbols", "1" });
	CHECK(r.status == 2);
	CHECK(r.err.find("--symbols works on a FILE") != std::string::npos);
	r = tool({ "check", "--help" });
	CHECK(r.status == 0);
	CHECK(r.out.find("usage: hugetext check") == 0);
}

TEST_CASE("check of a process lists its executable mappings from smaps", "[check][pid]")
{
	std::string self = std::to_string(getpid());
	run_result r = tool({ "check", self });
	CHECK(r.status == 0);
	CHECK(r.out.find("pid " + self + " (") == 0);
	CHECK(r.out.find("test-tools-check") != std::string::npos);
	CHECK(r.out.find("libc.so") != std::string::npos);
	CHECK(r.out.find("of code on huge pages") != std::string::npos);

	r = tool({ "check", "--json", self });
	CHECK(r.status == 0);
	CHECK(r.out.find("{\"regions\": [{\"object\": ") == 0);
	CHECK(r.out.find("test-tools-check\", \"start\": ") != std::string::npos);
	CHECK(r.out.find("\"huge_bytes\": ") != std::string::npos);
}

TEST_CASE("check of a process that does not exist says so", "[check][pid]")
{
	run_result r = tool({ "check", "999999999" });
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext check: no process 999999999 (/proc/999999999/smaps does not exist)\n");
	// A file named like a number is reached with a path.
	temp_dir d("check-numeric");
	write_file(d / "123", make_elf(layout(2, { load(R | X, 0x400000, 0x200000) })));
	r = run_cmd({ "sh", "-c", "cd " + d.path + " && exec " + tool_path() + " check ./123" });
	CHECK(r.status == 0);
	CHECK(r.out.find("./123: ELF64") == 0);
}

#ifdef HT_NO_SYMBOLS
TEST_CASE("without the symbols feature, --symbols says it is not built in", "[check]")
{
	run_result r = tool({ "check", "--symbols", build_path("tests/small") });
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext check: --symbols is not built in (meson setup -Dsymbols=enabled)\n");
}
#endif
