// Description: `hugetext edit --align` and `--align --disable`: only p_align
// bytes change and --disable gives the file back byte for byte; hostile,
// unloadable or unsuitable files are refused and left untouched; segments
// whose offset and address differ modulo 2 MiB are left alone; the edited
// library (dlopen) and PIE program (kernel) really load on a 2 MiB
// boundary; and `check` says which files need it.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <dlfcn.h>
#include <fcntl.h>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tooltest.hpp"

namespace {

const uint32_t R = 4, W = 2, X = 1, LOAD = 1;
const uint64_t HUGE_2M = 0x200000;

// A position-independent x86-64 file as linkers make them: headers (r--),
// code whose offset agrees with its address modulo 2 MiB, rodata, data
// (page-congruent only), a second code segment that is off by 0x2000
// modulo 2 MiB, and a PT_GNU_STACK.
gen_elf pie(bool msb = false)
{
	gen_elf g;
	g.cls = 64;
	g.msb = msb;
	g.type = 3;
	g.machine = 62;
	g.segs = {
		{ LOAD, R, 0, 0, 0x800, 0x800, 0x1000 },
		{ LOAD, R | X, 0x1000, 0x1000, 0x2000, 0x2000, 0x1000 },
		{ LOAD, R, 0x3000, 0x3000, 0x100, 0x100, 0x1000 },
		{ LOAD, R | W, 0x3e00, 0x4e00, 0x200, 0x400, 0x1000 },
		{ LOAD, R | X, 0x5000, 0x207000, 0x1000, 0x1000, 0x1000 },
		{ 0x6474e551, R | W, 0, 0, 0, 0, 0x10 },
	};
	g.shdrs = true;
	return g;
}

// The raw header values of an image, read without any check (64-bit only
// is enough: --align takes nothing else).
struct raw_header {
	bool msb = false;
	uint64_t phoff = 0;
	size_t phentsize = 0, phnum = 0;
};

raw_header raw(const std::string &b)
{
	raw_header h;
	if (b.size() < 64 || b[4] != 2)
		return h;
	h.msb = b[5] == 2;
	h.phoff = get_uint(b, 0x20, 8, h.msb);
	h.phentsize = get_uint(b, 0x36, 2, h.msb);
	h.phnum = get_uint(b, 0x38, 2, h.msb);
	return h;
}

// p_align of every program header, read independently of the tool.
std::vector<uint64_t> aligns(const std::string &b)
{
	raw_header h = raw(b);
	std::vector<uint64_t> v;
	for (size_t i = 0; i < h.phnum; i++)
		v.push_back(get_uint(b, h.phoff + i * 56 + 48, 8, h.msb));
	return v;
}

// Is @pos inside a p_align field of the program header table of @h?
bool in_align(const raw_header &h, size_t pos)
{
	if (h.phentsize != 56 || pos < h.phoff || pos >= h.phoff + h.phnum * 56)
		return false;
	return (pos - h.phoff) % 56 >= 48;
}

struct file_state {
	std::string bytes;
	struct timespec mtime;
};

file_state state_of(const std::string &path)
{
	struct stat st {};
	lstat(path.c_str(), &st);
	return { read_file(path), st.st_mtim };
}

bool same_state(const file_state &a, const file_state &b)
{
	return a.bytes == b.bytes && a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec;
}

run_result align(const std::string &path, bool undo = false)
{
	if (undo)
		return tool({ "edit", "--align", "--disable", path });
	return tool({ "edit", "--align", path });
}

// Copies a build product into @d, executable.
std::string copy_in(const temp_dir &d, const std::string &rel, const std::string &name)
{
	std::string to = d / name;
	write_file(to, read_file(build_path(rel)), 0755);
	return to;
}

// The first mapping of @path in @maps (the text of /proc/PID/maps): its start.
uint64_t map_start(const std::string &maps, const std::string &path)
{
	std::istringstream in(maps);
	std::string line;
	while (std::getline(in, line))
		if (line.size() > path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0)
			return std::stoull(line.substr(0, line.find('-')), nullptr, 16);
	return 1; // never page-aligned: a missing mapping fails the checks
}

// dlopen()s @path in a child and returns its /proc/self/maps, or "" on failure.
std::string maps_after_dlopen(const std::string &path)
{
	int p[2];
	if (pipe(p) != 0)
		return "";
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
			std::string m = read_file("/proc/self/maps");
			if (write(p[1], m.data(), m.size()) < 0)
				_exit(2);
		}
		_exit(0);
	}
	close(p[1]);
	std::string out;
	char buf[4096];
	ssize_t n;
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		out.append(buf, (size_t)n);
	close(p[0]);
	waitpid(pid, nullptr, 0);
	return out;
}

// The base of a PIE program as the kernel placed it: AT_PHDR minus the
// table's address in the file (its offset: the first segment maps offset 0
// at address 0 in these files).
uint64_t pie_base(const std::string &prog)
{
	run_result r = run_cmd({ prog }, { "LD_SHOW_AUXV=1" });
	size_t at = r.out.find("AT_PHDR:");
	if (r.status != 0 || at == std::string::npos)
		return 1;
	uint64_t phdr = std::stoull(r.out.substr(r.out.find("0x", at)), nullptr, 16);
	return phdr - raw(read_file(prog)).phoff;
}

} // namespace

TEST_CASE("--align raises p_align of congruent code only, and --disable gives the file back byte for byte",
	  "[align]")
{
	temp_dir d("align-bytes");
	for (bool msb : { false, true }) {
		INFO("msb " << msb);
		std::string f = d / "lib.so", before = make_elf(pie(msb));
		write_file(f, before);
		run_result r = align(f);
		CHECK(r.status == 0);
		CHECK(r.err == "");
		CHECK(r.out.find(f + ": 1 segment now loads on a 2 MiB boundary (p_align was 0x1000") == 0);
		CHECK(r.out.find("segment 1 (r-x, offset 0x1000, vaddr 0x1000): p_align 0x200000, was 0x1000") !=
		      std::string::npos);
		CHECK(r.out.find("segment 4 (r-x, offset 0x5000, vaddr 0x207000): left alone: offset and address "
				 "differ by 0x202000") == std::string::npos); // the difference is modulo 2 MiB
		CHECK(r.out.find("segment 4 (r-x, offset 0x5000, vaddr 0x207000): left alone: offset and address "
				 "differ by 0x2000 modulo 2 MiB") != std::string::npos);
		std::string after = read_file(f);
		CHECK(aligns(after) == std::vector<uint64_t>{ 0x1000, HUGE_2M, 0x1000, 0x1000, 0x1000, 0x10 });
		REQUIRE(after.size() == before.size());
		raw_header h = raw(before);
		size_t changed = 0;
		for (size_t i = 0; i < before.size(); i++) {
			if (before[i] == after[i])
				continue;
			changed++;
			INFO("byte " << i);
			CHECK(in_align(h, i));
			CHECK((i - h.phoff) / 56 == 1); // the raised segment's entry only
		}
		CHECK(changed > 0);

		r = align(f, true);
		CHECK(r.status == 0);
		CHECK(r.out.find(f + ": p_align 0x1000 put back on 1 segment") == 0);
		CHECK(read_file(f) == before);
	}
}

TEST_CASE("real files: only p_align bytes change, --disable restores them, a second run writes nothing",
	  "[align]")
{
	temp_dir d("align-real");
	for (const char *rel : { "tests/small", "tests/libbigtext.so", "tests/tools/align-tiny.so" }) {
		INFO(rel);
		std::string f = copy_in(d, rel, "x"), before = read_file(f);
		run_result r = align(f);
		CHECK(r.status == 0);
		std::string after = read_file(f);
		raw_header h = raw(before);
		REQUIRE(after.size() == before.size());
		size_t changed = 0;
		for (size_t i = 0; i < before.size(); i++)
			if (before[i] != after[i]) {
				changed++;
				REQUIRE(in_align(h, i));
			}
		CHECK(changed > 0);
		bool some_huge = false;
		for (uint64_t a : aligns(after))
			some_huge = some_huge || a == HUGE_2M;
		CHECK(some_huge);

		file_state aligned = state_of(f);
		usleep(20000);
		r = align(f);
		CHECK(r.status == 0);
		CHECK(r.out.find("already loads on a 2 MiB boundary, not written") != std::string::npos);
		CHECK(same_state(aligned, state_of(f)));

		CHECK(align(f, true).status == 0);
		CHECK(read_file(f) == before);
		file_state restored = state_of(f);
		usleep(20000);
		r = align(f, true);
		CHECK(r.status == 0);
		CHECK(r.out.find("no p_align of 2 MiB to put back, not written") != std::string::npos);
		CHECK(same_state(restored, state_of(f)));
	}
}

// libbigtext's two code segments as linked here: the first with offset and
// address agreeing modulo 2 MiB, the second linked at 0x8000000 and off by
// the space between.  Which segments they are and how far off the second is
// follow the linker's layout: segments 1 and 4, 0x1fa000 on x86-64;
// segments 0 and 2, 0x1e0000 on arm64 (headers in the code, 64 KiB pages).
TEST_CASE("libbigtext's second code segment, off modulo 2 MiB, keeps its p_align", "[align]")
{
	temp_dir d("align-incongruent");
	std::string f = copy_in(d, "tests/libbigtext.so", "libbigtext.so");
	std::string image = read_file(f);
	std::vector<gen_seg> segs = read_phdrs(image);
	std::vector<size_t> code;
	for (size_t i = 0; i < segs.size(); i++)
		if (segs[i].type == LOAD && (segs[i].flags & X))
			code.push_back(i);
	REQUIRE(code.size() == 2);
	const gen_seg &first = segs[code[0]], &second = segs[code[1]];
	REQUIRE((first.vaddr - first.offset) % HUGE_2M == 0);
	uint64_t off = (second.vaddr - second.offset) % HUGE_2M;
	REQUIRE(off != 0);
	std::vector<uint64_t> before = aligns(image);
	REQUIRE(before.size() == segs.size());
	REQUIRE(before[code[1]] != HUGE_2M);

	run_result r = align(f);
	CHECK(r.status == 0);
	std::ostringstream want;
	want << "segment " << code[1] << std::hex << std::showbase << " (r-x, offset " << second.offset
	     << ", vaddr " << second.vaddr << "): left alone: offset and address differ by " << off
	     << " modulo 2 MiB (relink with -Wl,-zmax-page-size=0x200000)";
	INFO(r.out);
	CHECK(r.out.find(want.str()) != std::string::npos);
	std::vector<uint64_t> after = aligns(read_file(f));
	REQUIRE(after.size() == before.size());
	CHECK(after[code[0]] == HUGE_2M);
	CHECK(after[code[1]] == before[code[1]]);
}

TEST_CASE("no congruent code segment: the file is untouched and the status says so", "[align]")
{
	temp_dir d("align-none");
	gen_elf g = pie();
	g.segs[1].vaddr += 0x1000; // code now 0x1000 off modulo 2 MiB
	g.segs[2].vaddr += 0x1000;
	g.segs[3].vaddr += 0x1000;
	std::string f = d / "lib.so";
	write_file(f, make_elf(g));
	file_state before = state_of(f);
	usleep(20000);
	run_result r = align(f);
	CHECK(r.status == 1);
	CHECK(r.out == "");
	CHECK(r.err.find("hugetext edit: " + f + ": no executable segment has its file offset and address agreeing "
			 "modulo 2 MiB; left untouched\n") == 0);
	CHECK(r.err.find("segment 1 (r-x, offset 0x1000, vaddr 0x2000): left alone") != std::string::npos);
	CHECK(r.err.find("segment 4 (r-x, offset 0x5000, vaddr 0x207000): left alone") != std::string::npos);
	CHECK(same_state(before, state_of(f)));
}

TEST_CASE("hostile, unloadable and unsuitable files are refused with the reason and left untouched",
	  "[align][refuse]")
{
	temp_dir d("align-refuse");
	std::string good = make_elf(pie());
	auto with = [](void (*fn)(gen_elf &)) {
		gen_elf g = pie();
		fn(g);
		return make_elf(g);
	};
	struct { const char *name; std::string bytes; const char *reason; } cases[] = {
		{ "not-elf", "#!/bin/sh\necho not elf\n", "not an ELF file" },
		{ "empty", "", "not an ELF file" },
		{ "truncated", good.substr(0, 0x1800), "truncated" },
		{ "short-header", good.substr(0, 40), "truncated" },
		{ "phdrs-outside", [&] { std::string b = good; put_uint(b, 0x20, 8, 0x7fffffff0000, false); return b; }(),
		  "program header table" },
		{ "phnum-huge", [&] { std::string b = good; put_uint(b, 0x38, 2, 0xfff0, false); return b; }(),
		  "program header table (65520 entries at offset 0x40) lies outside the file" },
		// PN_XNUM: the count is section 0's sh_info, 0 here.
		{ "phnum-xnum", [&] { std::string b = good; put_uint(b, 0x38, 2, 0xffff, false); return b; }(),
		  "no loadable segment" },
		{ "phentsize", [&] { std::string b = good; put_uint(b, 0x36, 2, 0x1000, false); return b; }(),
		  "program header entries of 4096 bytes" },
		{ "class-9", [&] { std::string b = good; b[4] = 9; return b; }(), "class 9" },
		{ "elf32", with([](gen_elf &g) { g.cls = 32; g.machine = 3; }), "ELF32: --align is for 64-bit files only" },
		{ "machine", with([](gen_elf &g) { g.machine = 21; }), "machine 21" },
		{ "executable", with([](gen_elf &g) { g.type = 2; }), "an executable at fixed addresses" },
		{ "relocatable", with([](gen_elf &g) { g.type = 1; }), "not a position-independent executable" },
		{ "overlapping", with([](gen_elf &g) { g.segs[2].vaddr = 0x2000; g.segs[2].offset = 0x2000; }),
		  "segment 2 (at 0x2000) overlaps or comes before segment 1" },
		{ "unsorted", with([](gen_elf &g) { std::swap(g.segs[2], g.segs[3]); }),
		  "segment 3 (at 0x3000) overlaps or comes before segment 2" },
		{ "page-incongruent", with([](gen_elf &g) { g.segs[3].vaddr = 0x4f00; }),
		  "segment 3: offset 0x3e00 and address 0x4f00 differ modulo 4 KiB" },
		{ "first-off-2m", with([](gen_elf &g) { for (auto &s : g.segs) if (s.type == LOAD) s.vaddr += 0x200000 + 0x1000; }),
		  "the first loadable segment starts at 0x201000, not on a 2 MiB boundary" },
		{ "mixed-align", with([](gen_elf &g) { g.segs[3].align = 0x10000; }),
		  "different p_align (0x1000, 0x10000): --disable could not tell the original back" },
		{ "not-pow2", with([](gen_elf &g) { for (auto &s : g.segs) if (s.type == LOAD) s.align = 0x3000; }),
		  "p_align 0x3000 is not a power of two" },
		{ "all-code", with([](gen_elf &g) { g.segs = { { LOAD, R | W | X, 0, 0, 0x2000, 0x2000, 0x1000 } }; }),
		  "every loadable segment would get p_align 2 MiB" },
	};
	for (auto &c : cases) {
		INFO(c.name);
		std::string f = d / c.name;
		write_file(f, c.bytes);
		file_state before = state_of(f);
		usleep(2000);
		for (bool undo : { false, true }) {
			run_result r = align(f, undo);
			INFO("undo " << undo << ": " << r.err);
			CHECK(r.status == 1);
			CHECK(r.out == "");
			CHECK(r.err.find("hugetext edit: " + f + ": ") == 0);
			CHECK(r.err.find(c.reason) != std::string::npos);
		}
		CHECK(same_state(before, state_of(f)));
	}

	SECTION("a symbolic link, even to a file that qualifies; the target stays as it was") {
		std::string target = d / "target.so", link = d / "link.so";
		write_file(target, good);
		REQUIRE(symlink(target.c_str(), link.c_str()) == 0);
		file_state before = state_of(target);
		run_result r = align(link);
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext edit: " + link + ": is a symbolic link; --align edits in place, so give the "
				   "file itself (readlink -f)\n");
		CHECK(same_state(before, state_of(target)));
		CHECK(align(target).status == 0); // the file itself qualifies
	}
	SECTION("a directory, a missing file, a FIFO") {
		run_result r = align(d.path);
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext edit: " + d.path + ": cannot open for writing: Is a directory\n");
		r = align(d / "missing");
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext edit: " + d / "missing" + ": cannot open for writing: No such file or directory\n");
		CHECK_FALSE(file_exists(d / "missing"));
		std::string fifo = d / "fifo";
		REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
		r = align(fifo);
		CHECK(r.status == 1);
		CHECK(r.err.find("not a regular file") != std::string::npos);
	}
}

TEST_CASE("mutated headers: never a crash, a refused file unchanged, an edit only in p_align", "[align][hostile]")
{
	temp_dir d("align-mutants");
	std::vector<std::string> bases = { make_elf(pie(false)), make_elf(pie(true)), read_file(build_path("tests/small")) };
	std::mt19937 rng(13);
	size_t refused = 0, edited = 0;
	// Under emulation (the kernel matrix's TCG guests) each run of the tool
	// costs tens of times more: fewer mutants, the same checks on each.
	const int count = std::getenv("HT_EMULATED") ? 40 : 160;
	const size_t fields[][2] = { { 0x20, 8 }, { 0x28, 8 }, { 0x36, 2 }, { 0x38, 2 }, { 0x3a, 2 }, { 0x3c, 2 } };

	for (int i = 0; i < count; i++) {
		std::string b = bases[(size_t)i % bases.size()];
		raw_header h = raw(b);
		uint64_t extremes[] = { 0, 1, 0xfff, 0x1000, 0x200000, 0xffff, 0xffffffff, ~0ULL, b.size(), b.size() + 1, rng() };
		uint64_t extreme = extremes[rng() % (sizeof(extremes) / sizeof(extremes[0]))];
		switch (rng() % 4) {
		case 0: // random bytes in the headers
			for (int k = 1 + (int)(rng() % 4); k > 0; k--)
				b[rng() % (h.phoff + h.phnum * h.phentsize)] = (char)rng();
			break;
		case 1: { // an ELF header field set to an extreme
			auto &f = fields[rng() % (sizeof(fields) / sizeof(fields[0]))];
			put_uint(b, f[0], f[1], extreme, h.msb);
			break;
		}
		case 2: // a program header field (offset, vaddr, filesz, memsz, align) set to an extreme
			put_uint(b, h.phoff + (rng() % h.phnum) * 56 + 8 * (1 + rng() % 6), 8, extreme, h.msb);
			break;
		default:
			b.resize(rng() % b.size());
			break;
		}
		INFO("mutant " << i);
		std::string f = d / "m";
		write_file(f, b);
		run_result r = tool({ "edit", "--align", "-q", f });
		INFO(r.err);
		REQUIRE(r.status >= 0);
		REQUIRE(r.status <= 1); // never a signal
		std::string after = read_file(f);
		if (r.status != 0) {
			refused++;
			REQUIRE(after == b);
			REQUIRE(r.err.find(f + ": ") != std::string::npos);
			continue;
		}
		edited++;
		REQUIRE(after.size() == b.size());
		raw_header mh = raw(b);
		for (size_t k = 0; k < b.size(); k++)
			if (after[k] != b[k])
				REQUIRE(in_align(mh, k));
		// And back: byte for byte.
		REQUIRE(tool({ "edit", "--align", "--disable", "-q", f }).status == 0);
		REQUIRE(read_file(f) == b);
	}
	// Both outcomes occur, or the mutations test nothing.
	CHECK(refused > (size_t)count / 5);
	CHECK(edited > (size_t)count / 8);
}

TEST_CASE("--align with --text or --data is a usage error and touches nothing", "[align][usage]")
{
	temp_dir d("align-usage");
	std::string f = d / "x", bytes = make_elf(pie());
	write_file(f, bytes);
	run_result r = tool({ "edit", "--align", "--text", f });
	CHECK(r.status == 2);
	CHECK(r.err.find("--align cannot be combined with --text or --data") != std::string::npos);
	CHECK(tool({ "edit", "--data", "--align", f }).status == 2);
	CHECK(read_file(f) == bytes);
	r = tool({ "edit", "--help" });
	CHECK(r.out.find("--align") != std::string::npos);
}

TEST_CASE("a library aligned with --align is dlopen()ed at a 2 MiB-aligned base", "[align][load]")
{
	temp_dir d("align-dlopen");
	// A few KiB of code linked with the default 4 KiB p_align: too small for
	// the kernel to place it on a 2 MiB boundary by itself.
	std::string plain = copy_in(d, "tests/tools/align-tiny.so", "plain.so");
	std::string lib = copy_in(d, "tests/tools/align-tiny.so", "aligned.so");
	REQUIRE(align(lib).status == 0);
	size_t plain_aligned = 0;
	for (int i = 0; i < 4; i++) {
		std::string maps = maps_after_dlopen(lib);
		INFO(maps);
		REQUIRE(maps.find(lib) != std::string::npos);
		CHECK(map_start(maps, lib) % HUGE_2M == 0);
		maps = maps_after_dlopen(plain);
		REQUIRE(maps.find(plain) != std::string::npos);
		plain_aligned += map_start(maps, plain) % HUGE_2M == 0;
	}
	// Not a check: a kernel may align small mappings by itself one day.
	if (plain_aligned == 4)
		WARN("the unedited library also loaded 2 MiB-aligned 4 times out of 4 here");
}

TEST_CASE("a PIE program aligned with --align is placed by the kernel at a 2 MiB-aligned base", "[align][load]")
{
	temp_dir d("align-pie");
	std::string prog = copy_in(d, "tests/small", "small");
	REQUIRE(align(prog).status == 0);
	for (int i = 0; i < 4; i++) {
		uint64_t base = pie_base(prog);
		INFO("base " << std::hex << base);
		CHECK(base % HUGE_2M == 0);
	}
	run_result r = run_cmd({ prog });
	CHECK(r.status == 0);
	CHECK(r.out == "small ok\n");
}

TEST_CASE("check says which files need edit --align, which a relink, and none after the edit", "[align][check]")
{
	temp_dir d("align-check");
	// 4 MiB of code on disk, so that whole 2 MiB pages of the file lie inside.
	gen_elf g;
	g.type = 3;
	g.segs = {
		{ LOAD, R, 0, 0, 0x800, 0x800, 0x1000 },
		{ LOAD, R | X, 0x1000, 0x1000, 0x400000, 0x400000, 0x1000 },
		{ LOAD, R | W, 0x401000, 0x402000, 0x100, 0x100, 0x1000 },
	};
	std::string f = d / "big.so";
	write_file(f, make_elf(g));
	run_result r = tool({ "check", f });
	CHECK(r.status == 0);
	CHECK(r.out.find("Segment 1 loads at a multiple of 0x1000 only, where the page cache cannot map\n"
			 "  its code huge; this makes the loaders put it on a 2 MiB boundary:\n"
			 "    hugetext edit --align " + f + "\n") != std::string::npos);
	r = tool({ "check", "--json", f });
	auto regions = json_regions(r.out);
	REQUIRE(regions.size() == 1);
	CHECK(regions[0]["page_cache"] == "edit-align");

	REQUIRE(align(f).status == 0);
	r = tool({ "check", f });
	CHECK(r.out.find("page cache") == std::string::npos);
	r = tool({ "check", "--json", f });
	regions = json_regions(r.out);
	REQUIRE(regions.size() == 1);
	CHECK(regions[0]["page_cache"] == "ok");
	CHECK(regions[0]["exact"] == "true");

	// Code 0x1000 off modulo 2 MiB: only a relink helps.
	g.segs[1].offset = 0x2000;
	g.segs[2].offset = 0x402000;
	write_file(f, make_elf(g));
	r = tool({ "check", f });
	CHECK(r.out.find("Segment 1's file offset and address differ modulo 2 MiB, so the page cache\n"
			 "  cannot map its code huge; relinking with -Wl,-zmax-page-size=0x200000 makes\n"
			 "  them agree.\n") != std::string::npos);
	regions = json_regions(tool({ "check", "--json", f }).out);
	REQUIRE(regions.size() == 1);
	CHECK(regions[0]["page_cache"] == "relink");

	// A file --align refuses: the reason, and the relink.
	g.segs[1].offset = 0x1000;
	g.segs[2].offset = 0x401000;
	g.segs[2].align = 0x10000;
	write_file(f, make_elf(g));
	r = tool({ "check", f });
	CHECK(r.out.find("and edit --align refuses the file\n  (loadable segments have different p_align") !=
	      std::string::npos);
	regions = json_regions(tool({ "check", "--json", f }).out);
	CHECK(regions[0]["page_cache"] == "relink");

	// Too little code for a 2 MiB page: nothing said.
	r = tool({ "check", build_path("tests/small") });
	CHECK(r.out.find("page cache") == std::string::npos);
	CHECK(r.out.find("edit --align") == std::string::npos);
}
