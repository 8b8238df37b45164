// Description: copy what runs (HUGETEXT_COPY_HOT): which 2 MiB ranges of a
// span count as hot (pure), the present pages counted per range through
// PAGEMAP_SCAN and through /proc/self/pagemap alike (the code's own pages
// only in a partial last page), the wait counting what the copy takes, and
// a deferred copy of a library that moves only the part the process ran.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"

extern "C" {
#include "hot.h"
#include "internal.h"
#include "plan.h"
#include "region.h"
#include "sys.h"
}

static const size_t MiB2 = 2u << 20;

extern "C" const char *test_skip_reason(void)
{
	return thp_enabled() ? nullptr : "transparent huge pages are off (never): no copy can be made";
}

TEST_CASE("the hot part runs from the first hot 2 MiB range to the last", "[hot]")
{
	const uint16_t present[] = { 0, 16, 200, 0, 512, 63, 64, 0 };
	size_t from = 1, to = 1;
	size_t hot = ht_hot_range(present, 8, MiB2, HT_HOT_MIN_PRESENT, &from, &to);

	// Ranges 2, 4 and 6 reach the threshold; 3 and 5 lie between and are copied too.
	CHECK(hot == 3 * MiB2);
	CHECK(from == 2 * MiB2);
	CHECK(to == 7 * MiB2);
}

TEST_CASE("ranges touched only as the kernel's fault-around does are cold", "[hot]")
{
	// One fault maps up to 16 cached pages; the preload's own touch shows as many.
	const uint16_t present[] = { 16, 16, 63, 0 };
	size_t from = 1, to = 1;

	CHECK(ht_hot_range(present, 4, MiB2, HT_HOT_MIN_PRESENT, &from, &to) == 0);
	CHECK(from == 0);
	CHECK(to == 0);
	const uint16_t one[] = { 0, 0, 0, 64 };
	CHECK(ht_hot_range(one, 4, MiB2, HT_HOT_MIN_PRESENT, &from, &to) == MiB2);
	CHECK(from == 3 * MiB2);
	CHECK(to == 4 * MiB2);
}

// 8 MiB of our own memory on 4 KiB pages, with 100, 0, 3 and 512 pages of
// its four 2 MiB ranges written.
struct touched {
	char *at = nullptr;
	touched()
	{
		void *p = nullptr;
		REQUIRE(ht_sys_map_anon(4 * MiB2, MiB2, 0, &p) == 0);
		at = static_cast<char *>(p);
		REQUIRE(ht_sys_advise(at, 4 * MiB2, MADV_NOHUGEPAGE) == 0);
		for (size_t i = 0; i < 100; i++)
			at[i * 4096] = 1;
		for (size_t i = 0; i < 3; i++)
			at[2 * MiB2 + i * 8192] = 1;
		std::memset(at + 3 * MiB2, 1, MiB2);
	}
	~touched() { ht_sys_unmap(at, 4 * MiB2); }
};

static int fail_ioctl(int, unsigned long, void *)
{
	errno = EINVAL; // what a kernel before 6.7 answers PAGEMAP_SCAN
	return -1;
}

TEST_CASE("present pages are counted per 2 MiB range, with PAGEMAP_SCAN or the pagemap file", "[hot]")
{
	touched t;
	uint16_t present[4] = { 9, 9, 9, 9 };
	int scan = ht_sys_scan_present((uintptr_t)t.at, 4, present);

	if (scan != -ENOTTY) {
		REQUIRE(scan == 0);
		CHECK(present[0] == 100);
		CHECK(present[1] == 0);
		CHECK(present[2] == 3);
		CHECK(present[3] == 512);
	}
	// The kernel without PAGEMAP_SCAN: the pagemap file's bit 63 gives the same.
	ht_sys.ioctl = fail_ioctl;
	std::fill(present, present + 4, 9);
	int err = ht_sys_present_pages((uintptr_t)t.at, 4, present);
	ht_sys_reset();
	REQUIRE(err == 0);
	CHECK(present[0] == 100);
	CHECK(present[1] == 0);
	CHECK(present[2] == 3);
	CHECK(present[3] == 512);
	// What the background thread's wait counts: ranges 0 to 3, the cold ones
	// between included (planned as code: the memory made r-x).
	REQUIRE(mprotect(t.at, 4 * MiB2, PROT_READ | PROT_EXEC) == 0);
	ht_options opt;
	ht_options_init(&opt);
	opt.page_cache = 0;
	ht_seg_query q{};
	q.any_object = 1;
	q.start = (uintptr_t)t.at;
	q.end = (uintptr_t)t.at + 4 * MiB2;
	CHECK(ht_hot_copy_bytes(&opt, &q, 1) == 4 * MiB2);
	q.start = (uintptr_t)t.at + MiB2;
	q.end = (uintptr_t)t.at + 3 * MiB2;
	CHECK(ht_hot_copy_bytes(&opt, &q, 1) == 0);
}

TEST_CASE("present pages are counted up to the code's end inside its last 2 MiB range", "[hot]")
{
	touched t;
	uint16_t present[4];
	uintptr_t at = (uintptr_t)t.at;

	// Range 3 is all written; only its first 100 pages are below the end.
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			ht_sys.ioctl = fail_ioctl; // the pagemap file's way
		std::fill(present, present + 4, 9);
		int err = ht_sys_present_pages_to(at, 4, at + 3 * MiB2 + 100 * 4096, present);
		REQUIRE(err == 0);
		CHECK(present[0] == 100);
		CHECK(present[1] == 0);
		CHECK(present[2] == 3);
		CHECK(present[3] == 100);
		// An end inside range 0: 50 of its pages, none of the others'; not page-aligned, rounded up.
		std::fill(present, present + 4, 9);
		REQUIRE(ht_sys_present_pages_to(at, 4, at + 49 * 4096 + 1, present) == 0);
		CHECK(present[0] == 50);
		CHECK(present[1] == 0);
		CHECK(present[3] == 0);
		ht_sys_reset();
	}
}

TEST_CASE("a partial last page the span took is hot by its code's pages and copied whole", "[hot]")
{
	// A span of four ranges whose last holds 1.5 MiB of code, then free space.
	ht_seg_plan p{};
	p.span.start = 16 * MiB2;
	p.span.end = 20 * MiB2;
	p.mapped = 3 * MiB2 + MiB2 * 3 / 4;
	p.file_off = 0x200000;
	p.reserve_gap = 1;
	ht_seg_plan part{};

	// Only the last page's code runs (100 of its 384 pages): it alone is copied.
	const uint16_t tail[] = { 0, 16, 63, 100 };
	CHECK(ht_hot_pick(&p, tail, 4, &part) == MiB2);
	CHECK(part.span.start == 19 * MiB2);
	CHECK(part.span.end == 20 * MiB2);
	CHECK(part.file_off == p.file_off + 3 * MiB2);
	CHECK(part.mapped == MiB2 * 3 / 4);
	CHECK(part.reserve_gap == 1);
	// The first range and the last: all between is copied with them.
	const uint16_t ends[] = { 64, 0, 0, 64 };
	CHECK(ht_hot_pick(&p, ends, 4, &part) == 2 * MiB2);
	CHECK(part.span.start == p.span.start);
	CHECK(part.span.end == p.span.end);
	CHECK(part.mapped == p.mapped);
	// The last page cold (63 pages): the copy stops before it, with no gap to reserve.
	const uint16_t head[] = { 512, 0, 0, 63 };
	CHECK(ht_hot_pick(&p, head, 4, &part) == MiB2);
	CHECK(part.span.start == p.span.start);
	CHECK(part.span.end == p.span.start + MiB2);
	CHECK(part.mapped == MiB2);
	CHECK(part.reserve_gap == 0);
}

// 3.5 MiB of a file mapped r-x from a 2 MiB boundary, free space after it
// to the next boundary: a segment whose span takes its partial last page.
struct tail_code {
	std::string path = temp_path("hot-tail.bin");
	size_t len = MiB2 + MiB2 * 3 / 4;
	char *at = nullptr;
	tail_code()
	{
		at = map_code_file(path, std::vector<char>(len, '\xcc'));
		REQUIRE(at != nullptr);
		REQUIRE(madvise(at, len, MADV_NOHUGEPAGE) == 0);
	}
	~tail_code() { munmap(at, len); }
	// Reads a byte of every page of [lo, hi): all of them present, whatever the fault-around.
	void run(size_t lo, size_t hi)
	{
		for (size_t o = lo; o < hi; o += 4096)
			(void)*(volatile char *)(at + o);
	}
};

TEST_CASE("the wait counts a partial last page the span takes, as the copy of what runs takes it", "[hot]")
{
	tail_code c;
	ht_options opt;
	ht_options_init(&opt);
	opt.page_cache = 0;
	ht_seg_query q{};
	q.start = (uintptr_t)c.at;
	q.end = (uintptr_t)c.at + c.len;
	std::string maps = read_file("/proc/self/maps");
	ht_seg_plan p{}, part{};
	REQUIRE(ht_plan_segment(maps.data(), maps.size(), &q, MiB2, &p) == 0);
	REQUIRE(p.span.start == q.start);
	REQUIRE(p.span.end == q.start + 2 * MiB2);
	REQUIRE(p.reserve_gap == 1);

	CHECK(ht_hot_copy_bytes(&opt, &q, 1) == 0);
	// The last page's code runs: the copy and the count take that page.
	c.run(MiB2, c.len);
	ht_region g{};
	const ht_seg_plan *h = ht_hot_part(&p, &part, &g);
	REQUIRE(h == &part);
	CHECK(part.span.start == q.start + MiB2);
	CHECK(part.span.end == q.start + 2 * MiB2);
	CHECK(ht_hot_copy_bytes(&opt, &q, 1) == MiB2);
	// The first too: both.
	c.run(0, MiB2);
	CHECK(ht_hot_copy_bytes(&opt, &q, 1) == 2 * MiB2);

	// Something else in the last page's free space: the span no longer
	// takes it, and the count leaves its hot code out as the copy does.
	void *other = mmap(c.at + 2 * MiB2 - 4096, 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	REQUIRE(other == c.at + 2 * MiB2 - 4096);
	*(volatile char *)other = 1;
	maps = read_file("/proc/self/maps");
	REQUIRE(ht_plan_segment(maps.data(), maps.size(), &q, MiB2, &p) == 0);
	CHECK(p.span.end == q.start + MiB2);
	CHECK(ht_hot_copy_bytes(&opt, &q, 1) == MiB2);
	munmap(other, 4096);
}

TEST_CASE("the hot part of a plan keeps its file offset and mapped bytes in step", "[hot]")
{
	touched t;
	ht_seg_plan p{};
	ht_region g{};
	ht_seg_plan part{};

	p.span.start = (uintptr_t)t.at;
	p.span.end = (uintptr_t)t.at + 4 * MiB2;
	p.mapped = 3 * MiB2 + 100 * 4096; // the last range: 100 pages of code, then free space
	p.file_off = 0x400000;
	p.reserve_gap = 1;
	const ht_seg_plan *c = ht_hot_part(&p, &part, &g);
	REQUIRE(c == &part);
	CHECK(g.hot_bytes == 2 * MiB2);
	CHECK(g.cold_bytes == 2 * MiB2);
	CHECK(part.span.start == p.span.start);
	CHECK(part.span.end == p.span.end);
	CHECK(part.mapped == p.mapped);
	CHECK(part.reserve_gap == 1);

	// Range 3 alone, a span of its own: its 100 pages of code are hot.
	ht_seg_plan q = p;
	q.span.start = (uintptr_t)t.at + 3 * MiB2;
	q.span.end = (uintptr_t)t.at + 4 * MiB2;
	q.mapped = 100 * 4096;
	ht_region h{};
	c = ht_hot_part(&q, &part, &h);
	REQUIRE(c == &part);
	CHECK(h.hot_bytes == MiB2);
	CHECK(h.cold_bytes == 0);
	CHECK(part.file_off == q.file_off);
	CHECK(part.mapped == 100 * 4096);
	// Only 63 of them: the pages written past the code do not count.
	q.mapped = 63 * 4096;
	ht_region f{};
	c = ht_hot_part(&q, &part, &f);
	CHECK(c->span.start == c->span.end);
	CHECK(f.hot_bytes == 0);

	// Ranges 1 and 2 (0 and 3 pages): nothing hot, an empty part.
	q = p;
	q.span.start = (uintptr_t)t.at + MiB2;
	q.span.end = (uintptr_t)t.at + 3 * MiB2;
	q.mapped = 2 * MiB2;
	ht_region e{};
	c = ht_hot_part(&q, &part, &e);
	CHECK(c->span.start == c->span.end);
	CHECK(e.hot_bytes == 0);
	CHECK(e.cold_bytes == 2 * MiB2);
}

TEST_CASE("what a copy of what runs leaves waits as queries for the head and the tail", "[hot]")
{
	const uintptr_t M = MiB2;
	// The segment's code from 0x1000 past 10 MiB to 20 MiB + 0x3000; its
	// span 10 to 22 MiB; the copy took 14 to 18 MiB.
	ht_seg_query q{};
	q.start = 10 * M / 2 * 2 + 0x1000;
	q.end = 20 * M + 0x3000;
	q.next = 21 * M;
	q.id_addr = 0x1234;
	q.ro_start = 9 * M;
	q.ro_end = 23 * M;
	ht_span whole = { 10 * M, 22 * M };
	ht_span part = { 14 * M, 18 * M };
	ht_seg_query out[2];

	REQUIRE(ht_hot_rest(&q, whole, part, out) == 2);
	// The head: from the code's start to the copy, nothing after it.
	CHECK(out[0].start == q.start);
	CHECK(out[0].end == 14 * M);
	CHECK(out[0].next == 14 * M);
	// The tail: from the copy's end to the code's, the object's next segment as before.
	CHECK(out[1].start == 18 * M);
	CHECK(out[1].end == q.end);
	CHECK(out[1].next == q.next);
	for (auto &o : out) {
		CHECK(o.id_addr == q.id_addr);
		CHECK(o.ro_start == q.ro_start);
		CHECK(o.ro_end == q.ro_end);
		CHECK(o.any_object == q.any_object);
	}

	// A copy from the span's first range: only the tail waits.
	part = { 10 * M, 18 * M };
	REQUIRE(ht_hot_rest(&q, whole, part, out) == 1);
	CHECK(out[0].start == 18 * M);
	CHECK(out[0].end == q.end);
	// To its last: only the head.
	part = { 14 * M, 22 * M };
	REQUIRE(ht_hot_rest(&q, whole, part, out) == 1);
	CHECK(out[0].start == q.start);
	CHECK(out[0].end == 14 * M);
	// All of it: nothing waits.
	part = whole;
	CHECK(ht_hot_rest(&q, whole, part, out) == 0);
	// Nothing copied (nothing was hot): all of the query waits.
	part = { 14 * M, 14 * M };
	REQUIRE(ht_hot_rest(&q, whole, part, out) == 1);
	CHECK(out[0].start == q.start);
	CHECK(out[0].end == q.end);
	CHECK(out[0].next == q.next);
	// A span whose head page was not taken (it starts above the code's
	// first bytes) and a copy from its first range: no head.
	whole = { 12 * M, 22 * M };
	part = { 12 * M, 16 * M };
	REQUIRE(ht_hot_rest(&q, whole, part, out) == 1);
	CHECK(out[0].start == 16 * M);
}

// --- a deferred copy of a library the process ran part of ---

static std::vector<ht_seg_query> queued;

static int record(const struct ht_options *, const struct ht_seg_query *q, size_t)
{
	queued.push_back(*q);
	return 0;
}

TEST_CASE("a deferred copy with copy_hot moves only the part of the library the process ran", "[hot]")
{
	std::string lib = build_path("tests/libbigtext.so");
	// 4 KiB page-cache pages, so that only what runs is mapped (helpers.hpp).
	small_page_cache(lib);
	void *h = dlopen(lib.c_str(), RTLD_NOW);
	INFO(dlerror());
	REQUIRE(h);
	auto start = static_cast<char *>(dlsym(h, "bigtext_start"));
	auto end = static_cast<char *>(dlsym(h, "bigtext_end"));
	auto stride = static_cast<const unsigned *>(dlsym(h, "bigtext_stride"));
	REQUIRE((start && end && stride));
	typedef int (*fn)(int);
	// Runs the functions of [lo, hi) MiB of the library's text.
	auto run = [&](size_t lo, size_t hi) {
		unsigned long sum = 0;
		for (char *f = start + (lo << 20); f + *stride <= start + (hi << 20) && f < end; f += *stride)
			sum = sum * 31 + (unsigned)reinterpret_cast<fn>(reinterpret_cast<uintptr_t>(f))(3);
		return sum;
	};
	unsigned long expect = run(8, 14);
	// What the code the process never ran gives, asked of a child.
	int pipefd[2];
	REQUIRE(pipe(pipefd) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		unsigned long cold = run(16, 22);
		_exit(write(pipefd[1], &cold, sizeof(cold)) == sizeof(cold) ? 0 : 1);
	}
	unsigned long expect_cold = 0;
	REQUIRE(read(pipefd[0], &expect_cold, sizeof(expect_cold)) == sizeof(expect_cold));
	waitpid(pid, nullptr, 0);
	close(pipefd[0]);
	close(pipefd[1]);

	ht_options opt;
	ht_options_init(&opt);
	opt.mode = HT_MODE_THP;
	opt.page_cache = 0;
	opt.share = HT_SHARE_OFF;
	opt.copy = HT_COPY_AUTO;
	opt.copy_hot = 1;
	opt.match = "libbigtext\\.so";
	std::string report = temp_path("hot-report.json");
	queued.clear();
	auto saved = ht_defer_copy;
	ht_defer_copy = record;
	ht_region regs[8];
	size_t n = 0;
	ht_remap(&opt, regs, 8, &n);
	ht_defer_copy = saved;
	std::vector<ht_seg_query> mine;
	for (auto &q : queued)
		if (q.start < (uintptr_t)end && q.end > (uintptr_t)start)
			mine.push_back(q);
	REQUIRE(mine.size() == 1);

	opt.report_path = report.c_str();
	size_t m = 0;
	std::thread bg([&] {
		ht_in_background = 1;
		ht_remap_deferred(&opt, mine.data(), mine.size(), regs, 8, &m, nullptr);
	});
	bg.join();
	REQUIRE(m == 1);
	const ht_region &r = regs[0];
	INFO(ht_error_str(r.error));
	REQUIRE(r.status == HT_STATUS_OK);
	// 6 MiB were run: three or four 2 MiB ranges as the text lies on the grid.
	CHECK(r.hot_bytes >= 3 * MiB2);
	CHECK(r.hot_bytes <= 4 * MiB2);
	CHECK(r.cold_bytes == r.bytes - r.hot_bytes);
	CHECK(r.cold_bytes >= 6 * MiB2);
	// On huge pages: the hot part, not the whole span.
	CHECK(r.huge_bytes >= 3 * MiB2);
	CHECK(r.huge_bytes <= 4 * MiB2);
	// Every whole 2 MiB page of the 6 MiB run lies on a huge page.
	uintptr_t lo = ht_round_up((uintptr_t)start + (8u << 20), MiB2);
	uintptr_t hi = ht_round_down((uintptr_t)start + (14u << 20), MiB2);
	CHECK(hi - lo >= 2 * MiB2);
	CHECK(ht_sys_self_huge_in(lo, hi) == hi - lo);
	CHECK(ht_sys_self_huge_in((uintptr_t)start + (18u << 20), (uintptr_t)end) == 0);
	// The code gives the same answers, moved and not.
	CHECK(run(8, 14) == expect);
	CHECK(run(16, 22) == expect_cold);
	auto lines = read_report(report);
	REQUIRE(lines.size() == 1);
	CHECK(lines[0]["hot_bytes"] == std::to_string(r.hot_bytes));
	CHECK(lines[0]["cold_bytes"] == std::to_string(r.cold_bytes));
	unlink(report.c_str());
	// Not closed: the moved code stays mapped until the process ends.
}

// --- the preload's wait, counted on what runs ---

// The preload writing its report to @report, making a THP copy with no page
// cache, shared cache or text service, plus @more.
static std::vector<std::string> preload_env(const std::string &report, const std::vector<std::string> &more)
{
	std::vector<std::string> env = { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"),
					 "HUGETEXT_REPORT=" + report, "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_MODE=thp",
					 "HUGETEXT_SHARE=0", "HUGETEXT_SERVICE=0" };
	env.insert(env.end(), more.begin(), more.end());
	return env;
}

static unsigned long value(const std::string &out, const std::string &key)
{
	std::string v = line_value(out, key);
	return v.empty() ? 0 : std::stoul(v);
}

// @argv run without the preload (@plain), then with the deferred copy of
// what runs reporting to @report (returned); both must exit 0.
static run_result run_plain_then_hot(const std::vector<std::string> &argv, const std::string &report,
				     run_result &plain, const std::vector<std::string> &more = {})
{
	// A thread of the program's own first: a single-threaded one gets no
	// thread of ours (test-copy), so no copy but at a fork.
	std::vector<std::string> env = { "HUGETEXT_COPY", "HUGETEXT_COPY_AFTER_MS", "HUGETEXT_COPY_HOT=1",
					 "HT_TEST_THREAD=1" };

	env.insert(env.end(), more.begin(), more.end());
	unlink(report.c_str());
	plain = run_cmd(argv, { "LD_PRELOAD" });
	REQUIRE(plain.status == 0);
	run_result h = run_cmd(argv, preload_env(report, env));
	REQUIRE(h.status == 0);
	return h;
}

TEST_CASE("the preload's deferred copy of what runs waits for the hot part's cost, not the whole span's",
	  "[hot]")
{
	// hot-main runs 4 of its 40 MiB of code for 1 s of CPU time.  The whole
	// span's wait is 40 ms per MiB, about 1.6 s: not yet due.  The hot part
	// (4 to 6 MiB) is due after about 0.25 s, and only it is copied.  The
	// first look comes after one 2 MiB range's wait (80 ms of CPU from the
	// constructor): where the constructor itself is slow (a sanitizer
	// build), main() may not have run all its 4 MiB by then, and what is
	// hot then (one range at least) is what pays, and is copied.
	std::string report = temp_path("hot-wait.json");
	std::vector<std::string> env =
		preload_env(report, { "HUGETEXT_COPY", "HUGETEXT_COPY_AFTER_MS", "HT_TEST_THREAD=1" });
	std::vector<std::string> argv = { build_path("tests/hot-main"), "1000" };

	unlink(report.c_str());
	std::vector<std::string> whole = env;
	whole.push_back("HUGETEXT_COPY_HOT=0");
	run_result w = run_cmd(argv, whole);
	REQUIRE(w.status == 0);
	INFO(w.out);
	CHECK(value(w.out, "huge_kb") == 0);
	auto wl = ok_lines(read_report(report));
	CHECK(wl.empty());

	unlink(report.c_str());
	std::vector<std::string> hot = env;
	hot.push_back("HUGETEXT_COPY_HOT=1");
	run_result h = run_cmd(argv, hot);
	REQUIRE(h.status == 0);
	INFO(h.out);
	CHECK(line_value(h.out, "sum") == line_value(w.out, "sum"));
	unsigned long huge = value(h.out, "huge_kb"), text = value(h.out, "text_kb");
	CHECK(huge >= 2048);
	CHECK(huge <= 8192);
	CHECK(text >= 40000);
	auto hl = ok_lines(read_report(report));
	REQUIRE(hl.size() == 1);
	CHECK(std::stoul(hl[0]["hot_bytes"]) >= (2u << 20));
	CHECK(std::stoul(hl[0]["hot_bytes"]) <= (8u << 20));
	CHECK(std::stoul(hl[0]["cold_bytes"]) >= (30u << 20));
	unlink(report.c_str());
}

TEST_CASE("a later pass of the preload's copy of what runs adds the code that turns hot after the first copy",
	  "[hot]")
{
	// hot-main runs its first 4 MiB for 0.6 s of CPU time: the first copy
	// takes what of them is hot at its look (about 0.25 s in; all of them
	// as a rule, one 2 MiB range on a loaded machine whose page cache lost
	// some of the file).  Then it runs the 4 MiB from 10 MiB on for 1.5 s
	// more: what the first copy left waits, and a later pass takes the part
	// that turned hot (with any hot range the first copy missed), once it
	// pays (80 ms of CPU per 2 MiB counted from the first copy), about 0.9 s
	// in.  The code between and the 26 MiB after 14 MiB never run.  On a
	// loaded emulator the first look can come after the 0.6 s, and would
	// then take both ranges in one copy: HOT_FIRST_REPORT keeps hot-main on
	// its first 4 MiB until the first copy is reported.
	std::string report = temp_path("hot-later.json");
	run_result plain;
	run_result h = run_plain_then_hot({ build_path("tests/hot-main"), "600", "1500", "10" }, report, plain,
					  { "HOT_FIRST_REPORT=1" });
	INFO(h.out);
	CHECK(line_value(h.out, "sum") == line_value(plain.out, "sum"));
	CHECK(value(plain.out, "huge_kb") == 0);
	// The later 4 MiB hold at least one whole 2 MiB page: on huge pages now.
	CHECK(value(h.out, "later_huge_kb") >= 2048);
	// Two copies of what ran (at most the first 16 MiB), not the 40 MiB.
	unsigned long huge = value(h.out, "huge_kb");
	CHECK(huge >= 4096);
	CHECK(huge <= 18432);
	auto ok = ok_lines(read_report(report));
	REQUIRE(ok.size() == 2);
	// The first line's region is the whole span; the later pass planned the
	// tail the first copy left: inside it, from a 2 MiB boundary past its start.
	unsigned long long s0 = std::stoull(ok[0]["start"]), e0 = std::stoull(ok[0]["end"]);
	unsigned long long s1 = std::stoull(ok[1]["start"]), e1 = std::stoull(ok[1]["end"]);
	CHECK(s1 >= s0 + (2u << 20));
	CHECK(s1 % (2u << 20) == 0);
	CHECK(e1 == e0);
	for (auto &l : ok) {
		CHECK(std::stoul(l["hot_bytes"]) >= (2u << 20));
		CHECK(std::stoul(l["hot_bytes"]) <= (10u << 20));
	}
	// The second copy came later, from the thread, as the first did.
	CHECK(ok[1]["pid"] == ok[0]["pid"]);
	unlink(report.c_str());
}

TEST_CASE("the preload's copy of what runs comes due for code in the span's partial last page", "[hot]")
{
	// hot-tail: 9 MiB of code from 0x401000 to 0xd03009, free space to
	// 0xe00000; the span takes the last, partial 2 MiB page (1 MiB of code
	// in it).  The program runs only the code's last 1 MiB (from 8 MiB into
	// bigtext, 0xc03000), all in that page, for 1.5 s of CPU: its copy
	// (2 MiB) pays after 80 ms and takes that page alone.  The wait used to
	// count only whole pages of code, found none hot, and never came due.
	std::string report = temp_path("hot-tail.json");
	run_result plain;
	run_result h = run_plain_then_hot({ build_path("tests/hot-tail"), "0", "1500", "8" }, report, plain);
	INFO(h.out);
	CHECK(line_value(h.out, "sum") == line_value(plain.out, "sum"));
	CHECK(value(plain.out, "later_huge_kb") == 0);
	// The last page, and nothing else.
	CHECK(value(h.out, "later_huge_kb") == 2048);
	CHECK(value(h.out, "huge_kb") == 2048);
	auto ok = ok_lines(read_report(report));
	REQUIRE(ok.size() == 1);
	CHECK(ok[0]["hot_bytes"] == std::to_string(2u << 20));
	CHECK(std::stoull(ok[0]["end"]) == 0xe00000);
	unlink(report.c_str());
}

TEST_CASE("the background move of HUGETEXT_ASYNC takes the whole span, copy_hot or not", "[hot]")
{
	// The async move is made as main() starts, before the code has run: a
	// copy of what runs would find nothing hot and take nothing.
	std::string report = temp_path("hot-async.json");
	std::vector<std::string> env =
		preload_env(report, { "HUGETEXT_COPY=now", "HUGETEXT_ASYNC=1", "HUGETEXT_COPY_HOT=1",
				      "HOT_AWAIT_MS=60000" });
	unlink(report.c_str());
	run_result h = run_cmd({ build_path("tests/hot-main"), "300" }, env);
	REQUIRE(h.status == 0);
	INFO(h.out);
	auto ok = ok_lines(read_report(report));
	REQUIRE(ok.size() == 1);
	CHECK(ok[0]["hot_bytes"] == "");
	CHECK(std::stoul(ok[0]["huge_bytes"]) >= (36u << 20));
	CHECK(value(h.out, "huge_kb") >= 36u * 1024);
	unlink(report.c_str());
}
