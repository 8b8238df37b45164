// Description: the preload when the system is set against it: THP set to
// never (or always), an empty or too small hugetlb pool, a hugetlb cgroup
// limit as Kubernetes sets for every pod, explicit pages met twice.  These
// tests change system settings, so meson runs them alone, and every
// setting is put back by a guard, even when a test fails or is killed.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "robust.hpp"

extern "C" {
#include "hugetext.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (!is_root())
		return "needs root to change system settings";
	if (!file_exists("/sys/kernel/mm/transparent_hugepage/enabled"))
		return "no transparent huge pages in this kernel";
	return nullptr;
}

namespace {

const std::string thp_enabled_path = "/sys/kernel/mm/transparent_hugepage/enabled";
const std::string nr_hugepages_path = "/proc/sys/vm/nr_hugepages";

std::string pie()
{
	return build_path("tests/bigtext-pie");
}

// bigtext-pie's text: 40 MiB, so 20 pages and a little more.
const long pie_pages = 22;

struct checked {
	prog_result run;
	std::vector<report_line> lines;
};

// Runs @cmd (after @prefix, which runs without the preload) plainly and
// with the preload and @vars; checks that the program cannot tell.
checked run_checked(const std::vector<std::string> &vars, const std::vector<std::string> &prefix = {},
		    const std::vector<std::string> &cmd = { pie() })
{
	std::string report = temp_path("system.json");
	std::vector<std::string> plain_argv = prefix, argv = prefix;
	plain_argv.insert(plain_argv.end(), cmd.begin(), cmd.end());
	argv.push_back("env");
	argv.push_back(ld_preload_hugetext());
	argv.push_back("HUGETEXT_REPORT=" + report);
	argv.insert(argv.end(), vars.begin(), vars.end());
	argv.insert(argv.end(), cmd.begin(), cmd.end());

	prog_result plain = run_prog(plain_argv);
	REQUIRE(plain.status == 0);
	checked c;
	prog_opts o;
	o.timeout_s = 30;
	c.run = run_prog(argv, o);
	INFO(c.run.err);
	CHECK(c.run.status == 0);
	CHECK(c.run.out == plain.out);
	CHECK(c.run.err == plain.err);
	int bad = 0;
	c.lines = read_report_json(report, &bad);
	CHECK(bad == 0);
	unlink(report.c_str());
	return c;
}

// Every line says what happened: ok with huge pages, or why not.
void check_consistent(const std::vector<report_line> &lines)
{
	for (auto l : lines) {
		INFO(l["object"] << ": " << l["status"] << " " << l["error"]);
		if (l["status"] == "ok")
			CHECK(l["huge_bytes"] != "0");
		else
			CHECK(l["error"] != "");
	}
}

std::string main_status(const std::vector<report_line> &lines, std::string *mode = nullptr,
			std::string *error = nullptr)
{
	for (auto l : lines) {
		if (l["object"].find("bigtext") == std::string::npos)
			continue;
		if (mode)
			*mode = l["mode"];
		if (error)
			*error = l["error"];
		return l["status"];
	}
	return "";
}

} // namespace

TEST_CASE("THP set to never: the program runs the same and the report says what happened", "[system][thp]")
{
	setting_guard thp(thp_enabled_path);
	REQUIRE(thp.set("never") == "");
	CHECK(ht_thp_available() == 0);
	// "never" is the admin's veto (MADV_COLLAPSE would make huge pages
	// regardless): no THP copy; auto takes explicit pages if the pool has room.
	for (const char *mode : { "thp", "auto" }) {
		INFO("HUGETEXT_MODE=" << mode);
		auto c = run_checked({ std::string("HUGETEXT_MODE=") + mode, "HUGETEXT_PAGE_CACHE=0" });
		REQUIRE(c.lines.size() >= 1);
		check_consistent(c.lines);
		std::string how, error;
		std::string status = main_status(c.lines, &how, &error);
		if (std::string(mode) == "auto" && status == "ok") {
			CHECK(how == "explicit");
		} else {
			CHECK(status == "failed");
			CHECK(error == ht_error_str(HT_E_THP_OFF));
		}
	}
}

TEST_CASE("THP set to always: the program runs the same", "[system][thp]")
{
	setting_guard thp(thp_enabled_path);
	REQUIRE(thp.set("always") == "");
	auto c = run_checked({ "HUGETEXT_MODE=thp" });
	check_consistent(c.lines);
	CHECK(main_status(c.lines) == "ok");
}

TEST_CASE("an empty hugetlb pool: explicit mode fails cleanly and auto mode uses THP", "[system][pool]")
{
	if (!thp_enabled()) {
		WARN("not checked: THP is off");
		return;
	}
	setting_guard pool(nr_hugepages_path);
	REQUIRE(pool.set("0") == "");
	std::string mode, error;
	auto c = run_checked({ "HUGETEXT_MODE=explicit" });
	CHECK(main_status(c.lines, &mode, &error) == "failed");
	CHECK(error == ht_error_str(HT_E_POOL));
	c = run_checked({ "HUGETEXT_MODE=auto" });
	CHECK(main_status(c.lines, &mode) == "ok");
	CHECK(mode == "thp");
	c = run_checked({ "IODLR_USE_EXPLICIT_HP=1" });
	CHECK(main_status(c.lines) == "failed");
}

TEST_CASE("a hugetlb pool too small for the text: explicit fails cleanly, auto uses THP", "[system][pool]")
{
	if (!thp_enabled()) {
		WARN("not checked: THP is off");
		return;
	}
	setting_guard pool(nr_hugepages_path);
	long busy = std::atol(pool.saved().c_str()) - pool_free_2m();
	REQUIRE(pool.set(std::to_string((busy > 0 ? busy : 0) + 3)) == "");
	std::string mode, error;
	auto c = run_checked({ "HUGETEXT_MODE=explicit" });
	CHECK(main_status(c.lines, &mode, &error) == "failed");
	CHECK(error == ht_error_str(HT_E_POOL));
	c = run_checked({ "HUGETEXT_MODE=auto" });
	CHECK(main_status(c.lines, &mode) == "ok");
	CHECK(mode == "thp");
}

TEST_CASE("explicit pages: the API called twice leaves the moved code alone", "[system][pool][api]")
{
	std::unique_ptr<setting_guard> guard;
	std::string why = ensure_pool(pie_pages, guard);
	if (!why.empty()) {
		WARN("not checked: " << why);
		return;
	}
	const std::string already = "[skipped " + std::string(ht_error_str(HT_E_ALREADY)) + "]";
	for (const char *prog : { "tests/robust/api-main", "tests/robust/api-main-aligned" }) {
		INFO(prog);
		prog_opts o;
		o.env = { "HUGETEXT_MODE=explicit" };
		prog_result r = run_prog({ build_path(prog) }, o);
		INFO(r.out << r.err);
		CHECK(r.status == 0);
		CHECK(line_value(r.out, "remap1") == "rc=0 [ok no error]");
		// The code now sits on hugetlb memory ("/anon_hugepage (deleted)" in
		// the maps, with an inode): a second call must see it as moved.
		CHECK(line_value(r.out, "remap2") == "rc=0 " + already);
		CHECK(line_value(r.out, "iodlr1") == "map_ok");
		CHECK(line_value(r.out, "iodlr2") == "map_ok");
		// Under the preload, the program's own first call finds it moved.
		o.env.push_back(ld_preload_hugetext());
		r = run_prog({ build_path(prog) }, o);
		CHECK(r.status == 0);
		CHECK(line_value(r.out, "remap1") == "rc=0 " + already);
	}
}

namespace {

// A cgroup v2 directory with the hugetlb controller, removed at the end.
struct hugetlb_cgroup {
	std::string dir, why;
	std::unique_ptr<setting_guard> control;

	hugetlb_cgroup()
	{
		std::string root = cgroup2_root();
		if (root.empty()) {
			why = "no cgroup v2 hierarchy with the hugetlb controller";
			return;
		}
		std::string sub = read_file(root + "/cgroup.subtree_control");
		if (sub.find("hugetlb") == std::string::npos) {
			control.reset(new setting_guard(root + "/cgroup.subtree_control", "-hugetlb"));
			why = control->set("+hugetlb");
			if (!why.empty())
				return;
		}
		dir = root + "/hugetext-robust-" + std::to_string(getpid());
		if (mkdir(dir.c_str(), 0755) != 0) {
			why = "cannot create " + dir;
			dir.clear();
		}
	}
	~hugetlb_cgroup()
	{
		if (!dir.empty())
			rmdir(dir.c_str());
	}

	static std::string cgroup2_root()
	{
		std::istringstream in(read_file("/proc/self/mounts"));
		std::string dev, mnt, type;
		while (in >> dev >> mnt >> type) {
			std::string rest;
			std::getline(in, rest);
			if (type == "cgroup2" &&
			    read_file(mnt + "/cgroup.controllers").find("hugetlb") != std::string::npos)
				return mnt;
		}
		return "";
	}

	// Runs the rest of the command line inside the cgroup.
	std::vector<std::string> prefix() const
	{
		return { "sh", "-c", "echo $$ > " + dir + "/cgroup.procs && exec \"$@\"", "sh" };
	}
};

} // namespace

TEST_CASE("a hugetlb cgroup reservation limit makes explicit pages fail cleanly", "[system][pool][cgroup]")
{
	std::unique_ptr<setting_guard> guard;
	std::string why = ensure_pool(pie_pages, guard);
	hugetlb_cgroup cg;
	if (why.empty())
		why = cg.why;
	if (!why.empty()) {
		WARN("not checked: " << why);
		return;
	}
	REQUIRE(write_setting(cg.dir + "/hugetlb.2MB.rsvd.max", "0") == "");
	std::string mode;
	auto c = run_checked({ "HUGETEXT_MODE=auto" }, cg.prefix());
	CHECK(main_status(c.lines, &mode) == "ok");
	CHECK(mode == "thp");
}

TEST_CASE("a hugetlb cgroup fault limit (a Kubernetes pod without hugepages) does not kill the program",
	  "[system][pool][cgroup]")
{
	std::unique_ptr<setting_guard> guard;
	std::string why = ensure_pool(pie_pages, guard);
	hugetlb_cgroup cg;
	if (why.empty())
		why = cg.why;
	if (!why.empty()) {
		WARN("not checked: " << why);
		return;
	}
	// The pool has room, the mmap reserves from it, but the first touch of
	// a page is charged to the cgroup: over the limit, that is SIGBUS.
	REQUIRE(write_setting(cg.dir + "/hugetlb.2MB.max", "0") == "");
	for (const char *mode : { "auto", "explicit" }) {
		INFO("HUGETEXT_MODE=" << mode);
		auto c = run_checked({ std::string("HUGETEXT_MODE=") + mode }, cg.prefix());
		CHECK(c.run.status != 128 + SIGBUS);
		check_consistent(c.lines);
	}
}

namespace {

// A memory cgroup (v2, else v1), removed at the end.
struct memory_cgroup {
	std::string dir, limit_file, why;
	std::unique_ptr<setting_guard> control;

	memory_cgroup()
	{
		std::istringstream in(read_file("/proc/self/mounts"));
		std::string dev, mnt, type, opts, v1;
		std::string v2;
		while (in >> dev >> mnt >> type >> opts) {
			std::string rest;
			std::getline(in, rest);
			if (type == "cgroup2" &&
			    read_file(mnt + "/cgroup.controllers").find("memory") != std::string::npos)
				v2 = mnt;
			if (type == "cgroup" && (opts.find(",memory") != std::string::npos ||
						 opts.compare(0, 7, "memory,") == 0 || opts == "memory"))
				v1 = mnt;
		}
		std::string root = !v2.empty() ? v2 : v1;
		if (root.empty()) {
			why = "no memory cgroup controller";
			return;
		}
		if (!v2.empty() && read_file(v2 + "/cgroup.subtree_control").find("memory") == std::string::npos) {
			control.reset(new setting_guard(v2 + "/cgroup.subtree_control", "-memory"));
			why = control->set("+memory");
			if (!why.empty())
				return;
		}
		dir = root + "/hugetext-robust-mem-" + std::to_string(getpid());
		limit_file = dir + (!v2.empty() ? "/memory.max" : "/memory.limit_in_bytes");
		if (mkdir(dir.c_str(), 0755) != 0) {
			why = "cannot create " + dir;
			dir.clear();
		}
	}
	~memory_cgroup()
	{
		if (!dir.empty())
			rmdir(dir.c_str());
	}
	std::vector<std::string> prefix() const
	{
		return { "sh", "-c", "echo $$ > " + dir + "/cgroup.procs && exec \"$@\"", "sh" };
	}
};

} // namespace

TEST_CASE("a memory cgroup with less room than the copy needs does not get the program killed",
	  "[system][cgroup][memory]")
{
	if (!thp_enabled()) {
		WARN("not checked: THP is off");
		return;
	}
	memory_cgroup cg;
	if (!cg.why.empty()) {
		WARN("not checked: " << cg.why);
		return;
	}
	// The program needs a few MiB; the copy of its 38 MiB of text does not fit.
	REQUIRE(write_setting(cg.limit_file, std::to_string(24 << 20)) == "");
	prog_result alone = run_prog({ "sh", "-c", "echo $$ > " + cg.dir + "/cgroup.procs && exec \"$@\"", "sh", pie() });
	if (alone.status != 0) {
		WARN("not checked: the program alone does not fit in 24 MiB");
		return;
	}
	auto c = run_checked({ "HUGETEXT_MODE=thp" }, cg.prefix());
	CHECK(c.run.status != 128 + SIGKILL);
	check_consistent(c.lines);
}
