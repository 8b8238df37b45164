// Description: shared libraries: moved when named, when big enough (min_code)
// unless a pattern names the libraries, when marked with PF_LINUX_HUGETLB,
// and when loaded later with dlopen; left alone otherwise; every executable
// segment; invalid patterns; iodlr's MapDSOToLargePages.
#include <catch2/catch.hpp>

#include <string>

#include "helpers.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

static const std::string preload() { return build_path("lib/libhugetext-preload.so"); }

static unsigned long value(const std::string &out, const std::string &key)
{
	auto at = out.find(key + " ");
	return at == std::string::npos ? ~0ul : std::stoul(out.substr(at + key.size() + 1));
}

static std::string sum_line(const std::string &out)
{
	auto at = out.find("sum ");
	return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

static std::vector<report_line> lines_for(const std::vector<report_line> &all, const std::string &obj)
{
	std::vector<report_line> out;
	for (auto &l : all)
		if (l.at("object").find(obj) != std::string::npos)
			out.push_back(l);
	return out;
}

struct outcome {
	run_result r;
	std::vector<report_line> report;
};

static outcome run_with(const std::vector<std::string> &argv, std::vector<std::string> env)
{
	outcome o;
	std::string report = temp_path("libs.json");
	env.push_back("LD_PRELOAD=" + preload());
	env.push_back("HUGETEXT_REPORT=" + report);
	env.push_back("HUGETEXT_MODE=thp");
	o.r = run_cmd(argv, env);
	o.report = read_report(report);
	return o;
}

TEST_CASE("a named library has both its executable segments moved", "[libraries]")
{
	run_result plain = run_cmd({ build_path("tests/dso-linked") });
	outcome o = run_with({ build_path("tests/dso-linked") }, { "HUGETEXT_MATCH=libbigtext" });

	INFO(o.r.err);
	REQUIRE(o.r.status == 0);
	CHECK(o.r.err.empty());
	CHECK(sum_line(o.r.out) == sum_line(plain.out));
	CHECK(sum_line(o.r.out) != "");
	auto lib = ok_lines(lines_for(o.report, "libbigtext"));
	REQUIRE(lib.size() == 2);
	for (auto &l : lib)
		CHECK(l["huge_bytes"] == l["bytes"]);
	CHECK(value(o.r.out, "text_huge_kb") >= 20ul << 10);
	CHECK(value(o.r.out, "two_huge_kb") >= 14ul << 10);
	CHECK(value(plain.out, "text_huge_kb") == 0);
}

// libbigtext has 40 MiB of code in two segments: above the preload's min_code (4 MiB).
TEST_CASE("a big library is moved by default, without being named", "[libraries][big]")
{
	outcome o = run_with({ build_path("tests/dso-linked") }, {});

	INFO(o.r.out << o.r.err);
	REQUIRE(o.r.status == 0);
	auto lib = ok_lines(lines_for(o.report, "libbigtext"));
	CHECK(lib.size() == 2);
	CHECK(value(o.r.out, "text_huge_kb") >= 20ul << 10);
	CHECK(value(o.r.out, "two_huge_kb") >= 14ul << 10);
}

TEST_CASE("a library with less code than min_code is left alone", "[libraries][big]")
{
	outcome o = run_with({ build_path("tests/dso-linked") }, { "HUGETEXT_MIN_CODE=64M" });

	REQUIRE(o.r.status == 0);
	CHECK(lines_for(o.report, "libbigtext").empty());
	CHECK(value(o.r.out, "text_huge_kb") == 0);
	CHECK(value(o.r.out, "two_huge_kb") == 0);
}

TEST_CASE("HUGETEXT_BIG_LIBRARIES=0 leaves a library neither named nor marked alone", "[libraries][big]")
{
	outcome o = run_with({ build_path("tests/dso-linked") }, { "HUGETEXT_BIG_LIBRARIES=0" });

	REQUIRE(o.r.status == 0);
	CHECK(lines_for(o.report, "libbigtext").empty());
	CHECK(value(o.r.out, "text_huge_kb") == 0);
	CHECK(value(o.r.out, "two_huge_kb") == 0);
}

TEST_CASE("a match pattern names the libraries alone, unless big libraries are on", "[libraries][big]")
{
	outcome named_other = run_with({ build_path("tests/dso-linked") }, { "HUGETEXT_MATCH=libnothing" });

	REQUIRE(named_other.r.status == 0);
	CHECK(lines_for(named_other.report, "libbigtext").empty());
	CHECK(value(named_other.r.out, "text_huge_kb") == 0);

	outcome both = run_with({ build_path("tests/dso-linked") },
				{ "HUGETEXT_MATCH=libnothing", "HUGETEXT_BIG_LIBRARIES=1" });

	REQUIRE(both.r.status == 0);
	CHECK(ok_lines(lines_for(both.report, "libbigtext")).size() == 2);
	CHECK(value(both.r.out, "text_huge_kb") >= 20ul << 10);
}

TEST_CASE("a library loaded with dlopen is moved before dlopen returns", "[libraries][dlopen]")
{
	std::string lib = build_path("tests/libbigtext.so");
	run_result plain = run_cmd({ build_path("tests/dso-dlopen"), lib });
	outcome o = run_with({ build_path("tests/dso-dlopen"), lib }, { "HUGETEXT_MATCH=libbigtext" });

	INFO(o.r.out << o.r.err);
	REQUIRE(o.r.status == 0);
	CHECK(o.r.err.empty());
	CHECK(sum_line(o.r.out) == sum_line(plain.out));
	CHECK(value(o.r.out, "text_huge_kb") >= 20ul << 10);
	CHECK(value(o.r.out, "two_huge_kb") >= 14ul << 10);
	CHECK(ok_lines(lines_for(o.report, "libbigtext")).size() == 2);
}

TEST_CASE("a library marked with PF_LINUX_HUGETLB is moved without being named", "[libraries][flag]")
{
	std::string lib = build_path("tests/libbigtext-flagged.so");
	outcome o = run_with({ build_path("tests/dso-dlopen"), lib }, { "HUGETEXT_BIG_LIBRARIES=0" });

	INFO(o.r.out << o.r.err);
	REQUIRE(o.r.status == 0);
	CHECK(value(o.r.out, "text_huge_kb") >= 20ul << 10);
	CHECK(value(o.r.out, "two_huge_kb") >= 14ul << 10);
}

TEST_CASE("a big library loaded with dlopen is moved by default before dlopen returns",
	  "[libraries][dlopen][big]")
{
	outcome o = run_with({ build_path("tests/dso-dlopen"), build_path("tests/libbigtext.so") }, {});

	INFO(o.r.out << o.r.err);
	REQUIRE(o.r.status == 0);
	CHECK(value(o.r.out, "text_huge_kb") >= 20ul << 10);
	CHECK(value(o.r.out, "two_huge_kb") >= 14ul << 10);
	CHECK(ok_lines(lines_for(o.report, "libbigtext")).size() == 2);
}

TEST_CASE("a dlopen'ed library below min_code, or with big libraries off, is left alone",
	  "[libraries][dlopen][big]")
{
	for (const char *setting : { "HUGETEXT_MIN_CODE=64M", "HUGETEXT_BIG_LIBRARIES=0" }) {
		outcome o = run_with({ build_path("tests/dso-dlopen"), build_path("tests/libbigtext.so") },
				     { setting });

		INFO(setting << "\n" << o.r.out << o.r.err);
		REQUIRE(o.r.status == 0);
		CHECK(value(o.r.out, "text_huge_kb") == 0);
		CHECK(lines_for(o.report, "libbigtext").empty());
	}
}

TEST_CASE("a bare library name is still searched from the caller's RUNPATH", "[libraries][dlopen]")
{
	// dso-dlopen-runpath has RUNPATH=$ORIGIN; the library sits beside it.
	outcome o = run_with({ build_path("tests/dso-dlopen-runpath"), "libbigtext.so" },
			     { "HUGETEXT_MATCH=libbigtext" });

	INFO(o.r.out << o.r.err);
	REQUIRE(o.r.status == 0);
	CHECK(value(o.r.out, "text_huge_kb") >= 20ul << 10);
}

TEST_CASE("the ignore pattern leaves matching objects alone, the program too", "[libraries]")
{
	outcome o = run_with({ build_path("tests/dso-linked") },
			     { "HUGETEXT_MATCH=libbigtext", "HUGETEXT_IGNORE=bigtext|dso-linked" });

	REQUIRE(o.r.status == 0);
	CHECK(value(o.r.out, "text_huge_kb") == 0);
	REQUIRE_FALSE(o.report.empty());
	for (auto &l : o.report) {
		CHECK(l["status"] == "skipped");
		CHECK(l["error"] == "matches the ignore pattern");
	}
}

TEST_CASE("an invalid pattern changes nothing and is reported", "[libraries]")
{
	run_result plain = run_cmd({ build_path("tests/dso-linked") });
	outcome o = run_with({ build_path("tests/dso-linked") }, { "HUGETEXT_MATCH=(libbigtext", "HUGETEXT_VERBOSE=1" });

	REQUIRE(o.r.status == 0);
	CHECK(o.r.out == plain.out);
	REQUIRE(o.report.size() == 1);
	CHECK(o.report[0]["status"] == "failed");
	CHECK(o.report[0]["error"] == "invalid regular expression");
	CHECK(o.r.err.find("invalid regular expression") != std::string::npos);
}

TEST_CASE("MapDSOToLargePages moves the first library that matches", "[libraries][iodlr]")
{
	run_result r = run_cmd({ build_path("tests/dso-linked"), "api", "libbigtext" });

	REQUIRE(r.status == 0);
	CHECK(r.out.find("api map_ok") != std::string::npos);
	CHECK(value(r.out, "text_huge_kb") >= 20ul << 10);
	run_result none = run_cmd({ build_path("tests/dso-linked"), "api", "no-such-lib" });
	CHECK(none.out.find("api map_region_not_found") != std::string::npos);
}
