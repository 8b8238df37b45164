// Description: `meson install` into a temporary DESTDIR provides the
// libraries, headers, preload, command, man pages and hugetext.pc; a
// consumer builds with pkg-config and runs; the installed command finds the
// installed preload.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include "tooltest.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (!have_program("pkg-config"))
		return "pkg-config is not installed";
	if (!std::getenv("HT_MESON") || !std::getenv("HT_CC"))
		return "HT_MESON and HT_CC are not set (run through meson test)";
	return nullptr;
}

namespace {

// Every file and symbolic link under @dir, relative to it.
std::vector<std::string> tree(const std::string &dir)
{
	run_result r = run_cmd({ "sh", "-c", "cd \"$0\" && find . -type f -o -type l | sort", dir });
	std::vector<std::string> v;
	std::istringstream in(r.out);
	std::string line;
	while (std::getline(in, line))
		v.push_back(line.substr(1));
	return v;
}

std::string find_one(const std::vector<std::string> &files, const std::string &suffix)
{
	for (auto &f : files)
		if (f.size() >= suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
			return f;
	return "";
}

std::string dirname_of(const std::string &p)
{
	return p.substr(0, p.rfind('/'));
}

} // namespace

TEST_CASE("an install builds a pkg-config consumer that runs, and the command finds its preload", "[install]")
{
	temp_dir d("install");
	run_result r = run_cmd({ std::getenv("HT_MESON"), "install", "-C", build_path(""), "--destdir", d.path,
				 "--no-rebuild", "--quiet" });
	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	std::vector<std::string> files = tree(d.path);

	std::string pc = find_one(files, "/pkgconfig/hugetext.pc");
	std::string lib = find_one(files, "/libhugetext.so");
	std::string preload = find_one(files, "/libhugetext-preload.so");
	std::string bin = find_one(files, "/bin/hugetext");
	REQUIRE(!pc.empty());
	REQUIRE(!lib.empty());
	REQUIRE(!preload.empty());
	REQUIRE(!bin.empty());
	CHECK(!find_one(files, "/include/hugetext.h").empty());
	CHECK(!find_one(files, "/include/large_page.h").empty());
	for (const char *page : { "/man1/hugetext.1", "/man3/hugetext.3", "/man3/large_page.3", "/man7/hugetext.7" }) {
		INFO(page);
		CHECK(!find_one(files, page).empty());
	}

	{
		// A consumer builds through pkg-config and runs with the installed library.
		std::vector<std::string> pc_env = { "PKG_CONFIG_PATH=" + d.path + dirname_of(pc),
						    "PKG_CONFIG_SYSROOT_DIR=" + d.path };
		run_result flags = run_cmd({ "pkg-config", "--cflags", "--libs", "hugetext" }, pc_env);
		REQUIRE(flags.status == 0);
		CHECK(flags.out.find("-I" + d.path + "/") != std::string::npos);
		CHECK(flags.out.find("-lhugetext") != std::string::npos);
		std::string exe = d / "api-startup";
		std::string flag_text = flags.out.substr(0, flags.out.find('\n'));
		r = run_cmd({ "sh", "-c", "exec \"$0\" \"$1\" -o \"$2\" $3", std::getenv("HT_CC"),
			      source_path("examples/api-startup.c"), exe, flag_text });
		INFO(r.err);
		REQUIRE(r.status == 0);
		r = run_cmd({ exe }, { "LD_LIBRARY_PATH=" + d.path + dirname_of(lib), "LD_PRELOAD" });
		INFO(r.err);
		CHECK(r.status == 0);
		CHECK((r.out.find("MapStaticCodeToLargePages: ") == 0 ||
		       r.out.find("transparent huge pages are off") == 0));
		// The library it ran with is the installed one.
		r = run_cmd({ "sh", "-c", "ldd \"$0\"", exe }, { "LD_LIBRARY_PATH=" + d.path + dirname_of(lib) });
		CHECK(r.out.find(d.path + dirname_of(lib) + "/libhugetext.so.0") != std::string::npos);
	}
	{
		// The installed command runs programs with the installed preload.
		r = run_cmd({ d.path + bin, "run", "--", "sh", "-c", "printf %s \"$LD_PRELOAD\"" }, { "LD_PRELOAD" });
		CHECK(r.status == 0);
		CHECK(r.out == real_path(d.path + preload));
		CHECK(run_cmd({ d.path + bin, "--version" }).out == std::string("hugetext ") + HT_VERSION_STRING + "\n");
	}
}
