// Description: the preload in a container's layout, as the OCI hook makes
// it (the containers contract), built by hand in a private mount namespace
// of this test, without podman: the program on overlayfs, whose lower
// layer the program cannot reach by its host path; /run/hugetext a
// read-only tmpfs with the preload, the service's socket and, bound
// read-only over text/shared, the container's view of the shared cache;
// the program under a filter like a container runtime's (clone3 answered
// ENOSYS).  There the preload must do what it does on the host: defer the
// private copy, offer the overlay file to the service, map the view's
// entry named by the file as fstat() shows it in the container, keep the
// page cache's 2 MiB pages, say why its own cache directory cannot be
// made, at most once per process, and nothing on stderr.  Where the
// maps and fstat() name the file differently (Linux 6.1: the lower
// layer's device in the maps, the overlay's in fstat() on Podman's
// storage), it must prove the file the same, and never read another file
// by a name.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"
#include "hugetext.h"

extern "C" {
#include "cache.h"
#include "service.h"
}

namespace {

// The scratch tree on the build directory's file system (the lower layer
// there, so that its page cache is a disk file's), made once.
const std::string base = build_path("tests") + "/hugetext-test-container-" + std::to_string(getpid());
const std::string lower = base + "/lower", rw = base + "/rw", merged = base + "/merged";
const std::string host_text = base + "/text", view = host_text + "/shared/c/one";
const std::string sock_path = "/run/ct-service.sock";
const std::string hook_dir = "/run/hugetext";

bool sh(const std::string &cmd)
{
	return run_prog({ "sh", "-c", cmd }).status == 0;
}

// What the machine lacks for this test, or "": done once, before any case.
std::string setup_namespace()
{
	if (unshare(CLONE_NEWNS) != 0)
		return std::string("no private mount namespace: ") + strerror(errno);
	if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
		return "cannot make the mounts private";
	if (mount("ct-run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0 ||
	    mkdir(hook_dir.c_str(), 0755) != 0)
		return "cannot mount a tmpfs over /run";
	if (!sh("rm -rf '" + base + "' && mkdir -p '" + lower + "' '" + rw + "' '" + merged + "' '" + host_text + "'"))
		return "cannot make the scratch directories";
	if (mount("ct-probe", rw.c_str(), "tmpfs", 0, "mode=0755") != 0)
		return "cannot mount a tmpfs";
	std::string opts = "lowerdir=" + lower + ",upperdir=" + rw + "/upper,workdir=" + rw + "/work";
	bool overlay = mkdir((rw + "/upper").c_str(), 0755) == 0 && mkdir((rw + "/work").c_str(), 0755) == 0 &&
		       mount("ct-overlay", merged.c_str(), "overlay", 0, opts.c_str()) == 0;
	std::string why = overlay ? "" : std::string("cannot mount overlayfs: ") + strerror(errno);
	umount2(merged.c_str(), MNT_DETACH);
	umount2(rw.c_str(), MNT_DETACH);
	rmdir(rw.c_str());
	if (!overlay)
		return why;
	if (mount("ct-text", host_text.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777,huge=within_size") != 0 ||
	    !sh("mkdir -p '" + view + "' && chmod 755 '" + host_text + "/shared' '" + host_text + "/shared/c' '" + view + "'"))
		return "cannot mount a huge tmpfs for the shared cache";
	return "";
}

} // namespace

extern "C" const char *test_skip_reason(void)
{
	static std::string why;

	if (getuid() != 0)
		return "mounting overlayfs and tmpfs in a private mount namespace needs root";
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	if (!file_exists("/sys/kernel/mm/transparent_hugepage/shmem_enabled"))
		return "the kernel has no huge tmpfs (transparent huge pages)";
	why = setup_namespace();
	if (!why.empty()) {
		sh("rm -rf '" + base + "'");
		return why.c_str();
	}
	std::atexit([] { sh("umount -l '" + host_text + "' 2>/dev/null; rm -rf '" + base + "'"); });
	return nullptr;
}

namespace {

std::string preload() { return build_path("lib/libhugetext-preload.so"); }

// Puts a copy of the build product @from in the lower layer as @name, root's
// (or @uid's) and mode 0755, its page cache in 4 KiB pages.
std::string put_lower(const std::string &from, const std::string &name, uid_t uid = 0)
{
	std::string to = lower + "/" + name;
	REQUIRE(sh("cp '" + from + "' '" + to + "' && chmod 755 '" + to + "' && chown " + std::to_string(uid) + " '" + to + "'"));
	small_page_cache(to);
	return to;
}

// The text service's socket, bound where the hook binds the host's.
struct fake_service {
	int fd = -1;
	fake_service()
	{
		struct sockaddr_un a = {};
		a.sun_family = AF_UNIX;
		std::strcpy(a.sun_path, sock_path.c_str());
		unlink(sock_path.c_str());
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		REQUIRE(fd >= 0);
		REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
		REQUIRE(listen(fd, 16) == 0);
	}
	~fake_service()
	{
		close(fd);
		unlink(sock_path.c_str());
	}
	// The next offer sent meanwhile, with its descriptor (-1 when none).
	bool take(ht_offer &m, int &file)
	{
		file = -1;
		int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
		if (c < 0)
			return false;
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u = {};
		struct iovec iov = { &m, sizeof(m) };
		struct msghdr h = {};
		h.msg_iov = &iov;
		h.msg_iovlen = 1;
		h.msg_control = u.buf;
		h.msg_controllen = sizeof(u.buf);
		ssize_t n = recvmsg(c, &h, MSG_CMSG_CLOEXEC);
		close(c);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&h);
		if (cm && cm->cmsg_type == SCM_RIGHTS)
			std::memcpy(&file, CMSG_DATA(cm), sizeof(int));
		return n == (ssize_t)sizeof(m);
	}
};

// The hook's /run/hugetext: a tmpfs with the preload, the socket (when
// @with_socket) and the view, then made read-only.  Undone at the end.
struct hook_layout {
	explicit hook_layout(bool with_socket)
	{
		REQUIRE(mount("ct-hook", hook_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") == 0);
		REQUIRE(sh("mkdir -p " + hook_dir + "/text/shared && touch " + hook_dir + "/libhugetext-preload.so"));
		bind(preload(), hook_dir + "/libhugetext-preload.so", true);
		bind(view, hook_dir + "/text/shared", true);
		if (with_socket) {
			REQUIRE(sh("touch " + hook_dir + "/service.sock"));
			bind(sock_path, hook_dir + "/service.sock", false);
		}
		REQUIRE(mount(nullptr, hook_dir.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) == 0);
	}
	static void bind(const std::string &from, const std::string &to, bool ro)
	{
		REQUIRE(mount(from.c_str(), to.c_str(), nullptr, MS_BIND, nullptr) == 0);
		if (ro)
			REQUIRE(mount(nullptr, to.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0);
	}
	~hook_layout()
	{
		while (umount2(hook_dir.c_str(), MNT_DETACH) == 0) {
		}
	}
};

// The container's root: an overlay of the lower layer (what put_lower()
// put there) under a fresh upper layer, then a tmpfs over the lower
// layer's directory: the overlay still reads the layer, and its host path
// leads elsewhere (in a container it leads nowhere).  The upper layer on
// the lower one's file system (@same_fs: as Podman's storage, where
// fstat() shows the overlay's device and the maps, on Linux 6.1, the
// layer's), or on a tmpfs (fstat() shows the layer's device, the maps on
// later kernels the overlay's).  With @decoy, a file of int3 bytes of the
// same size sits at each file's host path.  Undone at the end.
struct container_root {
	explicit container_root(bool same_fs = true, bool decoy = false)
	{
		REQUIRE(mkdir(rw.c_str(), 0755) == 0);
		if (!same_fs)
			REQUIRE(mount("ct-rw", rw.c_str(), "tmpfs", 0, "mode=0755") == 0);
		REQUIRE(mkdir((rw + "/upper").c_str(), 0755) == 0);
		REQUIRE(mkdir((rw + "/work").c_str(), 0755) == 0);
		std::string opts = "lowerdir=" + lower + ",upperdir=" + rw + "/upper,workdir=" + rw + "/work";
		REQUIRE(mount("ct-overlay", merged.c_str(), "overlay", 0, opts.c_str()) == 0);
		std::vector<std::pair<std::string, size_t>> files;
		for (auto &n : names())
			files.emplace_back(n, read_file(lower + "/" + n).size());
		REQUIRE(mount("ct-hide", lower.c_str(), "tmpfs", 0, "mode=0755") == 0);
		for (auto &f : files) {
			if (!decoy)
				break;
			std::string junk(f.second, '\xcc');
			int fd = open((lower + "/" + f.first).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0755);
			REQUIRE(fd >= 0);
			REQUIRE(write(fd, junk.data(), junk.size()) == (ssize_t)junk.size());
			close(fd);
		}
	}
	static std::vector<std::string> names()
	{
		prog_result r = run_prog({ "ls", lower });
		std::vector<std::string> v;
		size_t at = 0;
		for (size_t nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
			v.push_back(r.out.substr(at, nl - at));
		return v;
	}
	~container_root()
	{
		umount2(lower.c_str(), MNT_DETACH);
		umount2(merged.c_str(), MNT_DETACH);
		umount2(rw.c_str(), MNT_DETACH);
		sh("rm -rf '" + lower + "'/* '" + rw + "'");
	}
};

// Whether /proc/self/maps names a file mapped from the overlay by its path
// in the overlay; the line is logged, with the device and inode this
// kernel shows there (6.1: the lower layer's).
bool maps_name_the_overlay(const std::string &file)
{
	int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	void *p = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	REQUIRE(p != MAP_FAILED);
	char head[32];
	snprintf(head, sizeof(head), "%lx-", (unsigned long)p);
	std::string maps = read_file("/proc/self/maps"), line;
	size_t at = maps.find(std::string("\n") + head);
	if (at != std::string::npos)
		line = maps.substr(at + 1, maps.find('\n', at + 1) - at - 1);
	munmap(p, 4096);
	WARN("this kernel's /proc/self/maps names the overlay's file so: " << line);
	return line.size() >= file.size() && line.compare(line.size() - file.size(), file.size(), file) == 0;
}

struct ct_run {
	prog_result r;
	std::vector<report_line> lines;
};

// Runs @argv under the preload (LD_PRELOAD of the hook's path) and a
// filter as a container runtime's (clone3: ENOSYS), with @more settings.
// With @traced, under strace, which writes the calls to @traced and alone
// passes the settings to the program.
ct_run run_in(const std::vector<std::string> &argv, const std::vector<std::string> &more = {},
	      const std::string &traced = "")
{
	std::string report = temp_path("ct-report.json");
	unlink(report.c_str());
	std::vector<std::string> vars = { "LD_PRELOAD=" + hook_dir + "/libhugetext-preload.so",
					  "HUGETEXT_REPORT=" + report };
	vars.insert(vars.end(), more.begin(), more.end());
	if (!traced.empty())
		for (auto &v : without_leak_check())
			vars.push_back(v);
	std::vector<std::string> cmd = { build_path("tests/robust/seccomp-run") }, tail;
	if (!traced.empty())
		tail = { "strace", "-f", "-qq", "-o", traced, "-e", "trace=mkdir,mkdirat,open,openat" };
	for (auto &v : vars) {
		(traced.empty() ? cmd : tail).push_back(traced.empty() ? "-e" : "-E");
		(traced.empty() ? cmd : tail).push_back(v);
	}
	cmd.push_back("clone3:38,memfd");
	cmd.insert(cmd.end(), tail.begin(), tail.end());
	cmd.insert(cmd.end(), argv.begin(), argv.end());
	prog_opts o;
	// The preload's defaults, not the suite's (main.cpp).
	o.env = { "HUGETEXT_COPY", "HUGETEXT_PAGE_CACHE", "LD_PRELOAD" };
	ct_run c;
	c.r = run_prog(cmd, o);
	c.lines = read_report(report);
	unlink(report.c_str());
	return c;
}

// A report line as text, for the failure messages.
std::string text_of(const report_line &l)
{
	std::string t;
	for (auto &kv : l)
		t += kv.first + "=" + kv.second + " ";
	return t;
}

// The report line of the span that starts the program's code.
report_line span_line(const std::vector<report_line> &lines, const std::string &object)
{
	for (auto &l : lines)
		if (l.at("object") == object && l.count("bytes") && l.at("bytes") != "0")
			return l;
	return {};
}

// Fills the shared cache's entry for the offered span from the offered
// descriptor, named by what fstat() shows of it, and links it into the
// container's view: what the text service does.  Returns the link's path.
std::string serve_offer(const ht_offer &m, int file)
{
	struct stat st;
	REQUIRE(fstat(file, &st) == 0);
	ht_cache_key k = {};
	ht_cache_key_of_file(&k, &st);
	k.file_off = m.file_off;
	k.len = m.len;
	k.mapped = m.mapped;
	char name[256];
	REQUIRE(ht_cache_name(&k, name, sizeof(name)) > 0);
	std::string entry = host_text + "/shared/" + name, link = view + "/" + name;
	std::vector<char> bytes(m.mapped);
	REQUIRE(pread(file, bytes.data(), bytes.size(), (off_t)m.file_off) == (ssize_t)bytes.size());
	int fd = open(entry.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	REQUIRE(fd >= 0);
	REQUIRE(ftruncate(fd, (off_t)m.len) == 0);
	REQUIRE(pwrite(fd, bytes.data(), bytes.size(), 0) == (ssize_t)bytes.size());
	close(fd);
	REQUIRE(::link(entry.c_str(), link.c_str()) == 0);
	return link;
}

} // namespace

// One start of root's program, then the next with the service's entry in
// the view, in a root whose upper layer is on the lower's file system or not.
static void offered_then_mapped(bool same_fs)
{
	put_lower(build_path("tests/bigtext-nopie"), "prog");
	container_root root(same_fs);
	std::string prog = merged + "/prog";
	bool new_maps = maps_name_the_overlay(prog);
	prog_result plain = run_prog({ prog, "smaps" });
	REQUIRE(plain.status == 0);
	struct stat in_ct;
	REQUIRE(stat(prog.c_str(), &in_ct) == 0);

	fake_service svc;
	hook_layout layout(true);
	ct_run first = run_in({ prog, "smaps" });
	INFO(first.r.err);
	CHECK(first.r.status == 0);
	CHECK(first.r.err.empty());
	CHECK(line_value(first.r.out, "sum") == line_value(plain.out, "sum"));
	report_line l = span_line(first.lines, prog);
	INFO(text_of(l));
	REQUIRE(!l.empty());
	// As on the host: nothing copied at start, the copy deferred, not "never".
	CHECK(l["status"] == "skipped");
	CHECK(l["error"] == ht_error_str(HT_E_DEFERRED));
	ht_offer m = {};
	int file = -1;
	bool offered = svc.take(m, file);
	// A path in the maps that leads elsewhere: the preload opens the
	// program by /proc/self/exe.
	if (!new_maps)
		WARN("this kernel names the file by another path in /proc/self/maps");
	CHECK(l["cache"] == "offered");
	CHECK(l.count("cache_error") == 0);
	REQUIRE(offered);
	REQUIRE(file >= 0);
	// The descriptor is the file as the container sees it: the overlay's device.
	struct stat st;
	REQUIRE(fstat(file, &st) == 0);
	CHECK(st.st_dev == in_ct.st_dev);
	CHECK(st.st_ino == in_ct.st_ino);
	CHECK(ht_offer_check(&m, (uint64_t)st.st_size) == nullptr);
	CHECK(std::to_string(m.len) == l["bytes"]);

	// The service's entry, linked into this container's view by that name: mapped.
	std::string link = serve_offer(m, file);
	close(file);
	ct_run second = run_in({ prog, "smaps" });
	INFO(second.r.err);
	CHECK(second.r.status == 0);
	CHECK(second.r.err.empty());
	CHECK(line_value(second.r.out, "sum") == line_value(plain.out, "sum"));
	l = span_line(second.lines, prog);
	REQUIRE(!l.empty());
	CHECK(l["status"] == "ok");
	CHECK(l["cache"] == "hit");
	CHECK(l["huge_bytes"] == l["bytes"]);
	CHECK(l.count("private_huge_bytes") == 0);
	// Its own smaps, from main(): no anonymous huge page, so no private copy.
	CHECK(line_value(second.r.out, "main_huge_kb") == "0");
	CHECK(!svc.take(m, file));
	unlink(link.c_str());
}

TEST_CASE("root's program on overlayfs: offered as the overlay's file, its copy deferred, then its view's entry mapped",
	  "[container]")
{
	SECTION("the upper layer on the lower one's file system (Podman's storage)") { offered_then_mapped(true); }
	SECTION("the upper layer on another file system") { offered_then_mapped(false); }
}

TEST_CASE("the page cache's 2 MiB pages of the lower layer's file are kept in the container, as on the host",
	  "[container]")
{
	std::string host = put_lower(build_path("tests/bigtext-nopie"), "warm");
	// The host's start copies and reads the code back as 2 MiB pages, where
	// this file system keeps them (as test-pagecache checks).
	prog_opts o;
	o.env = { "LD_PRELOAD=" + preload(), "HUGETEXT_COPY=now", "HUGETEXT_PAGE_CACHE=1", "HUGETEXT_MODE=thp" };
	REQUIRE(run_prog({ host, "smaps" }, o).status == 0);
	prog_result alone = run_prog({ host, "smaps" });
	REQUIRE(alone.status == 0);
	unsigned long warmed = std::stoul(line_value(alone.out, "file_pmd_kb")) * 1024;
	if (warmed == 0) {
		WARN("skipped: the build directory's file system keeps no 2 MiB page-cache pages here");
		return;
	}
	container_root root;
	std::string prog = merged + "/warm";
	hook_layout layout(false);
	ct_run c = run_in({ prog, "smaps" });
	INFO(c.r.err);
	CHECK(c.r.status == 0);
	CHECK(c.r.err.empty());
	report_line l = span_line(c.lines, prog);
	REQUIRE(!l.empty());
	CHECK(std::stoul(l["kept_bytes"]) == warmed);
	CHECK(std::stoul(line_value(c.r.out, "file_pmd_kb")) * 1024 >= warmed);
	CHECK(line_value(c.r.out, "main_huge_kb") == "0");
}

TEST_CASE("a user's library in the read-only view: the cache refused once with the reason, no directory made, silent",
	  "[container]")
{
	if (!have_program("strace")) {
		WARN("skipped: strace is not installed");
		return;
	}
	// Two spans (the library's two segments, at a 2 MiB-aligned address),
	// a user's file: no service takes it, and the user's own cache
	// directory cannot be made in the view.
	put_lower(build_path("tests/libbigtext-2m.so"), "libbigtext-2m.so", 1000);
	container_root root;
	std::string lib = merged + "/libbigtext-2m.so", trace = temp_path("ct.strace");
	hook_layout layout(false);
	ct_run c = run_in({ "/bin/true" }, { "LD_PRELOAD=" + hook_dir + "/libhugetext-preload.so:" + lib }, trace);
	INFO(c.r.err);
	CHECK(c.r.status == 0);
	CHECK(c.r.err.empty());
	std::string calls = read_file(trace);
	INFO(calls);
	CHECK(calls.find("mkdir") == std::string::npos);
	size_t spans = 0, opens = 0;
	for (auto &l : c.lines) {
		if (l["object"] != lib || l["bytes"] == "0")
			continue;
		spans++;
		INFO(text_of(l));
		CHECK(l["cache"] == "refused");
		CHECK(l["cache_error"].find("read-only") != std::string::npos);
	}
	const std::string dir = "\"" HT_TEXT_CACHE_DIR "\"";
	for (size_t at = calls.find(dir); at != std::string::npos; at = calls.find(dir, at + 1))
		opens++;
	CHECK(spans == 2);
	// One look per span for the cache (ht_text_cache_present), and one for
	// the first span's directory: the second refuses with no call.
	CHECK(opens == spans + 1);
}

TEST_CASE("the path /proc/self/maps names is never trusted by name: a decoy there is not read", "[container]")
{
	// On Linux 6.1 the maps name the lower layer's file by its host path;
	// a container may hold anything at that path.  Here a file of int3
	// bytes lies there: a copy filled from it would trap at once.
	put_lower(build_path("tests/bigtext-nopie"), "decoyed");
	container_root root(true, true);
	std::string prog = merged + "/decoyed";
	prog_result plain = run_prog({ prog, "smaps" });
	REQUIRE(plain.status == 0);
	hook_layout layout(false);
	ct_run c = run_in({ prog, "smaps" }, { "HUGETEXT_COPY=now", "HUGETEXT_MODE=thp", "HUGETEXT_PAGE_CACHE=0" });
	INFO(c.r.err);
	CHECK(c.r.status == 0);
	CHECK(c.r.err.empty());
	CHECK(line_value(c.r.out, "sum") == line_value(plain.out, "sum"));
	report_line l = span_line(c.lines, prog);
	REQUIRE(!l.empty());
	CHECK(l["status"] == "ok");
	CHECK(l["huge_bytes"] == l["bytes"]);
	CHECK(line_value(c.r.out, "main_huge_kb") != "0");
	WARN("filled by " << l["fill"]);
}
