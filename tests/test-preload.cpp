// Description: LD_PRELOAD of the preload library on generated programs with
// tens of MiB of text: PIE, non-PIE, stripped, and one too small to move.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <link.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"

extern "C" {
#include "hugetext.h"
#include "policy.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

static const std::string preload() { return build_path("lib/libhugetext-preload.so"); }

static void check_moved(const std::string &prog)
{
	std::string report = temp_path("report.json");
	run_result plain = run_cmd({ prog, "smaps" });
	run_result moved = run_cmd({ prog, "smaps" },
				   { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
				     "HUGETEXT_MODE=thp" });

	INFO(prog << "\n" << moved.err);
	REQUIRE(plain.status == 0);
	REQUIRE(moved.status == 0);
	// Same work, same answer, nothing on stderr, no descriptor left open.
	CHECK(line_value(moved.out, "sum") == line_value(plain.out, "sum"));
	CHECK(line_value(moved.out, "fds") == line_value(plain.out, "fds"));
	CHECK(moved.err.empty());
	CHECK(line_value(plain.out, "huge_kb") == "0");

	auto lines = read_report(report);
	auto ok = ok_lines(lines);
	REQUIRE(ok.size() == 1);
	CHECK(ok[0]["object"].find("bigtext") != std::string::npos);
	CHECK(ok[0]["mode"] == "thp");
	unsigned long bytes = std::stoul(ok[0]["bytes"]);
	unsigned long huge = std::stoul(ok[0]["huge_bytes"]);
	CHECK(bytes >= 36ul << 20);
	CHECK(huge == bytes);
	CHECK(std::stoul(ok[0]["start"]) % (2ul << 20) == 0);
	// The program's own count of its huge text agrees with the report.
	CHECK(std::stoul(line_value(moved.out, "huge_kb")) * 1024 >= huge);
	for (auto &l : lines)
		CHECK(l["pid"] != "");
}

TEST_CASE("preload moves a PIE program's text and the program runs the same", "[preload]")
{
	check_moved(build_path("tests/bigtext-pie"));
}

TEST_CASE("preload moves a non-PIE program's text", "[preload]")
{
	check_moved(build_path("tests/bigtext-nopie"));
}

TEST_CASE("preload moves a stripped program's text", "[preload]")
{
	check_moved(build_path("tests/bigtext-stripped"));
}

TEST_CASE("a program with too little text is left alone and the report says why", "[preload]")
{
	// The policy's minimum (4 MiB by default, or 0) and the 2 MiB floor
	// both stop it before the library reads anything of /proc.
	for (std::string min : { "", "HUGETEXT_MIN_CODE=0" }) {
		std::string report = temp_path("small.json");
		unlink(report.c_str());
		std::vector<std::string> env = { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report };
		if (!min.empty())
			env.push_back(min);
		run_result r = run_cmd({ build_path("tests/small") }, env);

		CHECK(r.status == 0);
		CHECK(r.out == "small ok\n");
		CHECK(r.err.empty());
		auto lines = read_report(report);
		REQUIRE(lines.size() == 1);
		CHECK(lines[0]["status"] == "skipped");
		CHECK(lines[0]["bytes"] == "0");
		CHECK(lines[0]["error"].find("minimum worth moving") != std::string::npos);
		CHECK(lines[0]["object"] == build_path("tests/small"));
	}
}

// The files a run opens or reads as a link, as strace records them, one call a line.
static std::string traced_files(const std::vector<std::string> &argv, const std::vector<std::string> &env)
{
	std::string log = temp_path("files.strace");
	std::vector<std::string> cmd = { "strace", "-f", "-qq", "-o", log, "-e", "trace=open,openat,readlink" };
	cmd.insert(cmd.end(), argv.begin(), argv.end());
	// Without the settings main.cpp gives every program the tests start.
	std::vector<std::string> vars = { "HUGETEXT_PAGE_CACHE", "HUGETEXT_COPY" };
	for (auto &v : without_leak_check())
		vars.push_back(v);
	vars.insert(vars.end(), env.begin(), env.end());
	run_result r = run_cmd(cmd, vars);
	INFO(r.err);
	REQUIRE(r.status == 0);
	std::string calls = read_file(log);
	unlink(log.c_str());
	return calls;
}

TEST_CASE("a program with less than 2 MiB of code in every object: the preload opens nothing, not even the policy file",
	  "[preload]")
{
	// No setting moves such an object, so the constructor reads neither the
	// policy file nor /proc: it only walks the loader's list (issue 21, item 3).
	if (!have_program("strace")) {
		WARN("skipped: strace is not installed");
		return;
	}
	const std::string conf = "/etc/hugetext.conf";
	// What a sanitizer's runtime reads of /proc is in both runs.
	auto proc_reads = [](const std::string &calls) {
		size_t n = 0;
		for (size_t at = calls.find("\"/proc/"); at != std::string::npos; at = calls.find("\"/proc/", at + 1))
			n++;
		return n;
	};
	std::string plain = traced_files({ build_path("tests/small") }, {});
	std::string calls = traced_files({ build_path("tests/small") }, { "LD_PRELOAD=" + preload() });
	INFO(calls);
	CHECK(calls.find("libhugetext-preload.so") != std::string::npos);
	CHECK(calls.find(conf) == std::string::npos);
	CHECK(proc_reads(calls) == proc_reads(plain));
	// A setting in the environment may ask for a report: then the file is read.
	calls = traced_files({ build_path("tests/small") }, { "LD_PRELOAD=" + preload(), "HUGETEXT_VERBOSE=0" });
	CHECK(calls.find(conf) != std::string::npos);
	// And so it is where an object has the code for a huge page.
	calls = traced_files({ build_path("tests/bigtext-pie") }, { "LD_PRELOAD=" + preload() });
	CHECK(calls.find(conf) != std::string::npos);
}

// The libc symbols the preload's constructor binds (lazily, at their first
// call) when @prog starts under it with @env, as ld.so's LD_DEBUG=bindings
// lists them after "calling init" of the preload.
static std::vector<std::string> constructor_bindings(const std::string &prog, const std::vector<std::string> &env)
{
	std::vector<std::string> vars = { "LD_PRELOAD=" + preload(), "LD_DEBUG=bindings" };
	vars.insert(vars.end(), env.begin(), env.end());
	run_result r = run_cmd({ prog }, vars);
	REQUIRE(r.status == 0);
	std::istringstream in(r.err);
	std::string line;
	std::vector<std::string> names;
	bool init = false;
	while (std::getline(in, line)) {
		// The inits end where ld.so hands over to the program: what the
		// preload binds later (its fini's __cxa_finalize, lazily bound on
		// arm64) is not the constructor's.
		if (line.find("transferring control:") != std::string::npos)
			init = false;
		if (line.find("calling init:") != std::string::npos)
			init = line.find("libhugetext-preload.so") != std::string::npos;
		size_t sym = line.find("symbol `");
		if (init && sym != std::string::npos && line.find("binding file " + preload()) != std::string::npos)
			names.push_back(line.substr(sym + 8, line.find('\'', sym + 8) - sym - 8));
	}
	// A sanitizer build's instrumentation binds its runtime's entries: not
	// libc's.  On arm64, libgcc's constructor asks __getauxval() whether the
	// CPU has LSE atomics, in every object that uses them: the toolchain's
	// call, made once, not ours.
	std::vector<std::string> libc;
#if defined(__aarch64__)
	const bool on_aarch64 = true;
#else
	const bool on_aarch64 = false;
#endif
	for (auto &n : names)
		if (n.rfind("__asan", 0) != 0 && n.rfind("__ubsan", 0) != 0 && n.rfind("__sanitizer", 0) != 0 &&
		    !(n == "__getauxval" && on_aarch64))
			libc.push_back(n);
	return libc;
}

// How many times @what occurs in @text.
static size_t count_of(const std::string &text, const std::string &what)
{
	size_t n = 0;
	for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
		n++;
	return n;
}

// Runs @cmd (a shell command line) with /etc seen through an overlay that
// holds @conf as /etc/hugetext.conf (root's, 0644), in a private mount
// namespace: the machine's /etc is never touched.  Status 77: no overlay.
static run_result with_policy(const std::string &conf, const std::string &cmd)
{
	std::string d = temp_path("etc-overlay");
	REQUIRE(run_cmd({ "sh", "-c", "rm -rf " + d + " && mkdir -p " + d + "/u " + d + "/w" }).status == 0);
	FILE *f = fopen((d + "/u/hugetext.conf").c_str(), "w");
	REQUIRE(f);
	fputs(conf.c_str(), f);
	fclose(f);
	chmod((d + "/u/hugetext.conf").c_str(), 0644);
	run_result r = run_cmd({ "unshare", "-m", "sh", "-c",
				 "mount --make-rprivate / && mount -t overlay overlay -o lowerdir=/etc,upperdir=" + d +
					 "/u,workdir=" + d + "/w /etc || exit 77; " + cmd });
	run_cmd({ "rm", "-rf", d });
	return r;
}

TEST_CASE("between one 2 MiB page and min_code of code: the preload opens only the policy file, unless min_code "
	  "is lowered",
	  "[preload]")
{
	// bigtext-mid has 3 MiB of code (git has 2.55 MiB): no setting moves it
	// unless min_code is lowered, which only the environment or the
	// policy file can do.  So the constructor reads the file with raw
	// system calls, and nothing of /proc.
	if (!have_program("strace")) {
		WARN("skipped: strace is not installed");
		return;
	}
	std::string prog = build_path("tests/bigtext-mid");
	// No libc function looked up: the constructor binds dl_iterate_phdr() alone.
	CHECK(constructor_bindings(prog, {}) == std::vector<std::string>{ "dl_iterate_phdr" });
	CHECK(constructor_bindings(prog, { "HUGETEXT_MIN_CODE=2M" }).size() > 1);
	std::string calls = traced_files({ prog }, { "LD_PRELOAD=" + preload() });
	// What the program opens of /proc without us: nothing, but a sanitizer
	// build's runtime reads its own maps.
	std::string plain = traced_files({ prog }, { "LD_PRELOAD=" });
	INFO(calls);
	CHECK(calls.find("/etc/hugetext.conf") != std::string::npos);
	CHECK(count_of(calls, "/proc/self/maps") == count_of(plain, "/proc/self/maps"));
	CHECK(count_of(calls, "/proc/self/exe") == count_of(plain, "/proc/self/exe"));
	// HUGETEXT_MIN_CODE lowers it: the full path, and the code moves.
	calls = traced_files({ prog }, { "LD_PRELOAD=" + preload(), "HUGETEXT_MIN_CODE=2M" });
	CHECK(count_of(calls, "/proc/self/maps") > count_of(plain, "/proc/self/maps"));
	run_result r = run_cmd({ prog, "smaps" }, { "LD_PRELOAD=" + preload(), "HUGETEXT_MIN_CODE=2M" });
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "huge_kb") != "0");
	r = run_cmd({ prog, "smaps" }, { "LD_PRELOAD=" + preload() });
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "huge_kb") == "0");

	// The policy file: a commented min_code changes nothing; a set one moves it.
	std::string run = "LD_PRELOAD=" + preload() + " HUGETEXT_MODE=thp " + prog + " smaps";
	r = with_policy("# min_code = 2M\nmode = auto\n", run);
	if (r.status == 77) {
		WARN("policy file cases skipped: no overlay over /etc in a private mount namespace");
		return;
	}
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "huge_kb") == "0");
	r = with_policy("min_code = 2M\n", run);
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "huge_kb") != "0");
	// A file too long for the cheap look takes the full path, which parses it.
	std::string comments;
	while (comments.size() <= HT_CONF_PEEK_BYTES)
		comments += "# a comment line of the policy file, of no consequence\n";
	r = with_policy(comments + "min_code = 2M\n", run);
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "huge_kb") != "0");
}

TEST_CASE("the shipped policy file fits the preload's cheap look and sets no min_code", "[preload]")
{
	// Else every program between one 2 MiB page and min_code of code would
	// take the full path on a machine with the package installed.
	std::string conf = read_file(source_path("data/hugetext.conf"));
	REQUIRE(!conf.empty());
	CHECK(conf.size() <= HT_CONF_PEEK_BYTES);
	CHECK(!ht_conf_may_set(conf.data(), conf.size(), "min_code"));
}

// The preload's ELF header, program headers and dynamic section, read from its file.
struct elf_image {
	uint64_t end = 0;   // highest PT_LOAD's p_vaddr + p_memsz
	bool fini = false;  // a DT_FINI entry
};

static elf_image read_elf(const std::string &path)
{
	std::string f = read_file(path);
	elf_image img;
	ElfW(Ehdr) eh;
	REQUIRE(f.size() >= sizeof(eh));
	memcpy(&eh, f.data(), sizeof(eh));
	REQUIRE(memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0);
	REQUIRE(eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(ElfW(Phdr)) <= f.size());
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;
		memcpy(&ph, f.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > img.end)
			img.end = ph.p_vaddr + ph.p_memsz;
		if (ph.p_type != PT_DYNAMIC)
			continue;
		REQUIRE(ph.p_offset + ph.p_filesz <= f.size());
		for (uint64_t at = 0; at + sizeof(ElfW(Dyn)) <= ph.p_filesz; at += sizeof(ElfW(Dyn))) {
			ElfW(Dyn) d;
			memcpy(&d, f.data() + ph.p_offset + at, sizeof(d));
			img.fini |= d.d_tag == DT_FINI;
		}
	}
	return img;
}

TEST_CASE("a program with nothing to move maps the preload's file and no more: no anonymous pages for its .bss",
	  "[preload]")
{
	// Every process loads the preload; most have nothing to move (issue 21,
	// item 3).  A .bss that spills past the data page costs each of them an
	// anonymous mapping; DT_FINI made ld.so run (and fault in) a page of
	// code 70 KiB from the constructor at exit.  Big buffers are allocated
	// when first needed instead, and lib/meson.build drops DT_FINI.
	if (std::getenv("HT_SANITIZER_PRELOAD")) {
		WARN("skipped: a sanitizer build pads every global of the preload");
		return;
	}
	char real[PATH_MAX];
	REQUIRE(realpath(preload().c_str(), real));
	elf_image img = read_elf(real);
	CHECK_FALSE(img.fini);

	run_result r = run_cmd({ "/bin/cat", "/proc/self/maps" }, { "LD_PRELOAD=" + preload() });
	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	uint64_t base = 0, file_end = 0;
	bool found = false;
	std::istringstream maps(r.out);
	std::string line;
	while (std::getline(maps, line)) {
		std::istringstream f(line);
		std::string range, perms, offset, dev, inode, path;
		if (!(f >> range >> perms >> offset >> dev >> inode >> path) || path != real)
			continue;
		uint64_t start = std::stoull(range, nullptr, 16);
		uint64_t end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
		if (std::stoull(offset, nullptr, 16) == 0 && !found)
			base = start, found = true;
		file_end = std::max(file_end, end);
	}
	REQUIRE(found);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	// The whole image, .bss included, lies in the file's own mappings.
	CHECK(base + (img.end + page - 1) / page * page <= file_end);
}

TEST_CASE("a small program reads the settings at its first dlopen() and the hook then examines the new library",
	  "[preload]")
{
	// The constructor had no need to read them; the dlopen() hook still
	// honours them, read once, before glibc loads anything.
	if (!have_program("strace")) {
		WARN("skipped: strace is not installed");
		return;
	}
	std::string lib = build_path("tests/libbigtext.so");
	std::string calls = traced_files({ build_path("tests/dso-dlopen"), lib }, { "LD_PRELOAD=" + preload() });
	INFO(calls);
	size_t conf = calls.find("/etc/hugetext.conf"), opened = calls.find("libbigtext.so\"");
	REQUIRE(conf != std::string::npos);
	REQUIRE(opened != std::string::npos);
	CHECK(conf < opened);
	// The library's run reads the maps only for a new object that may fill a huge page.
	CHECK(calls.find("/proc/self/maps", opened) != std::string::npos);
}

TEST_CASE("a program under the policy's minimum of code is not moved; above it, it is", "[preload]")
{
	std::string prog = build_path("tests/bigtext-pie"), report = temp_path("mincode.json");
	unlink(report.c_str());
	small_page_cache(prog);
	run_result r = run_cmd({ prog }, { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
					   "HUGETEXT_MIN_CODE=1G" });
	CHECK(r.status == 0);
	auto lines = read_report(report);
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["status"] == "skipped");
	CHECK(lines[0]["error"].find("minimum worth moving") != std::string::npos);
	CHECK(lines[0]["bytes"] == "0");

	unlink(report.c_str());
	r = run_cmd({ prog }, { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
				"HUGETEXT_MIN_CODE=2M" });
	CHECK(r.status == 0);
	CHECK_FALSE(ok_lines(read_report(report)).empty());
}

TEST_CASE("verbose mode prints one line per region on stderr", "[preload]")
{
	run_result r = run_cmd({ build_path("tests/bigtext-pie") },
			       { "LD_PRELOAD=" + preload(), "HUGETEXT_VERBOSE=1", "HUGETEXT_MODE=bogus" });

	CHECK(r.status == 0);
	CHECK(r.err.find("ignored HUGETEXT_MODE=\"bogus\"") != std::string::npos);
	CHECK(r.err.find("bigtext-pie") != std::string::npos);
	CHECK(r.err.find(": ok, ") != std::string::npos);
}

TEST_CASE("mode off leaves the program alone and writes nothing", "[preload]")
{
	std::string report = temp_path("off.json");
	run_result r = run_cmd({ build_path("tests/bigtext-pie"), "smaps" },
			       { "LD_PRELOAD=" + preload(), "HUGETEXT_MODE=off", "HUGETEXT_REPORT=" + report });

	CHECK(r.status == 0);
	CHECK(line_value(r.out, "huge_kb") == "0");
	CHECK_FALSE(file_exists(report));
}

TEST_CASE("memcpy and pread fills give the same program", "[preload]")
{
	for (const char *fill : { "pread", "memcpy" }) {
		std::string report = temp_path(std::string("fill-") + fill);
		run_result r = run_cmd({ build_path("tests/bigtext-pie") },
				       { "LD_PRELOAD=" + preload(), std::string("HUGETEXT_FILL=") + fill,
					 "HUGETEXT_REPORT=" + report });
		INFO(fill);
		CHECK(r.status == 0);
		auto ok = ok_lines(read_report(report));
		REQUIRE(ok.size() == 1);
		CHECK(ok[0]["fill"] == fill);
		CHECK(line_value(r.out, "sum") ==
		      line_value(run_cmd({ build_path("tests/bigtext-pie") }).out, "sum"));
	}
}

TEST_CASE("a program relinked for 2 MiB pages has all of its code moved", "[preload][examples]")
{
	std::string prog = build_path("examples/relinked"), report = temp_path("relinked.json");
	run_result r = run_cmd({ prog }, { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
					   "HUGETEXT_MODE=thp" });
	REQUIRE(r.status == 0);
	CHECK(r.out == run_cmd({ prog }).out);
	// The executable segment, from the file's program headers.
	run_result ph = run_cmd({ "sh", "-c", "readelf -lW '" + prog + "' | awk '$1 == \"LOAD\" && / R E / { print $3, $6 }'" });
	unsigned long vaddr = 0, memsz = 0;
	REQUIRE(sscanf(ph.out.c_str(), "%lx %lx", &vaddr, &memsz) == 2);
	CHECK(vaddr % (2ul << 20) == 0);
	auto lines = read_report(report);
	REQUIRE(lines.size() == 1);
	unsigned long huge = std::stoul(lines[0]["huge_bytes"]);
	// Every whole 2 MiB page of the segment; a tail page only when at
	// least half of it is code (plan.h, ht_page_pays).  This kernel may
	// already map such a file from large page-cache folios (FilePmdMapped);
	// then the library leaves it as it is and says so.
	unsigned long whole = memsz & ~((2ul << 20) - 1);
	CHECK(huge >= whole);
	if (memsz - whole >= (1ul << 20))
		CHECK(huge >= memsz);
	if (lines[0]["status"] == "skipped") {
		CHECK(lines[0]["error"] == "already on huge pages");
	} else {
		CHECK(lines[0]["status"] == "ok");
		CHECK(std::stoul(lines[0]["bytes"]) == huge);
	}
}

TEST_CASE("the API example moves its own code at start-up", "[examples]")
{
	run_result r = run_cmd({ build_path("examples/api-startup") }, { "HUGETEXT_MODE=thp" });
	CHECK(r.status == 0);
	CHECK(r.out.find("MapStaticCodeToLargePages: map_") != std::string::npos);
}

TEST_CASE("the bundled demo moves 62 MiB and gives the same checksum", "[examples]")
{
	std::string demo = build_path("examples/itlb-demo");
	// Plain, from a copy whose page cache is in 4 KiB pages: a test beside
	// this one that moved the demo reads its code back as 2 MiB page-cache
	// pages, which the kernel then maps huge with no preload at all.
	std::string copy = temp_path("itlb-demo-plain", build_path("tests"));
	REQUIRE(run_cmd({ "cp", demo, copy }).status == 0);
	small_page_cache(copy);
	run_result plain = run_cmd({ copy, "100000" });
	run_result moved = run_cmd({ demo, "100000" }, { "LD_PRELOAD=" + preload(), "HUGETEXT_MODE=thp" });
	run_result api = run_cmd({ demo, "--api", "100000" }, { "HUGETEXT_MODE=thp" });
	auto checksum = [](const std::string &s) { return s.substr(s.find("checksum")); };
	REQUIRE(plain.status == 0);
	REQUIRE(moved.status == 0);
	REQUIRE(api.status == 0);
	CHECK(checksum(moved.out) == checksum(plain.out));
	CHECK(checksum(api.out) == checksum(plain.out));
	CHECK(plain.out.find("on huge pages: 0 MiB") != std::string::npos);
#if defined(__aarch64__)
	// arm64's linker puts the headers and the code in one 64 MiB segment
	// from address 0, loaded 64 KiB-aligned: 31 whole 2 MiB pages, and the
	// last one too when the load address puts at least half of it under
	// code (or when it lands on the 2 MiB grid).
	INFO(moved.out);
	CHECK((moved.out.find("on huge pages: 62 MiB") != std::string::npos ||
	       moved.out.find("on huge pages: 64 MiB") != std::string::npos));
#else
	CHECK(moved.out.find("on huge pages: 62 MiB") != std::string::npos);
#endif
	CHECK(api.out.find("MapStaticCodeToLargePages: ok") != std::string::npos);
}

TEST_CASE("the demo's defaults row: the copy waits, then moves the code while the demo runs", "[examples]")
{
	// What examples/demo.sh shows: with the preload's defaults the copy
	// waits for 40 ms of CPU per MiB (about 2.5 s here), in the thread
	// the demo works in, then swaps the code in while it runs.
	std::string demo = build_path("examples/itlb-demo"), report = temp_path("demo-defaults.json");
	run_result r = run_cmd({ demo, "--seconds", "6" },
			       { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report, "HUGETEXT_COPY=auto" });
	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	CHECK(r.out.find("code on huge pages: from ") != std::string::npos);
	auto ok = ok_lines(read_report(report));
	REQUIRE(ok.size() == 1);
	CHECK(ok[0]["object"] == demo);
	CHECK(std::stoul(ok[0]["huge_bytes"]) >= 60ul << 20);
	CHECK(ok[0]["private_huge_bytes"] == ok[0]["huge_bytes"]);
}

// HUGETEXT_ASYNC=1: the move runs in a background thread while main() runs.

static std::vector<std::string> async_env(const std::string &report)
{
	return { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=thp",
		 "HUGETEXT_ASYNC=1" };
}

// The report's one ok line for the program, with all of its span on huge pages.
static void check_async_report(const std::string &report)
{
	auto ok = ok_lines(read_report(report));
	REQUIRE(ok.size() == 1);
	CHECK(ok[0]["object"].find("bigtext") != std::string::npos);
	CHECK(std::stoul(ok[0]["bytes"]) >= 36ul << 20);
	CHECK(ok[0]["huge_bytes"] == ok[0]["bytes"]);
}

TEST_CASE("HUGETEXT_ASYNC=1 moves the code while main() runs, and the program runs the same",
	  "[preload][async]")
{
	std::string prog = build_path("tests/bigtext-pie"), report = temp_path("async.json");
	run_result plain = run_cmd({ prog, "await", "0" });
	run_result r = run_cmd({ prog, "await", "20000" }, async_env(report));

	INFO(r.err);
	REQUIRE(plain.status == 0);
	REQUIRE(r.status == 0);
	CHECK(r.err.empty());
	CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
	// The program's own descriptors are all it sees: ours are in a table of their own.
	CHECK(line_value(r.out, "fds") == line_value(plain.out, "fds"));
	CHECK(line_value(plain.out, "await_huge_kb") == "0");
	check_async_report(report);
	// Counted by the program itself, from its smaps: the report's huge bytes, which
	// are all of the text's whole 2 MiB pages, and at most the partial pages at both
	// ends (moved when they pay and the space beside them is ours; arm64's 64 KiB
	// segment alignment makes that depend on where the PIE was loaded).
	unsigned long huge_kb = std::stoul(line_value(r.out, "await_huge_kb")),
		      movable_kb = std::stoul(line_value(r.out, "movable_kb"));
	CHECK(huge_kb * 1024 == std::stoul(ok_lines(read_report(report))[0]["huge_bytes"]));
	CHECK(huge_kb >= movable_kb);
	CHECK(huge_kb <= movable_kb + 4096);
}

TEST_CASE("with HUGETEXT_ASYNC=1, setns() and unshare(CLONE_NEWUSER) first thing in main() still work",
	  "[preload][async]")
{
	std::string prog = build_path("tests/bigtext-pie");
	run_result plain = run_cmd({ prog, "unshare" });
	REQUIRE(plain.status == 0);
	if (line_value(plain.out, "setns") != "0" || line_value(plain.out, "unshare") != "0") {
		WARN("skipped: setns/unshare fail here even without the preload: " << plain.out);
		return;
	}
	// The kernel's rule that makes this matter: a second thread makes both fail.
	run_result threaded = run_cmd({ prog, "unshare", "threaded" });
	CHECK(line_value(threaded.out, "setns") == "EINVAL");
	CHECK(line_value(threaded.out, "unshare") == "EINVAL");

	int overlapped = 0;
	for (int i = 0; i < 5; i++) {
		std::string report = temp_path("async-unshare.json");
		run_result r = run_cmd({ prog, "unshare" }, async_env(report));
		INFO("run " << i << ": " << r.out << r.err);
		CHECK(r.status == 0);
		CHECK(line_value(r.out, "setns") == "0");
		CHECK(line_value(r.out, "unshare") == "0");
		CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
		// The calls waited for the move, which then went on to the end.
		check_async_report(report);
		overlapped += line_value(r.out, "huge_kb_before") == "0";
	}
	// Else the background thread was never alive at the calls and this proved nothing.
	CHECK(overlapped > 0);
}

TEST_CASE("with HUGETEXT_ASYNC=1, a clone() child and a chrooted program see setns/unshare as without it",
	  "[preload][async]")
{
	// A child made by clone() runs no fork() handlers: it must not wait for
	// a thread it does not have.  After chroot() there is no /proc: the
	// wait must not depend on it.
	std::string prog = build_path("tests/bigtext-pie"), root = temp_path("emptyroot");
	REQUIRE(mkdir(root.c_str(), 0755) == 0);
	for (std::vector<std::string> how : { std::vector<std::string>{ "clone" },
					      std::vector<std::string>{ "chroot", root } }) {
		std::vector<std::string> cmd = { "timeout", "30", prog, "unshare" };
		cmd.insert(cmd.end(), how.begin(), how.end());
		run_result plain = run_cmd(cmd);
		for (int i = 0; i < 3; i++) {
			run_result r = run_cmd(cmd, async_env(temp_path("async-ns.json")));
			INFO(how[0] << " run " << i << ": " << r.out << r.err);
			CHECK(r.status == 0);
			CHECK(line_value(r.out, "clone_unshare") == line_value(plain.out, "clone_unshare"));
			CHECK(line_value(r.out, "setns") == line_value(plain.out, "setns"));
			CHECK(line_value(r.out, "unshare") == line_value(plain.out, "unshare"));
		}
	}
}

TEST_CASE("with HUGETEXT_ASYNC=1, a program with its own malloc gets the move before main()",
	  "[preload][async]")
{
	// Our thread calls malloc(); an allocator we do not know may not expect it.
	std::string report = temp_path("async-malloc.json");
	run_result r = run_cmd({ build_path("tests/bigtext-ownmalloc"), "smaps" }, async_env(report));
	INFO(r.err);
	CHECK(r.status == 0);
	check_async_report(report);
	CHECK(line_value(r.out, "huge_kb") != "0");
	// The same program with glibc's malloc is moved in the background: nothing yet at main().
	// The kernel may map the file's 2 MiB page-cache pages huge by itself (a warm page
	// cache): what counts is that main() sees no more than a start without us.  Counted
	// first thing in main(): after the sum (seconds of emulated code under qemu) the
	// background copy may have ended (arm64 6.12 saw 38 MiB there).
	run_result plain = run_cmd({ build_path("tests/bigtext-pie"), "smaps" });
	r = run_cmd({ build_path("tests/bigtext-pie"), "smaps" }, async_env(temp_path("async-malloc2.json")));
	REQUIRE(!line_value(plain.out, "main_huge_kb").empty());
	CHECK(line_value(r.out, "main_huge_kb") == line_value(plain.out, "main_huge_kb"));
}

TEST_CASE("with HUGETEXT_ASYNC=1, a relative report path is where the program started",
	  "[preload][async]")
{
	std::string dir = temp_path("reldir");
	REQUIRE(mkdir(dir.c_str(), 0755) == 0);
	std::string report = dir + "/rel.json";
	// The program moves to / at once; the line must still land in dir.
	std::string cmd = "cd '" + dir + "' && exec '" + build_path("tests/bigtext-pie") + "' cd / await 20000";
	std::vector<std::string> env = async_env("rel.json");
	run_result r = run_cmd({ "sh", "-c", cmd }, env);
	INFO(r.out << r.err);
	CHECK(r.status == 0);
	check_async_report(report);
	CHECK_FALSE(file_exists("/rel.json"));
	unlink(report.c_str());
}

TEST_CASE("with HUGETEXT_ASYNC=1, a program that closes every descriptor it did not open is not disturbed",
	  "[preload][async]")
{
	std::string prog = build_path("tests/bigtext-pie");
	for (int i = 0; i < 3; i++) {
		std::string report = temp_path("async-close.json"), data = temp_path("async-close.data");
		run_result r = run_cmd({ prog, "closefrom", data }, async_env(report));
		INFO("run " << i << ": " << r.out << r.err);
		CHECK(r.status == 0);
		CHECK(line_value(r.out, "closefrom") == "ok");
		// The move kept its own descriptors (the object file) and finished.
		check_async_report(report);
		unlink(data.c_str());
	}
}

TEST_CASE("with HUGETEXT_ASYNC=1, code the program patches during the copy stays patched",
	  "[preload][async]")
{
	// A hot patcher or debugger may make the code writable and rewrite it
	// while the copy is made; the swap must not bring the old code back.
	// The patch must fall between the plan and the swap, whose times depend
	// on the machine: under emulation (qemu TCG) the background thread plans
	// tens of ms after main() starts, where a patch at 1-3 ms is always
	// first.  So the delay doubles from 1 ms while the patch comes before the
	// plan (not moved) and, once one came after the swap (ok), goes half way
	// between the last early and the last late delay.
	std::string prog = build_path("tests/bigtext-pie");
	int changed = 0, ms = 1, early = 0, late = 0;
	for (int i = 0; i < 12 && changed == 0; i++) {
		std::string report = temp_path("async-patch.json");
		run_result r = run_cmd({ prog, "patch", std::to_string(ms) }, async_env(report));
		INFO("run " << i << ", patch after " << ms << " ms: " << r.out << r.err);
		CHECK(r.status == 0);
		CHECK(line_value(r.out, "patch") == "42 42 43");
		auto lines = read_report(report);
		REQUIRE(lines.size() == 1);
		// Before the plan the maps show writable code (not moved); during
		// the copy the check before the swap sees it; after, it moved.
		CHECK((lines[0]["status"] == "ok" || lines[0]["error"] == ht_error_str(HT_E_CHANGED) ||
		       lines[0]["error"] == ht_error_str(HT_E_NOT_MAPPED)));
		changed += lines[0]["error"] == ht_error_str(HT_E_CHANGED);
		if (lines[0]["status"] == "ok")
			late = ms;
		else if (lines[0]["error"] == ht_error_str(HT_E_NOT_MAPPED))
			early = ms;
		ms = late ? std::max(early + 1, (early + late) / 2) : ms * 2;
	}
	// Else no patch fell inside a copy, and the check was never tried.
	CHECK(changed > 0);
}

TEST_CASE("with HUGETEXT_ASYNC=1, a program that ends at once ends cleanly", "[preload][async]")
{
	std::string prog = build_path("tests/bigtext-nopie");
	std::string sum = line_value(run_cmd({ prog }).out, "sum");
	for (int i = 0; i < 10; i++) {
		std::string report = temp_path("async-exit.json");
		run_result r = run_cmd({ prog }, async_env(report));
		INFO("run " << i << ": " << r.err);
		CHECK(r.status == 0);
		CHECK(line_value(r.out, "sum") == sum);
		CHECK(r.err.empty());
		// Whatever the report holds is whole lines: the move finished or never reported.
		for (auto &l : read_report(report))
			CHECK((l["status"] == "ok" || l["status"] == "skipped"));
	}
}

TEST_CASE("an unknown HUGETEXT_ASYNC value is named when verbose and the move happens before main()",
	  "[preload][async]")
{
	run_result r = run_cmd({ build_path("tests/bigtext-pie"), "smaps" },
			       { "LD_PRELOAD=" + preload(), "HUGETEXT_VERBOSE=1", "HUGETEXT_MODE=thp",
				 "HUGETEXT_ASYNC=later" });
	CHECK(r.status == 0);
	CHECK(r.err.find("ignored HUGETEXT_ASYNC=\"later\"") != std::string::npos);
	CHECK(line_value(r.out, "huge_kb") != "0");
}
