// Description: the text service across containers and hostile tenants
// (docs/service.md, "Containers", "Floods", "Shares").  Real overlayfs
// mounts of lower directories of our own, in the test's private mount
// namespace, and "containers" that are processes in their own mount and
// pid (and user) namespaces, pivoted into an overlay, with the service's
// socket bound in as the OCI hook binds it, and records as the hook writes
// them: an offer of a container's file fills root's entry from the lower
// layer's real file, keyed by it, and links it into the container's view
// under the name its processes compute; two containers of one layer
// share one entry; a copied-up file is refused; a sender in a user
// namespace is its host uid; a service killed mid-fill leaves nothing a
// process maps and the next cleans up; each client keeps its share of the
// cache; a flood of nobody's connections leaves root's offers served; a
// container's root flooding its own socket (tools/serve-socks.c) leaves
// the host's socket and another container's served.
// Podman is not used here (tests/containers is the hook's suite).
#include <catch2/catch.hpp>

#include <chrono>
#include <dirent.h>
#include <fstream>
#include <memory>
#include <poll.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "helpers.hpp"
#include "service-test.hpp"

extern "C" {
#include "cache.h"
#include "ocihook.h"
#include "serve.h"
}

namespace {

const std::string views_dir = shared_dir + "/" HTE_VIEWS;
const std::string records_dir = HTE_CONTAINER_RECORDS;

} // namespace

extern "C" const char *test_skip_reason(void)
{
	if (getuid() != 0)
		return "the service runs as root, and the test mounts overlays in a private namespace";
	if (!file_exists("/sys/kernel/mm/transparent_hugepage/shmem_enabled"))
		return "the kernel has no huge tmpfs (transparent huge pages)";
	if (read_file("/sys/kernel/mm/transparent_hugepage/enabled").find("[never]") != std::string::npos)
		return "transparent huge pages are set to never";
	if (read_file("/proc/filesystems").find("\toverlay\n") == std::string::npos &&
	    run_cmd({ "modprobe", "overlay" }).status != 0)
		return "the kernel has no overlayfs";
	if (!private_run_dir(text_dir))
		return "no private mount namespace";
	return nullptr;
}

namespace {

void rm_rf(const std::string &path)
{
	run_cmd({ "rm", "-rf", "--one-file-system", path });
}

// A directory of root's files, the lower layer of the overlays below:
// programs (copies of the fixture), and the directories a container's
// set-up mounts on.
struct layer {
	std::string dir = temp_path("layer", build_path("tests"));
	explicit layer(const std::vector<std::string> &progs)
	{
		rm_rf(dir);
		REQUIRE(mkdir(dir.c_str(), 0755) == 0);
		REQUIRE(mkdir((dir + "/run").c_str(), 0755) == 0);
		REQUIRE(mkdir((dir + "/old").c_str(), 0755) == 0);
		for (auto &p : progs) {
			std::string copy = program_copy("layer-" + p);
			REQUIRE(rename(copy.c_str(), (dir + "/" + p).c_str()) == 0);
		}
	}
	~layer() { rm_rf(dir); }
	std::string path(const std::string &p) const { return dir + "/" + p; }
};

// An overlay of @lower with an upper layer of its own, mounted in the test's namespace.
struct overlay {
	std::string top, merged;
	bool ok = false;
	overlay(const std::string &name, const std::string &lower)
	{
		top = temp_path("ovl-" + name, build_path("tests"));
		merged = top + "/m";
		rm_rf(top);
		REQUIRE(mkdir(top.c_str(), 0755) == 0);
		for (const char *d : { "/u", "/w", "/m" })
			REQUIRE(mkdir((top + d).c_str(), 0755) == 0);
		std::string opts = options(lower);
		ok = mount("hugetext-test", merged.c_str(), "overlay", 0, opts.c_str()) == 0;
	}
	std::string options(const std::string &lower) const
	{
		return "lowerdir=" + lower + ",upperdir=" + top + "/u,workdir=" + top + "/w";
	}
	std::string upper() const { return top + "/u"; }
	~overlay()
	{
		umount2(merged.c_str(), MNT_DETACH);
		rm_rf(top);
	}
};

// What fstat() shows of a file, as a cache key's fields.
struct file_id {
	unsigned long long dev = 0, ino = 0, size = 0;
	long long msec = 0;
	long mnsec = 0;
	unsigned uid = 0;
};

std::string entry_name_of(const file_id &f)
{
	ht_cache_key k = {};
	k.dev = f.dev;
	k.ino = f.ino;
	k.size = f.size;
	k.mtime_sec = f.msec;
	k.mtime_nsec = f.mnsec;
	k.file_off = span_off;
	k.len = span_len;
	k.mapped = span_len;
	char name[256];
	REQUIRE(ht_cache_name(&k, name, sizeof(name)) > 0);
	return name;
}

file_id id_of(const struct stat &st)
{
	file_id f;
	f.dev = st.st_dev;
	f.ino = st.st_ino;
	f.size = (unsigned long long)st.st_size;
	f.msec = st.st_mtim.tv_sec;
	f.mnsec = st.st_mtim.tv_nsec;
	f.uid = st.st_uid;
	return f;
}

file_id host_id(const std::string &path)
{
	struct stat st;
	REQUIRE(stat(path.c_str(), &st) == 0);
	return id_of(st);
}

// --- the container: its init's side ---

ssize_t say(int fd, const std::string &s)
{
	return send(fd, s.data(), s.size(), MSG_NOSIGNAL);
}

std::string hear(int fd)
{
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	return n > 0 ? std::string(buf, (size_t)n) : "";
}

// Sends the offer of @path's fixture span from a process of the container
// that runs it (maps it executable); with @stay it keeps running until the
// init's "release".  Replies "ok" or "err WHY".
std::string container_offer(const std::string &path, bool stay, std::vector<int> &stays)
{
	int ready[2], hold[2];
	if (pipe(ready) < 0 || pipe(hold) < 0)
		return "err pipe";
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
		void *x = fd >= 0 ? mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)span_off)
				  : MAP_FAILED;
		ht_offer m = offer_of(span_off, span_len, span_len);
		std::string r = fd < 0 ? "err open " + std::string(strerror(errno))
			      : x == MAP_FAILED ? "err mmap"
			      : send_raw(&m, sizeof(m), { fd }) < 0 ? "err send " + std::string(strerror(errno))
								    : "ok";
		if (write(ready[1], r.data(), r.size()) < 0)
			_exit(1);
		close(ready[1]);
		char c;
		if (stay && read(hold[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	char buf[256];
	ssize_t n = read(ready[0], buf, sizeof(buf));
	close(ready[0]);
	if (stay)
		stays.push_back(hold[1]);
	else
		close(hold[1]);
	return n > 0 ? std::string(buf, (size_t)n) : "err no answer";
}

// Rewrites the padding inside @path's code (the container's root changing a
// library: overlayfs copies it up), its size and time put back.
std::string container_rewrite(const std::string &path)
{
	struct stat before;
	int fd = open(path.c_str(), O_RDWR);
	if (fd < 0 || fstat(fd, &before) < 0)
		return "err open";
	std::string bytes((size_t)before.st_size, '\0');
	if (pread(fd, &bytes[0], bytes.size(), 0) != (ssize_t)bytes.size())
		return "err read";
	size_t changed = 0;
	for (size_t at = span_off + (1 << 20); at < span_off + span_len && changed < (1 << 20); at += 4096) {
		bytes[at] ^= 0x5a;
		changed++;
	}
	struct timespec times[2] = { before.st_atim, before.st_mtim };
	bool ok = pwrite(fd, bytes.data(), bytes.size(), 0) == (ssize_t)bytes.size() && futimens(fd, times) == 0;
	close(fd);
	return ok ? "ok" : "err write";
}

// The init: answers the test's commands on @ctl until "exit".
[[noreturn]] void container_serve(int ctl)
{
	std::vector<int> stays;
	for (;;) {
		std::string cmd = hear(ctl);
		std::string arg = cmd.find(' ') == std::string::npos ? "" : cmd.substr(cmd.find(' ') + 1);
		std::string r;
		if (cmd.empty() || cmd == "exit")
			_exit(0);
		if (cmd.rfind("stat ", 0) == 0) {
			struct stat st;
			int fd = open(arg.c_str(), O_RDONLY | O_CLOEXEC);
			if (fd >= 0 && fstat(fd, &st) == 0) {
				file_id f = id_of(st);
				r = "ok " + std::to_string(f.dev) + " " + std::to_string(f.ino) + " " + std::to_string(f.size) +
				    " " + std::to_string(f.msec) + " " + std::to_string(f.mnsec) + " " + std::to_string(f.uid);
			} else {
				r = "err " + std::string(strerror(errno));
			}
			if (fd >= 0)
				close(fd);
		} else if (cmd.rfind("offer-stay ", 0) == 0) {
			r = container_offer(arg, true, stays);
		} else if (cmd.rfind("offer ", 0) == 0) {
			r = container_offer(arg, false, stays);
		} else if (cmd == "release") {
			for (int fd : stays)
				close(fd);
			stays.clear();
			r = "ok";
		} else if (cmd.rfind("rewrite ", 0) == 0) {
			r = container_rewrite(arg);
		} else {
			r = "err unknown command";
		}
		if (say(ctl, r) < 0)
			_exit(1);
	}
}

// Inside its new namespaces: @root (mounting the overlay there first with
// @own, as a rootless engine does in its namespace) becomes the root, with
// the service's socket at its usual path.
std::string container_setup(const std::string &root, const std::string &own)
{
	if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
		return "make / private";
	if (!own.empty() && mount("hugetext-test", root.c_str(), "overlay", 0, own.c_str()) < 0)
		return "mount the overlay: " + std::string(strerror(errno));
	// A mount of this namespace's own: the copied ones are locked in a user namespace.
	if (mount(root.c_str(), root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
		return "bind the root";
	std::string run = root + "/run", ht = run + "/hugetext", s = ht + "/service.sock";
	if (mount("c-run", run.c_str(), "tmpfs", 0, "mode=0755") < 0 || mkdir(ht.c_str(), 0755) < 0)
		return "make /run/hugetext";
	int fd = open(s.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return "make the socket's mount point";
	close(fd);
	if (mount(sock.c_str(), s.c_str(), nullptr, MS_BIND, nullptr) < 0)
		return "bind the service's socket: " + std::string(strerror(errno));
	if (syscall(SYS_pivot_root, root.c_str(), (root + "/old").c_str()) < 0)
		return "pivot_root: " + std::string(strerror(errno));
	if (chdir("/") < 0 || umount2("/old", MNT_DETACH) < 0)
		return "leave the old root";
	return "";
}

// --- the container: the test's side ---

// A process tree in its own mount, pid and network namespaces (and user namespace
// when @host_uid is not 0: its root is that host uid), with @root as its
// root; its init answers commands.  record() writes what the OCI hook
// would: the record and the empty view.
struct container {
	std::string id, root;
	pid_t outer = -1, init = -1; // the namespaces' parent, and the init (pid 1 inside), as the host sees them
	int ctl = -1;
	unsigned long long mntns = 0, pid_start = 0;
	std::string error;

	container(const std::string &id_, const std::string &root_, uid_t host_uid = 0, const std::string &own = "")
		: id(id_), root(root_)
	{
		int sv[2], up[2], down[2];
		REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
		REQUIRE(pipe2(up, O_CLOEXEC) == 0);
		REQUIRE(pipe2(down, O_CLOEXEC) == 0);
		outer = fork();
		REQUIRE(outer >= 0);
		if (outer == 0) {
			close(sv[0]);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			char c = 0;
			if (host_uid) {
				if (unshare(CLONE_NEWUSER) < 0 || write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1 ||
				    setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
					_exit(3);
			}
			if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) < 0)
				_exit(4);
			pid_t in = fork();
			if (in == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				std::string why = container_setup(root, own);
				say(sv[1], why.empty() ? "ready" : "err " + why);
				if (!why.empty())
					_exit(5);
				signal(SIGCHLD, SIG_IGN);
				container_serve(sv[1]);
			}
			pid_t host_pid = in;
			if (write(up[1], &host_pid, sizeof(host_pid)) != sizeof(host_pid))
				_exit(6);
			int st = 0;
			waitpid(in, &st, 0);
			_exit(0);
		}
		close(sv[1]);
		// Our ends only: a child that fails ends our reads instead of leaving them waiting.
		close(up[1]);
		close(down[0]);
		ctl = sv[0];
		if (host_uid) {
			char c;
			REQUIRE(read(up[0], &c, 1) == 1);
			std::string p = "/proc/" + std::to_string(outer);
			std::string map = "0 " + std::to_string(host_uid) + " 1\n";
			REQUIRE(write_file(p + "/setgroups", "deny"));
			REQUIRE(write_file(p + "/uid_map", map));
			REQUIRE(write_file(p + "/gid_map", map));
			REQUIRE(write(down[1], &c, 1) == 1);
		}
		REQUIRE(read(up[0], &init, sizeof(init)) == sizeof(init));
		close(up[0]);
		close(down[1]);
		std::string ready = hear(ctl);
		error = ready == "ready" ? "" : ready;
		struct stat st;
		if (stat(("/proc/" + std::to_string(init) + "/ns/mnt").c_str(), &st) == 0)
			mntns = st.st_ino;
		std::string s = read_file("/proc/" + std::to_string(init) + "/stat");
		REQUIRE(hte_proc_start_time(s.data(), s.size(), &pid_start) == 0);
	}
	static bool write_file(const std::string &path, const std::string &text)
	{
		int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
		bool ok = fd >= 0 && write(fd, text.data(), text.size()) == (ssize_t)text.size();
		if (fd >= 0)
			close(fd);
		return ok;
	}
	std::string ask(const std::string &cmd)
	{
		REQUIRE(say(ctl, cmd) == (ssize_t)cmd.size());
		return hear(ctl);
	}
	// Offers @path from a process of the container; waits until it is sent.
	void offer(const std::string &path, bool stay = false)
	{
		std::string r = ask((stay ? "offer-stay " : "offer ") + path);
		INFO(r);
		REQUIRE(r == "ok");
	}
	file_id stat_in(const std::string &path)
	{
		std::string r = ask("stat " + path);
		INFO(r);
		REQUIRE(r.rfind("ok ", 0) == 0);
		file_id f;
		REQUIRE(sscanf(r.c_str() + 3, "%llu %llu %llu %lld %ld %u", &f.dev, &f.ino, &f.size, &f.msec, &f.mnsec,
			       &f.uid) == 6);
		return f;
	}
	std::string view() const { return views_dir + "/" + id; }
	// The OCI hook's part: the record (the contract's fields) and an empty view.
	void record(bool with_view = true)
	{
		mkdir(records_dir.c_str(), 0700);
		REQUIRE(chmod(records_dir.c_str(), 0700) == 0);
		if (with_view) {
			for (const std::string &d : { shared_dir, views_dir, view() }) {
				mkdir(d.c_str(), 0755);
				REQUIRE(chmod(d.c_str(), 0755) == 0);
			}
		}
		std::string json = "{\"id\":\"" + id + "\",\"pid\":" + std::to_string(init) +
				   ",\"pid_start\":" + std::to_string(pid_start) + ",\"mntns\":" + std::to_string(mntns) +
				   ",\"userns\":\"host\",\"cgroup\":\"/\",\"rootfs\":\"" + root +
				   "\",\"upperdir\":\"\",\"annotation\":\"1\",\"injected\":true,\"reason\":\"test\","
				   "\"glibc\":null,\"view\":" +
				   (with_view ? "\"" + view() + "\"" : std::string("null")) + ",\"time\":0}\n";
		std::string path = records_dir + "/" + id + ".json", tmp = path + ".tmp";
		int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		REQUIRE(fd >= 0);
		REQUIRE(write(fd, json.data(), json.size()) == (ssize_t)json.size());
		close(fd);
		REQUIRE(rename(tmp.c_str(), path.c_str()) == 0);
	}
	~container()
	{
		if (ctl >= 0) {
			say(ctl, "exit");
			close(ctl);
		}
		if (outer > 0) {
			kill(init, SIGKILL);
			waitpid(outer, nullptr, 0);
		}
		unlink((records_dir + "/" + id + ".json").c_str());
		rm_rf(view());
	}
};

// The files of @dir (names only).
std::vector<std::string> names_in(const std::string &dir)
{
	std::vector<std::string> out;
	DIR *d = opendir(dir.c_str());
	for (dirent *e = d ? readdir(d) : nullptr; e; e = readdir(d))
		if (e->d_name[0] != '.')
			out.push_back(e->d_name);
	if (d)
		closedir(d);
	return out;
}

bool same_inode(const std::string &a, const std::string &b)
{
	struct stat x, y;
	return stat(a.c_str(), &x) == 0 && stat(b.c_str(), &y) == 0 && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

uint64_t used_bytes(const std::string &dir)
{
	struct statfs s;
	REQUIRE(statfs(dir.c_str(), &s) == 0);
	return (uint64_t)(s.f_blocks - s.f_bfree) * (uint64_t)s.f_bsize;
}

// Every process's maps: which map a file whose name has @part.
bool anyone_maps(const std::string &part)
{
	for (auto &pid : names_in("/proc")) {
		if (pid.find_first_not_of("0123456789") != std::string::npos)
			continue;
		if (read_file("/proc/" + pid + "/maps").find(part) != std::string::npos)
			return true;
	}
	return false;
}

} // namespace

TEST_CASE("a container's overlay file fills root's entry from the lower layer's file; two containers link one entry",
	  "[service-containers]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	layer low({ "prog" });
	overlay o1("a", low.dir), o2("b", low.dir);
	REQUIRE(o1.ok);
	REQUIRE(o2.ok);
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	container a("test-a", o1.merged), b("test-b", o2.merged);
	REQUIRE(a.error == "");
	REQUIRE(b.error == "");
	a.record();
	b.record();

	// fstat() in each container: the overlay's device (one per mount), the real file's inode.
	file_id real = host_id(low.path("prog")), in_a = a.stat_in("/prog"), in_b = b.stat_in("/prog");
	CHECK(in_a.dev != real.dev);
	CHECK(in_a.dev != in_b.dev);
	CHECK(in_a.ino == real.ino);
	std::string entry = shared_dir + "/" + entry_name_of(real);
	std::string link_a = a.view() + "/" + entry_name_of(in_a), link_b = b.view() + "/" + entry_name_of(in_b);

	a.offer("/prog");
	INFO(svc.text());
	REQUIRE(svc.wait_for("filled_total", 1));
	REQUIRE(svc.wait_for("linked_total", 1));
	// Keyed by the real file, filled from it (the log names the lower layer's path).
	CHECK(file_exists(entry));
	CHECK(svc.text().find(low.path("prog")) != std::string::npos);
	CHECK(same_inode(entry, link_a));
	CHECK(names_in(b.view()).empty());

	// B's sender has exited before the service reads its offer (the
	// service is stopped meanwhile): its mount namespace cannot be read,
	// the network namespace of its connection tells the container.
	REQUIRE(kill(svc.pid, SIGSTOP) == 0);
	b.offer("/prog");
	usleep(100000);
	REQUIRE(kill(svc.pid, SIGCONT) == 0);
	REQUIRE(svc.wait_for("linked_total", 2));
	CHECK(same_inode(entry, link_b));
	CHECK(svc.num("filled_total") == 1);
	// One copy: one entry of three names, the cache holding one span.
	struct stat est;
	REQUIRE(stat(entry.c_str(), &est) == 0);
	CHECK(est.st_nlink == 3);
	CHECK(names_in(shared_dir).size() == 2); // the entry and c/
	CHECK(used_bytes(text_dir) < span_len + (8u << 20));
	CHECK(svc.num("refused_total") == 0);
	// Each container is a client of its own.
	CHECK(svc.text().find("\"client\":\"container test-a\"") != std::string::npos);
	CHECK(svc.text().find("\"client\":\"container test-b\"") != std::string::npos);

	SECTION("a container that stopped loses its view; its entry stays for the others")
	{
		// The hook removes the view at poststop; a container killed without
		// it leaves a record whose init is gone: the service's sweep does it.
		kill(b.init, SIGKILL);
		waitpid(b.outer, nullptr, 0);
		b.outer = -1;
		kill(svc.pid, SIGTERM);
		waitpid(svc.pid, nullptr, 0);
		svc.pid = -1;
		service again({ "--no-warm" });
		REQUIRE(again.alive());
		for (int i = 0; i < 100 && file_exists(b.view()); i++)
			usleep(50000);
		CHECK(!file_exists(b.view()));
		CHECK(file_exists(link_a));
		CHECK(file_exists(entry));
	}
}

TEST_CASE("a file a container's root rewrote (copy-up) is refused and never reaches another view",
	  "[service-containers]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	layer low({ "prog" });
	overlay o1("a", low.dir), o2("b", low.dir);
	REQUIRE(o1.ok);
	REQUIRE(o2.ok);
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	container a("test-a", o1.merged), b("test-b", o2.merged);
	REQUIRE(a.error == "");
	REQUIRE(b.error == "");
	a.record();
	b.record();

	// B's root writes its own bytes into the library, size and time kept:
	// overlayfs copies it up, and fstat() in B looks as before.
	file_id before = b.stat_in("/prog");
	REQUIRE(b.ask("rewrite /prog") == "ok");
	file_id after = b.stat_in("/prog");
	CHECK(after.size == before.size);
	CHECK(after.msec == before.msec);
	REQUIRE(file_exists(o2.upper() + "/prog"));
	b.offer("/prog");
	INFO(svc.text());
	REQUIRE(svc.wait_for("refused_total", 1));
	CHECK(svc.text().find("upper (writable) layer") != std::string::npos);
	CHECK(svc.num("filled_total") == 0);
	CHECK(names_in(b.view()).empty());

	// A's copy is the lower layer's: served, and only into A's view.
	a.offer("/prog");
	REQUIRE(svc.wait_for("linked_total", 1));
	CHECK(names_in(a.view()).size() == 1);
	CHECK(names_in(b.view()).empty());
	// The entry holds the lower layer's bytes, not B's.
	std::string entry = shared_dir + "/" + entry_name_of(host_id(low.path("prog")));
	CHECK(read_file(entry).substr(0, span_len) == read_file(low.path("prog")).substr(span_off, span_len));
	CHECK(read_file(entry).substr(0, span_len) != read_file(o2.upper() + "/prog").substr(span_off, span_len));
	// B's offer again, now that the entry exists: still refused, nothing linked.
	long refused = svc.num("refused_total");
	b.offer("/prog");
	REQUIRE(svc.wait_for("refused_total", refused + 1));
	CHECK(names_in(b.view()).empty());
	// A file B's root made anew (only in its upper layer) is refused the same way.
	REQUIRE(run_cmd({ "cp", low.path("prog"), o2.merged + "/mine" }).status == 0);
	b.offer("/mine");
	REQUIRE(svc.wait_for("refused_total", refused + 2));
	CHECK(names_in(b.view()).empty());
	CHECK(svc.num("filled_total") == 1);
}

namespace {

// What the OCI hook does at a new container's createRuntime (ociview.c): links into @c's view
// the entries its overlay @merged shows unchanged.  Returns the count, or -1 and @why.
int prelink(const std::string &view, const std::string &merged, std::string &why)
{
	int sfd = open(shared_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int vfd = open(view.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	std::string mi = read_file("/proc/self/mountinfo");
	unsigned linked = 0;
	const char *w = nullptr;
	int rc = sfd >= 0 && vfd >= 0 ? hte_oci_prelink(sfd, vfd, merged.c_str(), mi.data(), mi.size(), &linked, &w) : -2;
	why = w ? w : "";
	if (sfd >= 0)
		close(sfd);
	if (vfd >= 0)
		close(vfd);
	return rc < 0 ? rc : (int)linked;
}

} // namespace

TEST_CASE("a new container's view gets, before it runs, the entries another container of its layer filled; "
	  "not a file its root rewrote", "[service-containers][prelink]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	layer low({ "prog" });
	overlay o1("a", low.dir), o2("b", low.dir), o3("c", low.dir);
	REQUIRE(o1.ok);
	REQUIRE(o2.ok);
	REQUIRE(o3.ok);
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	container a("test-a", o1.merged), b("test-b", o2.merged), c("test-c", o3.merged);
	REQUIRE(a.error == "");
	REQUIRE(b.error == "");
	REQUIRE(c.error == "");
	a.record();
	std::string why;
	// Nothing in the cache yet: nothing linked, and that is no error.
	b.record();
	CHECK(prelink(b.view(), o2.merged, why) == 0);
	CHECK(why == "");

	a.offer("/prog");
	INFO(svc.text());
	REQUIRE(svc.wait_for("filled_total", 1));
	REQUIRE(svc.wait_for("linked_total", 1));
	std::string entry = shared_dir + "/" + entry_name_of(host_id(low.path("prog")));
	REQUIRE(file_exists(entry));
	// The service wrote down the real file it filled the entry from.
	char real[4096] = "";
	ssize_t n = getxattr(entry.c_str(), HTE_REAL_XATTR, real, sizeof(real) - 1);
	REQUIRE(n > 0);
	CHECK(std::string(real, (size_t)n) == low.path("prog"));

	// B, new: its view gets the entry under the name its processes will look for, with no offer of its own.
	std::string link_b = b.view() + "/" + entry_name_of(b.stat_in("/prog"));
	CHECK(prelink(b.view(), o2.merged, why) == 1);
	CHECK(same_inode(entry, link_b));
	CHECK(names_in(b.view()).size() == 1);
	// Again: the same link, nothing more.
	CHECK(prelink(b.view(), o2.merged, why) == 1);
	CHECK(names_in(b.view()).size() == 1);

	// C's root rewrote the file (copy-up, size and time kept) before this start: nothing linked.
	REQUIRE(c.ask("rewrite /prog") == "ok");
	REQUIRE(file_exists(o3.upper() + "/prog"));
	c.record();
	CHECK(prelink(c.view(), o3.merged, why) == 0);
	CHECK(names_in(c.view()).empty());

	SECTION("an entry that is not root's, or names a file of no layer of the container, is not linked")
	{
		rm_rf(b.view());
		b.record();
		REQUIRE(chown(entry.c_str(), 65534, 65534) == 0);
		CHECK(prelink(b.view(), o2.merged, why) == 0);
		REQUIRE(chown(entry.c_str(), 0, 0) == 0);
		const std::string elsewhere = "/nowhere/prog";
		REQUIRE(setxattr(entry.c_str(), HTE_REAL_XATTR, elsewhere.data(), elsewhere.size(), 0) == 0);
		CHECK(prelink(b.view(), o2.merged, why) == 0);
		REQUIRE(setxattr(entry.c_str(), HTE_REAL_XATTR, real, (size_t)n, 0) == 0);
		CHECK(names_in(b.view()).empty());
		CHECK(prelink(b.view(), o2.merged, why) == 1);
	}
	SECTION("a rootfs that is no overlay gets nothing, and says why")
	{
		rm_rf(b.view());
		b.record();
		CHECK(prelink(b.view(), low.dir, why) == -1);
		CHECK(why.find("not an overlay") != std::string::npos);
		CHECK(names_in(b.view()).empty());
	}
}

TEST_CASE("pure parts: an entry's name read back into its key", "[service-containers][prelink]")
{
	ht_cache_key k = {}, back = {};
	k.dev = 0x10302;
	k.ino = 1234567;
	k.size = 150u << 20;
	k.mtime_sec = 1700000000;
	k.mtime_nsec = 123456789;
	k.file_off = 0x1d8000;
	k.len = 96u << 20;
	k.mapped = (96u << 20) - 4096;
	char name[256];
	REQUIRE(ht_cache_name(&k, name, sizeof(name)) > 0);
	REQUIRE(hte_cache_name_parse(name, &back) == 0);
	CHECK(back.dev == k.dev);
	CHECK(back.ino == k.ino);
	CHECK(back.size == k.size);
	CHECK(back.mtime_sec == k.mtime_sec);
	CHECK(back.mtime_nsec == k.mtime_nsec);
	CHECK(back.file_off == k.file_off);
	CHECK(back.len == k.len);
	CHECK(back.mapped == k.mapped);
	CHECK(back.build_id == nullptr);
	std::string good = name;
	for (const std::string &bad :
	     { std::string(""), std::string("f-"), good + ".tmp.123", good.substr(0, good.size() - 5), "x" + good,
	       std::string("b-00ff-0-1000-1000.text"), std::string("f-+1-2-3-4.000000005-6-7-8.text"),
	       std::string("f-01-2-3-4.000000005-6-7-8.text"), std::string("f-1-2-3-4.5-6-7-8.text"),
	       std::string("f-1-2-3-4.000000005-6-7-8.text "), std::string("f-0x1-2-3-4.000000005-6-7-8.text"),
	       std::string("f-1-2-3-4.-00000005-6-7-8.text") }) {
		INFO(bad);
		CHECK(hte_cache_name_parse(bad.c_str(), &back) == -1);
	}
	CHECK(hte_cache_name_parse("f-1-2-3-4.000000005-6-7-8.text", &back) == 0);
	CHECK(back.mtime_nsec == 5);
	CHECK(hte_cache_name_parse(nullptr, &back) == -1);
}

TEST_CASE("an overlay mounted only in the sender's namespace is found there, while a sender runs",
	  "[service-containers]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	layer low({ "prog" });
	// The mount point and layers exist on the host; the overlay is mounted
	// in the container's namespace alone, as a rootless engine does.
	overlay spec("own", low.dir);
	REQUIRE(spec.ok);
	REQUIRE(umount2(spec.merged.c_str(), 0) == 0);
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	container c("test-own", spec.merged, 0, spec.options(low.dir));
	REQUIRE(c.error == "");
	c.record();
	// While its sender runs, the service reads the sender's mountinfo.
	c.offer("/prog", true);
	INFO(svc.text());
	REQUIRE(svc.wait_for("pending", 1));
	long tried = svc.num("tries");
	REQUIRE(svc.wait_for("tries", tried + 1));
	CHECK(svc.num("refused_total") == 0);
	REQUIRE(c.ask("release") == "ok");
	REQUIRE(svc.wait_for("linked_total", 1));
	CHECK(file_exists(shared_dir + "/" + entry_name_of(host_id(low.path("prog")))));

	SECTION("a sender gone before the service looks leaves an overlay it cannot see: refused")
	{
		layer other({ "prog2" });
		overlay spec2("own2", other.dir);
		REQUIRE(spec2.ok);
		REQUIRE(umount2(spec2.merged.c_str(), 0) == 0);
		container d("test-own2", spec2.merged, 0, spec2.options(other.dir));
		REQUIRE(d.error == "");
		// The service is stopped while the sender sends and exits.
		long refused = svc.num("refused_total");
		REQUIRE(kill(svc.pid, SIGSTOP) == 0);
		d.offer("/prog2");
		usleep(100000);
		REQUIRE(kill(svc.pid, SIGCONT) == 0);
		REQUIRE(svc.wait_for("refused_total", refused + 1));
		CHECK(svc.text().find("visible neither to the service nor in the sender's namespace") != std::string::npos);
	}
}

// Whether this process may make a user namespace (not in a chroot, say).
static bool userns_allowed()
{
	pid_t c = fork();
	if (c == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	int st = 0;
	return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

TEST_CASE("a sender in a user namespace is judged as the host uid its root maps to", "[service-containers]")
{
	if (!userns_allowed()) {
		WARN("skipped: no user namespace can be made here (a chroot refuses them)");
		return;
	}
	text_cache cache;
	REQUIRE(cache.ok);
	layer low({ "prog", "theirs" });
	// A file of host uid 100000: the user namespace's root's own, root's to see inside.
	REQUIRE(chown(low.path("theirs").c_str(), 100000, 100000) == 0);
	overlay o("u", low.dir);
	REQUIRE(o.ok);
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	container u("test-userns", o.merged, 100000);
	REQUIRE(u.error == "");
	CHECK(u.stat_in("/theirs").uid == 0);
	u.offer("/theirs");
	INFO(svc.text());
	REQUIRE(svc.wait_for("refused_total", 1));
	CHECK(svc.text().find("does not belong to root (uid 100000") != std::string::npos);
	// Root's file is served, for the client the host sees: uid 100000.
	u.offer("/prog");
	REQUIRE(svc.wait_for("filled_total", 1));
	CHECK(svc.text().find("uid 100000") != std::string::npos);
	CHECK(svc.text().find("\"client\":\"uid 100000\"") != std::string::npos);
	CHECK(svc.text().find("\"client\":\"uid 0\"") == std::string::npos);
}

TEST_CASE("a service killed in the middle of a fill leaves nothing mapped, and the next cleans up",
	  "[service-containers]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	// What a killed service left in views and in shared/: removed by the next.
	mkdir(shared_dir.c_str(), 0755);
	mkdir(views_dir.c_str(), 0755);
	mkdir((views_dir + "/test-dead").c_str(), 0755);
	std::string stale_link = views_dir + "/test-dead/f-1-2-3-4.000000000-5-6-7.text.tmp.999999999";
	REQUIRE(run_cmd({ "touch", stale_link }).status == 0);

	bool caught = false;
	std::string tmp;
	for (int round = 0; round < 5 && !caught; round++) {
		std::string prog = program_copy("killed-" + std::to_string(round));
		for (auto &n : names_in(shared_dir))
			if (n.size() > 5 && n.compare(n.size() - 5, 5, ".text") == 0)
				unlink((shared_dir + "/" + n).c_str());
		service svc({ "--no-warm" });
		REQUIRE(svc.alive());
		int in = inotify_init1(IN_CLOEXEC);
		REQUIRE(in >= 0);
		REQUIRE(inotify_add_watch(in, shared_dir.c_str(), IN_CREATE) >= 0);
		REQUIRE(offer_from_runner(prog) == 0);
		// The fill's temporary file is made: the service is stopped there, then killed.
		char buf[4096];
		struct pollfd pf = { in, POLLIN, 0 };
		while (!caught && poll(&pf, 1, 10000) == 1) {
			ssize_t n = read(in, buf, sizeof(buf));
			for (char *p = buf; n > 0 && p < buf + n;) {
				auto *e = (struct inotify_event *)p;
				std::string name = e->len ? e->name : "";
				if (name.find(".tmp.") != std::string::npos && kill(svc.pid, SIGSTOP) == 0) {
					tmp = shared_dir + "/" + name;
					caught = file_exists(tmp); // else it was published already: another round
				}
				p += sizeof(*e) + e->len;
			}
			if (!caught && svc.num("filled_total") >= 1)
				break;
		}
		close(in);
		kill(svc.pid, SIGKILL);
		waitpid(svc.pid, nullptr, 0);
		svc.pid = -1;
	}
	REQUIRE(caught);
	// Half made: its temporary name, no entry a process would look up, mapped by nobody.
	CHECK(file_exists(tmp));
	CHECK(cache_entry(shared_dir).empty());
	CHECK(!anyone_maps(tmp.substr(tmp.rfind('/') + 1)));
	service next({ "--no-warm" });
	REQUIRE(next.alive());
	INFO(next.text());
	CHECK(!file_exists(tmp));
	CHECK(!file_exists(stale_link));
	CHECK(next.text().find("left half-made by a service that was killed") != std::string::npos);
	// And it serves: the same file is filled whole.
	std::string prog = program_copy("killed-after");
	REQUIRE(offer_from_runner(prog) == 0);
	CHECK(next.wait_for("filled_total", 1));
	CHECK(!cache_entry(shared_dir).empty());
}

TEST_CASE("each client keeps a share of the cache: one filling it evicts its own entries, not another's",
	  "[service-containers]")
{
	// Room for two spans of 38 MiB and some: a fair share is half of it.
	text_cache cache("100m");
	REQUIRE(cache.ok);
	layer low({ "p1", "p2", "p3", "p4" });
	overlay o1("a", low.dir), o2("b", low.dir);
	REQUIRE(o1.ok);
	REQUIRE(o2.ok);
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	container a("test-a", o1.merged), b("test-b", o2.merged);
	REQUIRE(a.error == "");
	REQUIRE(b.error == "");
	a.record();
	b.record();
	auto entry = [&](const std::string &p) { return shared_dir + "/" + entry_name_of(host_id(low.path(p))); };
	auto link = [&](container &c, const std::string &p) { return c.view() + "/" + entry_name_of(c.stat_in("/" + p)); };

	// A takes the cache while nobody else uses it: free room is anyone's.
	a.offer("/p1");
	INFO(svc.text());
	REQUIRE(svc.wait_for("filled_total", 1));
	a.offer("/p2");
	REQUIRE(svc.wait_for("filled_total", 2));
	CHECK(file_exists(link(a, "p1")));
	uint64_t used_two = used_bytes(text_dir);
	// B's fill: A holds more than its half, so A's oldest goes, its link with it.
	std::string a_p1 = link(a, "p1");
	b.offer("/p3");
	REQUIRE(svc.wait_for("filled_total", 3));
	CHECK(!file_exists(entry("p1")));
	CHECK(!file_exists(a_p1));
	CHECK(file_exists(entry("p2")));
	CHECK(file_exists(entry("p3")));
	CHECK(file_exists(link(b, "p3")));
	// The memory went with the links: still two spans in use.
	CHECK(used_bytes(text_dir) <= used_two + (4u << 20));
	CHECK(svc.text().find("container test-a, for container test-b") != std::string::npos);
	// A again: now within its share, as is B; A's fill evicts A's own.
	a.offer("/p4");
	REQUIRE(svc.wait_for("filled_total", 4));
	CHECK(file_exists(entry("p3")));
	CHECK(file_exists(link(b, "p3")));
	CHECK(!file_exists(entry("p2")));
	CHECK(file_exists(entry("p4")));
	CHECK(svc.text().find("container test-a, for container test-a") != std::string::npos);
	// The state file shows each client's part and the share.
	svc.wait_for("cache_share", 1);
	CHECK(svc.num("cache_share") > 0);
	CHECK(svc.text().find("\"client\":\"container test-b\"") != std::string::npos);
	CHECK(svc.text().find("\"cache_entries\":1") != std::string::npos);
}

namespace {

// service-flood's three kinds at once on @socket, one process each as @uid for 3 s, offering
// @file's span; at the lowest CPU priority when @low (their busy loops then leave the honest
// clients the CPU they need to send within the 20 ms a connection is held).  Their pids.
std::vector<pid_t> start_floods(const std::string &socket, const std::string &uid, const std::string &file, bool low)
{
	std::string flood = build_path("tests/service-flood"), off = std::to_string(span_off),
		    len = std::to_string(span_len);
	std::vector<pid_t> floods;
	for (const char *kind : { "silent", "garbage", "offers" }) {
		pid_t p = fork();
		if (p == 0) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 1);
			if (low && setpriority(PRIO_PROCESS, 0, 19) < 0)
				_exit(126);
			execl(flood.c_str(), flood.c_str(), "flood", socket.c_str(), kind, uid.c_str(), "1", "3", file.c_str(),
			      off.c_str(), len.c_str(), len.c_str(), (char *)nullptr);
			_exit(127);
		}
		floods.push_back(p);
	}
	return floods;
}

} // namespace

TEST_CASE("a flood of nobody's connections, garbage and offers leaves root's offers served", "[service-containers]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	std::string theirs = program_copy("flood-theirs"), mine = program_copy("flood-mine");
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	size_t fds_before = open_fds(svc.pid);
	std::string fds_were = fd_list(svc.pid);
	std::string flood = build_path("tests/service-flood"), off = std::to_string(span_off),
		    len = std::to_string(span_len);
	// Three kinds at once, each from a process of nobody, for 3 s.
	std::vector<pid_t> floods = start_floods(sock, "65534", theirs, false);
	usleep(500000);
	// Root's offers meanwhile, as the library makes them: connected, sent and taken, every one.
	run_result probe = run_cmd({ flood, "probe", sock, "20", "50", mine, off, len, len });
	for (pid_t p : floods)
		waitpid(p, nullptr, 0);
	INFO(probe.out << probe.err);
	INFO(svc.text());
	CHECK(probe.status == 0);
	CHECK(probe.out.find("\"tries\":20,\"connected\":20,\"sent\":20,\"taken\":20,") != std::string::npos);
	// nobody was shut out of the socket by its ACL, and root's file was filled.
	CHECK(svc.text().find("\"gate\":\"acl\"") != std::string::npos);
	CHECK(svc.text().find("uid 65534 opened more than") != std::string::npos);
	CHECK(svc.wait_for("filled_total", 1));
	CHECK(svc.text().find(mine) != std::string::npos);
	// Nothing lasts: every held connection is let go, the shut-out lifted.
	CHECK(svc.alive());
	for (int i = 0; i < 200 && (svc.num("held") != 0 || svc.num("pending") != 0); i++)
		usleep(50000);
	CHECK(svc.num("held") == 0);
	CHECK(svc.num("pending") == 0);
	// Every connection and descriptor it was sent is closed again (root's
	// file waits, filled: none of its descriptors is left either).
	size_t fds_after = open_fds_settled(svc.pid, fds_before);
	INFO("before:\n" << fds_were << "after:\n" << fd_list(svc.pid));
	CHECK(fds_after == fds_before);
	struct stat st;
	for (int i = 0; i < 200 && getxattr(sock.c_str(), "system.posix_acl_access", nullptr, 0) >= 0; i++)
		usleep(50000);
	CHECK(getxattr(sock.c_str(), "system.posix_acl_access", nullptr, 0) < 0);
	REQUIRE(stat(sock.c_str(), &st) == 0);
	CHECK((st.st_mode & 0777) == 0666);
}

namespace {

const std::string sockets_dir = "/run/hugetext/" HTE_CONTAINER_SOCKETS_NAME;

// <sockets>/<id>/ as the OCI hook makes it for a container it injects.
std::string own_socket_dir(const std::string &id)
{
	std::string d = sockets_dir + "/" + id;
	REQUIRE(mkdir(d.c_str(), 0755) == 0);
	REQUIRE(chmod(d.c_str(), 0755) == 0);
	return d;
}

bool is_socket(const std::string &path)
{
	struct stat st;
	return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

bool wait_socket(const std::string &path, bool want = true)
{
	for (int i = 0; i < 100; i++) {
		if (is_socket(path) == want)
			return true;
		usleep(50000);
	}
	return false;
}

// service-flood's probe: @tries offers of @file to @socket, its JSON line.
run_result probe_on(const std::string &socket, const std::string &file, int tries = 20)
{
	return run_cmd({ build_path("tests/service-flood"), "probe", socket, std::to_string(tries), "50", file,
			 std::to_string(span_off), std::to_string(span_len), std::to_string(span_len) });
}

// A number of client @name's object in the state text @st ("connections" ...), -1 when absent.
long client_count(const std::string &st, const std::string &name, const std::string &key)
{
	size_t at = st.find("\"client\":\"" + name + "\"");
	if (at == std::string::npos)
		return -1;
	size_t end = st.find('}', at), k = st.find("\"" + key + "\":", at);
	return k == std::string::npos || k > end ? -1 : std::stol(st.substr(k + key.size() + 3));
}

std::string all_taken(int n)
{
	std::string k = std::to_string(n);
	return "\"tries\":" + k + ",\"connected\":" + k + ",\"sent\":" + k + ",\"taken\":" + k + ",";
}

} // namespace

TEST_CASE("a container's root flooding its own socket leaves the host's socket and other containers served",
	  "[service-containers][own-socket]")
{
	text_cache cache;
	REQUIRE(cache.ok);
	std::string theirs = program_copy("own-theirs"), mine = program_copy("own-mine"),
		    other = program_copy("own-other");
	service svc({ "--no-warm" });
	REQUIRE(svc.alive());
	// The service makes the directory whose presence tells the hook to make each container a socket:
	// root's alone, so that no host user reaches a container's socket (it would count as that container).
	struct stat st;
	REQUIRE(stat(sockets_dir.c_str(), &st) == 0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK(st.st_uid == 0);
	CHECK((st.st_mode & 07777) == 0700);
	size_t fds_before = open_fds(svc.pid);
	std::string fds_were = fd_list(svc.pid);
	std::string a = own_socket_dir("own-flood-a"), b = own_socket_dir("own-calm-b");
	REQUIRE(wait_socket(a + "/service.sock"));
	REQUIRE(wait_socket(b + "/service.sock"));
	REQUIRE(stat((a + "/service.sock").c_str(), &st) == 0);
	CHECK(st.st_uid == 0);
	CHECK((st.st_mode & 0777) == 0666);
	CHECK(svc.wait_for("container_sockets", 2, 10));
	run_result outsider = run_cmd({ build_path("tests/service-flood"), "flood", b + "/service.sock", "garbage", "65534",
					"1", "0.3" });
	INFO(outsider.out << outsider.err);
	CHECK(outsider.out.find("\"connected\":0,\"sent\":0,\"eacces\":") != std::string::npos);
	CHECK(outsider.out.find("\"eacces\":0,") == std::string::npos);
	// Container a's root, the host's root (no user namespace), floods its own socket, three kinds at
	// once, at the lowest CPU priority: on 2 cores its busy loops would otherwise keep an honest client
	// from sending within the 20 ms a connection is held, which says nothing of the service.
	std::vector<pid_t> floods = start_floods(a + "/service.sock", "0", theirs, true);
	usleep(500000);
	// Root on the host and root in container b meanwhile: every offer connected, sent and taken.
	run_result host = probe_on(sock, mine), calm = probe_on(b + "/service.sock", other);
	for (pid_t p : floods)
		waitpid(p, nullptr, 0);
	INFO(host.out << host.err << calm.out << calm.err);
	INFO(svc.text());
	CHECK(host.status == 0);
	CHECK(host.out.find(all_taken(20)) != std::string::npos);
	CHECK(calm.status == 0);
	CHECK(calm.out.find(all_taken(20)) != std::string::npos);
	// The flood was the container's, never root's.  Past the rate (256 at once, 1000 a second) its
	// socket was left unread for a while; a machine too slow to flood that fast (a TCG guest took
	// about 700 a second) is not shut out, and then the service took no more than the rate allows
	// over the flood's 3 s.
	std::string end_state = svc.text();
	CHECK(end_state.find("uid 0 opened more than") == std::string::npos);
	long flood_conns = client_count(end_state, "container own-flood-a", "connections");
	INFO("the flood's connections taken: " << flood_conns);
	REQUIRE(flood_conns > 0);
	if (end_state.find("container own-flood-a opened more than") != std::string::npos)
		CHECK(end_state.find("its own socket not read") != std::string::npos);
	else
		CHECK(flood_conns <= 256 + 1000 * 4);
	// b's connections were b's, whatever their uid, and so was its file: filled, owned by it.
	for (int i = 0; i < 400 && svc.text().find(other + ": f-") == std::string::npos; i++)
		usleep(50000);
	CHECK(svc.text().find("\"client\":\"container own-calm-b\",\"kind\":\"container\",\"uid\":0,"
			      "\"id\":\"own-calm-b\",\"connections\":20,") != std::string::npos);
	INFO(svc.text());
	CHECK(svc.text().find(other + ": f-") != std::string::npos);
	// A directory removed (the container's poststop): its listener is closed, and with both gone every
	// descriptor the containers' sockets took (listeners, connections, their files) is closed again.
	REQUIRE(unlink((a + "/service.sock").c_str()) == 0);
	REQUIRE(rmdir(a.c_str()) == 0);
	CHECK(svc.wait_for_below("container_sockets", 2, 10));
	CHECK(svc.num("container_sockets") == 1);
	CHECK(is_socket(b + "/service.sock"));
	REQUIRE(unlink((b + "/service.sock").c_str()) == 0);
	REQUIRE(rmdir(b.c_str()) == 0);
	CHECK(svc.wait_for_below("container_sockets", 1, 10));
	for (int i = 0; i < 200 && (svc.num("held") != 0 || svc.num("pending") != 0); i++)
		usleep(50000);
	size_t fds_after = open_fds_settled(svc.pid, fds_before);
	INFO("before:\n" << fds_were << "after:\n" << fd_list(svc.pid));
	CHECK(fds_after == fds_before);
	// A container whose service stops keeps its directory; the next service listens there again.
	std::string c = own_socket_dir("own-later-c");
	REQUIRE(wait_socket(c + "/service.sock"));
	kill(svc.pid, SIGTERM);
	waitpid(svc.pid, nullptr, 0);
	svc.pid = -1;
	CHECK_FALSE(is_socket(c + "/service.sock"));
	service again({ "--no-warm" });
	REQUIRE(again.alive());
	REQUIRE(wait_socket(c + "/service.sock"));
	CHECK(again.num("container_sockets") == 1);
	run_result one = probe_on(c + "/service.sock", other, 1);
	INFO(one.out << one.err);
	CHECK(one.out.find(all_taken(1)) != std::string::npos);
	// The same id's directory removed and made again at once (a container started again): listened in anew.
	REQUIRE(unlink((c + "/service.sock").c_str()) == 0);
	REQUIRE(rmdir(c.c_str()) == 0);
	own_socket_dir("own-later-c");
	REQUIRE(wait_socket(c + "/service.sock"));
	// A record left by a runtime that died (its init gone) does not take the new directory away:
	// the new record comes only at the end of the hook.  (Checked once a second: two checks.)
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, nullptr, 0);
	mkdir(records_dir.c_str(), 0700);
	REQUIRE(chmod(records_dir.c_str(), 0700) == 0);
	{
		std::string path = records_dir + "/own-later-c.json";
		std::ofstream(path) << "{\"id\":\"own-later-c\",\"pid\":" << gone
				    << ",\"pid_start\":1,\"mntns\":1,\"userns\":\"host\",\"cgroup\":\"/\",\"rootfs\":\"/\","
				       "\"upperdir\":\"\",\"annotation\":\"1\",\"injected\":true,\"reason\":\"test\","
				       "\"glibc\":null,\"view\":null,\"time\":0}\n";
		usleep(2500000);
		CHECK(is_socket(c + "/service.sock"));
		CHECK(again.num("container_sockets") == 1);
		unlink(path.c_str());
	}
	REQUIRE(unlink((c + "/service.sock").c_str()) == 0);
	REQUIRE(rmdir(c.c_str()) == 0);
	CHECK(again.wait_for_below("container_sockets", 1, 10));
}

TEST_CASE("pure parts: the budgets, the socket's ACL, the share rule, overlay mounts, records", "[service-containers]")
{
	// A bucket starts full, empties, refills at its rate up to its burst.
	hte_bucket b = {};
	CHECK(hte_bucket_take(&b, 100.0, 10, 3, 1));
	CHECK(hte_bucket_take(&b, 100.0, 10, 3, 1));
	CHECK(hte_bucket_take(&b, 100.0, 10, 3, 1));
	CHECK_FALSE(hte_bucket_take(&b, 100.0, 10, 3, 1));
	CHECK(hte_bucket_take(&b, 100.15, 10, 3, 1)); // 0.15 s at 10 a second
	CHECK_FALSE(hte_bucket_take(&b, 100.15, 10, 3, 1));
	CHECK(hte_bucket_take(&b, 1000.0, 10, 3, 3)); // never more than the burst
	CHECK_FALSE(hte_bucket_take(&b, 1000.0, 10, 3, 1));
	// A job's cost is charged after it ran: below zero, its client waits.
	hte_bucket cpu = {};
	hte_bucket_charge(&cpu, 10.0, 0.25, 2, 3.0);
	CHECK_FALSE(hte_bucket_ready(&cpu, 10.0, 0.25, 2));
	CHECK_FALSE(hte_bucket_ready(&cpu, 13.9, 0.25, 2));
	CHECK(hte_bucket_ready(&cpu, 14.1, 0.25, 2));

	// The ACL: the owner, the named users denied (in order, once), the group, the mask, others.
	unsigned char acl[128];
	uid_t uids[] = { 65534, 1000, 65534 };
	long n = hte_acl_deny(0666, uids, 3, acl, sizeof(acl));
	REQUIRE(n == 4 + 8 * 6);
	auto u16 = [&](int at) { return (unsigned)acl[at] | (unsigned)acl[at + 1] << 8; };
	auto u32 = [&](int at) { return u16(at) | u16(at + 2) << 16; };
	CHECK(u32(0) == 2);
	unsigned tags[] = { 0x01, 0x02, 0x02, 0x04, 0x10, 0x20 }, perms[] = { 6, 0, 0, 6, 6, 6 };
	unsigned ids[] = { 0xffffffffu, 1000, 65534, 0xffffffffu, 0xffffffffu, 0xffffffffu };
	for (int i = 0; i < 6; i++) {
		CHECK(u16(4 + 8 * i) == tags[i]);
		CHECK(u16(6 + 8 * i) == perms[i]);
		CHECK(u32(8 + 8 * i) == ids[i]);
	}
	CHECK(hte_acl_deny(0666, uids, 3, acl, 51) == -1);
	CHECK(hte_acl_deny(0640, nullptr, 0, acl, sizeof(acl)) == 4 + 8 * 4);
	CHECK(u16(6) == 6);
	CHECK(u16(6 + 8) == 4);
	CHECK(u16(6 + 24) == 0);

	// The share rule, on a cache of 100 with two clients (a share is 50).
	// Oldest fill first: 0 (client 0, 30), 1 (client 1, 30), 2 (client 0, 30).
	const uint64_t M = 1;
	hte_cache_entry e[] = { { 1, 1, 30 * M, 0 }, { 2, 2, 30 * M, 1 }, { 3, 3, 30 * M, 0 } };
	size_t out[8];
	uint64_t share = 0;
	// Client 1 needs 30 (10 free): client 0 holds 60 > 50, its oldest goes.
	CHECK(hte_share_pick(e, 3, 2, 1, 100 * M, 10 * M, 30 * M, out, &share) == 1);
	CHECK(out[0] == 0);
	CHECK(share == 50 * M);
	// Client 0 needs 30: client 1 (30) is within its share; client 0's own go, oldest first.
	CHECK(hte_share_pick(e, 3, 2, 0, 100 * M, 10 * M, 30 * M, out, &share) == 1);
	CHECK(out[0] == 0);
	CHECK(hte_share_pick(e, 3, 2, 0, 100 * M, 10 * M, 60 * M, out, &share) == 2);
	CHECK(out[1] == 2);
	// Needing more than its own and others' excess can free: refused, nothing removed.
	CHECK(hte_share_pick(e, 3, 2, 0, 100 * M, 10 * M, 90 * M, out, &share) == -1);
	// A third client: a share is 33; client 0 (60) is over, client 1 (30) is not,
	// and client 0 is no longer once it lost one entry.
	CHECK(hte_share_pick(e, 3, 3, 2, 100 * M, 10 * M, 40 * M, out, &share) == 1);
	CHECK(share == 33 * M);
	CHECK(out[0] == 0);
	CHECK(hte_share_pick(e, 3, 3, 2, 100 * M, 10 * M, 41 * M, out, &share) == -1);
	// Nobody's entries (a stopped container's) go first in their turn, whoever fills.
	hte_cache_entry f[] = { { 1, 1, 30 * M, 1 }, { 2, 2, 30 * M, -1 } };
	CHECK(hte_share_pick(f, 2, 2, 0, 100 * M, 40 * M, 60 * M, out, &share) == 1);
	CHECK(out[0] == 1);
	CHECK(hte_share_pick(f, 2, 2, 0, 100 * M, 40 * M, 200 * M, out, &share) == -1);
	// Mapped entries go after the unmapped ones, least recently mapped first.
	hte_cache_entry g[] = { { 9, 1, 30 * M, 0 }, { 2, 5, 30 * M, 0 }, { 8, 2, 30 * M, 0 } };
	CHECK(hte_share_pick(g, 3, 1, 0, 100 * M, 10 * M, 71 * M, out, &share) == 3);
	CHECK(out[0] == 1);
	CHECK(out[1] == 2);
	CHECK(out[2] == 0);

	// mountinfo: the overlay of a device, its layers unescaped (mountinfo's
	// octal, then overlayfs's backslashes), data-only layers left out.
	std::string mi =
		"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		"30 22 0:55 / /var/lib/c/abc/merged rw,relatime - overlay overlay "
		"rw,lowerdir=/l/one:/l/t\\134\\072wo::/l/data,upperdir=/u/a\\040b,workdir=/w,uuid=on\n"
		"31 22 0:55 /sub /mnt/x rw - overlay overlay rw,lowerdir=/l/one,upperdir=/u/a\\040b\n"
		"40 22 0:56 / / rw - tmpfs tmpfs rw\n"
		"41 22 0:57 / /plus rw - overlay overlay rw,lowerdir+=/p/1,lowerdir+=/p/2,datadir+=/p/d\n";
	auto ovl = std::make_unique<hte_ovl_mount>();
	REQUIRE(hte_mountinfo_overlay(mi.data(), mi.size(), makedev(0, 55), "/var/lib/c/abc/merged/usr/bin/x",
				      ovl.get()) == 1);
	CHECK(std::string(ovl->upper) == "/u/a b");
	CHECK(ovl->nlower == 2);
	CHECK(std::string(ovl->lowers) == "/l/one");
	CHECK(std::string(ovl->lowers + 7) == "/l/t:wo");
	CHECK(std::string(ovl->rel) == "/usr/bin/x");
	// The longest mount point under which the path lies, and its root in the file system.
	REQUIRE(hte_mountinfo_overlay(mi.data(), mi.size(), makedev(0, 55), "/mnt/x/y", ovl.get()) == 1);
	CHECK(std::string(ovl->rel) == "/sub/y");
	CHECK(ovl->nlower == 1);
	// No mount point fits (a detached mount): the path is from the first one's root.
	REQUIRE(hte_mountinfo_overlay(mi.data(), mi.size(), makedev(0, 55), "/usr/bin/x", ovl.get()) == 1);
	CHECK(std::string(ovl->rel) == "/usr/bin/x");
	CHECK(hte_mountinfo_overlay(mi.data(), mi.size(), makedev(0, 56), "/x", ovl.get()) == 0); // tmpfs
	CHECK(hte_mountinfo_overlay(mi.data(), mi.size(), makedev(0, 58), "/x", ovl.get()) == 0);
	REQUIRE(hte_mountinfo_overlay(mi.data(), mi.size(), makedev(0, 57), "/plus/f", ovl.get()) == 1);
	CHECK(ovl->nlower == 2);
	CHECK(std::string(ovl->lowers + 5) == "/p/2");
	CHECK(ovl->upper[0] == '\0');
	std::string bad = "30 22 0:55 / /m rw - overlay overlay rw,upperdir=/u\n"; // no lower layer
	CHECK(hte_mountinfo_overlay(bad.data(), bad.size(), makedev(0, 55), "/m/x", ovl.get()) == -1);

	// Relative layers (containers/storage's form for many layers): shown as given, rebased on the
	// directory they were given from, the nearest of the mount point's ancestors that holds them all.
	std::string rel = "30 22 0:55 / /s/ovl/id1/merged rw - overlay overlay "
			  "rw,lowerdir=l/AAA:/abs/B:l/CCC,upperdir=id1/diff,workdir=id1/work\n";
	REQUIRE(hte_mountinfo_overlay(rel.data(), rel.size(), makedev(0, 55), "/s/ovl/id1/merged/x", ovl.get()) == 1);
	CHECK(hte_ovl_relative(ovl.get()) == 1);
	auto copy = std::make_unique<hte_ovl_mount>(*ovl);
	REQUIRE(hte_ovl_rebase(copy.get(), "/s/ovl") == 0);
	CHECK(hte_ovl_relative(copy.get()) == 0);
	CHECK(std::string(copy->upper) == "/s/ovl/id1/diff");
	CHECK(std::string(copy->lowers) == "/s/ovl/l/AAA");
	CHECK(std::string(copy->lowers + 13) == "/abs/B");
	CHECK(std::string(copy->lowers + 20) == "/s/ovl/l/CCC");
	*copy = *ovl;
	REQUIRE(hte_ovl_rebase(copy.get(), "/") == 0);
	CHECK(std::string(copy->lowers) == "/l/AAA");
	*copy = *ovl;
	CHECK(hte_ovl_rebase(copy.get(), "relative") == -1);
	CHECK(hte_ovl_rebase(copy.get(), ("/" + std::string(sizeof(copy->upper), 'x')).c_str()) == -1);
	CHECK(std::string(copy->lowers) == "l/AAA"); // unchanged by a refusal
	{
		// The same layout on disk: found two levels up; with a layer missing, nowhere.
		std::string t = temp_path("ovl-rel", build_path("tests"));
		for (const char *d : { "", "/ovl", "/ovl/l", "/ovl/l/A", "/ovl/l/real-c", "/ovl/id1", "/ovl/id1/diff",
				       "/ovl/id1/merged" })
			REQUIRE(mkdir((t + d).c_str(), 0755) == 0);
		REQUIRE(symlink("real-c", (t + "/ovl/l/C").c_str()) == 0); // containers/storage's short names are links
		std::string line = "30 22 0:55 / " + t + "/ovl/id1/merged rw - overlay overlay "
				   "rw,lowerdir=l/A:l/C,upperdir=id1/diff,workdir=id1/work\n";
		REQUIRE(hte_mountinfo_overlay(line.data(), line.size(), makedev(0, 55), nullptr, ovl.get()) == 1);
		REQUIRE(hte_ovl_find_base(ovl.get()) == 0);
		CHECK(std::string(ovl->lowers) == t + "/ovl/l/A");
		CHECK(std::string(ovl->upper) == t + "/ovl/id1/diff");
		CHECK(hte_ovl_find_base(ovl.get()) == 0); // nothing relative now: as it is
		std::string gone = line;
		gone.replace(gone.find("l/C"), 3, "l/D");
		REQUIRE(hte_mountinfo_overlay(gone.data(), gone.size(), makedev(0, 55), nullptr, ovl.get()) == 1);
		CHECK(hte_ovl_find_base(ovl.get()) == -1);
		rm_rf(t);
	}

	// The root of the mount on "/": a chroot's directory (escaped), the last mount there.
	char root[64];
	std::string host = "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 0:5 / /proc rw - proc proc rw\n";
	REQUIRE(hte_mountinfo_root(host.data(), host.size(), root, sizeof(root)) == 0);
	CHECK(std::string(root) == "/");
	std::string chrooted = "99 78 254:0 /var/cache/fresh\\040root / rw - ext4 /dev/vda rw\n"
			       "100 99 254:0 /usr /usr rw - ext4 /dev/vda rw\n";
	REQUIRE(hte_mountinfo_root(chrooted.data(), chrooted.size(), root, sizeof(root)) == 0);
	CHECK(std::string(root) == "/var/cache/fresh root");
	std::string twice = chrooted + "120 99 0:60 /inner / rw - tmpfs tmpfs rw\n";
	REQUIRE(hte_mountinfo_root(twice.data(), twice.size(), root, sizeof(root)) == 0);
	CHECK(std::string(root) == "/inner");
	std::string none = "100 99 254:0 /usr /usr rw - ext4 /dev/vda rw\n";
	CHECK(hte_mountinfo_root(none.data(), none.size(), root, sizeof(root)) == -1);
	CHECK(hte_mountinfo_root(chrooted.data(), chrooted.size(), root, 8) == -1); // does not fit

	// The hook's records.
	hte_record r;
	std::string rec = "{\"id\":\"abc-1.x_2\",\"pid\":4242,\"pid_start\":123456,\"mntns\":4026532000,"
			  "\"userns\":\"host\",\"view\":\"/run/hugetext/text/shared/c/abc-1.x_2\",\"time\":5}\n";
	REQUIRE(hte_record_parse(rec.data(), rec.size(), &r) == 0);
	CHECK(std::string(r.id) == "abc-1.x_2");
	CHECK(r.pid == 4242);
	CHECK(r.pid_start == 123456);
	CHECK(r.mntns == 4026532000ull);
	CHECK(r.has_view);
	std::string noview = "{\"id\":\"a\",\"pid\":1,\"pid_start\":1,\"mntns\":1,\"view\":null}";
	REQUIRE(hte_record_parse(noview.data(), noview.size(), &r) == 0);
	CHECK_FALSE(r.has_view);
	for (std::string no : { std::string("{\"id\":\"a\",\"pid\":1,\"pid_start\":1}"),                  // no mntns
				std::string("{\"id\":\"a\",\"pid\":\"1\",\"pid_start\":1,\"mntns\":1}"),         // a string
				std::string("{\"id\":\"a/..\",\"pid\":1,\"pid_start\":1,\"mntns\":1}"),          // a path
				std::string("{\"id\":\"..\",\"pid\":1,\"pid_start\":1,\"mntns\":1}"),
				std::string("{\"id\":\"a\",\"pid\":-1,\"pid_start\":1,\"mntns\":1}"),
				std::string("{\"id\":\"a\",\"pid\":1,\"pid_start\":1,\"mntns\":1} {}"),          // two
				std::string("[1,2]"), std::string("not json"), std::string("{\"id\":\"a\",\"pid\":1,") })
		CHECK(hte_record_parse(no.data(), no.size(), &r) == -1);
	std::string nul = noview;
	nul[3] = '\0';
	CHECK(hte_record_parse(nul.data(), nul.size(), &r) == -1);
	std::string long_id = "{\"id\":\"" + std::string(HTE_ID_MAX + 1, 'a') + "\",\"pid\":1,\"pid_start\":1,\"mntns\":1}";
	CHECK(hte_record_parse(long_id.data(), long_id.size(), &r) == -1);
	std::string huge(70 << 10, ' ');
	huge = "{\"id\":\"a\",\"pid\":1,\"pid_start\":1,\"mntns\":1}" + huge;
	CHECK(hte_record_parse(huge.data(), huge.size(), &r) == -1);

	// /proc/PID/stat's start time, whatever the name holds.
	unsigned long long start = 0;
	std::string stat = "42 (a) b) (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
	REQUIRE(hte_proc_start_time(stat.data(), stat.size(), &start) == 0);
	CHECK(start == 987654);
	std::string cut = "42 (x) S 1 42 42 0";
	CHECK(hte_proc_start_time(cut.data(), cut.size(), &start) == -1);

	// Temporary names: NAME.tmp.PID.
	long pid = 0;
	CHECK(hte_tmp_pid("f-1-2.text.tmp.1234", &pid) == 1);
	CHECK(pid == 1234);
	for (const char *no : { "f-1-2.text", "f.tmp.", "f.tmp.12a", "f.tmp.0", "f.tmp.99999999999999" })
		CHECK(hte_tmp_pid(no, &pid) == 0);
	CHECK(hte_id_valid("5ddc199bdea8"));
	for (const char *no : { "", ".", "..", "a/b", "a b", "a\n" })
		CHECK_FALSE(hte_id_valid(no));
}
