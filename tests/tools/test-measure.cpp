// Description: hugetext measure on real programs: the bundled demo (plain,
// defaults, a private copy) and node -e, each variant's huge-page claim as
// smaps showed it at the exit, the counters' reason and the calibration's
// verdict with its figures; hostile commands and options (a command that
// fails, dies by a signal, never ends, cannot be copied; nonsense options):
// a clear message, a non-zero exit, nothing left behind; with --no-copies,
// the files' page cache put back as it was.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tooltest.hpp"

namespace {

// In a sanitizer build the measured programs are instrumented too: LeakSanitizer
// does not work under ptrace (measure's watched run), and ASan's runtime
// preloaded into programs built without it (bash, node) aborts them.
bool sanitized()
{
	const char *s = std::getenv("HT_SANITIZER_PRELOAD");
	if (s && *s)
		WARN("a sanitizer build: measure's real runs are not checked here (the pure parts and the "
		     "hostile options are)");
	return s && *s;
}

// Runs in a mount namespace of the test's own with /run a tmpfs: the
// calibration's per-boot file and measure's directory stay the test's.
bool private_run()
{
	if (sanitized())
		return false;
	return geteuid() == 0 && private_run_dir("/run/hugetext/text");
}

int entries(const std::string &dir)
{
	DIR *d = opendir(dir.c_str());
	int n = 0;
	if (!d)
		return -1;
	while (dirent *e = readdir(d))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

json_object *get(json_object *o, const char *key)
{
	json_object *v = nullptr;
	if (!o || !json_object_object_get_ex(o, key, &v))
		return nullptr;
	return v;
}

long long num(json_object *o, const char *key)
{
	json_object *v = get(o, key);
	return v ? json_object_get_int64(v) : -1;
}

std::string str(json_object *o, const char *key)
{
	json_object *v = get(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

json_object *variant(json_object *o, const char *name)
{
	json_object *vars = get(o, "variants");
	for (size_t i = 0; vars && i < json_object_array_length(vars); i++)
		if (str(json_object_array_get_idx(vars, i), "name") == name)
			return json_object_array_get_idx(vars, i);
	return nullptr;
}

// Bytes of [p, p + len) that /proc/self/smaps shows mapped from 2 MiB page-cache pages.
uint64_t file_pmd_in(const void *p, size_t len)
{
	std::string s = read_file("/proc/self/smaps");
	uint64_t total = 0;
	bool in = false;
	size_t at = 0;
	while (at < s.size()) {
		size_t nl = s.find('\n', at);
		std::string l = s.substr(at, nl - at);
		at = nl == std::string::npos ? s.size() : nl + 1;
		unsigned long lo, hi, kb;
		if (std::sscanf(l.c_str(), "%lx-%lx ", &lo, &hi) == 2 && l.find(':') > l.find(' '))
			in = lo < (uintptr_t)p + len && hi > (uintptr_t)p;
		else if (in && std::sscanf(l.c_str(), "FilePmdMapped: %lu kB", &kb) == 1)
			total += kb * 1024;
	}
	return total;
}

// Whether any of @path's first 8 MiB sits in 2 MiB page-cache pages: mapped
// at a 2 MiB address, every page touched (all cached already: nothing read
// in), and smaps asked.
uint64_t huge_page_cache(const std::string &path)
{
	int fd = open(path.c_str(), O_RDONLY);
	REQUIRE(fd >= 0);
	struct stat st;
	REQUIRE(fstat(fd, &st) == 0);
	size_t len = (size_t)st.st_size & ~(size_t)0x1fffff;
	char *area = (char *)mmap(nullptr, len + 0x200000, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(area != MAP_FAILED);
	char *at = (char *)(((uintptr_t)area + 0x1fffff) & ~(uintptr_t)0x1fffff);
	char *p = (char *)mmap(at, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
	REQUIRE(p == at);
	volatile char sum = 0;
	for (size_t i = 0; i < len; i += 4096)
		sum = sum + p[i];
	uint64_t huge = file_pmd_in(p, len);
	munmap(area, len + 0x200000);
	close(fd);
	return huge;
}

} // namespace

TEST_CASE("the bundled demo: plain on 4 KiB pages, the copy's code huge, the reasons and the verdict", "[measure]")
{
	if (!private_run()) {
		WARN("needs root for a private /run: not run");
		return;
	}
	temp_dir dir("measure-demo");
	run_result r = tool({ "measure", "--json", "--copy", "--runs", "3", "--dir", dir.path, "--",
			      build_path("examples/itlb-demo"), "2000000" });
	INFO(r.err);
	REQUIRE(r.status == 0);
	json_object *o = json_tokener_parse(r.out.c_str());
	REQUIRE(o);
	CHECK(num(o, "rounds") == 3);
	// What each variant's exit showed in its smaps.
	json_object *plain = get(variant(o, "plain"), "check"), *copy = get(variant(o, "copy"), "check");
	REQUIRE(plain);
	REQUIRE(copy);
	CHECK(get(plain, "known"));
	CHECK(num(plain, "code") >= 64ll << 20);
	CHECK(num(plain, "copy") == 0);
	CHECK(num(plain, "page_cache") == 0);
	// The demo's 64 MiB of code, copied but for its unaligned ends; or, when
	// the machine had no free 2 MiB pages for the copy, not timed, with why.
	std::string na = str(variant(o, "copy"), "na");
	if (!na.empty()) {
		WARN("the copy variant was not timed: " << na);
		CHECK(num(copy, "copy") == 0);
		CHECK(na.find("no private copy") != std::string::npos);
	} else {
		CHECK(num(copy, "copy") >= 60ll << 20);
		CHECK(num(get(variant(o, "copy"), "report"), "copied") == num(copy, "copy"));
	}
	CHECK(json_object_array_length(get(variant(o, "defaults"), "runs")) == 3);
	// The counters: counted, or one line saying why not.
	json_object *counters = get(o, "counters");
	if (!json_object_get_boolean(get(counters, "counted"))) {
		std::string why = str(counters, "why");
		WARN("counters: " << why);
		CHECK(why.find("not measured: ") == 0);
		if (access("/sys/bus/event_source/devices/cpu", F_OK) != 0)
			CHECK(why.find("no CPU PMU") != std::string::npos);
	}
	// The calibration: a verdict and the figures it stands on.
	json_object *cal = get(o, "calibration");
	CHECK(str(cal, "verdict") != "");
	CHECK(str(cal, "why").find("ns") != std::string::npos);
	CHECK(json_object_array_length(get(cal, "points")) == 3);
	// The footprint of the demo's random calls: far beyond 64 4 KiB entries.
	json_object *fp = get(o, "footprint");
	REQUIRE(fp);
	CHECK(num(fp, "working_set_max") > 1000);
	json_object_put(o);
	// Nothing left in measure's directory.
	CHECK(entries(dir.path) == 0);
}

TEST_CASE("the text says the verdict with its figures, the counters' reason, the decision or not", "[measure]")
{
	if (!private_run()) {
		WARN("needs root for a private /run: not run");
		return;
	}
	temp_dir dir("measure-text");
	run_result r = tool({ "measure", "--runs", "2", "--dir", dir.path, "--", build_path("examples/itlb-demo"),
			      "1000000" });
	INFO(r.err);
	REQUIRE(r.status == 0);
	WARN(r.out);
	CHECK(r.out.find("\ncalibration: ") != std::string::npos);
	CHECK(r.out.find(" ns a jump on 4 KiB pages") != std::string::npos);
	CHECK(r.out.find("\ncounters: ") != std::string::npos);
	CHECK(r.out.find("\nfootprint (plain, one untimed run): ") != std::string::npos);
	// Two rounds decide nothing, and it says so.
	CHECK(r.out.find("not decided at 2 runs") != std::string::npos);
	CHECK(entries(dir.path) == 0);
}

TEST_CASE("node -e: plain's code on 4 KiB pages, each variant measured", "[measure]")
{
	if (!have_program("node") || sanitized()) {
		WARN("no node, or a sanitizer build: not run");
		return;
	}
	if (!private_run()) {
		WARN("needs root for a private /run: not run");
		return;
	}
	temp_dir dir("measure-node");
	run_result r = tool({ "measure", "--json", "--no-calibrate", "--runs", "2", "--dir", dir.path, "--", "node",
			      "-e", "let s = 0; for (let i = 0; i < 1e6; i++) s += i" });
	INFO(r.err);
	REQUIRE(r.status == 0);
	json_object *o = json_tokener_parse(r.out.c_str());
	REQUIRE(o);
	json_object *plain = get(variant(o, "plain"), "check");
	CHECK(num(plain, "code") > 4ll << 20);
	CHECK(num(plain, "copy") == 0);
	CHECK(num(plain, "page_cache") == 0);
	CHECK(get(variant(o, "defaults"), "time"));
	json_object_put(o);
	CHECK(entries(dir.path) == 0);
}

TEST_CASE("hostile commands: a clear message, a non-zero exit, nothing left behind", "[measure]")
{
	temp_dir dir("measure-hostile");
	auto measure = [&](std::vector<std::string> args) {
		std::vector<std::string> a = { "measure", "--no-calibrate", "--runs", "2", "--dir", dir.path };
		a.insert(a.end(), args.begin(), args.end());
		return tool(a);
	};
	run_result r = measure({ "--", "false" });
	CHECK(r.status == 1);
	CHECK(r.err.find("false failed in a plain run (exit status 1): measure times commands that succeed") !=
	      std::string::npos);
	r = measure({ "--", "sh", "-c", "echo the last words >&2; kill -SEGV $$" });
	CHECK(r.status == 1);
	CHECK(r.err.find("killed by signal 11") != std::string::npos);
	CHECK(r.err.find("its stderr ended: the last words") != std::string::npos);
	// Never ends: killed at the timeout, with what it started.
	r = measure({ "--timeout", "0.5", "--", "sh", "-c", "sleep 987.654 & sleep 987.654" });
	CHECK(r.status == 1);
	CHECK(r.err.find("did not end within 0.5 s (plain run): killed") != std::string::npos);
	usleep(100000);
	CHECK(run_prog({ "pgrep", "-f", "sleep 987.654" }).status == 1);
	// A script is not copied.
	std::string script = dir / "../measure-script.sh";
	write_file(script, "#!/bin/sh\ntrue\n", 0755);
	r = measure({ "--", script });
	CHECK(r.status == 1);
	CHECK(r.err.find("is a script: measure copies ELF programs") != std::string::npos);
	unlink(script.c_str());
	// A set-user-ID program with code worth copying is not copied.
	temp_dir bin("measure-suid");
	std::string suid = bin / "bigtext-suid";
	write_file(suid, read_file(build_path("tests/bigtext-pie")), 04755);
	r = measure({ "--", suid });
	CHECK(r.status == 1);
	CHECK(r.err.find("set-user-ID") != std::string::npos);
	r = measure({ "--", "/no/such/program" });
	CHECK(r.status == 1);
	CHECK(r.err.find("no such program") != std::string::npos);
	CHECK(entries(dir.path) == 0);
}

TEST_CASE("nonsense options are refused with the reason and status 2", "[measure]")
{
	struct {
		std::vector<std::string> args;
		const char *says;
	} cases[] = {
		{ { "measure" }, "no command to measure" },
		{ { "measure", "--runs", "0", "--", "true" }, "--runs: a whole number from 1 to 100" },
		{ { "measure", "--runs", "1.5", "--", "true" }, "--runs: a whole number" },
		{ { "measure", "--runs", "101", "--", "true" }, "--runs" },
		{ { "measure", "--timeout", "-3", "--", "true" }, "--timeout: seconds above 0" },
		{ { "measure", "--timeout", "soon", "--", "true" }, "--timeout" },
		{ { "measure", "--margin", "80", "--", "true" }, "--margin: a percentage from 0 to 50" },
		{ { "measure", "--calibrate", "--no-calibrate", "--", "true" }, "one or the other" },
		{ { "measure", "--frobnicate", "--", "true" }, "unrecognized option" },
		{ { "measure", "--stats", "true" }, "--stats takes no command" },
	};
	for (auto &c : cases) {
		run_result r = tool(c.args);
		INFO(c.args.back() << ": " << r.err);
		CHECK(r.status == 2);
		CHECK(r.err.find(c.says) != std::string::npos);
	}
	// --stats: the bench's interface, and its refusals.
	std::string in = temp_path("stats-in.json");
	write_file(in, "{\"a\":[1.1,1.2,1.15,1.12,1.18,1.11,1.14,1.16,1.13,1.17],"
		       "\"b\":[1,1.1,1.02,1.01,1.05,1.0,1.03,1.06,1.02,1.07]}");
	prog_opts po;
	po.stdin_path = in;
	prog_result s = run_prog({ tool_path(), "measure", "--stats" }, po);
	CHECK(s.status == 0);
	CHECK(s.out.find("\"decision\":\"higher\"") != std::string::npos);
	for (const char *bad : { "", "{}", "{\"a\":[1,2],\"b\":[1]}", "{\"a\":[1,0],\"b\":[1,1]}", "[1,2]",
				 "{\"a\":[1,\"x\"],\"b\":[1,1]}" }) {
		write_file(in, bad);
		s = run_prog({ tool_path(), "measure", "--stats" }, po);
		INFO(bad);
		CHECK(s.status == 1);
		CHECK(s.err.find("--stats: ") != std::string::npos);
	}
}

TEST_CASE("--no-copies puts the files' page cache back as it found it", "[measure]")
{
	if (!private_run()) {
		WARN("needs root for a private /run: not run");
		return;
	}
	// ownlibc: 8 MiB of code on 2 MiB-aligned segments, which the text
	// service warms into 2 MiB page-cache pages for the defaults.
	temp_dir dir("measure-nocopies");
	std::string prog = dir / "ownlibc";
	write_file(prog, read_file(build_path("tests/ownlibc")), 0755);
	small_page_cache(prog);
	REQUIRE(huge_page_cache(prog) == 0);
	run_result r = tool({ "measure", "--json", "--no-copies", "--no-calibrate", "--runs", "2", "--", prog });
	INFO(r.err);
	REQUIRE(r.status == 0);
	json_object *o = json_tokener_parse(r.out.c_str());
	REQUIRE(o);
	json_object *defaults = get(variant(o, "defaults"), "check");
	if (num(defaults, "page_cache") <= 0)
		WARN("the defaults' files were not warmed here: the put-back is not exercised");
	json_object_put(o);
	// As found: small pages, though the defaults ran from 2 MiB ones.
	CHECK(huge_page_cache(prog) == 0);
}

TEST_CASE("--share: the code mapped from measure's own shared cache, and the entry gone after", "[measure]")
{
	if (!private_run()) {
		WARN("needs root for a private /run: not run");
		return;
	}
	temp_dir dir("measure-share");
	run_result r = tool({ "measure", "--json", "--share", "--no-calibrate", "--runs", "2", "--dir", dir.path, "--",
			      build_path("tests/ownlibc") });
	INFO(r.err);
	REQUIRE(r.status == 0);
	json_object *o = json_tokener_parse(r.out.c_str());
	REQUIRE(o);
	json_object *share = variant(o, "share");
	REQUIRE(share);
	CHECK(str(share, "na") == "");
	CHECK(num(get(share, "check"), "shared") == 8ll << 20);
	CHECK(str(get(share, "report"), "cache") == "hit");
	CHECK(num(get(variant(o, "plain"), "check"), "shared") == 0);
	json_object_put(o);
	CHECK(entries(dir.path) == 0);
	// The test's own /run/hugetext/text: measure filled nothing there (its cache was its own).
	CHECK(entries("/run/hugetext/text") <= 0);
}

TEST_CASE("the command keeps the name it was given (clang++ and clang are one file)", "[measure]")
{
	if (sanitized())
		return;
	temp_dir dir("measure-name");
	std::string link = dir / "mysh";
	REQUIRE(symlink("/bin/bash", link.c_str()) == 0);
	// bash -c with no more arguments: $0 is its argv[0].
	run_result r = tool({ "measure", "--no-calibrate", "--runs", "2", "--dir", dir.path, "--", link, "-c",
			      "case $0 in */mysh) exit 0;; *) echo \"argv[0] was $0\" >&2; exit 3;; esac" });
	INFO(r.err);
	CHECK(r.status == 0);
}
