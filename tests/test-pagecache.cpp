// Description: the page cache's 2 MiB pages.  Code the kernel already maps
// huge from them is kept, not copied; copied code is read back into them for
// the next start; HUGETEXT_PAGE_CACHE=0 leaves them alone.  Also the huge
// page count through PAGEMAP_SCAN, against smaps.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "helpers.hpp"
#include "smaps-count.h"

extern "C" {
#include "plan.h"
#include "run.h"
#include "sys.h"
}

static const size_t MIB2 = 2u << 20;

// The test's files live in the build directory, on the file system the
// project is on: /tmp is often a tmpfs, whose pages are not the page cache
// this test is about.
static std::string disk_path(const std::string &name)
{
	return temp_path(name, build_path("tests"));
}

/*
 * Whether a file in the test directory can sit in 2 MiB page-cache pages
 * that the kernel maps huge: written, dropped, read back through an advised
 * mapping, and counted in our own smaps.  Independent of the library.
 */
static bool page_cache_holds_2m()
{
	std::string path = disk_path("probe");
	int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	std::vector<char> buf(MIB2, 'x');
	bool ok = fd >= 0 && write(fd, buf.data(), MIB2) == (ssize_t)MIB2 && fdatasync(fd) == 0 &&
		  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
	char *base = ok ? (char *)mmap(nullptr, 2 * MIB2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
			: (char *)MAP_FAILED;
	unsigned long kb = 0;

	if (base != MAP_FAILED) {
		char *at = (char *)(((uintptr_t)base + MIB2 - 1) & ~(uintptr_t)(MIB2 - 1));
		if (mmap(at, MIB2, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) != MAP_FAILED &&
		    madvise(at, MIB2, MADV_HUGEPAGE) == 0) {
			(void)*(volatile char *)at;
			kb = file_pmd_kb_in(at, at + MIB2);
		}
		munmap(base, 2 * MIB2);
	}
	if (fd >= 0)
		close(fd);
	unlink(path.c_str());
	return kb == MIB2 / 1024;
}

extern "C" const char *test_skip_reason(void)
{
	if (!thp_enabled())
		return "transparent huge pages are disabled (enabled is never or absent)";
	if (!page_cache_holds_2m())
		return "this kernel or the build directory's file system keeps no 2 MiB page-cache pages";
	return nullptr;
}

static unsigned long num(report_line &l, const char *key)
{
	return l.count(key) ? std::stoul(l[key]) : 0;
}

// A copy of the non-PIE program (its addresses agree with its file offsets
// modulo 2 MiB), with its page cache in 4 KiB pages as after a long uptime.
static std::string cold_copy(const char *name)
{
	std::string copy = disk_path(name);
	REQUIRE(run_cmd({ "cp", build_path("tests/bigtext-nopie"), copy }).status == 0);
	small_page_cache(copy);
	return copy;
}

struct one_run {
	run_result r;
	report_line line;
};

// One run with the preload; HUGETEXT_PAGE_CACHE as given ("" = the default).
static one_run run_preloaded(const std::string &prog, const std::string &page_cache, const char *tag,
			     unsigned long min_bytes = 16 * MIB2, const std::vector<std::string> &args = { "smaps" })
{
	std::string report = temp_path(tag);
	std::vector<std::string> env = { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"),
					 "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=thp",
					 page_cache.empty() ? "HUGETEXT_PAGE_CACHE" : "HUGETEXT_PAGE_CACHE=" + page_cache };
	one_run o;
	std::vector<std::string> argv = { prog };
	argv.insert(argv.end(), args.begin(), args.end());
	o.r = run_cmd(argv, env);
	INFO(o.r.err);
	REQUIRE(o.r.status == 0);
	CHECK(o.r.err.empty());
	for (auto &l : read_report(report))
		if (l["start"] != "" && std::stoul(l["bytes"]) >= min_bytes)
			o.line = l;
	REQUIRE(!o.line.empty());
	return o;
}

TEST_CASE("copied code is read back as 2 MiB pages, and the next start keeps them", "[pagecache]")
{
	std::string prog = cold_copy("pc-prog");
	run_result plain = run_cmd({ prog, "smaps" });
	REQUIRE(plain.status == 0);

	one_run first = run_preloaded(prog, "", "pc1.json");
	unsigned long bytes = num(first.line, "bytes");
	CHECK(first.line["status"] == "ok");
	CHECK(num(first.line, "kept_bytes") == 0);
	CHECK(num(first.line, "huge_bytes") == bytes);
	unsigned long warmed = num(first.line, "warmed_bytes");
	// Every whole 2 MiB page of code; only a partial last one would stay out.
	CHECK(warmed % MIB2 == 0);
	CHECK(warmed + MIB2 >= bytes);
	CHECK(warmed <= bytes);
	CHECK(line_value(first.r.out, "sum") == line_value(plain.out, "sum"));

	// A start without the preload gets the kernel's huge pages too.
	run_result alone = run_cmd({ prog, "smaps" });
	REQUIRE(alone.status == 0);
	CHECK(std::stoul(line_value(alone.out, "file_pmd_kb")) * 1024 == warmed);

	one_run second = run_preloaded(prog, "", "pc2.json");
	// All of it kept is nothing to do; a partial last page is copied.
	if (warmed == bytes) {
		CHECK(second.line["status"] == "skipped");
		CHECK(second.line["error"] == "already on huge pages");
	} else {
		CHECK(second.line["status"] == "ok");
	}
	CHECK(num(second.line, "kept_bytes") == warmed);
	CHECK(num(second.line, "warmed_bytes") == 0);
	CHECK(num(second.line, "huge_bytes") == bytes);
	// From the program's own smaps: the kept part is page cache, the rest a THP copy.
	CHECK(std::stoul(line_value(second.r.out, "file_pmd_kb")) * 1024 >= warmed);
	CHECK(std::stoul(line_value(second.r.out, "huge_kb")) * 1024 == bytes - warmed);
	CHECK(line_value(second.r.out, "sum") == line_value(plain.out, "sum"));
	CHECK(line_value(second.r.out, "fds") == line_value(plain.out, "fds"));
}

TEST_CASE("the default start keeps a warmed file and leaves a partial last page to the deferred copy",
	  "[pagecache]")
{
	// bigtext-tail: code from 0x401000 to 1 MiB past 0xc00000, free address
	// space after it up to .rodata at 0xe00000: the span is 0x600000-0xe00000,
	// and its last 2 MiB page can never be one of the page cache's, since
	// the file ends inside it (bigtext-tailfile, below, is the other case).
	std::string prog = disk_path("pc-tail");
	REQUIRE(run_cmd({ "cp", build_path("tests/bigtext-tail"), prog }).status == 0);
	small_page_cache(prog);
	run_result plain = run_cmd({ prog, "smaps" });
	REQUIRE(plain.status == 0);

	// The first start copies now and reads the whole pages back.
	one_run first = run_preloaded(prog, "", "pct1.json", 4 * MIB2);
	REQUIRE(first.line["status"] == "ok");
	REQUIRE(first.line["start"] == std::to_string(0x600000));
	REQUIRE(first.line["end"] == std::to_string(0xe00000));
	REQUIRE(num(first.line, "warmed_bytes") == 3 * MIB2);

	// The default start (copy auto, no service): the six pages kept; the
	// last one is not copied at start (no read-back could repair it, so
	// every start would copy it again) but deferred, as any copy that must
	// pay first.
	std::string report = temp_path("pct2.json");
	run_result r = run_cmd({ prog, "smaps" }, { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"),
						   "HUGETEXT_REPORT=" + report, "HUGETEXT_MODE=thp",
						   "HUGETEXT_PAGE_CACHE", "HUGETEXT_COPY=auto", "HUGETEXT_SERVICE=0" });
	INFO(r.err);
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
	// The start's line: the first for the span (the background thread may
	// add its own after it; under emulation it looked before the program
	// had run any of the code, and said so).
	report_line l;
	for (auto &x : read_report(report))
		if (l.empty() && x["start"] == std::to_string(0x600000))
			l = x;
	REQUIRE(!l.empty());
	CHECK(num(l, "kept_bytes") == 3 * MIB2);
	CHECK(num(l, "huge_bytes") == num(l, "kept_bytes"));
	CHECK(l.count("private_huge_bytes") == 0);
	CHECK(l["status"] == "skipped");
	CHECK(l["error"] == ht_error_str(HT_E_DEFERRED));
	CHECK(std::stoul(line_value(r.out, "huge_kb")) == 0);
	unlink(report.c_str());
}

// Drops the file's 2 MiB chunk at @off from the page cache and reads it
// back in 4 KiB pages, as after a long uptime; the rest stays as it is.
static void small_chunk(const std::string &path, off_t off)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	char buf[4096];

	REQUIRE(fd >= 0);
	REQUIRE(posix_fadvise(fd, off, MIB2, POSIX_FADV_DONTNEED) == 0);
	REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);
	for (off_t at = off; at < off + (off_t)MIB2; at += sizeof(buf))
		REQUIRE(pread(fd, buf, sizeof(buf), at) == (ssize_t)sizeof(buf));
	close(fd);
}

// A layout whose code's mapping ends inside its last 2 MiB page, with free
// address space after it and the file holding all of that page's 2 MiB.
struct tail_layout {
	const char *fixture;
	uintptr_t start, end; // the span
	off_t tail_off;       // the file offset of the last page
	bool padded;          // the file's bytes past the code there are zeros
};

// The default start of @prog (copy auto, no service): its line for the span, and its own output.
static std::pair<run_result, report_line> default_start(const std::string &prog, const tail_layout &t,
							 const run_result &plain, const char *tag)
{
	std::string report = temp_path(tag);
	run_result r = run_cmd({ prog, "smaps", "tail" },
			       { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"), "HUGETEXT_REPORT=" + report,
				 "HUGETEXT_MODE=thp", "HUGETEXT_PAGE_CACHE", "HUGETEXT_COPY=auto", "HUGETEXT_SERVICE=0" });
	INFO(r.err);
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
	report_line l;
	for (auto &x : read_report(report))
		if (l.empty() && x["start"] == std::to_string(t.start))
			l = x;
	unlink(report.c_str());
	REQUIRE(!l.empty());
	return { r, l };
}

TEST_CASE("a last page the code ends inside is the page cache's too, where free space and zeros follow it",
	  "[pagecache]")
{
	// bigtext-tailpad, node's layout: the span 0x600000-0x1000000, the code's
	// mapping ending 1 MiB into its last page, free space up to .rodata at
	// 0x1200000, the file's zero padding after the code to that page's end.
	// bigtext-tailfile: bigtext-tail's layout with .rodata's bytes after the
	// code in the file: mapped there they would be executable, so the last
	// page is left to the deferred copy as before.
	tail_layout t = GENERATE(tail_layout{ "bigtext-tailpad", 0x600000, 0x1000000, 0xa00000, true },
				 tail_layout{ "bigtext-tailfile", 0x600000, 0xe00000, 0x800000, false });
	size_t pages = (t.end - t.start) / MIB2;
	INFO(t.fixture);
	std::string prog = disk_path(std::string("pc-") + t.fixture);
	REQUIRE(run_cmd({ "cp", build_path(std::string("tests/") + t.fixture), prog }).status == 0);
	small_page_cache(prog);
	run_result plain = run_cmd({ prog, "smaps", "tail" });
	REQUIRE(plain.status == 0);
	REQUIRE(line_value(plain.out, "after_code_kb") == "0");

	// The first start copies all the pages and reads the whole ones back, the last one too where it may be kept.
	one_run first = run_preloaded(prog, "", "pctf1.json", 4 * MIB2, { "smaps", "tail" });
	REQUIRE(first.line["status"] == "ok");
	REQUIRE(first.line["start"] == std::to_string(t.start));
	REQUIRE(first.line["end"] == std::to_string(t.end));
	CHECK(num(first.line, "warmed_bytes") == (t.padded ? pages : pages - 1) * MIB2);

	// The default start keeps all of them from the page cache: nothing
	// copied, nothing deferred; the last page is one mapping of the file,
	// mapped by one PMD, the space after the code the file's zeros.
	auto [r, l] = default_start(prog, t, plain, "pctf2.json");
	if (!t.padded || !kernel_has_pagemap_scan()) {
		// Not padded, or smaps, which cannot tell one 2 MiB page of a mapping apart: as before.
		CHECK(num(l, "kept_bytes") == (pages - 1) * MIB2);
		CHECK(l["error"] == ht_error_str(HT_E_DEFERRED));
		CHECK(line_value(r.out, "after_code_kb") == "0");
		return;
	}
	CHECK(l["status"] == "skipped");
	CHECK(l["error"] == ht_error_str(HT_E_ALREADY));
	CHECK(num(l, "kept_bytes") == pages * MIB2);
	CHECK(num(l, "huge_bytes") == pages * MIB2);
	CHECK(l.count("private_huge_bytes") == 0);
	CHECK(std::stoul(line_value(r.out, "huge_kb")) == 0);
	// The code's PMD-mapped kB: bigtext's bytes in the pages (it starts in the first, ends 1 MiB into the last).
	CHECK(std::stoul(line_value(r.out, "file_pmd_kb")) * 1024 >= (pages - 1) * MIB2 + MIB2 / 2);
	CHECK(std::stoul(line_value(r.out, "after_code_kb")) > 0);

	// The last chunk back in 4 KiB pages: the start keeps the others, the
	// last is deferred as before, and the space after the code is free again.
	small_chunk(prog, t.tail_off);
	auto [r2, l2] = default_start(prog, t, plain, "pctf3.json");
	CHECK(num(l2, "kept_bytes") == (pages - 1) * MIB2);
	CHECK(l2["error"] == ht_error_str(HT_E_DEFERRED));
	CHECK(line_value(r2.out, "after_code_kb") == "0");
	CHECK(std::stoul(line_value(r2.out, "huge_kb")) == 0);
}

TEST_CASE("HUGETEXT_PAGE_CACHE=0 copies all and leaves the page cache as it was", "[pagecache]")
{
	std::string prog = cold_copy("pc-off");

	one_run off = run_preloaded(prog, "0", "pc-off1.json");
	unsigned long bytes = num(off.line, "bytes");
	CHECK(off.line["status"] == "ok");
	CHECK(num(off.line, "huge_bytes") == bytes);
	CHECK(off.line.count("kept_bytes") == 0);
	CHECK(off.line.count("warmed_bytes") == 0);
	CHECK(line_value(off.r.out, "file_pmd_kb") == "0");

	// The page cache is still in small pages: the next default start copies and warms.
	one_run next = run_preloaded(prog, "", "pc-off2.json");
	CHECK(num(next.line, "kept_bytes") == 0);
	CHECK(num(next.line, "warmed_bytes") > 0);

	// And with the pages warmed, off still copies all of it.
	one_run again = run_preloaded(prog, "0", "pc-off3.json");
	CHECK(again.line.count("kept_bytes") == 0);
	CHECK(std::stoul(line_value(again.r.out, "huge_kb")) * 1024 == bytes);
}

TEST_CASE("the copy range keeps huge pages at either end only", "[pagecache][unit]")
{
	size_t from = 1, to = 1;
	const unsigned char none[4] = { 0, 0, 0, 0 }, all[4] = { 1, 1, 1, 1 };
	const unsigned char head[4] = { 1, 1, 0, 0 }, ends[4] = { 1, 0, 1, 1 }, middle[4] = { 0, 1, 1, 0 };

	ht_copy_range(none, 4, 4 * MIB2, MIB2, &from, &to);
	CHECK((from == 0 && to == 4 * MIB2));
	ht_copy_range(all, 4, 4 * MIB2, MIB2, &from, &to);
	CHECK(from == to);
	// A partial last page (span longer than the flagged pages) is always copied.
	ht_copy_range(all, 4, 5 * MIB2, MIB2, &from, &to);
	CHECK((from == 4 * MIB2 && to == 5 * MIB2));
	ht_copy_range(head, 4, 4 * MIB2, MIB2, &from, &to);
	CHECK((from == 2 * MIB2 && to == 4 * MIB2));
	ht_copy_range(ends, 4, 4 * MIB2, MIB2, &from, &to);
	CHECK((from == MIB2 && to == 2 * MIB2));
	// Huge pages between copied ones are copied with them: one swap.
	ht_copy_range(middle, 4, 4 * MIB2, MIB2, &from, &to);
	CHECK((from == 0 && to == 4 * MIB2));
	// More flags than the span has pages: the span decides.
	ht_copy_range(head, 4, 2 * MIB2, MIB2, &from, &to);
	CHECK(from == to);
}

static int no_scan_ioctl(int, unsigned long, void *)
{
	errno = EINVAL;
	return -1;
}

TEST_CASE("huge pages counted with PAGEMAP_SCAN match smaps, and smaps serves without it", "[pagecache]")
{
	size_t len = 8 * MIB2;
	char *base = (char *)mmap(nullptr, len + MIB2, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(base != MAP_FAILED);
	char *at = (char *)(((uintptr_t)base + MIB2 - 1) & ~(uintptr_t)(MIB2 - 1));
	REQUIRE(madvise(at, len, MADV_HUGEPAGE) == 0);
	memset(at, 1, 2 * MIB2);        // pages 0 and 1
	memset(at + 5 * MIB2, 1, MIB2); // page 5
	unsigned long kb = huge_kb_in(at, at + len);
	uint64_t scanned = 0, from_smaps = 0;
	unsigned char chunks[8];

	INFO("smaps says " << kb << " kB");
	if (kb == 0) {
		munmap(base, len + MIB2);
		WARN("the kernel gave no huge page just now: not compared");
		return;
	}
	// Before Linux 6.7 there is no PAGEMAP_SCAN to compare with.
	int scan = ht_sys_scan_huge((uintptr_t)at, (uintptr_t)at + len, &scanned);
	REQUIRE((scan == 0 || scan == -ENOTTY));
	if (scan == 0) {
		CHECK(scanned == kb * 1024);
		REQUIRE(ht_sys_scan_huge_chunks((uintptr_t)at, 8, chunks) == 0);
		// Untouched pages are never huge; the touched ones that the
		// kernel made huge are as many as smaps counts.
		uint64_t flagged = 0;
		for (int i = 0; i < 8; i++) {
			INFO("2 MiB page " << i);
			bool touched = i == 0 || i == 1 || i == 5;
			CHECK(chunks[i] <= 1);
			if (!touched)
				CHECK(chunks[i] == 0);
			flagged += chunks[i];
		}
		CHECK(flagged * MIB2 == kb * 1024);
	}
	ht_sys.ioctl = no_scan_ioctl;
	CHECK(ht_sys_scan_huge((uintptr_t)at, (uintptr_t)at + len, &scanned) == -ENOTTY);
	CHECK(ht_sys_self_huge((uintptr_t)at, (uintptr_t)at + len, &from_smaps) == 0);
	ht_sys_reset();
	CHECK(from_smaps == kb * 1024);
	munmap(base, len + MIB2);
}

// Where the kernel has no PAGEMAP_SCAN (before 6.7, Debian 12's 6.1), smaps
// alone must do: the read-back counts its first 2 MiB over the whole
// mapping (smaps has one figure per mapping), and code the kernel maps
// from 2 MiB page-cache pages is still kept.
TEST_CASE("without PAGEMAP_SCAN the read-back and the keeping work from smaps", "[pagecache]")
{
	const size_t len = 8 * MIB2;
	std::string path = disk_path("pc-noscan");
	int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0);
	std::vector<char> buf(MIB2);
	for (size_t i = 0; i < len / MIB2; i++) {
		memset(buf.data(), (int)('a' + i), MIB2);
		REQUIRE(write(fd, buf.data(), MIB2) == (ssize_t)MIB2);
	}
	REQUIRE(fsync(fd) == 0);
	REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);

	ht_sys.ioctl = no_scan_ioctl;
	int64_t warmed = ht_sys_read_huge(fd, 0, len, 0);
	CHECK(warmed == (int64_t)len);

	char *base = (char *)mmap(nullptr, len + MIB2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(base != MAP_FAILED);
	char *at = (char *)(((uintptr_t)base + MIB2 - 1) & ~(uintptr_t)(MIB2 - 1));
	REQUIRE(mmap(at, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == at);
	struct ht_seg_plan plan, rest;
	memset(&plan, 0, sizeof(plan));
	plan.span.start = (uintptr_t)at;
	plan.span.end = (uintptr_t)at + len;
	plan.mapped = len;
	plan.file_backed = 1;
	size_t kept = ht_keep_kernel_pages(&plan, &rest);
	ht_sys_reset();
	INFO("smaps: " << file_pmd_kb_in(at, at + len) << " kB FilePmdMapped");
	CHECK(kept == len);
	CHECK(rest.span.start == rest.span.end);
	munmap(base, len + MIB2);
	close(fd);
	unlink(path.c_str());
}

// Pages resident in the page cache among [off, off + len) of fd.
static size_t cached_pages(int fd, off_t off, size_t len)
{
	void *p = mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, off);
	REQUIRE(p != MAP_FAILED);
	std::vector<unsigned char> vec(len / 4096);
	REQUIRE(mincore(p, len, vec.data()) == 0);
	munmap(p, len);
	size_t n = 0;
	for (unsigned char v : vec)
		n += v & 1;
	return n;
}

// The warm's touch of every page (for a hypervisor that maps guest memory
// lazily) covers only what came back in 2 MiB pages: a touch of a page not
// yet cached would read it from the disk in 4 KiB.
TEST_CASE("the read-back touches every page only when all of it is in 2 MiB pages", "[pagecache]")
{
	const size_t len = 2 * MIB2;
	std::string path = disk_path("pc-touch");
	int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0);
	std::vector<char> buf(len, 'c');
	REQUIRE(write(fd, buf.data(), len) == (ssize_t)len);
	REQUIRE(fsync(fd) == 0);

	SECTION("the first 2 MiB cached in 4 KiB pages: nothing more is read")
	{
		REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
		REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);
		for (size_t off = 0; off < MIB2; off += 4096)
			REQUIRE(pread(fd, buf.data(), 4096, (off_t)off) == 4096);
		REQUIRE(cached_pages(fd, (off_t)MIB2, MIB2) == 0);
		CHECK(ht_sys_read_huge(fd, 0, len, 1) == 0);
		CHECK(cached_pages(fd, (off_t)MIB2, MIB2) == 0);
		CHECK(cached_pages(fd, 0, MIB2) == MIB2 / 4096);
	}
	SECTION("nothing cached: all comes back in 2 MiB pages and stays cached")
	{
		REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
		CHECK(ht_sys_read_huge(fd, 0, len, 1) == (int64_t)len);
		CHECK(cached_pages(fd, 0, len) == len / 4096);
	}
	close(fd);
	unlink(path.c_str());
}
