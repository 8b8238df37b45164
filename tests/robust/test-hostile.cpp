// Description: the preload and the API in hostile surroundings that need
// no change to the system: /proc not mounted (in a private mount
// namespace), nonsense, empty and very long settings, unwritable report
// paths, an unprivileged user, the API called twice, the preload in a
// program that calls the API itself.  In every case the program's output,
// exit status and stderr are those of a run without the library.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/magic.h>
#include <string>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "robust.hpp"

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

std::string pie()
{
	return build_path("tests/bigtext-pie");
}

struct run_ctx {
	std::vector<std::string> prefix; // runs first, without the preload (unshare, runuser)
	bool stderr_may_speak = false;
	std::string cwd;
	double timeout_s = 20;
	std::vector<std::string> env; // for both runs
	std::string preload;          // the preload's path, when not the build's
};

// The program's output without its count of huge pages, which is ours.
std::string without_huge(const std::string &out)
{
	std::string v;
	size_t at = 0;
	while (at < out.size()) {
		size_t nl = out.find('\n', at);
		std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
		// The program's counts of its own huge pages (at main()'s start, and at its end).
		if (line.compare(0, 8, "huge_kb ") != 0 && line.compare(0, 13, "main_huge_kb ") != 0)
			v += line;
		at = nl == std::string::npos ? out.size() : nl + 1;
	}
	return v;
}

// Runs @cmd without and with the preload (plus @vars) and checks that the
// program cannot tell.  With a prefix, the variables reach @cmd through
// env(1), so the prefix itself runs without the preload.  Returns the
// preloaded run.
prog_result same_as_plain(const std::vector<std::string> &cmd, const std::vector<std::string> &vars,
			  const run_ctx &ctx = {})
{
	std::vector<std::string> plain_argv = ctx.prefix, argv = ctx.prefix;
	std::vector<std::string> all = vars;
	prog_opts po, o;

	all.push_back(ctx.preload.empty() ? ld_preload_hugetext() : ld_preload({ ctx.preload }));
	all.insert(all.end(), ctx.env.begin(), ctx.env.end());
	po.env = ctx.env;
	plain_argv.insert(plain_argv.end(), cmd.begin(), cmd.end());
	if (!ctx.prefix.empty()) {
		argv.push_back("env");
		argv.insert(argv.end(), all.begin(), all.end());
	} else {
		o.env = all;
	}
	argv.insert(argv.end(), cmd.begin(), cmd.end());
	po.cwd = o.cwd = ctx.cwd;
	o.timeout_s = ctx.timeout_s;
	prog_result plain = run_prog(plain_argv, po);
	REQUIRE(plain.status == 0);
	prog_result r = run_prog(argv, o);
	CHECK_FALSE(r.timed_out);
	CHECK(r.status == 0);
	CHECK(without_huge(r.out) == without_huge(plain.out));
	if (!ctx.stderr_may_speak)
		CHECK(r.err == plain.err);
	return r;
}

// The report, which must be valid JSON throughout.
std::vector<report_line> report_of(const std::string &path)
{
	int bad = 0;
	auto v = read_report_json(path, &bad);
	CHECK(bad == 0);
	unlink(path.c_str());
	return v;
}

} // namespace

TEST_CASE("without /proc the program runs the same and the report says /proc could not be read",
	  "[hostile][proc]")
{
	if (!is_root() || !have_program("unshare")) {
		WARN("not checked: needs root and unshare(1) to unmount /proc privately");
		return;
	}
	std::string report = temp_path("noproc.json");
	// A private mount namespace: /proc disappears for this program only.
	// procfs may be mounted more than once on /proc (a second mount after
	// a chroot, say): unmount every one.  What is left must be no /proc
	// at all, or the test would judge the library by whatever file system
	// lies below: a directory of the root, or a VM's share of its host's
	// /proc (exit 98).
	run_ctx ctx;
	ctx.prefix = { "unshare", "--mount", "--propagation", "private", "sh", "-c",
		       "while [ \"$(stat -f -c %T /proc 2>/dev/null)\" = proc ]; do umount -l /proc || exit 97; done; "
		       "test -e /proc/self/maps && exit 98; exec \"$@\"",
		       "sh" };
	std::vector<std::string> plain = ctx.prefix;
	plain.push_back(pie());
	prog_result alone = run_prog(plain);
	if (alone.status == 98) {
		WARN("not checked: with every procfs unmounted, /proc/self/maps is still there "
		     "(another file system below /proc)");
		return;
	}
	if (alone.status != 0) {
		// An ASan build's runtime reads /proc/self/maps before main().
		WARN("not checked: the program itself cannot run without /proc: " << alone.err.substr(0, 200));
		return;
	}
	prog_result r = same_as_plain({ pie() }, { "HUGETEXT_REPORT=" + report }, ctx);
	CHECK(line_value(r.out, "fds") == "-1"); // the program sees no /proc either
	auto lines = report_of(report);
	REQUIRE(lines.size() >= 1);
	CHECK(lines[0]["status"] == "failed");
	CHECK(lines[0]["error"] == ht_error_str(HT_E_PROC));
	CHECK(lines[0]["errno"] == "2");
}

TEST_CASE("no hugetlbfs mounted: share mode moves the code without a cache", "[hostile][share]")
{
	if (!is_root() || !have_program("unshare")) {
		WARN("not checked: needs root and unshare(1) to unmount hugetlbfs privately");
		return;
	}
	std::string report = temp_path("nohugetlbfs.json");
	run_ctx ctx;
	// Whatever hugetlbfs the host has mounted disappears for this program
	// only, and so does the set-up's text cache under /run (a machine after
	// `hugetext setup` has one: the share would be refused, not absent).
	ctx.prefix = { "unshare", "--mount", "--propagation", "private", "sh", "-c",
		       "umount -a -t hugetlbfs 2>/dev/null; mount -t tmpfs test-run /run && "
		       "! grep -q hugetlbfs /proc/self/mounts && exec \"$@\"",
		       "sh" };
	// Loaded on the 2 MiB grid, so the cache would be used if there were one.
	std::string prog = build_path("tests/robust/bigtext-aligned");
	same_as_plain({ prog }, { "HUGETEXT_SHARE=1", "HUGETEXT_MODE=auto", "HUGETEXT_REPORT=" + report }, ctx);
	auto lines = report_of(report);
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["status"] == "ok");
	CHECK(lines[0]["cache"] == "");
}

TEST_CASE("a PIE program off the 2 MiB grid is told why no zero-copy path serves it", "[hostile][share]")
{
	// The kernel loads bigtext-pie (4 KiB segments) at a 4 KiB-aligned
	// address, on the 2 MiB grid once in 512 starts: two starts, one at
	// least off it.  With no cache set up the report says why nothing
	// shared can serve it; with one (a machine after `hugetext setup`) the
	// cache refuses it, in the same words first.
	int told = 0;
	for (int i = 0; i < 2; i++) {
		std::string report = temp_path("offgrid.json");
		same_as_plain({ pie() }, { "HUGETEXT_SHARE", "HUGETEXT_SERVICE=0", "HUGETEXT_MODE=thp",
					   "HUGETEXT_REPORT=" + report });
		auto lines = report_of(report);
		REQUIRE(lines.size() == 1);
		CHECK(lines[0]["status"] == "ok");
		told += lines[0]["cache_error"].rfind("load address not 2 MiB-aligned", 0) == 0;
	}
	CHECK(told >= 1);
}

TEST_CASE("a share directory that is not on hugetlbfs is refused and the move goes on", "[hostile][share]")
{
	std::string dir = temp_path("not-hugetlbfs");
	REQUIRE(mkdir(dir.c_str(), 0700) == 0);
	struct statfs sf;
	REQUIRE(statfs(dir.c_str(), &sf) == 0);
	bool on_tmpfs = sf.f_type == TMPFS_MAGIC;
	std::string report = temp_path("sharedir.json");
	same_as_plain({ build_path("tests/robust/bigtext-aligned") },
		      { "HUGETEXT_SHARE=1", "HUGETEXT_SHARE_DIR=" + dir, "HUGETEXT_REPORT=" + report });
	auto lines = report_of(report);
	rmdir(dir.c_str());
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["status"] == "ok");
	CHECK(lines[0]["cache"] == "refused");
	// Each backend refuses in its own words: a tmpfs (/tmp often is one)
	// for its entry not on huge pages, any other file system for being
	// neither hugetlbfs nor tmpfs.
	if (on_tmpfs)
		CHECK(lines[0]["cache_error"].find("not on huge pages") != std::string::npos);
	else
		CHECK(lines[0]["cache_error"].find("hugetlbfs") != std::string::npos);
}

TEST_CASE("nonsense, empty and very long values of every setting leave the program unaffected",
	  "[hostile][settings]")
{
	const std::vector<std::string> vars = {
		"HUGETEXT_MODE", "HUGETEXT_VERBOSE", "HUGETEXT_REPORT", "HUGETEXT_MATCH",
		"HUGETEXT_IGNORE", "HUGETEXT_BUDGET_MS", "HUGETEXT_FILL", "HUGETEXT_SHARE",
		"HUGETEXT_SHARE_DIR", "HUGETEXT_PERF_MAP", "HUGETEXT_ASYNC", "IODLR_USE_EXPLICIT_HP",
	};
	std::string longv;
	while (longv.size() < 100000)
		longv += "(\\\"x\x01/..%s%n";
	const std::vector<std::string> values = {
		"\x01 \"' \\ \xe2\x98\x83 garbage[(", "", longv, "-1", "99999999999999999999999", "%s%n%x",
	};
	// A scratch directory: a nonsense report path is a relative file name.
	std::string dir = temp_path("settings");
	REQUIRE(mkdir(dir.c_str(), 0700) == 0);

	for (auto &var : vars) {
		for (size_t i = 0; i < values.size(); i++) {
			std::string report = temp_path("settings.json");
			std::vector<std::string> env = { var + "=" + values[i] };
			if (var == "HUGETEXT_SHARE_DIR")
				env.push_back("HUGETEXT_SHARE=1");
			if (var != "HUGETEXT_REPORT")
				env.push_back("HUGETEXT_REPORT=" + report);
			INFO(var << " value #" << i << " (" << values[i].size() << " bytes)");
			run_ctx ctx;
			ctx.cwd = dir;
			same_as_plain({ pie() }, env, ctx);
			if (var == "HUGETEXT_REPORT")
				continue;
			// Whatever happened is in the report, and nothing failed but a bad pattern.
			auto lines = report_of(report);
			CHECK(lines.size() >= 1);
			for (auto &l : lines) {
				CHECK(l.count("status") == 1);
				if (l["status"] == "failed")
					CHECK(((var == "HUGETEXT_MATCH" || var == "HUGETEXT_IGNORE") &&
					       l["error"] == ht_error_str(HT_E_BAD_REGEX)));
			}
		}
	}
	REQUIRE(system(("rm -rf '" + dir + "'").c_str()) == 0);
}

TEST_CASE("a pattern that does not compile is reported as failed, however long and odd it is",
	  "[hostile][settings]")
{
	// Report lines are formatted into a fixed buffer; the failed pattern
	// is the line's "object", escaped.  The line must still be written.
	for (std::string pat : { std::string("(["), std::string(300, '(') + "\\",
				 std::string(600, '\\') + "(", std::string(600, '"') + "(",
				 std::string(200, '\x01') + "(" }) {
		std::string report = temp_path("badregex.json");
		INFO("pattern of " << pat.size() << " bytes starting with '" << pat.substr(0, 2) << "'");
		same_as_plain({ pie() }, { "HUGETEXT_MATCH=" + pat, "HUGETEXT_REPORT=" + report });
		auto lines = report_of(report);
		REQUIRE(lines.size() == 1);
		CHECK(lines[0]["status"] == "failed");
		CHECK(lines[0]["error"] == ht_error_str(HT_E_BAD_REGEX));
	}
}

TEST_CASE("an unwritable report path is ignored without a word", "[hostile][report]")
{
	std::string file = temp_path("plainfile");
	{
		int fd = open(file.c_str(), O_CREAT | O_WRONLY, 0600);
		REQUIRE(fd >= 0);
		close(fd);
	}
	std::string dir = temp_path("report-dir");
	REQUIRE(mkdir(dir.c_str(), 0700) == 0);
	for (std::string path : { std::string("/nonexistent-dir/report.json"), std::string("/proc/version"),
				  dir, file + "/below-a-file", std::string("/dev/full"),
				  std::string(5000, 'x'), std::string("/") }) {
		INFO("HUGETEXT_REPORT=" << path.substr(0, 80));
		prog_result r = same_as_plain({ pie(), "smaps" }, { "HUGETEXT_REPORT=" + path });
		// The report is lost, the move is not.
		CHECK(line_value(r.out, "huge_kb") != "0");
	}
	unlink(file.c_str());
	CHECK(rmdir(dir.c_str()) == 0); // still empty: nothing was written into it
}

TEST_CASE("a report path that is a FIFO nobody reads does not hang the program", "[hostile][report]")
{
	std::string fifo = temp_path("report.fifo");
	REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
	run_ctx ctx;
	ctx.timeout_s = 5;
	prog_result r = same_as_plain({ pie() }, { "HUGETEXT_REPORT=" + fifo }, ctx);
	INFO("open(O_WRONLY) of a FIFO waits for a reader; the preload must not");
	CHECK_FALSE(r.timed_out);
	unlink(fifo.c_str());
}

TEST_CASE("a report path that is another user's link is not followed; root's links are", "[hostile][report]")
{
	if (!is_root()) {
		WARN("not checked: needs root to make a link of another user's");
		return;
	}
	// What another user may leave in /tmp for a name the docs suggest: a
	// link to a file of ours that we would append to.
	std::string target = temp_path("report-target"), link = temp_path("report-link");
	{
		int fd = open(target.c_str(), O_CREAT | O_WRONLY, 0600);
		REQUIRE(fd >= 0);
		close(fd);
	}
	REQUIRE(symlink(target.c_str(), link.c_str()) == 0);
	REQUIRE(lchown(link.c_str(), 65534, 65534) == 0);
	prog_result r = same_as_plain({ pie(), "smaps" }, { "HUGETEXT_REPORT=" + link });
	CHECK(line_value(r.out, "huge_kb") != "0");
	CHECK(read_file(target).empty());
	// Our own link is followed.
	REQUIRE(lchown(link.c_str(), 0, 0) == 0);
	same_as_plain({ pie(), "smaps" }, { "HUGETEXT_REPORT=" + link });
	CHECK(read_file(target).find("\"object\":") != std::string::npos);
	unlink(link.c_str());
	unlink(target.c_str());
}

// For the runs as nobody: the program and the preload where nobody can
// reach them (the build may be in root's home, mode 700).
struct as_nobody {
	world_dir w;
	std::string prog, preload;
	as_nobody() : prog(w.put(pie())), preload(w.put(preload_path())) {}
	bool ok() const { return !prog.empty() && !preload.empty(); }
};

TEST_CASE("an unprivileged user with a report path it may not write runs the same", "[hostile][report]")
{
	if (!is_root() || !have_program("runuser")) {
		WARN("not checked: needs root and runuser(1)");
		return;
	}
	as_nobody n;
	REQUIRE(n.ok());
	std::string dir = temp_path("rootonly");
	REQUIRE(mkdir(dir.c_str(), 0755) == 0);
	run_ctx ctx;
	ctx.prefix = { "runuser", "-u", "nobody", "--" };
	ctx.preload = n.preload;
	prog_result r = same_as_plain({ n.prog, "smaps" }, { "HUGETEXT_REPORT=" + dir + "/report.json" }, ctx);
	CHECK(line_value(r.out, "huge_kb") != "0");
	CHECK_FALSE(file_exists(dir + "/report.json"));
	rmdir(dir.c_str());
}

TEST_CASE("no room for one more thread (RLIMIT_NPROC): the program runs the same", "[hostile][threads]")
{
	if (!is_root() || !have_program("runuser") || !have_program("prlimit")) {
		WARN("not checked: needs root, runuser(1) and prlimit(1)");
		return;
	}
	as_nobody n;
	REQUIRE(n.ok());
	// The program makes no thread; the library must not need one.
	std::string report = temp_path("nproc.json");
	run_ctx ctx;
	ctx.prefix = { "runuser", "-u", "nobody", "--", "prlimit", "--nproc=1" };
	ctx.env = no_sanitizer_threads();
	ctx.preload = n.preload;
	prog_result r = same_as_plain({ n.prog, "smaps" }, { "HUGETEXT_MODE=thp", "HUGETEXT_REPORT=" + report }, ctx);
	CHECK(line_value(r.out, "huge_kb") != "0");
	unlink(report.c_str());
}

TEST_CASE("the API called twice moves the code once and then leaves it alone", "[hostile][api]")
{
	// api-main-aligned is linked with 2 MiB segments: its text starts on a
	// huge page boundary, so the whole start of the segment is moved.
	for (const char *prog : { "tests/robust/api-main", "tests/robust/api-main-aligned" }) {
		INFO(prog);
		prog_opts o;
		o.env = { "HUGETEXT_MODE=thp" };
		prog_result r = run_prog({ build_path(prog) }, o);
		INFO(r.out << r.err);
		CHECK(r.status == 0);
		CHECK(r.err.empty());
		CHECK(line_value(r.out, "remap1") == "rc=0 [ok no error]");
		CHECK(line_value(r.out, "remap2") == "rc=0 [skipped " + std::string(ht_error_str(HT_E_ALREADY)) + "]");
		CHECK(line_value(r.out, "iodlr1") == "map_ok");
		CHECK(line_value(r.out, "iodlr2") == "map_ok");
		CHECK(line_value(r.out, "range").find("rc=0") == 0);
		o.env = { "HUGETEXT_MODE=off" };
		prog_result off = run_prog({ build_path(prog) }, o);
		CHECK(line_value(r.out, "sum") == line_value(off.out, "sum"));
	}
}

TEST_CASE("the preload in a program that calls the API itself: both are harmless", "[hostile][api]")
{
	for (const char *prog : { "tests/robust/api-main", "tests/robust/api-main-aligned" }) {
		INFO(prog);
		std::string report = temp_path("api-preload.json");
		prog_opts o;
		o.env = { ld_preload_hugetext(), "HUGETEXT_MODE=thp", "HUGETEXT_REPORT=" + report };
		prog_result r = run_prog({ build_path(prog) }, o);
		INFO(r.out << r.err);
		CHECK(r.status == 0);
		CHECK(r.err.empty());
		// The preload moved the program before main(); the program's calls see that.
		std::string already = "rc=0 [skipped " + std::string(ht_error_str(HT_E_ALREADY)) + "]";
		CHECK(line_value(r.out, "remap1") == already);
		CHECK(line_value(r.out, "remap2") == already);
		CHECK(line_value(r.out, "iodlr1") == "map_ok");
		CHECK(line_value(r.out, "iodlr2") == "map_ok");
		o.env = { "HUGETEXT_MODE=off" };
		prog_result off = run_prog({ build_path(prog) }, o);
		CHECK(line_value(r.out, "sum") == line_value(off.out, "sum"));
		auto lines = report_of(report);
		for (auto &l : lines)
			CHECK(l["status"] != "failed");
		// The preload's move and the program's range remap.
		CHECK(ok_lines(lines).size() == 2);
	}
}

TEST_CASE("matching every shared library, the loader and ourselves changes nothing", "[hostile][settings]")
{
	for (std::string pat : { ".", "ld-linux|libc|libhugetext", "libhugetext-preload" }) {
		std::string report = temp_path("match-all.json");
		INFO("HUGETEXT_MATCH=" << pat);
		same_as_plain({ pie() }, { "HUGETEXT_MATCH=" + pat, "HUGETEXT_REPORT=" + report });
		auto lines = report_of(report);
		for (auto &l : lines)
			CHECK(l["status"] != "failed");
		CHECK(ok_lines(lines).size() == 1); // the program; the libraries are too small
	}
}

TEST_CASE("a time budget of 0 or 1 ms never makes the program wait or fail", "[hostile][settings]")
{
	for (const char *b : { "0", "1" }) {
		std::string report = temp_path("budget.json");
		same_as_plain({ pie() }, { std::string("HUGETEXT_BUDGET_MS=") + b, "HUGETEXT_REPORT=" + report });
		for (auto &l : report_of(report))
			CHECK(l["status"] != "failed");
	}
}
