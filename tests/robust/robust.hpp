// Helpers shared by the robustness tests: the preload's LD_PRELOAD value
// (with the sanitizer runtime in front of it), snapshots of
// /proc/self/maps, and guards that put system settings back however a test
// ends.
#ifndef HT_ROBUST_HPP
#define HT_ROBUST_HPP

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../helpers.hpp"

// run_prog, prog_opts and prog_result are in ../helpers.hpp.

// The preload library of this build.
std::string preload_path();
// "LD_PRELOAD=..." with the sanitizer runtime first when the build has one
// (meson passes it as HT_SANITIZER_PRELOAD), then @libs.
std::string ld_preload(const std::vector<std::string> &libs);
std::string ld_preload_hugetext();

// In a sanitizer build: the environment that stops LeakSanitizer from
// starting its thread at exit, for runs where new threads are refused.
// Empty otherwise.
std::vector<std::string> no_sanitizer_threads();


// A report file read strictly: every line must be one flat JSON object
// (string values unescaped).  Lines that are not are counted in *bad.
std::vector<report_line> read_report_json(const std::string &path, int *bad = nullptr);
// One JSON object line; false when it is not valid JSON of that shape.
bool parse_json_object(const std::string &line, report_line *out);

// The lines of /proc/self/maps that overlap [lo, hi).
std::vector<std::string> maps_lines(uintptr_t lo, uintptr_t hi);
// The /proc/self/maps entry holding @addr: [*lo, *hi).
bool maps_entry(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, std::string *line = nullptr);
int count_open_fds();

// Writes @value to a sysfs/procfs file; returns "" or the error text.
std::string write_setting(const std::string &path, const std::string &value);

// Sets a system file for the guard's lifetime and writes the old value back
// when the guard dies, when the test program exits, or when it is killed by
// a signal (SIGTERM from meson's timeout, SIGSEGV, SIGABRT...).
class setting_guard {
public:
	// @restore: what to write back; by default the value read now.
	setting_guard(const std::string &path, const std::string &restore = "");
	~setting_guard();
	setting_guard(const setting_guard &) = delete;
	setting_guard &operator=(const setting_guard &) = delete;
	std::string set(const std::string &value);
	const std::string &saved() const { return saved_; }

private:
	std::string path_, saved_;
	int slot_ = -1;
};

// Free 2 MiB pages of the hugetlb pool (free minus reserved), -1 unknown.
long pool_free_2m();
// Makes sure the pool has @need free pages.  Only when HT_ROBUST_SET_POOL=1
// (meson sets it for the tests that run alone) it grows nr_hugepages, for
// the guard's lifetime.  Returns "" or why the pool is short.
std::string ensure_pool(long need, std::unique_ptr<setting_guard> &guard);
bool is_root();

#endif
