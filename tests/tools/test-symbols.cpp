// Description: `hugetext check --symbols` names, demangled, the functions
// that fall outside the coverable span, and only those.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "tooltest.hpp"

extern "C" {
#include "symbols.h"
}

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

TEST_CASE("a name whose back-references would demangle into gigabytes keeps its mangled form", "[symbols]")
{
	char *d = hte_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	REQUIRE(d);
	CHECK(std::string(d) == "std::vector<int, std::allocator<int> >::push_back(int const&)");
	std::free(d);
	// std::pair nested in itself 26 times, each level naming the one before
	// twice: 327 bytes, and a demangled name of gigabytes.
	std::string bomb = "_Z1fSt4pairIiiE";
	for (char id : std::string("0123456789ABCDEFGHIJKLMNOP"))
		bomb += std::string("NS_IS") + id + "_S" + id + "_EE";
	CHECK(hte_demangle(bomb.c_str()) == nullptr);
	// Ten levels demangle as before (some kilobytes).
	std::string small = "_Z1fSt4pairIiiE";
	for (char id : std::string("012345678"))
		small += std::string("NS_IS") + id + "_S" + id + "_EE";
	d = hte_demangle(small.c_str());
	CHECK(d);
	CHECK((d ? std::string(d) : "").rfind("f(std::pair<int, int>, ", 0) == 0);
	std::free(d);
}
