// Description: hugetext warm puts a program's code in the page cache as
// 2 MiB pages; the kernel then maps it huge by itself, and the preload
// keeps those pages and copies only what they do not cover.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "tooltest.hpp"

namespace {

std::string preload() { return build_path("lib/libhugetext-preload.so"); }

std::string line_value(const std::string &out, const std::string &key)
{
	auto at = out.find(key + " ");
	if (at == std::string::npos)
		return "";
	auto end = out.find('\n', at);
	return out.substr(at + key.size() + 1, end - at - key.size() - 1);
}

// A fresh copy of a test program: its page cache is its own.
std::string copy_of(const temp_dir &d, const std::string &prog)
{
	std::string to = d / "prog";
	std::ifstream in(build_path(prog), std::ios::binary);
	std::ofstream out(to, std::ios::binary);
	out << in.rdbuf();
	out.close();
	chmod(to.c_str(), 0755);
	return to;
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
	CHECK(r.out.find("38.0 MiB of 38.0 MiB of code in 2 MiB page-cache pages") != std::string::npos);
	// Again: the same answer, nothing changed in the file.
	CHECK(tool({ "warm", prog }).status == 0);
	CHECK(run_cmd({ prog }).out == run_cmd({ build_path("tests/bigtext-nopie") }).out);
}

TEST_CASE("after warm, the preload keeps the kernel's huge pages and copies only the tail",
	  "[warm][preload]")
{
	temp_dir d("warm-preload");
	std::string prog = copy_of(d, "tests/bigtext-nopie");
	run_result w = tool({ "warm", prog });
	if (w.status != 0) {
		WARN("skipped: warm could not put the code in 2 MiB pages here: " << w.out << w.err);
		return;
	}
	std::string report = d / "report.json";
	run_result r = run_cmd({ prog, "smaps" }, { "LD_PRELOAD=" + preload(), "HUGETEXT_MODE=thp",
						    "HUGETEXT_REPORT=" + report });
	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	auto lines = read_report(report);
	REQUIRE(lines.size() == 1);
	unsigned long bytes = std::stoul(lines[0]["bytes"]), huge = std::stoul(lines[0]["huge_bytes"]);
	// All of the span is on huge pages (read from smaps)...
	CHECK(huge == bytes);
	CHECK(bytes >= 36ul << 20);
	// ...but little of it is our anonymous copy: the kernel's file pages stay.
	unsigned long anon_kb = std::stoul(line_value(r.out, "huge_kb"));
	CHECK(anon_kb * 1024 <= 2ul << 20);
	CHECK((lines[0]["status"] == "ok" || lines[0]["error"] == "already on huge pages"));
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
