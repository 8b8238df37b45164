// Description: `hugetext run`: the preload is added to LD_PRELOAD (kept,
// never doubled), each option becomes its variable, bad values stop before
// the command runs, and the command's exit status comes back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

#include "tooltest.hpp"

namespace {

std::string preload()
{
	return real_path(build_path("lib/libhugetext-preload.so"));
}

// The value of LD_PRELOAD the command sees.
std::string seen_preload(const std::vector<std::string> &env)
{
	run_result r = tool({ "run", "--", "sh", "-c", "printf %s \"$LD_PRELOAD\"" }, env);
	REQUIRE(r.status == 0);
	return r.out;
}

std::vector<std::string> env_lines(const std::string &out)
{
	std::vector<std::string> v;
	size_t at = 0;
	while (at < out.size()) {
		size_t nl = out.find('\n', at);
		std::string line = out.substr(at, nl - at);
		if (line.compare(0, 9, "HUGETEXT_") == 0)
			v.push_back(line);
		at = nl == std::string::npos ? out.size() : nl + 1;
	}
	std::sort(v.begin(), v.end());
	return v;
}

const std::vector<std::string> no_settings = { "HUGETEXT_MODE", "HUGETEXT_MATCH", "HUGETEXT_IGNORE",
	"HUGETEXT_VERBOSE", "HUGETEXT_REPORT", "HUGETEXT_PERF_MAP", "HUGETEXT_SHARE", "HUGETEXT_SHARE_DIR",
	"HUGETEXT_BUDGET_MS", "HUGETEXT_FILL", "HUGETEXT_ASYNC", "HUGETEXT_PAGE_CACHE", "HUGETEXT_COPY",
	"HUGETEXT_COPY_AFTER_MS", "LD_PRELOAD" };

// In a sanitizer build the test helpers put the sanitizer runtime first in
// any LD_PRELOAD they pass on; what run then sees starts with it.
std::string given(const std::string &preload_value)
{
	const char *san = std::getenv("HT_SANITIZER_PRELOAD");
	return san && *san ? std::string(san) + " " + preload_value : preload_value;
}

} // namespace

TEST_CASE("run adds the build tree's preload when LD_PRELOAD is unset", "[run]")
{
	CHECK(seen_preload({ "LD_PRELOAD" }) == preload());
}

TEST_CASE("run keeps an existing LD_PRELOAD and adds the preload after it", "[run]")
{
	std::string mine = real_path(build_path("lib/libhugetext.so"));
	CHECK(seen_preload({ "LD_PRELOAD=" + mine }) == given(mine) + ":" + preload());
	// Two libraries separated by a space stay as they are, in order.
	std::string two = mine + " " + real_path(build_path("lib/libhugetext.so.0"));
	CHECK(seen_preload({ "LD_PRELOAD=" + two }) == given(two) + ":" + preload());
}

TEST_CASE("run does not add the preload twice", "[run]")
{
	std::string already = preload() + ":" + real_path(build_path("lib/libhugetext.so"));
	CHECK(seen_preload({ "LD_PRELOAD=" + already }) == given(already));
}

TEST_CASE("each option sets exactly its variable", "[run]")
{
	std::vector<std::string> env = no_settings;
	std::string report = temp_path("r.json");
	run_result r = tool({ "run", "--mode", "THP", "--match", "libfoo", "--ignore", "^/usr/", "--verbose",
			      "--report", report, "--perf-map", "--share", "--share-dir", "/dev/hugepages/x",
			      "--budget-ms", "25", "--async", "--no-page-cache", "--copy", "never", "--", "env" },
			    env);
	REQUIRE(r.status == 0);
	std::vector<std::string> want = { "HUGETEXT_ASYNC=1", "HUGETEXT_BUDGET_MS=25", "HUGETEXT_COPY=never",
					  "HUGETEXT_IGNORE=^/usr/", "HUGETEXT_MATCH=libfoo",
					  "HUGETEXT_MODE=thp", "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_PERF_MAP=1", "HUGETEXT_REPORT=" + report,
					  "HUGETEXT_SHARE=1", "HUGETEXT_SHARE_DIR=/dev/hugepages/x", "HUGETEXT_VERBOSE=1" };
	CHECK(env_lines(r.out) == want);
	unlink(report.c_str());

	// No option: nothing is set, and what the caller set passes through.
	r = tool({ "run", "env" }, env);
	CHECK(env_lines(r.out).empty());
	env.push_back("HUGETEXT_MODE=explicit");
	r = tool({ "run", "env" }, env);
	CHECK(env_lines(r.out) == std::vector<std::string>{ "HUGETEXT_MODE=explicit" });
	r = tool({ "run", "--mode", "off", "env" }, env);
	CHECK(env_lines(r.out) == std::vector<std::string>{ "HUGETEXT_MODE=off" });
}

TEST_CASE("the preload really runs in the command, with the settings given", "[run]")
{
	// small's code is under 2 MiB: the library reports it skipped, with the
	// mode asked for, whatever the machine offers.
	std::string report = temp_path("run-report.json");
	run_result r = tool({ "run", "--mode", "thp", "--report", report, "--", build_path("tests/small") },
			    no_settings);
	CHECK(r.status == 0);
	CHECK(r.out == "small ok\n");
	auto lines = read_report(report);
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["mode"] == "thp");
	CHECK(lines[0]["object"] == real_path(build_path("tests/small")));
	unlink(report.c_str());
}

TEST_CASE("run stops at the command: its options are its own", "[run]")
{
	run_result r = tool({ "run", "sh", "-c", "echo \"$0\" \"$1\"", "--mode", "--help" }, no_settings);
	CHECK(r.status == 0);
	CHECK(r.out == "--mode --help\n");
}

TEST_CASE("bad values are usage errors found before the command runs", "[run][usage]")
{
	std::string marker = temp_path("run-marker");
	std::vector<std::string> cmd = { "--", "touch", marker };
	struct { std::vector<std::string> opts; const char *msg; } cases[] = {
		{ { "--mode", "fast" }, "--mode 'fast': not one of auto, thp, explicit, off" },
		{ { "--match", "(" }, "--match '(': not a valid extended regular expression" },
		{ { "--ignore", "a{2,1}" }, "--ignore 'a{2,1}': not a valid extended regular expression" },
		{ { "--budget-ms", "-1" }, "--budget-ms '-1'" },
		{ { "--budget-ms", "3600001" }, "--budget-ms '3600001'" },
		{ { "--bogus" }, "unrecognized option" },
		{ {}, "" },
	};
	for (auto &c : cases) {
		std::vector<std::string> args{ "run" };
		args.insert(args.end(), c.opts.begin(), c.opts.end());
		if (!c.opts.empty())
			args.insert(args.end(), cmd.begin(), cmd.end());
		run_result r = tool(args);
		INFO(r.err);
		CHECK(r.status == 2);
		CHECK(r.err.find(c.msg) != std::string::npos);
		CHECK_FALSE(file_exists(marker));
	}
	run_result r = tool({ "run" });
	CHECK(r.err.find("no command given") != std::string::npos);
}

TEST_CASE("run returns the command's status, 127 when missing, 126 when not runnable", "[run]")
{
	CHECK(tool({ "run", "--", "sh", "-c", "exit 7" }).status == 7);
	run_result r = tool({ "run", "--", "/nonexistent/cmd" });
	CHECK(r.status == 127);
	CHECK(r.err == "hugetext run: /nonexistent/cmd: cannot run: No such file or directory\n");
	temp_dir d("run-noexec");
	write_file(d / "script", "#!/bin/sh\n", 0644);
	CHECK(tool({ "run", "--", d / "script" }).status == 126);
}

TEST_CASE("a command without its preload nearby falls back to the configured libdir", "[run]")
{
	// A copy of the command alone in a directory has no ../lib next to it.
	temp_dir d("run-alone");
	REQUIRE(mkdir((d.path + "/bin").c_str(), 0755) == 0);
	write_file(d / "bin/hugetext", read_file(tool_path()), 0755);
	run_result r = run_cmd({ d / "bin/hugetext", "run", "--", "sh", "-c", "printf %s \"$LD_PRELOAD\"" },
			       { "LD_PRELOAD" });
	std::string libdir = std::getenv("HT_TOOLS_LIBDIR") ? std::getenv("HT_TOOLS_LIBDIR") : "";
	REQUIRE(!libdir.empty());
	if (file_exists(libdir + "/libhugetext-preload.so")) {
		CHECK(r.status == 0);
		CHECK(r.out == real_path(libdir + "/libhugetext-preload.so"));
	} else {
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext run: cannot find libhugetext-preload.so next to the command or in " + libdir + "\n");
	}
}
