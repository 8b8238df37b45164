// What the text service's tests share (tests/test-service.cpp,
// tests/test-service-containers.cpp): the service started as its unit
// starts it, the cache's tmpfs, a fixture's copy, a raw client.
#ifndef HT_SERVICE_TEST_HPP
#define HT_SERVICE_TEST_HPP

#include <catch2/catch.hpp>

#include <cstring>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"
#include "hugetext.h"

extern "C" {
#include "service.h"
#include "serve.h"
}

extern char **environ;

namespace {

const std::string text_dir = HT_TEXT_CACHE_DIR;
const std::string shared_dir = text_dir + "/" HT_SERVICE_SHARED;
const std::string sock = HT_SERVICE_SOCKET;

[[maybe_unused]] std::string preload() { return build_path("lib/libhugetext-preload.so"); }
std::string tool() { return build_path("tools/hugetext"); }

// A copy of the non-PIE fixture (38 MiB of code at a 2 MiB-aligned address),
// root's and mode 0755, in the build dir: a file of our own, whose page
// cache no other test drops or warms meanwhile.
std::string program_copy(const std::string &name)
{
	std::string path = temp_path(name, build_path("tests"));
	std::string bytes = read_file(build_path("tests/bigtext-nopie"));
	unlink(path.c_str());
	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0755);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size());
	REQUIRE(fchmod(fd, 0755) == 0);
	close(fd);
	small_page_cache(path);
	return path;
}

// The cache's tmpfs for one test case (the service mounts one when none is there).
struct text_cache {
	bool ok;
	explicit text_cache(const std::string &size = "256m")
	{
		std::string opts = "size=" + size + ",mode=1777,huge=within_size";
		ok = mount("test-text", text_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) == 0;
	}
	~text_cache()
	{
		while (umount2(text_dir.c_str(), MNT_DETACH) == 0) {
		}
	}
};

// `hugetext serve`, started as its unit starts it; stopped at the end.
struct service {
	pid_t pid = -1;
	std::string state = temp_path("service-state.json");
	std::string log = temp_path("service-log.txt");
	// @listen_fd >= 0: started as socket activation starts it, the socket
	// as descriptor 3 with LISTEN_PID and LISTEN_FDS.
	explicit service(const std::vector<std::string> &more = {}, int listen_fd = -1)
	{
		std::vector<std::string> args = { tool(), "serve", "--state", state, "--config", temp_path("service-none.conf") };
		args.insert(args.end(), more.begin(), more.end());
		std::vector<char *> argv;
		for (auto &a : args)
			argv.push_back(const_cast<char *>(a.c_str()));
		argv.push_back(nullptr);
		unlink(state.c_str());
		if (listen_fd >= 0) {
			pid = fork();
			if (pid == 0) {
				int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
				if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
				    (listen_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(listen_fd, 3)) < 0)
					_exit(127);
				setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
				setenv("LISTEN_FDS", "1", 1);
				execv(argv[0], argv.data());
				_exit(127);
			}
		} else {
			posix_spawn_file_actions_t fa;
			posix_spawn_file_actions_init(&fa);
			posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
			posix_spawn_file_actions_adddup2(&fa, 1, 2);
			if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0)
				pid = -1;
			posix_spawn_file_actions_destroy(&fa);
		}
		for (int i = 0; i < 500 && pid > 0 && !file_exists(state); i++)
			usleep(10000);
	}
	bool alive() const { return pid > 0 && kill(pid, 0) == 0; }
	std::string text() const { return read_file(state); }
	// A number of the state file ("filled_total" ...), -1 when absent.
	long num(const std::string &key) const
	{
		std::string s = text(), k = "\"" + key + "\":";
		size_t at = s.find(k);
		return at == std::string::npos ? -1 : std::stol(s.substr(at + k.size()));
	}
	// Waits (up to @seconds) until num(@key) reaches @want.
	bool wait_for(const std::string &key, long want, double seconds = 20) const
	{
		for (int i = 0; i < seconds * 20; i++) {
			if (num(key) >= want)
				return true;
			usleep(50000);
		}
		// What the state says now, with the assertion that fails.
		UNSCOPED_INFO("state file when " << key << " did not reach " << want << ": " << text());
		return false;
	}
	// Waits (up to @seconds) until num(@key) is below @limit.
	bool wait_for_below(const std::string &key, long limit, double seconds = 20) const
	{
		for (int i = 0; i < seconds * 20; i++) {
			long n = num(key);
			if (n >= 0 && n < limit)
				return true;
			usleep(50000);
		}
		UNSCOPED_INFO("state file when " << key << " did not fall below " << limit << ": " << text());
		return false;
	}
	~service()
	{
		if (pid > 0) {
			kill(pid, SIGTERM);
			waitpid(pid, nullptr, 0);
		}
		unlink(sock.c_str());
	}
};

// Sends @len bytes and the descriptors @fds to the service, as a client would.
int send_raw(const void *buf, size_t len, const std::vector<int> &fds)
{
	struct sockaddr_un a = {};
	a.sun_family = AF_UNIX;
	std::strcpy(a.sun_path, sock.c_str());
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (s >= 0)
			close(s);
		return -1;
	}
	char ctl[CMSG_SPACE(8 * sizeof(int))] = {};
	struct iovec iov = { const_cast<void *>(buf), len };
	struct msghdr m = {};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (!fds.empty()) {
		m.msg_control = ctl;
		m.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
		std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
	}
	ssize_t n = sendmsg(s, &m, MSG_NOSIGNAL);
	close(s);
	return n == (ssize_t)len ? 0 : -1;
}

ht_offer offer_of(uint64_t off, uint64_t len, uint64_t mapped)
{
	ht_offer m = {};
	std::memcpy(m.magic, HT_OFFER_MAGIC, sizeof(m.magic));
	m.file_off = off;
	m.len = len;
	m.mapped = mapped;
	return m;
}

// The fixture's code span as the library offers it (checked in the first
// case; helpers.hpp): 38 MiB on x86-64, 40 on arm64.
const code_span fixture_span = code_span_of(build_path("tests/bigtext-nopie"));
const uint64_t span_off = fixture_span.off, span_len = fixture_span.len;

// Offers @path's fixture span from a child that runs it (maps it
// executable, as the library's process does) and exits once it is sent:
// the service may read the child's maps before or after that exit, and
// either way the offer is one it serves.  Returns the child's exit status.
int offer_from_runner(const std::string &path)
{
	pid_t child = fork();
	if (child == 0) {
		int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
		void *x = fd >= 0 ? mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)span_off)
				  : MAP_FAILED;
		ht_offer m = offer_of(span_off, span_len, span_len);
		_exit(x != MAP_FAILED && send_raw(&m, sizeof(m), { fd }) == 0 ? 0 : 1);
	}
	int status = -1;
	return child > 0 && waitpid(child, &status, 0) == child ? status : -1;
}

// @pid's open descriptors, each as "fd -> target".
std::vector<std::string> fd_targets(pid_t pid)
{
	std::string dir = "/proc/" + std::to_string(pid) + "/fd";
	std::vector<std::string> out;
	DIR *d = opendir(dir.c_str());
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char to[256];
		ssize_t n = readlink((dir + "/" + e->d_name).c_str(), to, sizeof(to) - 1);
		if (n <= 0) // closed since readdir() saw it
			continue;
		to[n] = 0;
		out.push_back(std::string(e->d_name) + " -> " + to);
	}
	if (d)
		closedir(d);
	return out;
}

// The open descriptors of @pid, but for its own reads of /proc (the
// service reads its mounts and maps now and then: a count taken during one
// is one more, and a leak that matters is a connection or a file sent).
size_t open_fds(pid_t pid)
{
	size_t n = 0;
	for (const std::string &t : fd_targets(pid))
		n += t.find(" -> /proc/") == std::string::npos;
	return n;
}

// What @pid's descriptors name, one per line: what a failed count shows.
std::string fd_list(pid_t pid)
{
	std::string out;
	for (const std::string &t : fd_targets(pid))
		out += t + "\n";
	return out;
}

// The service's descriptors once it has seen every close of ours: a hang-up
// reaches its event loop a moment after close() (slowly under qemu).  At
// most @want once settled (a descriptor it held when @want was counted, a
// connection of an earlier step, may be gone since): more is a leak.
size_t open_fds_settled(pid_t pid, size_t want)
{
	size_t n = open_fds(pid);
	for (int i = 0; i < 600 && n > want; i++) {
		usleep(50 * 1000);
		n = open_fds(pid);
	}
	return n;
}

} // namespace

#endif
