#include "tooltest.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

void put_uint(std::string &b, size_t off, size_t size, uint64_t v, bool msb)
{
	for (size_t i = 0; i < size; i++)
		b[off + (msb ? size - 1 - i : i)] = (char)(v >> (8 * i));
}

uint64_t get_uint(const std::string &b, size_t off, size_t size, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < size; i++)
		v |= (uint64_t)(unsigned char)b[off + (msb ? size - 1 - i : i)] << (8 * i);
	return v;
}

// Field offsets and sizes of the two classes.
struct layout {
	size_t ehsize, phentsize, shentsize;
	size_t phoff, shoff, flags_ehdr, ehsize_f, phentsize_f, phnum_f, shentsize_f, shnum_f, shstrndx_f;
	size_t w; // size of an address
};

static layout layout_of(int cls)
{
	if (cls == 64)
		return { 64, 56, 64, 0x20, 0x28, 0x30, 0x34, 0x36, 0x38, 0x3a, 0x3c, 0x3e, 8 };
	return { 52, 32, 40, 0x1c, 0x20, 0x24, 0x28, 0x2a, 0x2c, 0x2e, 0x30, 0x32, 4 };
}

static void put_phdr(std::string &b, size_t at, const gen_seg &s, int cls, bool msb)
{
	if (cls == 64) {
		put_uint(b, at + 0, 4, s.type, msb);
		put_uint(b, at + 4, 4, s.flags, msb);
		put_uint(b, at + 8, 8, s.offset, msb);
		put_uint(b, at + 16, 8, s.vaddr, msb);
		put_uint(b, at + 24, 8, s.vaddr, msb);
		put_uint(b, at + 32, 8, s.filesz, msb);
		put_uint(b, at + 40, 8, s.memsz, msb);
		put_uint(b, at + 48, 8, s.align, msb);
	} else {
		put_uint(b, at + 0, 4, s.type, msb);
		put_uint(b, at + 4, 4, s.offset, msb);
		put_uint(b, at + 8, 4, s.vaddr, msb);
		put_uint(b, at + 12, 4, s.vaddr, msb);
		put_uint(b, at + 16, 4, s.filesz, msb);
		put_uint(b, at + 20, 4, s.memsz, msb);
		put_uint(b, at + 24, 4, s.flags, msb);
		put_uint(b, at + 28, 4, s.align, msb);
	}
}

std::string make_elf(const gen_elf &g)
{
	layout l = layout_of(g.cls);
	uint64_t size = l.ehsize + g.segs.size() * l.phentsize;

	for (auto &s : g.segs)
		if (s.offset + s.filesz > size)
			size = s.offset + s.filesz;
	if (g.file_size > size)
		size = g.file_size;
	uint64_t shoff = (size + 7) & ~7ULL;
	if (g.shdrs)
		size = shoff + l.shentsize;

	std::string b(size, '\0');
	b[0] = 0x7f;
	b[1] = 'E';
	b[2] = 'L';
	b[3] = 'F';
	b[4] = g.cls == 64 ? 2 : 1;
	b[5] = g.msb ? 2 : 1;
	b[6] = 1;
	put_uint(b, 16, 2, g.type, g.msb);
	put_uint(b, 18, 2, g.machine, g.msb);
	put_uint(b, 20, 4, 1, g.msb);
	put_uint(b, l.phoff, l.w, g.segs.empty() ? 0 : l.ehsize, g.msb);
	put_uint(b, l.shoff, l.w, g.shdrs ? shoff : 0, g.msb);
	put_uint(b, l.ehsize_f, 2, l.ehsize, g.msb);
	put_uint(b, l.phentsize_f, 2, l.phentsize, g.msb);
	put_uint(b, l.phnum_f, 2, g.segs.size(), g.msb);
	put_uint(b, l.shentsize_f, 2, l.shentsize, g.msb);
	put_uint(b, l.shnum_f, 2, g.shdrs ? 1 : 0, g.msb);
	for (size_t i = 0; i < g.segs.size(); i++)
		put_phdr(b, l.ehsize + i * l.phentsize, g.segs[i], g.cls, g.msb);
	return b;
}

std::vector<uint32_t> phdr_flags(const std::string &image)
{
	bool msb = image[5] == 2;
	int cls = image[4] == 2 ? 64 : 32;
	layout l = layout_of(cls);
	uint64_t phoff = get_uint(image, l.phoff, l.w, msb);
	size_t phnum = get_uint(image, l.phnum_f, 2, msb);
	size_t flags_at = cls == 64 ? 4 : 24;
	std::vector<uint32_t> out;

	for (size_t i = 0; i < phnum; i++)
		out.push_back((uint32_t)get_uint(image, phoff + i * l.phentsize + flags_at, 4, msb));
	return out;
}

static gen_seg get_phdr(const std::string &b, size_t at, int cls, bool msb)
{
	gen_seg s;

	s.type = (uint32_t)get_uint(b, at, 4, msb);
	if (cls == 64) {
		s.flags = (uint32_t)get_uint(b, at + 4, 4, msb);
		s.offset = get_uint(b, at + 8, 8, msb);
		s.vaddr = get_uint(b, at + 16, 8, msb);
		s.filesz = get_uint(b, at + 32, 8, msb);
		s.memsz = get_uint(b, at + 40, 8, msb);
		s.align = get_uint(b, at + 48, 8, msb);
	} else {
		s.offset = get_uint(b, at + 4, 4, msb);
		s.vaddr = get_uint(b, at + 8, 4, msb);
		s.filesz = get_uint(b, at + 16, 4, msb);
		s.memsz = get_uint(b, at + 20, 4, msb);
		s.flags = (uint32_t)get_uint(b, at + 24, 4, msb);
		s.align = get_uint(b, at + 28, 4, msb);
	}
	return s;
}

std::vector<gen_seg> read_phdrs(const std::string &image)
{
	std::vector<gen_seg> out;

	if (image.size() < 52 || image.compare(0, 4, "\x7f" "ELF") != 0)
		return out;
	bool msb = image[5] == 2;
	int cls = image[4] == 2 ? 64 : 32;
	layout l = layout_of(cls);
	uint64_t phoff = get_uint(image, l.phoff, l.w, msb);
	size_t phnum = get_uint(image, l.phnum_f, 2, msb);

	for (size_t i = 0; i < phnum && phoff + (i + 1) * l.phentsize <= image.size(); i++)
		out.push_back(get_phdr(image, phoff + i * l.phentsize, cls, msb));
	return out;
}

std::string tool_path()
{
	return build_path("tools/hugetext");
}

run_result tool(const std::vector<std::string> &args, const std::vector<std::string> &env)
{
	std::vector<std::string> argv{ tool_path() };

	argv.insert(argv.end(), args.begin(), args.end());
	return run_cmd(argv, env);
}

void write_file(const std::string &path, const std::string &bytes, unsigned mode)
{
	unlink(path.c_str());
	std::ofstream f(path, std::ios::binary);
	f.write(bytes.data(), (std::streamsize)bytes.size());
	f.close();
	chmod(path.c_str(), mode);
}

temp_dir::temp_dir(const std::string &name)
{
	path = temp_path(name);
	run_cmd({ "rm", "-rf", path });
	mkdir(path.c_str(), 0755);
}

temp_dir::~temp_dir()
{
	run_cmd({ "rm", "-rf", path });
}

std::string real_path(const std::string &path)
{
	char buf[PATH_MAX];
	return realpath(path.c_str(), buf) ? buf : path;
}

std::string replace_all(std::string s, const std::string &from, const std::string &to)
{
	for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
		s.replace(at, from.size(), to);
	return s;
}

std::string golden_diff(const std::string &name, const std::string &actual)
{
	std::string path = source_path("tests/tools/golden/" + name);
	const char *update = std::getenv("HT_UPDATE_GOLDEN");

	if (update && *update == '1') {
		write_file(path, actual);
		return read_file(path) == actual ? "" : "cannot write " + path;
	}
	if (!file_exists(path))
		return "missing golden file " + path;
	std::string want = read_file(path);
	if (want == actual)
		return "";
	size_t i = 0;
	while (i < want.size() && i < actual.size() && want[i] == actual[i])
		i++;
	size_t line_start = want.rfind('\n', i ? i - 1 : 0);
	line_start = line_start == std::string::npos ? 0 : line_start + 1;
	return "differs from " + path + " at byte " + std::to_string(i) + "\nwant: " +
	       want.substr(line_start, want.find('\n', i) - line_start) + "\ngot:  " +
	       actual.substr(line_start, actual.find('\n', i) - line_start);
}

// Reads a JSON value starting at @i: a string, or anything up to the
// matching close of a nested array or object, or a bare word.
static std::string json_value(const std::string &s, size_t &i)
{
	std::string v;

	if (s[i] == '"') {
		for (i++; i < s.size() && s[i] != '"'; i++) {
			if (s[i] == '\\' && i + 1 < s.size())
				i++;
			v += s[i];
		}
		i++;
		return v;
	}
	int depth = 0;
	bool in_str = false;
	for (; i < s.size(); i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				v += s[i++];
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			depth++;
		} else if (c == ']' || c == '}') {
			if (depth == 0)
				break;
			depth--;
		} else if (c == ',' && depth == 0) {
			break;
		}
		v += s[i];
	}
	return v;
}

std::vector<report_line> json_regions(const std::string &out)
{
	std::vector<report_line> regions;
	size_t i = out.find("{\"regions\": [");

	if (i == std::string::npos)
		return regions;
	i += 13;
	while (i < out.size() && out[i] == '{') {
		report_line m;
		i++;
		while (i < out.size() && out[i] != '}') {
			while (out[i] == ' ' || out[i] == ',')
				i++;
			size_t k = i;
			std::string key = json_value(out, k);
			i = k;
			while (out[i] == ':' || out[i] == ' ')
				i++;
			m[key] = json_value(out, i);
		}
		regions.push_back(m);
		i++;
		while (i < out.size() && (out[i] == ',' || out[i] == ' '))
			i++;
	}
	return regions;
}

extern char **environ;

child::child(const std::vector<std::string> &argv, const std::vector<std::string> &env)
{
	std::vector<std::string> e;
	std::vector<char *> av, ev;
	int ip[2], op[2];
	posix_spawn_file_actions_t fa;

	for (char **p = environ; *p; p++) {
		std::string v = *p, name = v.substr(0, v.find('=') + 1);
		bool replaced = false;
		for (auto &x : env)
			replaced = replaced || x.compare(0, name.size(), name) == 0;
		if (!replaced)
			e.push_back(v);
	}
	e.insert(e.end(), env.begin(), env.end());
	for (auto &a : argv)
		av.push_back(const_cast<char *>(a.c_str()));
	av.push_back(nullptr);
	for (auto &x : e)
		ev.push_back(const_cast<char *>(x.c_str()));
	ev.push_back(nullptr);
	if (pipe2(ip, O_CLOEXEC) || pipe2(op, O_CLOEXEC))
		return;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ip[0], 0);
	posix_spawn_file_actions_adddup2(&fa, op[1], 1);
	pid_t p;
	if (posix_spawnp(&p, av[0], &fa, nullptr, av.data(), ev.data()) == 0)
		pid = p;
	posix_spawn_file_actions_destroy(&fa);
	close(ip[0]);
	close(op[1]);
	in = ip[1];
	out = op[0];
}

child::~child()
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
}

std::string child::read_line()
{
	std::string line;
	char c;

	while (out >= 0) {
		struct pollfd p = { out, POLLIN, 0 };
		if (poll(&p, 1, 10000) <= 0 || read(out, &c, 1) != 1 || c == '\n')
			break;
		line += c;
	}
	return line;
}

int child::finish()
{
	int st = 0;

	if (in >= 0)
		close(in);
	in = -1;
	if (pid <= 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	pid = -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
