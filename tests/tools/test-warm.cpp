// Description: hugetext warm puts a program's code in the page cache as
// 2 MiB pages; the kernel then maps it huge by itself, with no preload.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <fcntl.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tooltest.hpp"

namespace {

// A fresh copy of a test program: its page cache is its own.
std::string copy_of(const temp_dir &d, const std::string &prog, const std::string &name = "prog")
{
	std::string to = d / name;
	std::ifstream in(build_path(prog), std::ios::binary);
	std::ofstream out(to, std::ios::binary);
	out << in.rdbuf();
	out.close();
	chmod(to.c_str(), 0755);
	return to;
}

// Bytes its reaped children read from block devices (ru_inblock: 512-byte units).
uint64_t children_read_bytes()
{
	struct rusage u = {};
	getrusage(RUSAGE_CHILDREN, &u);
	return (uint64_t)u.ru_inblock * 512;
}

// What `hugetext warm FILE` read from the disk.
uint64_t warm_reads(const std::string &file, run_result &r)
{
	uint64_t before = children_read_bytes();
	r = tool({ "warm", file });
	return children_read_bytes() - before;
}

} // namespace

TEST_CASE("warm puts all of a program's code in 2 MiB page-cache pages", "[warm]")
{
	temp_dir d("warm");
	std::string prog = copy_of(d, "tests/bigtext-nopie");
	run_result r = tool({ "warm", prog });
	INFO(r.out << r.err);
	if (r.out.find(" 0 B of ") != std::string::npos) {
		WARN("skipped: this file system or kernel keeps no 2 MiB page-cache pages: " << r.out);
		return;
	}
	CHECK(r.status == 0);
	// All of its whole 2 MiB pages of code: 38 MiB on x86-64, 40 on arm64 (helpers.hpp).
	char want[80];
	double mib = code_span_of(prog).len / 1048576.0;
	REQUIRE(mib >= 32);
	std::snprintf(want, sizeof(want), "%.1f MiB of %.1f MiB of code in 2 MiB page-cache pages", mib, mib);
	CHECK(r.out.find(want) != std::string::npos);
	// Again: the same answer, nothing changed in the file.
	CHECK(tool({ "warm", prog }).status == 0);
	CHECK(run_cmd({ prog }).out == run_cmd({ build_path("tests/bigtext-nopie") }).out);
}

TEST_CASE("warm counts a last page the code ends inside when free space and zeros follow it", "[warm]")
{
	// bigtext-tailpad: 10 MiB of 2 MiB pages from 0x600000, the code ending
	// 1 MiB into the last, the file's zeros after it (node's layout): the
	// preload keeps that page from the page cache, so warm reads it too.
	// bigtext-tailfile: .rodata's bytes after the code, which the preload
	// never maps there: its whole pages only (6 MiB).
	temp_dir d("warm-tail");
	for (auto [fixture, mib] : { std::pair<const char *, int>{ "tests/bigtext-tailpad", 10 },
				     std::pair<const char *, int>{ "tests/bigtext-tailfile", 6 } }) {
		std::string prog = copy_of(d, fixture, fixture + 6);
		run_result r = tool({ "warm", prog });
		INFO(fixture << ": " << r.out << r.err);
		if (r.out.find(" 0 B of ") != std::string::npos) {
			WARN("skipped: this file system or kernel keeps no 2 MiB page-cache pages: " << r.out);
			return;
		}
		char want[80];
		std::snprintf(want, sizeof(want), " of %d.0 MiB of code", mib);
		CHECK(r.out.find(want) != std::string::npos);
	}
}

TEST_CASE("after warm, the kernel maps the program's code huge by itself, with no preload",
	  "[warm]")
{
	temp_dir d("warm-kernel");
	std::string prog = copy_of(d, "tests/bigtext-nopie");
	run_result w = tool({ "warm", prog });
	if (w.status != 0) {
		WARN("skipped: warm could not put the code in 2 MiB pages here: " << w.out << w.err);
		return;
	}
	// The program runs its code (all of it: the checksum calls every
	// function), then waits while `hugetext check` looks at it.
	// It says "ready" once it has run it; check looks then.
	auto held = [&](const std::string &p) {
		std::string out = d / "held.out";
		return "'" + p + "' hold 60000 > '" + out + "' & p=$!; i=0; until grep -q ready '" + out +
		       "' || [ $i -ge 1200 ]; do sleep 0.05; i=$((i+1)); done; '" + tool_path() +
		       "' check $p; kill $p; rm -f '" + out + "'";
	};
	std::string cmd = held(prog);
	run_result r = run_cmd({ "sh", "-c", cmd });
	INFO(r.out << r.err);
	CHECK(r.out.find("file-pmd") != std::string::npos);
	// A copy that was not warmed, for contrast: small pages only.
	std::string cold = copy_of(d, "tests/bigtext-nopie", "cold");
	small_page_cache(cold);
	cmd = held(cold);
	r = run_cmd({ "sh", "-c", cmd });
	INFO(r.out << r.err);
	CHECK(r.out.find("(" + cold + "): ") != std::string::npos); // it looked at the running program
	CHECK(r.out.find("file-pmd") == std::string::npos);
}

TEST_CASE("warm refuses what it cannot warm, with a message and a non-zero status", "[warm]")
{
	temp_dir d("warm-bad");
	write_file(d / "text", "not an ELF file\n");
	run_result r = tool({ "warm", d / "text" });
	CHECK(r.status == 1);
	CHECK(r.err.find("not an ELF file") != std::string::npos);
	// A program with less than 2 MiB of code.
	r = tool({ "warm", build_path("tests/small") });
	CHECK(r.status == 1);
	CHECK(r.out.find("nothing to warm") != std::string::npos);
	r = tool({ "warm", d / "missing" });
	CHECK(r.status == 1);
	CHECK_FALSE(r.err.empty());
	CHECK(tool({ "warm" }).status == 2);
	// The file is only read.
	CHECK(read_file(d / "text") == "not an ELF file\n");
}

TEST_CASE("warm again reads only the 2 MiB pages that are not in 2 MiB page-cache pages", "[warm]")
{
	temp_dir d("warm-again");
	std::string prog = copy_of(d, "tests/bigtext-nopie");
	small_page_cache(prog);
	run_result r;
	uint64_t first = warm_reads(prog, r);
	INFO(r.out << r.err);
	if (r.status != 0) {
		WARN("skipped: warm could not put the code in 2 MiB pages here: " << r.out << r.err);
		return;
	}
	uint64_t code = code_span_of(prog).len;
	if (first < code) {
		WARN("skipped: this machine does not count a process's disk reads (ru_inblock): " << first);
		return;
	}
	// All of it is in 2 MiB pages: nothing is dropped, nothing read again.
	uint64_t again = warm_reads(prog, r);
	CHECK(r.status == 0);
	CHECK(again < code / 4);
	// One 2 MiB page lost (reclaim): that one is read again, not the rest.
	int fd = open(prog.c_str(), O_RDONLY);
	REQUIRE(fd >= 0);
	off_t lost = (off_t)((code_span_of(prog).off + (8u << 20)) & ~((2ull << 20) - 1));
	REQUIRE(posix_fadvise(fd, lost, 2 << 20, POSIX_FADV_DONTNEED) == 0);
	close(fd);
	uint64_t one = warm_reads(prog, r);
	CHECK(r.status == 0);
	CHECK(one >= (2u << 20));
	CHECK(one < code / 4);
	CHECK(run_cmd({ prog }).out == run_cmd({ build_path("tests/bigtext-nopie") }).out);
}
