// Description: the pure parts of run and pool, and the shared helpers:
// LD_PRELOAD joining, sizes, THP settings, pool directories, cache names,
// the fields of the kernel's mount tables.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "mountfield.h"
#include "poolcmd.h"
#include "../../tools/run.h" /* not lib/run.h, the library's run state */
#include "tool.h"

namespace {

std::string join(const char *existing, const char *preload)
{
	char *s = hte_preload_join(existing, preload);
	REQUIRE(s);
	std::string out(s);
	std::free(s);
	return out;
}

int alive_set(long pid)
{
	return pid == 42;
}

} // namespace

TEST_CASE("the preload is added after an existing LD_PRELOAD, never twice", "[run]")
{
	CHECK(join(nullptr, "/l/p.so") == "/l/p.so");
	CHECK(join("", "/l/p.so") == "/l/p.so");
	CHECK(join(" : ", "/l/p.so") == "/l/p.so");
	CHECK(join("/a.so", "/l/p.so") == "/a.so:/l/p.so");
	CHECK(join("/a.so /b.so", "/l/p.so") == "/a.so /b.so:/l/p.so");
	CHECK(join("/a.so:/l/p.so", "/l/p.so") == "/a.so:/l/p.so");
	CHECK(join("/l/p.so /a.so", "/l/p.so") == "/l/p.so /a.so");
	// A longer name that starts with ours is another library.
	CHECK(join("/l/p.so.1", "/l/p.so") == "/l/p.so.1:/l/p.so");
}

TEST_CASE("sizes take K, M and G suffixes and refuse the rest", "[util]")
{
	uint64_t v = 0;
	CHECK(hte_parse_size("2M", &v) == 0);
	CHECK(v == 2u << 20);
	CHECK(hte_parse_size("1G", &v) == 0);
	CHECK(v == 1u << 30);
	CHECK(hte_parse_size("2048k", &v) == 0);
	CHECK(v == 2u << 20);
	CHECK(hte_parse_size("2MiB", &v) == 0);
	CHECK(v == 2u << 20);
	CHECK(hte_parse_size("4096", &v) == 0);
	CHECK(v == 4096);
	CHECK(hte_parse_size("", &v) == -1);
	CHECK(hte_parse_size("M", &v) == -1);
	CHECK(hte_parse_size("-2M", &v) == -1);
	CHECK(hte_parse_size("2X", &v) == -1);
	CHECK(hte_parse_size("2M ", &v) == -1);
	CHECK(hte_parse_size("99999999999999999999", &v) == -1);
	CHECK(hte_parse_size("17179869184G", &v) == -1);
}

TEST_CASE("human sizes have one decimal above a KiB", "[util]")
{
	char b[32];
	CHECK(std::string(hte_human(0, b, sizeof(b))) == "0 B");
	CHECK(std::string(hte_human(1023, b, sizeof(b))) == "1023 B");
	CHECK(std::string(hte_human(1024, b, sizeof(b))) == "1.0 KiB");
	CHECK(std::string(hte_human(0x2600000, b, sizeof(b))) == "38.0 MiB");
	CHECK(std::string(hte_human(1ULL << 30, b, sizeof(b))) == "1.0 GiB");
	CHECK(std::string(hte_human(~0ULL, b, sizeof(b))) == "16.0 EiB");
	CHECK(hte_percent(1, 0) == 100.0);
	CHECK(hte_percent(1, 4) == 25.0);
	// Rounded down to a tenth: short of all is never 100.0%.
	CHECK(hte_percent(0x2800000, 0x2804830) == 99.9);
	CHECK(hte_percent(9999, 10000) == 99.9);
	CHECK(hte_percent(10000, 10000) == 100.0);
	CHECK(hte_percent(2, 3) == 66.6);
}

TEST_CASE("JSON strings escape quotes, backslashes and control characters", "[util]")
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	hte_json_str(f, "a\"b\\c\nd\x01");
	std::fclose(f);
	CHECK(std::string(buf) == "\"a\\\"b\\\\c\\u000ad\\u0001\"");
	std::free(buf);
}

TEST_CASE("JSON strings are UTF-8 whatever bytes a path holds", "[util]")
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	// Latin-1 "café", a valid "é" and "€", a cut sequence, an overlong '/',
	// a surrogate, past U+10FFFF, DEL.
	hte_json_str(f, "caf\xe9/\xc3\xa9\xe2\x82\xac/\xe2\x82/\xc0\xaf/\xed\xa0\x80/\xf4\x90\x80\x80\x7f");
	std::fclose(f);
	CHECK(std::string(buf) == "\"caf\\ufffd/\xc3\xa9\xe2\x82\xac/\\ufffd\\ufffd/\\ufffd\\ufffd/"
				  "\\ufffd\\ufffd\\ufffd/\\ufffd\\ufffd\\ufffd\\ufffd\\u007f\"");
	std::free(buf);
}

TEST_CASE("THP's current choice is the bracketed word", "[pool]")
{
	char c[32];
	REQUIRE(hte_thp_choice("always [madvise] never\n", c, sizeof(c)) == 0);
	CHECK(std::string(c) == "madvise");
	REQUIRE(hte_thp_choice("always defer defer+madvise [madvise] never\n", c, sizeof(c)) == 0);
	CHECK(std::string(c) == "madvise");
	CHECK(hte_thp_choice("always madvise never\n", c, sizeof(c)) == -1);
	CHECK(hte_thp_choice("[]", c, sizeof(c)) == -1);
	CHECK(hte_thp_choice("[unterminated", c, sizeof(c)) == -1);
	CHECK(hte_thp_choice("[abcdef]", c, 4) == -1);
}

TEST_CASE("pool directories name their page size in kB", "[pool]")
{
	CHECK(hte_pool_dir_kb("hugepages-2048kB") == 2048);
	CHECK(hte_pool_dir_kb("hugepages-1048576kB") == 1048576);
	CHECK(hte_pool_dir_kb("hugepages-2048") == 0);
	CHECK(hte_pool_dir_kb("hugepages-kB") == 0);
	CHECK(hte_pool_dir_kb("nr_hugepages") == 0);
	CHECK(hte_pool_dir_kb(".") == 0);
}

TEST_CASE("cache files are entries, fills or not the cache's", "[pool]")
{
	CHECK(hte_cache_classify("b-0123abcd-0-200000-1ff000.text") == HTE_CACHE_ENTRY);
	CHECK(hte_cache_classify("f-fe00-1-2-3.000000004-0-200000-1ff000.text") == HTE_CACHE_ENTRY);
	CHECK(hte_cache_classify("b-01-0-200000-1ff000.text.tmp.1234") == HTE_CACHE_FILL);
	CHECK(hte_cache_classify("b-01-0-200000-1ff000.text.tmp.1234.link") == HTE_CACHE_FILL);
	CHECK(hte_cache_classify(".text") == HTE_CACHE_OTHER);
	CHECK(hte_cache_classify(".hidden.text") == HTE_CACHE_OTHER);
	CHECK(hte_cache_classify("notes.txt") == HTE_CACHE_OTHER);
	CHECK(hte_cache_classify("x.text.bak") == HTE_CACHE_OTHER);

	CHECK(hte_cache_fill_pid("a.text.tmp.1234") == 1234);
	CHECK(hte_cache_fill_pid("a.text.tmp.1234.link") == 1234);
	CHECK(hte_cache_fill_pid("a.text.tmp.") == -1);
	CHECK(hte_cache_fill_pid("a.text.tmp.12x") == -1);
	CHECK(hte_cache_fill_pid("a.text.tmp.0") == -1);
	CHECK(hte_cache_fill_pid("a.text.tmp.99999999999") == -1);
	CHECK(hte_cache_fill_pid("a.text") == -1);
}

TEST_CASE("a fill is stale when its process is gone, or after an hour without a PID", "[pool]")
{
	CHECK_FALSE(hte_cache_fill_stale("a.text.tmp.42", 1e6, alive_set));
	CHECK(hte_cache_fill_stale("a.text.tmp.43", 0, alive_set));
	CHECK(hte_cache_fill_stale("a.text.tmp.43.link", 0, alive_set));
	CHECK_FALSE(hte_cache_fill_stale("a.text.tmp.x", 3599, alive_set));
	CHECK(hte_cache_fill_stale("a.text.tmp.x", 3600, alive_set));
}

TEST_CASE("mount tables: fields split at spaces, the kernel's \\ooo escapes undone, too long refused", "[util]")
{
	const char line[] = "  36 35 98:0 /a\\040b  ";
	const char *p = line, *end = line + std::strlen(line), *f;
	size_t n;
	std::string fields;
	while (hte_mount_field(&p, end, &f, &n))
		fields += std::string(f, n) + "|";
	CHECK(fields == "36|35|98:0|/a\\040b|");
	CHECK(p == end);

	char out[16];
	const std::string esc = "/a\\040b\\011c\\134";
	REQUIRE(hte_mount_unescape(esc.data(), esc.size(), out, sizeof(out)) == 0);
	CHECK(std::string(out) == "/a b\tc\\");
	// Not an escape: a first digit past 3, a non-octal digit, one cut short by the field's end.
	const std::string raw = "\\400\\08\\04";
	REQUIRE(hte_mount_unescape(raw.data(), raw.size(), out, sizeof(out)) == 0);
	CHECK(std::string(out) == raw);
	// Exactly what fits (15 bytes and the NUL), one byte more, and no room at all.
	CHECK(hte_mount_unescape("abcdefghijklmno", 15, out, sizeof(out)) == 0);
	CHECK(std::string(out) == "abcdefghijklmno");
	CHECK(hte_mount_unescape("abcdefghijklmnop", 16, out, sizeof(out)) == -1);
	CHECK(hte_mount_unescape("", 0, out, 0) == -1);
	CHECK(hte_mount_unescape("", 0, out, 1) == 0);
	CHECK(out[0] == '\0');
}
