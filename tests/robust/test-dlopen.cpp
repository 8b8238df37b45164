// Description: the preload's dlopen() hook while threads run the program's
// code: the new library is on huge pages when dlopen() returns, and
// everything the program can observe of dlopen() (result, dlerror(),
// errno, which file a bare name finds) is what it is without the preload.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "robust.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	// The hook is an exported dlopen in the preload; without it there is
	// nothing to test yet.
	prog_result r = run_prog({ "nm", "-D", "--defined-only", preload_path() });
	if (r.status == 0 && r.out.find(" T dlopen") == std::string::npos)
		return "the preload has no dlopen() hook yet";
	return nullptr;
}

namespace {

std::string main_prog()
{
	return build_path("tests/robust/dlopen-main");
}

std::string dso()
{
	return build_path("tests/robust/libdsotext.so");
}

// Output lines that only the preload may change.
std::string observable(const std::string &out)
{
	std::string v;
	size_t at = 0;
	while (at < out.size()) {
		size_t nl = out.find('\n', at);
		std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
		if (line.compare(0, 12, "dso_huge_kb ") != 0)
			v += line;
		at = nl == std::string::npos ? out.size() : nl + 1;
	}
	return v;
}

struct pair_run {
	prog_result plain, moved;
	std::vector<report_line> lines;
};

pair_run run_both(const std::vector<std::string> &cmd, std::vector<std::string> env = {})
{
	pair_run p;
	// meson may point LD_LIBRARY_PATH at the build: then no search reaches RUNPATH.
	bool llp = false;
	for (auto &e : env)
		llp |= e.compare(0, 16, "LD_LIBRARY_PATH=") == 0;
	if (!llp)
		env.push_back("LD_LIBRARY_PATH");
	std::string report = temp_path("dlopen.json");
	prog_opts o;
	o.env = env;
	p.plain = run_prog(cmd, o);
	env.push_back(ld_preload_hugetext());
	env.push_back("HUGETEXT_REPORT=" + report);
	env.push_back("HUGETEXT_MATCH=libdsotext");
	o.env = env;
	p.moved = run_prog(cmd, o);
	INFO(p.moved.err);
	CHECK(p.plain.status == 0);
	CHECK(p.moved.status == 0);
	CHECK(observable(p.moved.out) == observable(p.plain.out));
	CHECK(p.moved.err == p.plain.err);
	int bad = 0;
	p.lines = read_report_json(report, &bad);
	CHECK(bad == 0);
	unlink(report.c_str());
	return p;
}

bool copy_file(const std::string &from, const std::string &to, bool wrong_class = false)
{
	std::string data = read_file(from);
	if (data.size() < 64)
		return false;
	if (wrong_class)
		data[4] = 1; // EI_CLASS = ELFCLASS32: what a 32-bit build of the library looks like
	std::ofstream f(to, std::ios::binary);
	f << data;
	f.close();
	return chmod(to.c_str(), 0755) == 0;
}

} // namespace

TEST_CASE("a library dlopen()ed while 4 threads run the program is on huge pages when dlopen returns",
	  "[dlopen][threads]")
{
	pair_run p = run_both({ main_prog(), dso() });
	INFO(p.moved.out);
	CHECK(line_value(p.moved.out, "dlopen") == "ok");
	CHECK(line_value(p.moved.out, "wrong") == "0");
	CHECK(line_value(p.moved.out, "threads ran") == "yes");
	CHECK(line_value(p.plain.out, "dso_huge_kb") == "0");
	// 6 MiB of text at a 4 KiB-aligned address: at least two whole 2 MiB pages.
	CHECK(std::atol(line_value(p.moved.out, "dso_huge_kb").c_str()) >= 4096);
	bool dso_ok = false;
	for (auto l : ok_lines(p.lines))
		dso_ok |= l["object"].find("libdsotext.so") != std::string::npos;
	CHECK(dso_ok);
}

// ASan's dlopen interceptor calls dlopen from its own library, whose empty
// RUNPATH then applies: in a sanitizer build the program alone cannot load
// by RUNPATH, and there is nothing to compare.
static bool runpath_works(const std::string &prog)
{
	prog_opts o;
	o.env = { "LD_LIBRARY_PATH" };
	return line_value(run_prog({ prog, "libdsotext.so" }, o).out, "dlopen") == "ok";
}

TEST_CASE("a bare name found through the program's RUNPATH loads the same library", "[dlopen]")
{
	if (!runpath_works(main_prog())) {
		WARN("not checked: the program alone cannot dlopen by RUNPATH here (ASan's interceptor?)");
		return;
	}
	pair_run p = run_both({ main_prog(), "libdsotext.so" });
	CHECK(line_value(p.moved.out, "dlopen") == "ok");
	CHECK(std::atol(line_value(p.moved.out, "dso_huge_kb").c_str()) >= 4096);
}

TEST_CASE("LD_LIBRARY_PATH still comes before RUNPATH under the preload", "[dlopen]")
{
	std::string dir = temp_path("llp");
	REQUIRE(mkdir(dir.c_str(), 0755) == 0);
	// A different library under the same name: its checksum tells which one loaded.
	REQUIRE(copy_file(build_path("tests/robust/libdsotext-alt.so"), dir + "/libdsotext.so"));
	pair_run p = run_both({ main_prog(), "libdsotext.so" }, { "LD_LIBRARY_PATH=" + dir });
	CHECK(line_value(p.moved.out, "dlopen") == "ok");
	CHECK(line_value(p.moved.out, "dso sum") == line_value(p.plain.out, "dso sum"));
	REQUIRE(system(("rm -rf '" + dir + "'").c_str()) == 0);
}

TEST_CASE("an incompatible library earlier in RUNPATH is skipped, as the loader skips it", "[dlopen]")
{
	// The loader passes over a file of the wrong ELF class (a 32-bit build
	// in a multilib tree) and goes on searching; a hook that resolves the
	// name itself must not stop at it.
	std::string dir = temp_path("multilib");
	REQUIRE(mkdir(dir.c_str(), 0755) == 0);
	REQUIRE(mkdir((dir + "/ht-bad").c_str(), 0755) == 0);
	REQUIRE(mkdir((dir + "/ht-good").c_str(), 0755) == 0);
	REQUIRE(copy_file(main_prog(), dir + "/dlopen-main"));
	REQUIRE(copy_file(dso(), dir + "/ht-bad/libdsotext.so", true));
	REQUIRE(copy_file(dso(), dir + "/ht-good/libdsotext.so"));
	if (!runpath_works(dir + "/dlopen-main")) {
		WARN("not checked: the program alone cannot dlopen by RUNPATH here (ASan's interceptor?)");
		REQUIRE(system(("rm -rf '" + dir + "'").c_str()) == 0);
		return;
	}
	pair_run p = run_both({ dir + "/dlopen-main", "libdsotext.so" });
	INFO("without the preload: " << p.plain.out << "with it: " << p.moved.out);
	CHECK(line_value(p.plain.out, "dlopen") == "ok");
	CHECK(line_value(p.moved.out, "dlopen") == "ok");
	REQUIRE(system(("rm -rf '" + dir + "'").c_str()) == 0);
}

TEST_CASE("dlopen() under the preload with mode off or no match changes nothing", "[dlopen]")
{
	for (std::string extra : { "HUGETEXT_MODE=off", "HUGETEXT_MATCH=no-such-library" }) {
		INFO(extra);
		prog_result plain = run_prog({ main_prog(), dso() });
		prog_opts o;
		o.env = { ld_preload_hugetext(), extra, "LD_LIBRARY_PATH" };
		prog_result r = run_prog({ main_prog(), dso() }, o);
		CHECK(r.status == 0);
		CHECK(r.out == plain.out);
		CHECK(r.err.empty());
	}
}
