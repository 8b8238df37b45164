// Description: `hugetext check --symbols` names, demangled, the functions
// that fall outside the coverable span, and only those.
#include <catch2/catch.hpp>

#include "tooltest.hpp"

namespace {

std::string prog()
{
	return build_path("tests/tools/tools-symbols-prog");
}

} // namespace

TEST_CASE("functions before and after the span are listed with demangled names; the one inside is not",
	  "[symbols]")
{
	run_result r = tool({ "check", "--symbols", prog() });
	REQUIRE(r.status == 0);
	CHECK(r.out.find("outside the coverable span [0x600000, ") != std::string::npos);
	CHECK(r.out.find("from .symtab:") != std::string::npos);
	CHECK(r.out.find("  head_ns::head_function(int)\n") != std::string::npos);
	CHECK(r.out.find("  tail_ns::Tail<int>::twice(int) const\n") != std::string::npos);
	CHECK(r.out.find("  main\n") != std::string::npos);
	CHECK(r.out.find("mid_function") == std::string::npos);
	CHECK(r.out.find("_ZN") == std::string::npos);
}

TEST_CASE("in JSON, each region lists its outside functions, all outside its span", "[symbols]")
{
	run_result r = tool({ "check", "--json", "--symbols", prog() });
	REQUIRE(r.status == 0);
	auto regions = json_regions(r.out);
	REQUIRE(regions.size() == 1);
	std::string list = regions[0]["outside_functions"];
	uint64_t lo = std::stoull(regions[0]["span_start"]), hi = std::stoull(regions[0]["span_end"]);
	CHECK(list.find("{\"name\": \"head_ns::head_function(int)\", \"address\": ") != std::string::npos);
	CHECK(list.find("tail_ns::Tail<int>::twice(int) const") != std::string::npos);
	CHECK(list.find("mid_function") == std::string::npos);
	size_t count = 0;
	for (size_t at = 0; (at = list.find("\"address\": ", at)) != std::string::npos; count++) {
		at += 11;
		uint64_t a = std::stoull(list.substr(at));
		CHECK((a < lo || a >= hi));
	}
	CHECK(count >= 3);
}

TEST_CASE("a stripped program falls back to .dynsym; a file without symbols is refused", "[symbols]")
{
	run_result r = tool({ "check", "--symbols", build_path("tests/bigtext-stripped") });
	CHECK(r.status == 0);
	CHECK(r.out.find("from .dynsym:") != std::string::npos);

	temp_dir d("symbols-none");
	gen_elf g;
	g.segs = { { 1, 5, 0x1000, 0x401000, 0x100, 0x100, 0x1000 } };
	write_file(d / "bare", make_elf(g));
	r = tool({ "check", "--symbols", d / "bare" });
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext check: " + d / "bare" + ": no symbol table (stripped?): --symbols needs .symtab or .dynsym\n");
}
