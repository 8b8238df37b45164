// Description: a real prefork server under the preload's defaults:
// PostgreSQL 15 from Debian (initdb, pg_ctl start with the preload in its
// environment, a few seconds of pgbench -S).  No transaction fails, every
// process of the server (postmaster, backends, checkpointer, ...) runs its
// code from huge pages, and all of them together hold one copy, counted by
// physical frame (tests/server/huge-sum.py).  Skipped without PostgreSQL.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <pwd.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"

namespace {

const std::string pgbin = "/usr/lib/postgresql/15/bin";

std::string json_value(const std::string &json, const std::string &key)
{
	size_t at = json.rfind("\"" + key + "\": ");
	if (at == std::string::npos)
		return "";
	at += key.size() + 4;
	return json.substr(at, json.find_first_of(",}", at) - at);
}

// A data directory the postgres user owns, outside root's home; the server
// is stopped and the directory removed at the end, whatever happened.
struct server {
	std::string dir, port, report;
	bool started = false;

	server()
	{
		char tmpl[] = "/tmp/hugetext-pg-XXXXXX";
		struct passwd *pw = getpwnam("postgres");
		if (!pw || !mkdtemp(tmpl) || chown(tmpl, pw->pw_uid, pw->pw_gid) != 0)
			return;
		dir = tmpl;
		port = std::to_string(50000 + getpid() % 10000);
		report = dir + "/report.json";
	}
	~server()
	{
		if (started)
			as_postgres({ pgbin + "/pg_ctl", "-D", dir + "/data", "-m", "immediate", "stop" });
		if (!dir.empty())
			run_prog({ "rm", "-rf", dir });
	}
	prog_result as_postgres(std::vector<std::string> argv, std::vector<std::string> env = {},
				double timeout = 600)
	{
		std::vector<std::string> a = { "runuser", "-u", "postgres", "--", "env", "-u", "HUGETEXT_COPY",
					       "-u", "HUGETEXT_PAGE_CACHE", "-u", "LD_PRELOAD" };
		a.insert(a.end(), env.begin(), env.end());
		a.insert(a.end(), argv.begin(), argv.end());
		prog_opts o;
		o.cwd = dir;
		o.timeout_s = timeout;
		return run_prog(a, o);
	}
};

} // namespace

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	if (access((pgbin + "/postgres").c_str(), X_OK) != 0 || access((pgbin + "/pgbench").c_str(), X_OK) != 0)
		return "PostgreSQL 15 is not installed (apt-get install postgresql)";
	if (geteuid() != 0 || !getpwnam("postgres") || !have_program("runuser"))
		return "needs root, the postgres user and runuser";
	if (!have_program("python3"))
		return "python3 is missing (tests/server/huge-sum.py)";
	return nullptr;
}

TEST_CASE("postgres under the defaults: pgbench -S runs clean, every backend on huge pages, one copy",
	  "[real][postgres]")
{
	server s;
	REQUIRE(!s.dir.empty());
	world_dir w;
	std::string pre = w.put(build_path("lib/libhugetext-preload.so"));
	REQUIRE(!pre.empty());

	// Timeouts catch a hang, not slowness: under qemu's emulation (arm64)
	// beside other guests, initdb took over two minutes.
	prog_result r = s.as_postgres({ pgbin + "/initdb", "-D", s.dir + "/data" }, {}, 900);
	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	r = s.as_postgres({ pgbin + "/pg_ctl", "-D", s.dir + "/data", "-o", "-p " + s.port + " -k " + s.dir,
			    "-l", s.dir + "/log", "-w", "-t", "600", "start" },
			  { "LD_PRELOAD=" + pre, "HUGETEXT_REPORT=" + s.report });
	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	s.started = true;
	r = s.as_postgres({ pgbin + "/pgbench", "-h", s.dir, "-p", s.port, "-i", "-s", "1", "postgres" });
	REQUIRE(r.status == 0);

	// pgbench's backends live as long as it runs: look at them meanwhile,
	// once both have connected ("postgres: ... [local] ..."): the server's
	// own five helpers alone would make the count.
	prog_result bench;
	std::thread t([&] {
		bench = s.as_postgres({ pgbin + "/pgbench", "-h", s.dir, "-p", s.port, "-S", "-c", "2", "-j", "2",
					"-T", "10", "postgres" });
	});
	std::ifstream pidf(s.dir + "/data/postmaster.pid");
	std::string pm;
	std::getline(pidf, pm);
	std::vector<std::string> kid_pids;
	size_t backends = 0;
	for (int i = 0; i < 90 && backends < 2; i++) {
		usleep(100000);
		prog_result kids = run_prog({ "sh", "-c", "cat /proc/" + pm + "/task/*/children" });
		kid_pids.clear();
		backends = 0;
		for (size_t at = 0; at < kids.out.size();) {
			size_t end = kids.out.find_first_of(" \n", at);
			if (end == std::string::npos)
				end = kids.out.size();
			if (end > at) {
				kid_pids.push_back(kids.out.substr(at, end - at));
				backends += read_file("/proc/" + kid_pids.back() + "/cmdline").find("[local]") !=
					    std::string::npos;
			}
			at = end + 1;
		}
	}
	std::vector<std::string> args = { "python3", source_path("tests/server/huge-sum.py"), pgbin + "/postgres", pm };
	args.insert(args.end(), kid_pids.begin(), kid_pids.end());
	size_t nkids = kid_pids.size();
	prog_result sum = run_prog(args);
	t.join();

	INFO(sum.out << sum.err << bench.out << bench.err);
	CHECK(bench.status == 0);
	CHECK(bench.out.find("number of failed transactions: 0 ") != std::string::npos);
	// Two backends and the server's own processes, all moved.  A child may
	// end between the listing and the reading (under qemu a short-lived one
	// did): it is counted as an error, and only that error is allowed.
	CHECK(backends == 2);
	REQUIRE(nkids >= 4);
	size_t gone = 0, errors = 0;
	for (size_t at = 0; (at = sum.out.find("\"error\"", at)) != std::string::npos; at++)
		errors++;
	for (size_t at = 0; (at = sum.out.find("No such file or directory", at)) != std::string::npos; at++)
		gone++;
	CHECK(errors == gone);
	CHECK(json_value(sum.out, "moved") == std::to_string(nkids + 1 - gone));
	CHECK(std::stoul(json_value(sum.out, "moved")) >= 4);
	// One copy of the server's code: the postmaster's, made at its first
	// fork, seen by all.  Where its start-up alone ran long enough for the
	// copy of what runs to come due (arm64 under a loaded emulator), that
	// copy comes first and the fork copies the rest: parts of one copy,
	// disjoint, all the postmaster's.  Other big objects it loaded may
	// have copies too, the postmaster's as well.
	auto ok = ok_lines(read_report(s.report));
	unsigned long copy = 0;
	size_t parts = 0;
	for (auto &l : ok) {
		CHECK(l["pid"] == pm);
		if (l["object"] == pgbin + "/postgres") {
			copy += std::stoul(l["huge_bytes"]);
			parts++;
		}
	}
	INFO(parts << " parts of postgres's copy");
	REQUIRE(parts >= 1);
	CHECK(parts <= 3);
	CHECK(copy > 0);
	// Every process maps those pages: the distinct frames are the copy's.
	CHECK(json_value(sum.out, "distinct_huge_bytes") == std::to_string(copy));
}
