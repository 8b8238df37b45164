// Description: the policy file on a machine-wide preload.  In a private
// mount namespace an overlay over /etc holds /etc/ld.so.preload and
// /etc/hugetext.conf (the machine's own /etc is never touched); real
// programs then start as they would on such a machine.
#include <catch2/catch.hpp>

#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "robust.hpp"

extern "C" {
#include "hugetext.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (!is_root())
		return "needs root (mount namespace, overlay over /etc)";
	if (!have_program("unshare") || !have_program("node") || !have_program("python3"))
		return "needs unshare, node and python3";
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	if (run_prog({ "unshare", "-m", "true" }).status != 0)
		return "cannot make a mount namespace here";
	std::string d = temp_path("policy-probe");
	prog_result r = run_prog({ "sh", "-c", "rm -rf " + d + " && mkdir -p " + d + "/u " + d + "/w && unshare -m sh -c 'mount --make-rprivate / && mount -t overlay overlay -o lowerdir=/etc,upperdir=" + d + "/u,workdir=" + d + "/w /etc'; s=$?; rm -rf " + d + "; exit $s" });
	if (r.status != 0)
		return "overlayfs cannot be mounted over /etc here (nested overlays, or no overlay module)";
	return nullptr;
}

namespace {

struct machine {
	std::string dir = temp_path("policy-etc");
	std::string report = temp_path("policy-report.json");

	explicit machine(const std::string &conf, mode_t mode = 0644)
	{
		run_prog({ "rm", "-rf", dir });
		mkdir(dir.c_str(), 0755);
		mkdir((dir + "/upper").c_str(), 0755);
		mkdir((dir + "/work").c_str(), 0755);
		std::ofstream(dir + "/upper/ld.so.preload") << preload_path() << "\n";
		std::ofstream(dir + "/upper/hugetext.conf") << conf;
		chmod((dir + "/upper/hugetext.conf").c_str(), mode);
		unlink(report.c_str());
	}
	~machine() { run_prog({ "rm", "-rf", dir }); }

	// Runs @cmd (a shell line) on the machine; the program's environment
	// names only the report file, which the policy cannot set.
	prog_result run(const std::string &cmd, const std::vector<std::string> &env = {})
	{
		std::string line = "mount --make-rprivate / && mount -t overlay overlay -o lowerdir=/etc,upperdir=" +
				   dir + "/upper,workdir=" + dir + "/work /etc && exec " + cmd;
		prog_opts o;
		o.env = { "HUGETEXT_REPORT=" + report, "LD_PRELOAD" };
		o.env.insert(o.env.end(), env.begin(), env.end());
		o.timeout_s = 120;
		return run_prog({ "unshare", "-m", "sh", "-c", line }, o);
	}

	std::vector<report_line> lines() { return read_report(report); }
};

// The policy line that names node's code when it is not in the program:
// Debian's node keeps it in libnode.so, which the preload takes only when
// named.
std::string node_match()
{
	return node_code_object() == "libnode" ? "match = /libnode\\.so\n" : "";
}

// The same as a variable, for the runs whose environment overrides the file.
std::vector<std::string> node_match_env(std::vector<std::string> env)
{
	for (auto &v : node_match_vars())
		env.push_back(v);
	return env;
}

} // namespace

TEST_CASE("the programs pattern picks node; python3, g++, su and java run untouched", "[policy]")
{
	machine m("programs = ^/usr/bin/node$\nmode = thp\npage_cache = 0\n" + node_match());
	prog_result r = m.run("node -e 'console.log(6*7)'");
	CHECK(r.status == 0);
	CHECK(r.out == "42\n");
	auto lines = m.lines();
	CHECK_FALSE(ok_lines(lines).empty());

	std::vector<std::string> others = { "python3 -c 'print(6*7)'" };
	if (have_program("g++"))
		others.push_back("g++ --version");
	if (have_program("su"))
		others.push_back("su -s /bin/sh -c 'echo su ok' nobody");
	if (have_program("java"))
		others.push_back("java -version");
	for (auto &cmd : others) {
		INFO(cmd);
		prog_result plain = run_prog({ "sh", "-c", cmd });
		unlink(m.report.c_str());
		prog_result under = m.run(cmd);
		CHECK(under.status == plain.status);
		CHECK(under.out == plain.out);
		CHECK(m.lines().empty());
	}
}

TEST_CASE("machine-wide with the defaults: node's copy waits until it pays, the file's copy key wins",
	  "[policy][copy]")
{
	// A page cache node cannot keep: only a private copy could move it.
	// copy_after_ms: a wait far longer than node's run, however slow the machine (qemu).
	machine m("programs = ^/usr/bin/node$\npage_cache = 0\ncopy_after_ms = 600000\n" + node_match());
	prog_result r = m.run("node -e 'console.log(6*7)'", { "HUGETEXT_COPY" });
	CHECK(r.status == 0);
	CHECK(r.out == "42\n");
	// node's code segment (its small first and last pieces are skipped
	// for having no 2 MiB page at least half full of code).
	std::vector<report_line> code;
	for (auto &l : m.lines())
		if (l["bytes"] != "0")
			code.push_back(l);
	REQUIRE(code.size() == 1);
	CHECK(code[0]["status"] == "skipped");
	CHECK(code[0]["error"] == ht_error_str(HT_E_DEFERRED));

	machine now("programs = ^/usr/bin/node$\npage_cache = 0\ncopy = now\n" + node_match());
	r = now.run("node -e 'console.log(6*7)'", { "HUGETEXT_COPY" });
	CHECK(r.status == 0);
	CHECK(r.out == "42\n");
	CHECK(ok_lines(now.lines()).size() == 1);
}

TEST_CASE("the environment overrides the file", "[policy]")
{
	machine m("mode = off\n");

	prog_result r = m.run("node -e 0");
	CHECK(r.status == 0);
	CHECK(m.lines().empty());
	r = m.run("node -e 0", node_match_env({ "HUGETEXT_MODE=thp", "HUGETEXT_PAGE_CACHE=0" }));
	CHECK(r.status == 0);
	CHECK_FALSE(ok_lines(m.lines()).empty());
}

TEST_CASE("a file others may write, or a bad line, is ignored and says so under verbose", "[policy]")
{
	for (auto bad : { std::make_pair(std::string("mode = off\n"), (mode_t)0666),
			  std::make_pair(std::string("mode = off\nthis is not a key value line\n"), (mode_t)0644) }) {
		machine m(bad.first, bad.second);
		prog_result r = m.run("node -e 'console.log(1)'",
				      node_match_env({ "HUGETEXT_VERBOSE=1", "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_MODE" }));
		CHECK(r.status == 0);
		CHECK(r.out == "1\n");
		CHECK(r.err.find("hugetext.conf") != std::string::npos);
		// mode = off was not taken: node was moved.
		CHECK_FALSE(ok_lines(m.lines()).empty());
	}
}
