// Description: settings parsing and the report's JSON and human lines.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>

extern "C" {
#include "internal.h"
}

static std::map<std::string, std::string> fake_env;

static char *fake_get(const char *name)
{
	auto it = fake_env.find(name);
	return it == fake_env.end() ? nullptr : const_cast<char *>(it->second.c_str());
}

static struct ht_options env_opts(std::map<std::string, std::string> env, std::string *notes = nullptr)
{
	struct ht_options o;
	char buf[512];

	fake_env = std::move(env);
	ht_options_init(&o);
	ht_options_env(&o, fake_get, buf, sizeof(buf));
	if (notes)
		*notes = buf;
	return o;
}

TEST_CASE("defaults are auto mode, silent, no report", "[options]")
{
	struct ht_options o = env_opts({});

	CHECK(o.mode == HT_MODE_AUTO);
	CHECK(o.verbose == 0);
	CHECK(o.report_path == nullptr);
	CHECK(o.budget_ms == 0);
}

TEST_CASE("every mode name is understood, in any case", "[options]")
{
	CHECK(env_opts({ { "HUGETEXT_MODE", "thp" } }).mode == HT_MODE_THP);
	CHECK(env_opts({ { "HUGETEXT_MODE", "EXPLICIT" } }).mode == HT_MODE_EXPLICIT);
	CHECK(env_opts({ { "HUGETEXT_MODE", "off" } }).mode == HT_MODE_OFF);
	CHECK(env_opts({ { "HUGETEXT_MODE", "Folios" } }).mode == HT_MODE_FOLIOS);
	CHECK(env_opts({ { "HUGETEXT_MODE", "auto" } }).mode == HT_MODE_AUTO);
}

TEST_CASE("unknown, empty and very long values fall back and leave a note", "[options]")
{
	std::string notes;
	std::string huge(100000, 'x');

	CHECK(env_opts({ { "HUGETEXT_MODE", "turbo" } }, &notes).mode == HT_MODE_AUTO);
	CHECK(notes.find("HUGETEXT_MODE") != std::string::npos);
	CHECK(env_opts({ { "HUGETEXT_MODE", "" } }, &notes).mode == HT_MODE_AUTO);
	CHECK(env_opts({ { "HUGETEXT_MODE", huge } }, &notes).mode == HT_MODE_AUTO);
	CHECK(notes.size() < 200);
	CHECK(env_opts({ { "HUGETEXT_VERBOSE", "maybe" } }, &notes).verbose == 0);
	CHECK(notes.find("HUGETEXT_VERBOSE") != std::string::npos);
	CHECK(env_opts({ { "HUGETEXT_BUDGET_MS", "-5" } }).budget_ms == 0);
	CHECK(env_opts({ { "HUGETEXT_BUDGET_MS", "99999999999999999999" } }).budget_ms == 0);
	CHECK(env_opts({ { "HUGETEXT_BUDGET_MS", "12ms" } }).budget_ms == 0);
	CHECK(env_opts({ { "HUGETEXT_BUDGET_MS", "250" } }).budget_ms == 250);
}

TEST_CASE("iodlr's explicit switch selects explicit pages unless the mode is set", "[options]")
{
	CHECK(env_opts({ { "IODLR_USE_EXPLICIT_HP", "1" } }).mode == HT_MODE_EXPLICIT);
	CHECK(env_opts({ { "IODLR_USE_EXPLICIT_HP", "0" } }).mode == HT_MODE_AUTO);
	CHECK(env_opts({ { "IODLR_USE_EXPLICIT_HP", "1" }, { "HUGETEXT_MODE", "thp" } }).mode == HT_MODE_THP);
}

TEST_CASE("an empty pattern or report path means not set", "[options]")
{
	struct ht_options o = env_opts({ { "HUGETEXT_MATCH", "" }, { "HUGETEXT_REPORT", "" },
					 { "HUGETEXT_IGNORE", "libfoo" } });

	CHECK(o.match == nullptr);
	CHECK(o.report_path == nullptr);
	REQUIRE(o.ignore != nullptr);
	CHECK(std::string(o.ignore) == "libfoo");
}

TEST_CASE("number and bool parsers accept only what they document", "[options]")
{
	unsigned u;
	int b;

	CHECK(ht_parse_uint("0", 10, &u) == 0);
	CHECK(u == 0);
	CHECK(ht_parse_uint("11", 10, &u) == -EINVAL);
	CHECK(ht_parse_uint("", 10, &u) == -EINVAL);
	CHECK(ht_parse_uint(" 1", 10, &u) == -EINVAL);
	CHECK(ht_parse_bool("yes", &b) == 0);
	CHECK(b == 1);
	CHECK(ht_parse_bool("off", &b) == 0);
	CHECK(b == 0);
	CHECK(ht_parse_bool("2", &b) == -EINVAL);
}

static struct ht_region sample_region(enum ht_status st)
{
	struct ht_region r;

	std::memset(&r, 0, sizeof(r));
	std::strcpy(r.object, "/opt/a \"quoted\"\\path\n");
	r.start = 0x600000;
	r.end = 0x2a00000;
	r.bytes = r.end - r.start;
	r.huge_bytes = st == HT_STATUS_OK ? r.bytes : 0;
	r.mode = HT_MODE_THP;
	r.ms = 1.5;
	r.status = st;
	r.error = st == HT_STATUS_OK ? HT_E_NONE : HT_E_SWAP;
	r.sys_errno = st == HT_STATUS_OK ? 0 : EPERM;
	r.fill = "pread";
	return r;
}

TEST_CASE("the JSON line has every documented key and escapes the path", "[report]")
{
	char buf[1024];
	struct ht_region ok = sample_region(HT_STATUS_OK);
	int n = ht_format_json(&ok, 42, buf, sizeof(buf));

	REQUIRE(n > 0);
	std::string s(buf, (size_t)n);
	CHECK(s == "{\"pid\":42,\"object\":\"/opt/a \\\"quoted\\\"\\\\path\\u000a\",\"start\":6291456,"
		   "\"end\":44040192,\"bytes\":37748736,\"huge_bytes\":37748736,\"mode\":\"thp\","
		   "\"ms\":1.500,\"status\":\"ok\",\"fill\":\"pread\"}\n");
}

TEST_CASE("the JSON line stays UTF-8 when the path is not", "[report]")
{
	const unsigned char ok2[] = "\xc3\xa9", ok4[] = "\xf0\x9f\x98\x80", cut[] = "\xe2\x82",
			    overlong[] = "\xe0\x80\xaf", surrogate[] = "\xed\xa0\x80", high[] = "\xf4\x90\x80\x80";
	CHECK(ht_utf8_len((const unsigned char *)"a") == 1);
	CHECK(ht_utf8_len(ok2) == 2);
	CHECK(ht_utf8_len(ok4) == 4);
	CHECK(ht_utf8_len(cut) == 0); // the NUL ends it
	CHECK(ht_utf8_len(overlong) == 0);
	CHECK(ht_utf8_len(surrogate) == 0);
	CHECK(ht_utf8_len(high) == 0);

	char buf[1024];
	struct ht_region r = sample_region(HT_STATUS_OK);
	std::strcpy(r.object, "/opt/caf\xe9/\xc3\xa9");
	int n = ht_format_json(&r, 1, buf, sizeof(buf));
	REQUIRE(n > 0);
	CHECK(std::string(buf, (size_t)n).find("\"object\":\"/opt/caf\\ufffd/\xc3\xa9\"") != std::string::npos);
}

TEST_CASE("a failed region's JSON names the error and errno", "[report]")
{
	char buf[1024];
	struct ht_region bad = sample_region(HT_STATUS_FAILED);
	int n = ht_format_json(&bad, 7, buf, sizeof(buf));

	REQUIRE(n > 0);
	std::string s(buf, (size_t)n);
	CHECK(s.find("\"status\":\"failed\"") != std::string::npos);
	CHECK(s.find("\"error\":\"mremap refused the swap\"") != std::string::npos);
	CHECK(s.find("\"errno\":1") != std::string::npos);
}

TEST_CASE("formatting into a small buffer fails cleanly", "[report]")
{
	char buf[16];
	struct ht_region ok = sample_region(HT_STATUS_OK);

	CHECK(ht_format_json(&ok, 1, buf, sizeof(buf)) == -ENOSPC);
	CHECK(ht_format_human(&ok, buf, sizeof(buf)) == -ENOSPC);
	CHECK(ht_format_json(&ok, 1, buf, 0) == -ENOSPC);
}

TEST_CASE("the human line says what happened in one line", "[report]")
{
	char buf[1024];
	struct ht_region ok = sample_region(HT_STATUS_OK);
	int n = ht_format_human(&ok, buf, sizeof(buf));

	REQUIRE(n > 0);
	std::string s(buf, (size_t)n);
	CHECK(s.find("36.0 MiB: ok, 36.0 MiB on huge pages (thp, pread)") != std::string::npos);
	CHECK(s.back() == '\n');
	CHECK(s.find('\n') == s.size() - 1);
}

TEST_CASE("value names and texts cover every value and reject others", "[strings]")
{
	for (int e = 0; e < HT_E__COUNT; e++)
		CHECK(std::string(ht_error_str((enum ht_error)e)) != "unknown error");
	CHECK(std::string(ht_error_str((enum ht_error)999)) == "unknown error");
	CHECK(std::string(ht_status_str(HT_STATUS_SKIPPED)) == "skipped");
	CHECK(std::string(ht_mode_str((enum ht_mode)9)) == "unknown");
	CHECK(std::string(ht_version()) == HT_VERSION_STRING);
}

TEST_CASE("HUGETEXT_COVER_ENDS is off by default and takes a boolean", "[options]")
{
	std::string notes;

	CHECK(env_opts({}).cover_ends == 0);
	CHECK(env_opts({ { "HUGETEXT_COVER_ENDS", "1" } }).cover_ends == 1);
	CHECK(env_opts({ { "HUGETEXT_COVER_ENDS", "off" } }).cover_ends == 0);
	CHECK(env_opts({ { "HUGETEXT_COVER_ENDS", "sometimes" } }, &notes).cover_ends == 0);
	CHECK(notes.find("HUGETEXT_COVER_ENDS") != std::string::npos);
}

TEST_CASE("HUGETEXT_BIG_LIBRARIES takes auto or a boolean; the API's default is off", "[options]")
{
	std::string notes;

	CHECK(env_opts({}).big_libraries == HT_BIG_LIBRARIES_OFF);
	CHECK(env_opts({ { "HUGETEXT_BIG_LIBRARIES", "auto" } }).big_libraries == HT_BIG_LIBRARIES_AUTO);
	CHECK(env_opts({ { "HUGETEXT_BIG_LIBRARIES", "1" } }).big_libraries == HT_BIG_LIBRARIES_ON);
	CHECK(env_opts({ { "HUGETEXT_BIG_LIBRARIES", "no" } }).big_libraries == HT_BIG_LIBRARIES_OFF);
	CHECK(env_opts({ { "HUGETEXT_BIG_LIBRARIES", "big" } }, &notes).big_libraries ==
	      HT_BIG_LIBRARIES_OFF);
	CHECK(notes.find("HUGETEXT_BIG_LIBRARIES") != std::string::npos);
}
