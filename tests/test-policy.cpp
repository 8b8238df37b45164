// Description: the preload's policy: the file's keys under the environment,
// and the cheap check of whether any loaded object is worth a move.
#include <catch2/catch.hpp>

#include <cstring>
#include <elf.h>
#include <map>
#include <string>

extern "C" {
#include "internal.h"
#include "policy.h"
}

namespace {

std::map<std::string, std::string> fake_env;

char *fake_get(const char *name)
{
	auto it = fake_env.find(name);
	return it == fake_env.end() ? nullptr : const_cast<char *>(it->second.c_str());
}

struct ht_conf parsed(const std::string &text)
{
	static struct ht_conf c; // large: keep it off the stack
	char err[128];

	REQUIRE(ht_conf_parse(text.data(), text.size(), &c, err, sizeof(err)) == 0);
	return c;
}

struct ht_object object(bool is_main, size_t code_mib, uint32_t extra_flags = 0)
{
	struct ht_object o;

	memset(&o, 0, sizeof(o));
	o.name = is_main ? "" : "/lib/libx.so";
	o.is_main = is_main;
	o.nseg = 2;
	o.segs[0] = { 0x400000, 0x401000, PF_R };
	o.segs[1] = { 0x600000, 0x600000 + (code_mib << 20), PF_R | PF_X | extra_flags };
	return o;
}

} // namespace

TEST_CASE("the policy file sets the preload's options", "[policy]")
{
	static struct ht_conf c = parsed("mode = thp\nmatch = libLLVM\nignore = libc\\.so\nbudget_ms = 7\n"
					 "page_cache = 0\nverbose = 1\nprograms = ^/usr/bin/\n"
					 "min_code = 16M\nasync = 1\n");
	struct ht_options o;
	struct ht_policy p;

	ht_options_init(&o);
	ht_policy_init(&p);
	ht_policy_from_conf(&c, &o, &p);
	CHECK(o.mode == HT_MODE_THP);
	CHECK(std::string(o.match) == "libLLVM");
	CHECK(std::string(o.ignore) == "libc\\.so");
	CHECK(o.budget_ms == 7);
	CHECK(o.page_cache == 0);
	CHECK(o.verbose == 1);
	CHECK(std::string(p.programs) == "^/usr/bin/");
	CHECK(p.min_code == 16u << 20);
	CHECK(p.async == 1);
}

TEST_CASE("keys the file does not give leave the defaults alone", "[policy]")
{
	static struct ht_conf c = parsed("# nothing for the preload\npool = 8\n");
	struct ht_options o, def;
	struct ht_policy p;

	ht_options_init(&o);
	ht_options_init(&def);
	ht_policy_init(&p);
	ht_policy_from_conf(&c, &o, &p);
	CHECK(o.mode == def.mode);
	CHECK(o.match == nullptr);
	CHECK(o.page_cache == def.page_cache);
	CHECK(o.big_libraries == def.big_libraries);
	CHECK(p.programs == nullptr);
	CHECK(p.min_code == HT_POLICY_MIN_CODE_DEFAULT);
	CHECK(p.async == 0);
}

TEST_CASE("the environment overrides the file; bad values are noted and ignored", "[policy]")
{
	static struct ht_conf c = parsed("programs = node\nmin_code = 16M\nasync = 1\n");
	struct ht_options o;
	struct ht_policy p;
	char notes[256] = "";

	ht_options_init(&o);
	ht_policy_init(&p);
	ht_policy_from_conf(&c, &o, &p);
	fake_env = { { "HUGETEXT_PROGRAMS", "" }, { "HUGETEXT_MIN_CODE", "1M" },
		     { "HUGETEXT_ASYNC", "0" } };
	ht_policy_env(&p, fake_get, notes, sizeof(notes));
	CHECK(p.programs == nullptr);
	CHECK(p.min_code == 1u << 20);
	CHECK(p.async == 0);
	CHECK(notes[0] == '\0');

	fake_env = { { "HUGETEXT_MIN_CODE", "lots" }, { "HUGETEXT_ASYNC", "maybe" } };
	ht_policy_env(&p, fake_get, notes, sizeof(notes));
	CHECK(p.min_code == 1u << 20);
	CHECK(p.async == 0);
	CHECK(std::string(notes).find("HUGETEXT_MIN_CODE") != std::string::npos);
	CHECK(std::string(notes).find("HUGETEXT_ASYNC") != std::string::npos);
}

TEST_CASE("code bytes count only executable segments", "[policy]")
{
	struct ht_object o = object(true, 6);

	CHECK(ht_object_code_bytes(&o) == 6u << 20);
}

// The preload's settings before the environment: min_code from the policy, big libraries on auto.
static struct ht_options preload_opts(int big = HT_BIG_LIBRARIES_AUTO, const char *match = nullptr)
{
	struct ht_options o;

	ht_options_init(&o);
	o.min_code = HT_POLICY_MIN_CODE_DEFAULT;
	o.big_libraries = big;
	o.match = match;
	return o;
}

TEST_CASE("a move is worth trying only for an object with enough code", "[policy]")
{
	struct ht_object small_main = object(true, 3), big_main = object(true, 8);
	struct ht_object big_lib = object(false, 40), mid_lib = object(false, 3);
	struct ht_object flagged_lib = object(false, 8, HT_PF_LINUX_HUGETLB);
	struct ht_options o = preload_opts(HT_BIG_LIBRARIES_OFF);

	CHECK_FALSE(ht_policy_worth(&o, &small_main, 1));
	CHECK(ht_policy_worth(&o, &big_main, 1));

	struct ht_object two[] = { small_main, big_lib };
	CHECK_FALSE(ht_policy_worth(&o, two, 2)); // off, no pattern: the library is not a candidate
	o.match = "libx";
	CHECK(ht_policy_worth(&o, two, 2)); // a pattern may name it: the full run tests the name
	o = preload_opts();
	CHECK(ht_policy_worth(&o, two, 2)); // auto: a big library is a candidate by itself

	struct ht_object mid[] = { small_main, mid_lib };
	CHECK_FALSE(ht_policy_worth(&o, mid, 2)); // under min_code: nothing to do, nothing read
	o.min_code = 2u << 20;
	CHECK(ht_policy_worth(&o, mid, 2));

	o = preload_opts(HT_BIG_LIBRARIES_OFF);
	struct ht_object flagged[] = { small_main, flagged_lib };
	CHECK(ht_policy_worth(&o, flagged, 2));

	o.min_code = 0; // still: less than one 2 MiB page never moves
	struct ht_object tiny = object(true, 1);
	CHECK_FALSE(ht_policy_worth(&o, &tiny, 1));
	CHECK(ht_policy_worth(&o, &small_main, 1));
	CHECK_FALSE(ht_policy_worth(&o, nullptr, 0));
}

TEST_CASE("big libraries are taken whole unless a match pattern names the libraries", "[policy]")
{
	struct ht_object small_main = object(true, 1), big_lib = object(false, 40);
	struct ht_object mid_lib = object(false, 3), tiny_lib = object(false, 1);
	struct ht_object flagged_mid = object(false, 3, HT_PF_LINUX_HUGETLB);
	struct ht_options o = preload_opts();

	// auto, no pattern: the program and every library with min_code of code.
	CHECK(ht_policy_take(&o, &small_main, 0) == HT_TAKE_WHOLE);
	CHECK(ht_policy_take(&o, &big_lib, 0) == HT_TAKE_WHOLE);
	CHECK(ht_policy_take(&o, &mid_lib, 0) == HT_TAKE_NONE);
	CHECK(ht_policy_take(&o, &flagged_mid, 0) == HT_TAKE_FLAGGED);
	CHECK(ht_policy_take(&o, &mid_lib, 1) == HT_TAKE_WHOLE);

	// auto with a pattern: the pattern alone names the libraries, as before.
	o.match = "libLLVM";
	CHECK(ht_policy_take(&o, &big_lib, 0) == HT_TAKE_NONE);
	CHECK(ht_policy_take(&o, &big_lib, 1) == HT_TAKE_WHOLE);

	// on: big libraries and the named ones.
	o.big_libraries = HT_BIG_LIBRARIES_ON;
	CHECK(ht_policy_take(&o, &big_lib, 0) == HT_TAKE_WHOLE);
	CHECK(ht_policy_take(&o, &mid_lib, 0) == HT_TAKE_NONE);

	// off: only what the pattern names (today's rule without a pattern: none).
	o = preload_opts(HT_BIG_LIBRARIES_OFF);
	CHECK(ht_policy_take(&o, &big_lib, 0) == HT_TAKE_NONE);
	CHECK(ht_policy_take(&o, &small_main, 0) == HT_TAKE_WHOLE);
	CHECK(ht_policy_take(&o, &flagged_mid, 0) == HT_TAKE_FLAGGED);

	// The bar is min_code, and never under one 2 MiB page.
	o = preload_opts();
	o.min_code = 2u << 20;
	CHECK(ht_policy_take(&o, &mid_lib, 0) == HT_TAKE_WHOLE);
	o.min_code = 0;
	CHECK(ht_policy_take(&o, &tiny_lib, 0) == HT_TAKE_NONE);
	CHECK(ht_object_big_enough(&o, &mid_lib));
	CHECK_FALSE(ht_object_big_enough(&o, &tiny_lib));
}

TEST_CASE("big_libraries from the file, under the environment", "[policy]")
{
	static struct ht_conf c = parsed("big_libraries = 0\n");
	struct ht_options o = preload_opts();
	struct ht_policy p;
	char notes[256] = "";

	ht_policy_init(&p);
	ht_policy_from_conf(&c, &o, &p);
	CHECK(o.big_libraries == HT_BIG_LIBRARIES_OFF);
	fake_env = { { "HUGETEXT_BIG_LIBRARIES", "auto" } };
	ht_options_env(&o, fake_get, notes, sizeof(notes));
	CHECK(o.big_libraries == HT_BIG_LIBRARIES_AUTO);
	CHECK(notes[0] == '\0');
}

TEST_CASE("before main() auto copies only to repair a warmed file, never a mostly cold one", "[policy]")
{
	const size_t mib = 1u << 20;

	CHECK(ht_policy_repair_now(146 * mib, 2 * mib)); // a warmed libLLVM that lost a page
	CHECK(ht_policy_repair_now(26 * mib, 26 * mib));
	CHECK_FALSE(ht_policy_repair_now(10 * mib, 42 * mib)); // readahead's few folios
	CHECK_FALSE(ht_policy_repair_now(0, 2 * mib));      // nothing kept: nothing warmed
	CHECK_FALSE(ht_policy_repair_now(0, 0));
}

TEST_CASE("the preload's cheap look at the policy file: which text may set a key", "[policy]")
{
	auto may = [](const std::string &t) { return ht_conf_may_set(t.data(), t.size(), "min_code"); };

	CHECK_FALSE(may(""));
	CHECK_FALSE(may("# min_code = 2M\n"));
	CHECK_FALSE(may("  \t#min_code=2M\n\n#\n"));
	CHECK_FALSE(may("mode = auto\ncopy = never\n"));
	CHECK_FALSE(may("min_cod\ne = 2M\n")); // the key cut by a line end
	CHECK(may("min_code = 2M\n"));
	CHECK(may("  min_code=2M"));           // no final newline
	CHECK(may("mode = auto\n\tmin_code = 8M # more, but named\n"));
	CHECK(may("programs = min_code\n"));    // any mention outside a comment: the full path decides
	CHECK(may("min_code = nonsense\n"));    // conf.c refuses the file: still the full path's to say
	// Whatever conf.c takes as min_code, the look sees: each line of a
	// fuzzed set, parsed, against the look.
	for (const char *line : { "min_code = 1M", " min_code =3M ", "min_code=2M#x", "min_code = 2M\r" }) {
		static struct ht_conf c;
		std::string t = std::string(line) + "\n";
		char err[128];
		INFO(line);
		if (ht_conf_parse(t.data(), t.size(), &c, err, sizeof(err)) == 0 && (c.set & HT_CONF_MIN_CODE))
			CHECK(may(t));
	}
	// Bytes past the length are never read: a key only after it is not seen.
	std::string t = "mode = auto\nmin_code = 2M\n";
	CHECK_FALSE(ht_conf_may_set(t.data(), 12, "min_code"));
	CHECK_FALSE(ht_conf_may_set(t.data(), 12 + 7, "min_code"));
}
