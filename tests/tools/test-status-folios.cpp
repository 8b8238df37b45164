// Description: `hugetext status` as root counts a copy on 64 KiB folios
// (HUGETEXT_MODE=folios), which smaps shows as no huge page at all: at
// least what the library reported, at most the program's text.  Sets THP's
// 64 KiB and 2 MiB sizes for the run and puts them back: not in parallel.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "sysguard.hpp"
#include "tooltest.hpp"

extern "C" {
#include "hugetext.h"
}

namespace {

// A number "KEY": N in one process's line of status --json; -1 when absent.
long long json_number(const std::string &line, const std::string &key)
{
	size_t k = line.find("\"" + key + "\": ");

	return k == std::string::npos ? -1 : std::stoll(line.substr(k + key.size() + 4));
}

} // namespace

extern "C" const char *test_skip_reason(void)
{
	if (geteuid() != 0)
		return "needs root: sets THP's per-size settings, and status reads frames only as root";
	if (!file_exists(thp_size64))
		return "this kernel offers no 64 KiB folios (no transparent_hugepage/hugepages-64kB)";
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never)";
	return nullptr;
}

TEST_CASE("status as root counts a copy on 64 KiB folios: at least the library's count, at most the text",
	  "[status][folios]")
{
	std::string prog = real_path(build_path("tests/bigtext-nopie"));
	std::string report = temp_path("status-folios.json");
	report_line copy;
	std::string line, text, pid, hidden;
	// The program's text: the copy lies inside it.  Its file's page cache in
	// 4 KiB pages, as after a long uptime.
	unsigned long long text_span = 0;
	for (auto &s : exec_segments_of(prog))
		text_span += s.memsz;
	REQUIRE(text_span > 0);
	small_page_cache(prog);
	{
		thp_sizes_guard g("madvise", "never");  // so the copy can only be on folios
		REQUIRE(g.ok());
		unlink(report.c_str());
		child c({ prog, "hold", "60000" }, { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"),
						    "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=folios",
						    "HUGETEXT_COPY=now", "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_SHARE=0" });
		// The copy is made before main() (HUGETEXT_COPY=now); "ready" comes after the sum.
		for (std::string l = c.read_line(); l != "ready"; l = c.read_line())
			REQUIRE(!l.empty());
		run_result j = tool({ "status", "--json", "--min-code", "4M" });
		run_result t = tool({ "status", "--min-code", "4M" });
		REQUIRE(j.status == 0);
		REQUIRE(t.status == 0);
		text = t.out;
		pid = std::to_string(c.pid);
		size_t at = j.out.find("{\"pid\": " + pid + ", ");
		REQUIRE(at != std::string::npos);
		line = j.out.substr(at, j.out.find('\n', at) - at);
		// Without CAP_SYS_ADMIN pagemap hides the frames: the same process, its folios not shown.
		if (have_program("capsh")) {
			run_result h = run_cmd({ "capsh", "--drop=cap_sys_admin", "--", "-c",
						 "exec \"$0\" status --json --min-code 4M; ", tool_path() });
			REQUIRE(h.status == 0);
			size_t k = h.out.find("{\"pid\": " + pid + ", ");
			REQUIRE(k != std::string::npos);
			hidden = h.out.substr(k, h.out.find('\n', k) - k);
		}
		auto lines = read_report(report);
		REQUIRE(lines.size() == 1);
		copy = lines[0];
	}
	unlink(report.c_str());
	INFO(line);
	if (copy["status"] != "ok" && copy["error"] == ht_error_str(HT_E_NO_HUGE)) {
		std::printf("SKIP: the machine gave the copy no 64 KiB folio (%s)\n", copy["error"].c_str());
		std::fflush(stdout);
		std::exit(77);
	}
	REQUIRE(copy["status"] == "ok");
	REQUIRE(copy["mode"] == "folios");
	unsigned long long bytes = std::stoull(copy["bytes"]), huge = std::stoull(copy["huge_bytes"]);
	long long folios = json_number(line, "folios"), thp = json_number(line, "thp");
	std::printf("status-folios: the library counts %llu of %llu KiB on 64 KiB folios at least; "
		    "status shows %lld KiB on folios, %lld KiB on 2 MiB pages\n",
		    huge / 1024, bytes / 1024, folios / 1024, thp / 1024);
	REQUIRE(folios >= 0); // counted: as root the frames are visible
	REQUIRE(thp >= 0);
	// The library's count is a lower bound of what its copy got; the 2 MiB
	// size is off, but a page of it counts in thp, not twice.
	CHECK((unsigned long long)(folios + thp) >= huge);
	CHECK(bytes <= text_span);
	CHECK((unsigned long long)folios <= text_span);
	CHECK(json_number(line, "huge_bytes") >= folios);
	// The table's line says how, too.
	INFO(text);
	size_t row = text.find(" " + pid + "  ");
	REQUIRE(row != std::string::npos);
	std::string r = text.substr(row, text.find('\n', row) - row);
	CHECK((r.find("[folios ") != std::string::npos || r.find(", folios ") != std::string::npos));
	CHECK(text.find("not counted (needs root") == std::string::npos);
	if (hidden.empty()) {
		WARN("no capsh: status without CAP_SYS_ADMIN not tried");
	} else {
		INFO(hidden);
		CHECK(hidden.find("\"folios\"") == std::string::npos);
		CHECK(json_number(hidden, "code_bytes") == json_number(line, "code_bytes"));
	}
}

TEST_CASE("a file's own large page-cache folios are no copy: status counts none on folios", "[status][folios]")
{
	// Read in order, a file on ext4 (6.18) or XFS comes into the page cache
	// in large folios, which the kernel maps with 4 KiB entries in every
	// process that runs it: shared, made by nobody.  Status counted them as
	// a copy on folios (node, with no preload, showed 832 KiB "copied").
	std::string prog = temp_path("status-file-folios", build_path("tests"));
	REQUIRE(run_cmd({ "cp", build_path("tests/bigtext-nopie"), prog }).status == 0);
	REQUIRE(run_cmd({ "sh", "-c", "sync \"$0\"; cat \"$0\" > /dev/null", prog }).status == 0);
	child c({ prog, "hold", "60000" }, {});
	for (std::string l = c.read_line(); l != "ready"; l = c.read_line())
		REQUIRE(!l.empty());
	run_result j = tool({ "status", "--json", "--min-code", "4M" });
	REQUIRE(j.status == 0);
	size_t at = j.out.find("{\"pid\": " + std::to_string(c.pid) + ", ");
	REQUIRE(at != std::string::npos);
	std::string line = j.out.substr(at, j.out.find('\n', at) - at);
	INFO(line);
	CHECK(json_number(line, "folios") == 0);
	CHECK(json_number(line, "thp") == 0);
	unlink(prog.c_str());
}
