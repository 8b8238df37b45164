// Description: no memory is spent on tails: a library linked with 2 MiB
// segments and a few KiB of code (as libXdmcp) gets no huge page, under
// every setting, and no region spends more than twice its code; with
// HUGETEXT_COVER_ENDS=1 the code's partial end pages move with the
// read-only bytes that share them, which stay the same bytes.
#include <catch2/catch.hpp>

#include <string>

#include "helpers.hpp"

extern "C" {
#include "hugetext.h"
}

static const std::string prog() { return build_path("tests/tails-main"); }
static const std::string lib() { return build_path("tests/libtinytext.so"); }

static prog_result run(const std::vector<std::string> &env)
{
	prog_opts o;
	o.env = env;
	prog_result r = run_prog({ prog() }, o);
	INFO(r.out << r.err);
	CHECK(r.status == 0);
	CHECK(r.err.empty());
	// Counted by the program itself, from its smaps.
	CHECK(line_value(r.out, "tiny_huge_kb") == "0");
	return r;
}

static size_t value(report_line &l, const char *key)
{
	return l.count(key) ? std::stoul(l[key]) : 0;
}

// Every region spends at most twice its code in private huge pages.
static void check_spending(std::vector<report_line> &lines)
{
	for (auto &l : lines) {
		INFO(l["object"]);
		CHECK(value(l, "private_huge_bytes") <= 2 * value(l, "private_code_bytes"));
		if (l["status"] == "ok" && l["cache"].empty())
			CHECK(value(l, "private_code_bytes") > 0);
	}
}

static std::vector<report_line> run_preload(const std::vector<std::string> &settings,
					    const prog_result &plain)
{
	std::string report = temp_path("tails.json");
	std::vector<std::string> env = { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"),
					 "HUGETEXT_REPORT=" + report };
	env.insert(env.end(), settings.begin(), settings.end());
	prog_result r = run(env);
	CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
	auto lines = read_report(report);
	check_spending(lines);
	return lines;
}

TEST_CASE("a 2 MiB-aligned library with a few KiB of code is skipped with a reason", "[tails]")
{
	prog_result plain = run({});
	small_page_cache(prog());
	small_page_cache(lib());

	// Not named: left alone, as before.
	for (auto &l : run_preload({}, plain))
		CHECK(l["object"] != lib());

	// Named: below the preload's minimum of code (4 MiB by default).
	for (auto &l : run_preload({ "HUGETEXT_MATCH=." }, plain))
		if (l["object"] == lib())
			CHECK(l["error"] == ht_error_str(HT_E_BELOW_MIN));

	// Named, with no minimum: skipped by the tails rule, saying why; the
	// program's own code still moves.
	auto lines = run_preload({ "HUGETEXT_MATCH=.", "HUGETEXT_MIN_CODE=0" }, plain);
	int tiny = 0, mine = 0;
	for (auto &l : lines) {
		if (l["object"] == lib()) {
			tiny++;
			CHECK(l["status"] == "skipped");
			CHECK(l["error"] == "no aligned 2 MiB page at least half full of code");
			CHECK(value(l, "huge_bytes") == 0);
			CHECK(value(l, "private_huge_bytes") == 0);
		} else if (l["object"] == prog() && l["status"] == "ok") {
			mine++;
			CHECK(value(l, "private_huge_bytes") > 0);
			CHECK(value(l, "private_code_bytes") >= value(l, "private_huge_bytes") / 2);
		}
	}
	CHECK(tiny == 1);
	if (thp_enabled())
		CHECK(mine == 1);
}

TEST_CASE("with HUGETEXT_MODE=off the library is untouched too", "[tails]")
{
	prog_result plain = run({});
	CHECK(run_preload({ "HUGETEXT_MODE=off", "HUGETEXT_MATCH=." }, plain).empty());
}

// --- HUGETEXT_COVER_ENDS: the end pages with their read-only neighbours ---

static const std::string ends_prog() { return build_path("tests/ends-main"); }

static std::vector<report_line> run_ends(const std::vector<std::string> &settings, prog_result &r)
{
	std::string report = temp_path("ends.json");
	prog_opts o;
	o.env = { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"), "HUGETEXT_REPORT=" + report,
		  "HUGETEXT_COPY=now", "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_SHARE=0" };
	o.env.insert(o.env.end(), settings.begin(), settings.end());
	r = run_prog({ ends_prog() }, o);
	INFO(r.out << r.err);
	CHECK(r.status == 0);
	CHECK(r.err.empty());
	return read_report(report);
}

TEST_CASE("cover-ends moves all the code with its headers and .rodata, byte for byte", "[tails][ends]")
{
	prog_result plain = run_prog({ ends_prog() }, prog_opts());
	REQUIRE(plain.status == 0);
	REQUIRE(line_value(plain.out, "same") == "1");
	CHECK(line_value(plain.out, "rodata_perms") == "r--p");
	if (!thp_enabled()) {
		WARN("transparent huge pages are off: only the bytes are checked");
	}
	const size_t code = std::stoul(line_value(plain.out, "code_bytes"));
	// The fixture's layout: 0x400000 (headers), code from 0x401000, .rodata after it.
	REQUIRE(code > 5u << 20);

	prog_result def, on;
	auto lines_def = run_ends({}, def);
	auto lines_on = run_ends({ "HUGETEXT_COVER_ENDS=1" }, on);
	for (auto *r : { &def, &on }) {
		CHECK(line_value(r->out, "sum") == line_value(plain.out, "sum"));
		CHECK(line_value(r->out, "same") == "1");
		CHECK(line_value(r->out, "compared") == line_value(plain.out, "compared"));
		CHECK(line_value(r->out, "data") == "8");
	}
	// Without the setting: the one whole page inside the code; .rodata untouched.
	CHECK(line_value(def.out, "rodata_perms") == "r--p");
	REQUIRE(lines_def.size() == 1);
	CHECK(lines_def[0]["start"] == std::to_string(0x600000));
	CHECK(lines_def[0]["end"] == std::to_string(0x800000));

	// With it: from the headers' page to the page .rodata begins in.
	REQUIRE(lines_on.size() == 1);
	auto &l = lines_on[0];
	CHECK(l["object"] == ends_prog());
	CHECK(l["start"] == std::to_string(0x400000));
	CHECK(l["end"] == std::to_string(0xa00000));
	CHECK(l["bytes"] == std::to_string(0x600000));
	if (!thp_enabled())
		return;
	CHECK(l["status"] == "ok");
	CHECK(value(l, "huge_bytes") == 0x600000);
	// The code alone, not the read-only bytes beside it.
	CHECK(value(l, "private_code_bytes") == code);
	CHECK(value(l, "private_huge_bytes") <= 2 * value(l, "private_code_bytes"));
	// Counted by the program: its code's mapping is huge, .rodata's first page executable.
	CHECK(line_value(on.out, "code_huge_kb") == std::to_string(0x600000 / 1024));
	CHECK(line_value(on.out, "rodata_perms") == "r-xp");
}

TEST_CASE("HUGETEXT_COVER_ENDS=0 leaves the read-only neighbours alone", "[tails][ends]")
{
	prog_result r;
	auto lines = run_ends({ "HUGETEXT_COVER_ENDS=0" }, r);
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["start"] == std::to_string(0x600000));
	CHECK(line_value(r.out, "rodata_perms") == "r--p");
	CHECK(line_value(r.out, "same") == "1");
}
