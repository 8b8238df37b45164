// Description: measure's results (tools/measurefmt.c): the preload's report
// lines summed, the paired comparisons and the early stop's "decided at", and
// the text (golden file) and JSON written from a fixture.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <json-c/json.h>
#include <string>

#include "cpu-fixtures.hpp"
#include "measure.h"
#include "tooltest.hpp"

using namespace cpu_fixtures;

namespace {

hte_m_report parse(const std::string &s)
{
	hte_m_report r;
	hte_m_report_parse(s.data(), s.size(), &r);
	return r;
}

std::string out_of(void (*fn)(FILE *, const hte_measure *), const hte_measure &m)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	REQUIRE(f);
	fn(f, &m);
	std::fclose(f);
	std::string s(buf, len);
	std::free(buf);
	return s;
}

char *const fixture_argv[] = { (char *)"node", (char *)"-e", (char *)"run()", nullptr };

// A measurement as measure.c fills it: node, three variants, 12 rounds.
hte_measure *fixture()
{
	hte_measure *m = (hte_measure *)std::calloc(1, sizeof(hte_measure));
	REQUIRE(m);
	m->argc = 3;
	m->argv = fixture_argv;
	std::snprintf(m->program, sizeof(m->program), "/usr/bin/node");
	m->max_rounds = 30;
	m->rounds = 12;
	m->stopped_early = 1;
	m->margin = 0.02;
	m->cpu = cpu_of(zen5_kvm());
	m->have_calib = 1;
	m->calib.verdict = HTE_CALIB_HUGE_GAINS;
	std::snprintf(m->calib.why, sizeof(m->calib.why), "on 2 MiB pages the loop ran 1.47x as fast");
	m->calib.seconds = 3.2;
	m->calib.rounds = 96;
	m->calib.walk_ns_per_page = 24.8;
	std::snprintf(m->counters_why, sizeof(m->counters_why), "not measured: a virtual machine");
	m->have_fp = 1;
	m->fp.windows = 8;
	m->fp.window_ms = 50;
	m->fp.ws_max = 3124;
	m->fp.pages_2m = 19;
	m->fp.pages_known = 1;
	hte_footprint_estimate(&m->fp, &m->cpu.itlb, &m->calib, &m->est);
	std::snprintf(m->isolation, sizeof(m->isolation), "each variant ran its own copy");
	m->nvar = 3;
	const char *names[] = { "plain", "defaults", "copy" };
	for (unsigned v = 0; v < 3; v++) {
		hte_m_variant *var = &m->var[v];
		std::snprintf(var->name, sizeof(var->name), "%s", names[v]);
		var->check.known = 1;
		var->check.code = 29u << 20;
		for (unsigned r = 0; r < 12; r++) {
			double drift = 1 + 0.01 * ((r * 7) % 5);          // the machine, the same for all in a round
			double own = 1 + 0.002 * (double)((r * 3 + v) % 4); // each run's own noise
			double speed = v == 2 ? 0.90 : 1.0;               // copy 10% faster, defaults the same
			var->runs[r].wall = 0.5 * drift * own * speed;
			var->runs[r].cpu = 0.4 * drift * own * speed;
			for (double &x : var->runs[r].counts)
				x = -1;
			if (v == 2)
				var->runs[r].rep = parse("{\"status\":\"ok\",\"huge_bytes\":27262976}\n");
		}
		var->nruns = 12;
	}
	m->var[2].check.copy = 26u << 20;
	m->var[2].check_rep = parse("{\"object\":\"/usr/bin/node\",\"status\":\"ok\",\"huge_bytes\":27262976,\"mode\":\"thp\"}\n");
	hte_m_note(m, "a note");
	hte_m_note(m, "a note"); // once
	hte_m_compare(m);
	return m;
}

} // namespace

TEST_CASE("report lines: ok, kept, copied, cache hits, failures, deferred copies; junk skipped", "[measurefmt]")
{
	hte_m_report r = parse(
		"{\"pid\":1,\"object\":\"/a\",\"huge_bytes\":4194304,\"kept_bytes\":2097152,\"status\":\"ok\"}\n"
		"{\"pid\":1,\"object\":\"/b\",\"huge_bytes\":2097152,\"status\":\"ok\",\"cache\":\"hit\"}\n"
		"{\"pid\":1,\"object\":\"/c\",\"status\":\"skipped\",\"error\":\"a private copy would not pay yet: "
		"deferred until the process has run long enough\",\"cache\":\"offered\"}\n"
		"{\"pid\":1,\"object\":\"/d\",\"status\":\"failed\",\"error\":\"no huge pages\",\"warmed_bytes\":4096}\n"
		"{\"object\":\"/e\",\"status\":\"skipped\",\"huge_bytes\":2097152,\"kept_bytes\":2097152,"
		"\"error\":\"a private copy would not pay yet: deferred\"}\n"
		"not json\n"
		"{\"status\":\"ok\",\"huge_bytes\":-5}\n"
		"[1,2]\n"
		"\n");
	CHECK(r.lines == 6);
	CHECK(r.ok == 3);
	CHECK(r.failed == 1);
	CHECK(r.deferred == 2);
	CHECK(r.offered == 1);
	// /e was skipped for its deferred copy, but kept 2 MiB of the kernel's pages.
	CHECK(r.huge == 8u << 20);
	CHECK(r.kept == 4u << 20);
	CHECK(r.copied == 2u << 20); // /a's 2 MiB not kept; /b is a hit, nothing copied
	CHECK(r.warmed == 4096);
	CHECK(std::string(r.cache) == "hit");
	CHECK(std::string(r.error) == "no huge pages");
	hte_m_report none = parse("");
	CHECK(none.lines == 0);
	// The deferred copy reports its span again: the region counts once, as its last line says.
	hte_m_report twice = parse(
		"{\"pid\":7,\"object\":\"/n\",\"start\":4096,\"huge_bytes\":25165824,\"kept_bytes\":25165824,"
		"\"status\":\"skipped\",\"error\":\"deferred\"}\n"
		"{\"pid\":7,\"object\":\"/n\",\"start\":4096,\"huge_bytes\":27262976,\"kept_bytes\":25165824,"
		"\"status\":\"ok\"}\n"
		"{\"pid\":8,\"object\":\"/n\",\"start\":4096,\"huge_bytes\":2097152,\"status\":\"ok\"}\n");
	CHECK(twice.huge == 28u << 20);
	CHECK(twice.kept == 24u << 20);
	CHECK(twice.copied == 4u << 20);
}

TEST_CASE("the comparisons: the copy decided faster, the defaults the same", "[measurefmt]")
{
	hte_measure *m = fixture();
	CHECK(m->var[2].wall.ratio == Approx(0.90).epsilon(0.01));
	CHECK(m->var[2].wall.decision == HTE_LOWER);
	CHECK(m->var[2].decided_at == 12);
	CHECK(m->var[1].wall.ratio == Approx(1.0).epsilon(0.01));
	CHECK(m->var[1].wall.decision == HTE_SAME);
	CHECK(m->var[1].cpu.decision == HTE_SAME);
	CHECK(m->nnotes == 1);
	// A variant that was not timed is not compared.
	std::snprintf(m->var[2].na, sizeof(m->var[2].na), "no private copy");
	m->var[2].wall = {};
	m->var[2].decided_at = 0;
	hte_m_compare(m);
	CHECK(m->var[2].wall.n == 0);
	std::free(m);
}

TEST_CASE("the text for people: every figure, its interval and the decision (golden file)", "[measurefmt]")
{
	hte_measure *m = fixture();
	std::string t = out_of(hte_m_text, *m);
	INFO(t);
	CHECK(golden_diff("measure.txt", t) == "");
	CHECK(t.find("time 0.900x plain's (95%: ") != std::string::npos);
	CHECK(t.find(": faster, decided at 12 runs") != std::string::npos);
	CHECK(t.find("its 12 timed runs' reports: 26.0 MiB huge, 26.0 MiB copied (medians)") != std::string::npos);
	CHECK(t.find("the same within 2%") != std::string::npos);
	// Undecided says so, with the rounds.
	m->var[1].wall.decision = HTE_UNDECIDED;
	m->var[1].decided_at = 0;
	CHECK(out_of(hte_m_text, *m).find("not decided at 12 runs") != std::string::npos);
	std::free(m);
}

TEST_CASE("the JSON for scripts parses and holds the figures", "[measurefmt]")
{
	hte_measure *m = fixture();
	std::string j = out_of(hte_m_json, *m);
	json_object *o = json_tokener_parse(j.c_str());
	REQUIRE(o);
	json_object *v, *vars, *copy, *time, *x;
	REQUIRE(json_object_object_get_ex(o, "rounds", &v));
	CHECK(json_object_get_int(v) == 12);
	REQUIRE(json_object_object_get_ex(o, "variants", &vars));
	REQUIRE(json_object_array_length(vars) == 3);
	copy = json_object_array_get_idx(vars, 2);
	REQUIRE(json_object_object_get_ex(copy, "time", &time));
	REQUIRE(json_object_object_get_ex(time, "decision", &x));
	CHECK(std::string(json_object_get_string(x)) == "lower");
	REQUIRE(json_object_object_get_ex(time, "ratio", &x));
	CHECK(json_object_get_double(x) == Approx(0.90).epsilon(0.01));
	REQUIRE(json_object_object_get_ex(copy, "check", &x));
	REQUIRE(json_object_object_get_ex(x, "copy", &v));
	CHECK(json_object_get_int64(v) == 26ll << 20);
	REQUIRE(json_object_object_get_ex(copy, "runs", &x));
	CHECK(json_object_array_length(x) == 12);
	REQUIRE(json_object_object_get_ex(o, "calibration", &x));
	REQUIRE(json_object_object_get_ex(x, "verdict", &v));
	CHECK(std::string(json_object_get_string(v)) == "huge_gains");
	REQUIRE(json_object_object_get_ex(o, "counters", &x));
	REQUIRE(json_object_object_get_ex(x, "counted", &v));
	CHECK_FALSE(json_object_get_boolean(v));
	REQUIRE(json_object_object_get_ex(o, "footprint", &x));
	REQUIRE(json_object_object_get_ex(x, "working_set_max", &v));
	CHECK(json_object_get_int(v) == 3124);
	REQUIRE(json_object_object_get_ex(o, "cpu", &x));
	REQUIRE(json_object_object_get_ex(x, "hypervisor", &v));
	CHECK(std::string(json_object_get_string(v)) == "KVMKVMKVM");
	json_object_put(o);
	// A command with quotes and control bytes stays valid JSON.
	char *const evil[] = { (char *)"a\"b\\c\n\x01", nullptr };
	m->argv = evil;
	m->argc = 1;
	o = json_tokener_parse(out_of(hte_m_json, *m).c_str());
	CHECK(o);
	json_object_put(o);
	std::free(m);
}
