// Description: `hugetext setup`: grows the pool, mounts hugetlbfs and warms
// as the policy file says, a second run changes nothing, --undo puts back
// the pool and the mount it made; bad policy files and non-root callers are
// refused with nothing changed.  Mounts happen in a private mount namespace
// where the kernel allows one; the pool is put back however a test ends.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tooltest.hpp"
#include "../robust/robust.hpp"

#include "hugetext.h"

extern "C" {
#include "setup.h"
}

#define POOL_2M "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

extern "C" const char *test_skip_reason(void)
{
	if (!file_exists(POOL_2M))
		return "the kernel has no 2 MiB hugetlb pool";
	return nullptr;
}

namespace {

long pool_2m()
{
	return std::stol(read_file(POOL_2M));
}

// Once per program, as root: the mounts the tests (and the commands they
// start) make stay in a namespace of their own.
bool private_mounts()
{
	static int ok = -1;
	if (ok < 0)
		ok = geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
		     mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
	return ok;
}

// The type of the mount at @dir, or "".
std::string mount_type(const std::string &dir)
{
	std::ifstream f("/proc/self/mounts");
	std::string dev, mnt, type, opts, rest, found;
	while (f >> dev >> mnt >> type >> opts && std::getline(f, rest))
		if (mnt == dir)
			found = type;
	return found;
}

// A policy file owned by root, mode 0644, and a state file path; removed at the end.
struct setup_files {
	std::string conf, state, dir;
	setup_files(const std::string &text)
		: conf(temp_path("setup.conf")), state(temp_path("setup.state")), dir(temp_path("setup-mnt"))
	{
		unlink(state.c_str());
		rmdir(dir.c_str());
		write_file(conf, text, 0644);
	}
	~setup_files()
	{
		// Whatever the test left: never a mount of ours outside it.
		if (mount_type(dir) == "hugetlbfs")
			umount2(dir.c_str(), MNT_DETACH);
		rmdir(dir.c_str());
		unlink(conf.c_str());
		unlink(state.c_str());
	}
	run_result run(std::vector<std::string> extra = {}) const
	{
		std::vector<std::string> args = { "setup", "--config", conf, "--state", state };
		args.insert(args.end(), extra.begin(), extra.end());
		return tool(args);
	}
};

bool need_root()
{
	if (geteuid() == 0)
		return true;
	WARN("not root: setup's changes are not tried");
	return false;
}

} // namespace

TEST_CASE("setup grows the pool and mounts, a second run changes nothing, --undo puts both back",
	  "[setup][root]")
{
	if (!need_root())
		return;
	if (!private_mounts())
		WARN("no private mount namespace: the test mounts in a temporary directory of the machine's");
	setting_guard guard(POOL_2M);
	long was = pool_2m(), want = was + 1;
	setup_files f("# test\npool = " + std::to_string(want) + "\nhugetlbfs = " + temp_path("setup-mnt") + "\n");

	run_result r = f.run({ "--dry-run" });
	CHECK(r.status == 0);
	CHECK(r.out == "pool: would grow to " + std::to_string(want) + " pages (now " + std::to_string(was) +
			       ")\nmount: would mount hugetlbfs with 2 MiB pages at " + f.dir +
			       "\nsetup: dry run: nothing changed\n");
	CHECK(pool_2m() == was);
	CHECK(!file_exists(f.dir));
	CHECK(!file_exists(f.state));

	r = f.run();
	if (r.status == 1 && r.err.find("memory too fragmented") != std::string::npos) {
		WARN("the kernel could not give one more 2 MiB page: " << r.err);
		f.run({ "--undo" });
		return;
	}
	REQUIRE(r.status == 0);
	CHECK(r.err == "");
	CHECK(r.out == "pool: " + std::to_string(want) + " pages (was " + std::to_string(was) + ")\nmount: " +
			       f.dir + " hugetlbfs with 2 MiB pages, mode 1777\nsetup: done\n");
	CHECK(pool_2m() == want);
	CHECK(mount_type(f.dir) == "hugetlbfs");
	struct stat st;
	REQUIRE(stat(f.dir.c_str(), &st) == 0);
	CHECK((st.st_mode & 07777) == 01777);
	CHECK(read_file(f.state) == "# hugetext setup: what it changed, for hugetext setup --undo\npool_was=" +
					    std::to_string(was) + "\nmounted=" + f.dir + "\nmade_dir=" + f.dir + "\n");

	r = f.run();
	CHECK(r.status == 0);
	CHECK(r.out == "pool: " + std::to_string(want) + " pages already (" + std::to_string(want) +
			       " asked)\nmount: " + f.dir + " already mounted\nsetup: nothing changed\n");
	CHECK(pool_2m() == want);

	r = f.run({ "--undo", "--dry-run" });
	CHECK(r.status == 0);
	CHECK(r.out == "pool: would put back " + std::to_string(was) + " pages (now " + std::to_string(want) +
			       ")\nmount: would unmount " + f.dir + "\nsetup: dry run: nothing changed\n");
	CHECK(mount_type(f.dir) == "hugetlbfs");

	r = f.run({ "--undo" });
	CHECK(r.status == 0);
	CHECK(r.out == "pool: " + std::to_string(was) + " pages (was " + std::to_string(want) + ")\nmount: " + f.dir +
			       " unmounted\nmount: " + f.dir + " removed\nsetup: done\n");
	CHECK(pool_2m() == was);
	CHECK(mount_type(f.dir) == "");
	CHECK(!file_exists(f.dir));
	CHECK(!file_exists(f.state));

	r = f.run({ "--undo" });
	CHECK(r.status == 0);
	CHECK(r.out == "setup --undo: nothing to undo (no " + f.state + ")\n");
}

TEST_CASE("setup leaves a larger pool and someone else's mount alone, and --undo does too", "[setup][root]")
{
	if (!need_root())
		return;
	if (!private_mounts()) {
		WARN("no private mount namespace: this case mounts nothing of the machine's");
		return;
	}
	setup_files f("pool = 0\n");
	REQUIRE(mkdir(f.dir.c_str(), 0755) == 0);
	REQUIRE(mount("hugetlbfs", f.dir.c_str(), "hugetlbfs", 0, "pagesize=2M") == 0);
	write_file(f.conf, "pool = 0\nhugetlbfs = " + f.dir + "\n", 0644);
	run_result r = f.run();
	CHECK(r.status == 0);
	CHECK(r.out == "pool: not asked for: left alone\nmount: " + f.dir + " already mounted\nsetup: nothing changed\n");
	CHECK(!file_exists(f.state));
	r = f.run({ "--undo" });
	CHECK(r.out == "setup --undo: nothing to undo (no " + f.state + ")\n");
	CHECK(mount_type(f.dir) == "hugetlbfs");

	// A pool larger than asked is someone's choice: never shrunk.
	long now = pool_2m();
	if (now > 0) {
		write_file(f.conf, "pool = 1\n", 0644);
		r = f.run();
		CHECK(r.out == "pool: " + std::to_string(now) + " pages already (1 asked)\nsetup: nothing changed\n");
		CHECK(pool_2m() == now);
	}
}

TEST_CASE("setup warms the listed programs and says how much went into 2 MiB pages", "[setup][root]")
{
	if (!need_root())
		return;
	std::string prog = real_path(build_path("tests/tools/tools-waiter"));
	setup_files f("warm = " + prog + "\n");
	run_result r = f.run();
	CHECK(r.status == 0);
	INFO(r.out);
	CHECK(r.out.rfind("pool: not asked for: left alone\nwarm: " + prog + " ", 0) == 0);
	CHECK(r.out.find(" in 2 MiB pages") != std::string::npos);
	// Warming changes no setting: nothing for --undo.
	CHECK(!file_exists(f.state));

	write_file(f.conf, "warm = /nonexistent/program\n", 0644);
	r = f.run();
	CHECK(r.status == 1);
	CHECK(r.err.find("/nonexistent/program") != std::string::npos);
}

TEST_CASE("a bad policy file is refused: exit 2, a clear message, nothing changed", "[setup][root]")
{
	if (!need_root())
		return;
	long was = pool_2m();
	const struct {
		std::string text;
		unsigned mode;
		std::string why;
	} cases[] = {
		{ "pool = 4\nhugetlbfs dev\n", 0644, ": line 2: not 'key = value'; nothing changed\n" },
		{ "pool = lots\n", 0644, ": line 1: pool: 'lots' is not a whole number; nothing changed\n" },
		{ "pool = 4\n", 0666, ": writable by others than root: ignored; nothing changed\n" },
	};
	for (auto &c : cases) {
		setup_files f("");
		write_file(f.conf, c.text, c.mode);
		chmod(f.conf.c_str(), c.mode);
		struct stat before, after;
		REQUIRE(stat(f.conf.c_str(), &before) == 0);
		run_result r = f.run();
		INFO(c.text);
		CHECK(r.status == 2);
		CHECK(r.out == "");
		CHECK(r.err == "hugetext setup: " + f.conf + c.why);
		CHECK(pool_2m() == was);
		CHECK(!file_exists(f.state));
		REQUIRE(stat(f.conf.c_str(), &after) == 0);
		CHECK(read_file(f.conf) == c.text);
		CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
	}
	setup_files f("");
	unlink(f.conf.c_str());
	run_result r = f.run();
	CHECK(r.status == 2);
	CHECK(r.err == "hugetext setup: " + f.conf + ": no such file\n");
}

TEST_CASE("setup needs root, and says so", "[setup]")
{
	std::vector<std::string> argv = { tool_path(), "setup", "--config", "/nonexistent" };
	if (geteuid() == 0) {
		if (!have_program("setpriv")) {
			WARN("no setpriv: cannot run setup as another user");
			return;
		}
		argv.insert(argv.begin(), { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups" });
	}
	long was = pool_2m();
	run_result r = run_cmd(argv);
	CHECK(r.status == 1);
	CHECK(r.err == "hugetext setup: needs root: it sizes the hugetlb pool and mounts hugetlbfs and tmpfs "
		       "(--dry-run shows what it would do)\n");
	CHECK(pool_2m() == was);
	argv.push_back("--undo");
	r = run_cmd(argv);
	CHECK(r.status == 1);
}

TEST_CASE("setup's usage errors exit 2", "[setup]")
{
	run_result r = tool({ "setup", "extra" });
	CHECK(r.status == 2);
	CHECK(r.err.find("hugetext setup: unexpected argument 'extra'") == 0);
	r = tool({ "setup", "--bogus" });
	CHECK(r.status == 2);
	r = tool({ "setup", "--help" });
	CHECK(r.status == 0);
	CHECK(r.out.find("usage: hugetext setup") == 0);
}

TEST_CASE("the state file: what setup changed, written and read back; anything else refused", "[setup][pure]")
{
	hte_setup_state s, back;
	hte_setup_state_init(&s);
	char buf[4096];
	CHECK(hte_setup_state_format(&s, buf, sizeof(buf)) > 0);
	CHECK(hte_setup_state_parse(buf, std::strlen(buf), &back) == 0);
	CHECK(back.pool_was == -1);
	CHECK(back.mounted[0] == '\0');

	s.pool_was = 12;
	std::snprintf(s.mounted, sizeof(s.mounted), "/mnt/huge");
	std::snprintf(s.made_dir, sizeof(s.made_dir), "/mnt/huge");
	int n = hte_setup_state_format(&s, buf, sizeof(buf));
	CHECK(std::string(buf, n) == "# hugetext setup: what it changed, for hugetext setup --undo\n"
				     "pool_was=12\nmounted=/mnt/huge\nmade_dir=/mnt/huge\n");
	REQUIRE(hte_setup_state_parse(buf, (size_t)n, &back) == 0);
	CHECK(back.pool_was == 12);
	CHECK(std::string(back.mounted) == "/mnt/huge");
	CHECK(std::string(back.made_dir) == "/mnt/huge");
	CHECK(hte_setup_state_format(&s, buf, 40) == -1);

	hte_setup_state_init(&s);
	std::snprintf(s.text_mounted, sizeof(s.text_mounted), "/run/hugetext/text");
	std::snprintf(s.text_made_dir, sizeof(s.text_made_dir), "/run/hugetext/text");
	n = hte_setup_state_format(&s, buf, sizeof(buf));
	CHECK(std::string(buf, n) == "# hugetext setup: what it changed, for hugetext setup --undo\n"
				     "text_mounted=/run/hugetext/text\ntext_made_dir=/run/hugetext/text\n");
	REQUIRE(hte_setup_state_parse(buf, (size_t)n, &back) == 0);
	CHECK(back.pool_was == -1);
	CHECK(back.mounted[0] == '\0');
	CHECK(std::string(back.text_mounted) == "/run/hugetext/text");
	CHECK(std::string(back.text_made_dir) == "/run/hugetext/text");

	for (const char *bad : { "pool_was=-1\n", "pool_was=\n", "pool_was=9999999999\n", "mounted=relative\n",
				 "other=1\n", "no equals\n", "text_mounted=run\n", "text_made_dir=\n" })
		CHECK(hte_setup_state_parse(bad, std::strlen(bad), &back) == -EINVAL);
}

TEST_CASE("unknown keys of a newer policy file are noted, not refused", "[setup][root]")
{
	if (!need_root())
		return;
	setup_files f("pool = 0\nfuture_key = 1\n");
	run_result r = f.run({ "--dry-run" });
	CHECK(r.status == 0);
	CHECK(r.err == "hugetext setup: " + f.conf + ": line 2: unknown key 'future_key', ignored\n");
	CHECK(r.out == "pool: not asked for: left alone\nsetup: dry run: nothing changed\n");
}

namespace {

const std::string text_dir = HT_TEXT_CACHE_DIR;

// A /run of our own for one test case (the machine's stays untouched).
struct private_run {
	bool ok;
	private_run() { ok = mount("test-run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") == 0; }
	~private_run()
	{
		if (ok)
			umount2("/run", MNT_DETACH);
	}
};

std::string text_opts()
{
	std::ifstream f("/proc/self/mounts");
	std::string dev, mnt, type, opts, rest, found;
	while (f >> dev >> mnt >> type >> opts && std::getline(f, rest))
		if (mnt == text_dir)
			found = opts;
	return found;
}

} // namespace

TEST_CASE("setup mounts the huge tmpfs cache, a second run changes nothing, --undo unmounts it",
	  "[setup][root]")
{
	if (!need_root())
		return;
	if (!private_mounts()) {
		WARN("no private mount namespace: the tmpfs cache is not mounted on the machine's /run");
		return;
	}
	private_run run;
	REQUIRE(run.ok);
	setup_files f("text_cache_size = 63M\n");
	const std::string pool_line = "pool: not asked for: left alone\n";

	run_result r = f.run({ "--dry-run" });
	CHECK(r.status == 0);
	CHECK(r.out == pool_line + "cache: would mount tmpfs (huge=within_size, 64.0 MiB, mode 1777) at " + text_dir +
			       "\nsetup: dry run: nothing changed\n");
	CHECK(mount_type(text_dir) == "");
	CHECK(!file_exists(text_dir));
	CHECK(!file_exists(f.state));

	r = f.run();
	INFO(r.err);
	REQUIRE(r.status == 0);
	CHECK(r.err == "");
	CHECK(r.out == pool_line + "cache: " + text_dir + " tmpfs huge=within_size, 64.0 MiB, mode 1777\nsetup: done\n");
	CHECK(mount_type(text_dir) == "tmpfs");
	std::string opts = text_opts();
	CHECK(opts.find("huge=within_size") != std::string::npos);
	CHECK(opts.find("size=65536k") != std::string::npos);
	CHECK(opts.find("nosuid") != std::string::npos);
	CHECK(opts.find("nodev") != std::string::npos);
	CHECK(opts.find("noexec") == std::string::npos);
	struct stat st;
	REQUIRE(stat(text_dir.c_str(), &st) == 0);
	CHECK((st.st_mode & 07777) == 01777);
	CHECK(st.st_uid == 0);
	CHECK(read_file(f.state) == "# hugetext setup: what it changed, for hugetext setup --undo\ntext_mounted=" +
					    text_dir + "\ntext_made_dir=" + text_dir + "\n");

	r = f.run();
	CHECK(r.status == 0);
	CHECK(r.out == pool_line + "cache: " + text_dir + " already mounted (64.0 MiB)\nsetup: nothing changed\n");
	CHECK(text_opts() == opts);

	// An entry as the library leaves one: --undo takes it with the mount.
	REQUIRE(mkdir((text_dir + "/hugetext-0").c_str(), 0700) == 0);
	write_file(text_dir + "/hugetext-0/b-00-0-200000-200000.text", "x", 0600);

	r = f.run({ "--undo", "--dry-run" });
	CHECK(r.status == 0);
	CHECK(r.out == "cache: would unmount " + text_dir + " (its entries go with it)\nsetup: dry run: nothing changed\n");
	CHECK(mount_type(text_dir) == "tmpfs");
	CHECK(file_exists(f.state));

	r = f.run({ "--undo" });
	CHECK(r.status == 0);
	CHECK(r.out == "cache: " + text_dir + " unmounted\ncache: " + text_dir + " removed\nsetup: done\n");
	CHECK(mount_type(text_dir) == "");
	CHECK(!file_exists(text_dir));
	CHECK(!file_exists(f.state));
}

TEST_CASE("text_cache_size absent or 0: setup mounts no cache, and --undo has nothing to undo", "[setup][root]")
{
	if (!need_root())
		return;
	if (!private_mounts()) {
		WARN("no private mount namespace: the tmpfs cache is not mounted on the machine's /run");
		return;
	}
	private_run run;
	REQUIRE(run.ok);
	for (const char *conf : { "", "text_cache_size = 0\n" }) {
		INFO("policy: '" << conf << "'");
		setup_files f(conf);
		run_result r = f.run();
		INFO(r.out << r.err);
		CHECK(r.status == 0);
		CHECK(r.out.find("mount") == std::string::npos);
		CHECK(r.out.find("setup: nothing changed") != std::string::npos);
		CHECK(mount_type(text_dir) == "");
		CHECK(!file_exists(text_dir));
		r = f.run({ "--undo" });
		CHECK(r.status == 0);
		CHECK(r.out.find("unmount") == std::string::npos);
		CHECK(mount_type(text_dir) == "");
	}
}

TEST_CASE("setup resizes only its own cache mount, leaves a tmpfs without huge= alone, and --undo detaches a busy one",
	  "[setup][root]")
{
	if (!need_root())
		return;
	if (!private_mounts()) {
		WARN("no private mount namespace: the tmpfs cache is not mounted on the machine's /run");
		return;
	}
	private_run run;
	REQUIRE(run.ok);

	// Someone else's tmpfs without huge=: refused, left as it was.
	REQUIRE(mkdir("/run/hugetext", 0755) == 0);
	REQUIRE(mkdir(text_dir.c_str(), 0755) == 0);
	REQUIRE(mount("other", text_dir.c_str(), "tmpfs", 0, "size=8m") == 0);
	{
		setup_files f("text_cache_size = 64M\n");
		run_result r = f.run();
		CHECK(r.status == 1);
		CHECK(r.err == "hugetext setup: cache: " + text_dir +
				       ": a tmpfs without huge=within_size or huge=always is mounted there: left alone\n");
		CHECK(text_opts().find("size=8192k") != std::string::npos);
		CHECK(text_opts().find("huge=") == std::string::npos);
		CHECK(!file_exists(f.state));
	}
	REQUIRE(umount2(text_dir.c_str(), 0) == 0);

	setup_files f("text_cache_size = 64M\n");
	REQUIRE(f.run().status == 0);
	write_file(f.conf, "text_cache_size = 128M\n", 0644);
	run_result r = f.run();
	CHECK(r.status == 0);
	CHECK(r.out == "pool: not asked for: left alone\ncache: " + text_dir +
			       " resized from 64.0 MiB to 128.0 MiB\nsetup: done\n");
	CHECK(text_opts().find("size=131072k") != std::string::npos);
	CHECK(text_opts().find("huge=within_size") != std::string::npos);

	// A program running an entry's code keeps the mount busy.
	std::string entry = text_dir + "/busy";
	write_file(entry, "code", 0600);
	int fd = open(entry.c_str(), O_RDONLY);
	REQUIRE(fd >= 0);
	r = f.run({ "--undo" });
	CHECK(r.status == 0);
	CHECK(r.out == "cache: " + text_dir + " detached (programs running its code keep it until they exit)\nsetup: done\n");
	CHECK(mount_type(text_dir) == "");
	CHECK(read_file("/proc/self/fd/" + std::to_string(fd)).empty() == false);
	close(fd);
	// The directory was there before setup ran: it stays.
	CHECK(file_exists(text_dir));
	CHECK(!file_exists(f.state));
}
