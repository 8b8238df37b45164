// Fault injection through the library's system call table (lib/sys.h).
//
// Every call the library makes is given a "site" name from what it does,
// not from where in the code it is, so the tests keep working as the code
// moves: "mmap-anon", "mmap-hugetlb", "mmap-reserve", "mmap-file",
// "munmap", "mremap", "madvise-hugepage", "madvise-collapse",
// "mprotect-rx", "open:/proc/self/maps", "read:/proc/self/maps",
// "pread:object", "write:report", "close:object", "openat:cache", ...
// Paths are named by role: "object" (the program's file), "report" (the
// report file), "cache" (anything under a share directory); /proc and
// /sys paths by themselves.
//
// The injector also tracks the mappings and descriptors the library
// creates, so a test can check that a failed run leaks neither.
#ifndef HT_ROBUST_FAULTS_HPP
#define HT_ROBUST_FAULTS_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

enum class fault_how {
	none,
	fail,        // the call fails with plan.err
	eintr_first, // read/pread/write: every other call fails with EINTR
	short_io,    // read/pread: return at most a few bytes per call
	// mremap: unmap the target, then fail with ENOMEM, as the kernel does
	// when an allocation fails after the MREMAP_FIXED unmap (see
	// docs/failure-model.md); with persist, every later mremap fails too.
	mremap_hole,
};

struct fault_plan {
	fault_how how = fault_how::none;
	std::string site;     // the site to fail (exact name)
	unsigned nth = 1;     // its nth call, counting from 1
	bool persist = false; // and every call after it
	int err = EPERM;
};

struct fault_call {
	std::string site;
	bool failed;
};

// Roles of paths, for the site names.
struct fault_paths {
	std::string object; // the program file
	std::string report; // the report file, or ""
	std::string share;  // the share directory, or ""
};

// Replaces the library's system call table; faults_remove() restores it.
void faults_install(const fault_plan &plan, const fault_paths &paths);
void faults_remove();

// What the library called since faults_install(), in order.
std::vector<fault_call> faults_log();
// Mappings the library made and did not unmap or move, as [start, end).
std::vector<std::pair<uintptr_t, uintptr_t>> faults_live_maps();
// Descriptors the library opened and did not close.
std::vector<int> faults_open_fds();
// True when an injected failure happened.
bool faults_fired();

#endif
