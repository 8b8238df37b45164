// Description: `hugetext check` against the library at work: the span it
// predicts for a file is the one the preload moves, and a process's moved
// code shows on huge pages, named after its program.  Needs THP.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <unistd.h>

#include "tooltest.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled)";
	return nullptr;
}

namespace {

// The report line of the program itself.
report_line program_line(const std::string &report, const std::string &prog)
{
	for (auto &l : read_report(report))
		if (l["object"] == prog)
			return l;
	return {};
}

} // namespace

TEST_CASE("the span check predicts for a fixed-address program is the span the preload moves", "[live]")
{
	std::string prog = real_path(build_path("tests/bigtext-nopie"));
	std::string report = temp_path("live-nopie.json");
	run_result c = tool({ "check", "--json", prog });
	REQUIRE(c.status == 0);
	auto regions = json_regions(c.out);
	REQUIRE(regions.size() == 1);
	CHECK(regions[0]["exact"] == "true");

	run_result r = tool({ "run", "--mode", "thp", "--report", report, "--", prog });
	CHECK(r.status == 0);
	report_line l = program_line(report, prog);
	unlink(report.c_str());
	REQUIRE(l["status"] == "ok");
	CHECK(l["start"] == regions[0]["span_start"]);
	CHECK(l["end"] == regions[0]["span_end"]);
	CHECK(l["huge_bytes"] == regions[0]["huge_bytes"]);
}

TEST_CASE("a process's moved code shows on huge pages, named after its program", "[live][pid]")
{
	std::string prog = real_path(build_path("tests/tools/tools-waiter"));
	std::string report = temp_path("live-waiter.json");
	child w({ tool_path(), "run", "--mode", "thp", "--report", report, "--", prog });
	REQUIRE(w.read_line().compare(0, 5, "ready") == 0);
	std::string pid = std::to_string(w.pid);

	run_result j = tool({ "check", "--json", pid });
	run_result t = tool({ "check", pid });
	CHECK(w.finish() == 0);
	report_line l = program_line(report, prog);
	unlink(report.c_str());
	REQUIRE(j.status == 0);
	REQUIRE(l["status"] == "ok");

	const report_line *moved = nullptr;
	auto regions = json_regions(j.out);
	for (auto &r : regions)
		if (r["moved"] == "true")
			moved = &r;
	REQUIRE(moved);
	CHECK(moved->at("object") == prog);
	CHECK(moved->at("start") == l["start"]);
	CHECK(moved->at("end") == l["end"]);
	CHECK(moved->at("huge_bytes") == l["huge_bytes"]);
	CHECK(moved->at("thp") == l["huge_bytes"]);
	CHECK(std::stoull(moved->at("huge_bytes")) >= 2u << 20);

	CHECK(t.status == 0);
	CHECK(t.out.find("pid " + pid + " (" + prog + "):") == 0);
	CHECK(t.out.find("thp        " + prog + " (moved)") != std::string::npos);
}

TEST_CASE("a process's mapping names reach the terminal without their control bytes", "[live][pid]")
{
	// Any user may name a file so that printing it moves the cursor or
	// retitles root's terminal.
	std::string prog = temp_path("esc-\x1b[31mX\x1b[0m-\x1b]0;t\a-waiter", build_path("tests/tools"));
	REQUIRE(run_cmd({ "cp", build_path("tests/tools/tools-waiter"), prog }).status == 0);
	child w({ prog });
	REQUIRE(w.read_line().compare(0, 5, "ready") == 0);
	run_result t = tool({ "check", std::to_string(w.pid) });
	CHECK(w.finish() == 0);
	unlink(prog.c_str());
	CHECK(t.status == 0);
	CHECK(t.out.find('\x1b') == std::string::npos);
	CHECK(t.out.find('\a') == std::string::npos);
	CHECK(t.out.find("esc-?[31mX?[0m-?]0;t?-waiter") != std::string::npos);
}
