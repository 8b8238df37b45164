// Description: `hugetext status`: smaps text and mount lines to counts (pure,
// fixed text), its three outputs against golden files, and a live process
// moved by the preload listed with its huge pages.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <memory>
#include <vector>

#include "tooltest.hpp"

extern "C" {
#include "ocihook.h"
#include "status.h"
}

namespace {

// One smaps VMA: the header line and the counters that matter here.
std::string vma(const std::string &header, unsigned rss_kb, unsigned anon_huge_kb = 0, unsigned file_pmd_kb = 0,
		unsigned hugetlb_kb = 0, unsigned page_kb = 4, unsigned shmem_pmd_kb = 0)
{
	char b[1024];
	std::snprintf(b, sizeof(b),
		      "%s\nSize:           %8u kB\nKernelPageSize: %8u kB\nMMUPageSize:    %8u kB\n"
		      "Rss:            %8u kB\nAnonymous:      %8u kB\nAnonHugePages:  %8u kB\n"
		      "ShmemPmdMapped: %8u kB\nFilePmdMapped:  %8u kB\nShared_Hugetlb: %8u kB\n"
		      "Private_Hugetlb:       0 kB\nVmFlags: rd ex mr mw me\n",
		      header.c_str(), rss_kb, page_kb, page_kb, rss_kb, anon_huge_kb, anon_huge_kb, shmem_pmd_kb,
		      file_pmd_kb, hugetlb_kb);
	return b;
}

// A process with each kind of huge code, and code that is not huge.
const std::string smaps_mixed =
	vma("555500000000-555500200000 r--p 00000000 08:01 100 /usr/bin/node", 2048) +
	// the program's code: 8 MiB in the page cache's 2 MiB pages, 2 MiB small
	vma("555500200000-555500c00000 r-xp 00200000 08:01 100 /usr/bin/node", 10240, 0, 8192) +
	// a library copied onto THP by the preload (anonymous now)
	vma("7f0000000000-7f0000600000 r-xp 00000000 00:00 0 ", 6144, 6144) +
	// a copy on explicit pages: a hugetlbfs file that is not the cache
	vma("7f1000000000-7f1000400000 r-xp 00000000 00:2d 77 /anon_hugepage (deleted)", 4096, 0, 0, 4096, 2048) +
	// an entry of the shared cache of user 1000
	vma("7f2000000000-7f2000400000 r-xp 00000000 00:2e 12 /dev/hugepages/hugetext-1000/abc123.text", 4096, 0,
	    0, 4096, 2048) +
	// a file of a huge tmpfs
	vma("7f3000000000-7f3000200000 r-xp 00000000 00:30 5 /run/huge/libfoo.so", 2048, 0, 0, 0, 4, 2048) +
	// writable data on THP: not code
	vma("7f4000000000-7f4000400000 rw-p 00000000 00:00 0 ", 4096, 4096) +
	vma("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", 0);

struct status_holder {
	hte_status st{};
	~status_holder() { hte_status_free(&st); }
};

void add_mounts(hte_status &st, const std::string &text)
{
	size_t pos = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		if (nl == std::string::npos)
			nl = text.size();
		hte_huge_mount m;
		if (hte_status_mount_line(text.data() + pos, nl - pos, 2048, &m))
			REQUIRE(hte_status_add_mount(&st, &m) == 0);
		pos = nl + 1;
	}
}

const char *mounts_text = "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
			  "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
			  "none /mnt/huge\\0401g hugetlbfs rw,relatime,pagesize=1024M 0 0\n"
			  "none /mnt/default hugetlbfs rw,relatime 0 0\n"
			  "tmpfs /run/huge tmpfs rw,nosuid,size=1048576k,huge=within_size 0 0\n"
			  "tmpfs /tmp tmpfs rw,nosuid,nodev 0 0\n"
			  "tmpfs /run/never tmpfs rw,huge=never 0 0\n"
			  "/dev/sda1 / ext4 rw,relatime 0 0\n";

std::string to_string(void (*fn)(FILE *, const hte_status *), const hte_status &st)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	REQUIRE(f);
	fn(f, &st);
	fclose(f);
	std::string s(buf, len);
	free(buf);
	return s;
}

// The fixed machine of the golden files.
void fixed_status(hte_status &st)
{
	st.min_code = 2u << 20;
	add_mounts(st, mounts_text);
	hte_proc p{};
	p.pid = 4242;
	std::snprintf(p.program, sizeof(p.program), "/usr/bin/node");
	hte_status_smaps(smaps_mixed.data(), smaps_mixed.size(), &st, &p);
	// As root: 1 MiB of its code on 64 KiB folios; the other's not counted (it exited meanwhile).
	st.folios_visible = 1;
	p.folios_seen = 1;
	p.huge[HTE_HOW_FOLIOS] = 1u << 20;
	REQUIRE(hte_status_add_proc(&st, &p) == 0);
	hte_proc q{};
	q.pid = 77;
	std::snprintf(q.program, sizeof(q.program), "/opt/we\"ird\\name\nx");
	q.code = 3u << 20;
	REQUIRE(hte_status_add_proc(&st, &q) == 0);
	REQUIRE(hte_status_add_unread(&st, 5, EACCES) == 0);
	REQUIRE(hte_status_add_unread(&st, 9, EIO) == 0);
	REQUIRE(hte_status_add_unread(&st, 12, EPERM) == 0);
	st.npools = 2;
	st.pools[0] = { 2048, 64, 60 };
	st.pools[1] = { 1048576, 0, 0 };
	std::snprintf(st.thp_enabled, sizeof(st.thp_enabled), "madvise");
	std::snprintf(st.thp_defrag, sizeof(st.thp_defrag), "madvise");
	std::snprintf(st.thp_shmem, sizeof(st.thp_shmem), "never");
}

} // namespace

TEST_CASE("smaps: each executable mapping's huge bytes count under how they got there", "[status][pure]")
{
	status_holder h;
	add_mounts(h.st, mounts_text);
	hte_proc p{};
	hte_status_smaps(smaps_mixed.data(), smaps_mixed.size(), &h.st, &p);
	CHECK(p.code == (10u + 6 + 4 + 4 + 2) * 1024 * 1024 + 4096);
	CHECK(p.huge[HTE_HOW_PAGE_CACHE] == 8u << 20);
	CHECK(p.huge[HTE_HOW_THP] == 6u << 20);
	CHECK(p.huge[HTE_HOW_HUGETLB] == 4u << 20);
	CHECK(p.huge[HTE_HOW_SHARED_CACHE] == 4u << 20);
	CHECK(p.huge[HTE_HOW_TMPFS] == 2u << 20);
}

TEST_CASE("smaps: the shared cache is a hugetext-UID directory right under a huge mount, or the share dir",
	  "[status][pure]")
{
	status_holder h;
	add_mounts(h.st, mounts_text);
	auto cache_bytes = [&](const std::string &path) {
		std::string s = vma("7f2000000000-7f2000400000 r-xp 00000000 00:2e 12 " + path, 4096, 0, 0, 4096, 2048);
		hte_proc p{};
		hte_status_smaps(s.data(), s.size(), &h.st, &p);
		return p.huge[HTE_HOW_SHARED_CACHE];
	};
	CHECK(cache_bytes("/dev/hugepages/hugetext-0/x.text") == 4u << 20);
	CHECK(cache_bytes("/mnt/huge 1g/hugetext-12/x.text") == 4u << 20); // the mount's \040 decoded
	CHECK(cache_bytes("/run/huge/hugetext-5/x.text") == 4u << 20);
	CHECK(cache_bytes("/dev/hugepages/other/x.text") == 0);
	CHECK(cache_bytes("/dev/hugepages/hugetext-x/x.text") == 0);
	CHECK(cache_bytes("/dev/hugepages/a/hugetext-0/x.text") == 0);
	CHECK(cache_bytes("/tmp/hugetext-0/x.text") == 0); // /tmp is no huge mount
	CHECK(cache_bytes("/srv/cache/x.text") == 0);
	std::snprintf(h.st.share_dir, sizeof(h.st.share_dir), "/srv/cache/");
	CHECK(cache_bytes("/srv/cache/x.text") == 4u << 20);
	CHECK(cache_bytes("/srv/cache/sub/x.text") == 0);
	CHECK(cache_bytes("/srv/cachex/x.text") == 0);
}

TEST_CASE("mount lines: hugetlbfs with its page size, tmpfs only with huge=", "[status][pure]")
{
	status_holder h;
	add_mounts(h.st, mounts_text);
	REQUIRE(h.st.nmounts == 4);
	CHECK(std::string(h.st.mounts[0].path) == "/dev/hugepages");
	CHECK(h.st.mounts[0].page_kb == 2048);
	CHECK(std::string(h.st.mounts[1].path) == "/mnt/huge 1g");
	CHECK(h.st.mounts[1].page_kb == 1048576);
	CHECK(std::string(h.st.mounts[2].path) == "/mnt/default");
	CHECK(h.st.mounts[2].page_kb == 2048);
	CHECK(std::string(h.st.mounts[3].type) == "tmpfs");
	CHECK(std::string(h.st.mounts[3].huge) == "within_size");
	CHECK(h.st.mounts[3].page_kb == 0);
	hte_huge_mount m;
	for (const char *bad : { "", "hugetlbfs", "hugetlbfs /x", "hugetlbfs /x hugetlbfs", "tmpfs /x tmpfs huge=deny 0 0" })
		CHECK(hte_status_mount_line(bad, std::strlen(bad), 2048, &m) == 0);
}

TEST_CASE("/proc/PID/stat: kernel threads are told apart by PF_KTHREAD", "[status][pure]")
{
	auto kthread = [](const std::string &s) { return hte_stat_is_kthread(s.data(), s.size()); };
	CHECK(kthread("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0"));
	CHECK(!kthread("4242 (node) S 1 4242 4242 0 -1 4194560 12 0 0 0 1 2 0 0 20 0 11 0"));
	// A name with spaces and parentheses cannot shift the fields.
	CHECK(!kthread("77 (a) b) S 1 2 3 4 5 2129984 0 0) S 1 77 77 0 -1 4194304 0"));
	CHECK(kthread("78 (x (y)) I 2 0 0 0 -1 69238880 0 0"));
	CHECK(!kthread(""));
	CHECK(!kthread("1 (init"));
	CHECK(!kthread("1 (init) S 0 1 1 0 -1"));
}

namespace {

const uint64_t present = 1ull << 63, exclusive = 1ull << 56, soft_dirty = 1ull << 55;
const uint64_t kpf_anon = 1ull << 12, kpf_head = 1ull << 15, kpf_tail = 1ull << 16, kpf_huge = 1ull << 17,
	       kpf_thp = 1ull << 22;

// The 16 pagemap entries of a piece on frames @pfn, @pfn + 1, ...
std::vector<uint64_t> piece_entries(uint64_t pfn)
{
	std::vector<uint64_t> pm;
	for (uint64_t i = 0; i < HTE_PIECE_PAGES; i++)
		pm.push_back(present | exclusive | soft_dirty | (pfn + i));
	return pm;
}

// A block's kpageflags with one folio of @pages frames from @at (@extra on each), 4 KiB pages around it.
std::vector<uint64_t> block_with(size_t at, size_t pages, uint64_t extra = kpf_thp | kpf_anon)
{
	std::vector<uint64_t> fl(HTE_BLOCK_PAGES, kpf_anon);
	for (size_t i = 0; i < pages && at + i < fl.size(); i++)
		fl[at + i] = extra | (i ? kpf_tail : kpf_head);
	return fl;
}

int in_folio(const std::vector<uint64_t> &fl, uint64_t block, uint64_t pfn)
{
	return hte_piece_in_folio(fl.data(), fl.size(), block, pfn);
}

} // namespace

TEST_CASE("pagemap: a piece is 16 present pages on consecutive frames from a 16-aligned one", "[status][pure]")
{
	std::vector<uint64_t> pm = piece_entries(0x12340);
	CHECK(hte_piece_frame(pm.data()) == 0x12340);
	pm = piece_entries(0x12348); // consecutive, but no folio of 64 KiB starts there
	CHECK(hte_piece_frame(pm.data()) == 0);
	pm = piece_entries(0x12340);
	pm[7] = 0; // a page not present
	CHECK(hte_piece_frame(pm.data()) == 0);
	pm = piece_entries(0x12340);
	pm[15] = present | 0x99999; // a frame elsewhere
	CHECK(hte_piece_frame(pm.data()) == 0);
	pm = piece_entries(0x12340);
	pm[3] = 1ull << 62 | 0x55; // swapped out: no frame
	CHECK(hte_piece_frame(pm.data()) == 0);
	// Without privileges the kernel shows present pages on frame 0.
	std::vector<uint64_t> hidden(HTE_PIECE_PAGES, present | exclusive);
	CHECK(hte_piece_frame(hidden.data()) == HTE_FRAMES_HIDDEN);
	hidden[0] = 0;
	CHECK(hte_piece_frame(hidden.data()) == HTE_FRAMES_HIDDEN);
}

TEST_CASE("kpageflags: a piece counts inside one large folio of 64 KiB to 1 MiB, not in a PMD page",
	  "[status][pure]")
{
	const uint64_t block = 0x40000; // 512-aligned
	// 64 KiB folios side by side: each piece is one.
	std::vector<uint64_t> fl(HTE_BLOCK_PAGES);
	for (size_t i = 0; i < fl.size(); i++)
		fl[i] = kpf_thp | kpf_anon | (i % 16 ? kpf_tail : kpf_head);
	CHECK(in_folio(fl, block, block) == 1);
	CHECK(in_folio(fl, block, block + 496) == 1);
	// A 256 KiB folio at frame 64: its four pieces count, those around it do not.
	fl = block_with(64, 64);
	for (uint64_t at : { 64, 80, 96, 112 })
		CHECK(in_folio(fl, block, block + at) == 1);
	CHECK(in_folio(fl, block, block + 48) == 0);
	CHECK(in_folio(fl, block, block + 128) == 0);
	// A 1 MiB folio counts; a 2 MiB one is a PMD page (smaps counts it when mapped so).
	CHECK(in_folio(block_with(256, 256), block, block + 496) == 1);
	CHECK(in_folio(block_with(0, 512), block, block) == 0);
	CHECK(in_folio(block_with(0, 512), block, block + 256) == 0);
	// A folio that starts before the block (its first frame a tail) is 2 MiB or more.
	fl = block_with(0, 512);
	fl[0] = kpf_thp | kpf_anon | kpf_tail;
	CHECK(in_folio(fl, block, block + 16) == 0);
	// Page-cache folios count as anonymous ones do; hugetlb pages (smaps' count) and compound pages
	// that are no THP (a driver's) do not.
	CHECK(in_folio(block_with(32, 16, kpf_thp), block, block + 32) == 1);
	CHECK(in_folio(block_with(32, 16, kpf_thp | kpf_huge), block, block + 32) == 0);
	CHECK(in_folio(block_with(32, 16, kpf_anon), block, block + 32) == 0);
	// 32 KiB folios are smaller than a piece.
	fl = block_with(32, 8);
	for (size_t i = 40; i < 48; i++)
		fl[i] = kpf_thp | kpf_anon | (i == 40 ? kpf_head : kpf_tail);
	CHECK(in_folio(fl, block, block + 32) == 0);
	// 4 KiB pages.
	CHECK(in_folio(block_with(0, 0), block, block + 32) == 0);
	// Flags read while the folio changed: 24 frames, or 32 from a frame not aligned to 32.
	CHECK(in_folio(block_with(32, 24), block, block + 32) == 0);
	CHECK(in_folio(block_with(16, 32), block, block + 32) == 0);
	// Frames outside the block, or past the end of memory.
	fl = block_with(0, 16);
	CHECK(in_folio(fl, block, block - 16) == 0);
	CHECK(in_folio(fl, block, block + 512) == 0);
	CHECK(hte_piece_in_folio(fl.data(), 8, block, block) == 0);
	CHECK(hte_piece_in_folio(fl.data(), 16, block, block) == 1);
}

TEST_CASE("folios: shown as root, left out where not counted, and the table says why", "[status][pure]")
{
	status_holder h;
	h.st.min_code = 2u << 20;
	hte_proc p{};
	p.pid = 10;
	std::snprintf(p.program, sizeof(p.program), "/usr/bin/x");
	p.code = 40u << 20;
	p.huge[HTE_HOW_FOLIOS] = 38u << 20;
	p.folios_seen = 1;
	REQUIRE(hte_status_add_proc(&h.st, &p) == 0);
	h.st.folios_visible = 1;
	std::string t = to_string(hte_status_text, h.st);
	CHECK(t.find("  38.0 MiB  /usr/bin/x  [folios 38.0 MiB]\n") != std::string::npos);
	CHECK(t.find("not counted") == std::string::npos);
	std::string j = to_string(hte_status_json, h.st);
	CHECK(j.find("\"huge_bytes\": 39845888, ") != std::string::npos);
	CHECK(j.find(", \"folios\": 39845888}}") != std::string::npos);
	CHECK(to_string(hte_status_prometheus, h.st).find("how=\"folios\"} 39845888\n") != std::string::npos);

	// Not root: nothing counted, nothing shown as 0, and the table says so once.
	h.st.folios_visible = 0;
	h.st.procs[0].folios_seen = 0;
	h.st.procs[0].huge[HTE_HOW_FOLIOS] = 0;
	t = to_string(hte_status_text, h.st);
	CHECK(t.find("[folios") == std::string::npos);
	CHECK(t.find("Code on 64 KiB folios: not counted (needs root with CAP_SYS_ADMIN") != std::string::npos);
	j = to_string(hte_status_json, h.st);
	CHECK(j.find("\"folios\"") == std::string::npos);
	CHECK(j.find("\"tmpfs\": 0}}") != std::string::npos);
	CHECK(to_string(hte_status_prometheus, h.st).find("folios") == std::string::npos);
}

TEST_CASE("the text, JSON and Prometheus outputs match their golden files", "[status][golden]")
{
	status_holder h;
	fixed_status(h.st);
	CHECK(golden_diff("status.txt", to_string(hte_status_text, h.st)) == "");
	CHECK(golden_diff("status.json", to_string(hte_status_json, h.st)) == "");
	CHECK(golden_diff("status.prom", to_string(hte_status_prometheus, h.st)) == "");
}

TEST_CASE("an empty machine still gives well-formed outputs", "[status][golden]")
{
	status_holder h;
	h.st.min_code = 2u << 20;
	std::string j = to_string(hte_status_json, h.st);
	CHECK(j == "{\n  \"min_code\": 2097152,\n  \"processes\": [],\n  \"unreadable\": [],\n  \"pools\": [],\n"
		   "  \"mounts\": [],\n  \"thp\": {\"enabled\": \"\", \"defrag\": \"\", \"shmem_enabled\": \"\"}\n}\n");
	std::string t = to_string(hte_status_text, h.st);
	CHECK(t.find("Processes with at least 2.0 MiB of code: 0\n") == 0);
	std::string p = to_string(hte_status_prometheus, h.st);
	CHECK(p.find("# TYPE hugetext_pool_pages gauge\n") != std::string::npos);
}

TEST_CASE("the set-up's tmpfs cache is shown with its size, use and entries only when mounted", "[status][pure]")
{
	status_holder h;
	h.st.min_code = 2u << 20;
	CHECK(to_string(hte_status_text, h.st).find("Shared text cache") == std::string::npos);
	CHECK(to_string(hte_status_json, h.st).find("text_cache") == std::string::npos);
	h.st.text_cache = { 1, 1ull << 30, 40ull << 20, 2, 38ull << 20, 1, 1, 26ull << 20 };
	std::string t = to_string(hte_status_text, h.st);
	CHECK(t.find("Shared text cache: /run/hugetext/text  40.0 MiB used of 1.0 GiB, 2 entries (38.0 MiB), 1 user; "
		     "the text service's: 1 entry (26.0 MiB), for every user\n") != std::string::npos);
	std::string j = to_string(hte_status_json, h.st);
	CHECK(j.find(",\n  \"text_cache\": {\"path\": \"/run/hugetext/text\", \"size\": 1073741824, \"used\": 41943040, "
		     "\"entries\": 2, \"entry_bytes\": 39845888, \"users\": 1, \"service_entries\": 1, "
		     "\"service_bytes\": 27262976}\n") != std::string::npos);
}

TEST_CASE("the text service's state file is shown: counts, its lists, whether it runs", "[status][pure]")
{
	status_holder h;
	h.st.min_code = 2u << 20;
	CHECK(to_string(hte_status_text, h.st).find("Text service: not running") != std::string::npos);
	CHECK(to_string(hte_status_json, h.st).find("\"service\"") == std::string::npos);
	const char state[] = "{\"pid\":42,\"offers\":3,\"warmed_total\":1,\"warmed\":[\"/usr/bin/x: 24 MiB in 2 MiB "
			     "page-cache pages (uid 0)\"],\"filled_total\":1,\"filled\":[\"/usr/lib/y.so: b-1.text "
			     "(\\\"quoted\\\", uid 1000)\"],\"evicted_total\":0,\"evicted\":[],\"refused_total\":1,"
			     "\"refused\":[\"the file does not belong to root (uid 1000, pid 7)\"]}";
	h.st.service.present = 1;
	h.st.service.running = 1;
	std::snprintf(h.st.service.raw, sizeof(h.st.service.raw), "%s", state);
	std::string t = to_string(hte_status_text, h.st);
	CHECK(t.find("Text service: pid 42, 3 offers, 1 warmed, 1 filled, 0 evicted, 1 refused") != std::string::npos);
	CHECK(t.find("  warmed: /usr/bin/x: 24 MiB in 2 MiB page-cache pages (uid 0)\n") != std::string::npos);
	CHECK(t.find("  filled: /usr/lib/y.so: b-1.text (\"quoted\", uid 1000)\n") != std::string::npos);
	CHECK(t.find("  refused: the file does not belong to root (uid 1000, pid 7)\n") != std::string::npos);
	CHECK(t.find("waiting to be warmed again") == std::string::npos);
	std::string j = to_string(hte_status_json, h.st);
	CHECK(j.find(std::string("\"service\": {\"running\": true, \"state\": ") + state + "}") != std::string::npos);
	// Files the service tries again are counted.
	std::snprintf(h.st.service.raw, sizeof(h.st.service.raw), "{\"pid\":42,\"offers\":3,\"pending\":2,\"warms\":9}");
	t = to_string(hte_status_text, h.st);
	CHECK(t.find("  2 file(s) waiting to be warmed again (9 warms so far)\n") != std::string::npos);
	std::snprintf(h.st.service.raw, sizeof(h.st.service.raw), "%s", state);

	char item[64];
	CHECK(hte_json_list_item(state, "warmed", 1, item, sizeof(item)) == -1);
	CHECK(hte_json_list_item(state, "evicted", 0, item, sizeof(item)) == -1);
	CHECK(hte_json_list_item(state, "nothing", 0, item, sizeof(item)) == -1);
	CHECK(hte_json_number(state, "offers") == 3);
	CHECK(hte_json_number(state, "nothing") == -1);
}

TEST_CASE("containers: processes grouped by mount namespace, what each asked and got, shared or copied",
	  "[status][pure][containers]")
{
	status_holder h;
	h.st.min_code = 2u << 20;
	std::snprintf(h.st.records, sizeof(h.st.records), "/run/hugetext/containers");
	// Two processes of one container (one of them with the preload), one of another, one of the host.
	const std::string preload_map = vma("7f5000000000-7f5000020000 r-xp 00000000 00:50 9 "
					    "/run/hugetext/libhugetext-preload.so", 64);
	const std::string node_paged = vma("555500200000-555501a00000 r-xp 00200000 00:44 100 /usr/bin/node", 24576, 0,
					   24576) + preload_map;
	const std::string node_copied = vma("7f0000000000-7f0000600000 r-xp 00000000 00:00 0 ", 6144, 6144);
	struct { long pid; unsigned long long ns; const std::string *smaps; } procs[] = {
		{ 100, 4026532250ull, &node_paged }, { 101, 4026532250ull, &node_copied },
		{ 200, 4026532999ull, &node_paged }, { 300, 4026531840ull, &node_paged },
	};
	for (auto &x : procs) {
		hte_proc p{};
		p.pid = x.pid;
		std::snprintf(p.program, sizeof(p.program), "/usr/bin/node");
		hte_status_smaps(x.smaps->data(), x.smaps->size(), &h.st, &p);
		p.mntns = x.ns;
		REQUIRE(hte_status_add_proc(&h.st, &p) == 0);
	}
	CHECK(h.st.procs[0].preload == 1);
	CHECK(h.st.procs[1].preload == 0);
	auto rec = std::make_unique<hte_oci_record>();
	std::snprintf(rec->id, sizeof(rec->id), "aaaaaaaaaaaabbbbbbbb");
	rec->mntns = 4026532250ull;
	rec->injected = 1;
	rec->has_annotation = 1;
	std::snprintf(rec->annotation, sizeof(rec->annotation), "1");
	std::snprintf(rec->policy, sizeof(rec->policy), "annotated");
	std::snprintf(rec->reason, sizeof(rec->reason), "injected (glibc 2.36): the preload");
	rec->has_glibc = 1;
	std::snprintf(rec->glibc, sizeof(rec->glibc), "2.36");
	REQUIRE(hte_status_add_container(&h.st, rec.get(), 1) == 0);
	std::snprintf(rec->id, sizeof(rec->id), "cccccccccccc");
	rec->injected = 0;
	rec->has_annotation = 0;
	std::snprintf(rec->policy, sizeof(rec->policy), "all");
	std::snprintf(rec->reason, sizeof(rec->reason), "not injected: /etc/ld.so.preload is a symbolic link: refused");
	rec->has_glibc = 0;
	REQUIRE(hte_status_add_container(&h.st, rec.get(), 1) == 0);
	// A gone container whose namespace number the host's process now has: not its.
	std::snprintf(rec->id, sizeof(rec->id), "dddddddddddd");
	rec->mntns = 4026531840ull;
	REQUIRE(hte_status_add_container(&h.st, rec.get(), 0) == 0);
	hte_status_group(&h.st);
	CHECK(h.st.procs[0].container == 1);
	CHECK(h.st.procs[1].container == 1);
	CHECK(h.st.procs[2].container == 0); // namespace 4026532999: no record
	CHECK(h.st.procs[3].container == 0);
	const hte_container &c = h.st.ctrs[0];
	CHECK(c.nprocs == 2);
	CHECK(c.npreload == 1);
	CHECK(hte_container_shared(&c) == 24ull << 20);
	CHECK(hte_container_copied(&c) == 6ull << 20);
	CHECK(h.st.ctrs[1].nprocs == 0);

	std::string t = to_string(hte_status_text, h.st);
	INFO(t);
	CHECK(t.find("       100    24.1 MiB    24.0 MiB  /usr/bin/node  [page_cache 24.0 MiB]  (container aaaaaaaaaaaa)\n") !=
	      std::string::npos);
	CHECK(t.find("Containers the OCI hook looked at (/run/hugetext/containers): 3\n"
		     "  aaaaaaaaaaaa  running, asked by io.hugetext/enable=1: injected (glibc 2.36): the preload\n"
		     "      2 processes listed (1 with the preload): 30.1 MiB of code, 30.0 MiB on huge pages, 24.0 MiB "
		     "shared, 6.0 MiB copied  [thp 6.0 MiB, page_cache 24.0 MiB]\n"
		     "  cccccccccccc  running, asked by containers = all: not injected: /etc/ld.so.preload is a symbolic "
		     "link: refused\n"
		     "      0 processes listed (0 with the preload): 0 B of code, 0 B on huge pages, 0 B shared, 0 B copied\n"
		     "  dddddddddddd  gone, asked by containers = all: not injected") != std::string::npos);
	std::string j = to_string(hte_status_json, h.st);
	INFO(j);
	CHECK(j.find("\"huge\": {\"thp\": 0, \"hugetlb\": 0, \"page_cache\": 25165824, \"shared_cache\": 0, \"tmpfs\": 0}, "
		     "\"container\": \"aaaaaaaaaaaabbbbbbbb\"}") != std::string::npos);
	CHECK(j.find("\"processes\": [100, 101], \"preload_processes\": 1, \"code_bytes\": 31588352, \"huge_bytes\": "
		     "31457280, \"shared_bytes\": 25165824, \"copied_bytes\": 6291456") != std::string::npos);
	CHECK(j.find("{\"id\": \"cccccccccccc\", \"running\": true") != std::string::npos);
	CHECK(j.find("\"annotation\": null, \"policy\": \"all\", \"injected\": false") != std::string::npos);
	std::string p = to_string(hte_status_prometheus, h.st);
	CHECK(p.find("hugetext_container_injected{id=\"aaaaaaaaaaaabbbbbbbb\"} 1\n") != std::string::npos);
	CHECK(p.find("hugetext_container_injected{id=\"cccccccccccc\"} 0\n") != std::string::npos);
	CHECK(p.find("dddddddddddd") == std::string::npos); // gone: no metric
	CHECK(p.find("hugetext_container_huge_bytes{id=\"aaaaaaaaaaaabbbbbbbb\",how=\"page_cache\"} 25165824\n") !=
	      std::string::npos);
	// Not root: the records directory is root's.
	status_holder u;
	u.st.records_unread = 1;
	std::snprintf(u.st.records, sizeof(u.st.records), "/run/hugetext/containers");
	CHECK(to_string(hte_status_text, u.st).find("Containers: the OCI hook's records (/run/hugetext/containers) are "
						    "root's to read\n") != std::string::npos);
}

TEST_CASE("status's usage errors exit 2", "[status][cli]")
{
	run_result r = tool({ "status", "--min-code", "lots" });
	CHECK(r.status == 2);
	CHECK(r.err.find("--min-code 'lots': not a size") != std::string::npos);
	r = tool({ "status", "--json", "--prometheus" });
	CHECK(r.status == 2);
	r = tool({ "status", "extra" });
	CHECK(r.status == 2);
	r = tool({ "status", "--help" });
	CHECK(r.status == 0);
	CHECK(r.out.find("usage: hugetext status") == 0);
}

TEST_CASE("a process moved by the preload is listed with its huge pages", "[status][live]")
{
	std::string prog = real_path(build_path("tests/tools/tools-waiter"));
	std::string report = temp_path("status-waiter.json");
	child w({ tool_path(), "run", "--mode", "thp", "--report", report, "--", prog });
	REQUIRE(w.read_line().compare(0, 5, "ready") == 0);
	std::string pid = std::to_string(w.pid);

	run_result j = tool({ "status", "--json", "--min-code", "4M" });
	run_result p = tool({ "status", "--prometheus", "--min-code", "4M" });
	run_result t = tool({ "status" });
	CHECK(w.finish() == 0);
	std::string moved;
	for (auto &l : read_report(report))
		if (l["object"] == prog)
			moved = l["status"];
	unlink(report.c_str());

	REQUIRE(j.status == 0);
	size_t at = j.out.find("{\"pid\": " + pid + ", \"program\": \"" + prog + "\"");
	REQUIRE(at != std::string::npos);
	std::string line = j.out.substr(at, j.out.find('\n', at) - at);
	INFO(line);
	auto number = [&](const std::string &key) {
		size_t k = line.find("\"" + key + "\": ");
		REQUIRE(k != std::string::npos);
		return std::stoull(line.substr(k + key.size() + 4));
	};
	CHECK(number("code_bytes") >= 8u << 20);
	if (thp_enabled() && moved == "ok") {
		CHECK(number("huge_bytes") >= 2u << 20);
		CHECK(number("thp") >= 2u << 20);
	} else {
		WARN("the preload did not move the waiter (THP off or no room): huge bytes not checked");
	}
	CHECK(j.out.find("\"unreadable\": [") != std::string::npos);

	REQUIRE(p.status == 0);
	CHECK(p.out.find("hugetext_process_code_bytes{pid=\"" + pid + "\",program=\"" + prog + "\"} ") !=
	      std::string::npos);
	CHECK(p.out.find("hugetext_process_huge_bytes{pid=\"" + pid + "\",program=\"" + prog + "\",how=\"thp\"} ") !=
	      std::string::npos);
	CHECK(t.status == 0);
	CHECK(t.out.find("Huge page pools:\n") != std::string::npos);
}

TEST_CASE("other users' processes are counted as not read when we may not read them", "[status][live]")
{
	if (geteuid() == 0) {
		// As root every process is readable; ask as nobody instead, when we can.
		if (!have_program("setpriv")) {
			WARN("no setpriv: cannot run status as another user");
			return;
		}
		run_result r = run_cmd({ "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", tool_path(),
					 "status", "--json" });
		REQUIRE(r.status == 0);
		// pid 1 is root's: nobody cannot read its smaps.
		CHECK(r.out.find("{\"pid\": 1, \"reason\": \"permission denied\"}") != std::string::npos);
		return;
	}
	run_result r = tool({ "status", "--json" });
	REQUIRE(r.status == 0);
	CHECK(r.out.find("{\"pid\": 1, \"reason\": \"permission denied\"}") != std::string::npos);
}

TEST_CASE("terabytes of executable mappings cost root's status no more than some gigabytes' worth", "[status][live]")
{
	// Any user may map a small file executable over terabytes of address
	// space; a scan of all of it read 16 GiB of pagemap per 8 TiB (33 s
	// for 64 TiB).  Twelve of 8 TiB, each with its first page present.
	std::string file = temp_path("status-tiny");
	int fd = open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, "\xc3", 1) == 1); // ret
	int ready[2];
	REQUIRE(pipe(ready) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int n = 0;
		for (int i = 0; i < 12; i++) {
			void *p = mmap(nullptr, 8ULL << 40, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
			if (p != MAP_FAILED)
				n += *(volatile char *)p == '\xc3';
		}
		if (write(ready[1], &n, sizeof(n)) != sizeof(n))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fd);
	close(ready[1]);
	int mapped = 0;
	REQUIRE(read(ready[0], &mapped, sizeof(mapped)) == sizeof(mapped));
	close(ready[0]);
	CHECK(mapped >= 8);
	run_result r = run_cmd({ "timeout", "25", tool_path(), "status", "--json" });
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, 0);
	unlink(file.c_str());
	CHECK(r.status == 0); // 124: still scanning after 25 s
	CHECK(r.out.find("{\"pid\": " + std::to_string(pid) + ", ") != std::string::npos);
}
