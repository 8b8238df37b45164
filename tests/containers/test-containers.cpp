// Description: hugetext oci-hook under Podman with runc, in a private mount
// namespace of the test (a tmpfs on /run/hugetext, where the hook keeps its
// records and log and the text service its socket and cache), with the
// build's hook and preload named by a hooks.d file of the test's own.
// Images are built from the host's own files (a program and its ldd
// libraries, podman import) and kept by content, so reruns import nothing.
// Cases: an unannotated container is left alone; an annotated one gets the
// preload, its image's own preloaded library kept, nothing it can change;
// the host policy (all, off); musl, static and glibc-2.17 images left
// alone; hostile images (links to host paths, a directory, a FIFO or a
// huge file where /etc/ld.so.preload is expected, /etc, /run, /run/hugetext
// links, loader and libc links out of the image) start unchanged and
// nothing on the host changes; node's code on the page cache's 2 MiB pages
// with nothing private from its second start (the text service warms the
// file the container runs), and two containers of one image on the same
// physical pages.  [full] (tests/containers/run.sh): clang++ with its
// libraries, a container started again, a user-namespaced container.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <sched.h>
#include <set>
#include <sstream>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "../tools/tooltest.hpp"

#include <json-c/json.h>

extern "C" {
#include "ocihook.h"
#include "serve.h"
}

namespace fs = std::filesystem;

namespace {

const std::string run_dir = "/run/hugetext";
const std::string records = run_dir + "/containers";
const std::string hook_log = run_dir + "/oci-hook.log";
const std::string sock = run_dir + "/service.sock";
const std::string serve_state = run_dir + "/service.json";
const std::string cache = run_dir + "/text";
// Host paths the hostile images point at: fixed, so the images stay the same from run to run.
const std::string canary = "/var/lib/hugetext-test-canary";
const std::string annotation = "io.hugetext/enable";

// What podman and the programs it starts must not inherit from the test runner.
const std::vector<std::string> clean_env = { "LD_PRELOAD", "HUGETEXT_PAGE_CACHE", "HUGETEXT_COPY" };

std::string trim(const std::string &s)
{
	size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
	return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The line of Podman's error output that says what failed (its last "Error:" line, else its last).
std::string last_error(const std::string &err)
{
	std::istringstream in(err);
	std::string line, last, error;
	while (std::getline(in, line)) {
		if (trim(line).empty())
			continue;
		last = trim(line);
		if (last.rfind("Error:", 0) == 0)
			error = last;
	}
	return (error.empty() ? last : error).substr(0, 300);
}

/*
 * Podman's configuration for the suite, whatever the machine's is: root, runc,
 * cgroupfs (runc refuses a hybrid layout with systemd's manager here, and
 * there may be no systemd), no default ulimits (Podman's are above this
 * machine's hard limits), events to a file (no journald needed).
 */
const char podman_conf[] = "[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = \"cgroupfs\"\n"
			   "runtime = \"runc\"\nevents_logger = \"file\"\n";
std::string podman_conf_path;

prog_result podman(const std::vector<std::string> &args, double timeout = 120, const std::string &in = "/dev/null")
{
	std::vector<std::string> argv = { "podman" };
	argv.insert(argv.end(), args.begin(), args.end());
	prog_opts o;
	o.env = clean_env;
	if (!podman_conf_path.empty())
		o.env.push_back("CONTAINERS_CONF=" + podman_conf_path);
	o.timeout_s = timeout;
	o.stdin_path = in;
	return run_prog(argv, o);
}

// --- the set-up, once per process ---

struct setup {
	std::string why;  // a skip reason
	std::string work; // tarballs, trees, hooks dirs
	std::map<std::string, std::string> hooks; // policy -> hooks dir
	std::string probe_image;

	setup();
	~setup()
	{
		if (!work.empty())
			fs::remove_all(work);
		std::error_code ec;
		fs::remove_all(canary, ec);
	}
};

// A hooks.d directory: the file the package installs (data/50-hugetext.json),
// its path and preload the build's (the pinned one, as the hook's default), with the test's paths
// and policy file @conf.
std::string hooks_dir(const std::string &work, const std::string &name, const std::string &conf_text)
{
	std::string dir = work + "/hooks-" + name, conf = work + "/hugetext-" + name + ".conf";
	fs::create_directories(dir);
	std::ofstream(conf) << conf_text;
	chmod(conf.c_str(), 0644);
	json_object *o = json_object_from_file(build_path("data/50-hugetext.json").c_str()), *hook, *args;
	if (!o || !json_object_object_get_ex(o, "hook", &hook) || !json_object_object_get_ex(hook, "args", &args))
		return "";
	json_object_object_add(hook, "path", json_object_new_string(build_path("tools/hugetext").c_str()));
	// "hugetext", "oci-hook" as shipped; then the build's preload and the test's own paths.
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < 2 && i < json_object_array_length(args); i++)
		json_object_array_add(a, json_object_get(json_object_array_get_idx(args, i)));
	for (const std::string &x : { std::string("--preload"), build_path("lib/libhugetext-preload-pinned.so"),
				      std::string("--socket"), sock, std::string("--cache"), cache,
				      std::string("--records"), records, std::string("--log"), hook_log,
				      std::string("--config"), conf })
		json_object_array_add(a, json_object_new_string(x.c_str()));
	json_object_object_add(hook, "args", a);
	int rc = json_object_to_file(const_cast<char *>((dir + "/50-hugetext.json").c_str()), o);
	json_object_put(o);
	return rc == 0 ? dir : "";
}

// A directory tree that becomes an image.
struct tree {
	std::string root;
	explicit tree(const std::string &r) : root(r)
	{
		fs::remove_all(root);
		fs::create_directories(root);
	}
	std::string at(const std::string &p) const
	{
		fs::create_directories(fs::path(root + p).parent_path());
		return root + p;
	}
	void file(const std::string &p, const std::string &from, unsigned mode = 0755)
	{
		fs::copy_file(from, at(p), fs::copy_options::overwrite_existing);
		chmod((root + p).c_str(), mode);
	}
	void text(const std::string &p, const std::string &bytes, unsigned mode = 0644)
	{
		std::ofstream(at(p), std::ios::binary) << bytes;
		chmod((root + p).c_str(), mode);
	}
	void link(const std::string &p, const std::string &to) { fs::create_symlink(to, at(p)); }
	void dir(const std::string &p) { fs::create_directories(root + p); }
	void fifo(const std::string &p) { mkfifo(at(p).c_str(), 0644); }
	// @prog at @p, and the libraries ldd names at their paths (the loader too).
	void with_libs(const std::string &prog, const std::string &p)
	{
		file(p, prog);
		std::istringstream in(run_prog({ "ldd", prog }).out);
		std::string line;
		while (std::getline(in, line)) {
			size_t at = line.find("=> /"), start = at != std::string::npos ? at + 3 : line.find_first_not_of(" \t");
			if (start == std::string::npos || line[start] != '/')
				continue;
			std::string lib = line.substr(start, line.find(' ', start) - start);
			if (!fs::exists(root + lib))
				file(lib, lib, 0755);
		}
	}
};

// The image of @t, named by its content: imported once, then found again.  "" on failure, @err says why.
std::string try_image(const tree &t, const std::string &name, const std::string &work, std::string *err)
{
	std::string tar = work + "/" + name + ".tar";
	prog_result r = run_prog({ "tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
				   "-C", t.root, "-cf", tar, "." });
	if (r.status != 0) {
		*err = "tar: " + r.err;
		return "";
	}
	std::string hash = trim(run_prog({ "sha256sum", tar }).out).substr(0, 16);
	std::string repo = "localhost/hth-test-" + name, tag = repo + ":" + hash;
	if (podman({ "image", "exists", tag }).status != 0) {
		r = podman({ "import", "-q", tar, tag }, 300);
		if (r.status != 0) {
			*err = "podman import: " + r.err;
			fs::remove(tar);
			return "";
		}
		// Older contents of the same image go.
		std::istringstream old(podman({ "images", "--format", "{{.Repository}}:{{.Tag}}", "--filter",
						"reference=" + repo }).out);
		std::string o;
		while (std::getline(old, o))
			if (o != tag && o.rfind(repo + ":", 0) == 0)
				podman({ "rmi", "-f", o });
	}
	fs::remove(tar);
	return tag;
}

std::string image_of(const tree &t, const std::string &name, const std::string &work)
{
	std::string err, tag = try_image(t, name, work, &err);
	INFO(err);
	REQUIRE(!tag.empty());
	return tag;
}

// The probe against glibc, and the library the image's own ld.so.preload names.
tree probe_tree(const std::string &work, const std::string &name)
{
	tree t(work + "/tree-" + name);
	t.with_libs(build_path("tests/containers/ctr-probe"), "/probe");
	t.dir("/etc");
	t.dir("/tmp");
	return t;
}

setup::setup()
{
	if (geteuid() != 0) {
		why = "needs root: Podman runs the hook as root, and the test mounts in a private namespace";
		return;
	}
	for (const char *p : { "podman", "runc" })
		if (!have_program(p)) {
			why = std::string(p) + " is missing (apt-get install podman runc)";
			return;
		}
	errno = 0;
	if (syscall(SYS_mount_setattr, -1, "", 0, nullptr, 0) < 0 && errno == ENOSYS) {
		why = "the kernel lacks mount_setattr (Linux 5.12): the hook cannot mount read-only onto descriptors";
		return;
	}
	// /run/hugetext is where the preload and the service look: a tmpfs of ours there.
	if (mkdir(run_dir.c_str(), 0755) < 0 && errno != EEXIST) {
		why = "cannot make " + run_dir + ": " + std::strerror(errno);
		return;
	}
	if (unshare(CLONE_NEWNS) < 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0 ||
	    mount("hth-test", run_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0) {
		why = std::string("no private mount namespace with a tmpfs on /run/hugetext: ") + std::strerror(errno);
		return;
	}
	char tmpl[] = "/var/tmp/hugetext-containers-XXXXXX";
	if (!mkdtemp(tmpl)) {
		why = "cannot make a work directory in /var/tmp";
		return;
	}
	work = tmpl;
	podman_conf_path = work + "/containers.conf";
	std::ofstream(podman_conf_path) << podman_conf;
	prog_result info = podman({ "info", "--format", "{{.Host.OCIRuntime.Name}}" }, 60);
	if (info.status != 0) {
		why = "podman does not work here: " + last_error(info.err);
		return;
	}
	hooks["annotated"] = hooks_dir(work, "annotated", "");
	hooks["all"] = hooks_dir(work, "all", "containers = all\n");
	hooks["off"] = hooks_dir(work, "off", "containers = off\n");
	for (auto &h : hooks)
		if (h.second.empty()) {
			why = "cannot read the build's data/50-hugetext.json";
			return;
		}
	tree t = probe_tree(work, "probe");
	std::string err;
	probe_image = try_image(t, "probe", work, &err);
	if (probe_image.empty()) {
		why = "cannot make an image here: " + trim(err).substr(0, 300);
		return;
	}
	// A container must start at all (cgroups, the runtime): the machine's, not the hook's.
	prog_result r = podman({ "run", "--rm", "--network", "none", probe_image, "/probe" }, 120);
	if (r.status != 0 || r.out.find("preload-mapped: no") == std::string::npos)
		why = "podman cannot start a container here: " + last_error(r.err);
}

setup &the_setup()
{
	static setup s;
	return s;
}

// --- running containers ---

struct ctr {
	int status = -1;
	std::string out, err, id;
};

int ctr_count;

// One container: podman run --rm with the hooks dir of @policy (or the directory @policy), annotated
// with @value unless it is "".
ctr run_ctr(const std::string &policy, const std::string &img, const std::vector<std::string> &cmd,
	    const std::string &value, const std::vector<std::string> &opts = {}, const std::string &in = "/dev/null")
{
	setup &s = the_setup();
	std::string cid = s.work + "/cid-" + std::to_string(++ctr_count);
	std::vector<std::string> args = { "run", "--rm", "--network", "none", "--hooks-dir",
					  policy[0] == '/' ? policy : s.hooks.at(policy),
					  "--cidfile", cid, "--name", "hth-test-" + std::to_string(getpid()) + "-" +
					  std::to_string(ctr_count) };
	if (!value.empty())
		args.insert(args.end(), { "--annotation", annotation + "=" + value });
	args.insert(args.end(), opts.begin(), opts.end());
	args.push_back(img);
	args.insert(args.end(), cmd.begin(), cmd.end());
	prog_result r = podman(args, 300, in);
	ctr c;
	c.status = r.status;
	c.out = r.out;
	c.err = r.err;
	c.id = trim(read_file(cid));
	fs::remove(cid);
	return c;
}

// A tmpfs of @size with 2 MiB pages at the cache's path (as the service or hugetext setup mounts
// it on a file system without 2 MiB folios, where the service fills entries), for one scope: taken
// away at its end, also when a REQUIRE ends the case.
struct tmpfs_cache {
	explicit tmpfs_cache(const std::string &size)
	{
		fs::create_directories(cache);
		REQUIRE(mount("hth-test-cache", cache.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
			      ("mode=1777,huge=within_size,size=" + size).c_str()) == 0);
	}
	~tmpfs_cache() { umount2(cache.c_str(), MNT_DETACH); }
	tmpfs_cache(const tmpfs_cache &) = delete;
	tmpfs_cache &operator=(const tmpfs_cache &) = delete;
};

// The hook's log lines about container @id.
std::string log_of(const std::string &id)
{
	std::istringstream in(read_file(hook_log));
	std::string line, out;
	while (std::getline(in, line))
		if (!id.empty() && line.find(" " + id + " ") != std::string::npos)
			out += line + "\n";
	return out;
}

// A container that runs until finish(): its standard input is a FIFO of ours.
struct waiting {
	std::string fifo;
	std::thread t;
	ctr result;
	int wfd = -1;

	waiting(const std::string &img, const std::vector<std::string> &cmd, const std::vector<std::string> &opts = {})
	{
		setup &s = the_setup();
		fifo = s.work + "/fifo-" + std::to_string(++ctr_count);
		mkfifo(fifo.c_str(), 0600);
		std::vector<std::string> o = { "-i" };
		o.insert(o.end(), opts.begin(), opts.end());
		t = std::thread([this, img, cmd, o] { result = run_ctr("annotated", img, cmd, "1", o, fifo); });
		wfd = open(fifo.c_str(), O_WRONLY | O_CLOEXEC); // until podman opens it
	}
	ctr &finish()
	{
		if (wfd >= 0)
			close(wfd);
		wfd = -1;
		if (t.joinable())
			t.join();
		fs::remove(fifo);
		return result;
	}
	~waiting() { finish(); }
};

// The record of the one running container annotated so, waited for; nullptr after @timeout.
std::unique_ptr<hte_oci_record> wait_record(const std::set<std::string> &not_these = {}, double timeout = 60)
{
	for (int i = 0; i < timeout * 10; i++) {
		std::error_code ec;
		for (auto &e : fs::directory_iterator(records, ec)) {
			std::string text = read_file(e.path().string());
			auto r = std::make_unique<hte_oci_record>();
			if (e.path().extension() == ".json" && hte_oci_record_parse(text.data(), text.size(), r.get()) == 0 &&
			    !not_these.count(r->id) && r->pid > 0 && kill((pid_t)r->pid, 0) == 0)
				return r;
		}
		usleep(100000);
	}
	return nullptr;
}

// --- the host, before and after ---

// What a hostile image may point at: a file, a directory, an /etc, a /run.
void make_canary()
{
	fs::remove_all(canary);
	fs::create_directories(canary + "/etc");
	fs::create_directories(canary + "/run");
	fs::create_directories(canary + "/rh");
	std::ofstream(canary + "/ld.so.preload") << "canary\n";
	std::ofstream(canary + "/etc/ld.so.preload") << "canary etc\n";
}

// Every name, size, mode and time under the canary, and the test's own mounts.
std::string host_snapshot()
{
	std::string s;
	std::error_code ec;
	if (!fs::is_directory(canary, ec))
		make_canary();
	for (auto &e : fs::recursive_directory_iterator(canary)) {
		struct stat st;
		lstat(e.path().c_str(), &st);
		s += e.path().string() + " " + std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
		     std::to_string(st.st_ino) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
		     std::to_string(st.st_mtim.tv_nsec) + "\n";
		if (e.is_regular_file())
			s += read_file(e.path().string());
	}
	std::istringstream mi(read_file("/proc/self/mountinfo"));
	std::string line;
	std::set<std::string> points;
	while (std::getline(mi, line)) {
		std::istringstream f(line);
		std::string id, parent, dev, root, point;
		f >> id >> parent >> dev >> root >> point;
		points.insert(point);
	}
	// Podman's own: its storage is a private mount of itself once it has run here.
	points.erase("/var/lib/containers/storage/overlay");
	for (auto &p : points)
		s += "mount " + p + "\n";
	return s;
}

// --- smaps and pagemap of a host process ---

struct code_map {
	uint64_t start = 0, end = 0, offset = 0, rss_kb = 0, file_pmd_kb = 0, anon_kb = 0, anon_huge_kb = 0,
		 shmem_pmd_kb = 0;
	std::string path, perms;
};

std::vector<code_map> exec_maps(long pid)
{
	std::vector<code_map> v;
	std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/smaps"));
	std::string line;
	code_map *cur = nullptr;
	while (std::getline(in, line)) {
		unsigned long long a, b, off;
		char perms[8];
		if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx", &a, &b, perms, &off) == 4 &&
		    line.find(" kB") == std::string::npos) {
			v.push_back({});
			cur = &v.back();
			cur->start = a;
			cur->end = b;
			cur->offset = off;
			cur->perms = perms;
			size_t p = line.find('/');
			cur->path = p == std::string::npos ? "" : line.substr(p);
			continue;
		}
		unsigned long long kb;
		if (!cur)
			continue;
		if (std::sscanf(line.c_str(), "Rss: %llu kB", &kb) == 1)
			cur->rss_kb = kb;
		else if (std::sscanf(line.c_str(), "FilePmdMapped: %llu kB", &kb) == 1)
			cur->file_pmd_kb = kb;
		else if (std::sscanf(line.c_str(), "Anonymous: %llu kB", &kb) == 1)
			cur->anon_kb = kb;
		else if (std::sscanf(line.c_str(), "AnonHugePages: %llu kB", &kb) == 1)
			cur->anon_huge_kb = kb;
		else if (std::sscanf(line.c_str(), "ShmemPmdMapped: %llu kB", &kb) == 1)
			cur->shmem_pmd_kb = kb;
	}
	v.erase(std::remove_if(v.begin(), v.end(), [](const code_map &m) { return m.perms.size() < 3 || m.perms[2] != 'x'; }),
		v.end());
	return v;
}

// The code of @pid from files named @name: on the page cache's 2 MiB pages, and copied.
struct code_sum {
	uint64_t code_kb = 0, file_pmd_kb = 0, private_kb = 0;
	std::string text;
};

code_sum code_of(long pid, const std::string &name)
{
	code_sum s;
	for (auto &m : exec_maps(pid)) {
		if (m.path.find(name) != std::string::npos) {
			s.code_kb += (m.end - m.start) / 1024;
			s.file_pmd_kb += m.file_pmd_kb;
			s.private_kb += m.anon_kb;
		} else if (m.path.empty() && m.anon_huge_kb) {
			s.private_kb += m.anon_kb; // an anonymous copy of code, a THP one
		}
		std::ostringstream o;
		o << std::hex << m.start << "-" << m.end << std::dec << " " << m.path << " rss " << m.rss_kb
		  << " FilePmdMapped " << m.file_pmd_kb << " Anonymous " << m.anon_kb << " AnonHuge " << m.anon_huge_kb
		  << "\n";
		s.text += o.str();
	}
	return s;
}

// The frames behind [start, end) of @pid, 0 where a page is absent.
std::vector<uint64_t> frames(long pid, uint64_t start, uint64_t end)
{
	std::vector<uint64_t> pm((end - start) / 4096);
	int fd = open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return {};
	ssize_t n = pread(fd, pm.data(), pm.size() * 8, (off_t)(start / 4096 * 8));
	close(fd);
	pm.resize(n > 0 ? (size_t)n / 8 : 0);
	for (auto &e : pm)
		e = (e >> 63) & 1 ? e & ((1ULL << 55) - 1) : 0;
	return pm;
}

// The text service, started for one case, stopped at its end.
struct service {
	pid_t pid = -1;
	std::string log;
	explicit service(const std::vector<std::string> &more = {})
	{
		log = the_setup().work + "/serve.log";
		unlink(sock.c_str());
		unlink(serve_state.c_str());
		pid = fork();
		if (pid == 0) {
			int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			dup2(fd, 1);
			dup2(fd, 2);
			for (auto &v : clean_env)
				unsetenv(v.c_str());
			std::vector<std::string> a = { "hugetext", "serve", "--socket", sock, "--state", serve_state };
			a.insert(a.end(), more.begin(), more.end());
			std::vector<char *> av;
			for (auto &x : a)
				av.push_back(const_cast<char *>(x.c_str()));
			av.push_back(nullptr);
			execv(build_path("tools/hugetext").c_str(), av.data());
			_exit(127);
		}
		// The state file comes once it accepts, on its socket and the containers' (their directory made).
		for (int i = 0; i < 100 && !file_exists(serve_state); i++)
			usleep(50000);
	}
	~service() { stop(SIGTERM); }
	void stop(int sig)
	{
		if (pid > 0) {
			kill(pid, sig);
			waitpid(pid, nullptr, 0);
		}
		pid = -1;
	}
	// Waits until the state file's @key is at least @n; its text.
	std::string wait_count(const std::string &key, long n, double timeout = 90)
	{
		std::string s;
		for (int i = 0; i < timeout * 5; i++) {
			s = read_file(serve_state);
			size_t at = s.find("\"" + key + "\":");
			if (at != std::string::npos && std::atol(s.c_str() + at + key.size() + 3) >= n)
				return s;
			usleep(200000);
		}
		return s;
	}
};

// The real file of an image's @path: its layer's diff directory (one layer: podman import).
std::string layer_file(const std::string &img, const std::string &path)
{
	return trim(podman({ "image", "inspect", "--format", "{{.GraphDriver.Data.UpperDir}}", img }).out) + path;
}

std::string line_of(const std::string &out, const std::string &key)
{
	std::istringstream in(out);
	std::string line;
	while (std::getline(in, line))
		if (line.rfind(key + ": ", 0) == 0)
			return line.substr(key.size() + 2);
	return "";
}

} // namespace

extern "C" const char *test_skip_reason(void)
{
	const std::string &why = the_setup().why;
	return why.empty() ? nullptr : why.c_str();
}

TEST_CASE("a container that does not ask is left alone: no preload, no record, no log line", "[hook]")
{
	setup &s = the_setup();
	ctr c = run_ctr("annotated", s.probe_image, { "/probe" }, "");
	INFO(c.err);
	REQUIRE(c.status == 0);
	CHECK(line_of(c.out, "preload-mapped") == "no");
	CHECK(line_of(c.out, "etc-ld.so.preload") == "absent");
	CHECK(line_of(c.out, "run-hugetext") == "absent");
	CHECK(!c.id.empty());
	CHECK(log_of(c.id) == "");
	CHECK(!file_exists(records + "/" + c.id + ".json"));
}

TEST_CASE("an annotated container gets the preload, its image's own entries kept, and can change none of it",
	  "[hook]")
{
	setup &s = the_setup();
	tree t = probe_tree(s.work, "keep");
	t.file("/usr/lib/libkeep.so", build_path("tests/containers/libkeep.so"));
	t.text("/etc/ld.so.preload", "# the image's own\n/usr/lib/libkeep.so\n");
	std::string img = image_of(t, "keep", s.work);

	// The cache mounted (as the service or hugetext setup mounts it): the container gets a view of it.
	tmpfs_cache tc("64m");
	service svc;

	waiting w(img, { "/probe", "write", "wait" });
	auto rec = wait_record();
	REQUIRE(rec);
	INFO("record reason: " << rec->reason);
	CHECK(rec->injected == 1);
	CHECK(std::string(rec->glibc).rfind("2.", 0) == 0);
	CHECK(rec->kept == 1);
	CHECK(rec->socket == 1);
	REQUIRE(rec->has_view == 1);
	CHECK(std::string(rec->view) == cache + "/shared/c/" + rec->id);
	struct stat st;
	REQUIRE(stat(rec->view, &st) == 0); // made on the host for the service
	CHECK(st.st_uid == 0);
	CHECK((st.st_mode & 07777) == 0755);
	// Its socket's directory, made on the host for the service, which listens in it.
	std::string own = run_dir + "/sockets/" + rec->id;
	REQUIRE(stat(own.c_str(), &st) == 0);
	CHECK(st.st_uid == 0);
	CHECK((st.st_mode & 07777) == 0755);
	CHECK((lstat((own + "/service.sock").c_str(), &st) == 0 && S_ISSOCK(st.st_mode)));
	CHECK(std::string(rec->upperdir).find("/diff") != std::string::npos);
	CHECK(std::string(rec->userns) == "host");
	CHECK(rec->mntns != 0);
	ctr &c = w.finish();
	INFO(c.out << c.err);
	REQUIRE(c.status == 0);
	const std::string list = "[/usr/lib/libkeep.so|/run/hugetext/libhugetext-preload.so|]";
	CHECK(line_of(c.out, "etc-ld.so.preload") == "file " + list);
	CHECK(line_of(c.out, "run-ld.so.preload") == "file " + list);
	CHECK(line_of(c.out, "preload-mapped") == "yes");
	CHECK(line_of(c.out, "keep-mapped") == "yes");
	// The container's own socket to the service (tools/serve-socks.c), through a link in our tmpfs.
	CHECK(line_of(c.out, "service-sock") == "symlink");
	CHECK(line_of(c.out, "service-sock-target") == "socket");
	CHECK(line_of(c.out, "text-shared") == "directory");
	// Read-only, and no CAP_SYS_ADMIN to unmount or remount it.
	CHECK(line_of(c.out, "write-etc-ld.so.preload") == "EROFS");
	CHECK(line_of(c.out, "write-preload") == "EROFS");
	CHECK(line_of(c.out, "create-run-hugetext") == "EROFS");
	CHECK(line_of(c.out, "create-text-shared") == "EROFS");
	CHECK(line_of(c.out, "create-sock") == "EROFS");
	CHECK(line_of(c.out, "umount-run-hugetext") == "EPERM");
	CHECK(line_of(c.out, "remount-rw") == "EPERM");
	std::string log = log_of(c.id);
	CHECK(log.find(c.id + " injected (glibc ") != std::string::npos);
	CHECK(log.find("(1 entry of the image kept), a socket of its own to the service, the cache view") !=
	      std::string::npos);
	// poststop took the record, the view and the socket's directory.
	CHECK(log.find(c.id + " stopped: record, socket and cache view removed") != std::string::npos);
	CHECK(!file_exists(records + "/" + c.id + ".json"));
	CHECK(!file_exists(rec->view));
	CHECK(!file_exists(run_dir + "/sockets/" + c.id));
	// The image is as it was: the next container without the annotation sees its own file only.
	ctr plain = run_ctr("annotated", img, { "/probe" }, "");
	CHECK(line_of(plain.out, "etc-ld.so.preload") == "file [# the image's own|/usr/lib/libkeep.so|]");
	CHECK(line_of(plain.out, "preload-mapped") == "no");
	CHECK(line_of(plain.out, "keep-mapped") == "yes");
}

// Directories made in the containers' sockets/ for one case, removed at its end (also when a
// REQUIRE ends it: the service removes none, and later cases want places free).
struct left_dirs {
	std::vector<std::string> dirs;
	static void remove(const std::string &d)
	{
		unlink((d + "/service.sock").c_str()); // the service binds one in each
		rmdir(d.c_str());
	}
	~left_dirs()
	{
		for (auto &d : dirs)
			remove(d);
	}
};

// As many containers' directories as the service listens in (HTE_CONTAINER_SOCKETS_MAX), made as a
// runtime that died before its poststops would leave them.
TEST_CASE("past as many containers as the service listens for, a container gets the host's socket, never a "
	  "link to none", "[hook][full][service]")
{
	setup &s = the_setup();
	service svc;
	const std::string dir = run_dir + "/sockets";
	struct stat st;
	REQUIRE((stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
	left_dirs made;
	size_t there = 0; // left by an earlier case, if any: they count as the hook counts them
	for (auto &e : fs::directory_iterator(dir))
		there += e.path().filename().string()[0] != '.';
	REQUIRE(there < HTE_CONTAINER_SOCKETS_MAX);
	for (size_t i = there; i < HTE_CONTAINER_SOCKETS_MAX; i++) {
		made.dirs.push_back(dir + "/hth-left-" + std::to_string(i));
		REQUIRE(mkdir(made.dirs.back().c_str(), 0755) == 0);
	}
	ctr c = run_ctr("annotated", s.probe_image, { "/probe", "write" }, "1");
	{
		INFO(c.out << c.err << log_of(c.id));
		CHECK(c.status == 0);
		CHECK(line_of(c.out, "service-sock") == "socket");
		CHECK(log_of(c.id).find("the service's socket (as many containers as it listens for have one of their "
					"own)") != std::string::npos);
	}
	// One place free again: the next container has a socket of its own.
	left_dirs::remove(made.dirs.back());
	made.dirs.pop_back();
	ctr c2 = run_ctr("annotated", s.probe_image, { "/probe", "write" }, "1");
	{
		INFO(c2.out << c2.err << log_of(c2.id));
		CHECK(c2.status == 0);
		CHECK(line_of(c2.out, "service-sock") == "symlink");
		CHECK(line_of(c2.out, "service-sock-target") == "socket"); // the service listens there
		CHECK(log_of(c2.id).find("a socket of its own to the service") != std::string::npos);
	}
}

TEST_CASE("the host's policy: containers = all takes every container but those annotated 0; off takes none",
	  "[hook][policy]")
{
	setup &s = the_setup();
	ctr all = run_ctr("all", s.probe_image, { "/probe" }, "");
	CHECK(line_of(all.out, "preload-mapped") == "yes");
	CHECK(log_of(all.id).find(" injected (glibc ") != std::string::npos);
	ctr no = run_ctr("all", s.probe_image, { "/probe" }, "0");
	CHECK(line_of(no.out, "preload-mapped") == "no");
	CHECK(log_of(no.id).find(" not injected: annotated io.hugetext/enable=0") != std::string::npos);
	ctr off = run_ctr("off", s.probe_image, { "/probe" }, "1");
	CHECK(line_of(off.out, "preload-mapped") == "no");
	CHECK(log_of(off.id).find(" not injected: the host's policy is containers = off") != std::string::npos);
	ctr bad = run_ctr("annotated", s.probe_image, { "/probe" }, "yes");
	CHECK(line_of(bad.out, "preload-mapped") == "no");
	CHECK(log_of(bad.id).find(" not injected: the annotation io.hugetext/enable is neither 0 nor 1") !=
	      std::string::npos);
	for (const ctr *c : { &all, &no, &off, &bad }) {
		INFO(c->err);
		CHECK(c->status == 0);
	}
}

namespace {

// Runs @img annotated and not: the same output, the log's reason, and nothing on the host changed.
void left_alone(const std::string &img, const std::vector<std::string> &cmd, const std::string &reason)
{
	std::string before = host_snapshot();
	ctr asked = run_ctr("annotated", img, cmd, "1");
	ctr plain = run_ctr("annotated", img, cmd, "");
	std::string after = host_snapshot();
	INFO("image " << img << "\nannotated: " << asked.out << asked.err << "\nplain: " << plain.out << plain.err);
	INFO("log: " << log_of(asked.id));
	CHECK(asked.status == plain.status);
	CHECK(asked.out == plain.out);
	CHECK(line_of(asked.out, "preload-mapped") != "yes");
	CHECK(log_of(asked.id).find(" not injected: " + reason) != std::string::npos);
	CHECK(before == after);
}

} // namespace

TEST_CASE("musl and static programs are left exactly as they are", "[hook][libc]")
{
	setup &s = the_setup();
	const std::string musl = build_path("tests/containers/ctr-probe-musl");
	if (file_exists(musl)) {
		tree m(s.work + "/tree-musl");
		m.file("/probe", musl);
		m.file("/lib/ld-musl-x86_64.so.1", fs::canonical("/lib/ld-musl-x86_64.so.1"));
		m.dir("/etc");
		left_alone(image_of(m, "musl", s.work), { "/probe" },
			   "no glibc loader /lib64/ld-linux-x86-64.so.2 in the image (musl, static, or another "
			   "architecture): left as it is");
	} else {
		WARN("musl-gcc is missing (apt-get install musl-tools): no musl image");
	}
	tree st(s.work + "/tree-static");
	st.file("/probe", build_path("tests/containers/ctr-probe-static"));
	st.dir("/etc");
	left_alone(image_of(st, "static", s.work), { "/probe" }, "no glibc loader /lib64/ld-linux-x86-64.so.2");
}

TEST_CASE("an image whose glibc is older than the preload needs (2.17) is left alone", "[hook][libc]")
{
	setup &s = the_setup();
	tree t(s.work + "/tree-old");
	t.file("/probe", build_path("tests/containers/ctr-probe-static"));
	t.file("/lib64/ld-linux-x86-64.so.2", fs::canonical("/lib64/ld-linux-x86-64.so.2"));
	t.file("/lib/x86_64-linux-gnu/libc.so.6", build_path("tests/containers/fake-libc-2.17.so"));
	t.dir("/etc");
	left_alone(image_of(t, "oldglibc", s.work), { "/probe" },
		   "the image's /lib/x86_64-linux-gnu/libc.so.6 (glibc 2.17) lacks GLIBC_2.32, GLIBC_2.34, which the "
		   "preload needs: left as it is");
}

TEST_CASE("hostile images start unchanged and nothing on the host changes", "[hook][hostile]")
{
	setup &s = the_setup();
	make_canary();
	const struct {
		const char *name;
		std::function<void(tree &)> make;
		const char *reason;
	} cases[] = {
		{ "preload-link", [](tree &t) { t.link("/etc/ld.so.preload", canary + "/ld.so.preload"); },
		  "/etc/ld.so.preload is a symbolic link: refused" },
		{ "preload-rel-link", [](tree &t) { t.link("/etc/ld.so.preload", "../../../.." + canary + "/ld.so.preload"); },
		  "/etc/ld.so.preload is a symbolic link: refused" },
		{ "preload-dir", [](tree &t) { t.dir("/etc/ld.so.preload"); },
		  "/etc/ld.so.preload is not a regular file: refused" },
		{ "preload-fifo", [](tree &t) { t.fifo("/etc/ld.so.preload"); },
		  "/etc/ld.so.preload is not a regular file: refused" },
		{ "preload-huge", [](tree &t) { t.text("/etc/ld.so.preload", std::string(70000, '#')); },
		  "/etc/ld.so.preload is longer than 65536 bytes: refused" },
		{ "preload-nul", [](tree &t) { t.text("/etc/ld.so.preload", std::string("/a.so\0/b.so\n", 12)); },
		  "/etc/ld.so.preload holds a NUL byte or too much: refused" },
		// Podman resolves the link inside the rootfs, where its target is a directory too.
		{ "etc-link", [](tree &t) {
			  fs::remove_all(t.root + "/etc");
			  t.link("/etc", canary + "/etc");
			  t.dir(canary + "/etc");
		  }, "/etc is a symbolic link: refused" },
		{ "run-link", [](tree &t) { t.link("/run", canary + "/run"); }, "/run is a symbolic link: refused" },
		{ "run-hugetext-link", [](tree &t) { t.link("/run/hugetext", canary + "/rh"); },
		  "/run/hugetext is a symbolic link: refused" },
		{ "run-hugetext-file", [](tree &t) { t.text("/run/hugetext", "x"); },
		  "/run/hugetext is not a directory: refused" },
		{ "loader-link-out", [](tree &t) {
			  fs::remove(t.root + "/lib64/ld-linux-x86-64.so.2");
			  t.link("/lib64/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
		  }, "no glibc loader /lib64/ld-linux-x86-64.so.2 in the image" },
		{ "libc-link-out", [](tree &t) {
			  fs::remove(t.root + "/lib/x86_64-linux-gnu/libc.so.6");
			  t.link("/lib/x86_64-linux-gnu/libc.so.6", "../../../../../../usr/lib/x86_64-linux-gnu/libc.so.6");
		  }, "no libc.so.6 (which the preload needs) in the image's library directories: left as it is" },
	};
	for (auto &c : cases) {
		SECTION(c.name)
		{
			// The static probe runs whatever the image's loader and libc became.
			tree t = probe_tree(s.work, std::string("hostile-") + c.name);
			t.file("/probe", build_path("tests/containers/ctr-probe-static"));
			c.make(t);
			left_alone(image_of(t, std::string("hostile-") + c.name, s.work), { "/probe" }, c.reason);
		}
	}
}

TEST_CASE("an annotated container's node has its code on 2 MiB pages with nothing private from its second start",
	  "[hook][node]")
{
	setup &s = the_setup();
	if (!have_program("node")) {
		WARN("node is missing (apt-get install nodejs): no node image");
		return;
	}
	std::string node = trim(run_prog({ "sh", "-c", "readlink -f \"$(command -v node)\"" }).out);
	tree t(s.work + "/tree-node");
	t.with_libs(node, "/usr/bin/node");
	t.dir("/etc");
	t.dir("/tmp");
	chmod((t.root + "/tmp").c_str(), 01777);
	std::string img = image_of(t, "node", s.work);
	// As a program installed long ago: the file the containers run in 4 KiB page-cache pages.
	std::string real = layer_file(img, "/usr/bin/node");
	REQUIRE(file_exists(real));
	small_page_cache(real);
	service svc;

	// The preload's report of each start, in a directory of the host's.
	std::string reports = s.work + "/reports";
	fs::create_directories(reports);
	const std::vector<std::string> report = { "-v", reports + ":/report", "-e", "HUGETEXT_REPORT=/report/first.json" };
	ctr first = run_ctr("annotated", img, { "/usr/bin/node", "-e", "0" }, "1", report);
	INFO("first start: " << first.err);
	REQUIRE(first.status == 0);
	CHECK(log_of(first.id).find(" injected (glibc ") != std::string::npos);
	// The first start found nothing huge and handed the file to the service.
	auto lines = read_report(reports + "/first.json");
	REQUIRE(!lines.empty());
	bool offered = false;
	for (auto &l : lines) {
		INFO(l["object"] << " " << l["status"] << " " << l["error"]);
		CHECK(l["huge_bytes"] == "0");
		offered |= l["cache"] == "offered";
	}
	CHECK(offered);
	std::string st = svc.wait_count("warmed_total", 1);
	INFO("service: " << st << "\n" << read_file(svc.log));
	REQUIRE(st.find("\"warmed_total\":") != std::string::npos);

	const std::string script = "require('fs').writeFileSync('/tmp/ready', '1'); require('fs').readFileSync(0)";
	waiting second(img, { "/usr/bin/node", "-e", script }, { "-v", reports + ":/report", "-e",
								  "HUGETEXT_REPORT=/report/second.json" });
	auto rec = wait_record();
	REQUIRE(rec);
	std::string ready = "/proc/" + std::to_string(rec->pid) + "/root/tmp/ready";
	for (int i = 0; i < 600 && !file_exists(ready); i++)
		usleep(100000);
	REQUIRE(file_exists(ready));
	code_sum c = code_of(rec->pid, "/usr/bin/node");
	INFO("second start, host's /proc/" << rec->pid << "/smaps:\n" << c.text);
	CHECK(c.code_kb > 20 * 1024);
	CHECK(c.file_pmd_kb >= 20 * 1024); // node's 26 MiB of aligned code, less what the kernel leaves small
	CHECK(c.private_kb == 0);
	CHECK(read_file("/proc/" + std::to_string(rec->pid) + "/maps").find("/run/hugetext/libhugetext-preload.so") !=
	      std::string::npos);
	ctr &done = second.finish();
	CHECK(done.status == 0);
	// The preload says the same: the page cache's 2 MiB pages kept, nothing copied,
	// and nothing left for a copy later: not even the last page, which the code's
	// mapping ends inside (the preload maps the file over it: ht_keep_tail_page).
	uint64_t kept = 0;
	INFO("service log: " << read_file(svc.log));
	for (auto &l : read_report(reports + "/second.json")) {
		INFO(l["start"] << " " << l["status"] << " " << l["error"]);
		kept += std::strtoull(l["kept_bytes"].c_str(), nullptr, 10);
		CHECK(l["private_huge_bytes"].empty());
		if (std::strtoull(l["bytes"].c_str(), nullptr, 10) >= (20u << 20)) {
			CHECK(l["kept_bytes"] == l["bytes"]);
			CHECK(l["error"] == "already on huge pages");
		}
	}
	CHECK(kept >= (20u << 20));
}

TEST_CASE("two containers of one image share the same physical pages of node's code", "[hook][node]")
{
	setup &s = the_setup();
	if (!have_program("node")) {
		WARN("node is missing (apt-get install nodejs): no node image");
		return;
	}
	std::string node = trim(run_prog({ "sh", "-c", "readlink -f \"$(command -v node)\"" }).out);
	tree t(s.work + "/tree-node");
	t.with_libs(node, "/usr/bin/node");
	t.dir("/etc");
	t.dir("/tmp");
	chmod((t.root + "/tmp").c_str(), 01777);
	std::string img = image_of(t, "node", s.work);
	service svc;
	// Warm it (the case before did, unless run alone): one start, and the service's warm.
	ctr warm = run_ctr("annotated", img, { "/usr/bin/node", "-e", "0" }, "1");
	REQUIRE(warm.status == 0);
	svc.wait_count("tries", 1, 60);

	const std::string script = "require('fs').writeFileSync('/tmp/ready', '1'); require('fs').readFileSync(0)";
	waiting a(img, { "/usr/bin/node", "-e", script });
	auto ra = wait_record();
	REQUIRE(ra);
	waiting b(img, { "/usr/bin/node", "-e", script });
	auto rb = wait_record({ ra->id });
	REQUIRE(rb);
	for (long pid : { ra->pid, rb->pid }) {
		std::string ready = "/proc/" + std::to_string(pid) + "/root/tmp/ready";
		for (int i = 0; i < 600 && !file_exists(ready); i++)
			usleep(100000);
		REQUIRE(file_exists(ready));
	}
	CHECK(ra->mntns != rb->mntns);
	// node's biggest code mapping, in both.
	auto biggest = [](long pid) {
		code_map best;
		for (auto &m : exec_maps(pid))
			if (m.path == "/usr/bin/node" && m.end - m.start > best.end - best.start)
				best = m;
		return best;
	};
	code_map ma = biggest(ra->pid), mb = biggest(rb->pid);
	REQUIRE(ma.end > ma.start);
	CHECK(ma.start == mb.start); // not PIE: the same addresses
	CHECK(ma.end == mb.end);
	std::vector<uint64_t> fa = frames(ra->pid, ma.start, ma.end), fb = frames(rb->pid, mb.start, mb.end);
	REQUIRE(!fa.empty());
	REQUIRE(fa.size() == fb.size());
	size_t same = 0, differ = 0;
	for (size_t i = 0; i < fa.size(); i++) {
		if (!fa[i] || !fb[i])
			continue;
		(fa[i] == fb[i] ? same : differ)++;
	}
	INFO("pages present in both: " << same << " on the same frames, " << differ << " on others");
	CHECK(differ == 0);
	CHECK(same * 4096 >= (20u << 20)); // the 2 MiB pages the kernel maps from the warmed page cache
	code_sum ca = code_of(ra->pid, "/usr/bin/node"), cb = code_of(rb->pid, "/usr/bin/node");
	INFO(ca.text << "\n" << cb.text);
	CHECK(ca.file_pmd_kb >= 20 * 1024);
	CHECK(cb.file_pmd_kb >= 20 * 1024);
	CHECK(ca.private_kb + cb.private_kb == 0);

	// hugetext status groups them: each container with its node, shared, nothing copied.
	prog_result st = run_prog({ build_path("tools/hugetext"), "status", "--json", "--records", records });
	REQUIRE(st.status == 0);
	json_object *o = json_tokener_parse(st.out.c_str()), *ctrs = nullptr;
	REQUIRE(o);
	REQUIRE(json_object_object_get_ex(o, "containers", &ctrs));
	size_t listed = 0;
	for (size_t i = 0; i < json_object_array_length(ctrs); i++) {
		json_object *c = json_object_array_get_idx(ctrs, i), *v;
		json_object_object_get_ex(c, "id", &v);
		std::string id = json_object_get_string(v);
		if (id != ra->id && id != rb->id)
			continue;
		listed++;
		INFO(json_object_to_json_string(c));
		json_object_object_get_ex(c, "injected", &v);
		CHECK(json_object_get_boolean(v));
		json_object_object_get_ex(c, "processes", &v);
		REQUIRE(json_object_array_length(v) == 1);
		CHECK(json_object_get_int64(json_object_array_get_idx(v, 0)) == (id == ra->id ? ra->pid : rb->pid));
		json_object_object_get_ex(c, "preload_processes", &v);
		CHECK(json_object_get_int64(v) == 1);
		json_object_object_get_ex(c, "shared_bytes", &v);
		CHECK(json_object_get_int64(v) >= (20 << 20));
		json_object_object_get_ex(c, "copied_bytes", &v);
		CHECK(json_object_get_int64(v) == 0);
	}
	json_object_put(o);
	CHECK(listed == 2);
	CHECK(a.finish().status == 0);
	CHECK(b.finish().status == 0);
}

TEST_CASE("a host directory on /etc or /run (a volume) gets nothing made in it", "[hook][hostile]")
{
	setup &s = the_setup();
	make_canary();
	tree t = probe_tree(s.work, "volume");
	std::string img = image_of(t, "volume", s.work);
	std::string etc = canary + "/etc-volume", run = canary + "/run-volume";
	fs::create_directories(etc);
	fs::create_directories(run);
	// /etc: no ld.so.preload there, and the hook makes none in the host's directory.
	ctr c = run_ctr("annotated", img, { "/probe" }, "1", { "-v", etc + ":/etc" });
	INFO(c.err << log_of(c.id));
	CHECK(c.status == 0);
	CHECK(line_of(c.out, "preload-mapped") == "no");
	CHECK(log_of(c.id).find(" not injected: /etc/ld.so.preload is missing and /etc is not the container's own layer") !=
	      std::string::npos);
	CHECK(!file_exists(etc + "/ld.so.preload"));
	// /run: no /run/hugetext made in it either.
	c = run_ctr("annotated", img, { "/probe" }, "1", { "-v", run + ":/run" });
	INFO(c.err << log_of(c.id));
	CHECK(c.status == 0);
	CHECK(line_of(c.out, "preload-mapped") == "no");
	CHECK(log_of(c.id).find(" not injected: /run/hugetext is missing and its directory is not the container's own "
				"layer") != std::string::npos);
	CHECK(!file_exists(run + "/hugetext"));
	// A host directory as the whole rootfs (podman --rootfs): no overlay of the container's own, nothing made.
	tree dir = probe_tree(s.work, "rootfs-dir");
	c = run_ctr("annotated", "--rootfs", { dir.root, "/probe" }, "1"); // podman run ... --rootfs DIR /probe
	INFO(c.err << log_of(c.id));
	CHECK(c.status == 0);
	CHECK(line_of(c.out, "preload-mapped") == "no");
	CHECK(log_of(c.id).find(" not injected: /etc/ld.so.preload is missing and /etc is not the container's own layer") !=
	      std::string::npos);
	CHECK(!file_exists(dir.root + "/etc/ld.so.preload"));
	CHECK(!file_exists(dir.root + "/run/hugetext"));
	// A file of the host bound on /etc/ld.so.preload is mounted over in the container only, and read, never written.
	std::ofstream(canary + "/bound") << "/usr/lib/none.so\n";
	std::string before = host_snapshot();
	c = run_ctr("annotated", img, { "/probe" }, "1", { "-v", canary + "/bound:/etc/ld.so.preload:ro" });
	INFO(c.out << c.err << log_of(c.id));
	CHECK(c.status == 0);
	CHECK(line_of(c.out, "etc-ld.so.preload") == "file [/usr/lib/none.so|/run/hugetext/libhugetext-preload.so|]");
	CHECK(line_of(c.out, "preload-mapped") == "yes");
	CHECK(host_snapshot() == before);
}

namespace {

// Where the hook's mounts stand in a container: what the probe says.
void injected(const ctr &c)
{
	INFO(c.out << c.err << log_of(c.id));
	CHECK(c.status == 0);
	CHECK(line_of(c.out, "preload-mapped") == "yes");
	CHECK(line_of(c.out, "write-etc-ld.so.preload") != "done");
	CHECK(line_of(c.out, "write-preload") != "done");
	CHECK(line_of(c.out, "create-run-hugetext") == "EROFS");
	CHECK(log_of(c.id).find(" injected (glibc ") != std::string::npos);
}

} // namespace

TEST_CASE("a read-only container, a user-namespaced one, and one started again are injected each time",
	  "[hook][full]")
{
	setup &s = the_setup();
	// --read-only: the rootfs is made read-only after the hook; /run is a tmpfs of the container's.
	injected(run_ctr("annotated", s.probe_image, { "/probe", "write" }, "1", { "--read-only" }));
	// A user namespace: its root is host uid 100000, which may write none of the host's files.
	ctr u = run_ctr("annotated", s.probe_image, { "/probe", "write" }, "1",
			{ "--uidmap", "0:100000:65536", "--gidmap", "0:100000:65536" });
	injected(u);
	CHECK(line_of(u.out, "write-etc-ld.so.preload") == "EACCES");
	CHECK(line_of(u.out, "umount-run-hugetext") == "EPERM");
	// podman start again: a new record, the same mounts; the mount point the first start made is reused.
	std::string name = "hth-test-again-" + std::to_string(getpid());
	prog_result r = podman({ "create", "--network", "none", "--hooks-dir", s.hooks.at("annotated"), "--annotation",
				 annotation + "=1", "--name", name, s.probe_image, "/probe", "write" });
	REQUIRE(r.status == 0);
	std::string id = trim(r.out);
	for (int round = 0; round < 2; round++) {
		// --hooks-dir is podman's own option: it counts at each start, not at create.
		prog_result st = podman({ "--hooks-dir", s.hooks.at("annotated"), "start", "-a", name });
		INFO("round " << round << ": " << st.out << st.err);
		CHECK(st.status == 0);
		CHECK(line_of(st.out, "preload-mapped") == "yes");
		CHECK(line_of(st.out, "etc-ld.so.preload") == "file [/run/hugetext/libhugetext-preload.so|]");
	}
	podman({ "rm", "-f", name });
	std::string log = log_of(id);
	size_t n = 0;
	for (size_t at = 0; (at = log.find(" injected (glibc ", at)) != std::string::npos; at++)
		n++;
	CHECK(n == 2);
	CHECK(!file_exists(records + "/" + id + ".json"));
}

// A shell script for the clang image: one compile (it offers the libraries), a wait for as many
// entries in the container's view as it offered, then a compile of the container's input, which
// waits for it.
const std::string clang_twice =
	"HUGETEXT_REPORT=/report/first.json /usr/bin/clang++ -c -x c++ /report/f.cpp -o /tmp/a.o || exit 1\n"
	"want=0\n"
	"while read -r line; do case $line in *'\"cache\":\"offered\"'*) want=$((want + 1)) ;; esac; done "
	"< /report/first.json\n"
	"i=0\n"
	"while [ $i -lt 1800 ]; do\n"
	"  n=0; for f in /run/hugetext/text/shared/*.text; do [ -e \"$f\" ] && n=$((n + 1)); done\n"
	"  [ $n -ge $want ] && break\n"
	"  sleep 0.1; i=$((i + 1))\n"
	"done\n"
	"HUGETEXT_REPORT=/report/second.json exec /usr/bin/clang++ -c -x c++ - -o /tmp/f.o\n";

TEST_CASE("clang++ in an annotated container has libLLVM's and libclang-cpp's code on 2 MiB pages with nothing "
	  "private from its second start", "[hook][full][clang]")
{
	setup &s = the_setup();
	std::string clang = trim(run_prog({ "sh", "-c", "readlink -f \"$(command -v clang++)\"" }).out);
	if (clang.empty() || !file_exists(clang)) {
		WARN("clang++ is missing (apt-get install clang): no clang image");
		return;
	}
	tree t(s.work + "/tree-clang");
	t.with_libs(clang, clang);
	t.link("/usr/bin/clang++", clang);
	t.with_libs("/bin/sh", "/bin/sh");
	t.with_libs(trim(run_prog({ "sh", "-c", "command -v sleep" }).out), "/bin/sleep");
	t.dir("/etc");
	t.dir("/tmp");
	chmod((t.root + "/tmp").c_str(), 01777);
	std::string img = image_of(t, "clang", s.work);
	std::vector<std::string> libs;
	for (auto &e : fs::recursive_directory_iterator(t.root))
		if (e.path().filename().string().find("libLLVM") == 0 || e.path().filename().string().find("libclang-cpp") == 0)
			libs.push_back(e.path().string().substr(t.root.size()));
	REQUIRE(libs.size() == 2);
	for (auto &l : libs)
		small_page_cache(layer_file(img, l));
	// The shared cache, where the service fills the libraries' entries (150 MiB of code).
	tmpfs_cache tc("512m");
	{
		service svc;
		std::string reports = s.work + "/clang-reports";
		fs::remove_all(reports);
		fs::create_directories(reports);
		std::ofstream(reports + "/f.cpp") << "int f(int x) { return x * 2; }\n";
		waiting w(img, { "/bin/sh", "-c", clang_twice }, { "-v", reports + ":/report" });
		auto rec = wait_record();
		REQUIRE(rec);
		// Ready: the second start's preload has reported both libraries (clang then reads its input).
		for (int i = 0; i < 1800; i++) {
			std::string r = read_file(reports + "/second.json");
			if (r.find("libLLVM") != std::string::npos && r.find("libclang-cpp") != std::string::npos)
				break;
			usleep(100000);
		}
		usleep(300000);
		std::string st = read_file(serve_state);
		INFO("service: " << st << "\n" << read_file(svc.log));
		INFO("first start's report:\n" << read_file(reports + "/first.json"));
		INFO("second start's report:\n" << read_file(reports + "/second.json"));
		// The container's preload is the pinned build: on a 2 MiB boundary.
		bool pinned_preload = false;
		for (auto &m : exec_maps(rec->pid))
			if (m.path == "/run/hugetext/libhugetext-preload.so" && m.offset == 0)
				pinned_preload |= m.start % (2u << 20) == 0;
		CHECK(pinned_preload);
		// The first start offered both libraries (off the 2 MiB grid or not), and nothing was huge.
		int offered = 0;
		for (auto &l : read_report(reports + "/first.json")) {
			INFO(l["object"]);
			CHECK(l["huge_bytes"] == "0");
			if (l["object"].find("libLLVM") != std::string::npos ||
			    l["object"].find("libclang-cpp") != std::string::npos)
				offered += l["cache"] == "offered";
		}
		CHECK(offered == 2);
		// The second start: each library's span maps the entry, all of it on 2 MiB pages, nothing private.
		int hits = 0;
		for (auto &l : read_report(reports + "/second.json")) {
			bool big = l["object"].find("libLLVM") != std::string::npos ||
				   l["object"].find("libclang-cpp") != std::string::npos;
			if (!big || l["bytes"] == "0")
				continue;
			INFO(l["object"] << " " << l["status"] << " " << l["cache"] << " " << l["cache_error"]);
			CHECK(l["cache"] == "hit");
			CHECK(l["status"] == "ok");
			uint64_t start = std::strtoull(l["start"].c_str(), nullptr, 10);
			uint64_t end = std::strtoull(l["end"].c_str(), nullptr, 10);
			uint64_t shmem = 0, priv = 0;
			std::string text;
			for (auto &m : exec_maps(rec->pid)) {
				if (m.start >= start && m.end <= end) {
					shmem += m.shmem_pmd_kb;
					priv += m.anon_kb;
					text += m.path + " ShmemPmdMapped " + std::to_string(m.shmem_pmd_kb) + " Anonymous " +
						std::to_string(m.anon_kb) + "\n";
				}
			}
			INFO("host's /proc/" << rec->pid << "/smaps in the span:\n" << text);
			CHECK(end - start > (20u << 20));
			CHECK(shmem * 1024 == end - start);
			CHECK(priv == 0);
			hits += l["cache"] == "hit";
		}
		CHECK(hits == 2);
		CHECK(w.finish().status == 0);

		// A new container of the image: the hook links both entries into its view before it runs
		// anything, so its first compile maps them, with no offer of its own.
		ctr n = run_ctr("annotated", img,
				{ "/bin/sh", "-c",
				  "HUGETEXT_REPORT=/report/new.json /usr/bin/clang++ -c -x c++ /report/f.cpp -o /tmp/a.o" },
				"1", { "-v", reports + ":/report" });
		INFO("new container: " << n.err << "\nhook: " << log_of(n.id));
		CHECK(n.status == 0);
		// Both libraries' entries at least (clang's own code may have one too).
		std::string hl = log_of(n.id);
		size_t at = hl.find(" cache entries linked into it)");
		REQUIRE(at != std::string::npos);
		size_t from = hl.rfind('(', at);
		REQUIRE(from != std::string::npos);
		CHECK(std::strtoul(hl.c_str() + from + 1, nullptr, 10) >= 2);
		int new_hits = 0;
		for (auto &l : read_report(reports + "/new.json"))
			if ((l["object"].find("libLLVM") != std::string::npos ||
			     l["object"].find("libclang-cpp") != std::string::npos) && l["bytes"] != "0") {
				INFO(l["object"] << " " << l["status"] << " " << l["cache"] << " " << l["cache_error"]);
				CHECK(l["cache"] == "hit");
				new_hits += l["cache"] == "hit";
			}
		CHECK(new_hits == 2);
		// Both entries were filled from the lower layer's file, never warmed (off the grid a warm cannot serve).
		CHECK(st.find("\"filled_total\":0") == std::string::npos);
	}
}

TEST_CASE("the Kubernetes DaemonSet's installer leaves a hook, with its own loader and libraries, that the "
	  "runtime runs; an update replaces it, remove takes it out", "[hook][kubernetes]")
{
	setup &s = the_setup();
	std::string k = s.work + "/k8s", prefix = k + "/opt/hugetext", hooks = k + "/hooks.d";
	fs::create_directories(k);
	std::ofstream(k + "/hugetext.conf") << "containers = all\n";
	auto install = [&](const std::string &hugetext, const std::string &mode) {
		prog_opts o;
		o.env = { "HOST=", "PREFIX=" + prefix, "HOOKS_DIR=" + hooks, "HUGETEXT=" + hugetext,
			  "PRELOAD=" + build_path("lib/libhugetext-preload.so"), "CONFIG=" + k + "/hugetext.conf" };
		std::vector<std::string> argv = { "sh", source_path("deploy/kubernetes/install.sh") };
		if (!mode.empty())
			argv.push_back(mode);
		return run_prog(argv, o);
	};
	prog_result r = install(build_path("tools/hugetext"), "");
	INFO(r.out << r.err);
	REQUIRE(r.status == 0);
	std::string json = read_file(hooks + "/50-hugetext.json");
	INFO(json);
	CHECK(json.find("\"path\": \"" + prefix + "/current/lib/ld-linux") != std::string::npos);
	std::string first = fs::read_symlink(prefix + "/current").string();
	// No annotation: the installed policy file says containers = all.
	ctr c = run_ctr(hooks, s.probe_image, { "/probe" }, "");
	INFO(c.out << c.err << log_of(c.id));
	CHECK(c.status == 0);
	CHECK(line_of(c.out, "preload-mapped") == "yes");
	CHECK(log_of(c.id).find(" injected (glibc ") != std::string::npos);

	// An update (another command): a new directory, the link renamed over, the old one gone.
	std::string other = k + "/hugetext-other";
	fs::copy_file(build_path("tools/hugetext"), other);
	std::ofstream(other, std::ios::app) << "\n"; // other bytes: another version
	chmod(other.c_str(), 0755);
	r = install(other, "");
	REQUIRE(r.status == 0);
	std::string second = fs::read_symlink(prefix + "/current").string();
	CHECK(second != first);
	CHECK(!fs::exists(prefix + "/" + first));
	c = run_ctr(hooks, s.probe_image, { "/probe" }, "");
	CHECK(line_of(c.out, "preload-mapped") == "yes");

	r = install(other, "remove");
	CHECK(r.status == 0);
	CHECK(!fs::exists(hooks + "/50-hugetext.json"));
	CHECK(!fs::exists(prefix));
}

// --- the text service's side (docs/containers.md's contract with tools/serve.c) ---

namespace {

// The node image of the cases above, and its file in the layer, in 4 KiB page-cache pages.
std::string node_image()
{
	setup &s = the_setup();
	std::string node = trim(run_prog({ "sh", "-c", "readlink -f \"$(command -v node)\"" }).out);
	tree t(s.work + "/tree-node");
	t.with_libs(node, "/usr/bin/node");
	t.dir("/etc");
	t.dir("/tmp");
	chmod((t.root + "/tmp").c_str(), 01777);
	return image_of(t, "node", s.work);
}

// The host pids of the processes of mount namespace @mntns with an argument @word.
std::vector<long> procs_of(unsigned long long mntns, const std::string &word)
{
	std::vector<long> v;
	for (auto &e : fs::directory_iterator("/proc")) {
		std::string name = e.path().filename();
		if (name.find_first_not_of("0123456789") != std::string::npos)
			continue;
		struct stat st;
		if (stat((e.path().string() + "/ns/mnt").c_str(), &st) != 0 || st.st_ino != mntns)
			continue;
		std::string cmd = read_file(e.path().string() + "/cmdline");
		if ((std::string(1, '\0') + cmd).find(std::string(1, '\0') + word + std::string(1, '\0')) != std::string::npos)
			v.push_back(std::stol(name));
	}
	return v;
}

// A node script that starts node once (it offers), waits for an entry in its container's view,
// then starts node again, which writes /tmp/ready and waits for the container's input to end.
const std::string twice =
	"const cp = require('child_process'), fs = require('fs');"
	"cp.spawnSync('/usr/bin/node', ['-e', '0']);"
	"const nap = new Int32Array(new SharedArrayBuffer(4));"
	"for (let i = 0; i < 600; i++) {"
	"  let names = []; try { names = fs.readdirSync('/run/hugetext/text/shared'); } catch (e) {}"
	"  if (names.some(n => n.endsWith('.text'))) break;"
	"  Atomics.wait(nap, 0, 0, 100);"
	"}"
	"cp.spawnSync('/usr/bin/node', ['-e', \"require('fs').writeFileSync('/tmp/ready', '1');"
	" require('fs').readFileSync(0)\", 'second'], { stdio: 'inherit' });";

// Waits (90 s at most) for the second node of `twice` in the container of @rec to say it is ready.
bool second_ready(const hte_oci_record &rec)
{
	std::string ready = "/proc/" + std::to_string(rec.pid) + "/root/tmp/ready";
	for (int i = 0; i < 900 && !file_exists(ready); i++)
		usleep(100000);
	return file_exists(ready);
}

// What the second node of `twice` in the container of @rec maps, from the host's smaps: its code
// on 2 MiB pages of the container's view, and private huge pages (a copy).
struct second_code {
	uint64_t shared_kb = 0, private_kb = 0;
	std::string text; // each code mapping and its ShmemPmdMapped, for the case's message
};

second_code second_maps(const hte_oci_record &rec)
{
	auto second = procs_of(rec.mntns, "second");
	REQUIRE(second.size() == 1);
	second_code c;
	c.text = "host's /proc/" + std::to_string(second[0]) + "/smaps:\n";
	for (auto &m : exec_maps(second[0])) {
		if (m.path.rfind("/run/hugetext/text/shared/", 0) == 0)
			c.shared_kb += m.shmem_pmd_kb;
		if (m.path.empty())
			c.private_kb += m.anon_huge_kb;
		c.text += m.path + " ShmemPmdMapped " + std::to_string(m.shmem_pmd_kb) + "\n";
	}
	return c;
}

} // namespace

// (Catch2 indents a wrapped name to its first ": ", which must come within the console's width.)
TEST_CASE("views: the service fills root's entry from the lower layer, links it into the container's view, "
	  "and the container's next start maps it, nothing private", "[full][service]")
{
	if (!have_program("node")) {
		WARN("node is missing: no node image");
		return;
	}
	std::string img = node_image();
	// A case before this one may have warmed node's file: then it is on 2 MiB pages with no offer at all.
	small_page_cache(layer_file(img, "/usr/bin/node"));
	tmpfs_cache tc("256m");
	{
		service svc({ "--no-warm" }); // the cache's path, as on a file system without 2 MiB folios
		waiting w(img, { "/usr/bin/node", "-e", twice });
		auto rec = wait_record();
		REQUIRE(rec);
		REQUIRE(rec->has_view);
		bool ready = second_ready(*rec);
		std::string st = read_file(serve_state);
		INFO("service: " << st << "\n" << read_file(svc.log));
		REQUIRE(ready);
		CHECK(st.find("\"linked_total\":0") == std::string::npos);
		// The view holds a hard link to root's entry (the same inode), named as the container names it.
		size_t links = 0;
		for (auto &e : fs::directory_iterator(rec->view)) {
			struct stat st1;
			REQUIRE(lstat(e.path().c_str(), &st1) == 0);
			CHECK(S_ISREG(st1.st_mode));
			CHECK(st1.st_uid == 0);
			CHECK(st1.st_nlink >= 2);
			links++;
		}
		CHECK(links >= 1);
		second_code sc = second_maps(*rec);
		INFO("the second node, " << sc.text);
		CHECK(sc.shared_kb >= 20 * 1024);
		CHECK(sc.private_kb == 0);
		// Its offers came on a socket of its own (tools/serve-socks.c): counted as the container's.
		std::string own = run_dir + "/sockets/" + rec->id + "/service.sock";
		struct stat sst;
		CHECK((lstat(own.c_str(), &sst) == 0 && S_ISSOCK(sst.st_mode)));
		CHECK(log_of(rec->id).find("a socket of its own to the service,") != std::string::npos);
		CHECK(st.find("\"client\":\"container " + std::string(rec->id) + "\",\"kind\":\"container\"") !=
		      std::string::npos);
		CHECK(w.finish().status == 0);
		// Its poststop took the socket's directory away, and the service its listener.
		CHECK_FALSE(file_exists(run_dir + "/sockets/" + rec->id));
		std::string now_st;
		for (int i = 0; i < 50 && (now_st = read_file(serve_state)).find("\"container_sockets\":0,") == std::string::npos; i++)
			usleep(100000);
		CHECK(now_st.find("\"container_sockets\":0,") != std::string::npos);
	}
}

// A container in a user namespace (--uidmap): Podman 4.3 with runc 1.1 (no idmapped mounts) runs it
// on a copy of the image's layers chowned to the uids it maps to (storage's "mapped/0/"), so its
// root's files are the host's uid 100000's, and the service takes none of them.
TEST_CASE("a user-namespaced container's files are its mapped root's: refused, nothing filled or linked, it "
	  "runs as it was", "[full][service][userns]")
{
	if (!have_program("node")) {
		WARN("node is missing: no node image");
		return;
	}
	std::string img = node_image();
	tmpfs_cache tc("256m");
	service svc({ "--no-warm" });
	const std::string node_twice = "const cp = require('child_process');"
				       "for (let i = 0; i < 2; i++) cp.spawnSync('/usr/bin/node', ['-e', '0']);"
				       "console.log(require('fs').readFileSync('/tmp/report.json', 'utf8'));"
				       "console.log('mountinfo ' + require('fs').readFileSync('/proc/self/mountinfo', 'utf8'));";
	ctr c = run_ctr("annotated", img, { "/usr/bin/node", "-e", node_twice }, "1",
			{ "--uidmap", "0:100000:65536", "--gidmap", "0:100000:65536", "-e",
			  "HUGETEXT_REPORT=/tmp/report.json" });
	std::string st = svc.wait_count("refused_total", 1, 30);
	INFO("container: " << c.out << c.err << "\nhook: " << log_of(c.id) << "\nservice: " << st);
	REQUIRE(c.status == 0);
	CHECK(log_of(c.id).find(" injected (glibc ") != std::string::npos);
	// Its layers: the chowned copy, as the kernel shows the rootfs.
	CHECK(c.out.find("/mapped/0/") != std::string::npos);
	// The service judged the sender and the file as the host sees them: uid 100000's, refused.
	CHECK(st.find("the file does not belong to root (uid 100000") != std::string::npos);
	CHECK(st.find("\"filled_total\":0,") != std::string::npos);
	CHECK(st.find("\"linked_total\":0,") != std::string::npos);
	CHECK(st.find("\"cache_used\":0,") != std::string::npos);
	// Its programs were moved as on any machine without the service (a private copy, or not yet),
	// never from the cache.
	CHECK(c.out.find("\"object\":\"/usr/bin/node\"") != std::string::npos);
	CHECK(c.out.find("\"cache\":\"hit\"") == std::string::npos);
}

// node's image with @n layers more on top (podman build, kept between runs): past about 60 layers
// Podman gives overlayfs the layers as relative paths.
std::string layered_image(const std::string &base, int n)
{
	setup &s = the_setup();
	std::string tag = "hth-test-layers" + std::to_string(n) + ":" + base.substr(base.rfind(':') + 1);
	if (podman({ "image", "exists", tag }).status == 0)
		return tag;
	std::string dir = s.work + "/layers" + std::to_string(n);
	fs::create_directories(dir);
	std::ofstream cf(dir + "/Containerfile");
	cf << "FROM " << base << "\n";
	for (int i = 0; i < n; i++) {
		std::ofstream(dir + "/f" + std::to_string(i)) << i << "\n";
		cf << "COPY f" << i << " /layers/f" << i << "\n";
	}
	cf.close();
	prog_result r = podman({ "build", "--pull=never", "-q", "-t", tag, dir }, 600);
	INFO(r.err);
	REQUIRE(r.status == 0);
	return tag;
}

TEST_CASE("an image of 80 layers (overlayfs given relative paths): filled, mapped from the view, and linked "
	  "into a new container's view before it runs", "[full][service][layers]")
{
	if (!have_program("node")) {
		WARN("node is missing: no node image");
		return;
	}
	std::string base = node_image(), img = layered_image(base, 80);
	small_page_cache(layer_file(base, "/usr/bin/node"));
	tmpfs_cache tc("256m");
	{
		service svc({ "--no-warm" });
		waiting w(img, { "/usr/bin/node", "-e", twice });
		auto rec = wait_record();
		REQUIRE(rec);
		REQUIRE(rec->has_view);
		// Its rootfs's layers as the kernel shows them: relative to Podman's storage directory.
		std::string mi = read_file("/proc/" + std::to_string(rec->pid) + "/mountinfo");
		INFO(mi.substr(0, 400));
		REQUIRE(mi.find(" - overlay overlay rw,lowerdir=l/") != std::string::npos);
		bool ready = second_ready(*rec);
		std::string st = read_file(serve_state);
		INFO("service: " << st << "\n" << read_file(svc.log));
		REQUIRE(ready);
		CHECK(st.find("\"filled_total\":0") == std::string::npos);
		CHECK(st.find("\"linked_total\":0") == std::string::npos);
		second_code sc = second_maps(*rec);
		INFO("the second node, " << sc.text);
		CHECK(sc.shared_kb >= 20 * 1024);
		CHECK(sc.private_kb == 0);
		CHECK(w.finish().status == 0);
		// A new container of the image: node's entry linked into its view by the hook, before it runs.
		ctr n = run_ctr("annotated", img, { "/usr/bin/node", "-e", "0" }, "1");
		std::string hl = log_of(n.id);
		INFO("new container: " << n.err << "\nhook: " << hl);
		CHECK(n.status == 0);
		size_t at = hl.find(" cache entries linked into it)");
		if (at == std::string::npos)
			at = hl.find(" cache entry linked into it)");
		REQUIRE(at != std::string::npos);
		size_t from = hl.rfind('(', at);
		REQUIRE(from != std::string::npos);
		CHECK(std::strtoul(hl.c_str() + from + 1, nullptr, 10) >= 1);
	}
}

TEST_CASE("a container root that rewrites a library gets it served to nobody: refused, no entry, no link",
	  "[full][service]")
{
	if (!have_program("node")) {
		WARN("node is missing: no node image");
		return;
	}
	// node, and a second copy of it that the container's root rewrites (the first runs: ETXTBSY).
	setup &s = the_setup();
	std::string node = trim(run_prog({ "sh", "-c", "readlink -f \"$(command -v node)\"" }).out);
	tree t(s.work + "/tree-node-rw");
	t.with_libs(node, "/usr/bin/node");
	t.file("/usr/local/bin/big", node);
	t.dir("/etc");
	t.dir("/tmp");
	chmod((t.root + "/tmp").c_str(), 01777);
	std::string img = image_of(t, "node-rw", s.work);
	tmpfs_cache tc("256m");
	{
		service svc({ "--no-warm" });
		// Copy-up: the container's root appends to /usr/local/bin/big (it still runs), then runs it.
		const std::string rewrite =
			"const fs = require('fs'), cp = require('child_process');"
			"fs.appendFileSync('/usr/local/bin/big', Buffer.alloc(4096));"
			"console.log(cp.spawnSync('/usr/local/bin/big', ['-e', 'console.log(6 * 7)']).stdout.toString().trim());";
		ctr a = run_ctr("annotated", img, { "/usr/bin/node", "-e", rewrite }, "1");
		INFO(a.out << a.err);
		CHECK(a.status == 0);
		CHECK(trim(a.out) == "42");
		std::string st = svc.wait_count("refused_total", 1, 60);
		INFO("service: " << st << "\n" << read_file(svc.log));
		CHECK(st.find("upper (writable) layer") != std::string::npos);
		CHECK(st.find("\"filled_total\":0") != std::string::npos);
		CHECK(st.find("\"linked_total\":0") != std::string::npos);
		// Another container of the image runs its own, the lower layer's, file: nothing of A's reaches it.
		ctr b = run_ctr("annotated", img, { "/usr/local/bin/big", "-e", "console.log(6 * 7)" }, "1");
		CHECK(b.status == 0);
		CHECK(trim(b.out) == "42");
	}
}

TEST_CASE("the service killed mid-offer, stopped, or with a full cache: the containers' programs run as they "
	  "would without it", "[full][service]")
{
	if (!have_program("node")) {
		WARN("node is missing: no node image");
		return;
	}
	std::string img = node_image();
	std::string real = layer_file(img, "/usr/bin/node");
	const std::vector<std::string> hello = { "/usr/bin/node", "-e", "console.log(6 * 7)" };
	SECTION("killed while it holds a container's offer")
	{
		small_page_cache(real);
		service svc;
		const std::string script = "require('fs').writeFileSync('/tmp/ready', '1'); require('fs').readFileSync(0)";
		waiting w(img, { "/usr/bin/node", "-e", script });
		auto rec = wait_record();
		REQUIRE(rec);
		std::string ready = "/proc/" + std::to_string(rec->pid) + "/root/tmp/ready";
		for (int i = 0; i < 600 && !file_exists(ready); i++)
			usleep(100000);
		REQUIRE(svc.wait_count("offers", 1, 30).find("\"offers\":") != std::string::npos);
		svc.stop(SIGKILL); // it waits for the sender to end before it warms: the offer is pending
		CHECK(w.finish().status == 0);
		// With no service at all (its socket gone with it): the same program, the same output.
		ctr none = run_ctr("annotated", img, hello, "1");
		CHECK(none.status == 0);
		CHECK(trim(none.out) == "42");
		// A new service serves the next container.
		service again;
		ctr next = run_ctr("annotated", img, { "/usr/bin/node", "-e", "0" }, "1");
		CHECK(next.status == 0);
		std::string st = again.wait_count("warmed_total", 1, 90);
		INFO(st);
		CHECK(st.find("\"warmed_total\":0") == std::string::npos);
	}
	SECTION("stopped (SIGSTOP): a program's offer does not wait for it")
	{
		service svc;
		kill(svc.pid, SIGSTOP);
		auto t0 = std::chrono::steady_clock::now();
		ctr c = run_ctr("annotated", img, hello, "1");
		double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		kill(svc.pid, SIGCONT);
		CHECK(c.status == 0);
		CHECK(trim(c.out) == "42");
		CHECK(secs < 30); // a container start takes under a second here; the offer never blocks
	}
	SECTION("a cache too small for the entry: refused, and the container runs as it was")
	{
		tmpfs_cache tc("8m");
		small_page_cache(real);
		{
			service svc({ "--no-warm" });
			ctr c = run_ctr("annotated", img, hello, "1");
			CHECK(c.status == 0);
			CHECK(trim(c.out) == "42");
			std::string st = svc.wait_count("refused_total", 1, 60);
			INFO(st);
			CHECK(st.find("\"filled_total\":0") != std::string::npos);
			CHECK(st.find("\"refused_total\":0") == std::string::npos);
		}
	}
}
