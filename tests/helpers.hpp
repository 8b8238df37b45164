// Small helpers for the tests: run a program (with a time limit), read
// files, read report lines.
#ifndef HT_TEST_HELPERS_HPP
#define HT_TEST_HELPERS_HPP

#include <map>
#include <string>
#include <vector>

struct prog_result {
	int status = -1;        // exit status, or 128 + signal
	bool timed_out = false; // killed after the time limit
	std::string out, err;
};

struct prog_opts {
	std::vector<std::string> env; // "NAME=value" sets, "NAME" removes
	std::string cwd;              // "" keeps the current directory
	std::string stdin_path = "/dev/null";
	double timeout_s = 60;
};

// Runs argv (argv[0] looked up in PATH) in its own process group and
// collects its output.  After the time limit the whole group is killed and
// the status is 128 + SIGKILL.  A program that cannot be started exits 127.
prog_result run_prog(const std::vector<std::string> &argv, const prog_opts &o = {});

struct run_result {
	int status = -1;   // exit status, or 128 + signal
	std::string out, err;
};

// run_prog with the extra environment entries and no time limit of its own
// (the test's own limit applies); in a sanitizer build the runtime is put
// first in LD_PRELOAD.
run_result run_cmd(const std::vector<std::string> &argv,
		   const std::vector<std::string> &env = {});

// Path of a build product, from the HT_BUILD_ROOT variable meson sets.
std::string build_path(const std::string &rel);
std::string source_path(const std::string &rel);

std::string read_file(const std::string &path);
// Huge page bytes (AnonHugePages + hugetlb) of /proc/self/smaps in [lo, hi):
// a copy's, not the page cache's 2 MiB folios that the kernel maps.
uint64_t huge_bytes_in(uintptr_t lo, uintptr_t hi);
// The current choice of a "a [b] c" sysfs file, or its whole trimmed text.
std::string read_setting(const std::string &path);
bool file_exists(const std::string &path);
// The fenced code blocks of Markdown @text marked ```@lang, in order, each
// with its final newline.
std::vector<std::string> fenced_blocks(const std::string &text, const std::string &lang);
// A temporary path in TMPDIR (or /tmp), or in the directory @in; removed
// when the test program exits.
std::string temp_path(const std::string &name, const std::string &in = "");
// A directory every user can reach, holding copies of build products, for
// tests that run a program as another user: a clone in root's home (mode
// 700 on Debian) is out of their reach.  Removed with what it holds.
struct world_dir {
	std::string path; // "" when it could not be made
	// A new directory under @base (/tmp by default), mode 0755.
	explicit world_dir(const std::string &base = "/tmp");
	~world_dir();
	world_dir(const world_dir &) = delete;
	world_dir &operator=(const world_dir &) = delete;
	// Copies @from in, mode 0755; returns the copy's path, or "" on failure.
	std::string put(const std::string &from);
};

// Where the node on PATH keeps its code: "libnode" when it is in that
// shared library (Debian's build: a small /usr/bin/node over libnode.so),
// "node" when it is in the program (a static build), "" without node.
std::string node_code_object();
// The preload's variables that reach node's code: HUGETEXT_MATCH for
// libnode.so (the preload takes a library only when named), else none.
std::vector<std::string> node_match_vars();

// The path of a complete shared cache entry (*.text) in @dir, or "".
std::string cache_entry(const std::string &dir);

// One JSON report line as flat key -> raw value text (strings unquoted).
using report_line = std::map<std::string, std::string>;
std::vector<report_line> read_report(const std::string &path);
// The report lines with status ok.
std::vector<report_line> ok_lines(const std::vector<report_line> &lines);

// The value after "KEY " on its line of a test program's output, or "".
std::string line_value(const std::string &out, const std::string &key);

bool thp_enabled();
// Leaves @path's page cache in 4 KiB pages, as a program installed long ago
// has it.  A file just written may sit in 2 MiB page-cache pages, which this
// kernel maps huge by itself (the library then has nothing to move).
void small_page_cache(const std::string &path);
// Writes @bytes to @path and maps them read and execute at a 2 MiB-aligned
// address, nothing else mapped from there to the end of the 2 MiB page the
// code ends in: code as a background move sees it.  nullptr on failure.
char *map_code_file(const std::string &path, const std::vector<char> &bytes);

// Once per process: a private mount namespace with a tmpfs over /run and
// /run/hugetext and @text_dir made in it (the text cache's and the
// service's place), so that a test never meets the machine's.  False when
// that cannot be had.
bool private_run_dir(const std::string &text_dir);
bool have_program(const std::string &name);
// In a sanitizer build (ASAN_OPTIONS set), the variable again with the leak
// check off, for a program run under ptrace (strace), where it cannot run;
// elsewhere nothing.
std::vector<std::string> without_leak_check();

// The executable PT_LOAD segments of the 64-bit ELF file @path, in this
// machine's byte order, from its program headers (none when it is not one).
struct exec_segment {
	unsigned long long vaddr = 0, offset = 0, filesz = 0, memsz = 0;
};
std::vector<exec_segment> exec_segments_of(const std::string &path);

// The whole 2 MiB pages of the first executable segment of the ELF file
// @path, as the file offset of their start and their length (0, 0 when
// there are none).  The fixtures' layouts differ: x86-64 links the code
// at 0x401000 (file offset 0x1000), arm64 at 0x400000 with the headers
// (offset 0).
struct code_span {
	unsigned long long off = 0, len = 0;
};
code_span code_span_of(const std::string &path);

// Whether the kernel has PAGEMAP_SCAN (6.7 on): without it smaps tells
// only how much of a mapping is huge, so the library keeps the page
// cache's 2 MiB pages only when all of a span's are (lib/pagecache.c).
bool kernel_has_pagemap_scan();

#endif
