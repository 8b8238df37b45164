// Description: the shared text cache on hugetlbfs: hits, one copy for many
// processes, and refusal of every entry another user could have written.
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.hpp"
#include "sysguard.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (getuid() != 0)
		return "mounting hugetlbfs and changing the pool need root";
	if (!file_exists("/sys/kernel/mm/hugepages/hugepages-2048kB"))
		return "the kernel has no 2 MiB hugetlb pool";
	return nullptr;
}

static const std::string preload() { return build_path("lib/libhugetext-preload.so"); }
// Non-PIE: loaded at the same address in every process, so it can share.
static const std::string prog() { return build_path("tests/bigtext-nopie"); }

struct cache_env {
	pool_guard pool{ 64 };
	hugetlbfs_guard fs;
	std::string dir;

	cache_env()
	{
		dir = fs.dir() + "/cache";
		mkdir(dir.c_str(), 0700);
	}
	std::vector<std::string> env(const std::string &report) const
	{
		return { "LD_PRELOAD=" + preload(), "HUGETEXT_SHARE=1", "HUGETEXT_SHARE_DIR=" + dir,
			 "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=auto" };
	}
	// The one complete entry the cache holds.
	std::string entry() const
	{
		return cache_entry(dir);
	}
};

static report_line run_once(const cache_env &c, const std::string &name, run_result *out = nullptr)
{
	std::string report = temp_path(name);
	run_result r = run_cmd({ prog() }, c.env(report));
	run_result plain = run_cmd({ prog() });
	INFO(r.err);
	CHECK(r.status == 0);
	CHECK(r.err.empty());
	CHECK(r.out == plain.out);
	if (out)
		*out = r;
	auto ok = ok_lines(read_report(report));
	REQUIRE(ok.size() == 1);
	return ok[0];
}

TEST_CASE("the first process fills the cache, the next ones hit it", "[share]")
{
	cache_env c;
	REQUIRE(c.pool.ok());
	REQUIRE(c.fs.ok());

	report_line first = run_once(c, "miss.json");
	CHECK(first["cache"] == "miss");
	CHECK(first["mode"] == "explicit");
	CHECK(first["huge_bytes"] == first["bytes"]);
	std::string entry = c.entry();
	REQUIRE(!entry.empty());
	struct stat st;
	REQUIRE(stat(entry.c_str(), &st) == 0);
	CHECK((unsigned long)st.st_size == std::stoul(first["bytes"]));
	CHECK((st.st_mode & 022) == 0);

	report_line second = run_once(c, "hit.json");
	CHECK(second["cache"] == "hit");
	CHECK(second["huge_bytes"] == second["bytes"]);
	// No leftovers: the per-process link is gone, no temporary file stays.
	DIR *d = opendir(c.dir.c_str());
	int files = 0;
	while (struct dirent *e = readdir(d))
		files += e->d_name[0] != '.';
	closedir(d);
	CHECK(files == 1);
}

// Huge page bytes of the code mapping in another process: {shared, private}.
static std::pair<unsigned long, unsigned long> hugetlb_of(pid_t pid)
{
	std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/smaps"));
	std::string line;
	unsigned long lo, hi, kb, shared = 0, priv = 0;
	bool in_code = false;
	while (std::getline(in, line)) {
		if (sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2)
			in_code = lo <= 0x800000 && hi > 0x800000;
		else if (in_code && sscanf(line.c_str(), "Shared_Hugetlb: %lu kB", &kb) == 1)
			shared += kb << 10;
		else if (in_code && sscanf(line.c_str(), "Private_Hugetlb: %lu kB", &kb) == 1)
			priv += kb << 10;
	}
	return { shared, priv };
}

TEST_CASE("four processes running at once hold one copy of the code", "[share]")
{
	cache_env c;
	REQUIRE(c.pool.ok());
	REQUIRE(c.fs.ok());
	report_line first = run_once(c, "warm.json");
	unsigned long bytes = std::stoul(first["bytes"]);
	long in_use_before = c.pool.total_pages() - c.pool.free_pages();

	std::vector<pid_t> pids;
	std::vector<std::string> outs;
	for (int i = 0; i < 4; i++) {
		std::string out = temp_path("hold" + std::to_string(i));
		std::vector<std::string> args = { "env" };
		for (auto &e : c.env(temp_path("hold.json")))
			args.push_back(e);
		args.insert(args.end(), { prog(), "hold", "3000" });
		std::vector<char *> av;
		for (auto &a : args)
			av.push_back(const_cast<char *>(a.c_str()));
		av.push_back(nullptr);
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		pid_t pid;
		REQUIRE(posix_spawnp(&pid, "env", &fa, nullptr, av.data(), environ) == 0);
		posix_spawn_file_actions_destroy(&fa);
		pids.push_back(pid);
		outs.push_back(out);
	}
	// Wait until all four have moved their code and said so.
	for (int tries = 0; tries < 300; tries++) {
		int ready = 0;
		for (auto &o : outs)
			ready += read_file(o).find("ready") != std::string::npos;
		if (ready == 4)
			break;
		usleep(10000);
	}
	long in_use_during = c.pool.total_pages() - c.pool.free_pages();
	for (pid_t p : pids) {
		auto sp = hugetlb_of(p);
		INFO("pid " << p);
		CHECK(sp.first == bytes);  // every page mapped, and shared
		CHECK(sp.second == 0);     // none private
	}
	for (pid_t p : pids) {
		int st;
		waitpid(p, &st, 0);
		CHECK(WIFEXITED(st));
		CHECK(WEXITSTATUS(st) == 0);
	}
	for (auto &o : outs)
		CHECK(read_file(o).find("ready") != std::string::npos);
	INFO("one copy is " << (bytes >> 21) << " pages; in use before " << in_use_before
	     << ", during " << in_use_during);
	// Four private copies would take 4 * 19 pages more; the shared file takes
	// none.  The pool is machine-wide: allow for others, not for one more copy.
	CHECK(in_use_during - in_use_before < (long)(bytes >> 21));
	CHECK((bytes >> 21) >= 18);
}

static void refused(const cache_env &c, const std::string &name, const std::string &why)
{
	report_line l = run_once(c, name);
	CHECK(l["cache"] == "refused");
	CHECK(l["cache_error"].find(why) != std::string::npos);
	// The program still gets a private copy.
	CHECK(l["status"] == "ok");
}

TEST_CASE("a cache entry owned by another user is refused", "[share][security]")
{
	cache_env c;
	REQUIRE(c.fs.ok());
	run_once(c, "fill.json");
	REQUIRE(chown(c.entry().c_str(), 65534, 65534) == 0);
	refused(c, "other.json", "another user");
}

TEST_CASE("a cache directory owned by another user is refused", "[share][security]")
{
	cache_env c;
	REQUIRE(c.fs.ok());
	REQUIRE(chown(c.dir.c_str(), 65534, 65534) == 0);
	refused(c, "otherdir.json", "another user");
	CHECK(c.entry().empty());
}

TEST_CASE("a group-writable cache directory or entry is refused", "[share][security]")
{
	cache_env c;
	REQUIRE(c.fs.ok());
	run_once(c, "fill.json");
	REQUIRE(chmod(c.entry().c_str(), 0620) == 0);
	refused(c, "gw-entry.json", "group- or world-writable");
	REQUIRE(chmod(c.entry().c_str(), 0600) == 0);
	REQUIRE(chmod(c.dir.c_str(), 0770) == 0);
	refused(c, "gw-dir.json", "group- or world-writable");
}

TEST_CASE("a truncated cache entry is refused", "[share]")
{
	cache_env c;
	REQUIRE(c.fs.ok());
	run_once(c, "fill.json");
	struct stat st;
	REQUIRE(stat(c.entry().c_str(), &st) == 0);
	REQUIRE(truncate(c.entry().c_str(), st.st_size - (2 << 20)) == 0);
	refused(c, "trunc.json", "wrong size");
}

TEST_CASE("a stale or damaged cache entry is refused", "[share]")
{
	cache_env c;
	REQUIRE(c.fs.ok());
	run_once(c, "fill.json");
	// Rewrite the entry in place, as if the program had changed under the same build-id.
	int fd = open(c.entry().c_str(), O_RDWR);
	REQUIRE(fd >= 0);
	struct stat st;
	fstat(fd, &st);
	void *p = mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE(p != MAP_FAILED);
	// Zeros, as a fill that never happened leaves them.
	std::memset(p, 0, st.st_size);
	munmap(p, st.st_size);
	refused(c, "stale.json", "differs from the code");
}

TEST_CASE("an entry damaged only in its first function is refused", "[share]")
{
	cache_env c;
	REQUIRE(c.fs.ok());
	run_once(c, "fill.json");
	int fd = open(c.entry().c_str(), O_RDWR);
	REQUIRE(fd >= 0);
	void *p = mmap(nullptr, 2 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE(p != MAP_FAILED);
	static_cast<unsigned char *>(p)[0] ^= 0xff;
	munmap(p, 2 << 20);
	refused(c, "first.json", "differs from the code");
}

TEST_CASE("an entry for another build of the program is never used", "[share]")
{
	cache_env c;
	REQUIRE(c.fs.ok());
	// A copy of the program without a build-id: its key is its file identity.
	std::string copy = temp_path("nobuildid");
	REQUIRE(run_cmd({ "objcopy", "--remove-section=.note.gnu.build-id", prog(), copy }).status == 0);
	small_page_cache(copy);
	std::string report = temp_path("nb1.json");
	REQUIRE(run_cmd({ copy }, c.env(report)).status == 0);
	auto l1 = ok_lines(read_report(report));
	REQUIRE(l1.size() == 1);
	CHECK(l1[0]["cache"] == "miss");
	std::string first_entry = c.entry();
	CHECK(first_entry.find("/f-") != std::string::npos);
	// "Replace" the binary: same bytes, new modification time.
	REQUIRE(run_cmd({ "touch", "-d", "2001-01-01", copy }).status == 0);
	report = temp_path("nb2.json");
	REQUIRE(run_cmd({ copy }, c.env(report)).status == 0);
	auto l2 = ok_lines(read_report(report));
	REQUIRE(l2.size() == 1);
	CHECK(l2[0]["cache"] == "miss");
	unlink(copy.c_str());
}

TEST_CASE("another user cannot use or poison root's cache", "[share][security]")
{
	if (!have_program("runuser")) {
		WARN("runuser is missing: not checked");
		return;
	}
	cache_env c;
	REQUIRE(c.fs.ok());
	// The program and the preload where nobody can reach them: the build may
	// be in root's home.  Root fills the cache from the same file.
	world_dir w;
	std::string p = w.put(prog()), pre = w.put(preload());
	REQUIRE(!p.empty());
	REQUIRE(!pre.empty());
	small_page_cache(p);
	std::string fill = temp_path("fill.json");
	std::vector<std::string> env = c.env(fill);
	env[0] = "LD_PRELOAD=" + pre;
	run_result r = run_cmd({ p }, env);
	REQUIRE(r.status == 0);
	auto filled = ok_lines(read_report(fill));
	REQUIRE(filled.size() == 1);
	CHECK(filled[0]["cache"] == "miss");
	std::string before = read_file(c.entry()).substr(0, 4096);
	REQUIRE(!before.empty());
	chmod(c.fs.dir().c_str(), 0755);
	std::string report = "/tmp/hugetext-nobody-" + std::to_string(getpid()) + ".json";
	unlink(report.c_str());
	env = c.env(report);
	env[0] = "LD_PRELOAD=" + pre;
	std::vector<std::string> args = { "runuser", "-u", "nobody", "--", "env" };
	args.insert(args.end(), env.begin(), env.end());
	args.push_back(p);
	r = run_cmd(args);
	INFO(r.err);
	CHECK(r.status == 0);
	CHECK(r.out == run_cmd({ p }).out);
	auto lines = read_report(report);
	REQUIRE(lines.size() >= 1);
	for (auto &l : lines)
		if (l["status"] == "ok")
			CHECK(l["cache"] == "refused");
	CHECK(read_file(c.entry()).substr(0, 4096) == before);
	unlink(report.c_str());
}
