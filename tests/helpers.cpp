#include "helpers.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static std::vector<std::string> make_env(const std::vector<std::string> &extra)
{
	std::vector<std::string> env;

	for (char **e = environ; *e; e++)
		env.emplace_back(*e);
	for (const auto &x : extra) {
		auto eq = x.find('=');
		std::string name = x.substr(0, eq);

		for (auto it = env.begin(); it != env.end();)
			it = it->compare(0, name.size() + 1, name + "=") == 0 ? env.erase(it) : it + 1;
		if (eq != std::string::npos)
			env.push_back(x);
	}
	// In a sanitizer build the runtime must come first in LD_PRELOAD.
	const char *san = std::getenv("HT_SANITIZER_PRELOAD");
	if (san && *san)
		for (auto &e : env)
			if (e.compare(0, 11, "LD_PRELOAD=") == 0 && e.find(san) == std::string::npos)
				e = "LD_PRELOAD=" + std::string(san) + " " + e.substr(11);
	return env;
}

static void drain(int out_fd, int err_fd, run_result &r)
{
	struct pollfd p[2] = { { out_fd, POLLIN, 0 }, { err_fd, POLLIN, 0 } };
	char buf[65536];
	int open_fds = 2;

	while (open_fds > 0) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
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
}

run_result run_cmd(const std::vector<std::string> &argv, const std::vector<std::string> &extra)
{
	run_result r;
	std::vector<std::string> env = make_env(extra);
	std::vector<char *> av, ev;
	int out[2], err[2];
	posix_spawn_file_actions_t fa;
	pid_t pid;

	for (auto &a : argv)
		av.push_back(const_cast<char *>(a.c_str()));
	av.push_back(nullptr);
	for (auto &e : env)
		ev.push_back(const_cast<char *>(e.c_str()));
	ev.push_back(nullptr);
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return r;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	int rc = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), ev.data());
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	close(err[1]);
	if (rc != 0) {
		close(out[0]);
		close(err[0]);
		r.err = std::string("spawn failed: ") + std::strerror(rc);
		return r;
	}
	drain(out[0], err[0], r);
	int st = 0;
	waitpid(pid, &st, 0);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
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

std::string temp_path(const std::string &name)
{
	const char *dir = std::getenv("TMPDIR");
	std::string p = std::string(dir ? dir : "/tmp") + "/hugetext-test-" +
			std::to_string(getpid()) + "-" + name;
	unlink(p.c_str());
	if (temp_paths().empty())
		std::atexit(remove_temp_paths);
	temp_paths().push_back(p);
	return p;
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

bool thp_enabled()
{
	std::string s = read_file("/sys/kernel/mm/transparent_hugepage/enabled");
	return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
}

bool have_program(const std::string &name)
{
	return run_cmd({ "sh", "-c", "command -v " + name + " >/dev/null" }).status == 0;
}
