// Description: the text service (`hugetext serve`, docs/service.md) and the
// library's side of it.  A program started under the preload offers its
// code's file instead of filling the cache itself; the service fills root's
// shared entry (or warms the page cache) and the next start, of any user,
// maps the code huge with no private copy.  Hostile clients (descriptors
// that are no file, another user's file, a writable file, a file the sender
// does not run, malformed messages, a silent connection) are refused and
// the service keeps serving; a file changed after its entry was made, a
// full cache, an absent or dead service all leave the program as it was.
// Runs in a private mount namespace with a tmpfs over /run.
#include <catch2/catch.hpp>

#include <chrono>

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <string>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <linux/capability.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.hpp"
#include "hugetext.h"
#include "service-test.hpp"


extern "C" const char *test_skip_reason(void)
{
	if (getuid() != 0)
		return "the service runs as root, and the test mounts in a private namespace";
	if (!file_exists("/sys/kernel/mm/transparent_hugepage/shmem_enabled"))
		return "the kernel has no huge tmpfs (transparent huge pages)";
	if (read_file("/sys/kernel/mm/transparent_hugepage/enabled").find("[never]") != std::string::npos)
		return "transparent huge pages are set to never";
	if (!private_run_dir(text_dir))
		return "no private mount namespace";
	return nullptr;
}

namespace {

// Whether `hugetext warm` itself can put @prog in 2 MiB page-cache pages
// here (warmed, then dropped again to small pages); says why not.
bool warm_works(const std::string &prog)
{
	run_result probe = run_cmd({ tool(), "warm", prog });
	small_page_cache(prog);
	if (probe.status != 0)
		WARN("skipped: " + probe.out + probe.err);
	return probe.status == 0;
}

// The same program under another cache key: a copy with its build ID changed.
std::string other_program(const std::string &name, char flip)
{
	std::string path = program_copy(name);
	std::string bytes = read_file(path);
	// The note's header: name size 4, descriptor size 20, NT_GNU_BUILD_ID, "GNU".
	static const char head[] = "\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU";
	size_t at = bytes.find(std::string(head, sizeof(head)));
	REQUIRE(at != std::string::npos);
	bytes[at + sizeof(head)] ^= flip;
	int fd = open(path.c_str(), O_WRONLY);
	REQUIRE(fd >= 0);
	REQUIRE(pwrite(fd, bytes.data(), bytes.size(), 0) == (ssize_t)bytes.size());
	close(fd);
	small_page_cache(path);
	return path;
}

// A tmpfs mounted nosuid, as a user's disk image or FUSE mount is: root's
// files there hold whatever its user put in them.
struct nosuid_dir {
	std::string path = temp_path("service-nosuid", build_path("tests"));
	bool ok;
	nosuid_dir()
	{
		rmdir(path.c_str());
		ok = mkdir(path.c_str(), 0755) == 0 &&
		     mount("test-nosuid", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0755") == 0;
	}
	~nosuid_dir()
	{
		umount2(path.c_str(), MNT_DETACH);
		rmdir(path.c_str());
	}
	// Copies @from in as root's file of @mode; returns its path, or "".
	std::string put(const std::string &from, mode_t mode = 0755)
	{
		std::string bytes = read_file(from), to = path + "/" + from.substr(from.rfind('/') + 1);
		int fd = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
		bool done = fd >= 0 && write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size() &&
			    fchmod(fd, mode) == 0;
		if (fd >= 0)
			close(fd);
		return done ? to : "";
	}
};

std::vector<std::string> env(const std::string &report, const std::vector<std::string> &more = {})
{
	// The preload's defaults (the suite's main() asks for a copy at start otherwise).
	std::vector<std::string> e = { "LD_PRELOAD=" + preload(), "HUGETEXT_REPORT=" + report,
				       "HUGETEXT_MODE=thp", "HUGETEXT_COPY=auto" };
	e.insert(e.end(), more.begin(), more.end());
	return e;
}

// Runs @prog once under the preload; its output must be the plain one.
report_line run_once(const std::string &prog, const std::vector<std::string> &more = {})
{
	std::string report = temp_path("service-report.json");
	unlink(report.c_str());
	run_result r = run_cmd({ prog }, env(report, more));
	run_result plain = run_cmd({ prog });
	INFO(r.err);
	CHECK(r.status == 0);
	CHECK(r.out == plain.out);
	for (auto &l : read_report(report))
		if (l["object"] == prog && l["bytes"] != "0") {
			unlink(report.c_str());
			return l;
		}
	FAIL("no report line for the program's code");
	return {};
}

} // namespace

TEST_CASE("pure parts: offers, maps, eviction order, the cache's default size", "[service]")
{
	struct stat st = {};
	st.st_mode = S_IFREG | 0755;
	CHECK(ht_offer_refusal(&st) == nullptr);
	st.st_uid = 1000;
	CHECK(std::string(ht_offer_refusal(&st)).find("root") != std::string::npos);
	st.st_uid = 0;
	st.st_mode = S_IFREG | 0775;
	CHECK(ht_offer_refusal(&st) != nullptr);
	st.st_mode = S_IFDIR | 0755;
	CHECK(ht_offer_refusal(&st) != nullptr);
	st.st_mode = S_IFREG | 0750; // an entry (0444) would show it to everyone
	CHECK(std::string(ht_offer_refusal(&st)).find("read") != std::string::npos);

	struct statfs fs = {};
	fs.f_type = 0xEF53; // ext4
	CHECK(ht_offer_mount_refusal(&fs) == nullptr);
	fs.f_flags = ST_NOSUID;
	CHECK(ht_offer_mount_refusal(&fs) != nullptr);
	fs.f_flags = ST_NODEV | ST_NOEXEC;
	CHECK(ht_offer_mount_refusal(&fs) == nullptr);
	fs.f_type = 0x65735546; // FUSE
	CHECK(ht_offer_mount_refusal(&fs) != nullptr);

	ht_offer m = offer_of(0x200000, 0x400000, 0x3ff000);
	CHECK(ht_offer_check(&m, 0x800000) == nullptr);
	CHECK(ht_offer_check(&m, 0x400000) != nullptr); // past the file's end
	m = offer_of(0x200001, 0x400000, 0x3ff000);
	CHECK(ht_offer_check(&m, 0x800000) != nullptr);
	m = offer_of(0x200000, 0x300000, 0x2ff000);
	CHECK(ht_offer_check(&m, 0x800000) != nullptr);
	m = offer_of(0x200000, 0x400000, 0x100000); // 3 MiB of zeros: not a code span
	CHECK(ht_offer_check(&m, 0x800000) != nullptr);
	m = offer_of(0x200000, 0x400000, 0x400000);
	m.magic[0] = 'X';
	CHECK(ht_offer_check(&m, 0x800000) != nullptr);

	std::string maps = "00400000-00401000 r--p 00000000 08:01 1234 /x\n"
			   "00600000-02c00000 r-xp 00200000 08:01 5678 /y\n";
	CHECK(hte_maps_runs_file(maps.data(), maps.size(), makedev(8, 1), 5678));
	CHECK_FALSE(hte_maps_runs_file(maps.data(), maps.size(), makedev(8, 1), 1234)); // not executable
	CHECK_FALSE(hte_maps_runs_file(maps.data(), maps.size(), makedev(8, 2), 5678));

	// Never mapped since filled first (oldest fill first), then least recently mapped.
	hte_entry_age e[] = { { 500, 100, 1 }, { 50, 60, 1 }, { 300, 100, 1 }, { 40, 40, 1 } };
	size_t idx[4];
	hte_eviction_order(e, 4, idx);
	CHECK(idx[0] == 3);
	CHECK(idx[1] == 1);
	CHECK(idx[2] == 2);
	CHECK(idx[3] == 0);

	CHECK(hte_auto_cache_size(24ULL << 30) == (24ULL << 30) / 16);
	CHECK(hte_auto_cache_size(1ULL << 30) == 256ULL << 20);

	uid_t u = 1;
	CHECK(hte_user_dir_uid("hugetext-0", &u) == 1);
	CHECK(u == 0);
	CHECK(hte_user_dir_uid("hugetext-4294967294", &u) == 1);
	CHECK(u == 4294967294u);
	for (const char *no : { "hugetext-", "hugetext-007", "hugetext-1x", "hugetext--1", "hugetext-4294967296",
				"hugetext-99999999999999999999", "shared", "hugetext-0.untrusted.1.2" })
		CHECK(hte_user_dir_uid(no, &u) == 0);
	CHECK(hte_auto_cache_size(1ULL << 40) == 4ULL << 30);
}

TEST_CASE("the first start offers its code and copies nothing; the next maps root's entry", "[service]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	std::string prog = program_copy("service-prog");
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());

	REQUIRE(span_len >= 32u << 20); // the fixture's code, read from its headers
	report_line first = run_once(prog, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(first["cache"] == "offered");
	CHECK(first["status"] == "skipped"); // the default's wait: no copy at this start
	CHECK(first.count("private_huge_bytes") == 0);
	CHECK(std::stoull(first["start"]) % (2 << 20) == 0);
	CHECK(std::stoull(first["bytes"]) == span_len);
	REQUIRE(svc.wait_for("filled_total", 1));
	INFO(svc.text());
	std::string entry = cache_entry(shared_dir);
	REQUIRE(!entry.empty());
	struct stat st;
	REQUIRE(stat(entry.c_str(), &st) == 0);
	CHECK(st.st_uid == 0);
	CHECK((st.st_mode & 0777) == 0444);

	report_line second = run_once(prog, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(second["status"] == "ok");
	CHECK(second["cache"] == "hit");
	CHECK(second["huge_bytes"] == second["bytes"]);
	CHECK(second.count("private_huge_bytes") == 0);
	CHECK(svc.num("offers") == 1); // a hit offers nothing

	SECTION("another file with the same build ID does not map the entry")
	{
		// Root's entries are named by their file: a file that claims the
		// same build ID (here the same bytes, elsewhere a user's look-alike)
		// is offered on its own, never served another file's entry.
		std::string twin = program_copy("service-twin");
		report_line t = run_once(twin, { "HUGETEXT_PAGE_CACHE=0" });
		CHECK(t["cache"] == "offered");
		CHECK(t["status"] == "skipped");
		CHECK(svc.wait_for("filled_total", 2));
	}

	SECTION("another user's start maps the same entry")
	{
		// Root's first start is of the same file, in a directory both can
		// reach on a mount no user made: /tmp, unless it is nosuid (Debian's
		// tmpfs /tmp), then /var/tmp (in the kernel matrix's guests an
		// overlay whose files' maps and stat disagree: /tmp there).
		struct statvfs tmp_fs;
		bool tmp_nosuid = statvfs("/tmp", &tmp_fs) == 0 && (tmp_fs.f_flag & ST_NOSUID);
		world_dir w(tmp_nosuid ? "/var/tmp" : "/tmp");
		REQUIRE(!w.path.empty());
		std::string mine = w.put(prog);
		std::string lib = w.put(preload());
		REQUIRE(!mine.empty());
		REQUIRE(!lib.empty());
		CHECK(run_once(mine, { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "offered");
		REQUIRE(svc.wait_for("filled_total", 2));
		std::string report = w.path + "/report.json";
		// Made first, writable by nobody: setpriv (root) would make it root's.
		int rfd = open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
		REQUIRE(rfd >= 0);
		REQUIRE(fchmod(rfd, 0666) == 0);
		close(rfd);
		run_result r = run_cmd({ "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", mine },
				       { "LD_PRELOAD=" + lib, "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=thp",
					 "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_COPY=auto" });
		INFO(r.err);
		INFO(read_file(report));
		CHECK(r.status == 0);
		bool hit = false;
		for (auto &l : read_report(report))
			hit |= l["object"] == mine && l["cache"] == "hit" && l["huge_bytes"] == l["bytes"] &&
			       l["bytes"] != "0";
		CHECK(hit);
	}
}

TEST_CASE("where the file system keeps 2 MiB pages, the next start is zero-copy without a policy", "[service]")
{
	std::string prog = program_copy("service-warm");
	if (!warm_works(prog))
		return;
	service svc;
	REQUIRE(svc.alive());
	report_line first = run_once(prog, { "HUGETEXT_COPY=never", "HUGETEXT_PAGE_CACHE=1" });
	CHECK(first["cache"] == "offered");
	CHECK(first.count("private_huge_bytes") == 0);
	// Warmed once nothing maps the file any more; where the service could
	// not tell another process's mapping from a file system that keeps no
	// 2 MiB pages (a busy machine: the test's own plain run), it filled the
	// shared cache instead.  Either way the next start copies nothing.
	bool served = false;
	for (int i = 0; i < 600 && !served; i++) {
		served = svc.num("warmed_total") + svc.num("filled_total") >= 1;
		usleep(50000);
	}
	INFO(svc.text());
	REQUIRE(served);
	report_line second = run_once(prog, { "HUGETEXT_COPY=never", "HUGETEXT_PAGE_CACHE=1" });
	if (svc.num("warmed_total") >= 1)
		CHECK(second["kept_bytes"] == second["bytes"]);
	else
		CHECK(second["cache"] == "hit");
	CHECK(second["huge_bytes"] == second["bytes"]);
	CHECK(second.count("private_huge_bytes") == 0);
	if (svc.num("warmed_total") < 1) {
		WARN("the service filled the cache instead of warming (a busy machine): the page cache's "
		     "reclaim, keep and repair are not checked");
		return;
	}

	// The warmed file loses one 2 MiB page (reclaim): the default start
	// keeps the rest and offers the file again, with no private copy to
	// repair it; without the service it repairs (copies, reads back).
	int fd = open(prog.c_str(), O_RDONLY);
	REQUIRE(fd >= 0);
	REQUIRE(posix_fadvise(fd, 16 << 20, 2 << 20, POSIX_FADV_DONTNEED) == 0);
	close(fd);
	report_line third = run_once(prog, { "HUGETEXT_PAGE_CACHE=1" });
	INFO("third start: " << third["status"] << ", " << third["error"] << ", kept " << third["kept_bytes"]
			      << ", cache " << third["cache"] << " " << third["cache_error"]);
	if (!kernel_has_pagemap_scan()) {
		// Before 6.7 smaps cannot say which 2 MiB pages are huge: nothing
		// is kept, nothing copied, and the file is offered to be warmed again.
		CHECK(third["status"] == "skipped");
		CHECK(third["error"] == ht_error_str(HT_E_DEFERRED));
		CHECK(third["cache"] == "offered");
		CHECK(third.count("private_huge_bytes") == 0);
		return;
	}
	REQUIRE(!third["kept_bytes"].empty());
	CHECK(std::stoul(third["kept_bytes"]) + (2u << 20) == std::stoul(third["bytes"]));
	CHECK(third["huge_bytes"] == third["kept_bytes"]);
	CHECK(third["cache"] == "offered");
	CHECK(third.count("private_huge_bytes") == 0);
	report_line alone = run_once(prog, { "HUGETEXT_PAGE_CACHE=1", "HUGETEXT_SERVICE=0" });
	INFO("alone: " << alone["status"] << ", " << alone["error"] << ", kept " << alone["kept_bytes"]);
	CHECK(alone["huge_bytes"] == alone["bytes"]);
	CHECK(alone["kept_bytes"] == third["kept_bytes"]);
	CHECK(alone.count("private_huge_bytes") == 1);
}

TEST_CASE("a span off the 2 MiB grid is filled into the cache at once, never warmed", "[service]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	std::string prog = program_copy("service-offgrid");
	// Warming is on: an offer on the grid would be warmed first where the file system keeps 2 MiB pages.
	service svc;
	REQUIRE(svc.alive());
	// The fixture's span 4 KiB on, as a library loaded at a pinned phase off the grid offers it:
	// the page cache's 2 MiB pages start at multiples of 2 MiB of the file, so none can map it.
	const uint64_t off = span_off + 4096, len = span_len - (2u << 20);
	pid_t child = fork();
	if (child == 0) {
		int fd = open(prog.c_str(), O_RDONLY | O_CLOEXEC);
		void *x = fd >= 0 ? mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)off) : MAP_FAILED;
		ht_offer m = offer_of(off, len, len);
		_exit(x != MAP_FAILED && send_raw(&m, sizeof(m), { fd }) == 0 ? 0 : 1);
	}
	int status = -1;
	REQUIRE(waitpid(child, &status, 0) == child);
	REQUIRE(status == 0);
	REQUIRE(svc.wait_for("filled_total", 1));
	INFO(svc.text());
	CHECK(svc.num("warms") == 0);
	CHECK(svc.num("warmed_total") == 0);
	CHECK(svc.text().find("off the 2 MiB grid at file offset") != std::string::npos);
	// The entry holds the file's bytes from that offset, named by it.
	std::string entry = cache_entry(shared_dir);
	REQUIRE(!entry.empty());
	struct stat st;
	REQUIRE(stat(entry.c_str(), &st) == 0);
	CHECK((uint64_t)st.st_size == len);
	std::string bytes = read_file(prog), got = read_file(entry);
	REQUIRE(got.size() == len);
	CHECK(got == bytes.substr(off, len));
}

TEST_CASE("a file that others still map is warmed again less and less often, then all of it", "[service]")
{
	std::string prog = program_copy("service-backoff");
	if (!warm_works(prog))
		return;
	// Another process (this one) maps one page of the code: its 2 MiB
	// stays in small pages, every warm can take only the rest.
	int fd = open(prog.c_str(), O_RDONLY);
	REQUIRE(fd >= 0);
	uint64_t page = span_off + (4 << 20);
	void *held = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, (off_t)page);
	REQUIRE(held != MAP_FAILED);
	(void)*(volatile char *)held;
	service svc;
	REQUIRE(svc.alive());
	// The sender runs the file, offers it and is gone.
	CHECK(offer_from_runner(prog) == 0);
	// (A loaded machine may take a while: the suite runs beside it.)
	bool warmed_once = svc.wait_for("warms", 1, 60);
	INFO(svc.text());
	INFO("service log: " << read_file(svc.log) << (svc.alive() ? "" : " (the service is gone)"));
	REQUIRE(warmed_once);
	CHECK(svc.num("pending") == 1);
	CHECK(svc.num("warmed_total") == 0);
	// Two more warms: one a second would take 2 s; waits of 2 then 4 s
	// take 6 (the service looks once a second: at least 4 s here).  A
	// loaded machine can only make it longer.
	long first = svc.num("warms");
	auto t0 = std::chrono::steady_clock::now();
	REQUIRE(svc.wait_for("warms", first + 2, 60));
	double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	CHECK(took >= 4.0);
	CHECK(svc.num("pending") == 1);
	CHECK(svc.num("warmed_total") == 0);
	// Once nothing maps it any more, the next warm takes all of it: the
	// service kept trying.
	munmap(held, 4096);
	close(fd);
	CHECK(svc.wait_for("warmed_total", 1, 60));
	CHECK(svc.num("pending") == 0);
}

TEST_CASE("hostile clients are refused and the service goes on serving", "[service]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	std::string prog = program_copy("service-hostile");
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	size_t fds_before = open_fds(svc.pid);
	std::string fds_were = fd_list(svc.pid);
	long refused = 0;
	auto refused_more = [&](const std::string &why) {
		INFO(why);
		INFO(svc.text());
		CHECK(svc.wait_for("refused_total", refused + 1, 5));
		CHECK(svc.text().find(why) != std::string::npos);
		refused = svc.num("refused_total");
	};
	ht_offer good = offer_of(span_off, span_len, span_len);

	int p[2];
	REQUIRE(pipe(p) == 0);
	REQUIRE(send_raw(&good, sizeof(good), { p[0] }) == 0);
	refused_more("not a regular file");
	close(p[0]);
	close(p[1]);

	int dir = open("/", O_RDONLY | O_DIRECTORY);
	REQUIRE(send_raw(&good, sizeof(good), { dir }) == 0);
	refused_more("not a regular file");
	close(dir);

	std::string theirs = temp_path("service-theirs", build_path("tests"));
	int fd = open(theirs.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(fchown(fd, 65534, 65534) == 0);
	REQUIRE(send_raw(&good, sizeof(good), { fd }) == 0);
	refused_more("does not belong to root");
	REQUIRE(fchown(fd, 0, 0) == 0);
	REQUIRE(fchmod(fd, 0666) == 0);
	REQUIRE(send_raw(&good, sizeof(good), { fd }) == 0);
	refused_more("group- or world-writable");
	// Root's, written by nobody else, but not for others to read: an entry
	// (mode 0444) would show it to every user.
	REQUIRE(fchmod(fd, 0640) == 0);
	REQUIRE(send_raw(&good, sizeof(good), { fd }) == 0);
	refused_more("others may not read the file");
	close(fd);

	// Descriptors that do not read: root must not read through them what
	// the sender could not.
	int opath = open(prog.c_str(), O_PATH);
	REQUIRE(opath >= 0);
	REQUIRE(send_raw(&good, sizeof(good), { opath }) == 0);
	refused_more("the descriptor is not open for reading");
	close(opath);
	int wronly = open(prog.c_str(), O_WRONLY);
	REQUIRE(wronly >= 0);
	REQUIRE(send_raw(&good, sizeof(good), { wronly }) == 0);
	refused_more("the descriptor is not open for reading");
	close(wronly);

	// Root's file on a nosuid mount (what a user's disk image or FUSE
	// mount looks like: root-owned files holding that user's bytes).
	{
		nosuid_dir nosuid;
		REQUIRE(nosuid.ok);
		std::string there = nosuid.put(prog);
		REQUIRE(!there.empty());
		int nfd = open(there.c_str(), O_RDONLY);
		REQUIRE(nfd >= 0);
		REQUIRE(send_raw(&good, sizeof(good), { nfd }) == 0);
		refused_more("nosuid or FUSE mount");
		close(nfd);
	}

	// The real program, but we do not run it.
	int pfd = open(prog.c_str(), O_RDONLY);
	REQUIRE(pfd >= 0);
	REQUIRE(send_raw(&good, sizeof(good), { pfd }) == 0);
	refused_more("the sender does not run this file");

	// Numbers that do not describe a code span of this file.
	void *run = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, pfd, 0);
	REQUIRE(run != MAP_FAILED);
	ht_offer bad = offer_of(span_off, 3 << 20, (3 << 20) - 4096);
	REQUIRE(send_raw(&bad, sizeof(bad), { pfd }) == 0);
	refused_more("span length not whole 2 MiB pages");
	bad = offer_of(1ULL << 40, span_len, span_len);
	REQUIRE(send_raw(&bad, sizeof(bad), { pfd }) == 0);
	refused_more("span lies outside the file");
	// The file's last page: symbols, past the code (arm64's code starts at offset 0).
	struct stat pst;
	REQUIRE(fstat(pfd, &pst) == 0);
	uint64_t last = ((uint64_t)pst.st_size - 1) / 4096 * 4096;
	REQUIRE(last >= span_off + span_len);
	bad = offer_of(last, 2 << 20, (uint64_t)pst.st_size - last);
	REQUIRE(send_raw(&bad, sizeof(bad), { pfd }) == 0);
	refused_more("not in the file's code");

	// Malformed messages: no descriptor, two, a short message.
	REQUIRE(send_raw(&good, sizeof(good), {}) == 0);
	refused_more("malformed message");
	REQUIRE(send_raw(&good, sizeof(good), { pfd, pfd }) == 0);
	refused_more("malformed message");
	REQUIRE(send_raw(&good, 7, { pfd }) == 0);
	refused_more("malformed message");

	// A client that connects and says nothing holds the service a moment only.
	struct sockaddr_un a = {};
	a.sun_family = AF_UNIX;
	std::strcpy(a.sun_path, sock.c_str());
	int quiet = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	REQUIRE(connect(quiet, (struct sockaddr *)&a, sizeof(a)) == 0);

	// A user made the cache's shared/ first (its mount is mode 1777): the
	// service moves it aside and fills its own.
	REQUIRE(mkdir(shared_dir.c_str(), 0777) == 0);
	REQUIRE(chmod(shared_dir.c_str(), 0777) == 0);
	REQUIRE(chown(shared_dir.c_str(), 65534, 65534) == 0);
	// And other users' own directories, made first by nobody: root's (and
	// uid 1000's) starts would refuse the cache for good.  Nobody's own,
	// and a name that is no user's directory, stay.
	for (std::string name : { "hugetext-0", "hugetext-1000", "hugetext-65534", "hugetext-007" }) {
		std::string p = text_dir + "/" + name;
		REQUIRE(mkdir(p.c_str(), 0700) == 0);
		REQUIRE(chown(p.c_str(), 65534, 65534) == 0);
	}

	// Still serving: a well-formed offer of a file we run waits while we
	// run it (the service reads and drops nothing under a running sender)
	// and is filled once we no longer do.
	REQUIRE(send_raw(&good, sizeof(good), { pfd }) == 0);
	CHECK(svc.wait_for("pending", 1, 20));
	// Two more of the service's tries while we still run it: no fill.
	long tried = svc.num("tries");
	CHECK(svc.wait_for("tries", tried + 2, 20));
	CHECK(svc.num("filled_total") == 0);
	munmap(run, 4096);
	CHECK(svc.wait_for("filled_total", 1, 20));
	close(quiet);
	close(pfd);
	CHECK(svc.alive());
	// Every descriptor it was sent is closed again.
	size_t fds_after = open_fds_settled(svc.pid, fds_before);
	INFO("before:\n" << fds_were << "after:\n" << fd_list(svc.pid));
	CHECK(fds_after <= fds_before);
	CHECK(cache_entry(shared_dir) != "");
	struct stat sst;
	REQUIRE(lstat(shared_dir.c_str(), &sst) == 0);
	CHECK(sst.st_uid == 0);
	CHECK((sst.st_mode & 0777) == 0755);
	CHECK(svc.text().find("moved aside") != std::string::npos);
	CHECK(!file_exists(text_dir + "/hugetext-0"));
	CHECK(!file_exists(text_dir + "/hugetext-1000"));
	CHECK(file_exists(text_dir + "/hugetext-65534"));
	CHECK(file_exists(text_dir + "/hugetext-007"));
	CHECK(svc.text().find("hugetext-0 belonged to uid 65534: moved aside") != std::string::npos);
	// Root's next start makes and uses its own directory again.
	std::string mine = other_program("service-after-squat", 0x44);
	CHECK(run_once(mine, { "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_SERVICE=0" })["cache"] == "miss");
}

TEST_CASE("an offer whose sender has exited before the service reads it is taken on the file's checks",
	  "[service]")
{
	// A short-lived program (a compiler's cc1) may be gone, its maps with
	// it, by the time the service reads them: the service is stopped while
	// a child sends and is reaped, so that it always reads too late here.
	text_cache cache;
	REQUIRE(cache.ok);
	std::string prog = program_copy("service-gone");
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	REQUIRE(kill(svc.pid, SIGSTOP) == 0);
	pid_t child = fork();
	if (child == 0) {
		int fd = open(prog.c_str(), O_RDONLY);
		ht_offer good = offer_of(span_off, span_len, span_len);
		_exit(fd >= 0 && send_raw(&good, sizeof(good), { fd }) == 0 ? 0 : 1);
	}
	int status = -1;
	REQUIRE(waitpid(child, &status, 0) == child);
	REQUIRE(kill(svc.pid, SIGCONT) == 0);
	CHECK(status == 0);
	INFO(svc.text());
	CHECK(svc.wait_for("filled_total", 1));
	CHECK(svc.num("refused_total") == 0);
	// The next start maps the entry: the same as when the sender was read.
	report_line next = run_once(prog, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(next["cache"] == "hit");
	CHECK(next.count("private_huge_bytes") == 0);
}

TEST_CASE("an entry its file no longer matches is not mapped, and the service replaces it", "[service]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	std::string prog = program_copy("service-changed");
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	CHECK(run_once(prog, { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "offered");
	REQUIRE(svc.wait_for("filled_total", 1));
	// The same build ID, other bytes: the padding between the functions (runs
	// of int3 on x86-64, of zeros on arm64) rewritten in place.
	std::string bytes = read_file(prog);
	const char pad = bytes[span_off + span_len - 1], other = pad ? 0 : (char)0xcc;
	size_t changed = 0;
	for (size_t at = span_off; at < span_off + span_len;) {
		size_t run = 0;
		while (at + run < span_off + span_len && bytes[at + run] == pad)
			run++;
		if (run >= 64) {
			std::memset(&bytes[at + 16], other, run - 32);
			changed += run - 32;
		}
		at += run ? run : 1;
	}
	REQUIRE(changed > span_len / 2);
	// Written with its time put back: the entry's name (device, inode, size,
	// time) still fits, and only the bytes tell (a file rewritten with a new
	// time simply gets an entry of its own).
	struct stat before;
	REQUIRE(stat(prog.c_str(), &before) == 0);
	int fd = open(prog.c_str(), O_WRONLY);
	REQUIRE(fd >= 0);
	REQUIRE(pwrite(fd, bytes.data(), bytes.size(), 0) == (ssize_t)bytes.size());
	struct timespec times[2] = { before.st_atim, before.st_mtim };
	REQUIRE(futimens(fd, times) == 0);
	close(fd);
	// The program runs as before; the report says why the entry was not used.
	report_line l = run_once(prog, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(l["cache"] == "offered");
	CHECK(l["cache_error"].find("differs from the code") != std::string::npos);
	CHECK(l.count("private_huge_bytes") == 0);
	// The service compares the whole entry with the file, and fills it again.
	INFO(svc.text());
	REQUIRE(svc.wait_for("filled_total", 2));
	CHECK(svc.text().find("stale") != std::string::npos);
	l = run_once(prog, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(l["cache"] == "hit");
	CHECK(l["huge_bytes"] == l["bytes"]);
}

TEST_CASE("a full cache evicts what no process mapped; what cannot fit is refused", "[service]")
{
	// Room for one fixture's span (38 MiB), not two.
	text_cache cache("60m");
	REQUIRE(cache.ok);
	std::string one = program_copy("service-full-1");
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	CHECK(run_once(one, { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "offered");
	REQUIRE(svc.wait_for("filled_total", 1));
	std::string first = cache_entry(shared_dir);
	REQUIRE(!first.empty());
	// Another program (another build ID): the first entry goes.
	std::string two = other_program("service-full-2", 0x55);
	CHECK(run_once(two, { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "offered");
	INFO(svc.text());
	REQUIRE(svc.wait_for("filled_total", 2));
	CHECK(svc.num("evicted_total") == 1);
	CHECK(!file_exists(first));

	// A span larger than the whole cache is refused, and nothing is evicted for it.
	text_cache tiny("20m");
	REQUIRE(tiny.ok);
	long refused = svc.num("refused_total");
	CHECK(run_once(other_program("service-full-3", 0x77), { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "offered");
	CHECK(svc.wait_for("refused_total", refused + 1));
	CHECK(svc.text().find("the shared cache is full") != std::string::npos);
	CHECK(svc.num("evicted_total") == 1);
}

TEST_CASE("what the service would refuse is not offered: the start fills the user's own entry", "[service]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	// Root's program on a nosuid mount, and one others may not read: the
	// library knows the service's answer and does not ask (one message and
	// a refusal in the state file at every start, before).
	nosuid_dir nosuid;
	REQUIRE(nosuid.ok);
	std::string there = nosuid.put(other_program("service-nosuid-prog", 0x11));
	REQUIRE(!there.empty());
	report_line l = run_once(there, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(l["cache"] == "miss");
	CHECK(l["status"] == "ok");
	std::string closed = other_program("service-closed", 0x22);
	REQUIRE(chmod(closed.c_str(), 0750) == 0);
	l = run_once(closed, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(l["cache"] == "miss");
	CHECK(l["status"] == "ok");
	INFO(svc.text());
	CHECK(svc.num("offers") == 0);
	CHECK(svc.num("refused_total") == 0);
	// The same bytes where the service may serve them are offered.
	CHECK(run_once(program_copy("service-open"), { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "offered");
	CHECK(svc.wait_for("offers", 1, 5));
}

// /etc with files of our own over it, for this namespace only (an overlay):
// a set-ID program ignores LD_PRELOAD and HUGETEXT_*, not these.
struct etc_overlay {
	std::string top = temp_path("service-etc", build_path("tests"));
	bool ok = false;
	explicit etc_overlay(const std::vector<std::pair<std::string, std::string>> &files)
	{
		std::string opts = "lowerdir=/etc,upperdir=" + top + "/u,workdir=" + top + "/w";
		rmdir(top.c_str());
		if (mkdir(top.c_str(), 0755) < 0 || mount("test-etc", top.c_str(), "tmpfs", 0, "size=16m") < 0)
			return;
		mkdir((top + "/u").c_str(), 0755);
		mkdir((top + "/w").c_str(), 0755);
		if (mount("test-etc", "/etc", "overlay", 0, opts.c_str()) < 0)
			return;
		ok = true;
		for (auto &f : files) {
			FILE *o = std::fopen(("/etc/" + f.first).c_str(), "w");
			ok = ok && o && std::fputs(f.second.c_str(), o) >= 0;
			if (o)
				std::fclose(o);
		}
	}
	~etc_overlay()
	{
		if (ok || file_exists(top + "/w"))
			umount2("/etc", MNT_DETACH);
		umount2(top.c_str(), MNT_DETACH);
		rmdir(top.c_str());
	}
};

TEST_CASE("a program with file capabilities or set-group-ID never maps its user's own entry",
	  "[service]")
{
	// Such a program keeps its user's euid, so its user's cache directory:
	// an entry the user wrote could put the user's code in it.
	text_cache cache;
	REQUIRE(cache.ok);
	struct statvfs tmp_fs;
	bool tmp_nosuid = statvfs("/tmp", &tmp_fs) == 0 && (tmp_fs.f_flag & ST_NOSUID);
	world_dir w(tmp_nosuid ? "/var/tmp" : "/tmp"); // nosuid would drop the privilege
	REQUIRE(!w.path.empty());
	std::string lib = w.put(preload());
	// Three copies of one program (one build ID: one entry of the user's).
	std::string caps = w.put(program_copy("service-caps"));
	std::string sgid = w.put(program_copy("service-sgid"));
	std::string plain_copy = w.put(program_copy("service-plain"));
	REQUIRE(!lib.empty());
	REQUIRE(!caps.empty());
	REQUIRE(!sgid.empty());
	REQUIRE(!plain_copy.empty());
	// cap_net_bind_service, permitted and effective: AT_SECURE for its user.
	struct vfs_cap_data cap = {};
	cap.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
	cap.data[0].permitted = 1u << CAP_NET_BIND_SERVICE;
	REQUIRE(setxattr(caps.c_str(), "security.capability", &cap, sizeof(cap), 0) == 0);
	REQUIRE(chown(sgid.c_str(), 0, 0) == 0);
	REQUIRE(chmod(sgid.c_str(), 02755) == 0);

	const char *san = std::getenv("HT_SANITIZER_PRELOAD"); // its runtime first, in the sanitizer build
	std::string first = san && *san ? std::string(san) + "\n" : "";
	etc_overlay etc({ { "ld.so.preload", first + lib + "\n" }, { "hugetext.conf", "verbose = 1\nservice = 0\n" } });
	REQUIRE(etc.ok);
	std::string dir = text_dir + "/hugetext-65534";
	auto as_nobody = [&](const std::string &p) {
		run_result r = run_cmd({ "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", p }, {});
		INFO(p);
		INFO(r.err);
		CHECK(r.status == 0);
		CHECK(r.err.find(p) != std::string::npos); // the preload's line: it ran
		return r.err;
	};

	std::string e = as_nobody(caps);
	CHECK(e.find("privileged process") != std::string::npos);
	CHECK(cache_entry(dir).empty()); // nothing filled either
	// The same bytes, unprivileged: its user's entry is filled and mapped.
	e = as_nobody(plain_copy);
	CHECK(e.find("cache miss") != std::string::npos);
	REQUIRE(!cache_entry(dir).empty());
	CHECK(as_nobody(plain_copy).find("cache hit") != std::string::npos);
	// Now that the user's entry exists, the privileged ones still do not map it.
	e = as_nobody(caps);
	CHECK(e.find("cache hit") == std::string::npos);
	CHECK(e.find("privileged process") != std::string::npos);
	// The sanitizer's runtime cannot start in a set-group-ID process (it
	// reads its options from /proc/self/environ, root's then).
	if (san && *san) {
		WARN("sanitizer build: the set-group-ID program is not run");
		return;
	}
	e = as_nobody(sgid);
	CHECK(e.find("cache hit") == std::string::npos);
}

TEST_CASE("started by socket activation, the service serves the socket it is handed", "[service]")
{
	// hugetext-serve.socket makes the socket and hands it over as
	// descriptor 3 (LISTEN_PID, LISTEN_FDS): systemd is not PID 1 here, so
	// the test plays its part.
	text_cache cache;
	REQUIRE(cache.ok);
	std::string prog = program_copy("service-activated");
	unlink(sock.c_str());
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {};
	a.sun_family = AF_UNIX;
	std::strcpy(a.sun_path, sock.c_str());
	REQUIRE(bind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	REQUIRE(chmod(sock.c_str(), 0666) == 0);
	REQUIRE(listen(s, 64) == 0);
	{
		service svc({ "--no-warm" }, s);
		REQUIRE(svc.alive());
		CHECK(run_once(prog, { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "offered");
		INFO(svc.text() << read_file(svc.log));
		CHECK(svc.wait_for("filled_total", 1));
		CHECK(run_once(prog, { "HUGETEXT_PAGE_CACHE=0" })["cache"] == "hit");
	}
	close(s);

	// Anything else as descriptor 3 is refused, with a message.
	int p[2];
	REQUIRE(pipe(p) == 0);
	service bad({ "--no-warm" }, p[0]);
	int status = -1;
	for (int i = 0; i < 500 && waitpid(bad.pid, &status, WNOHANG) == 0; i++)
		usleep(10000);
	bad.pid = -1;
	close(p[0]);
	close(p[1]);
	CHECK(WIFEXITED(status));
	CHECK(WEXITSTATUS(status) == 1);
	CHECK(read_file(bad.log).find("descriptor 3 is not a listening local SEQPACKET socket") != std::string::npos);
}

TEST_CASE("no service, a dead one, or the setting off: nothing offered, the program as before",
	  "[service]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	std::string prog = program_copy("service-absent");
	unlink(sock.c_str());
	// Absent: the library fills this user's own entry, as before the service.
	report_line l = run_once(prog, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(l["cache"] == "miss");
	CHECK(l["status"] == "ok");

	// Dead: a socket file nobody listens on.
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	struct sockaddr_un a = {};
	a.sun_family = AF_UNIX;
	std::strcpy(a.sun_path, sock.c_str());
	REQUIRE(bind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	close(s);
	std::string other = other_program("service-dead", 0x33);
	l = run_once(other, { "HUGETEXT_PAGE_CACHE=0" });
	CHECK(l["cache"] == "miss");
	unlink(sock.c_str());

	// Off: HUGETEXT_SERVICE=0 never offers; `service = 0` stops the service itself.
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	text_cache fresh;
	REQUIRE(fresh.ok);
	l = run_once(prog, { "HUGETEXT_PAGE_CACHE=0", "HUGETEXT_SERVICE=0" });
	CHECK(l["cache"] == "miss");
	CHECK(svc.num("offers") == 0);

	std::string conf = temp_path("service-off.conf");
	FILE *f = std::fopen(conf.c_str(), "w");
	REQUIRE(f);
	std::fputs("service = 0\n", f);
	std::fclose(f);
	run_result off = run_cmd({ tool(), "serve", "--config", conf, "--socket", "/run/hugetext/off.sock" });
	CHECK(off.status == 0);
	CHECK(off.out.find("off") != std::string::npos);
	CHECK(!file_exists("/run/hugetext/off.sock"));
}
