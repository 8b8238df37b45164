// Description: the preload on real big programs installed here: node,
// cc1plus run by g++ and clang++ with libLLVM and libclang-cpp moved (whose
// object files must not change by one byte).
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

static const std::string preload() { return build_path("lib/libhugetext-preload.so"); }

static unsigned long ok_bytes(const std::vector<report_line> &lines, const std::string &obj)
{
	unsigned long total = 0;
	for (auto &l : ok_lines(lines))
		if (l.at("object").find(obj) != std::string::npos)
			total += std::stoul(l.at("huge_bytes"));
	return total;
}

// The executable segments of at least 2 MiB in @path and their bytes, from its headers.
static std::pair<int, unsigned long> code_segments(const std::string &path)
{
	int n = 0;
	unsigned long bytes = 0;
	for (const exec_segment &s : exec_segments_of(path))
		if (s.memsz >= 2ul << 20)
			n++, bytes += s.memsz;
	REQUIRE(n > 0);
	return { n, bytes };
}

TEST_CASE("node runs with at least 20 MiB of its code on huge pages", "[real]")
{
	std::string obj = node_code_object();
	if (obj.empty()) {
		WARN("node is not installed: not checked");
		return;
	}
	std::string report = temp_path("node.json");
	const std::string js = "let s=0; for (let i=0;i<1e5;i++) s+=i; console.log(s)";
	run_result plain = run_cmd({ "node", "-e", js });
	// A copy at start-up: whether the defaults can keep the page cache's
	// pages instead depends on the kernel (test-pagecache covers that).
	std::vector<std::string> env = { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
					 "HUGETEXT_COPY=now" };
	for (auto &e : node_match_vars())
		env.push_back(e);
	run_result r = run_cmd({ "node", "-e", js }, env);

	INFO("node's code is in " << obj);
	REQUIRE(r.status == 0);
	CHECK(r.out == plain.out);
	CHECK(r.err.empty());
	CHECK(ok_bytes(read_report(report), obj) >= 20ul << 20);
}

TEST_CASE("g++ compiles to a byte-identical object with cc1plus moved", "[real]")
{
	if (!have_program("g++")) {
		WARN("g++ is not installed: not checked");
		return;
	}
	std::string src = temp_path("unit.cpp"), a = temp_path("a.o"), b = temp_path("b.o");
	std::string report = temp_path("gxx.json");
	{
		std::string code = "#include <map>\n#include <string>\n#include <vector>\n"
				   "std::map<std::string, std::vector<int>> m;\n"
				   "int f(int x) { m[\"a\"].push_back(x); return (int)m.size(); }\n";
		FILE *f = fopen(src.c_str(), "w");
		REQUIRE(f);
		fputs(code.c_str(), f);
		fclose(f);
	}
	run_result plain = run_cmd({ "g++", "-O2", "-c", src, "-o", a });
	run_result moved = run_cmd({ "g++", "-O2", "-c", src, "-o", b },
				   { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report });

	REQUIRE(plain.status == 0);
	REQUIRE(moved.status == 0);
	CHECK(moved.err.empty());
	CHECK(read_file(a) == read_file(b));
	CHECK(ok_bytes(read_report(report), "cc1plus") >= 16ul << 20);
}

// Whether the program loads a library whose name contains @part.
static bool loads(const std::string &prog, const std::string &part)
{
	run_result r = run_cmd({ "ldd", prog });
	return r.status == 0 && r.out.find(part) != std::string::npos;
}

TEST_CASE("clang++ compiles to a byte-identical object with libLLVM and libclang-cpp moved", "[real]")
{
	run_result where = run_cmd({ "sh", "-c", "readlink -f \"$(command -v clang++)\"" });
	std::string clang = where.out.substr(0, where.out.find('\n'));
	if (where.status != 0 || clang.empty()) {
		WARN("clang++ is not installed: not checked");
		return;
	}
	// Debian's clang links both; a clang built with its libraries static has
	// nothing for HUGETEXT_MATCH to pick.
	if (!loads(clang, "libLLVM") || !loads(clang, "libclang-cpp")) {
		WARN(clang << " does not load libLLVM and libclang-cpp: not checked");
		return;
	}
	std::string src = temp_path("clang.cpp"), a = temp_path("clang-a.o"), b = temp_path("clang-b.o");
	std::string report = temp_path("clang.json");
	{
		FILE *f = fopen(src.c_str(), "w");
		REQUIRE(f);
		fputs("#include <map>\n#include <string>\n#include <vector>\n"
		      "int main(int argc, char **argv)\n{\n"
		      "\tstd::map<std::string, std::vector<int>> m;\n"
		      "\tfor (int i = 0; i < argc; i++)\n\t\tm[argv[i]].push_back(i);\n"
		      "\treturn (int)m.size() - 1;\n}\n", f);
		fclose(f);
	}
	run_result plain = run_cmd({ "clang++", "-O2", "-c", src, "-o", a });
	run_result moved = run_cmd({ "clang++", "-O2", "-c", src, "-o", b },
				   { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
				     "HUGETEXT_MATCH=libLLVM|libclang-cpp" });

	INFO(moved.err);
	REQUIRE(plain.status == 0);
	REQUIRE(moved.status == 0);
	CHECK(moved.err.empty());
	CHECK(read_file(a) == read_file(b));
	// Both on huge pages: moved, or left where the kernel already maps
	// them huge from 2 MiB page-cache folios (not "ok" then, but not
	// failed).  Debian 12's libLLVM-14 puts 96 MiB on huge pages here,
	// libclang-cpp14 52 MiB.
	unsigned long llvm = 0, clangcpp = 0;
	for (auto &l : read_report(report)) {
		if (!l.count("huge_bytes") || l["status"] == "failed")
			continue;
		if (l["object"].find("libLLVM") != std::string::npos)
			llvm += std::stoul(l["huge_bytes"]);
		else if (l["object"].find("libclang-cpp") != std::string::npos)
			clangcpp += std::stoul(l["huge_bytes"]);
	}
	CHECK(llvm >= 64ul << 20);
	CHECK(clangcpp >= 32ul << 20);
}

TEST_CASE("with HUGETEXT_ASYNC=1, node and cc1plus are moved while they run and give the same results",
	  "[real][async]")
{
	std::vector<std::string> env = { "LD_PRELOAD=" + preload(), "HUGETEXT_ASYNC=1" };
	std::string obj = node_code_object();
	if (!obj.empty()) {
		// Long enough for the move to end before the program does.
		std::string report = temp_path("node-async.json");
		const std::string js = "let s=0; for (let i=0;i<1e7;i++) s+=i%7; console.log(s)";
		run_result plain = run_cmd({ "node", "-e", js });
		std::vector<std::string> e = env;
		e.push_back("HUGETEXT_REPORT=" + report);
		for (auto &v : node_match_vars())
			e.push_back(v);
		run_result r = run_cmd({ "node", "-e", js }, e);
		INFO("node's code is in " << obj);
		REQUIRE(r.status == 0);
		CHECK(r.out == plain.out);
		CHECK(r.err.empty());
		CHECK(ok_bytes(read_report(report), obj) >= 20ul << 20);
	} else {
		WARN("node is not installed: not checked");
	}
	if (have_program("g++")) {
		std::string src = temp_path("unit-async.cpp"), a = temp_path("a-async.o"), b = temp_path("b-async.o");
		std::string report = temp_path("gxx-async.json");
		FILE *f = fopen(src.c_str(), "w");
		REQUIRE(f);
		fputs("#include <map>\n#include <string>\n#include <vector>\n"
		      "std::map<std::string, std::vector<long>> m;\n"
		      "long f(const std::string &k) { m[k].push_back(1); return (long)m[k].size(); }\n", f);
		fclose(f);
		run_result plain = run_cmd({ "g++", "-O2", "-c", src, "-o", a });
		std::vector<std::string> e = env;
		e.push_back("HUGETEXT_REPORT=" + report);
		run_result moved = run_cmd({ "g++", "-O2", "-c", src, "-o", b }, e);
		REQUIRE(plain.status == 0);
		REQUIRE(moved.status == 0);
		CHECK(moved.err.empty());
		CHECK(read_file(a) == read_file(b));
		CHECK(ok_bytes(read_report(report), "cc1plus") >= 16ul << 20);
	} else {
		WARN("g++ is not installed: not checked");
	}
}

TEST_CASE("rustc builds a correct program with librustc_driver and libLLVM moved", "[real][libraries]")
{
	if (!have_program("rustc")) {
		WARN("rustc is not installed: not checked");
		return;
	}
	std::string src = temp_path("prog.rs"), bin = temp_path("prog"), report = temp_path("rustc.json");
	{
		FILE *f = fopen(src.c_str(), "w");
		REQUIRE(f);
		fputs("use std::collections::BTreeMap;\n"
		      "fn main() { let mut m = BTreeMap::new();\n"
		      "  for i in 0..1000u64 { *m.entry(i % 7).or_insert(0u64) += i * i; }\n"
		      "  println!(\"{:?}\", m); }\n", f);
		fclose(f);
	}
	run_result r = run_cmd({ "rustc", "-O", src, "-o", bin },
			       { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
				 "HUGETEXT_MATCH=librustc_driver|libLLVM" });
	INFO(r.err);
	REQUIRE(r.status == 0);
	CHECK(r.err.empty());
	run_result prog = run_cmd({ bin });
	unsigned long sums[7] = { 0 };
	for (unsigned long i = 0; i < 1000; i++)
		sums[i % 7] += i * i;
	std::string expect = "{";
	for (int k = 0; k < 7; k++)
		expect += (k ? ", " : "") + std::to_string(k) + ": " + std::to_string(sums[k]);
	CHECK(prog.out == expect + "}\n");
	auto lines = read_report(report);
	int driver = 0, llvm = 0;
	std::string driver_path, llvm_path;
	for (auto &l : ok_lines(lines)) {
		if (l["object"].find("librustc_driver") != std::string::npos)
			driver++, driver_path = l["object"];
		if (l["object"].find("libLLVM") != std::string::npos)
			llvm++, llvm_path = l["object"];
	}
	// Every executable segment of each library is moved: two each on
	// x86-64, one on arm64 (no separate code segment there).  On x86-64
	// rustc's linker, rust-lld, loads libLLVM too and inherits the preload.
	REQUIRE(!driver_path.empty());
	REQUIRE(!llvm_path.empty());
	auto [driver_segs, driver_code] = code_segments(driver_path);
	auto [llvm_segs, llvm_code] = code_segments(llvm_path);
	CHECK(driver == driver_segs);
	CHECK(llvm >= llvm_segs);
	CHECK(llvm % llvm_segs == 0);
	// All of their code but the partial 2 MiB pages at each segment's ends.
	CHECK(ok_bytes(lines, "librustc_driver") + (4ul << 20) * driver_segs >= driver_code);
	CHECK(ok_bytes(lines, "libLLVM") + (4ul << 20) * llvm_segs >= llvm_code);
	CHECK(ok_bytes(lines, "librustc_driver") + ok_bytes(lines, "libLLVM") >= 130ul << 20);
	unlink(bin.c_str());
}

TEST_CASE("java -version runs with libjvm, loaded by dlopen, moved", "[real][libraries]")
{
	if (!have_program("java")) {
		WARN("java is not installed: not checked");
		return;
	}
	std::string report = temp_path("java.json");
	run_result plain = run_cmd({ "java", "-version" });
	run_result r = run_cmd({ "java", "-version" },
			       { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report, "HUGETEXT_MATCH=libjvm" });
	REQUIRE(r.status == 0);
	CHECK(r.err == plain.err);
	CHECK(ok_bytes(read_report(report), "libjvm") >= 8ul << 20);
}
