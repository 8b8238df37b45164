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

TEST_CASE("a move is worth trying only for an object with enough code", "[policy]")
{
	struct ht_policy p;
	struct ht_object small_main = object(true, 3), big_main = object(true, 8);
	struct ht_object big_lib = object(false, 40);
	struct ht_object flagged_lib = object(false, 8, HT_PF_LINUX_HUGETLB);

	ht_policy_init(&p);
	CHECK_FALSE(ht_policy_worth(&p, &small_main, 1, 0));
	CHECK(ht_policy_worth(&p, &big_main, 1, 0));

	struct ht_object two[] = { small_main, big_lib };
	CHECK_FALSE(ht_policy_worth(&p, two, 2, 0)); // no pattern: the library is not a candidate
	CHECK(ht_policy_worth(&p, two, 2, 1));

	struct ht_object flagged[] = { small_main, flagged_lib };
	CHECK(ht_policy_worth(&p, flagged, 2, 0));

	p.min_code = 0; // still: less than one 2 MiB page never moves
	struct ht_object tiny = object(true, 1);
	CHECK_FALSE(ht_policy_worth(&p, &tiny, 1, 0));
	CHECK(ht_policy_worth(&p, &small_main, 1, 0));
	CHECK_FALSE(ht_policy_worth(&p, nullptr, 0, 1));
}
