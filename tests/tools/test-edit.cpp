// Description: `hugetext edit`: the listing (golden), the flags it writes
// (hugeedit's bytes, or fixed expected ones), and the files it refuses,
// which it leaves untouched.
#include <catch2/catch.hpp>

#include <cctype>
#include <csignal>
#include <cstdio>
#include <sstream>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tooltest.hpp"

extern char **environ;

namespace {

const uint32_t R = 4, W = 2, X = 1, HUGE_BIT = 0x00100000;
const uint32_t LOAD = 1;

// Segments of every kind hugeedit distinguishes: headers (r--), text (r-x),
// text with bss (r-x, memsz > filesz: not text), rodata, data with bss,
// writable code (rwx: neither), and a PT_NOTE carrying the bit.
gen_elf sample(int cls, bool msb, uint16_t type = 2)
{
	gen_elf g;
	g.cls = cls;
	g.msb = msb;
	g.type = type;
	g.machine = cls == 64 ? 62 : 3;
	g.segs = {
		{ LOAD, R, 0, 0x400000, 0x400, 0x400, 0x1000 },
		{ LOAD, R | X, 0x1000, 0x401000, 0x2000, 0x2000, 0x1000 },
		{ LOAD, R | X | HUGE_BIT, 0x3000, 0x403000, 0x100, 0x800, 0x1000 },
		{ LOAD, R | HUGE_BIT, 0x4000, 0x404000, 0x200, 0x200, 0x1000 },
		{ LOAD, R | W, 0x5000, 0x405000, 0x100, 0x3000, 0x1000 },
		{ LOAD, R | W | X, 0x6000, 0x409000, 0x100, 0x100, 0x1000 },
		{ 4, R | HUGE_BIT, 0x200, 0x400200, 0x20, 0x20, 4 },
	};
	return g;
}

// The flags every option must give sample()'s headers, written down once.
std::vector<uint32_t> expected_flags(const std::string &opts)
{
	std::vector<uint32_t> f = { R, R | X, R | X | HUGE_BIT, R | HUGE_BIT, R | W, R | W | X, R | HUGE_BIT };
	if (opts.empty())
		return f;
	for (size_t i = 0; i < 6; i++)
		f[i] &= ~HUGE_BIT;
	if (opts.find("--text") != std::string::npos)
		f[1] |= HUGE_BIT;
	if (opts.find("--data") != std::string::npos)
		f[4] |= HUGE_BIT;
	return f;
}

std::vector<std::string> split(const std::string &opts)
{
	std::vector<std::string> v;
	size_t at = 0;
	while (at < opts.size()) {
		size_t sp = opts.find(' ', at);
		if (sp == std::string::npos)
			sp = opts.size();
		v.push_back(opts.substr(at, sp - at));
		at = sp + 1;
	}
	return v;
}

run_result edit(const std::string &opts, const std::vector<std::string> &files)
{
	std::vector<std::string> args{ "edit" };
	auto o = split(opts);
	args.insert(args.end(), o.begin(), o.end());
	args.insert(args.end(), files.begin(), files.end());
	return tool(args);
}

const char *const option_sets[] = { "--text", "--data", "--text --data", "--disable" };

struct file_state {
	std::string bytes;
	struct timespec mtime;
};

file_state state_of(const std::string &path)
{
	struct stat st {};
	stat(path.c_str(), &st);
	return { read_file(path), st.st_mtim };
}

bool same_state(const file_state &a, const file_state &b)
{
	return a.bytes == b.bytes && a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec;
}

// Positions where two images differ.
std::vector<size_t> differences(const std::string &a, const std::string &b)
{
	std::vector<size_t> d;
	for (size_t i = 0; i < std::max(a.size(), b.size()); i++)
		if (i >= a.size() || i >= b.size() || a[i] != b[i])
			d.push_back(i);
	return d;
}

} // namespace

TEST_CASE("the listing of each class, byte order and type matches its golden file", "[edit][golden]")
{
	temp_dir d("edit-golden");
	std::vector<std::string> files;
	struct { const char *name; gen_elf g; } inputs[] = {
		{ "exec64", sample(64, false) },
		{ "exec32-msb", sample(32, true) },
		{ "pie64-msb", sample(64, true, 3) },
		{ "object64", gen_elf{} },
	};
	inputs[3].g.type = 1;
	inputs[3].g.shdrs = true;
	for (auto &in : inputs) {
		write_file(d / in.name, make_elf(in.g));
		files.push_back(d / in.name);
	}
	run_result r = edit("", files);
	CHECK(r.status == 0);
	CHECK(r.err == "");
	CHECK(golden_diff("edit-list.txt", replace_all(r.out, d.path + "/", "")) == "");
}

TEST_CASE("each option gives the expected flags and changes nothing but p_flags", "[edit]")
{
	temp_dir d("edit-flags");
	for (int cls : { 32, 64 }) {
		for (bool msb : { false, true }) {
			for (const char *opts : option_sets) {
				INFO("class " << cls << " msb " << msb << " " << opts);
				std::string f = d / "x", before = make_elf(sample(cls, msb));
				write_file(f, before);
				run_result r = edit(std::string(opts) + " --quiet", { f });
				CHECK(r.status == 0);
				CHECK(r.out == "");
				std::string after = read_file(f);
				CHECK(phdr_flags(after) == expected_flags(opts));
				// Changed bytes lie inside p_flags fields of PT_LOAD entries.
				size_t ehsize = cls == 64 ? 64 : 52, ent = cls == 64 ? 56 : 32, at = cls == 64 ? 4 : 24;
				for (size_t pos : differences(before, after)) {
					REQUIRE(pos >= ehsize);
					size_t in = (pos - ehsize) % ent, idx = (pos - ehsize) / ent;
					CHECK(idx < 6);
					CHECK((in >= at && in < at + 4));
				}
			}
		}
	}
}

TEST_CASE("the written file is byte for byte hugeedit's", "[edit][hugeedit]")
{
	temp_dir d("edit-hugeedit");
	bool have = have_program("hugeedit");
	std::vector<std::string> inputs = { build_path("tests/small"), build_path("tests/bigtext-nopie"),
					    build_path("lib/libhugetext.so") };
	if (file_exists(build_path("tests/tools/t32")))
		inputs.push_back(build_path("tests/tools/t32"));
	// Synthetic inputs in the host's byte order (hugeedit reads headers natively).
	write_file(d / "sample64", make_elf(sample(64, false)));
	write_file(d / "sample32", make_elf(sample(32, false)));
	inputs.push_back(d / "sample64");
	inputs.push_back(d / "sample32");
	if (!have)
		WARN("hugeedit (libhugetlbfs-bin) is not installed: only the synthetic inputs are compared, "
		     "with fixed expected flags");

	for (const auto &in : inputs) {
		// Read once: bigtext-nopie is 40 MiB, slow to read under emulation.
		const std::string bytes = read_file(in);
		for (const char *opts : option_sets) {
			INFO(in << " " << opts);
			std::string ours = d / "ours", theirs = d / "theirs";
			write_file(ours, bytes, 0755);
			REQUIRE(edit(std::string(opts) + " -q", { ours }).status == 0);
			if (have) {
				write_file(theirs, bytes, 0755);
				std::vector<std::string> argv{ "hugeedit" };
				auto o = split(opts);
				argv.insert(argv.end(), o.begin(), o.end());
				argv.push_back(theirs);
				REQUIRE(run_cmd(argv).status == 0);
				CHECK(read_file(ours) == read_file(theirs));
			} else if (in.find("sample") != std::string::npos) {
				CHECK(phdr_flags(read_file(ours)) == expected_flags(opts));
			}
		}
	}
}

TEST_CASE("the listing agrees with hugeedit's on kind and default page size", "[edit][hugeedit]")
{
	if (!have_program("hugeedit")) {
		WARN("hugeedit is not installed: listing comparison not run");
		return;
	}
	temp_dir d("edit-hugeedit-list");
	write_file(d / "s", make_elf(sample(64, false)));
	for (const std::string &in : { build_path("tests/bigtext-pie"), d / "s" }) {
		run_result theirs = run_cmd({ "hugeedit", in });
		run_result ours = edit("", { in });
		REQUIRE(theirs.status == 0);
		REQUIRE(ours.status == 0);
		// hugeedit: "Segment 3 0x1000 - 0x2803009 (TEXT) default is BASE pages"
		std::vector<std::string> want, got;
		std::istringstream t(theirs.out), o(ours.out);
		std::string line;
		while (std::getline(t, line)) {
			unsigned idx;
			char kind[16] = "", pages[8] = "";
			if (std::sscanf(line.c_str(), "Segment %u %*s - %*s (%15[A-Z]) default is %7s", &idx, kind, pages) == 3 ||
			    std::sscanf(line.c_str(), "Segment %u %*s - %*s () default is %7s", &idx, pages) == 2) {
				std::string k = kind[0] ? kind : "-";
				for (auto &c : k)
					c = (char)std::tolower(c);
				std::string p = pages;
				for (auto &c : p)
					c = (char)std::tolower(c);
				want.push_back(std::to_string(idx) + " " + k + " " + p);
			}
		}
		std::getline(o, line); // title
		std::getline(o, line); // column names
		while (std::getline(o, line)) {
			unsigned idx;
			char kind[16], pages[8];
			REQUIRE(std::sscanf(line.c_str(), "%u %*s %*s %*s %15s %7s", &idx, kind, pages) == 3);
			got.push_back(std::to_string(idx) + " " + kind + " " + pages);
		}
		CHECK(got == want);
		CHECK(!got.empty());
	}
}

TEST_CASE("flags already as asked: the file is not written", "[edit]")
{
	temp_dir d("edit-noop");
	std::string f = d / "x";
	write_file(f, make_elf(sample(64, false)));
	REQUIRE(edit("--text", { f }).status == 0);
	file_state before = state_of(f);
	usleep(20000);
	run_result r = edit("--text", { f });
	CHECK(r.status == 0);
	CHECK(r.out.find("already so, not written") != std::string::npos);
	CHECK(same_state(before, state_of(f)));
}

TEST_CASE("refused files get a message naming them and stay untouched", "[edit][refuse]")
{
	temp_dir d("edit-refuse");
	std::string good = make_elf(sample(64, false));
	struct { const char *name; std::string bytes; const char *reason; } cases[] = {
		{ "text-file", "#!/bin/sh\necho not elf\n", "not an ELF file" },
		{ "empty", "", "not an ELF file" },
		{ "truncated", good.substr(0, 0x1800), "truncated" },
		{ "short-header", good.substr(0, 40), "truncated" },
		{ "phdrs-outside", [&] { std::string b = good; put_uint(b, 0x20, 8, 0x7fffffff0000, false); return b; }(),
		  "program header table" },
		{ "shdrs-outside", [&] { std::string b = good; put_uint(b, 0x28, 8, 0x100000, false);
					 put_uint(b, 0x3c, 2, 30, false); return b; }(), "section header table" },
		{ "class", [&] { std::string b = good; b[4] = 9; return b; }(), "class 9" },
		{ "byte-order", [&] { std::string b = good; b[5] = 7; return b; }(), "byte order 7" },
		{ "relocatable", [&] { gen_elf g = sample(64, false); g.type = 1; return make_elf(g); }(),
		  "not an executable or shared library" },
		{ "no-segments", [&] { gen_elf g; g.shdrs = true; return make_elf(g); }(), "no loadable segment" },
	};
	for (auto &c : cases) {
		INFO(c.name);
		std::string f = d / c.name;
		write_file(f, c.bytes);
		file_state before = state_of(f);
		for (const char *opts : option_sets) {
			run_result r = edit(opts, { f });
			CHECK(r.status == 1);
			CHECK(r.err.find(f + ": ") != std::string::npos);
			CHECK(r.err.find(c.reason) != std::string::npos);
		}
		CHECK(same_state(before, state_of(f)));
	}
}

// Apart from the cases above: a SECTION would run their loop again for each
// of these (forty more runs of the command, which count under emulation).
TEST_CASE("a missing file, a directory and a FIFO are refused", "[edit][refuse]")
{
	temp_dir d("edit-refuse-kinds");

	SECTION("a missing file") {
		run_result r = edit("--text", { d / "missing" });
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext edit: " + d / "missing" + ": cannot open for writing: No such file or directory\n");
		CHECK_FALSE(file_exists(d / "missing"));
	}
	SECTION("a directory") {
		run_result r = edit("", { d.path });
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext edit: " + d.path + ": is a directory\n");
		CHECK(edit("--text", { d.path }).status == 1);
	}
	SECTION("a FIFO is refused without waiting for a writer") {
		std::string fifo = d / "fifo";
		REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
		run_result r = edit("", { fifo });
		CHECK(r.status == 1);
		CHECK(r.err.find("not a regular file") != std::string::npos);
	}
}

TEST_CASE("a running program's file is refused, not half-edited", "[edit][refuse]")
{
	temp_dir d("edit-busy");
	std::string prog = d / "sleeper";
	write_file(prog, read_file("/bin/sleep"), 0755);
	file_state before = state_of(prog);
	pid_t pid;
	std::string a0 = prog, a1 = "30";
	char *argv[] = { &a0[0], &a1[0], nullptr };
	REQUIRE(posix_spawn(&pid, prog.c_str(), nullptr, nullptr, argv, environ) == 0);
	usleep(50000);
	run_result r = edit("--text", { prog });
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, 0);
	CHECK(r.status == 1);
	CHECK(r.err.find(prog + ": cannot open for writing: a running program uses it") != std::string::npos);
	CHECK(same_state(before, state_of(prog)));
}

TEST_CASE("several files: a refused one does not stop the others", "[edit]")
{
	temp_dir d("edit-many");
	write_file(d / "a", make_elf(sample(64, false)));
	write_file(d / "bad", "not elf");
	write_file(d / "b", make_elf(sample(32, true)));
	run_result r = edit("--text", { d / "a", d / "bad", d / "b" });
	CHECK(r.status == 1);
	CHECK(phdr_flags(read_file(d / "a")) == expected_flags("--text"));
	CHECK(phdr_flags(read_file(d / "b")) == expected_flags("--text"));
	CHECK(read_file(d / "bad") == "not elf");
	CHECK(r.err == "hugetext edit: " + d / "bad" + ": not an ELF file (no ELF magic)\n");
}

TEST_CASE("usage errors exit 2 and touch nothing", "[edit][usage]")
{
	temp_dir d("edit-usage");
	std::string f = d / "x", bytes = make_elf(sample(64, false));
	write_file(f, bytes);
	run_result r = edit("--disable --text", { f });
	CHECK(r.status == 2);
	CHECK(r.err.find("--disable cannot be combined") != std::string::npos);
	CHECK(edit("--data --disable", { f }).status == 2);
	CHECK(edit("--bogus", { f }).status == 2);
	r = edit("--text", {});
	CHECK(r.status == 2);
	CHECK(r.err.find("no FILE given") != std::string::npos);
	CHECK(read_file(f) == bytes);
	r = edit("--help", {});
	CHECK(r.status == 0);
	CHECK(r.out.find("usage: hugetext edit") == 0);
}

TEST_CASE("a failed or short write leaves the file as it was; a failed fsync is reported", "[edit][refuse]")
{
	temp_dir d("edit-faults");
	std::string f = d / "x", bytes = make_elf(sample(64, false));
	std::string shim = "LD_PRELOAD=" + build_path("tests/tools/fault-write.so");

	for (const char *fault : { "short", "enospc" }) {
		INFO(fault);
		write_file(f, bytes);
		run_result r = tool({ "edit", "--text", f }, { shim, std::string("HT_FAULT=") + fault });
		CHECK(r.status == 1);
		CHECK(r.out == "");
		CHECK(r.err.find("hugetext edit: " + f + ": cannot write the program headers: ") == 0);
		CHECK(read_file(f) == bytes);
	}
	write_file(f, bytes);
	run_result r = tool({ "edit", "--text", f }, { shim, "HT_FAULT=fsync" });
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext edit: " + f + ": written, but fsync failed: Input/output error\n");
	CHECK(phdr_flags(read_file(f)) == expected_flags("--text"));
}
