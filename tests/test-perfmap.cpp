// Description: HUGETEXT_PERF_MAP writes /tmp/perf-PID.map lines for the
// functions of moved code, and perf attached afterwards names them.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <string>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.hpp"

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

static const std::string preload() { return build_path("lib/libhugetext-preload.so"); }

// The kernel matrix sets HT_EMULATED in a guest under qemu's TCG, where a
// program runs many times slower than here: the waits below stretch there.
static bool emulated()
{
	const char *e = std::getenv("HT_EMULATED");
	return e && *e;
}

// Runs dso-linked with the library moved and the perf map on; returns its
// pid once it says "ready" (the move and the map are done by then), or
// once it has gone or two minutes have passed.
static int run_holding(const std::string &out, int ms)
{
	std::string cmd = "LD_PRELOAD='" + preload() + "' HUGETEXT_MODE=thp HUGETEXT_PERF_MAP=1 "
			  "HUGETEXT_MATCH=libbigtext exec '" + build_path("tests/dso-linked") + "' hold " +
			  std::to_string(ms) + " > '" + out + "' 2>&1 < /dev/null & echo $!";
	run_result r = run_cmd({ "sh", "-c", cmd });
	int pid = std::stoi(r.out);
	for (int i = 0; i < 12000 && read_file(out).find("ready") == std::string::npos && kill(pid, 0) == 0; i++)
		usleep(10000);
	return pid;
}

static void wait_gone(int pid)
{
	for (int i = 0; i < 6000 && kill(pid, 0) == 0; i++)
		usleep(10000);
}

TEST_CASE("the perf map lists the moved functions at their addresses", "[perfmap]")
{
	std::string out = temp_path("pm.out");
	int pid = run_holding(out, 300);
	std::string map = "/tmp/perf-" + std::to_string(pid) + ".map";
	std::string text = read_file(map), said = read_file(out);
	wait_gone(pid);
	unlink(map.c_str());

	INFO("the program said: " << said);
	REQUIRE(said.find("ready") != std::string::npos);
	REQUIRE_FALSE(text.empty());
	// Every line: hex start, hex size, a name; bt_fn_* come from libbigtext's .symtab.
	std::istringstream in(text);
	std::string line;
	int fns = 0, bad = 0;
	while (std::getline(in, line)) {
		unsigned long start, size;
		char name[256];
		if (sscanf(line.c_str(), "%lx %lx %255s", &start, &size, name) != 3 || size == 0)
			bad++;
		else if (std::string(name).rfind("bt_fn_", 0) == 0)
			fns++;
	}
	CHECK(bad == 0);
	// 24 MiB at one function per 64 KiB is 384; the moved span holds most.
	CHECK(fns >= 300);
	CHECK(fns <= 384);
}

TEST_CASE("perf attached after the move names the functions", "[perfmap][perf]")
{
	if (!have_program("perf") ||
	    run_cmd({ "perf", "record", "-a", "-e", "cpu-clock", "-o", "/dev/null", "true" }).status != 0) {
		WARN("perf is missing or cannot record cpu-clock here: not checked");
		return;
	}
	std::string out = temp_path("perf.out"), data = temp_path("perf.data");
	// Alive for longer than the recordings below take; ended by the test
	// (or by itself, if the test is killed).
	int pid = run_holding(out, emulated() ? 180000 : 40000);
	std::string ready = read_file(out);
	// System-wide, then filtered by pid: on this machine (perf 6.1, Linux
	// 6.18) "perf record -p PID" attaches but records no sample at all.
	// A window in which no sample of the program landed (a busy machine
	// left it no CPU, or qemu's emulation) is recorded again, longer.
	std::string names;
	int windows = 0, recorded = 0;
	for (int secs : { 1, 3, 10 }) {
		if (emulated() && secs == 1)
			continue;
		windows++;
		recorded = run_cmd({ "perf", "record", "-a", "-e", "cpu-clock", "-o", data, "--", "sleep",
				     std::to_string(secs) }).status;
		if (recorded != 0)
			break;
		run_result rep = run_cmd({ "perf", "report", "-i", data, "--pid", std::to_string(pid), "--stdio",
					   "--sort", "sym" });
		names = rep.out;
		if (names.find("bt_fn_") != std::string::npos)
			break;
	}
	kill(pid, SIGKILL);
	wait_gone(pid);
	unlink(data.c_str());
	unlink(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
	INFO("the program said: " << ready << "; " << windows << " recording(s); the last report: "
				  << names.substr(0, 2000));
	REQUIRE(ready.find("ready") != std::string::npos);
	REQUIRE(recorded == 0);
	CHECK(names.find("bt_fn_") != std::string::npos);
}

TEST_CASE("a pattern that also matches libelf does not make the perf map wait for itself",
	  "[perfmap]")
{
	// The perf map loads libelf with dlopen() while a move is under way; the
	// preload's dlopen() hook must not wait for that same move (it did once).
	for (const char *async : { "0", "1" }) {
		// timeout(1) ends a hang.  The program names its own pid for the
		// map's name, and awaits its report line, which comes after the map.
		run_result r = run_cmd({ "timeout", emulated() ? "300" : "30", build_path("tests/bigtext-pie"), "await",
					 emulated() ? "200000" : "20000" },
				       { "LD_PRELOAD=" + preload(), "HUGETEXT_MODE=thp", "HUGETEXT_PERF_MAP=1",
					 "HUGETEXT_MATCH=.", std::string("HUGETEXT_ASYNC=") + async,
					 "HUGETEXT_REPORT=" + temp_path("pm-libelf.json") });
		INFO("HUGETEXT_ASYNC=" << async << ": " << r.out << r.err);
		CHECK(r.status == 0); // timeout(1) says 124
		CHECK(r.out.find("sum ") != std::string::npos);
		std::string pid = r.out.substr(r.out.find("pid ") + 4);
		std::string map = "/tmp/perf-" + pid.substr(0, pid.find('\n')) + ".map";
		CHECK(read_file(map).find("bt_fn_") != std::string::npos);
		unlink(map.c_str());
	}
}

// Starts dso-linked with the perf map on, but only once @plant has made
// what it likes at /tmp/perf-PID.map for the child's PID (as another user
// may, for the PIDs to come).  Returns the child's exit status, or -1 when
// it had not finished after a minute (killed then).
static int run_after_planting(void (*plant)(const std::string &map))
{
	int go[2];
	REQUIRE(pipe(go) == 0);
	std::string prog = build_path("tests/dso-linked");
	const char *san = std::getenv("HT_SANITIZER_PRELOAD"); // its runtime first, in the sanitizer build
	std::string first = san && *san ? std::string(san) + ":" : "";
	std::vector<std::string> env = { "LD_PRELOAD=" + first + preload(), "HUGETEXT_MODE=thp", "HUGETEXT_PERF_MAP=1",
					 "HUGETEXT_MATCH=libbigtext", "HUGETEXT_COPY=now",
					 "LD_LIBRARY_PATH=" + build_path("tests") };
	std::vector<char *> ev;
	for (auto &e : env)
		ev.push_back(&e[0]);
	ev.push_back(nullptr);
	char *av[] = { &prog[0], const_cast<char *>("hold"), const_cast<char *>("10"), nullptr };
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char c;
		close(go[1]);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (read(go[0], &c, 1) == 1)
			execve(av[0], av, ev.data());
		_exit(127);
	}
	close(go[0]);
	plant("/tmp/perf-" + std::to_string(pid) + ".map");
	REQUIRE(write(go[1], "g", 1) == 1);
	close(go[1]);
	int status = 0;
	for (int i = 0; i < (emulated() ? 6000 : 600); i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

TEST_CASE("a perf map name another user made first is left alone and never waited on", "[perfmap]")
{
	static std::string made;
	// A FIFO nobody reads: opening it for writing would wait for a reader.
	CHECK(run_after_planting([](const std::string &map) {
		      made = map;
		      REQUIRE(mkfifo(map.c_str(), 0666) == 0);
	      }) == 0);
	unlink(made.c_str());
	// Another user's file: they would read our code's addresses, or write symbols of their own.
	CHECK(run_after_planting([](const std::string &map) {
		      made = map;
		      int fd = open(map.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
		      REQUIRE(fd >= 0);
		      REQUIRE(fchown(fd, 65534, 65534) == 0);
		      close(fd);
	      }) == 0);
	struct stat st;
	REQUIRE(stat(made.c_str(), &st) == 0);
	CHECK(st.st_size == 0);
	unlink(made.c_str());
	// A file of our own is appended to (a JIT's map of the same process).
	CHECK(run_after_planting([](const std::string &map) {
		      made = map;
		      int fd = open(map.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
		      REQUIRE(fd >= 0);
		      REQUIRE(write(fd, "1000 10 jitted\n", 15) == 15);
		      close(fd);
	      }) == 0);
	std::string text = read_file(made);
	unlink(made.c_str());
	CHECK(text.rfind("1000 10 jitted\n", 0) == 0);
	CHECK(text.size() > 15); // and the moved span's lines after it
}
