// Description: `hugetext pool` without changing the system: the status it
// shows, the shared text cache it lists and clears (and what it never
// touches), the refusal of --set and --mount without root, usage errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "tooltest.hpp"

namespace {

std::vector<std::string> hugetlbfs_mounts()
{
	std::vector<std::string> v;
	std::ifstream f("/proc/self/mounts");
	std::string dev, dir, type, rest;
	while (f >> dev >> dir >> type && std::getline(f, rest))
		if (type == "hugetlbfs")
			v.push_back(dir);
	return v;
}

std::string sysfs_trimmed(const std::string &path)
{
	std::string s = read_file(path);
	while (!s.empty() && s.back() == '\n')
		s.pop_back();
	return s;
}

void age(const std::string &path, int seconds)
{
	struct timeval tv[2];
	gettimeofday(&tv[0], nullptr);
	tv[0].tv_sec -= seconds;
	tv[1] = tv[0];
	utimes(path.c_str(), tv);
}

} // namespace

TEST_CASE("pool shows the pools, THP's settings and the hugetlbfs mounts", "[pool]")
{
	std::vector<std::string> before = hugetlbfs_mounts();
	run_result r = tool({ "pool" });
	std::vector<std::string> after = hugetlbfs_mounts();
	REQUIRE(r.status == 0);
	CHECK(r.out.find("Explicit huge page pools:\n  size          total      free  reserved   surplus\n") == 0);
	if (file_exists("/sys/kernel/mm/hugepages/hugepages-2048kB"))
		CHECK(r.out.find("\n  2.0 MiB  ") != std::string::npos);
	if (file_exists("/sys/kernel/mm/hugepages/hugepages-1048576kB"))
		CHECK(r.out.find("\n  1.0 GiB  ") != std::string::npos);
	CHECK(r.out.find("  (default)\n") != std::string::npos);

	std::string enabled = sysfs_trimmed("/sys/kernel/mm/transparent_hugepage/enabled");
	std::string defrag = sysfs_trimmed("/sys/kernel/mm/transparent_hugepage/defrag");
	auto choice = [](const std::string &s) { return s.substr(s.find('[') + 1, s.find(']') - s.find('[') - 1); };
	CHECK(r.out.find("Transparent huge pages: enabled [" + choice(enabled) + "], defrag [" + choice(defrag) + "]\n") !=
	      std::string::npos);

	CHECK(r.out.find("hugetlbfs mounts:\n") != std::string::npos);
	// Other tests may mount and unmount meanwhile: the mounts there before and after must show.
	for (auto &m : before)
		if (std::find(after.begin(), after.end(), m) != after.end())
			CHECK(r.out.find("\n  " + m + "  (") != std::string::npos);
	if (before.empty() && after.empty())
		CHECK(r.out.find("hugetlbfs mounts:\n  none\n") != std::string::npos);
}

TEST_CASE("cache-clear removes entries and dead fills, and nothing else", "[pool][cache]")
{
	temp_dir d("pool-cache");
	temp_dir outside("pool-cache-outside");
	std::string cache = d / "hugetext-test";
	REQUIRE(mkdir(cache.c_str(), 0700) == 0);
	std::string live = std::to_string(getpid());
	write_file(cache + "/b-aa-0-200000-1ff000.text", std::string(100, 'x'), 0600);
	write_file(cache + "/b-bb-0-200000-1ff000.text.tmp.99999999", std::string(10, 'x'), 0600);
	write_file(cache + "/b-cc-0-200000-1ff000.text.tmp." + live, "fill", 0600);
	write_file(cache + "/b-cc-0-200000-1ff000.text.tmp." + live + ".link", "link", 0600);
	write_file(cache + "/old.text.tmp.nopid", "o", 0600);
	age(cache + "/old.text.tmp.nopid", 7200);
	write_file(cache + "/new.text.tmp.nopid", "n", 0600);
	write_file(cache + "/notes.txt", "keep me", 0600);
	write_file(outside / "precious.text", "precious", 0600);
	REQUIRE(symlink((outside / "precious.text").c_str(), (cache + "/evil.text").c_str()) == 0);
	REQUIRE(mkdir((cache + "/sub.text").c_str(), 0700) == 0);
	write_file(cache + "/sub.text/inner.text", "inner", 0600);
	std::vector<std::string> env = { "HUGETEXT_SHARE_DIR=" + cache };

	run_result l = tool({ "pool", "--cache-list" }, env);
	CHECK(l.status == 0);
	CHECK(l.out.find(cache + ": 9 files\n") == 0);
	CHECK(l.out.find("note:") == std::string::npos); // 0700 and ours: trusted
	CHECK(l.out.find("  kind          bytes  owner       modified             name\n") != std::string::npos);
	CHECK(l.out.find("  entry           100  ") != std::string::npos);
	CHECK(l.out.find("  fill             10  ") != std::string::npos);
	CHECK(l.out.find(" evil.text\n") != std::string::npos);
	CHECK(l.out.find("  other  ") != std::string::npos);

	run_result c = tool({ "pool", "--cache-clear" }, env);
	CHECK(c.status == 0);
	CHECK(c.out == cache + ": removed 1 entry and 2 stale fills (111 bytes); 3 fills in progress kept\n");

	CHECK_FALSE(file_exists(cache + "/b-aa-0-200000-1ff000.text"));
	CHECK_FALSE(file_exists(cache + "/b-bb-0-200000-1ff000.text.tmp.99999999"));
	CHECK_FALSE(file_exists(cache + "/old.text.tmp.nopid"));
	CHECK(file_exists(cache + "/b-cc-0-200000-1ff000.text.tmp." + live));
	CHECK(file_exists(cache + "/b-cc-0-200000-1ff000.text.tmp." + live + ".link"));
	CHECK(file_exists(cache + "/new.text.tmp.nopid"));
	CHECK(read_file(cache + "/notes.txt") == "keep me");
	struct stat st;
	CHECK(lstat((cache + "/evil.text").c_str(), &st) == 0);
	CHECK(S_ISLNK(st.st_mode));
	CHECK(read_file(outside / "precious.text") == "precious");
	CHECK(read_file(cache + "/sub.text/inner.text") == "inner");
}

TEST_CASE("a cache directory reached through a symbolic link is left alone", "[pool][cache]")
{
	temp_dir d("pool-cache-link");
	std::string real_dir = d / "real";
	REQUIRE(mkdir(real_dir.c_str(), 0700) == 0);
	write_file(real_dir + "/x.text", "x", 0600);
	REQUIRE(symlink(real_dir.c_str(), (d / "link").c_str()) == 0);
	run_result r = tool({ "pool", "--cache-clear" }, { "HUGETEXT_SHARE_DIR=" + d / "link" });
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext pool: " + d / "link" +
			       ": cannot open the cache directory: not a directory (or a symbolic link), left alone\n");
	CHECK(file_exists(real_dir + "/x.text"));
}

TEST_CASE("a missing cache is reported, not an error; an untrusted one gets a note", "[pool][cache]")
{
	temp_dir d("pool-cache-misc");
	run_result r = tool({ "pool", "--cache-list", "--cache-clear" }, { "HUGETEXT_SHARE_DIR=" + d / "none" });
	CHECK(r.status == 0);
	CHECK(r.out == d / "none" + ": no cache (the directory does not exist)\n");

	chmod(d.path.c_str(), 0777);
	r = tool({ "pool", "--cache-list" }, { "HUGETEXT_SHARE_DIR=" + d.path });
	CHECK(r.status == 0);
	CHECK(r.out == d.path + ": 0 files\n  note: the library does not use this directory: "
			       "cache directory is group- or world-writable\n");
}

TEST_CASE("pool's usage errors exit 2", "[pool][usage]")
{
	struct { std::vector<std::string> args; const char *msg; } cases[] = {
		{ { "--set", "many" }, "--set 'many': not a number of pages" },
		{ { "--set", "-1" }, "--set '-1'" },
		{ { "--set", "1", "--size", "2X" }, "--size '2X': not a size such as 2M or 1G" },
		{ { "--size", "2M" }, "--size goes with --set or --mount" },
		{ { "extra" }, "unexpected argument 'extra'" },
		{ { "--mount", "relative/dir" }, "--mount relative/dir: give an absolute path" },
		{ { "--bogus" }, "unrecognized option" },
	};
	for (auto &c : cases) {
		std::vector<std::string> args{ "pool" };
		args.insert(args.end(), c.args.begin(), c.args.end());
		run_result r = tool(args);
		INFO(r.err);
		CHECK(r.status == 2);
		CHECK(r.err.find(c.msg) != std::string::npos);
	}
	run_result r = tool({ "pool", "--set", "1", "--size", "3M" });
	CHECK(r.status == 1);
	CHECK(r.err.find("--size 3M: the kernel has no pool of that page size") != std::string::npos);
}

TEST_CASE("without root, --set and --mount fail with a clear message", "[pool][root]")
{
	temp_dir d("pool-nonroot");
	chmod(d.path.c_str(), 0777);
	std::string exe = d / "hugetext", mnt = d / "mnt";
	write_file(exe, read_file(tool_path()), 0755);
	REQUIRE(mkdir(mnt.c_str(), 0777) == 0);
	chmod(mnt.c_str(), 0777);
	std::vector<std::string> as_user;
	if (geteuid() == 0) {
		if (!have_program("setpriv")) {
			WARN("running as root without setpriv: the non-root refusal is not tested");
			return;
		}
		as_user = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--" };
	}
	// The current size: even a wrongly accepted write would change nothing.
	std::string now = read_file("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
	while (!now.empty() && now.back() == '\n')
		now.pop_back();
	REQUIRE(!now.empty());

	std::vector<std::string> set = as_user;
	set.insert(set.end(), { exe, "pool", "--set", now, "--size", "2M" });
	run_result r = run_cmd(set);
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext pool: /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages: "
		       "Permission denied: changing the pool needs root\n");

	std::vector<std::string> mount = as_user;
	mount.insert(mount.end(), { exe, "pool", "--mount", mnt });
	r = run_cmd(mount);
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext pool: " + mnt + ": cannot mount hugetlbfs: Operation not permitted: "
		       "mounting needs root (CAP_SYS_ADMIN)\n");
	for (auto &m : hugetlbfs_mounts())
		CHECK(m != mnt);
}
