// Description: `hugetext doctor`'s checks on fixed inputs: THP strings,
// kernel versions and file systems (the page cache's 2 MiB folios),
// mountinfo lines, guest and iTLB multihit, /etc/ld.so.preload, the policy
// file, /run's trust, the text service's state file, the shared cache,
// smaps counted per object and each object's verdict; the text and JSON
// outputs against golden files.  No process started, nothing read.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>

#include <json-c/json.h>

#include "tooltest.hpp"

extern "C" {
#include "calibrate.h"
#include "conf.h"
#include "doctor.h"
}

namespace {

struct doc {
	hte_doctor d;
	doc() { hte_doc_init(&d); }
	~doc() { hte_doc_free(&d); }
	doc(const doc &) = delete;
	doc &operator=(const doc &) = delete;
	// The one line with @id; fails the test when there is not exactly one.
	const hte_doc_line &line(const std::string &id) const
	{
		const hte_doc_line *found = nullptr;
		int n = 0;
		for (size_t i = 0; i < d.nlines; i++)
			if (id == d.lines[i].id)
				found = &d.lines[i], n++;
		INFO("line " << id);
		REQUIRE(n == 1);
		return *found;
	}
	bool has(const std::string &id) const
	{
		for (size_t i = 0; i < d.nlines; i++)
			if (id == d.lines[i].id)
				return true;
		return false;
	}
};

bool contains(const char *s, const std::string &what)
{
	return std::string(s).find(what) != std::string::npos;
}

hte_doc_thp thp(const char *enabled, long pool_free = 0)
{
	hte_doc_thp t{};
	t.enabled = enabled;
	t.defrag = "always defer defer+madvise [madvise] never";
	t.shmem = "always within_size advise [never] deny force";
	t.pmd_enabled = "always [inherit] madvise never";
	t.khugepaged_defrag = "1";
	t.khugepaged_sleep_ms = "10000";
	t.pool_free = pool_free;
	return t;
}

std::string text_of(const hte_doctor &d, const hte_doc_env &e, bool json)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	REQUIRE(f);
	if (json)
		hte_doc_json(f, &d, &e);
	else
		hte_doc_text(f, &d, &e);
	fclose(f);
	std::string s(buf, len);
	free(buf);
	return s;
}

} // namespace

TEST_CASE("kernel releases give their major and minor version", "[doctor]")
{
	int a = 0, b = 0;
	CHECK(hte_doc_kernel_version("6.18.44-fc-v1098", &a, &b) == 0);
	CHECK((a == 6 && b == 18));
	CHECK(hte_doc_kernel_version("6.1.0-56-amd64", &a, &b) == 0);
	CHECK((a == 6 && b == 1));
	CHECK(hte_doc_kernel_version("5.15", &a, &b) == 0);
	CHECK((a == 5 && b == 15));
	CHECK(hte_doc_kernel_version("", &a, &b) == -1);
	CHECK(hte_doc_kernel_version("6", &a, &b) == -1);
	CHECK(hte_doc_kernel_version("x.1", &a, &b) == -1);
	CHECK(hte_doc_kernel_version("6.x", &a, &b) == -1);
	CHECK(hte_doc_kernel_version(nullptr, &a, &b) == -1);
}

TEST_CASE("THP: madvise and always work, never blocks unless the pool has room", "[doctor]")
{
	{
		doc d;
		hte_doc_thp t = thp("always [madvise] never");
		hte_doc_thp_check(&d.d, &t);
		CHECK(d.line("thp").level == HTE_DOC_OK);
		CHECK(std::string(d.line("thp").value) == "madvise");
		CHECK(d.line("thp_defrag").level == HTE_DOC_OK);
		CHECK(d.line("thp_shmem").level == HTE_DOC_OK);
		CHECK(hte_doc_exit(&d.d) == 0);
	}
	{
		doc d;
		hte_doc_thp t = thp("[always] madvise never");
		hte_doc_thp_check(&d.d, &t);
		CHECK(d.line("thp").level == HTE_DOC_OK);
		CHECK(std::string(d.line("thp").value) == "always");
	}
	{
		doc d;
		hte_doc_thp t = thp("always madvise [never]");
		hte_doc_thp_check(&d.d, &t);
		CHECK(d.line("thp").level == HTE_DOC_BLOCK);
		CHECK(contains(d.line("thp").fix, "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"));
		CHECK(hte_doc_exit(&d.d) == 1);
	}
	{
		// Explicit pages still take copies: a warning, not a block.
		doc d;
		hte_doc_thp t = thp("always madvise [never]", 20);
		hte_doc_thp_check(&d.d, &t);
		CHECK(d.line("thp").level == HTE_DOC_WARN);
		CHECK(hte_doc_exit(&d.d) == 0);
	}
	{
		// The 2 MiB size switched off alone (6.8+) is the same veto the library keeps.
		doc d;
		hte_doc_thp t = thp("always [madvise] never");
		t.pmd_enabled = "always inherit madvise [never]";
		hte_doc_thp_check(&d.d, &t);
		CHECK(d.line("thp").level == HTE_DOC_BLOCK);
		CHECK(contains(d.line("thp").fix, "hugepages-2048kB/enabled"));
	}
	{
		// A kernel without THP at all.
		doc d;
		hte_doc_thp t = thp(nullptr);
		t.defrag = t.shmem = t.pmd_enabled = nullptr;
		hte_doc_thp_check(&d.d, &t);
		CHECK(d.line("thp").level == HTE_DOC_BLOCK);
		CHECK_FALSE(d.has("thp_defrag"));
	}
	{
		doc d;
		hte_doc_thp t = thp("always [madvise] never");
		t.defrag = "[always] defer defer+madvise madvise never";
		t.shmem = "always within_size advise never [deny] force";
		hte_doc_thp_check(&d.d, &t);
		CHECK(d.line("thp_defrag").level == HTE_DOC_NOTE);
		CHECK(d.line("thp_shmem").level == HTE_DOC_WARN);
		CHECK(contains(d.line("thp_shmem").fix, "shmem_enabled"));
	}
}

TEST_CASE("the page cache's 2 MiB folios: ext4 from 6.16, XFS from 5.18, tmpfs by huge=, seen wins", "[doctor]")
{
	char how[200];
	CHECK(hte_doc_fs_folios("ext4", "rw,relatime", 6, 18, 0, how, sizeof(how)) == 1);
	CHECK(contains(how, "6.16"));
	CHECK(contains(how, "6.18"));
	CHECK(hte_doc_fs_folios("ext4", "rw", 6, 16, 0, how, sizeof(how)) == 1);
	CHECK(hte_doc_fs_folios("ext4", "rw", 6, 12, 0, how, sizeof(how)) == 0);
	CHECK(hte_doc_fs_folios("ext4", "rw", 6, 1, 0, how, sizeof(how)) == 0);
	CHECK(hte_doc_fs_folios("xfs", "rw", 6, 1, 0, how, sizeof(how)) == 1);
	CHECK(hte_doc_fs_folios("xfs", "rw", 5, 15, 0, how, sizeof(how)) == 0);
	CHECK(hte_doc_fs_folios("btrfs", "rw", 6, 18, 0, how, sizeof(how)) == 0);
	CHECK(contains(how, "ext4 and XFS only"));
	CHECK(hte_doc_fs_folios("overlay", "rw,lowerdir=/a,upperdir=/b", 6, 18, 0, how, sizeof(how)) == 0);
	CHECK(contains(how, "off the 2 MiB grid"));
	CHECK(hte_doc_fs_folios("tmpfs", "rw,size=1g,huge=within_size", 6, 1, 0, how, sizeof(how)) == 1);
	CHECK(hte_doc_fs_folios("tmpfs", "rw,huge=always", 6, 1, 0, how, sizeof(how)) == 1);
	CHECK(hte_doc_fs_folios("tmpfs", "rw,huge=advise", 6, 1, 0, how, sizeof(how)) == 0);
	CHECK(hte_doc_fs_folios("tmpfs", "rw,nosuid", 6, 1, 0, how, sizeof(how)) == 0);
	// What the kernel maps huge right now decides, whatever the version says.
	CHECK(hte_doc_fs_folios("ext4", "rw", 6, 1, 4u << 20, how, sizeof(how)) == 1);
	CHECK(contains(how, "seen: 4 MiB"));
}

TEST_CASE("a file system without folios warns unless the shared cache serves", "[doctor]")
{
	hte_doc_fs fs{};
	std::snprintf(fs.mnt, sizeof(fs.mnt), "/");
	std::snprintf(fs.type, sizeof(fs.type), "ext4");
	fs.code = 96u << 20;
	{
		doc d;
		hte_doc_fs_check(&d.d, &fs, 6, 12, 0);
		CHECK(d.line("fs").level == HTE_DOC_WARN);
		CHECK(contains(d.line("fs").fix, "text_cache_size"));
		CHECK(contains(d.line("fs").text, "96.0 MiB"));
		CHECK(std::string(d.line("fs").value) == "ext4 /");
	}
	{
		doc d;
		hte_doc_fs_check(&d.d, &fs, 6, 12, 1);
		CHECK(d.line("fs").level == HTE_DOC_NOTE);
	}
	{
		doc d;
		hte_doc_fs_check(&d.d, &fs, 6, 18, 0);
		CHECK(d.line("fs").level == HTE_DOC_OK);
	}
}

TEST_CASE("mountinfo lines: device, mount point, type and options", "[doctor]")
{
	unsigned ma = 0, mi = 0;
	char mnt[256], type[32], opts[256];
	std::string l = "29 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro";
	REQUIRE(hte_doc_mountinfo_line(l.data(), l.size(), &ma, &mi, mnt, sizeof(mnt), type, sizeof(type), opts,
				       sizeof(opts)) == 0);
	CHECK((ma == 254 && mi == 1));
	CHECK(std::string(mnt) == "/");
	CHECK(std::string(type) == "ext4");
	CHECK(std::string(opts) == "rw,errors=remount-ro");
	// No optional fields, an escaped space in the mount point.
	l = "40 29 0:35 / /mnt/my\\040disk rw - xfs /dev/sdb rw,attr2";
	REQUIRE(hte_doc_mountinfo_line(l.data(), l.size(), &ma, &mi, mnt, sizeof(mnt), type, sizeof(type), opts,
				       sizeof(opts)) == 0);
	CHECK(std::string(mnt) == "/mnt/my disk");
	CHECK(std::string(type) == "xfs");
	CHECK((ma == 0 && mi == 35));
	// Several optional fields.
	l = "50 29 0:40 / /run/x rw shared:3 master:2 propagate_from:1 - tmpfs t rw,huge=within_size";
	REQUIRE(hte_doc_mountinfo_line(l.data(), l.size(), &ma, &mi, mnt, sizeof(mnt), type, sizeof(type), opts,
				       sizeof(opts)) == 0);
	CHECK(std::string(opts) == "rw,huge=within_size");
	for (std::string bad : { "", "29 1 254:1 / / rw shared:1 ext4 /dev/vda1 rw", "29 1 x:y / / rw - ext4 a b",
				 "29 1 254:1 / / rw -", "29 1 254:1 / / rw - ext4" }) {
		INFO(bad);
		CHECK(hte_doc_mountinfo_line(bad.data(), bad.size(), &ma, &mi, mnt, sizeof(mnt), type, sizeof(type),
					     opts, sizeof(opts)) == -1);
	}
}

TEST_CASE("guests are told by CPUID, /sys/hypervisor or DMI, and how is said", "[doctor]")
{
	char how[300];
	hte_doc_guest g{};
	g.cpuid_hv = 1;
	g.hv_id = "KVMKVMKVM";
	CHECK(hte_doc_is_guest(&g, how, sizeof(how)) == 1);
	CHECK(contains(how, "KVMKVMKVM"));
	CHECK(contains(how, "no DMI"));
	g = {};
	g.cpuid_hv = 0;
	g.dmi_vendor = "QEMU";
	g.dmi_product = "Standard PC (Q35 + ICH9, 2009)";
	CHECK(hte_doc_is_guest(&g, how, sizeof(how)) == 1);
	CHECK(contains(how, "DMI: QEMU"));
	g.dmi_vendor = "Amazon EC2";
	g.dmi_product = "m7i.large";
	CHECK(hte_doc_is_guest(&g, how, sizeof(how)) == 1);
	g = {};
	g.cpuid_hv = 0;
	g.sys_hypervisor = "xen";
	CHECK(hte_doc_is_guest(&g, how, sizeof(how)) == 1);
	CHECK(contains(how, "/sys/hypervisor: xen"));
	g = {};
	g.cpuid_hv = 0;
	g.dmi_vendor = "Dell Inc.";
	g.dmi_product = "PowerEdge R650";
	CHECK(hte_doc_is_guest(&g, how, sizeof(how)) == 0);
	g = {};
	g.cpuid_hv = -1;
	CHECK(hte_doc_is_guest(&g, how, sizeof(how)) == -1);
	doc d;
	g = {};
	g.cpuid_hv = 1;
	hte_doc_guest_check(&d.d, &g);
	CHECK(d.d.guest == 1);
	CHECK(std::string(d.line("guest").value) == "yes");
}

TEST_CASE("iTLB multihit: a guest's line is read in the light of the host's vendor", "[doctor]")
{
	{
		doc d;
		hte_doc_multihit_check(&d.d, "Not affected", 1, "AuthenticAMD", nullptr, HTE_CALIB_UNKNOWN);
		CHECK(d.line("itlb_multihit").level == HTE_DOC_OK);
		CHECK(contains(d.line("itlb_multihit").text, "AMD"));
	}
	{
		// An Intel host may split every 2 MiB page the guest runs code from: only the host can say.
		doc d;
		hte_doc_multihit_check(&d.d, "KVM: Mitigation: VMX unsupported", 1, "GenuineIntel", nullptr,
				       HTE_CALIB_UNKNOWN);
		CHECK(d.line("itlb_multihit").level == HTE_DOC_WARN);
		CHECK(contains(d.line("itlb_multihit").fix, "/sys/module/kvm/parameters/nx_huge_pages"));
		CHECK(contains(d.line("itlb_multihit").text, "calibration tells"));
	}
	{
		// The calibration gained nothing: the likely reason, said so.
		doc d;
		hte_doc_multihit_check(&d.d, "Not affected", 1, "GenuineIntel", nullptr, HTE_CALIB_NO_GAIN);
		CHECK(d.line("itlb_multihit").level == HTE_DOC_WARN);
		CHECK(contains(d.line("itlb_multihit").text, "likely why"));
	}
	{
		// The calibration gained: this host does not split them, whatever it is.
		doc d;
		hte_doc_multihit_check(&d.d, "Not affected", 1, "GenuineIntel", nullptr, HTE_CALIB_HUGE_GAINS);
		CHECK(d.line("itlb_multihit").level == HTE_DOC_OK);
		CHECK(contains(d.line("itlb_multihit").text, "does not split"));
	}
	{
		doc d;
		hte_doc_multihit_check(&d.d, "Not affected", 0, "GenuineIntel", nullptr, HTE_CALIB_UNKNOWN);
		CHECK(d.line("itlb_multihit").level == HTE_DOC_OK);
	}
	{
		// A host that splits its guests' pages: its own programs are not concerned.
		doc d;
		hte_doc_multihit_check(&d.d, "KVM: Mitigation: Split huge pages", 0, "GenuineIntel", "Y", HTE_CALIB_UNKNOWN);
		CHECK(d.line("itlb_multihit").level == HTE_DOC_NOTE);
		CHECK(contains(d.line("itlb_multihit").text, "its VMs"));
	}
	{
		doc d;
		hte_doc_multihit_check(&d.d, nullptr, 0, nullptr, nullptr, HTE_CALIB_UNKNOWN);
		CHECK(d.line("itlb_multihit").level == HTE_DOC_NOTE);
	}
}

TEST_CASE("/etc/ld.so.preload: entries split as ld.so does, the preload found by name", "[doctor]")
{
	char e[8][512];
	std::string t = "/usr/lib/x86_64-linux-gnu/libhugetext-preload.so /opt/a.so:/opt/b.so\n\t/opt/c.so\n";
	REQUIRE(hte_doc_preload_entries(t.data(), t.size(), e, 8) == 4);
	CHECK(std::string(e[0]) == "/usr/lib/x86_64-linux-gnu/libhugetext-preload.so");
	CHECK(std::string(e[2]) == "/opt/b.so");
	CHECK(std::string(e[3]) == "/opt/c.so");
	CHECK(hte_doc_preload_entries("", 0, e, 8) == 0);
	CHECK(hte_doc_preload_entries(" \n: ", 4, e, 8) == 0);
	std::string nul("/a.so\0/b.so", 11);
	CHECK(hte_doc_preload_entries(nul.data(), nul.size(), e, 8) == 2);
	CHECK(hte_doc_preload_entries(t.data(), t.size(), e, 2) == 2);
	std::string p = "/usr/lib/x86_64-linux-gnu/libhugetext-preload.so";
	CHECK(hte_doc_is_preload(p.data(), p.size()));
	p = "/work/build/lib/libhugetext-preload.so.0 (deleted)";
	CHECK(hte_doc_is_preload(p.data(), p.size()));
	p = "/usr/lib/libhugetext.so";
	CHECK_FALSE(hte_doc_is_preload(p.data(), p.size()));
	p = "/tmp/libhugetext-preload/evil.so";
	CHECK_FALSE(hte_doc_is_preload(p.data(), p.size()));
}

TEST_CASE("the preload line: in ld.so.preload, by hand, nowhere, or naming a missing file", "[doctor]")
{
	hte_doc_preload p{};
	std::snprintf(p.install, sizeof(p.install), "/usr/lib/x86_64-linux-gnu/libhugetext-preload.so");
	{
		doc d;
		hte_doc_preload_check(&d.d, &p);
		CHECK(d.line("preload").level == HTE_DOC_WARN);
		CHECK(contains(d.line("preload").fix, "echo /usr/lib/x86_64-linux-gnu/libhugetext-preload.so >> /etc/ld.so.preload"));
		CHECK(contains(d.line("preload").fix, "hugetext run -- "));
		CHECK(contains(d.line("preload").text, "in no running process"));
	}
	{
		// Not root: what it could not read may have it.
		doc d;
		p.unread = 31;
		hte_doc_preload_check(&d.d, &p);
		CHECK(contains(d.line("preload").text, "31 could not be read (run as root)"));
		p.unread = 0;
	}
	{
		doc d;
		p.procs_with = 2;
		p.procs_big = 3;
		p.big_with = 1;
		std::snprintf(p.which, sizeof(p.which), "node 4242, bash 17");
		hte_doc_preload_check(&d.d, &p);
		CHECK(d.line("preload").level == HTE_DOC_NOTE);
		CHECK(contains(d.line("preload").text, "in 2 running processes (node 4242, bash 17), 1 of 3 with big code"));
		p.which[0] = '\0';
	}
	{
		doc d;
		p.file = 1;
		std::snprintf(p.ours, sizeof(p.ours), "%s", p.install);
		p.ours_exists = 1;
		hte_doc_preload_check(&d.d, &p);
		CHECK(d.line("preload").level == HTE_DOC_OK);
		CHECK(std::string(d.line("preload").value) == p.install);
		CHECK_FALSE(d.has("preload_missing"));
	}
	{
		doc d;
		p.ours_exists = 0;
		std::snprintf(p.missing, sizeof(p.missing), "%s", p.install);
		p.procs_with = 0;
		hte_doc_preload_check(&d.d, &p);
		CHECK(d.line("preload_missing").level == HTE_DOC_WARN);
		CHECK(contains(d.line("preload_missing").fix, "/etc/ld.so.preload"));
		CHECK(d.line("preload").level == HTE_DOC_WARN);
	}
}

TEST_CASE("the policy file: absent, untrusted, invalid, its keys, and what blocks", "[doctor]")
{
	ht_conf *c = (ht_conf *)calloc(1, sizeof(ht_conf));
	REQUIRE(c);
	char err[256];
	{
		doc d;
		hte_doc_policy_check(&d.d, "/etc/hugetext.conf", -ENOENT, "", c, 0);
		CHECK(d.line("policy").level == HTE_DOC_OK);
	}
	{
		doc d;
		hte_doc_policy_check(&d.d, "/etc/hugetext.conf", -EPERM,
				     "/etc/hugetext.conf: writable by others than root: ignored", c, 0);
		CHECK(d.line("policy").level == HTE_DOC_WARN);
		CHECK(std::string(d.line("policy").value) == "untrusted");
		CHECK(contains(d.line("policy").text, "writable by others"));
		CHECK(contains(d.line("policy").fix, "chmod 644 /etc/hugetext.conf"));
	}
	{
		doc d;
		std::string text = "mode = thp\nbogus line\n";
		REQUIRE(ht_conf_parse(text.data(), text.size(), c, err, sizeof(err)) == -EINVAL);
		hte_doc_policy_check(&d.d, "/etc/hugetext.conf", -EINVAL, err, c, 0);
		CHECK(d.line("policy").level == HTE_DOC_WARN);
		CHECK(contains(d.line("policy").text, "line 2"));
	}
	{
		doc d;
		std::string text = "# the machine\nmode = off\nmin_code = 8M\nwarm = /usr/bin/node\nfrobnicate = 1\n";
		REQUIRE(ht_conf_parse(text.data(), text.size(), c, err, sizeof(err)) == 0);
		hte_doc_policy_check(&d.d, "/etc/hugetext.conf", 0, "", c, 0);
		CHECK(d.line("policy").level == HTE_DOC_OK);
		CHECK(contains(d.line("policy").text, "mode, min_code, warm"));
		CHECK(d.line("policy_unknown").level == HTE_DOC_WARN);
		CHECK(contains(d.line("policy_unknown").text, "'frobnicate' (line 5)"));
		CHECK(d.line("policy_mode").level == HTE_DOC_BLOCK);
		CHECK(contains(d.line("policy_mode").fix, "sed -i"));
		CHECK(hte_doc_exit(&d.d) == 1);
	}
	{
		// Explicit mode with an empty pool blocks; with room it does not.
		std::string text = "mode = explicit\nservice = 0\n";
		REQUIRE(ht_conf_parse(text.data(), text.size(), c, err, sizeof(err)) == 0);
		doc d;
		hte_doc_policy_check(&d.d, "/etc/hugetext.conf", 0, "", c, 0);
		CHECK(d.line("policy_mode").level == HTE_DOC_BLOCK);
		CHECK(contains(d.line("policy_mode").fix, "hugetext pool --set"));
		CHECK(d.line("policy_service").level == HTE_DOC_NOTE);
		doc room;
		hte_doc_policy_check(&room.d, "/etc/hugetext.conf", 0, "", c, 64);
		CHECK_FALSE(room.has("policy_mode"));
		CHECK(hte_doc_exit(&room.d) == 0);
	}
	free(c);
}

TEST_CASE("trust in /run/hugetext and its files: root's, writable by root alone, no link", "[doctor]")
{
	struct stat st{};
	st.st_mode = S_IFDIR | 0755;
	CHECK(hte_doc_dir_distrust(&st) == nullptr);
	st.st_mode = S_IFLNK | 0777;
	CHECK(std::string(hte_doc_dir_distrust(&st)) == "a symbolic link");
	st.st_mode = S_IFREG | 0644;
	CHECK(std::string(hte_doc_dir_distrust(&st)) == "not a directory");
	st.st_mode = S_IFDIR | 0777;
	CHECK(std::string(hte_doc_dir_distrust(&st)) == "writable by others than root");
	st.st_mode = S_IFDIR | 0755;
	st.st_uid = 1000;
	CHECK(std::string(hte_doc_dir_distrust(&st)) == "not owned by root");
	st = {};
	st.st_mode = S_IFREG | 0644;
	CHECK(hte_doc_file_distrust(&st) == nullptr);
	st.st_mode = S_IFIFO | 0644;
	CHECK(std::string(hte_doc_file_distrust(&st)) == "not a regular file");
	st.st_mode = S_IFREG | 0664;
	CHECK(std::string(hte_doc_file_distrust(&st)) == "writable by others than root");
	st.st_mode = S_IFLNK | 0777;
	CHECK(std::string(hte_doc_file_distrust(&st)) == "a symbolic link");
}

// What tools/serve.c's write_state() writes.
static const char state_json[] =
	"{\"pid\":4321,\"socket\":\"/run/hugetext/service.sock\",\"cache_dir\":\"/run/hugetext/text/shared\","
	"\"cache_size\":2147483648,\"offers\":7,\"pending\":1,\"warms\":9,\"tries\":12,"
	"\"warmed_total\":3,\"warmed\":[\"/usr/bin/node 26.0 MiB\",\"/usr/lib/libLLVM-14.so.1 96.0 MiB\"],"
	"\"filled_total\":1,\"filled\":[\"/usr/bin/x 2.0 MiB for uid 0\"],"
	"\"evicted_total\":0,\"evicted\":[],"
	"\"refused_total\":3,\"refused\":[\"pid 7: not a regular file\",\"pid 8: not root's\",\"pid 9: \\u001b[31m "
	"owned by uid 1000\"]}\n";

TEST_CASE("the service's state file is parsed; anything else is refused whole", "[doctor]")
{
	hte_doc_service s;
	REQUIRE(hte_doc_service_parse(state_json, sizeof(state_json) - 1, &s) == 0);
	CHECK(s.pid == 4321);
	CHECK(s.offers == 7);
	CHECK(s.warmed == 3);
	CHECK(s.filled == 1);
	CHECK(s.refused == 3);
	CHECK(s.pending == 1);
	REQUIRE(s.nrefused == 2);
	CHECK(std::string(s.last_refused[0]) == "pid 8: not root's");
	CHECK(contains(s.last_refused[1], "owned by uid 1000"));
	CHECK(std::string(s.last_filled) == "/usr/bin/x 2.0 MiB for uid 0");
	CHECK(std::string(s.last_warmed) == "/usr/lib/libLLVM-14.so.1 96.0 MiB");
	std::string good(state_json);
	for (std::string bad : { std::string(""), std::string("garbage\n"), std::string("[]"), std::string("{}"),
				 std::string("{\"pid\":\"4321\"}"), std::string("{\"pid\":0,\"offers\":1}"),
				 good + "x", good.substr(0, good.size() / 2),
				 std::string("{\"pid\":-5,\"offers\":1,\"warmed_total\":0,\"filled_total\":0,"
					     "\"evicted_total\":0,\"refused_total\":0}"),
				 std::string("{\"pid\":5,\"offers\":1,\"warmed_total\":0,\"filled_total\":0,"
					     "\"evicted_total\":0,\"refused_total\":0,\"refused\":[1]}"),
				 std::string("{\"pid\":5,\"offers\":1,\"warmed_total\":0,\"filled_total\":0,"
					     "\"evicted_total\":0,\"refused_total\":0,\"refused\":\"x\"}"),
				 std::string("{\"pid\":5,\0\"offers\":1}", 20) }) {
		INFO(bad);
		CHECK(hte_doc_service_parse(bad.data(), bad.size(), &s) == -1);
		CHECK(s.pid == 0);
	}
	// A newer service's keys beside them (clients, links, budgets) are left alone.
	std::string newer = "{\"pid\":9,\"socket\":\"/run/hugetext/service.sock\",\"cache_used\":0,\"offers\":2,"
			    "\"pending\":0,\"warms\":1,\"gate\":\"\",\"warmed_total\":1,\"warmed\":[\"a\"],"
			    "\"filled_total\":0,\"filled\":[],\"linked_total\":0,\"linked\":[],\"evicted_total\":0,"
			    "\"evicted\":[],\"refused_total\":1,\"refused\":[\"b\"],\"clients\":[{\"client\":\"uid 0\","
			    "\"offers\":2,\"shut_out\":false}]}\n";
	REQUIRE(hte_doc_service_parse(newer.data(), newer.size(), &s) == 0);
	CHECK(s.pid == 9);
	CHECK(s.refused == 1);
	CHECK(std::string(s.last_refused[0]) == "b");
	// The smallest state the service can write.
	std::string least = "{\"pid\":5,\"offers\":0,\"warmed_total\":0,\"filled_total\":0,\"evicted_total\":0,"
			    "\"refused_total\":0}";
	CHECK(hte_doc_service_parse(least.data(), least.size(), &s) == 0);
	CHECK(s.nrefused == 0);
}

TEST_CASE("the service runs when its pid runs `hugetext serve`", "[doctor]")
{
	CHECK(hte_doc_is_serve("hugetext\0serve\0", 15));
	CHECK(hte_doc_is_serve("/usr/bin/hugetext\0serve\0--socket\0/x\0", 36));
	CHECK_FALSE(hte_doc_is_serve("bash\0serve\0", 11));
	CHECK_FALSE(hte_doc_is_serve("hugetext\0status\0", 16));
	CHECK_FALSE(hte_doc_is_serve("hugetext serve", 14));
	CHECK_FALSE(hte_doc_is_serve("hugetext\0", 9));
}

TEST_CASE("the service line: running, stopped, absent, socket-activated, garbage, untrusted", "[doctor]")
{
	hte_doc_service_in in{};
	REQUIRE(hte_doc_service_parse(state_json, sizeof(state_json) - 1, &in.s) == 0);
	in.state = 1;
	in.running = 1;
	{
		doc d;
		hte_doc_service_check(&d.d, &in);
		CHECK(d.line("service").level == HTE_DOC_OK);
		CHECK(contains(d.line("service").text, "pid 4321"));
		CHECK(contains(d.line("service").text, "7 offers"));
		CHECK(std::string(d.line("service_last").text) ==
		      "text service: last warmed: /usr/lib/libLLVM-14.so.1 96.0 MiB; last filled: /usr/bin/x 2.0 MiB for uid 0");
		CHECK(d.line("service_refused").level == HTE_DOC_NOTE);
		CHECK(contains(d.line("service_refused").text, "owned by uid 1000"));
	}
	{
		doc d;
		in.running = 0;
		hte_doc_service_check(&d.d, &in);
		CHECK(d.line("service").level == HTE_DOC_WARN);
		CHECK(contains(d.line("service").fix, "hugetext serve"));
	}
	{
		doc d;
		in.state = 0;
		in.socket = 1;
		hte_doc_service_check(&d.d, &in);
		CHECK(d.line("service").level == HTE_DOC_NOTE);
		in.socket = 0;
		doc none;
		hte_doc_service_check(&none.d, &in);
		CHECK(none.line("service").level == HTE_DOC_WARN);
	}
	{
		doc d;
		in.state = -1;
		hte_doc_service_check(&d.d, &in);
		CHECK(std::string(d.line("service").value) == "garbage");
		CHECK(contains(d.line("service").fix, "rm /run/hugetext/service.json"));
		in.state = -2;
		in.state_refusal = "not owned by root";
		doc u;
		hte_doc_service_check(&u.d, &in);
		CHECK(std::string(u.line("service").value) == "untrusted");
		CHECK(contains(u.line("service").text, "not owned by root"));
	}
	{
		doc d;
		in.dir_refusal = "a symbolic link";
		hte_doc_service_check(&d.d, &in);
		CHECK(d.line("run_dir").level == HTE_DOC_WARN);
		CHECK(contains(d.line("run_dir").text, "symbolic link"));
		CHECK_FALSE(d.has("service"));
	}
	{
		doc d;
		in.policy_off = 1;
		hte_doc_service_check(&d.d, &in);
		CHECK(d.d.nlines == 0);
	}
}

TEST_CASE("the shared cache line: mounted, absent where needed or not, wrong or untrusted mounts", "[doctor]")
{
	hte_doc_cache c{};
	{
		doc d;
		c.needed = 1;
		hte_doc_cache_check(&d.d, &c);
		CHECK(d.line("text_cache").level == HTE_DOC_WARN);
		CHECK(contains(d.line("text_cache").fix, "hugetext setup"));
		doc n;
		c.needed = 0;
		hte_doc_cache_check(&n.d, &c);
		CHECK(n.line("text_cache").level == HTE_DOC_NOTE);
	}
	c.mounted = 1;
	std::snprintf(c.type, sizeof(c.type), "tmpfs");
	std::snprintf(c.opts, sizeof(c.opts), "rw,nosuid,nodev,size=2097152k,mode=1777");
	{
		doc d;
		c.trusted = 1;
		hte_doc_cache_check(&d.d, &c);
		CHECK(d.line("text_cache").level == HTE_DOC_WARN);
		CHECK(contains(d.line("text_cache").text, "without huge="));
	}
	std::snprintf(c.opts, sizeof(c.opts), "rw,nosuid,nodev,size=2097152k,mode=1777,huge=within_size");
	{
		doc d;
		c.trusted = 0;
		hte_doc_cache_check(&d.d, &c);
		CHECK(std::string(d.line("text_cache").value) == "untrusted");
	}
	{
		doc d;
		c.trusted = 1;
		c.size = 2ull << 30;
		c.used = 42ull << 20;
		hte_doc_cache_check(&d.d, &c);
		CHECK(d.line("text_cache").level == HTE_DOC_OK);
		CHECK(contains(d.line("text_cache").text, "42.0 MiB used of 2.0 GiB"));
	}
}

TEST_CASE("the calibration's verdict in plain words; no gain and no huge pages block", "[doctor]")
{
	hte_calib c{};
	std::snprintf(c.why, sizeof(c.why), "figures");
	for (auto v : { HTE_CALIB_HUGE_GAINS, HTE_CALIB_NO_GAIN, HTE_CALIB_NO_HUGE, HTE_CALIB_UNKNOWN }) {
		doc d;
		c.verdict = v;
		hte_doc_calib_check(&d.d, 0, &c, "this boot's");
		const hte_doc_line &l = d.line("calibration");
		CHECK(contains(l.text, "figures"));
		CHECK(contains(l.text, "this boot's"));
		CHECK(l.level == (v == HTE_CALIB_HUGE_GAINS ? HTE_DOC_OK : v == HTE_CALIB_UNKNOWN ? HTE_DOC_NOTE :
				  HTE_DOC_BLOCK));
		if (l.level != HTE_DOC_OK)
			CHECK(contains(l.fix, "--calibrate"));
	}
	{
		// In a guest the host's part comes second.
		doc g;
		g.d.guest = 1;
		c.verdict = HTE_CALIB_NO_GAIN;
		hte_doc_calib_check(&g.d, 0, &c, "");
		CHECK(contains(g.line("calibration").fix, "--calibrate   # again, on a quiet machine\non the host:"));
	}
	doc d;
	std::snprintf(c.why, sizeof(c.why), "no CPU to pin to");
	hte_doc_calib_check(&d.d, -1, &c, "");
	CHECK(d.line("calibration").level == HTE_DOC_NOTE);
	CHECK(contains(d.line("calibration").text, "no CPU to pin to"));
}

TEST_CASE("/proc/PID/status and stat: threads, THP off, CPU ticks", "[doctor]")
{
	hte_doc_proc p{};
	std::string st = "Name:\tnode\nUmask:\t0022\nThreads:\t11\nTHP_enabled:\t0\n";
	hte_doc_proc_status(st.data(), st.size(), &p);
	CHECK(p.threads == 11);
	CHECK(p.thp_disabled);
	st = "Name:\tcc1\nThreads:\t1\nTHP_enabled:\t1\n";
	hte_doc_proc_status(st.data(), st.size(), &p);
	CHECK(p.threads == 1);
	CHECK_FALSE(p.thp_disabled);
	// A name with spaces and parentheses; utime 250, stime 50.
	std::string stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1000 0 0";
	CHECK(hte_doc_stat_ticks(stat.data(), stat.size()) == 300);
	CHECK(hte_doc_stat_ticks("4242 (x) S 1", 12) == -1);
	CHECK(hte_doc_stat_ticks("garbage", 7) == -1);
}

namespace {

std::string vma(const std::string &header, unsigned size_kb, unsigned anon_huge_kb = 0, unsigned file_pmd_kb = 0,
		unsigned hugetlb_kb = 0, unsigned shmem_pmd_kb = 0)
{
	char b[1024];
	std::snprintf(b, sizeof(b),
		      "%s\nSize:           %8u kB\nKernelPageSize:        4 kB\nRss:            %8u kB\n"
		      "AnonHugePages:  %8u kB\nShmemPmdMapped: %8u kB\nFilePmdMapped:  %8u kB\n"
		      "Shared_Hugetlb: %8u kB\nPrivate_Hugetlb:       0 kB\nVmFlags: rd ex mr mw me\n",
		      header.c_str(), size_kb, size_kb, anon_huge_kb, shmem_pmd_kb, file_pmd_kb, hugetlb_kb);
	return b;
}

// node: 8 MiB kept in the page cache at an aligned address, 2 MiB small;
// libLLVM: moved (anonymous THP copy between its file mappings); libbig:
// served by the shared cache's entry; libsmall: 1 MiB, never counted; a JIT's
// anonymous code with no file beside it.
const std::string smaps_a =
	vma("00400000-00600000 r--p 00000000 fe:01 100 /usr/bin/node", 2048) +
	vma("00600000-01000000 r-xp 00200000 fe:01 100 /usr/bin/node", 10240, 0, 8192) +
	vma("7f0000000000-7f0000200000 r--p 00000000 fe:01 200 /usr/lib/libLLVM.so", 2048) +
	vma("7f0000200000-7f0000a00000 r-xp 00000000 00:00 0 ", 8192, 8192) +
	vma("7f0000a00000-7f0000c00000 r--p 00a00000 fe:01 200 /usr/lib/libLLVM.so", 2048) +
	vma("7f1000000000-7f1000200000 r--p 00000000 fe:01 300 /usr/lib/libbig.so", 2048) +
	vma("7f1000200000-7f1000600000 r-xp 00000000 00:2e 12 /run/hugetext/text/shared/f-1-2-3.text (deleted)",
	    4096, 0, 0, 0, 4096) +
	vma("7f1000600000-7f1000800000 r--p 00600000 fe:01 300 /usr/lib/libbig.so", 2048) +
	vma("7f2000000000-7f2000100000 r-xp 00000000 fe:01 400 /usr/lib/libsmall.so", 1024) +
	vma("7f3000000000-7f3000400000 r-xp 00000000 00:00 0 ", 4096) +
	vma("7f4000000000-7f4000001000 r-xp 00000000 fe:01 500 /usr/lib/x86_64-linux-gnu/libhugetext-preload.so", 4) +
	vma("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", 4);

// The same libLLVM in a process without the preload, loaded off the grid.
const std::string smaps_b =
	vma("00400000-00600000 r--p 00000000 fe:01 101 /usr/bin/clang", 2048) +
	vma("00601000-00a01000 r-xp 00200000 fe:01 101 /usr/bin/clang", 4096) +
	vma("7f0000001000-7f0000801000 r-xp 00000000 fe:01 200 /usr/lib/libLLVM.so", 8192);

// A library with a long path in a process without the preload.
const std::string smaps_c =
	vma("00400000-00600000 r-xp 00000000 fe:01 102 /usr/lib/llvm-14/bin/clang", 2048) +
	vma("7f5000000000-7f5006000000 r-xp 00000000 fe:01 600 /usr/lib/x86_64-linux-gnu/libclang-cpp.so.14", 98304);

struct status_holder {
	hte_status st{};
	status_holder()
	{
		std::string l = "hugetext-text /run/hugetext/text tmpfs rw,nosuid,nodev,size=2097152k,mode=1777,huge=within_size 0 0";
		hte_huge_mount m;
		REQUIRE(hte_status_mount_line(l.data(), l.size(), 2048, &m) == 1);
		REQUIRE(hte_status_add_mount(&st, &m) == 0);
	}
	~status_holder() { hte_status_free(&st); }
};

const hte_doc_obj *obj(const doc &d, const std::string &path)
{
	for (size_t i = 0; i < d.d.nobjs; i++)
		if (path == d.d.objs[i].path)
			return &d.d.objs[i];
	return nullptr;
}

void fill(doc &d, const status_holder &s)
{
	hte_doc_proc a{};
	a.pid = 100;
	a.preload = 1;
	a.threads = 4;
	a.cpu_s = 2.5;
	std::snprintf(a.exe, sizeof(a.exe), "/usr/bin/node");
	REQUIRE(hte_doc_add_smaps(&d.d, smaps_a.data(), smaps_a.size(), &s.st, &a) == 0);
	hte_doc_proc b{};
	b.pid = 200;
	std::snprintf(b.exe, sizeof(b.exe), "/usr/bin/clang");
	REQUIRE(hte_doc_add_smaps(&d.d, smaps_b.data(), smaps_b.size(), &s.st, &b) == 0);
	hte_doc_proc c{};
	c.pid = 300;
	std::snprintf(c.exe, sizeof(c.exe), "/usr/lib/llvm-14/bin/clang");
	REQUIRE(hte_doc_add_smaps(&d.d, smaps_c.data(), smaps_c.size(), &s.st, &c) == 0);
}

} // namespace

TEST_CASE("smaps counted per object: copies named after their file, huge pages by how", "[doctor]")
{
	status_holder s;
	doc d;
	fill(d, s);
	const hte_doc_obj *node = obj(d, "/usr/bin/node");
	REQUIRE(node);
	CHECK(node->code == 10u << 20);
	CHECK(node->huge[HTE_HOW_PAGE_CACHE] == 8u << 20);
	CHECK(node->aligned == 1);
	CHECK(node->is_program);
	CHECK(node->with_preload == 1);
	CHECK((node->dev_major == 0xfe && node->dev_minor == 1));
	const hte_doc_obj *llvm = obj(d, "/usr/lib/libLLVM.so");
	REQUIRE(llvm);
	CHECK(llvm->procs == 2);
	CHECK(llvm->code == 8u << 20);
	CHECK(llvm->code_sum == 16u << 20);
	CHECK(llvm->huge[HTE_HOW_THP] == 8u << 20);
	CHECK(llvm->served == 1);
	CHECK(llvm->with_preload == 1);
	// Moved whole in one process (served), off the grid in the other.
	CHECK(llvm->aligned == 1);
	const hte_doc_obj *big = obj(d, "/usr/lib/libbig.so");
	REQUIRE(big);
	CHECK(big->huge[HTE_HOW_SHARED_CACHE] == 4u << 20);
	CHECK(big->code == 4u << 20);
	CHECK(obj(d, "/usr/lib/libsmall.so") == nullptr);
	CHECK(obj(d, "/usr/lib/x86_64-linux-gnu/libhugetext-preload.so") == nullptr);
	const hte_doc_obj *clang = obj(d, "/usr/bin/clang");
	REQUIRE(clang);
	CHECK(clang->aligned == 0);
	CHECK(clang->with_preload == 0);
	const hte_doc_obj *cpp = obj(d, "/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14");
	REQUIRE(cpp);
	CHECK(std::string(cpp->program) == "/usr/lib/llvm-14/bin/clang");
	CHECK_FALSE(cpp->is_program);
	// Sorted by code, and below min_code dropped.
	d.d.min_code = 5u << 20;
	hte_doc_sort_objects(&d.d);
	REQUIRE(d.d.nobjs == 3);
	CHECK(std::string(d.d.objs[0].path) == "/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14");
	CHECK(std::string(d.d.objs[1].path) == "/usr/bin/node");
	CHECK(std::string(d.d.objs[2].path) == "/usr/lib/libLLVM.so");
}

TEST_CASE("each object's verdict: what it has, or why not and what to do", "[doctor]")
{
	hte_doc_env e{};
	e.thp_ok = 1;
	char out[400], fix[600];
	hte_doc_obj o{};
	std::snprintf(o.path, sizeof(o.path), "/usr/bin/node");
	o.code = o.code_sum = 26u << 20;
	o.procs = 1;
	o.is_program = 1;
	o.fs_folios = 1;
	// Not loaded: the command that runs it with the preload.
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_WARN);
	CHECK(contains(out, "preload is not loaded"));
	CHECK(std::string(fix) == "hugetext run -- /usr/bin/node");
	// A library: the program that loads it.
	o.is_program = 0;
	std::snprintf(o.program, sizeof(o.program), "/usr/bin/clang");
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_WARN);
	CHECK(std::string(fix) == "hugetext run -- /usr/bin/clang ...   # the program that loads it");
	o.is_program = 1;
	o.with_preload = 1;
	o.aligned = 1;
	// Aligned, the file system has folios, a service runs: it warms it later.
	e.service = 1;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_NOTE);
	CHECK(contains(out, "warms"));
	e.service = 0;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_WARN);
	CHECK(std::string(fix) == "hugetext serve &");
	// No folios, no cache: the copy waits until it pays (40 ms per MiB: 1.04 s here).
	o.fs_folios = 0;
	o.cpu_max = 0.5;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_NOTE);
	CHECK(contains(out, "1.0 s of CPU"));
	o.single = 1;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_NOTE);
	CHECK(contains(out, "fork()"));
	o.single = 0;
	o.cpu_max = 5;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_WARN);
	CHECK(contains(out, "no huge page"));
	// Off the grid: what `check` says fixes it.
	o.aligned = 0;
	o.cpu_max = 0;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_NOTE);
	CHECK(contains(out, "off the 2 MiB grid"));
	CHECK(std::string(fix).rfind("hugetext check /usr/bin/node", 0) == 0);
	// THP off in the process itself.
	o.thp_off = 1;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_WARN);
	CHECK(contains(out, "PR_SET_THP_DISABLE"));
	CHECK(std::string(fix) == "hugetext pool --set 15");
	// Something huge: how, and the processes it misses.
	o.thp_off = 0;
	o.procs = 2;
	o.code_sum = 52u << 20;
	o.served = 1;
	o.huge[HTE_HOW_PAGE_CACHE] = 26u << 20;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_OK);
	CHECK(std::string(out) == "50% huge: page cache (kept); nothing in 1 of 2 processes (some without the preload)");
	o.huge[HTE_HOW_THP] = 13u << 20;
	CHECK(hte_doc_obj_verdict(&o, &e, out, sizeof(out), fix, sizeof(fix)) == HTE_DOC_OK);
	CHECK(std::string(out).rfind("75% huge: page cache (kept) 50%, private copy 25%;", 0) == 0);
	CHECK(fix[0] == '\0');
}

namespace {

// A fixed machine for the golden outputs: this machine's kind of lines.
void fixed(doc &d, const status_holder &s)
{
	std::snprintf(d.d.kernel, sizeof(d.d.kernel), "Linux 6.18.44 x86_64");
	std::snprintf(d.d.cpu, sizeof(d.d.cpu), "AMD family 26 model 2 (guest: KVMKVMKVM)");
	d.d.as_root = 1;
	d.d.procs_read = 2;
	d.d.procs_unread = 1;
	hte_doc_thp t = thp("always [madvise] never");
	hte_doc_thp_check(&d.d, &t);
	hte_doc_pagemap_check(&d.d, 0);
	hte_doc_fs fs{};
	std::snprintf(fs.mnt, sizeof(fs.mnt), "/");
	std::snprintf(fs.type, sizeof(fs.type), "ext4");
	fs.code = 34u << 20;
	hte_doc_fs_check(&d.d, &fs, 6, 18, 1);
	hte_doc_guest g{};
	g.cpuid_hv = 1;
	g.hv_id = "KVMKVMKVM";
	hte_doc_guest_check(&d.d, &g);
	hte_doc_multihit_check(&d.d, "Not affected", 1, "AuthenticAMD", "N", HTE_CALIB_HUGE_GAINS);
	hte_calib c{};
	c.verdict = HTE_CALIB_HUGE_GAINS;
	std::snprintf(c.why, sizeof(c.why), "1.24x as fast (95%%: 1.04-1.39)");
	c.seconds = 3.5;
	c.npoints = 1;
	c.point[0].code_bytes = 16u << 20;
	c.point[0].ns_4k = 3.1;
	c.point[0].ns_2m = 2.5;
	c.point[0].lo = 1.04;
	c.point[0].hi = 1.39;
	c.point[0].huge_ok = 1;
	static hte_calib kept;
	kept = c;
	d.d.calib = &kept;
	hte_doc_calib_check(&d.d, 0, &c, "this boot's");
	hte_doc_preload p{};
	std::snprintf(p.install, sizeof(p.install), "/usr/lib/x86_64-linux-gnu/libhugetext-preload.so");
	p.procs_with = 1;
	p.procs_big = 2;
	p.big_with = 1;
	hte_doc_preload_check(&d.d, &p);
	ht_conf *conf = (ht_conf *)calloc(1, sizeof(ht_conf));
	REQUIRE(conf);
	hte_doc_policy_check(&d.d, "/etc/hugetext.conf", -ENOENT, "", conf, 0);
	free(conf);
	hte_doc_service_in in{};
	hte_doc_service_check(&d.d, &in);
	hte_doc_cache c2{};
	c2.mounted = c2.trusted = 1;
	std::snprintf(c2.type, sizeof(c2.type), "tmpfs");
	std::snprintf(c2.opts, sizeof(c2.opts), "rw,huge=within_size");
	c2.size = 2ull << 30;
	c2.used = 4ull << 20;
	hte_doc_cache_check(&d.d, &c2);
	hte_pool_count pool{ 2048, 0, 0 };
	hte_doc_pool_check(&d.d, &pool, 1);
	fill(d, s);
	hte_doc_sort_objects(&d.d);
	for (size_t i = 0; i < d.d.nobjs; i++) {
		std::snprintf(d.d.objs[i].fs, sizeof(d.d.objs[i].fs), "ext4");
		d.d.objs[i].fs_folios = 1;
	}
}

} // namespace

TEST_CASE("the text fits one screen and every problem says what to do (golden)", "[doctor]")
{
	status_holder s;
	doc d;
	fixed(d, s);
	hte_doc_env e{};
	e.thp_ok = 1;
	e.cache_mounted = 1;
	std::string out = text_of(d.d, e, false);
	INFO(out);
	CHECK(golden_diff("doctor.txt", out) == "");
	size_t lines = 0;
	for (char ch : out)
		lines += ch == '\n';
	CHECK(lines <= 40);
	// Each warning or block is followed by its command.
	size_t at = 0;
	while ((at = out.find("\n  warn  ", at)) != std::string::npos) {
		size_t next = out.find('\n', at + 1);
		CHECK(out.compare(next + 1, 12, "        do: ") == 0);
		at = next;
	}
	CHECK(out.find("Nothing blocks hugetext here") != std::string::npos);
	CHECK(out.find("Exit status 0.") != std::string::npos);
}

TEST_CASE("the JSON is one object with every line and object (golden)", "[doctor]")
{
	status_holder s;
	doc d;
	fixed(d, s);
	hte_doc_env e{};
	e.thp_ok = 1;
	e.cache_mounted = 1;
	std::string out = text_of(d.d, e, true);
	CHECK(golden_diff("doctor.json", out) == "");
	json_object *o = json_tokener_parse(out.c_str());
	REQUIRE(o);
	json_object *v;
	REQUIRE(json_object_object_get_ex(o, "checks", &v));
	CHECK(json_object_array_length(v) == d.d.nlines);
	REQUIRE(json_object_object_get_ex(o, "objects", &v));
	CHECK(json_object_array_length(v) == d.d.nobjs);
	REQUIRE(json_object_object_get_ex(o, "exit", &v));
	CHECK(json_object_get_int(v) == 0);
	REQUIRE(json_object_object_get_ex(o, "calibration", &v));
	json_object *verdict;
	REQUIRE(json_object_object_get_ex(v, "verdict", &verdict));
	CHECK(std::string(json_object_get_string(verdict)) == "huge_gains");
	json_object_put(o);
}

TEST_CASE("names from others reach neither the terminal's escapes nor broken JSON", "[doctor]")
{
	doc d;
	hte_doc_service_in in{};
	REQUIRE(hte_doc_service_parse(state_json, sizeof(state_json) - 1, &in.s) == 0);
	in.state = 1;
	in.running = 1;
	hte_doc_service_check(&d.d, &in);
	hte_doc_env e{};
	std::string txt = text_of(d.d, e, false);
	CHECK(txt.find('\x1b') == std::string::npos);
	CHECK(txt.find("?[31m") != std::string::npos);
	std::string js = text_of(d.d, e, true);
	json_object *o = json_tokener_parse(js.c_str());
	CHECK(o);
	json_object_put(o);
}

TEST_CASE("every warning and block, of every check, says what to do", "[doctor]")
{
	doc d;
	for (const char *en : { "always madvise [never]", "[weird]" }) {
		hte_doc_thp t = thp(en);
		t.shmem = "always within_size advise never [deny] force";
		hte_doc_thp_check(&d.d, &t);
	}
	hte_doc_thp t = thp("always [madvise] never");
	t.pmd_enabled = "always inherit madvise [never]";
	hte_doc_thp_check(&d.d, &t);
	t = thp(nullptr);
	hte_doc_thp_check(&d.d, &t);
	hte_doc_pagesize_check(&d.d, 65536);
	hte_doc_fs fs{};
	std::snprintf(fs.type, sizeof(fs.type), "btrfs");
	hte_doc_fs_check(&d.d, &fs, 6, 18, 0);
	hte_doc_multihit_check(&d.d, "Not affected", 1, "GenuineIntel", nullptr, HTE_CALIB_NO_GAIN);
	hte_calib c{};
	for (auto v : { HTE_CALIB_NO_GAIN, HTE_CALIB_NO_HUGE, HTE_CALIB_UNKNOWN }) {
		c.verdict = v;
		hte_doc_calib_check(&d.d, 0, &c, "");
	}
	hte_doc_calib_check(&d.d, -1, &c, "");
	hte_doc_preload p{};
	std::snprintf(p.missing, sizeof(p.missing), "/gone.so");
	hte_doc_preload_check(&d.d, &p);
	ht_conf *conf = (ht_conf *)calloc(1, sizeof(ht_conf));
	REQUIRE(conf);
	char err[256];
	std::string text = "mode = off\nnope = 1\n";
	REQUIRE(ht_conf_parse(text.data(), text.size(), conf, err, sizeof(err)) == 0);
	hte_doc_policy_check(&d.d, "/etc/hugetext.conf", 0, "", conf, 0);
	text = "mode = explicit\n";
	REQUIRE(ht_conf_parse(text.data(), text.size(), conf, err, sizeof(err)) == 0);
	hte_doc_policy_check(&d.d, "/etc/hugetext.conf", 0, "", conf, 0);
	hte_doc_policy_check(&d.d, "/etc/hugetext.conf", -EPERM, "x: a symbolic link: ignored", conf, 0);
	hte_doc_policy_check(&d.d, "/etc/hugetext.conf", -EINVAL, "x: line 1: bad", conf, 0);
	hte_doc_policy_check(&d.d, "/etc/hugetext.conf", -EIO, "", conf, 0);
	free(conf);
	hte_doc_service_in in{};
	for (int state : { 0, -1, -2 }) {
		in.state = state;
		in.state_refusal = "a symbolic link";
		hte_doc_service_check(&d.d, &in);
	}
	in.state = 1;
	in.s.pid = 5;
	hte_doc_service_check(&d.d, &in);
	in.dir_refusal = "a symbolic link";
	hte_doc_service_check(&d.d, &in);
	hte_doc_cache cache{};
	cache.needed = 1;
	hte_doc_cache_check(&d.d, &cache);
	cache.mounted = 1;
	std::snprintf(cache.type, sizeof(cache.type), "ext4");
	hte_doc_cache_check(&d.d, &cache);
	std::snprintf(cache.type, sizeof(cache.type), "tmpfs");
	std::snprintf(cache.opts, sizeof(cache.opts), "huge=within_size");
	hte_doc_cache_check(&d.d, &cache);
	unsigned problems = 0;
	for (size_t i = 0; i < d.d.nlines; i++) {
		const hte_doc_line &l = d.d.lines[i];
		INFO(l.id << ": " << l.text);
		if (l.level >= HTE_DOC_WARN) {
			problems++;
			CHECK(l.fix[0] != '\0');
		}
	}
	CHECK(problems >= 20);
	CHECK(d.d.nlines < HTE_DOC_MAX_LINES);
}

TEST_CASE("the parsers of others' text take mutated input without a crash", "[doctor]")
{
	// Deterministic: the same 3000 mutations every run (an ASan build checks the reads).
	unsigned long long x = 0x9e3779b97f4a7c15ull;
	auto next = [&x]() { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x; };
	status_holder s;
	const std::string seeds[] = {
		std::string(state_json), smaps_a, smaps_b,
		"29 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro",
		"4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1000 0 0",
		"Name:\tnode\nThreads:\t11\nTHP_enabled:\t0\n",
		"/usr/lib/x86_64-linux-gnu/libhugetext-preload.so /opt/a.so:/opt/b.so\n",
	};
	size_t parsed = 0;
	for (int round = 0; round < 3000; round++) {
		const std::string &seed = seeds[round % (sizeof(seeds) / sizeof(seeds[0]))];
		std::string m = seed;
		for (unsigned k = 0, n = 1 + next() % 8; k < n && !m.empty(); k++) {
			size_t at = next() % m.size();
			switch (next() % 4) {
			case 0: m[at] = (char)next(); break;
			case 1: m.erase(at, next() % 16); break;
			case 2: m.insert(at, std::string(next() % 4, "\n :-(){}\"\\\0"[next() % 11])); break;
			default: m.resize(at); break;
			}
		}
		hte_doc_service sv;
		parsed += hte_doc_service_parse(m.data(), m.size(), &sv) == 0;
		unsigned ma, mi;
		char mnt[256], type[32], opts[256];
		hte_doc_mountinfo_line(m.data(), m.size(), &ma, &mi, mnt, sizeof(mnt), type, sizeof(type), opts,
				       sizeof(opts));
		hte_doc_stat_ticks(m.data(), m.size());
		hte_doc_proc p{};
		hte_doc_proc_status(m.data(), m.size(), &p);
		hte_doc_is_serve(m.data(), m.size());
		hte_doc_is_preload(m.data(), m.size());
		char e[8][512];
		CHECK(hte_doc_preload_entries(m.data(), m.size(), e, 8) <= 8);
		doc d;
		CHECK(hte_doc_add_smaps(&d.d, m.data(), m.size(), &s.st, &p) == 0);
	}
	// Some mutations keep the state file valid (a changed letter in a string): the parser did run.
	CHECK(parsed > 0);
}
