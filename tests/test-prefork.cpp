// Description: servers that fork workers without exec (PostgreSQL, prefork
// Apache, gunicorn) under the preload's defaults (HUGETEXT_COPY=auto).  The
// copy that waits until it pays is made at the master's first fork(), so
// every worker inherits it: every worker runs from huge pages, and master
// and workers together hold one copy (counted by physical page).  A child
// that execs right after fork() makes no copy and has no thread of ours.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"

extern "C" {
#include "hugetext.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

namespace {

std::string preload() { return build_path("lib/libhugetext-preload.so"); }
std::string prefork() { return build_path("tests/prefork-main"); }

// The preload's defaults (the test runner's HUGETEXT_COPY=now removed), a
// THP copy whatever the hugetlb pool holds (another test may grow it), no
// shared cache and no page cache: the private copy is what is tested.
run_result run_default(const std::vector<std::string> &argv, const std::string &report,
		       const std::string &more = "HUGETEXT_COPY_HOT")
{
	unlink(report.c_str());
	return run_cmd(argv, { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report, "HUGETEXT_COPY",
			       "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_MODE=thp", "HUGETEXT_SHARE=0", more });
}

struct proc_line {
	std::string who;
	long pid = 0;
	unsigned long huge_kb = 0;
	std::vector<unsigned long long> pfns;
};

// The "worker PID huge_kb K pfns ..." and "master PID ..." lines.
std::vector<proc_line> proc_lines(const std::string &out)
{
	std::vector<proc_line> v;
	std::istringstream in(out);
	std::string line;

	while (std::getline(in, line)) {
		std::istringstream s(line);
		proc_line p;
		std::string k1, k2, pfns;
		if (!(s >> p.who >> p.pid >> k1 >> p.huge_kb >> k2 >> pfns) || k1 != "huge_kb")
			continue;
		std::istringstream ps(pfns);
		std::string x;
		while (std::getline(ps, x, ','))
			p.pfns.push_back(std::stoull(x));
		v.push_back(p);
	}
	return v;
}

// The master (the last of @n process lines) and its workers all have the
// whole text on huge pages.  The count is of the mappings over the text,
// which also hold the code segment's partial first or last 2 MiB page when
// the move took it (its code paid for it: on arm64, whose 64 KiB load steps
// put more of the segment there): one more page at most at each end.
proc_line all_on_huge_pages(const std::vector<proc_line> &procs, size_t n)
{
	REQUIRE(procs.size() == n);
	const proc_line &master = procs.back();
	REQUIRE(master.who == "master");
	unsigned long movable_kb = master.pfns.size() * 2048;
	REQUIRE(movable_kb >= 4096);
	for (auto &p : procs) {
		CHECK(p.huge_kb >= movable_kb);
		CHECK(p.huge_kb <= movable_kb + 4096);
		CHECK(p.huge_kb == master.huge_kb);
	}
	return master;
}

} // namespace

TEST_CASE("under the defaults every worker of a prefork master runs from huge pages, all from one copy",
	  "[prefork]")
{
	// With copy_hot too: the master has run little of its workers' code at
	// its first fork, so the copy made then takes the whole span.
	std::string hot = GENERATE(std::string("HUGETEXT_COPY_HOT"), std::string("HUGETEXT_COPY_HOT=1"));
	std::string report = temp_path("prefork.json");
	run_result r = run_default({ prefork(), "workers", "3", "10000" }, report, hot);

	INFO(hot << "\n" << r.out << r.err);
	REQUIRE(r.status == 0);
	auto procs = proc_lines(r.out);
	// Every process, the master too, has all of the text on huge pages.
	const proc_line master = all_on_huge_pages(procs, 4);
	unsigned long movable_kb = master.pfns.size() * 2048;

	// One copy: the distinct 2 MiB frames behind all of them.
	std::set<unsigned long long> frames;
	bool have_pfns = true;
	for (auto &p : procs)
		for (auto f : p.pfns) {
			have_pfns &= f != 0;
			frames.insert(f);
		}
	if (have_pfns)
		CHECK(frames.size() * 2048 == movable_kb);
	else
		WARN("no physical frames (needs CAP_SYS_ADMIN): copies not counted");

	// The master made the one copy, at its first fork; no worker made one.
	auto lines = read_report(report);
	auto ok = ok_lines(lines);
	REQUIRE(ok.size() == 1);
	CHECK(ok[0]["pid"] == std::to_string(master.pid));
	CHECK(ok[0]["mode"] == "thp");
	for (auto &l : lines)
		CHECK(l["pid"] == std::to_string(master.pid));
}

TEST_CASE("a master whose copy of what runs took a part has the rest copied whole at its first fork",
	  "[prefork]")
{
	// The master runs its first 4 MiB (a whole 2 MiB page at least, wherever
	// the program loads) until the deferred copy of what runs (the default)
	// has taken that part (at most 20 s of CPU time); the rest
	// waits for a later pass.  Then it forks: what waits is copied whole,
	// before the fork, so that every worker runs all of the code from huge
	// pages.
	std::string report = temp_path("prefork-hot.json");
	run_result r = run_default({ prefork(), "hot-workers", "2", "10000" }, report);

	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	const proc_line master = all_on_huge_pages(proc_lines(r.out), 3);
	auto ok = ok_lines(read_report(report));
	// The copy of what ran, then the rest at the fork: two lines at least,
	// the first with what was hot, every one the master's.
	REQUIRE(ok.size() >= 2);
	CHECK(ok[0].count("hot_bytes") == 1);
	CHECK(std::stoul(ok[0]["hot_bytes"]) <= (6u << 20));
	CHECK(ok[1].count("hot_bytes") == 0);
	for (auto &l : ok)
		CHECK(l["pid"] == std::to_string(master.pid));
}

TEST_CASE("a child that execs right after fork() makes no copy and has no thread of ours", "[prefork]")
{
	std::string report = temp_path("prefork-exec.json");
	run_result r = run_default({ prefork(), "exec", "/bin/true" }, report);

	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "child status") == "0");
	// The fork leaves one thread in the child: nothing of ours runs there.
	CHECK(line_value(r.out, "child threads").substr(0, 2) == "1 ");
	// The one copy is the master's, made before the fork; the child and the
	// program it runs write no line of a copy of their own.
	auto ok = ok_lines(read_report(report));
	REQUIRE(ok.size() == 1);
	for (auto &l : read_report(report))
		if (l["pid"] != ok[0]["pid"])
			CHECK(l["status"] != "ok");
}

TEST_CASE("posix_spawn() is glibc's alone: no copy in the parent or the child, the wait goes on",
	  "[prefork]")
{
	std::string report = temp_path("prefork-spawn.json");
	run_result r = run_default({ prefork(), "spawn", "/bin/true" }, report);

	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "child status") == "0");
	CHECK(line_value(r.out, "master huge_kb") == "0");
	CHECK(ok_lines(read_report(report)).empty());
}

TEST_CASE("a program that never forks still waits for its copy to pay", "[prefork]")
{
	std::string report = temp_path("prefork-none.json");
	// A master with no worker ends before its copy pays: the start-up line only, deferred.
	run_result r = run_default({ prefork(), "workers", "0", "0" }, report);

	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	auto lines = read_report(report);
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["error"] == ht_error_str(HT_E_DEFERRED));
	CHECK(ok_lines(lines).empty());
}
