// Small helpers for the tests: run a command, read files, read report lines.
#ifndef HT_TEST_HELPERS_HPP
#define HT_TEST_HELPERS_HPP

#include <map>
#include <string>
#include <vector>

struct run_result {
	int status = -1;   // exit status, or 128 + signal
	std::string out, err;
};

// Runs argv with the extra environment entries ("NAME=value"); a value of
// "NAME" alone removes the variable.  Standard input is /dev/null.
run_result run_cmd(const std::vector<std::string> &argv,
		   const std::vector<std::string> &env = {});

// Path of a build product, from the HT_BUILD_ROOT variable meson sets.
std::string build_path(const std::string &rel);
std::string source_path(const std::string &rel);

std::string read_file(const std::string &path);
bool file_exists(const std::string &path);
std::string temp_path(const std::string &name);

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
bool have_program(const std::string &name);

#endif
