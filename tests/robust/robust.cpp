#include "robust.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

std::string preload_path()
{
	return build_path("lib/libhugetext-preload.so");
}

std::string ld_preload(const std::vector<std::string> &libs)
{
	std::string v = "LD_PRELOAD=";
	const char *san = std::getenv("HT_SANITIZER_PRELOAD");

	// An ASan-built preload needs the ASan runtime ahead of every other
	// library, or the runtime refuses to start.
	if (san && *san)
		v += std::string(san) + " ";
	for (size_t i = 0; i < libs.size(); i++)
		v += (i ? " " : "") + libs[i];
	return v;
}

std::string ld_preload_hugetext()
{
	return ld_preload({ preload_path() });
}

std::vector<std::string> no_sanitizer_threads()
{
	const char *san = std::getenv("HT_SANITIZER_PRELOAD");
	const char *opts = std::getenv("ASAN_OPTIONS");

	if (!san || !*san)
		return {};
	return { std::string("ASAN_OPTIONS=") + (opts && *opts ? std::string(opts) + ":" : "") + "detect_leaks=0" };
}

static bool parse_range(const std::string &line, uintptr_t *lo, uintptr_t *hi)
{
	unsigned long a, b;

	if (std::sscanf(line.c_str(), "%lx-%lx", &a, &b) != 2)
		return false;
	*lo = a;
	*hi = b;
	return true;
}

std::vector<std::string> maps_lines(uintptr_t lo, uintptr_t hi)
{
	std::vector<std::string> v;
	std::istringstream in(read_file("/proc/self/maps"));
	std::string line;
	uintptr_t a, b;

	while (std::getline(in, line))
		if (parse_range(line, &a, &b) && a < hi && b > lo)
			v.push_back(line);
	return v;
}

bool maps_entry(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, std::string *out)
{
	std::istringstream in(read_file("/proc/self/maps"));
	std::string line;
	uintptr_t a, b;

	while (std::getline(in, line)) {
		if (parse_range(line, &a, &b) && a <= addr && addr < b) {
			*lo = a;
			*hi = b;
			if (out)
				*out = line;
			return true;
		}
	}
	return false;
}

int count_open_fds()
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (struct dirent *e = readdir(d))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

std::string write_setting(const std::string &path, const std::string &value)
{
	int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return path + ": " + std::strerror(errno);
	ssize_t n = write(fd, value.data(), value.size());
	int e = errno;
	close(fd);
	if (n != (ssize_t)value.size())
		return path + " <- " + value + ": " + std::strerror(n < 0 ? e : EIO);
	return "";
}

// The guards' saved values, in fixed buffers a signal handler may read.
namespace {
struct slot {
	volatile sig_atomic_t used;
	char path[256];
	char value[256];
};
slot slots[8];
bool handlers_installed;

void restore_all()
{
	for (auto &s : slots) {
		if (!s.used)
			continue;
		int fd = open(s.path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = write(fd, s.value, strlen(s.value));
			(void)n;
			close(fd);
		}
		s.used = 0;
	}
}

void on_fatal(int sig)
{
	restore_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

void install_handlers()
{
	if (handlers_installed)
		return;
	handlers_installed = true;
	for (int sig : { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL })
		signal(sig, on_fatal);
	std::atexit(restore_all);
}
} // namespace

setting_guard::setting_guard(const std::string &path, const std::string &restore)
	: path_(path), saved_(restore.empty() ? read_setting(path) : restore)
{
	install_handlers();
	for (int i = 0; i < (int)(sizeof(slots) / sizeof(slots[0])); i++) {
		if (slots[i].used)
			continue;
		std::snprintf(slots[i].path, sizeof(slots[i].path), "%s", path_.c_str());
		std::snprintf(slots[i].value, sizeof(slots[i].value), "%s", saved_.c_str());
		slots[i].used = 1;
		slot_ = i;
		break;
	}
}

setting_guard::~setting_guard()
{
	write_setting(path_, saved_);
	if (slot_ >= 0)
		slots[slot_].used = 0;
}

std::string setting_guard::set(const std::string &value)
{
	return write_setting(path_, value);
}

long pool_free_2m()
{
	const std::string dir = "/sys/kernel/mm/hugepages/hugepages-2048kB/";
	std::string f = read_file(dir + "free_hugepages"), r = read_file(dir + "resv_hugepages");

	if (f.empty() || r.empty())
		return -1;
	long v = std::atol(f.c_str()) - std::atol(r.c_str());
	return v < 0 ? 0 : v;
}

bool is_root()
{
	return geteuid() == 0;
}

std::string ensure_pool(long need, std::unique_ptr<setting_guard> &guard)
{
	const char *set = std::getenv("HT_ROBUST_SET_POOL");
	long have = pool_free_2m();

	if (have >= need)
		return "";
	if (!set || std::string(set) != "1" || !is_root())
		return "the hugetlb pool has " + std::to_string(have) + " free 2 MiB pages, " +
		       std::to_string(need) + " needed (the tests that run alone raise it)";
	const std::string path = "/proc/sys/vm/nr_hugepages";
	guard.reset(new setting_guard(path));
	long total = std::atol(guard->saved().c_str()) + (need - (have < 0 ? 0 : have));
	std::string e = guard->set(std::to_string(total));
	if (!e.empty())
		return e;
	return pool_free_2m() >= need ? "" : "the kernel could not grow the hugetlb pool";
}

namespace {
struct json_in {
	const std::string &s;
	size_t i = 0;

	void ws()
	{
		while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
			i++;
	}
	bool eat(char c)
	{
		ws();
		if (i < s.size() && s[i] == c) {
			i++;
			return true;
		}
		return false;
	}
	bool string(std::string *out)
	{
		if (!eat('"'))
			return false;
		out->clear();
		while (i < s.size() && s[i] != '"') {
			unsigned char c = (unsigned char)s[i++];
			if (c < 0x20)
				return false;
			if (c != '\\') {
				*out += (char)c;
				continue;
			}
			if (i >= s.size())
				return false;
			char e = s[i++];
			switch (e) {
			case '"': case '\\': case '/': *out += e; break;
			case 'b': *out += '\b'; break;
			case 'f': *out += '\f'; break;
			case 'n': *out += '\n'; break;
			case 'r': *out += '\r'; break;
			case 't': *out += '\t'; break;
			case 'u': {
				if (i + 4 > s.size())
					return false;
				unsigned v = 0;
				for (int k = 0; k < 4; k++) {
					char h = s[i++];
					v <<= 4;
					if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
					else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
					else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
					else return false;
				}
				*out += v < 0x80 ? (char)v : '?';
				break;
			}
			default:
				return false;
			}
		}
		return eat('"');
	}
	bool scalar(std::string *out)
	{
		ws();
		size_t b = i;
		while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ' ')
			i++;
		*out = s.substr(b, i - b);
		if (out->empty())
			return false;
		if (*out == "true" || *out == "false" || *out == "null")
			return true;
		char *end = nullptr;
		std::strtod(out->c_str(), &end);
		return end && *end == '\0';
	}
};
} // namespace

bool parse_json_object(const std::string &line, report_line *out)
{
	json_in in{ line };
	out->clear();
	if (!in.eat('{'))
		return false;
	if (in.eat('}'))
		return in.i == line.size();
	do {
		std::string key, val;
		if (!in.string(&key) || !in.eat(':'))
			return false;
		in.ws();
		bool ok = in.i < line.size() && line[in.i] == '"' ? in.string(&val) : in.scalar(&val);
		if (!ok || out->count(key))
			return false;
		(*out)[key] = val;
	} while (in.eat(','));
	if (!in.eat('}'))
		return false;
	in.ws();
	return in.i == line.size();
}

std::vector<report_line> read_report_json(const std::string &path, int *bad)
{
	std::vector<report_line> v;
	std::istringstream in(read_file(path));
	std::string line;

	if (bad)
		*bad = 0;
	while (std::getline(in, line)) {
		report_line l;
		if (parse_json_object(line, &l))
			v.push_back(l);
		else if (bad)
			++*bad;
	}
	return v;
}
