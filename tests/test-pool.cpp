// Description: parsers for the memory cgroup files the library reads before
// a THP copy (cgroup v1, v2 and hybrid layouts).
#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

extern "C" {
#include "pool.h"
}

static std::string memcg(const std::string &text, int *v1, int *rc = nullptr)
{
	char out[256];
	int err = ht_parse_memcg_path(text.data(), text.size(), out, sizeof(out), v1);
	if (rc)
		*rc = err;
	return err == 0 ? out : "";
}

TEST_CASE("the memory cgroup path comes from v2, or from v1's memory line in hybrid layouts", "[pool][memcg]")
{
	int v1 = -1, rc;

	CHECK(memcg("0::/user.slice/session-2.scope\n", &v1) == "/user.slice/session-2.scope");
	CHECK(v1 == 0);
	CHECK(memcg("9:name=systemd:/\n4:memory:/pod/abc\n1:cpu:/\n0::/\n", &v1) == "/pod/abc");
	CHECK(v1 == 1);
	CHECK(memcg("0::/\n3:cpu,memory,cpuacct:/x\n", &v1) == "/x");
	CHECK(v1 == 1);
	CHECK(memcg("4:memoryx:/nope\n0::/yes\n", &v1) == "/yes");
	CHECK(v1 == 0);
	memcg("1:cpu:/\n", &v1, &rc);
	CHECK(rc == -ENOENT);
	memcg("0::relative\n", &v1, &rc);
	CHECK(rc == -ENOENT);
	memcg("0::/" + std::string(300, 'a') + "\n", &v1, &rc);
	CHECK(rc == -ENAMETOOLONG);
	memcg("", &v1, &rc);
	CHECK(rc == -ENOENT);
}

TEST_CASE("memory limits read as numbers, with max meaning none", "[pool][memcg]")
{
	uint64_t v;

	CHECK(ht_parse_memory_max("max\n", 4, &v) == 0);
	CHECK(v == UINT64_MAX);
	CHECK(ht_parse_memory_max("25165824\n", 9, &v) == 0);
	CHECK(v == 25165824);
	CHECK(ht_parse_memory_max("maximum\n", 8, &v) == -EINVAL);
	CHECK(ht_parse_memory_max("-1\n", 3, &v) == -EINVAL);
}

TEST_CASE("memory.stat fields are found by their whole key", "[pool][memcg]")
{
	std::string stat = "anon 100\ninactive_anon 7\ninactive_file 4096\ntotal_inactive_file 8192\n";

	CHECK(ht_memory_stat_field(stat.data(), stat.size(), "inactive_file") == 4096);
	CHECK(ht_memory_stat_field(stat.data(), stat.size(), "total_inactive_file") == 8192);
	CHECK(ht_memory_stat_field(stat.data(), stat.size(), "anon") == 100);
	CHECK(ht_memory_stat_field(stat.data(), stat.size(), "file") == 0);
	CHECK(ht_memory_stat_field("x", 1, "inactive_file") == 0);
}
