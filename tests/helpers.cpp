#include "helpers.hpp"

#include <dirent.h>
#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_s()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// The environment of this process with @extra applied: "NAME=value"
// replaces NAME, "NAME" alone removes it.
static std::vector<std::string> make_env(const std::vector<std::string> &extra)
{
	std::vector<std::string> env;

	for (char **e = environ; *e; e++)
		env.emplace_back(*e);
	for (const auto &x : extra) {
		auto eq = x.find('=');
		std::string name = x.substr(0, eq) + "=";

		for (auto it = env.begin(); it != env.end();)
			it = it->compare(0, name.size(), name) == 0 ? env.erase(it) : it + 1;
		if (eq != std::string::npos)
			env.push_back(x);
	}
	return env;
}

// In the child: standard streams, directory, then the program.
[[noreturn]] static void exec_child(const prog_opts &o, char *const av[], char *const ev[],
				    int out_fd, int err_fd)
{
	// Own process group, so a time-out kills whatever it started too; and
	// no program outlives a test killed by meson's time limit.
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int in = open(o.stdin_path.c_str(), O_RDONLY);
	if (in >= 0 && in != 0) {
		dup2(in, 0);
		close(in);
	}
	dup2(out_fd, 1);
	dup2(err_fd, 2);
	if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0)
		_exit(126);
	execvpe(av[0], av, ev);
	_exit(127);
}

// Reads both pipes until they close or the deadline passes; true when the
// deadline passed first.
static bool collect(int out_fd, int err_fd, double timeout_s, prog_result &r)
{
	struct pollfd p[2] = { { out_fd, POLLIN, 0 }, { err_fd, POLLIN, 0 } };
	double deadline = now_s() + timeout_s;
	int open_fds = 2;
	char buf[65536];
	bool late = false;

	while (open_fds > 0) {
		int left_ms = (int)std::min((deadline - now_s()) * 1000, 1e9);
		if (left_ms <= 0) {
			late = true;
			break;
		}
		if (poll(p, 2, left_ms) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(p[i].fd, buf, sizeof(buf));
			if (n <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				open_fds--;
				continue;
			}
			(i ? r.err : r.out).append(buf, (size_t)n);
		}
	}
	for (auto &x : p)
		if (x.fd >= 0)
			close(x.fd);
	return late;
}

prog_result run_prog(const std::vector<std::string> &argv, const prog_opts &o)
{
	prog_result r;
	std::vector<std::string> env = make_env(o.env);
	std::vector<char *> av, ev;
	int out[2], err[2];

	for (auto &a : argv)
		av.push_back(const_cast<char *>(a.c_str()));
	av.push_back(nullptr);
	for (auto &e : env)
		ev.push_back(const_cast<char *>(e.c_str()));
	ev.push_back(nullptr);
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		r.err = "pipe failed";
		return r;
	}
	pid_t pid = fork();
	if (pid == 0)
		exec_child(o, av.data(), ev.data(), out[1], err[1]);
	close(out[1]);
	close(err[1]);
	if (pid < 0) {
		close(out[0]);
		close(err[0]);
		r.err = "fork failed";
		return r;
	}
	int st = 0;
	if (collect(out[0], err[0], o.timeout_s, r)) {
		r.timed_out = true;
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		r.status = 128 + SIGKILL;
		return r;
	}
	// The pipes closed; the program may still be exiting.
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return r;
}

// @extra, plus the sanitizer runtime put first in the LD_PRELOAD the
// program will see (an ASan-built preload refuses to start otherwise).
static std::vector<std::string> sanitizer_first(const std::vector<std::string> &extra)
{
	const char *san = std::getenv("HT_SANITIZER_PRELOAD");
	const char *inherited = std::getenv("LD_PRELOAD");
	std::vector<std::string> env = extra;
	bool set = inherited != nullptr;
	std::string value = inherited ? inherited : "";

	if (!san || !*san)
		return env;
	for (const auto &x : extra) {
		if (x == "LD_PRELOAD") {
			set = false;
		} else if (x.compare(0, 11, "LD_PRELOAD=") == 0) {
			set = true;
			value = x.substr(11);
		}
	}
	if (set && value.find(san) == std::string::npos)
		env.push_back("LD_PRELOAD=" + std::string(san) + " " + value);
	return env;
}

run_result run_cmd(const std::vector<std::string> &argv, const std::vector<std::string> &extra)
{
	prog_opts o;
	o.env = sanitizer_first(extra);
	// Longer than any test's own limit: meson's timeout decides.
	o.timeout_s = 3600;
	prog_result p = run_prog(argv, o);
	run_result r;
	r.status = p.status;
	r.out = std::move(p.out);
	r.err = std::move(p.err);
	return r;
}

std::string build_path(const std::string &rel)
{
	const char *root = std::getenv("HT_BUILD_ROOT");
	return std::string(root ? root : ".") + "/" + rel;
}

std::string source_path(const std::string &rel)
{
	const char *root = std::getenv("HT_SOURCE_ROOT");
	return std::string(root ? root : "..") + "/" + rel;
}

std::string read_file(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

std::vector<std::string> fenced_blocks(const std::string &text, const std::string &lang)
{
	const std::string open = "```" + lang + "\n";
	std::vector<std::string> blocks;

	for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
		size_t from = at + open.size(), end = text.find("\n```", from);
		if (end == std::string::npos)
			break;
		blocks.push_back(text.substr(from, end + 1 - from));
		at = end + 4;
	}
	return blocks;
}

bool file_exists(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0;
}

// Every temporary path handed out, removed when the test program exits.
static std::vector<std::string> &temp_paths()
{
	static std::vector<std::string> paths;
	return paths;
}

static void remove_temp_paths()
{
	for (auto &p : temp_paths())
		remove(p.c_str()); // a file, or a directory the test emptied
}

std::string temp_path(const std::string &name, const std::string &in)
{
	const char *dir = std::getenv("TMPDIR");
	std::string p = (in.empty() ? std::string(dir ? dir : "/tmp") : in) + "/hugetext-test-" +
			std::to_string(getpid()) + "-" + name;
	unlink(p.c_str());
	if (temp_paths().empty())
		std::atexit(remove_temp_paths);
	temp_paths().push_back(p);
	return p;
}

std::string node_code_object()
{
	if (!have_program("node"))
		return "";
	prog_result r = run_prog({ "sh", "-c", "ldd \"$(command -v node)\"" });
	return r.out.find("libnode.so") != std::string::npos ? "libnode" : "node";
}

std::vector<std::string> node_match_vars()
{
	if (node_code_object() == "libnode")
		return { "HUGETEXT_MATCH=/libnode\\.so" };
	return {};
}

world_dir::world_dir(const std::string &base)
{
	std::string tmpl = base + "/hugetext-world-XXXXXX";
	if (mkdtemp(&tmpl[0]) && chmod(tmpl.c_str(), 0755) == 0)
		path = tmpl;
}

world_dir::~world_dir()
{
	if (path.empty())
		return;
	if (DIR *d = opendir(path.c_str())) {
		while (struct dirent *e = readdir(d))
			if (e->d_name[0] != '.')
				unlink((path + "/" + e->d_name).c_str());
		closedir(d);
	}
	rmdir(path.c_str());
}

std::string world_dir::put(const std::string &from)
{
	std::string to = path + "/" + from.substr(from.rfind('/') + 1);
	std::ifstream in(from, std::ios::binary);
	std::ofstream out(to, std::ios::binary | std::ios::trunc);
	if (path.empty() || !in || !out)
		return "";
	out << in.rdbuf();
	out.close();
	if (!out || chmod(to.c_str(), 0755) != 0)
		return "";
	return to;
}

// A flat JSON object: "key":value pairs, string values without escapes
// that matter to the tests (paths are plain here).
static report_line parse_line(const std::string &s)
{
	report_line m;
	size_t i = 0;

	while ((i = s.find('"', i)) != std::string::npos) {
		size_t k = s.find('"', i + 1);
		if (k == std::string::npos || k + 1 >= s.size() || s[k + 1] != ':')
			break;
		std::string key = s.substr(i + 1, k - i - 1);
		size_t v = k + 2, e;
		if (v < s.size() && s[v] == '"') {
			e = v + 1;
			while (e < s.size() && s[e] != '"')
				e += s[e] == '\\' ? 2 : 1;
			if (e > s.size())
				e = s.size();
			m[key] = s.substr(v + 1, e - v - 1);
			i = e + 1;
		} else {
			e = s.find_first_of(",}", v);
			m[key] = s.substr(v, e - v);
			i = e;
		}
	}
	return m;
}

std::vector<report_line> read_report(const std::string &path)
{
	std::vector<report_line> out;
	std::istringstream in(read_file(path));
	std::string line;

	while (std::getline(in, line))
		if (!line.empty())
			out.push_back(parse_line(line));
	return out;
}

std::vector<report_line> ok_lines(const std::vector<report_line> &lines)
{
	std::vector<report_line> out;
	for (auto &l : lines)
		if (l.count("status") && l.at("status") == "ok")
			out.push_back(l);
	return out;
}

// Only at the start of a line: a key inside another line's text does not count.
std::string line_value(const std::string &out, const std::string &key)
{
	size_t at = 0;

	while ((at = out.find(key + " ", at)) != std::string::npos) {
		if (at == 0 || out[at - 1] == '\n') {
			size_t end = out.find('\n', at);
			return out.substr(at + key.size() + 1,
					  end == std::string::npos ? std::string::npos : end - at - key.size() - 1);
		}
		at++;
	}
	return "";
}

void small_page_cache(const std::string &path)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	char buf[4096];

	if (fd < 0)
		return;
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	// No readahead: each read brings one 4 KiB page.
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

uint64_t huge_bytes_in(uintptr_t lo, uintptr_t hi)
{
	std::istringstream in(read_file("/proc/self/smaps"));
	std::string line;
	unsigned long a, b;
	bool inside = false;
	uint64_t total = 0;
	unsigned long kb;

	while (std::getline(in, line)) {
		if (std::sscanf(line.c_str(), "%lx-%lx", &a, &b) == 2 && line.find(" kB") == std::string::npos)
			inside = a < hi && b > lo;
		else if (inside && (std::sscanf(line.c_str(), "AnonHugePages: %lu kB", &kb) == 1 ||
				    std::sscanf(line.c_str(), "Private_Hugetlb: %lu kB", &kb) == 1 ||
				    std::sscanf(line.c_str(), "Shared_Hugetlb: %lu kB", &kb) == 1))
			total += (uint64_t)kb * 1024;
	}
	return total;
}

std::string read_setting(const std::string &path)
{
	std::string s = read_file(path);
	auto a = s.find('['), b = s.find(']');

	if (a != std::string::npos && b != std::string::npos && b > a)
		return s.substr(a + 1, b - a - 1);
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

bool thp_enabled()
{
	std::string s = read_file("/sys/kernel/mm/transparent_hugepage/enabled");
	return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
}

bool have_program(const std::string &name)
{
	return run_cmd({ "sh", "-c", "command -v " + name + " >/dev/null" }).status == 0;
}

std::vector<std::string> without_leak_check()
{
	const char *asan = getenv("ASAN_OPTIONS");
	if (!asan)
		return {};
	return { std::string("ASAN_OPTIONS=") + asan + ":detect_leaks=0" };
}

std::string cache_entry(const std::string &dir)
{
	std::string found;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return found;
	while (struct dirent *e = readdir(d)) {
		std::string n = e->d_name;
		if (n.size() > 5 && n.compare(n.size() - 5, 5, ".text") == 0)
			found = dir + "/" + n;
	}
	closedir(d);
	return found;
}

char *map_code_file(const std::string &path, const std::vector<char> &bytes)
{
	const uintptr_t m2 = 2UL << 20;
	size_t room = (bytes.size() + m2 - 1) / m2 * m2 + m2;
	int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return nullptr;
	bool wrote = write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size();
	void *r = wrote ? mmap(nullptr, room, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
	if (r == MAP_FAILED) {
		close(fd);
		return nullptr;
	}
	uintptr_t a = ((uintptr_t)r + m2 - 1) & ~(m2 - 1);
	void *m = mmap((void *)a, bytes.size(), PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0);
	close(fd);
	// Free from the code's end (and before its start).
	char *at = (char *)a;
	munmap(at + bytes.size(), (uintptr_t)r + room - (uintptr_t)(at + bytes.size()));
	if (a > (uintptr_t)r)
		munmap(r, a - (uintptr_t)r);
	if (m == MAP_FAILED) {
		munmap(at, bytes.size());
		return nullptr;
	}
	return at;
}

bool private_run_dir(const std::string &text_dir)
{
	static int ok = -1;
	if (ok < 0)
		ok = unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
		     mount("test-run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") == 0 &&
		     mkdir("/run/hugetext", 0755) == 0 && mkdir(text_dir.c_str(), 0755) == 0;
	return ok;
}

std::vector<exec_segment> exec_segments_of(const std::string &path)
{
	std::vector<exec_segment> out;
	std::ifstream f(path, std::ios::binary);
	Elf64_Ehdr eh;

	if (!f.read((char *)&eh, sizeof(eh)) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		return out;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (!f.seekg((std::streamoff)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) ||
		    !f.read((char *)&ph, sizeof(ph)))
			break;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			out.push_back({ ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz });
	}
	return out;
}

code_span code_span_of(const std::string &path)
{
	std::vector<exec_segment> segs = exec_segments_of(path);
	const unsigned long long huge = 2 << 20;
	code_span c;

	if (segs.empty())
		return c;
	const exec_segment &s = segs[0];
	unsigned long long lo = (s.vaddr + huge - 1) / huge * huge, hi = (s.vaddr + s.filesz) / huge * huge;
	c.off = lo - s.vaddr + s.offset;
	c.len = hi > lo ? hi - lo : 0;
	return c;
}

bool kernel_has_pagemap_scan()
{
	// Linux 6.7's struct pm_scan_arg: 12 words; a zero size is refused with
	// EINVAL by a kernel that has the call, ENOTTY by one that has not.
	uint64_t arg[12] = { 0 };
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	int r = ioctl(fd, _IOWR('f', 16, uint64_t[12]), arg);
	int err = errno;
	close(fd);
	return r == 0 || err != ENOTTY;
}
