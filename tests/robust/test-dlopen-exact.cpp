// Description: under the preload, dlopen() is glibc's own for every
// caller: $ORIGIN, a constructor's bare name found through its library's
// RUNPATH, a destructor's dlopen(), a constructor's backtrace(),
// RTLD_NOLOAD, RTLD_NODELETE, RTLD_GLOBAL, dlopen(NULL), dlmopen(),
// dlerror() and errno, threads.  Each scenario runs without the preload
// and under it with the default settings, HUGETEXT_MATCH=. and
// HUGETEXT_MODE=off; the output must be the same, and with
// HUGETEXT_MATCH=. the code a constructor loaded is on huge pages when
// the outer dlopen() returns.
//
// In a sanitizer build the ASan runtime's dlopen() interceptor calls
// glibc from its own library, so glibc sees the runtime as the caller
// with and without the preload: both runs have the runtime loaded
// (ld_preload()), the comparison stays fair, and only the checks that
// the program alone resolves $ORIGIN and RUNPATH are left out.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "robust.hpp"

namespace {

std::string main_prog()
{
	return build_path("tests/robust/dl/dlexact-main");
}

bool sanitizer_build()
{
	const char *s = std::getenv("HT_SANITIZER_PRELOAD");
	return s && *s;
}

// The output without the lines only the preload may change ("huge ..."),
// and without @drop (lines whose count depends on thread timing).
std::string observable(const std::string &out, const std::string &drop = "")
{
	std::string v;
	size_t at = 0;
	while (at < out.size()) {
		size_t nl = out.find('\n', at);
		std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
		bool skip = line.compare(0, 5, "huge ") == 0 ||
			    (!drop.empty() && line.compare(0, drop.size(), drop) == 0);
		if (!skip)
			v += line;
		at = nl == std::string::npos ? out.size() : nl + 1;
	}
	return v;
}

struct setting {
	const char *name;
	std::vector<std::string> env;
};

const std::vector<setting> &settings()
{
	static const std::vector<setting> s = {
		{ "default settings", { "HUGETEXT_MATCH", "HUGETEXT_MODE" } },
		{ "HUGETEXT_MATCH=.", { "HUGETEXT_MATCH=.", "HUGETEXT_MODE" } },
		{ "HUGETEXT_MODE=off", { "HUGETEXT_MATCH", "HUGETEXT_MODE=off" } },
	};
	return s;
}

struct runs {
	prog_result plain;
	std::vector<prog_result> moved; // one per setting
};

// Runs the scenario without the preload, then under it in each setting,
// and checks every run against the first.
runs compare(const std::string &scenario, const std::string &drop = "")
{
	runs r;
	prog_opts o;
	// No search may reach the libraries through meson's LD_LIBRARY_PATH.
	o.env = { ld_preload({}), "LD_LIBRARY_PATH" };
	r.plain = run_prog({ main_prog(), scenario }, o);
	INFO("scenario " << scenario << ", without the preload:\n" << r.plain.out << r.plain.err);
	CHECK(r.plain.status == 0);
	for (const setting &s : settings()) {
		prog_opts m;
		m.env = s.env;
		m.env.push_back(ld_preload_hugetext());
		m.env.push_back("LD_LIBRARY_PATH");
		prog_result p = run_prog({ main_prog(), scenario }, m);
		INFO(s.name << ":\n" << p.out << p.err);
		CHECK(p.status == r.plain.status);
		CHECK(observable(p.out, drop) == observable(r.plain.out, drop));
		CHECK(p.err == r.plain.err);
		r.moved.push_back(p);
	}
	return r;
}

// Outside a sanitizer build the program alone must get @want for @key:
// the scenario then tests what it claims to.
void plain_gives(const runs &r, const std::string &key, const std::string &want)
{
	if (sanitizer_build())
		return;
	INFO(r.plain.out);
	CHECK(line_value(r.plain.out, key) == want);
}

} // namespace

TEST_CASE("dlopen(\"$ORIGIN/lib\") finds the library next to the program", "[dlopen][exact]")
{
	runs r = compare("origin");
	plain_gives(r, "origin", "ok");
	plain_gives(r, "origin value", "42");
}

TEST_CASE("a constructor's dlopen() of a bare name finds it through its library's RUNPATH, "
	  "and the code it loaded is on huge pages when the outer dlopen() returns",
	  "[dlopen][exact]")
{
	runs r = compare("ctor");
	plain_gives(r, "outer", "ok");
	plain_gives(r, "constructor runpath", "ok");
	plain_gives(r, "constructor origin", "ok");
	plain_gives(r, "destructor origin", "ok");
	plain_gives(r, "constructor backtrace", "ok");
	if (line_value(r.plain.out, "constructor runpath") != "ok") {
		WARN("huge pages not checked: the program alone cannot load by RUNPATH here (ASan's interceptor)");
		return;
	}
	if (!thp_enabled()) {
		WARN("huge pages not checked: transparent huge pages are disabled");
		return;
	}
	// 6 MiB of code at a 4 KiB-aligned address: at least two whole 2 MiB pages.
	INFO(r.moved[1].out);
	CHECK(std::atol(line_value(r.moved[1].out, "huge inner_kb").c_str()) >= 4096);
}

TEST_CASE("RTLD_NOLOAD fails before the load and finds the same handle after it", "[dlopen][exact]")
{
	runs r = compare("noload");
	plain_gives(r, "noload before", "failed");
	plain_gives(r, "noload after same", "1");
}

TEST_CASE("RTLD_NODELETE keeps the library loaded after dlclose()", "[dlopen][exact]")
{
	runs r = compare("nodelete");
	plain_gives(r, "plain kept", "0");
	plain_gives(r, "nodelete kept", "1");
}

TEST_CASE("RTLD_GLOBAL makes the library's symbols global, RTLD_LOCAL does not", "[dlopen][exact]")
{
	runs r = compare("global");
	plain_gives(r, "local default", "0");
	plain_gives(r, "global default", "1");
}

TEST_CASE("dlopen(NULL) gives the program's handle", "[dlopen][exact]")
{
	runs r = compare("null");
	plain_gives(r, "null same", "1");
	plain_gives(r, "null marker", "7");
}

TEST_CASE("dlmopen(LM_ID_NEWLM) loads into a new namespace", "[dlopen][exact]")
{
	if (sanitizer_build()) {
		// The library links the ASan runtime, which aborts when loaded a
		// second time into a new namespace, with or without the preload.
		WARN("not checked: ASan's runtime cannot be loaded into a second namespace");
		return;
	}
	runs r = compare("dlmopen");
	plain_gives(r, "dlmopen namespace new", "1");
	plain_gives(r, "dlmopen base loaded", "0");
}

TEST_CASE("dlerror() and errno after a failing and after a succeeding dlopen()", "[dlopen][exact]")
{
	runs r = compare("errors");
	plain_gives(r, "missing", "failed");
	plain_gives(r, "missing again dlerror", "(none)");
	plain_gives(r, "success dlerror", "(none)");
}

TEST_CASE("dlopen() and dlclose() from four threads at once, with constructors that dlopen()",
	  "[dlopen][exact][threads]")
{
	// How often the destructor runs depends on how the threads interleave.
	runs r = compare("threads", "destructor ");
	plain_gives(r, "threads failures", "0");
}
