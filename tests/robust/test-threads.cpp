// Description: remaps while threads run the code being moved: many in a
// row, failing ones, concurrent ones, with signal handlers running the code
// in the middle; fork after and during a remap; exec of a child that
// inherits the preload.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "../bigtext.h"
#include "faults.hpp"
#include "robust.hpp"

extern "C" {
#include "hugetext.h"
#include "internal.h"
#include "run.h"
#include "sys.h"
}

// The library's (and this file's) calls of the allocator while the swap
// window is open, counted on the thread that asks (meson links this test
// with --wrap for the three).
namespace {
thread_local bool counting;
std::atomic<int> allocator_calls{ 0 };
} // namespace

extern "C" {
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n)
{
	if (counting && ht_window_is_open())
		allocator_calls++;
	return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
	if (counting && ht_window_is_open())
		allocator_calls++;
	return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
	if (counting && ht_window_is_open())
		allocator_calls++;
	return __real_realloc(p, n);
}
}

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

namespace {

const unsigned long expected_sum = bigtext_sum(5);

// Threads that call every generated function and check each answer.
struct runners {
	std::atomic<bool> stop{ false };
	std::atomic<unsigned long> calls{ 0 }, wrong{ 0 };
	std::vector<std::thread> threads;

	explicit runners(int n)
	{
		for (int t = 0; t < n; t++)
			threads.emplace_back([this, t, n] {
				while (!stop.load(std::memory_order_relaxed)) {
					for (unsigned i = (unsigned)t; i < bigtext_count; i += (unsigned)n) {
						if (bigtext_get(i)(5) != (int)(15 + i))
							wrong++;
						calls++;
					}
				}
			});
	}
	~runners() { join(); }
	void join()
	{
		stop = true;
		for (auto &th : threads)
			if (th.joinable())
				th.join();
	}
};

struct ht_options thp_options(enum ht_mode mode = HT_MODE_THP)
{
	struct ht_options opt;
	ht_options_init(&opt);
	opt.page_cache = 0; // the copy itself is under test
	opt.mode = mode;
	return opt;
}

uintptr_t span_lo()
{
	return ((uintptr_t)bigtext_start + HT_HUGE_PAGE_SIZE - 1) & ~(HT_HUGE_PAGE_SIZE - 1);
}

uintptr_t span_hi()
{
	return (uintptr_t)bigtext_end & ~(HT_HUGE_PAGE_SIZE - 1);
}

} // namespace

TEST_CASE("120 range remaps while 4 threads run every function: every answer right", "[threads]")
{
	runners run(4);
	int ok = 0;

	for (int i = 0; i < 120; i++) {
		struct ht_options opt = thp_options(i % 2 ? HT_MODE_THP : HT_MODE_AUTO);
		struct ht_region r;
		int err = ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
		INFO("round " << i << ": " << ht_error_str(r.error));
		REQUIRE(err == 0);
		REQUIRE(r.status == HT_STATUS_OK);
		ok += r.huge_bytes == r.bytes;
	}
	run.join();
	CHECK(run.calls > 0);
	CHECK(run.wrong == 0);
	CHECK(ok == 120);
	CHECK(bigtext_sum(5) == expected_sum);
	CHECK(huge_bytes_in(span_lo(), span_hi()) == span_hi() - span_lo());
}

TEST_CASE("remaps that fail at each step while 4 threads run leave the code running", "[threads][faults]")
{
	// The calls of a remap of code that was moved before (anonymous now).
	struct ht_options opt = thp_options();
	struct ht_region r;
	faults_install({}, {});
	REQUIRE(ht_remap_range(&opt, bigtext_start, bigtext_end, &r) == 0);
	std::vector<std::string> sites;
	for (auto &c : faults_log())
		if (sites.empty() || std::find(sites.begin(), sites.end(), c.site) == sites.end())
			sites.push_back(c.site);
	faults_remove();
	REQUIRE(sites.size() >= 5);

	runners run(4);
	int failed = 0;
	for (int i = 0; i < 100; i++) {
		fault_plan p;
		p.how = fault_how::fail;
		p.site = sites[(size_t)i % sites.size()];
		p.persist = true;
		p.err = i % 2 ? ENOMEM : EPERM;
		auto before = maps_lines(span_lo(), span_hi());
		faults_install(p, {});
		int err = ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
		auto live = faults_live_maps();
		auto fds = faults_open_fds();
		faults_remove();
		INFO("round " << i << ": " << p.site << " fails: " << ht_error_str(r.error));
		CHECK((err < 0) == (r.status == HT_STATUS_FAILED));
		if (r.status == HT_STATUS_FAILED) {
			failed++;
			CHECK(maps_lines(span_lo(), span_hi()) == before);
		}
		if (p.site != "munmap")
			CHECK(live.empty());
		CHECK(fds.empty());
	}
	run.join();
	CHECK(failed >= 20);
	CHECK(run.wrong == 0);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("two threads calling the API at once are served one after the other", "[threads]")
{
	runners run(4);
	std::atomic<int> ok{ 0 }, bad{ 0 };
	auto remapper = [&] {
		for (int i = 0; i < 30; i++) {
			struct ht_options opt = thp_options();
			struct ht_region r;
			if (ht_remap_range(&opt, bigtext_start, bigtext_end, &r) == 0 && r.status == HT_STATUS_OK)
				ok++;
			else
				bad++;
		}
	};
	std::thread a(remapper), b(remapper);
	a.join();
	b.join();
	run.join();
	CHECK(ok == 60);
	CHECK(bad == 0);
	CHECK(run.wrong == 0);
}

namespace {
std::atomic<unsigned long> handler_calls{ 0 }, handler_wrong{ 0 };

void run_code_in_handler(int)
{
	int saved = errno;
	for (unsigned i = 0; i < bigtext_count; i += 7) {
		if (bigtext_get(i)(5) != (int)(15 + i))
			handler_wrong++;
		handler_calls++;
	}
	errno = saved;
}
} // namespace

TEST_CASE("signal handlers that run the code interrupt 40 remaps without harm", "[threads][signals]")
{
	struct sigaction sa, old;
	std::memset(&sa, 0, sizeof(sa));
	sa.sa_handler = run_code_in_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; // no SA_RESTART: interrupted calls return EINTR
	REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
	pthread_t self = pthread_self();
	std::atomic<bool> stop{ false };
	std::thread pest([&] {
		while (!stop) {
			pthread_kill(self, SIGUSR1);
			usleep(200);
		}
	});
	int ok = 0;
	for (int i = 0; i < 40; i++) {
		struct ht_options opt = thp_options();
		struct ht_region r;
		ok += ht_remap_range(&opt, bigtext_start, bigtext_end, &r) == 0 && r.status == HT_STATUS_OK;
	}
	stop = true;
	pest.join();
	sigaction(SIGUSR1, &old, nullptr);
	CHECK(ok == 40);
	CHECK(handler_calls > 0);
	CHECK(handler_wrong == 0);
}

TEST_CASE("fork after a remap: the child runs the moved code with the same answers", "[threads][fork]")
{
	struct ht_options opt = thp_options();
	struct ht_region r;
	REQUIRE(ht_remap_range(&opt, bigtext_start, bigtext_end, &r) == 0);
	runners run(4);
	for (int i = 0; i < 5; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			// Only this thread exists in the child.
			bool same = bigtext_sum(5) == expected_sum;
			bool huge = huge_bytes_in(span_lo(), span_hi()) > 0;
			_exit(same && huge ? 0 : 1);
		}
		REQUIRE(pid > 0);
		int st = 0;
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st));
		CHECK(WEXITSTATUS(st) == 0);
	}
	run.join();
	CHECK(run.wrong == 0);
}

TEST_CASE("a child forked while another thread remaps can still call the API", "[threads][fork]")
{
	// fork() copies a mutex held by another thread as held, forever: the
	// library must not leave its lock to a child that way.
	std::atomic<bool> stop{ false };
	std::thread remapper([&] {
		while (!stop) {
			struct ht_options opt = thp_options();
			ht_remap_range(&opt, bigtext_start, bigtext_end, nullptr);
		}
	});
	int hung = 0, wrong = 0;
	// A hang costs the alarm's seconds: stop at the second one.
	for (int i = 0; i < 20 && hung < 2; i++) {
		usleep(3000);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(3);
			struct ht_options opt = thp_options();
			struct ht_region r;
			int err = ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
			_exit(err == 0 && bigtext_sum(5) == expected_sum ? 0 : 1);
		}
		REQUIRE(pid > 0);
		int st = 0;
		waitpid(pid, &st, 0);
		hung += WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM;
		wrong += WIFEXITED(st) && WEXITSTATUS(st) != 0;
	}
	stop = true;
	remapper.join();
	CHECK(hung == 0);
	CHECK(wrong == 0);
}

namespace {

// Set by the mprotect stand-in below: where the copy was, and what the child found.
uintptr_t forked_at;
size_t forked_len;
bool parent_saw_copy;
int child_exit = -1;
int (*real_protect)(void *, size_t, int);

bool all_mapped(void *addr, size_t len)
{
	std::vector<unsigned char> vec(len / 4096 + 1);
	return mincore(addr, len, vec.data()) == 0;
}

// Forks from the library's mprotect of the finished copy, just before the swap.
int protect_and_fork(void *addr, size_t len, int prot)
{
	if (prot == (PROT_READ | PROT_EXEC) && !forked_at) {
		forked_at = (uintptr_t)addr;
		forked_len = len;
		parent_saw_copy = all_mapped(addr, len);
		pid_t pid = fork();
		if (pid == 0)
			_exit(all_mapped(addr, len) ? 1 : 0); // mincore: ENOMEM where nothing is mapped
		int st = 0;
		waitpid(pid, &st, 0);
		child_exit = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	}
	return real_protect(addr, len, prot);
}

} // namespace

TEST_CASE("a child forked while the copy is being built gives the copy's pages back", "[threads][fork]")
{
	// Another thread of the program may fork at any moment.  The child has
	// no use for a half-built copy, and keeping it would pin its huge pages.
	ht_sys_reset();
	real_protect = ht_sys.mprotect;
	ht_sys.mprotect = protect_and_fork;
	struct ht_options opt = thp_options();
	struct ht_region r;
	int err = ht_remap_range(&opt, bigtext_start, bigtext_end, &r);
	ht_sys_reset();
	REQUIRE(forked_at != 0);
	CHECK(forked_len >= HT_HUGE_PAGE_SIZE);
	CHECK(parent_saw_copy);
	CHECK(child_exit == 0);
	// The parent's own move goes on as if nothing happened.
	CHECK(err == 0);
	CHECK(r.status == HT_STATUS_OK);
	CHECK(bigtext_sum(5) == expected_sum);
}

TEST_CASE("fork and exec under the preload: parent, child and exec'd program all run the same",
	  "[threads][fork][preload]")
{
	std::string report = temp_path("forker.json");
	std::string forker = build_path("tests/robust/forker");
	std::vector<std::string> cmd = { forker, build_path("tests/bigtext-nopie") };
	prog_result plain = run_prog(cmd);
	REQUIRE(plain.status == 0);
	prog_opts o;
	o.env = { ld_preload_hugetext(), "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=thp" };
	prog_result r = run_prog(cmd, o);
	INFO(r.err);
	CHECK(r.status == 0);
	CHECK(r.out == plain.out);
	CHECK(r.err.empty());
	CHECK(line_value(r.out, "child status") == "0");
	int bad = 0;
	auto ok = ok_lines(read_report_json(report, &bad));
	unlink(report.c_str());
	CHECK(bad == 0);
	// The forker before its main(), and bigtext-nopie after the exec.
	REQUIRE(ok.size() == 2);
	CHECK(ok[0]["object"].find("forker") != std::string::npos);
	CHECK(ok[1]["object"].find("bigtext-nopie") != std::string::npos);
	CHECK(ok[0]["pid"] != ok[1]["pid"]);
}

// --- the swap window (lib/lock.c): a background move's check-to-swap
// moment, which a program's mprotect() (through the preload) must not
// enter ---

namespace {

// Runs @fn in a thread; done() says whether it has returned.
struct side {
	std::atomic<bool> started{ false }, finished{ false };
	std::atomic<int> result{ 0 };
	std::thread t;
	template <class F> explicit side(F fn)
		: t([this, fn] {
			  started = true;
			  result = fn();
			  finished = true;
		  })
	{
	}
	~side() { t.join(); }
	bool done() const { return finished.load(); }
};

// One mprotect() call's part in the window, as the preload's wrapper plays it.
int one_call()
{
	ht_mprotect_begin();
	ht_mprotect_end();
	return 0;
}

bool within(const std::atomic<bool> &flag, int ms)
{
	for (int i = 0; i < ms && !flag.load(); i++)
		usleep(1000);
	return flag.load();
}

} // namespace

TEST_CASE("the swap window opens only once the mprotect() calls under way have ended", "[threads][window]")
{
	ht_mprotect_begin();
	side opener([] { return ht_window_open(); });
	// Running, then 20 ms for the call to end if it would not wait.
	REQUIRE(within(opener.started, 2000));
	usleep(20 * 1000);
	CHECK_FALSE(opener.done());
	ht_mprotect_end();
	REQUIRE(within(opener.finished, 2000));
	CHECK(opener.result == 0);
	CHECK(ht_window_intact());
	ht_window_close();
}

TEST_CASE("an mprotect() that comes while the window is open waits until it closes", "[threads][window]")
{
	REQUIRE(ht_window_open() == 0);
	side caller(one_call);
	REQUIRE(within(caller.started, 2000));
	usleep(20 * 1000);
	CHECK_FALSE(caller.done());
	CHECK(ht_window_intact());
	ht_window_close();
	CHECK(within(caller.finished, 2000));
}

TEST_CASE("a call that never ends keeps the window shut: the move gives up after 50 ms", "[threads][window]")
{
	ht_mprotect_begin();
	CHECK(ht_window_open() == -1);
	// Closed again: another call goes through at once.
	side caller(one_call);
	CHECK(within(caller.finished, 2000));
	ht_mprotect_end();
}

TEST_CASE("a call kept waiting 100 ms goes on, and the window is no longer intact", "[threads][window]")
{
	REQUIRE(ht_window_open() == 0);
	side caller(one_call);
	// A move stuck behind a lock the caller holds: the caller must not hang.
	CHECK(within(caller.finished, 5000));
	CHECK_FALSE(ht_window_intact());
	ht_window_close();
	REQUIRE(ht_window_open() == 0);
	CHECK(ht_window_intact());
	ht_window_close();
}

TEST_CASE("a child forked while the window is open finds it closed: its mprotect() calls do not wait", "[threads][window]")
{
	// The first take of the lock registers the library's fork handlers.
	ht_lock_acquire();
	ht_lock_release();
	REQUIRE(ht_window_open() == 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < 10; i++) {
			ht_mprotect_begin();
			ht_mprotect_end();
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		_exit(ms < 50 && ht_window_intact() ? 0 : 1);
	}
	int st = 0;
	REQUIRE(pid > 0);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	ht_window_close();
	CHECK(WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 0);
}

namespace {

// 2 MiB and a half of "code" from a file, at a 2 MiB address, with free
// space after it: a span the planner takes, as a background move sees it.
struct file_code {
	static constexpr size_t M2 = 2UL << 20;
	std::string path = temp_path("window-code.bin");
	size_t len = M2 + M2 / 2;
	char *at = nullptr;
	file_code()
	{
		std::vector<char> buf(len);
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)(i * 7 + i / 4096);
		at = map_code_file(path, buf);
		REQUIRE(at != nullptr);
	}
	~file_code()
	{
		munmap(at, len);
		unlink(path.c_str());
	}
};

// ht_window_checked() on @c's span against @copy, counting the allocator.
int checked_counting(file_code &c, const std::vector<char> &copy, int *calls)
{
	ht_seg_query q{};
	q.start = (uintptr_t)c.at;
	q.end = (uintptr_t)c.at + c.len;
	std::string maps = read_file("/proc/self/maps");
	ht_seg_plan p{};
	REQUIRE(ht_plan_segment(maps.data(), maps.size(), &q, file_code::M2, &p) == 0);
	REQUIRE(p.span.start == q.start);
	REQUIRE(p.span.end - p.span.start <= copy.size());
	ht_recheck rc{ &q, &p };
	ht_source src{};
	src.fd = -1;
	src.mapped = p.mapped;
	src.unchanged = ht_code_unchanged;
	src.ctx = &rc;
	allocator_calls = 0;
	counting = true;
	int ok = ht_window_checked(&src, p.span, copy.data());
	counting = false;
	*calls = allocator_calls.load();
	return ok;
}

} // namespace

TEST_CASE("the check in the swap window calls no allocator, whose lock an mprotect() held there may hold", "[threads][window]")
{
	file_code c;
	std::vector<char> copy(2 * file_code::M2, 0);
	memcpy(copy.data(), c.at, c.len);
	int calls = -1;

	// The counting reaches the library: reading a file the usual way, with
	// the window open, mallocs.
	char *buf = nullptr;
	size_t len = 0;
	allocator_calls = 0;
	REQUIRE(ht_window_open() == 0);
	counting = true;
	REQUIRE(ht_sys_read_file("/proc/self/maps", &buf, &len) == 0);
	counting = false;
	ht_window_close();
	free(buf);
	REQUIRE(allocator_calls.load() >= 1);

	// Unchanged code: the check passes with the window left open for the swap.
	CHECK(checked_counting(c, copy, &calls) == 1);
	CHECK(calls == 0);
	std::atomic<bool> went{ false };
	{
		side call([&] {
			one_call();
			went = true;
			return 0;
		});
		CHECK_FALSE(within(went, 20));
		ht_window_close();
		CHECK(within(went, 1000));
	}

	// A page the program patched since the copy: the check fails, the window is
	// closed again, and still nothing was allocated.
	REQUIRE(mprotect(c.at, 4096, PROT_READ | PROT_WRITE) == 0);
	c.at[100] ^= 1;
	REQUIRE(mprotect(c.at, 4096, PROT_READ | PROT_EXEC) == 0);
	CHECK(checked_counting(c, copy, &calls) == 0);
	CHECK(calls == 0);
	side after([] { return one_call(); });
	CHECK(within(after.finished, 20));
}

TEST_CASE("reading a file into a fixed buffer: whole, or -EFBIG when it does not fit with its NUL", "[threads][window]")
{
	std::string path = temp_path("read-into.txt");
	std::string text(10000, 'x');
	{
		int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		REQUIRE(fd >= 0);
		REQUIRE(write(fd, text.data(), text.size()) == (ssize_t)text.size());
		close(fd);
	}
	std::vector<char> buf(20000, '?');
	CHECK(ht_sys_read_file_into(path.c_str(), buf.data(), buf.size()) == 10000);
	CHECK(std::string(buf.data()) == text);
	CHECK(ht_sys_read_file_into(path.c_str(), buf.data(), 10001) == 10000);
	CHECK(ht_sys_read_file_into(path.c_str(), buf.data(), 10000) == -EFBIG);
	CHECK(ht_sys_read_file_into(path.c_str(), buf.data(), 1) == -EFBIG);
	CHECK(ht_sys_read_file_into(path.c_str(), buf.data(), 0) == -EINVAL);
	CHECK(ht_sys_read_file_into((path + ".absent").c_str(), buf.data(), buf.size()) == -ENOENT);
	// A proc file, whose size stat() does not tell.
	std::vector<char> big(1 << 20);
	ssize_t n = ht_sys_read_file_into("/proc/self/maps", big.data(), big.size());
	CHECK(n > 0);
	CHECK(std::string(big.data()).find("[stack]") != std::string::npos);
	unlink(path.c_str());
}
