// Description: every system call the library makes, failed in turn through
// the internal table (lib/sys.h), on generated code in this process.  Each
// case runs in a fresh fork, so every remap starts from the original
// file-backed text, and checks: the code still gives the same answers; a
// failed region reports the right error and errno and leaves the mappings
// exactly as they were; nothing leaks (mappings, descriptors); the report
// names what failed.
#include <catch2/catch.hpp>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bigtext.h"
#include "faults.hpp"
#include "robust.hpp"

extern "C" {
#include "hugetext.h"
#include "internal.h"
#include "region.h"
}
#include <thread>
#include <vector>

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	return nullptr;
}

namespace {

const unsigned long expected_sum = bigtext_sum(5);
const uintptr_t huge = HT_HUGE_PAGE_SIZE;

// deferred: the preload's default copy policy; a whole-program run that
// defers the copy, then the background thread's run that makes it.
// at_fork: the same deferred copy made by the preload's fork() in the
// calling thread (signals blocked) just before a fork, and the worker
// forked after it checked too.
enum class api { range, whole, deferred, at_fork };

struct scenario {
	api call = api::range;
	enum ht_mode mode = HT_MODE_THP;
	std::string share_dir; // with share: a hugetlbfs directory
	bool cover_ends = false; // HUGETEXT_COVER_ENDS: the head's page takes the ELF headers
	bool copy_hot = false;   // HUGETEXT_COPY_HOT: the deferred copy reads the present pages first
};

// What a child saw, sent back through a pipe as text.
struct outcome {
	bool ran = false;       // the child answered
	int signal = 0;         // the child died of this signal
	int status = -1, error = -1, sys_errno = -1, rc = 0;
	std::string fill, cache, cache_error;
	std::vector<std::string> sites; // the calls made, in order
	std::string problems;           // "" when every check held
};

std::string self_exe()
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	return n > 0 ? std::string(buf, (size_t)n) : "";
}

// The 2 MiB-aligned window around the program's text.
void text_window(uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t a = 0, b = 0;
	maps_entry((uintptr_t)bigtext_start, &a, &b);
	*lo = a & ~(huge - 1);
	*hi = (b + huge - 1) & ~(huge - 1);
}

// Error a failure at this site must produce, in thp mode; -1: any outcome
// that keeps the invariants is fine (the library has a fallback).
int required_error(const std::string &site)
{
	static const std::map<std::string, int> table = {
		{ "mmap-anon", HT_E_ALLOC },
		{ "madvise-hugepage", HT_E_ADVISE },
		{ "mprotect-rx", HT_E_PROTECT },
		{ "mremap", HT_E_SWAP },
		{ "mmap-reserve", HT_E_SWAP },
		{ "open:/proc/self/maps", HT_E_PROC },
		{ "read:/proc/self/maps", HT_E_PROC },
	};
	auto it = table.find(site);
	return it == table.end() ? -1 : it->second;
}

bool touches_report(const std::string &site)
{
	return site.find(":report") != std::string::npos;
}

bool covered_by_code(uintptr_t lo, uintptr_t hi)
{
	uintptr_t at = lo;

	for (auto &l : maps_lines(lo, hi)) {
		unsigned long a, b, off, ino;
		char perms[8];
		unsigned maj, min;
		if (std::sscanf(l.c_str(), "%lx-%lx %7s %lx %x:%x %lu", &a, &b, perms, &off, &maj, &min, &ino) != 7)
			return false;
		if (a > at || std::string(perms) != "r-xp")
			return false;
		// Explicit pages from a shared cache file are file-backed; a private copy is anonymous.
		at = b;
	}
	return at >= hi;
}

std::vector<ht_seg_query> &deferred_queries()
{
	static std::vector<ht_seg_query> q;
	return q;
}

// Stands in for the preload's background thread: keeps what was deferred.
int record_deferred(const struct ht_options *, const struct ht_seg_query *q, size_t)
{
	deferred_queries().push_back(*q);
	return 0;
}

// Forks a worker, as a server does after the preload's fork-time copy:
// it inherits the code (moved or not) and must run it and see the same
// read+execute mappings over the text as this process.
void worker_problems(std::ostringstream &bad)
{
	uintptr_t wlo, whi;
	text_window(&wlo, &whi);
	auto mine = maps_lines(wlo, whi);
	pid_t pid = fork();
	if (pid == 0) {
		bool same = bigtext_sum(5) == expected_sum && maps_lines(wlo, whi) == mine;
		_exit(same ? 0 : 1);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		bad << "the worker could not be forked; ";
	else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		bad << "the worker forked after the copy did not run the code or map it as its parent; ";
}

// Runs one remap with @plan in this (child) process and checks everything.
outcome run_here(const fault_plan &plan, const scenario &sc, const std::string &report)
{
	outcome o;
	std::ostringstream bad;
	uintptr_t wlo, whi;
	struct ht_options opt;
	struct ht_region regs[8];
	size_t n = 0;

	text_window(&wlo, &whi);
	auto before = maps_lines(wlo, whi);
	int fds_before = count_open_fds();

	ht_options_init(&opt);
	opt.page_cache = 0; // the copy itself is under test
	opt.mode = sc.mode;
	opt.report_path = report.c_str();
	opt.cover_ends = sc.cover_ends;
	opt.copy_hot = sc.copy_hot;
	if (!sc.share_dir.empty()) {
		opt.share = 1;
		opt.share_dir = sc.share_dir.c_str();
	}
	faults_install(plan, { self_exe(), report, sc.share_dir });
	if (sc.call == api::deferred || sc.call == api::at_fork) {
		// The start-up run defers, unfaulted and unreported; the faults
		// meet the background thread's run, as in the preload.
		faults_remove();
		deferred_queries().clear();
		ht_defer_copy = record_deferred;
		opt.copy = HT_COPY_AUTO;
		opt.report_path = nullptr;
		size_t n0 = 0;
		ht_remap(&opt, regs, 8, &n0);
		if (n0 != 1 || regs[0].error != HT_E_DEFERRED || deferred_queries().size() != 1)
			bad << "the start-up run did not defer the copy; ";
		// A child of fork() has none of its parent's code pages mapped:
		// run it, so that a copy of what runs finds it hot.
		if (sc.copy_hot && bigtext_sum(5) != expected_sum)
			bad << "the code gave different answers before the copy; ";
		opt.report_path = report.c_str();
		faults_install(plan, { self_exe(), report, sc.share_dir });
		auto deferred_run = [&] {
			ht_in_background = 1;
			o.rc = ht_remap_deferred(&opt, deferred_queries().data(), deferred_queries().size(),
						 regs, 8, &n, nullptr);
		};
		if (sc.call == api::deferred) {
			std::thread bg(deferred_run);
			bg.join();
		} else {
			sigset_t all, old;
			sigfillset(&all);
			pthread_sigmask(SIG_SETMASK, &all, &old);
			deferred_run();
			ht_in_background = 0;
			pthread_sigmask(SIG_SETMASK, &old, nullptr);
			worker_problems(bad);
		}
	} else if (sc.call == api::range) {
		std::memset(&regs[0], 0, sizeof(regs[0]));
		o.rc = ht_remap_range(&opt, bigtext_start, bigtext_end, &regs[0]);
		n = 1;
	} else {
		o.rc = ht_remap(&opt, regs, 8, &n);
	}
	for (auto &c : faults_log())
		o.sites.push_back(c.site);
	auto live = faults_live_maps();
	auto fds = faults_open_fds();
	faults_remove();

	// The code must still run and give the same answers.
	if (bigtext_sum(5) != expected_sum)
		bad << "the generated code gives different answers; ";

	bool any_failed = false, any_ok = false;
	for (size_t i = 0; i < n && i < 8; i++) {
		const ht_region &r = regs[i];
		any_failed |= r.status == HT_STATUS_FAILED;
		any_ok |= r.status == HT_STATUS_OK;
		if (r.status == HT_STATUS_FAILED && r.error == HT_E_NONE)
			bad << "a failed region has no error; ";
		if (r.status == HT_STATUS_OK && r.huge_bytes == 0 && r.error == HT_E_NONE)
			bad << "a moved region shows no huge page and no reason; ";
		if (r.status == HT_STATUS_OK && !covered_by_code(r.start, r.end))
			bad << "a moved region is not covered by read+execute code; ";
	}
	if (n >= 1) {
		o.status = regs[0].status;
		o.error = regs[0].error;
		o.sys_errno = regs[0].sys_errno;
		o.fill = regs[0].fill ? regs[0].fill : "";
		o.cache = regs[0].cache ? regs[0].cache : "";
		o.cache_error = regs[0].cache_error ? regs[0].cache_error : "";
	}
	if (any_failed != (o.rc < 0))
		bad << "return value " << o.rc << " disagrees with the region status; ";
	if (n >= 1 && regs[0].status == HT_STATUS_FAILED && regs[0].sys_errno && o.rc != -regs[0].sys_errno)
		bad << "return value " << o.rc << " is not -errno of the failure (" << regs[0].sys_errno << "); ";
	// A region that did not move leaves the text exactly as it was; after
	// a hole, the code must be back (in fresh memory, so not "as it was").
	if (plan.how == fault_how::mremap_hole) {
		if (n >= 1 && !covered_by_code(regs[0].start, regs[0].end))
			bad << "the hole left by mremap was not filled with the code; ";
	} else if (!any_ok && maps_lines(wlo, whi) != before) {
		bad << "the mappings of the text changed although nothing moved; ";
	}

	bool munmap_failed = plan.how == fault_how::fail && plan.site == "munmap";
	if (!munmap_failed && plan.how != fault_how::mremap_hole) {
		for (auto &m : live)
			bad << "leaked mapping [" << std::hex << m.first << "-" << m.second << std::dec << ") "
			    << (m.second - m.first) / 1024 << " KiB; ";
	}
	for (int fd : fds)
		bad << "leaked descriptor " << fd << "; ";
	if (count_open_fds() != fds_before)
		bad << "descriptor count changed from " << fds_before << " to " << count_open_fds() << "; ";

	// The report has one line per region, and names what failed.
	if (!(plan.how == fault_how::fail && touches_report(plan.site))) {
		int malformed = 0;
		auto lines = read_report_json(report, &malformed);
		if (malformed)
			bad << malformed << " report lines are not valid JSON; ";
		if (lines.size() != n)
			bad << "report has " << lines.size() << " lines for " << n << " regions; ";
		for (size_t i = 0; i < lines.size() && i < n && i < 8; i++) {
			auto &l = lines[i];
			if (l["status"] != ht_status_str(regs[i].status))
				bad << "report status " << l["status"] << " differs from the API's; ";
			if (regs[i].status == HT_STATUS_FAILED && l["error"] != ht_error_str(regs[i].error))
				bad << "report error '" << l["error"] << "' does not name the failure; ";
			if (regs[i].sys_errno && l["errno"] != std::to_string(regs[i].sys_errno))
				bad << "report errno " << l["errno"] << " is not " << regs[i].sys_errno << "; ";
		}
	}
	unlink(report.c_str());
	o.problems = bad.str();
	o.ran = true;
	return o;
}

std::string serialize(const outcome &o)
{
	std::ostringstream s;
	s << o.status << ' ' << o.error << ' ' << o.sys_errno << ' ' << o.rc << ' '
	  << (o.fill.empty() ? "-" : o.fill) << ' ' << (o.cache.empty() ? "-" : o.cache) << '\n';
	s << o.cache_error << '\n';
	for (auto &x : o.sites)
		s << x << ' ';
	s << '\n' << o.problems;
	return s.str();
}

outcome deserialize(const std::string &text)
{
	outcome o;
	std::istringstream s(text);
	std::string line;

	if (!(s >> o.status >> o.error >> o.sys_errno >> o.rc >> o.fill >> o.cache))
		return o;
	if (o.fill == "-")
		o.fill = "";
	if (o.cache == "-")
		o.cache = "";
	std::getline(s, line);
	std::getline(s, o.cache_error);
	std::getline(s, line);
	std::istringstream sites(line);
	std::string x;
	while (sites >> x)
		o.sites.push_back(x);
	std::string rest((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
	o.problems = rest;
	o.ran = true;
	return o;
}

// Runs @plan in a fresh child; @setup runs in the child first.
outcome in_child(const fault_plan &plan, const scenario &sc, void (*setup)(const scenario &) = nullptr)
{
	static int serial;
	std::string report = temp_path("faults-" + std::to_string(++serial) + ".json");
	int p[2];
	outcome o;

	if (pipe(p) != 0)
		return o;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		// Catch2's handlers would report the child's crash as a second run.
		for (int sig : { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT })
			signal(sig, SIG_DFL);
		alarm(60);
		if (setup)
			setup(sc);
		std::string s = serialize(run_here(plan, sc, report));
		size_t done = 0;
		while (done < s.size()) {
			ssize_t k = write(p[1], s.data() + done, s.size() - done);
			if (k <= 0)
				break;
			done += (size_t)k;
		}
		_exit(0);
	}
	close(p[1]);
	std::string text;
	char buf[4096];
	ssize_t k;
	while ((k = read(p[0], buf, sizeof(buf))) > 0)
		text.append(buf, (size_t)k);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	unlink(report.c_str());
	o = deserialize(text);
	if (WIFSIGNALED(st))
		o.signal = WTERMSIG(st);
	return o;
}

std::string describe(const fault_plan &p)
{
	std::ostringstream s;
	s << p.site << " call #" << p.nth << (p.persist ? " and after" : "") << " fails with "
	  << std::strerror(p.err);
	return s.str();
}

// The distinct sites of a clean run with how many calls each.
std::vector<std::pair<std::string, unsigned>> sites_of(const outcome &clean)
{
	std::vector<std::pair<std::string, unsigned>> v;
	std::map<std::string, unsigned> n;
	for (auto &s : clean.sites)
		if (n[s]++ == 0)
			v.push_back({ s, 0 });
	for (auto &x : v)
		x.second = n[x.first];
	return v;
}

// Fails every call of a clean run in turn, once and from then on.
void sweep(const scenario &sc, bool strict, void (*setup)(const scenario &) = nullptr)
{
	static const int errnos[] = { EPERM, ENOMEM, EACCES, EAGAIN, EIO };
	outcome clean = in_child({}, sc, setup);

	INFO("clean run: " << clean.problems);
	REQUIRE(clean.ran);
	REQUIRE(clean.signal == 0);
	REQUIRE(clean.problems.empty());
	REQUIRE(clean.status == HT_STATUS_OK);

	int k = 0, cases = 0;
	for (auto &[site, count] : sites_of(clean)) {
		for (unsigned nth = 1; nth <= count + 1; nth++) {
			fault_plan p;
			p.how = fault_how::fail;
			p.site = site;
			p.nth = nth > count ? 1 : nth;
			p.persist = nth > count; // the last round: every call fails
			p.err = errnos[k++ % 5];
			outcome o = in_child(p, sc, setup);
			cases++;
			INFO(describe(p));
			INFO("outcome: status " << o.status << ", " << ht_error_str((enum ht_error)o.error)
						<< ", errno " << o.sys_errno << ", rc " << o.rc);
			REQUIRE(o.signal == 0);
			REQUIRE(o.ran);
			CHECK(o.problems == "");
			int want = strict ? required_error(site) : -1;
			if (want >= 0) {
				CHECK(o.status == HT_STATUS_FAILED);
				CHECK(o.error == want);
				CHECK(o.sys_errno == p.err);
			}
		}
	}
	CHECK(cases >= 10);
	std::printf("swept %d failures over %zu sites:", cases, sites_of(clean).size());
	for (auto &x : sites_of(clean))
		std::printf(" %s(%u)", x.first.c_str(), x.second);
	std::printf("\n");
}

std::set<std::string> site_set(const outcome &o)
{
	return { o.sites.begin(), o.sites.end() };
}

} // namespace

TEST_CASE("a clean range remap makes the calls the fault sweep relies on", "[faults]")
{
	outcome clean = in_child({}, {});

	REQUIRE(clean.ran);
	INFO(clean.problems);
	CHECK(clean.problems.empty());
	CHECK(clean.status == HT_STATUS_OK);
	CHECK(clean.fill == "pread");
	auto s = site_set(clean);
	for (const char *need : { "open:/proc/self/maps", "read:/proc/self/maps", "mmap-anon",
				  "madvise-hugepage", "mprotect-rx", "mremap", "open:object", "pread:object" })
		CHECK(s.count(need) == 1);
}

TEST_CASE("each call of a range remap, failed in turn, leaves the code and its mappings as they were",
	  "[faults]")
{
	sweep({}, true);
}

TEST_CASE("each call of a whole-program remap, failed in turn, leaves the program as it was", "[faults]")
{
	scenario sc;
	sc.call = api::whole;
	sweep(sc, true);
}

TEST_CASE("each call of an auto-mode remap, failed in turn, leaves the program as it was", "[faults]")
{
	scenario sc;
	sc.call = api::whole;
	sc.mode = HT_MODE_AUTO;
	sweep(sc, false);
}

TEST_CASE("each call of a deferred copy in the background thread, failed in turn, leaves the program as it was",
	  "[faults][deferred]")
{
	scenario sc;
	sc.call = api::deferred;
	// Not strict: the recheck before the swap reads the maps and pagemap
	// again, and a failure there is reported as "changed" (EBUSY).
	sweep(sc, false);
}

TEST_CASE("each call of a deferred copy of what runs (copy_hot), failed in turn, leaves the program as it was",
	  "[faults][deferred]")
{
	scenario sc;
	sc.call = api::deferred;
	sc.copy_hot = true;
	// Not strict, as for the deferred copy; a failed read of the present
	// pages copies the whole span, as without the setting.
	sweep(sc, false);
}

TEST_CASE("each call of the copy a fork() makes first, failed in turn, leaves the parent and the worker as they were",
	  "[faults][deferred]")
{
	scenario sc;
	sc.call = api::at_fork;
	// Not strict, as for the background thread: the recheck before the swap.
	sweep(sc, false);
}

TEST_CASE("each call of an explicit-pages remap, failed in turn, leaves the program as it was",
	  "[faults][pool]")
{
	uintptr_t lo, hi;
	text_window(&lo, &hi);
	std::unique_ptr<setting_guard> guard;
	std::string why = ensure_pool((long)((hi - lo) / huge) + 2, guard);
	if (!why.empty()) {
		WARN("not checked: " << why);
		return;
	}
	scenario sc;
	sc.mode = HT_MODE_EXPLICIT;
	outcome clean = in_child({}, sc);
	REQUIRE(clean.ran);
	CHECK(site_set(clean).count("mmap-hugetlb") == 1);
	sweep(sc, false);
	// The one call explicit mode cannot do without.
	fault_plan p;
	p.how = fault_how::fail;
	p.site = "mmap-hugetlb";
	outcome o = in_child(p, sc);
	CHECK(o.problems == "");
	CHECK(o.status == HT_STATUS_FAILED);
	CHECK(o.error == HT_E_ALLOC);
	CHECK(o.sys_errno == EPERM);
}

namespace {
// In the child: a private hugetlbfs mount for the shared cache.
void mount_cache(const scenario &sc)
{
	if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
	    mount("none", sc.share_dir.c_str(), "hugetlbfs", 0, "pagesize=2M,mode=0700") != 0)
		_exit(3);
}

// The same, plus a first process that fills the cache, so the run is a hit.
void mount_warm_cache(const scenario &sc)
{
	mount_cache(sc);
	pid_t pid = fork();
	if (pid == 0) {
		struct ht_options opt;
		ht_options_init(&opt);
		opt.page_cache = 0; // the copy itself is under test
		opt.mode = sc.mode;
		opt.share = 1;
		opt.share_dir = sc.share_dir.c_str();
		_exit(ht_remap(&opt, nullptr, 0, nullptr) == 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
}
// Whether, in a mount namespace of its own (as mount_cache makes), the
// file /proc/self/maps names for our text can be opened.  In a chroot it
// cannot: the kernel names a mapped file by its path from the root of
// the namespace it was opened in, and a new namespace makes that path
// one from outside the chroot.  The library then cannot read the code
// from its file, and the cache rightly refuses it.
bool maps_path_opens_in_new_namespace()
{
	pid_t pid = fork();
	if (pid == 0) {
		uintptr_t a, b;
		std::string line;
		if (unshare(CLONE_NEWNS) != 0 || !maps_entry((uintptr_t)bigtext_start, &a, &b, &line))
			_exit(2);
		size_t slash = line.find('/');
		int fd = slash == std::string::npos ? -1 : open(line.substr(slash).c_str(), O_RDONLY);
		_exit(fd >= 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
} // namespace

TEST_CASE("each hugetlbfs call of the shared cache, failed in turn, leaves the program as it was",
	  "[faults][pool][share]")
{
	uintptr_t lo, hi;
	text_window(&lo, &hi);
	std::unique_ptr<setting_guard> guard;
	std::string why = is_root() ? ensure_pool(2 * (long)((hi - lo) / huge) + 4, guard)
				    : "needs root to mount hugetlbfs";
	if (why.empty() && !maps_path_opens_in_new_namespace())
		why = "in a new mount namespace /proc/self/maps names this program by a path "
		      "that does not open (a chroot)";
	if (!why.empty()) {
		WARN("not checked: " << why);
		return;
	}
	std::string dir = temp_path("share");
	REQUIRE(mkdir(dir.c_str(), 0700) == 0);
	scenario sc;
	sc.call = api::whole;
	sc.mode = HT_MODE_AUTO;
	sc.share_dir = dir;

	SECTION("cold cache (a miss fills an entry)")
	{
		outcome clean = in_child({}, sc, mount_cache);
		INFO(clean.problems << clean.cache_error);
		REQUIRE(clean.ran);
		CHECK(clean.cache == "miss");
		sweep(sc, false, mount_cache);
	}
	SECTION("warm cache (a hit maps the entry)")
	{
		outcome clean = in_child({}, sc, mount_warm_cache);
		INFO(clean.problems << clean.cache_error);
		REQUIRE(clean.ran);
		CHECK(clean.cache == "hit");
		sweep(sc, false, mount_warm_cache);
	}
	rmdir(dir.c_str());
}

TEST_CASE("reads and writes interrupted by signals (EINTR) are retried and change nothing", "[faults]")
{
	for (api a : { api::range, api::whole }) {
		scenario sc;
		sc.call = a;
		fault_plan p;
		p.how = fault_how::eintr_first;
		outcome o = in_child(p, sc);
		REQUIRE(o.ran);
		CHECK(o.problems == "");
		CHECK(o.status == HT_STATUS_OK);
		CHECK(o.error == HT_E_NONE);
		CHECK(o.fill == "pread");
	}
}

TEST_CASE("reads that return a few bytes at a time give the same result", "[faults]")
{
	for (api a : { api::range, api::whole }) {
		scenario sc;
		sc.call = a;
		fault_plan p;
		p.how = fault_how::short_io;
		outcome o = in_child(p, sc);
		REQUIRE(o.ran);
		CHECK(o.problems == "");
		CHECK(o.status == HT_STATUS_OK);
		CHECK(o.error == HT_E_NONE);
		CHECK(o.fill == "pread");
	}
}

// The one failure after which the code is gone: the kernel's mremap has
// unmapped the target and then could not allocate (docs/failure-model.md).
// The copy still holds the code at its old address: the library must put
// it back, by moving it again or, if that fails too, by copying it.
TEST_CASE("after mremap unmapped the target and failed, the code is put back and runs",
	  "[faults][residual]")
{
	for (bool again : { false, true }) {
		fault_plan p;
		p.how = fault_how::mremap_hole;
		p.site = "mremap";
		p.persist = again; // the second move fails as well: copy it back
		outcome o = in_child(p, {});
		INFO((again ? "every mremap fails" : "only the first mremap fails") << "; child signal " << o.signal
			<< "; " << o.problems);
		REQUIRE(o.signal == 0);
		REQUIRE(o.ran);
		CHECK(o.problems == "");
		if (again) {
			CHECK(o.status == HT_STATUS_FAILED);
			CHECK(o.error == HT_E_SWAP);
		}
	}
}

// Only in test-faults-ends (linked at 0x400000, not PIE, 4 KiB segments):
// the code shares its first 2 MiB page with the ELF headers, and the
// cover-ends swap replaces two mappings (r--, r-x) with one.
TEST_CASE("each call of a cover-ends remap, failed in turn, leaves the headers and the code as they were",
	  "[faults][ends]")
{
	uintptr_t lo = 0, hi = 0, hlo = 0, hhi = 0;
	std::string head;

	REQUIRE(maps_entry((uintptr_t)bigtext_start, &lo, &hi));
	// The layout this case is about: a read-only mapping of the program ends
	// where the code begins, and holds the start of the code's first 2 MiB page.
	REQUIRE(maps_entry(lo - 1, &hlo, &hhi, &head));
	INFO(head);
	REQUIRE(hhi == lo);
	REQUIRE(head.find(" r--p ") != std::string::npos);
	REQUIRE(hlo <= (lo & ~(huge - 1)));
	REQUIRE(lo % huge != 0);
	scenario sc;
	sc.call = api::whole;
	sc.cover_ends = true;
	sweep(sc, true);
}
