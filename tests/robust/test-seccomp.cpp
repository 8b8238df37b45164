// Description: the preload under a seccomp filter that refuses the calls
// it needs (mremap, MADV_HUGEPAGE, MAP_HUGETLB, mprotect to executable,
// anonymous executable mmap), as a sandbox or an execmem policy would.
// Raw system calls cannot dodge the filter.  Every time: the program's
// output is unchanged, it exits 0, stderr stays empty unless asked, and
// the report names what failed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <unistd.h>

#include "robust.hpp"

extern "C" {
#include "hugetext.h"
}

namespace {

std::string launcher()
{
	return build_path("tests/robust/seccomp-run");
}

std::string pie()
{
	return build_path("tests/bigtext-pie");
}

// The launcher's command line: the variables are set for @cmd only.
std::vector<std::string> filtered(const std::vector<std::string> &env, const std::string &rules,
				  const std::vector<std::string> &cmd)
{
	std::vector<std::string> v = { launcher() };
	for (auto &e : env) {
		v.push_back("-e");
		v.push_back(e);
	}
	v.push_back(rules);
	v.insert(v.end(), cmd.begin(), cmd.end());
	return v;
}

} // namespace

extern "C" const char *test_skip_reason(void)
{
	static std::string why;

	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	prog_result r = run_prog({ launcher(), "mremap", "true" });
	if (r.status == 77) {
		why = "seccomp filters are not available here: " + r.err;
		return why.c_str();
	}
	return nullptr;
}

namespace {

struct expect {
	const char *rules;
	const char *mode;
	enum ht_status status;
	enum ht_error error; // when failed
	int err;             // errno when failed
};

// Runs @prog under @rules, plain and with the preload, and checks both
// against a run without any filter.  Returns the report lines.
std::vector<report_line> run_filtered(const std::string &rules, const std::string &mode,
				      const std::string &prog = pie(), std::vector<std::string> extra = {})
{
	std::string report = temp_path("seccomp.json");
	prog_result plain = run_prog({ prog, "smaps" });
	REQUIRE(plain.status == 0);

	// The filter must not hit the program itself: same output without us.
	// (A sanitizer runtime's own leak-check thread counts as the program.)
	prog_opts co;
	bool no_clone = rules.find("clone") != std::string::npos;
	if (no_clone)
		co.env = no_sanitizer_threads();
	prog_result control = run_prog({ launcher(), rules, prog, "smaps" }, co);
	INFO("control run under " << rules << ": " << control.err);
	REQUIRE(control.status == 0);
	REQUIRE(control.out == plain.out);

	std::vector<std::string> env = { ld_preload_hugetext(), "HUGETEXT_REPORT=" + report,
					 "HUGETEXT_MODE=" + mode };
	env.insert(env.end(), extra.begin(), extra.end());
	if (no_clone)
		for (auto &e : no_sanitizer_threads())
			env.push_back(e);
	prog_result r = run_prog(filtered(env, rules, { prog, "smaps" }));
	INFO("with the preload under " << rules << ", mode " << mode << ": " << r.err);
	CHECK(r.status == 0);
	CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
	CHECK(line_value(r.out, "fds") == line_value(plain.out, "fds"));
	bool verbose = false;
	for (auto &e : extra)
		verbose |= e == "HUGETEXT_VERBOSE=1";
	if (!verbose)
		CHECK(r.err.empty());
	int bad = 0;
	auto lines = read_report_json(report, &bad);
	CHECK(bad == 0);
	unlink(report.c_str());
	// A failed region leaves the text on small pages.
	bool any_ok = !ok_lines(lines).empty();
	if (!any_ok)
		CHECK(line_value(r.out, "huge_kb") == "0");
	else
		CHECK(line_value(r.out, "huge_kb") != "0");
	return lines;
}

void check_outcome(const expect &e)
{
	auto lines = run_filtered(e.rules, e.mode);
	INFO("rules " << e.rules << ", mode " << e.mode);
	REQUIRE(lines.size() == 1);
	auto &l = lines[0];
	CHECK(l["status"] == ht_status_str(e.status));
	if (e.status == HT_STATUS_FAILED) {
		CHECK(l["error"] == ht_error_str(e.error));
		CHECK(l["errno"] == std::to_string(e.err));
	} else {
		CHECK(l["huge_bytes"] == l["bytes"]);
	}
}

} // namespace

TEST_CASE("the filters leave a program without the preload untouched", "[seccomp]")
{
	prog_result plain = run_prog({ pie() });
	for (const char *rules : { "mremap", "madv-hugepage", "madv-collapse", "map-hugetlb", "mprotect-exec",
				   "mmap-anon-exec", "memfd", "clone,clone3", "clone:kill,clone3:kill" }) {
		prog_opts o;
		if (std::string(rules).find("clone") != std::string::npos)
			o.env = no_sanitizer_threads();
		prog_result r = run_prog({ launcher(), rules, pie() }, o);
		INFO(rules << ": " << r.err);
		CHECK(r.status == 0);
		CHECK(r.out == plain.out);
		CHECK(r.err.empty());
	}
}

TEST_CASE("a refused mremap fails the region, names it, and the program runs on", "[seccomp]")
{
	check_outcome({ "mremap", "thp", HT_STATUS_FAILED, HT_E_SWAP, EPERM });
	check_outcome({ "mremap:12", "auto", HT_STATUS_FAILED, HT_E_SWAP, ENOMEM });
}

TEST_CASE("a refused mremap in a non-PIE program changes nothing either", "[seccomp]")
{
	auto lines = run_filtered("mremap", "thp", build_path("tests/bigtext-nopie"));
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["status"] == "failed");
	CHECK(lines[0]["error"] == ht_error_str(HT_E_SWAP));
}

TEST_CASE("a refused MADV_HUGEPAGE fails the region with the advice error", "[seccomp]")
{
	check_outcome({ "madv-hugepage", "thp", HT_STATUS_FAILED, HT_E_ADVISE, EPERM });
}

TEST_CASE("a refused MADV_COLLAPSE still moves the code when the pages are huge", "[seccomp]")
{
	check_outcome({ "madv-collapse", "thp", HT_STATUS_OK, HT_E_NONE, 0 });
}

TEST_CASE("an execmem policy (mprotect to executable refused) fails the region with EACCES", "[seccomp]")
{
	check_outcome({ "mprotect-exec", "thp", HT_STATUS_FAILED, HT_E_PROTECT, EACCES });
	check_outcome({ "mprotect-exec", "auto", HT_STATUS_FAILED, HT_E_PROTECT, EACCES });
}

TEST_CASE("refusing anonymous executable mmap does not concern the library", "[seccomp]")
{
	// The copy is mapped read+write and made executable with mprotect.
	check_outcome({ "mmap-anon-exec", "thp", HT_STATUS_OK, HT_E_NONE, 0 });
}

TEST_CASE("a refused MAP_HUGETLB: auto mode falls back to THP", "[seccomp]")
{
	auto lines = run_filtered("map-hugetlb", "auto");
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["status"] == "ok");
	CHECK(lines[0]["mode"] == "thp");
}

// Needs free pool pages: explicit mode checks the pool before mmap and,
// with no room, fails for that reason and never reaches the filter.  Runs
// in robust-seccomp-pool, alone, which may grow the pool and puts it back.
TEST_CASE("a refused MAP_HUGETLB fails explicit mode with the allocation error", "[seccomp][pool]")
{
	std::unique_ptr<setting_guard> guard;
	std::string why = ensure_pool(40 / 2 + 2, guard);
	if (!why.empty()) {
		WARN("explicit mode not checked against the filter: " << why);
		return;
	}
	check_outcome({ "map-hugetlb", "explicit", HT_STATUS_FAILED, HT_E_ALLOC, EPERM });
}

TEST_CASE("everything refused at once: the program still runs the same", "[seccomp]")
{
	auto lines = run_filtered("mremap,madv-hugepage,madv-collapse,map-hugetlb,mprotect-exec,mmap-anon-exec,memfd",
				  "auto");
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["status"] == "failed");
	CHECK(lines[0]["errno"] != "");
}

TEST_CASE("verbose mode names the refused call on stderr, and only then", "[seccomp]")
{
	prog_result r = run_prog(
		filtered({ ld_preload_hugetext(), "HUGETEXT_VERBOSE=1", "HUGETEXT_MODE=thp" }, "mremap", { pie() }));
	CHECK(r.status == 0);
	CHECK(r.err.find("failed") != std::string::npos);
	CHECK(r.err.find(ht_error_str(HT_E_SWAP)) != std::string::npos);
	CHECK(r.err.find("Operation not permitted") != std::string::npos);
	// One line per region, nothing else.
	CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("no new threads allowed (clone refused): the copy is filled by the calling thread",
	  "[seccomp][threads]")
{
	// glibc's pthread_create() tries clone3 and falls back to clone only on ENOSYS.
	for (const char *rules : { "clone,clone3", "clone3:38,clone" }) {
		INFO(rules);
		auto lines = run_filtered(rules, "thp");
		REQUIRE(lines.size() == 1);
		CHECK(lines[0]["status"] == "ok");
		CHECK(lines[0]["huge_bytes"] == lines[0]["bytes"]);
	}
}

TEST_CASE("a sandbox that kills on clone (systemd SystemCallFilter's default) does not kill the program",
	  "[seccomp][threads]")
{
	// A program that never makes threads may run under such a filter; the
	// library must not make one behind its back.
	auto lines = run_filtered("clone:kill,clone3:kill", "thp");
	CHECK(lines.size() == 1);
}

TEST_CASE("under a filter, HUGETEXT_ASYNC=1 moves the code before main() instead of in a thread",
	  "[seccomp][threads][async]")
{
	// A filter that kills on clone would kill the program for our thread.
	// run_filtered checks that the text is on huge pages when main() looks.
	auto lines = run_filtered("clone:kill,clone3:kill", "thp", pie(), { "HUGETEXT_ASYNC=1" });
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["status"] == "ok");
	CHECK(lines[0]["huge_bytes"] == lines[0]["bytes"]);
}

namespace {

// `bigtext-pie spin 300 WAIT [threaded]` under @rules with the default copy
// policy and a wait set by hand (which, without a filter, starts our thread
// at once): its output, and the report's lines.  The wait is 100 ms of the
// process's CPU time, a third of the spin: the copy takes what has run
// (copy_hot), and with no wait it raced the spin's first instructions (on
// a loaded machine our thread looked first and found nothing run yet).
prog_result spin_filtered(const std::string &rules, bool threaded, const std::string &report)
{
	std::vector<std::string> env = { ld_preload_hugetext(), "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=thp",
					 "HUGETEXT_COPY=auto", "HUGETEXT_COPY_AFTER_MS=100", "HUGETEXT_PAGE_CACHE=0" };
	// A sanitizer runtime's leak check makes a thread at exit: not under clone:kill.
	if (rules.find("clone:kill") != std::string::npos)
		for (auto &e : no_sanitizer_threads())
			env.push_back(e);
	std::vector<std::string> cmd = { pie(), "spin", "300", threaded ? "20000" : "0" };
	if (threaded)
		cmd.push_back("threaded");
	unlink(report.c_str());
	prog_result r = run_prog(filtered(env, rules, cmd));
	INFO(rules << ": " << r.err);
	CHECK(r.status == 0);
	CHECK(r.err.empty());
	CHECK(line_value(r.out, "spin_sum_odd") != "");
	return r;
}

} // namespace

// Podman's, Docker's and Kubernetes' RuntimeDefault profiles answer clone3
// with ENOSYS (glibc falls back to clone) and let threads be made.
TEST_CASE("under a container's filter the copy is deferred, and made in our thread once the program has made one",
	  "[seccomp][threads]")
{
	std::string report = temp_path("seccomp-spin.json");
	prog_result r = spin_filtered("clone3:38,memfd", true, report);
	CHECK(std::stoul(line_value(r.out, "spin_huge_kb")) > 0);
	auto lines = read_report_json(report);
	unlink(report.c_str());
	REQUIRE(lines.size() >= 2);
	// The start deferred it (not "copy is never"); our thread then moved it.
	CHECK(lines[0]["status"] == "skipped");
	CHECK(lines[0]["error"] == ht_error_str(HT_E_DEFERRED));
	CHECK(!ok_lines(lines).empty());
}

TEST_CASE("under a filter, a program that makes no thread of its own never gets ours", "[seccomp][threads]")
{
	// The wait set by hand starts our thread at once where no filter is:
	// under one, nothing says that a thread may be made without being killed.
	for (const char *rules : { "clone3:38,memfd", "clone:kill,clone3:kill" }) {
		std::string report = temp_path("seccomp-single.json");
		prog_result r = spin_filtered(rules, false, report);
		INFO(rules);
		CHECK(line_value(r.out, "threads") == "1");
		CHECK(line_value(r.out, "single_threaded") == "1");
		CHECK(line_value(r.out, "spin_huge_kb") == "0");
		auto lines = read_report_json(report);
		unlink(report.c_str());
		REQUIRE(lines.size() == 1);
		CHECK(lines[0]["error"] == ht_error_str(HT_E_DEFERRED));
	}
}
