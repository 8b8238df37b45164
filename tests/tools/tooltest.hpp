// Helpers for the tests of the hugetext command: synthetic ELF files, the
// command itself, temporary directories and golden files.
#ifndef HT_TOOLTEST_HPP
#define HT_TOOLTEST_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "helpers.hpp"

// One program header of a synthetic file.
struct gen_seg {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
};

// A synthetic ELF file: an ELF header, the program headers right after it,
// and zero bytes up to the end of the last segment (or file_size).
struct gen_elf {
	int cls = 64;          // 32 or 64
	bool msb = false;      // big-endian
	uint16_t type = 2;     // ET_EXEC
	uint16_t machine = 62; // EM_X86_64
	std::vector<gen_seg> segs;
	uint64_t file_size = 0;
	bool shdrs = false;    // add a section header table (one null entry) at the end
};

std::string make_elf(const gen_elf &g);

// Field access in a file's byte order, for tests that read what they wrote.
uint64_t get_uint(const std::string &b, size_t off, size_t size, bool msb);
void put_uint(std::string &b, size_t off, size_t size, uint64_t v, bool msb);

// The p_flags values of every program header of an image, read independently
// of the tool (class and byte order from e_ident; no checks).
std::vector<uint32_t> phdr_flags(const std::string &image);

// Every program header of an image (a built program or library), read
// independently of the tool: for expectations that follow the linker's layout, which differs
// by processor (arm64's ld puts the headers in the code segment and pads to
// 64 KiB; x86-64's separates them on 4 KiB pages).
std::vector<gen_seg> read_phdrs(const std::string &image);

std::string tool_path();
run_result tool(const std::vector<std::string> &args, const std::vector<std::string> &env = {});

void write_file(const std::string &path, const std::string &bytes, unsigned mode = 0644);

// A fresh directory under TMPDIR, removed with its contents at the end.
struct temp_dir {
	std::string path;
	explicit temp_dir(const std::string &name);
	~temp_dir();
	std::string operator/(const std::string &name) const { return path + "/" + name; }
};

// The canonical path (symbolic links resolved), or @path when there is none.
std::string real_path(const std::string &path);

std::string replace_all(std::string s, const std::string &from, const std::string &to);

// Compares @actual with tests/tools/golden/@name; HT_UPDATE_GOLDEN=1
// rewrites the golden file instead.  Returns "" or a description of the
// first difference.
std::string golden_diff(const std::string &name, const std::string &actual);

// The objects of {"regions": [...]} as flat key -> raw value text (strings
// unquoted and unescaped only for \" and \\; arrays kept as raw text).
std::vector<report_line> json_regions(const std::string &out);

// A child with pipes on its standard input and output, killed at the end.
struct child {
	int pid = -1, in = -1, out = -1;
	child(const std::vector<std::string> &argv, const std::vector<std::string> &env = {});
	~child();
	std::string read_line();  // waits up to 10 s
	int finish();             // closes stdin and waits: the exit status
};

#endif
