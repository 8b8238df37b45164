// Description: hugetext oci-hook without a container engine: the pure parts
// on buffers (the runtime's state and config.json, the decision, the merged
// ld.so.preload, the record, the /proc texts, the ELF versions of the
// host's libc, of the preload and of a fake glibc 2.17), and the command on
// bad standard input, a gone process, a process in the host's own mount
// namespace and poststop: clear messages, the documented exit statuses,
// nothing written where nothing was asked.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "helpers.hpp"

extern "C" {
#include "conf.h"
#include "ocihook.h"
}

namespace {

struct state_result {
	int rc;
	std::string err;
	hte_oci_state st;
};

std::unique_ptr<state_result> state(const std::string &json)
{
	auto r = std::make_unique<state_result>();
	char err[512];
	r->rc = hte_oci_state_parse(json.data(), json.size(), &r->st, err, sizeof(err));
	r->err = err;
	return r;
}

const std::string id64 = "f7e0c2a1b3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e";

std::string state_json(const std::string &status = "creating", const std::string &extra = ",\"pid\":4242")
{
	return "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"" + id64 + "\",\"status\":\"" + status +
	       "\",\"bundle\":\"/var/lib/containers/x/userdata\"" + extra + "}";
}

std::string merged(const std::string &image, unsigned *kept = nullptr, long *rc = nullptr, size_t cap = 4096)
{
	std::string out(cap, '\0');
	unsigned k = 0;
	long n = hte_preload_list_merge(image.empty() ? nullptr : image.data(), image.size(),
					"/run/hugetext/libhugetext-preload.so", &out[0], cap, &k);
	if (kept)
		*kept = k;
	if (rc)
		*rc = n;
	return n < 0 ? "" : out.substr(0, (size_t)n);
}

std::string libc_path()
{
	std::string path;
	dl_iterate_phdr([](struct dl_phdr_info *info, size_t, void *arg) {
		if (std::strstr(info->dlpi_name, "/libc.so.6"))
			*(std::string *)arg = info->dlpi_name;
		return 0;
	}, &path);
	return path;
}

std::unique_ptr<hte_elf_versions> versions_of(const std::string &bytes, std::string *err = nullptr)
{
	auto v = std::make_unique<hte_elf_versions>();
	char e[256];
	int rc = hte_elf_versions_read(bytes.data(), bytes.size(), v.get(), e, sizeof(e));
	if (err)
		*err = e;
	return rc == 0 ? std::move(v) : nullptr;
}

std::string hugetext()
{
	return build_path("tools/hugetext");
}

// The hook run with @stdin_text, every path of its own under @dir.
prog_result hook(const std::string &dir, const std::string &stdin_text, const std::vector<std::string> &more = {})
{
	std::string in = dir + "/stdin";
	std::ofstream(in, std::ios::binary) << stdin_text;
	std::vector<std::string> argv = { hugetext(), "oci-hook", "--preload", build_path("lib/libhugetext-preload.so"),
					  "--socket", dir + "/service.sock", "--cache", dir + "/text",
					  "--records", dir + "/containers", "--log", dir + "/hook.log",
					  "--config", dir + "/hugetext.conf" };
	argv.insert(argv.end(), more.begin(), more.end());
	prog_opts o;
	o.stdin_path = in;
	o.timeout_s = 30;
	return run_prog(argv, o);
}

struct temp {
	std::string path;
	temp()
	{
		char t[] = "/tmp/hugetext-ocihook-XXXXXX";
		path = mkdtemp(t) ? t : "";
	}
	~temp()
	{
		if (!path.empty())
			run_prog({ "rm", "-rf", path });
	}
};

} // namespace

TEST_CASE("the runtime's state: the fields the hook needs, at both stages", "[ocihook][state]")
{
	auto r = state(state_json("creating", ",\"pid\":4242,\"annotations\":{\"io.hugetext/enable\":\"1\",\"x\":\"y\"}"));
	REQUIRE(r->rc == 0);
	CHECK(r->err == "");
	CHECK(std::string(r->st.id) == id64);
	CHECK(r->st.stage == HTE_OCI_INJECT);
	CHECK(r->st.pid == 4242);
	CHECK(std::string(r->st.bundle) == "/var/lib/containers/x/userdata");
	CHECK(r->st.has_annotation == 1);
	CHECK(std::string(r->st.annotation) == "1");

	// poststop: Podman's state has no pid (the process is gone).
	r = state(state_json("stopped", ""));
	REQUIRE(r->rc == 0);
	CHECK(r->st.stage == HTE_OCI_REMOVE);
	CHECK(r->st.pid == 0);
	CHECK(r->st.has_annotation == 0);

	r = state(state_json("creating", ",\"pid\":1,\"annotations\":{\"io.hugetext/enable\":\"" +
					     std::string(300, 'x') + "\"}"));
	REQUIRE(r->rc == 0);
	CHECK(r->st.annotation_long == 1);
	CHECK(std::strlen(r->st.annotation) == HTE_OCI_VALUE_MAX);
}

TEST_CASE("a state that is no JSON object, lacks a field or has a wrong one is refused, saying why",
	  "[ocihook][state]")
{
	const struct {
		std::string json, err;
	} bad[] = {
		{ "", "the state is empty" },
		{ "not json", "the state is not JSON: " },
		{ "{\"id\":", "the state is not JSON: it ends early" },
		{ "[1,2]", "the state is not a JSON object" },
		{ state_json() + " {}", "the state is not one JSON document: more follows it" },
		{ std::string("{\"a\":\"\0\"}", 9), "the state is not JSON: it holds a NUL byte" },
		{ "{\"id\":\"x\",\"status\":\"creating\",\"bundle\":\"/b\",\"pid\":1}", "the state has no \"ociVersion\"" },
		{ "{\"ociVersion\":\"1\",\"status\":\"creating\",\"bundle\":\"/b\",\"pid\":1}", "the state has no \"id\"" },
		{ "{\"ociVersion\":\"1\",\"id\":7,\"status\":\"creating\",\"bundle\":\"/b\",\"pid\":1}",
		  "the state: \"id\" is not a string" },
		{ "{\"ociVersion\":\"1\",\"id\":\"../x\",\"status\":\"creating\",\"bundle\":\"/b\",\"pid\":1}",
		  "the state: \"id\" is not a container id" },
		{ "{\"ociVersion\":\"1\",\"id\":\".x\",\"status\":\"creating\",\"bundle\":\"/b\",\"pid\":1}",
		  "the state: \"id\" is not a container id" },
		{ "{\"ociVersion\":\"1\",\"id\":\"" + std::string(129, 'a') + "\",\"status\":\"creating\",\"bundle\":\"/b\",\"pid\":1}",
		  "the state: \"id\" is not a container id" },
		{ state_json("running"), "the state: status \"running\" is neither \"creating\"" },
		{ "{\"ociVersion\":\"1\",\"id\":\"a\",\"status\":\"creating\",\"bundle\":\"rel\",\"pid\":1}",
		  "the state: \"bundle\" is not an absolute path" },
		{ state_json("creating", ""), "the state has no \"pid\" of the container's process" },
		{ state_json("creating", ",\"pid\":0"), "the state has no \"pid\" of the container's process" },
		{ state_json("creating", ",\"pid\":-4"), "the state: \"pid\" -4 is no process id" },
		{ state_json("creating", ",\"pid\":\"4\""), "the state: \"pid\" is not a whole number" },
		{ state_json("creating", ",\"pid\":99999999999"), "the state: \"pid\" 99999999999 is no process id" },
		{ state_json("creating", ",\"pid\":4,\"annotations\":[]"), "the state: \"annotations\" is not an object" },
		{ state_json("creating", ",\"pid\":4,\"annotations\":{\"io.hugetext/enable\":1}"),
		  "the state: annotation \"io.hugetext/enable\" is not a string" },
	};
	for (auto &b : bad) {
		INFO(b.json.substr(0, 200));
		auto r = state(b.json);
		CHECK(r->rc == -1);
		CHECK(r->err.rfind(b.err, 0) == 0);
		CHECK(r->st.id[0] == '\0'); // nothing left behind
	}
	// A document past the bound is refused before it is parsed.
	std::string huge = "{\"ociVersion\":\"" + std::string(HTE_OCI_STATE_MAX, 'x') + "\"}";
	CHECK(state(huge)->err == "the state is longer than 1048576 bytes");
	// Nesting deeper than the tokener's limit is refused, not recursed into.
	std::string deep = state_json("creating", ",\"pid\":4,\"x\":" + std::string(100, '[') + std::string(100, ']'));
	CHECK(state(deep)->err.rfind("the state is not JSON: ", 0) == 0);
}

TEST_CASE("container ids: the characters runtimes use, nothing that walks a path", "[ocihook][state]")
{
	for (const char *good : { "a", "abc-DEF_1.2+3", "0123456789abcdef" })
		CHECK(hte_oci_id_valid(good, std::strlen(good)));
	for (const char *bad : { "", ".", "..", ".hidden", "a/b", "a b", "a\nb", "é" })
		CHECK(!hte_oci_id_valid(bad, std::strlen(bad)));
	CHECK(hte_oci_id_valid(std::string(128, 'a').c_str(), 128));
	CHECK(!hte_oci_id_valid(std::string(129, 'a').c_str(), 129));
}

TEST_CASE("config.json: the rootfs, and whether the container has a mount namespace of its own",
	  "[ocihook][config]")
{
	auto parse = [](const std::string &json, std::string *err = nullptr) {
		auto c = std::make_unique<hte_oci_config>();
		char e[256];
		int rc = hte_oci_config_parse(json.data(), json.size(), c.get(), e, sizeof(e));
		if (err)
			*err = e;
		return rc == 0 ? std::move(c) : nullptr;
	};
	auto c = parse("{\"root\":{\"path\":\"/var/lib/x/merged\",\"readonly\":true},"
		       "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"}]}}");
	REQUIRE(c);
	CHECK(std::string(c->root) == "/var/lib/x/merged");
	CHECK(c->root_readonly == 1);
	CHECK(c->mount_ns == 1);
	CHECK(c->mount_ns_joined == 0);
	c = parse("{\"root\":{\"path\":\"rootfs\"},\"linux\":{\"namespaces\":[{\"type\":\"mount\",\"path\":\"/proc/1/ns/mnt\"}]}}");
	REQUIRE(c);
	CHECK(std::string(c->root) == "rootfs");
	CHECK(c->mount_ns_joined == 1);
	c = parse("{\"root\":{\"path\":\"rootfs\"}}");
	REQUIRE(c);
	CHECK(c->mount_ns == 0);
	std::string err;
	CHECK(!parse("{}", &err));
	CHECK(err == "config.json has no \"root\" object");
	CHECK(!parse("{\"root\":{\"path\":\"\"}}", &err));
	CHECK(err == "config.json: root.path is empty or too long");
	CHECK(!parse("{\"root\":{\"path\":\"r\",\"readonly\":\"yes\"}}", &err));
	CHECK(err == "config.json: root.readonly is not true or false");
	CHECK(!parse("{\"root\":{\"path\":\"r\"},\"linux\":{\"namespaces\":{}}}", &err));
	CHECK(err == "config.json: linux.namespaces is not an array");
	CHECK(!parse("{\"root\":{\"path\":\"r\"},\"linux\":{\"namespaces\":[{}]}}", &err));
	CHECK(err == "config.json: linux.namespaces[0] has no type");
}

TEST_CASE("the decision: the annotation and the host's policy", "[ocihook][decide]")
{
	auto ask = [](int policy, const char *annotation) {
		hte_oci_state st{};
		const char *why = nullptr;
		if (annotation) {
			st.has_annotation = 1;
			std::snprintf(st.annotation, sizeof(st.annotation), "%s", annotation);
		}
		enum hte_oci_ask a = hte_oci_decide(policy, &st, &why);
		REQUIRE(why != nullptr);
		return a;
	};
	const int annotated = HT_CONF_CONTAINERS_ANNOTATED, all = HT_CONF_CONTAINERS_ALL, off = HT_CONF_CONTAINERS_OFF;
	CHECK(ask(annotated, nullptr) == HTE_OCI_NOT_ASKED);
	CHECK(ask(annotated, "1") == HTE_OCI_ASKED);
	CHECK(ask(annotated, "0") == HTE_OCI_REFUSED);
	CHECK(ask(annotated, "true") == HTE_OCI_BAD_ANNOTATION);
	CHECK(ask(annotated, "") == HTE_OCI_BAD_ANNOTATION);
	CHECK(ask(all, nullptr) == HTE_OCI_ASKED);
	CHECK(ask(all, "1") == HTE_OCI_ASKED);
	CHECK(ask(all, "0") == HTE_OCI_REFUSED);
	CHECK(ask(all, "01") == HTE_OCI_BAD_ANNOTATION);
	CHECK(ask(off, nullptr) == HTE_OCI_NOT_ASKED);
	CHECK(ask(off, "1") == HTE_OCI_POLICY_OFF);
	CHECK(ask(off, "0") == HTE_OCI_POLICY_OFF);

	hte_oci_state st{};
	st.has_annotation = 1;
	st.annotation_long = 1;
	st.annotation[0] = '1'; // "1" and then more than 255 bytes: not "1"
	const char *why;
	CHECK(hte_oci_decide(annotated, &st, &why) == HTE_OCI_BAD_ANNOTATION);
}

TEST_CASE("the container's ld.so.preload keeps the image's entries in order, then the preload, once",
	  "[ocihook][merge]")
{
	const std::string ours = "/run/hugetext/libhugetext-preload.so\n";
	unsigned kept = 99;
	CHECK(merged("", &kept) == ours);
	CHECK(kept == 0);
	CHECK(merged("/usr/lib/libkeep.so\n", &kept) == "/usr/lib/libkeep.so\n" + ours);
	CHECK(kept == 1);
	// The loader's separators and comments.
	CHECK(merged("  /a.so:/b.so\t/c.so # not /d.so\n#/e.so\n/f.so", &kept) == "/a.so\n/b.so\n/c.so\n/f.so\n" + ours);
	CHECK(kept == 4);
	CHECK(merged("/a.so#comment glued\n/b.so") == "/a.so\n/b.so\n" + ours);
	// Ours already there (a container started again): not twice, not counted.
	CHECK(merged("/run/hugetext/libhugetext-preload.so\n/a.so\n", &kept) == "/a.so\n" + ours);
	CHECK(kept == 1);
	// $LIB and the like are the loader's to expand: kept as they are.
	CHECK(merged("/usr/$LIB/libx.so") == "/usr/$LIB/libx.so\n" + ours);
	long rc = 0;
	CHECK(merged(std::string("/a.so\0/b.so", 11), &kept, &rc) == "");
	CHECK(rc == -1);
	merged(std::string(100, 'a'), &kept, &rc, 64);
	CHECK(rc == -1);
	std::string full = merged(std::string(60000, 'a'), &kept, &rc, HTE_OCI_PRELOAD_LIST_MAX + 4096);
	CHECK(rc == 60001 + (long)ours.size());
}

TEST_CASE("a record goes to JSON with the contract's fields and comes back", "[ocihook][record]")
{
	auto r = std::make_unique<hte_oci_record>();
	std::snprintf(r->id, sizeof(r->id), "%s", id64.c_str());
	r->pid = 4242;
	r->pid_start = 123456789;
	r->mntns = 4026532250ull;
	std::snprintf(r->userns, sizeof(r->userns), "host");
	std::snprintf(r->cgroup, sizeof(r->cgroup), "/libpod_parent/libpod-x");
	std::snprintf(r->rootfs, sizeof(r->rootfs), "/var/lib/containers/storage/overlay/l/merged");
	std::snprintf(r->upperdir, sizeof(r->upperdir), "/var/lib/containers/storage/overlay/l/diff");
	r->has_annotation = 1;
	std::snprintf(r->annotation, sizeof(r->annotation), "1");
	r->injected = 1;
	std::snprintf(r->reason, sizeof(r->reason), "injected \"quoted\"\n");
	r->has_glibc = 1;
	std::snprintf(r->glibc, sizeof(r->glibc), "2.36");
	r->time = 1700000000;
	std::snprintf(r->policy, sizeof(r->policy), "annotated");
	r->socket = 1;
	r->kept = 2;
	char *json = hte_oci_record_json(r.get());
	REQUIRE(json);
	std::string s = json;
	std::free(json);
	INFO(s);
	CHECK(s.back() == '\n');
	for (const char *key : { "\"id\":", "\"pid\":4242", "\"pid_start\":123456789", "\"mntns\":4026532250",
				 "\"userns\":\"host\"", "\"cgroup\":", "\"rootfs\":", "\"upperdir\":", "\"annotation\":\"1\"",
				 "\"injected\":true", "\"reason\":", "\"glibc\":\"2.36\"", "\"view\":null", "\"time\":1700000000" })
		CHECK(s.find(key) != std::string::npos);
	auto back = std::make_unique<hte_oci_record>();
	REQUIRE(hte_oci_record_parse(s.data(), s.size(), back.get()) == 0);
	CHECK(std::memcmp(r.get(), back.get(), sizeof(*back)) == 0);

	CHECK(hte_oci_record_parse("{\"id\":\"../etc\"}", 15, back.get()) == -1);
	CHECK(hte_oci_record_parse("[]", 2, back.get()) == -1);
	CHECK(hte_oci_record_parse("{}", 2, back.get()) == -1);
}

TEST_CASE("/proc texts: a process's start time, user namespace and cgroup", "[ocihook][proc]")
{
	unsigned long long t = 0;
	std::string stat = "4242 (a) b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
	REQUIRE(hte_stat_start_time(stat.data(), stat.size(), &t) == 0);
	CHECK(t == 987654);
	CHECK(hte_stat_start_time("4242 (x) S 1", 12, &t) == -1);
	CHECK(hte_stat_start_time("no paren", 8, &t) == -1);

	char out[128];
	std::string host = "         0          0 4294967295\n";
	hte_userns_name(host.data(), host.size(), out, sizeof(out));
	CHECK(std::string(out) == "host");
	std::string mapped = "         0     100000      65536\n";
	hte_userns_name(mapped.data(), mapped.size(), out, sizeof(out));
	CHECK(std::string(out) == "0 100000 65536");
	std::string two = "0 0 4294967295\n1 1 1\n";
	hte_userns_name(two.data(), two.size(), out, sizeof(out));
	CHECK(std::string(out) == "0 0 4294967295");

	char cg[256];
	std::string hybrid = "2:cpu:/libpod_parent/libpod-a\n1:name=systemd:/libpod_parent/libpod-a\n0::/unified/x\n";
	hte_cgroup_path(hybrid.data(), hybrid.size(), cg, sizeof(cg));
	CHECK(std::string(cg) == "/unified/x");
	std::string v1 = "2:cpu:/a/b\n1:name=systemd:/c\n";
	hte_cgroup_path(v1.data(), v1.size(), cg, sizeof(cg));
	CHECK(std::string(cg) == "/a/b");
	hte_cgroup_path("", 0, cg, sizeof(cg));
	CHECK(std::string(cg) == "");
}

TEST_CASE("mountinfo: a mount by id, its propagation, overlay's upperdir; fdinfo's mnt_id", "[ocihook][proc]")
{
	const std::string mi =
		"24 1 0:22 / /run rw,nosuid shared:5 - tmpfs tmpfs rw,mode=755\n"
		"80 77 0:38 / /var/lib/c/merged rw,relatime - overlay overlay rw,lowerdir=/l/A:/l/B,"
		"upperdir=/var/lib/c/diff\\054x,workdir=/var/lib/c/work\n"
		"90 80 0:40 / /var/lib/c/merged/run\\040dir rw master:3 - tmpfs tmpfs rw\n"
		"bad line\n";
	hte_mountinfo m;
	REQUIRE(hte_mountinfo_find(mi.data(), mi.size(), 24, &m) == 0);
	CHECK(m.shared == 1);
	CHECK(std::string(m.fstype) == "tmpfs");
	CHECK(std::string(m.point) == "/run");
	CHECK(m.major == 0);
	CHECK(m.minor == 22);
	REQUIRE(hte_mountinfo_find(mi.data(), mi.size(), 80, &m) == 0);
	CHECK(m.shared == 0);
	CHECK(std::string(m.fstype) == "overlay");
	CHECK(std::string(m.upperdir) == "/var/lib/c/diff,x");
	REQUIRE(hte_mountinfo_find(mi.data(), mi.size(), 90, &m) == 0);
	CHECK(m.shared == 0); // a slave receives, never sends
	CHECK(std::string(m.point) == "/var/lib/c/merged/run dir");
	CHECK(std::string(m.upperdir) == "");
	CHECK(hte_mountinfo_find(mi.data(), mi.size(), 91, &m) == -1);
	CHECK(hte_mountinfo_has_dev(mi.data(), mi.size(), 0, 40));
	CHECK(!hte_mountinfo_has_dev(mi.data(), mi.size(), 0, 41));

	unsigned long long id = 0;
	std::string fdinfo = "pos:\t0\nflags:\t012100000\nmnt_id:\t80\nino:\t12\n";
	REQUIRE(hte_fdinfo_mnt_id(fdinfo.data(), fdinfo.size(), &id) == 0);
	CHECK(id == 80);
	CHECK(hte_fdinfo_mnt_id("pos:\t0\n", 7, &id) == -1);
}

TEST_CASE("ELF versions: the host's libc is a glibc that covers what the preload needs", "[ocihook][elf]")
{
	std::string libc = libc_path();
	REQUIRE(!libc.empty());
	std::string err;
	auto have = versions_of(read_file(libc), &err);
	INFO(libc << ": " << err);
	REQUIRE(have);
	char ver[32];
	REQUIRE(hte_glibc_version(have.get(), ver, sizeof(ver)) == 0);
	INFO("glibc " << ver);
	CHECK(std::string(have->def[0]) == "libc.so.6"); // the soname comes first
	CHECK(have->nfiles >= 1);                         // libc needs the loader's versions

	auto pre = versions_of(read_file(build_path("lib/libhugetext-preload.so")), &err);
	INFO(err);
	REQUIRE(pre);
	CHECK(pre->machine == have->machine);
	CHECK(hte_loader_path(pre->machine, pre->elfclass) != nullptr);
	const hte_verneed *libc_need = nullptr;
	for (unsigned i = 0; i < pre->nfiles; i++)
		if (std::string(pre->need[i].file) == "libc.so.6")
			libc_need = &pre->need[i];
	REQUIRE(libc_need);
	bool needs_234 = false;
	for (unsigned i = 0; i < libc_need->n; i++)
		needs_234 |= std::string(libc_need->name[i]) == "GLIBC_2.34";
	CHECK(needs_234); // the preload is built on Debian 12's glibc 2.36
	// Its DT_NEEDED libraries are needs too, each once (libc.so.6 and the loader, with their versions).
	for (unsigned i = 0; i < pre->nfiles; i++)
		for (unsigned j = i + 1; j < pre->nfiles; j++)
			CHECK(std::string(pre->need[i].file) != pre->need[j].file);
	char missing[HTE_VER_NAME_MAX] = "";
	CHECK(hte_versions_cover(have.get(), libc_need, missing, sizeof(missing)) == 1);
}

TEST_CASE("ELF versions: a glibc 2.17 lacks GLIBC_2.34; another machine and damaged files are told apart",
	  "[ocihook][elf]")
{
	auto old = versions_of(read_file(build_path("tests/containers/fake-libc-2.17.so")));
	REQUIRE(old);
	char ver[32];
	REQUIRE(hte_glibc_version(old.get(), ver, sizeof(ver)) == 0);
	CHECK(std::string(ver) == "2.17");
	hte_verneed need{};
	std::snprintf(need.file, sizeof(need.file), "libc.so.6");
	need.n = 2;
	std::snprintf(need.name[0], sizeof(need.name[0]), "GLIBC_2.2.5");
	std::snprintf(need.name[1], sizeof(need.name[1]), "GLIBC_2.34");
	char missing[HTE_VER_NAME_MAX] = "";
	CHECK(hte_versions_cover(old.get(), &need, missing, sizeof(missing)) == 0);
	CHECK(std::string(missing) == "GLIBC_2.34");

	// The host's libc with another e_machine: read, and its machine is what it says.
	std::string libc = read_file(libc_path());
	std::string arm = libc;
	arm[18] = (char)183; // EM_AARCH64, little-endian
	arm[19] = 0;
	auto v = versions_of(arm);
	REQUIRE(v);
	CHECK(v->machine == 183);
	CHECK(std::string(hte_loader_path(183, 64)) == "/lib/ld-linux-aarch64.so.1");
	CHECK(hte_loader_path(3, 32) == nullptr); // i386: not built

	std::string err;
	CHECK(!versions_of("", &err));
	CHECK(err == "not an ELF file");
	CHECK(!versions_of("#!/bin/sh\n", &err));
	// Cut or scribbled on: refused or read, never a crash (the image's author wrote it).
	for (size_t cut : { (size_t)64, (size_t)4096, libc.size() / 2, libc.size() - 1 })
		versions_of(libc.substr(0, cut));
	std::string mangled = libc;
	unsigned seed = 12345;
	for (int round = 0; round < 200; round++) {
		mangled = libc;
		for (int k = 0; k < 64; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % libc.size();
			mangled[at] = (char)(seed >> 3);
		}
		// The headers too, where the tables' offsets live.
		seed = seed * 1103515245u + 12345u;
		mangled[(seed >> 8) % 64] = (char)(seed >> 16);
		versions_of(mangled);
	}
	SUCCEED("200 mangled copies and 4 cut ones read without a crash");
}

TEST_CASE("the command: bad standard input gets a clear message and exit 1; nothing is written",
	  "[ocihook][cli]")
{
	temp t;
	REQUIRE(!t.path.empty());
	const struct {
		std::string in, err;
	} bad[] = {
		{ "", "hugetext oci-hook: the state is empty\n" },
		{ "hello", "hugetext oci-hook: the state is not JSON: " },
		{ "{\"ociVersion\":\"1\"}", "hugetext oci-hook: the state has no \"id\"\n" },
		{ state_json("running"), "hugetext oci-hook: the state: status \"running\" is neither" },
		{ std::string(HTE_OCI_STATE_MAX + 1, ' '), "hugetext oci-hook: cannot read the state on standard input: "
							     "longer than 1 MiB\n" },
	};
	for (auto &b : bad) {
		prog_result r = hook(t.path, b.in);
		INFO(b.in.substr(0, 80) << " -> " << r.err);
		CHECK(r.status == 1);
		CHECK(r.err.rfind(b.err, 0) == 0);
		CHECK(r.out == "");
	}
	CHECK(!file_exists(t.path + "/containers"));
	CHECK(!file_exists(t.path + "/hook.log"));

	// Run by a user (a rootless engine given our hooks.d): the container starts unchanged.
	if (geteuid() == 0) {
		const std::string ask = ",\"pid\":1,\"annotations\":{\"io.hugetext/enable\":\"1\"}";
		chmod(t.path.c_str(), 0755);
		std::ofstream(t.path + "/stdin-user") << state_json("creating", ask);
		chmod((t.path + "/stdin-user").c_str(), 0644);
		prog_opts o;
		o.stdin_path = t.path + "/stdin-user";
		// A copy nobody may run: a clone in root's home (mode 700) is out of its reach.
		world_dir w;
		std::string exe = w.put(hugetext());
		REQUIRE(!exe.empty());
		prog_result r = run_prog({ "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe,
					   "oci-hook", "--log", "", "--records", t.path + "/containers" }, o);
		INFO(r.err);
		CHECK(r.status == 0);
		CHECK(r.err.find("not root (a rootless engine?): the container starts unchanged") != std::string::npos);
		CHECK(!file_exists(t.path + "/containers"));
	}

	prog_result u = hook(t.path, state_json(), { "--records", "relative" });
	CHECK(u.status == 2);
	CHECK(u.err.find("'relative': the hook's paths are absolute") != std::string::npos);
	u = hook(t.path, state_json(), { "--no-such" });
	CHECK(u.status == 2);
}

TEST_CASE("the command: a container that did not ask costs a parse and leaves no trace; a gone "
	  "process fails it; a process of the host's own mount namespace is not changed",
	  "[ocihook][cli]")
{
	if (geteuid() != 0) {
		WARN("not root: the hook runs as root only");
		return;
	}
	temp t;
	REQUIRE(!t.path.empty());
	std::string self = std::to_string(getpid());
	std::string mounts = read_file("/proc/self/mountinfo");

	prog_result r = hook(t.path, state_json("creating", ",\"pid\":" + self));
	CHECK(r.status == 0);
	CHECK(r.err == "");
	CHECK(!file_exists(t.path + "/containers"));
	CHECK(!file_exists(t.path + "/hook.log"));
	// Its poststop neither: nothing to remove, nothing written.
	r = hook(t.path, state_json("stopped", ""));
	CHECK(r.status == 0);
	CHECK(r.err == "");
	CHECK(!file_exists(t.path + "/containers"));
	CHECK(!file_exists(t.path + "/hook.log"));

	// A pid nobody has: a child that has been reaped.
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	REQUIRE(child > 0);
	waitpid(child, nullptr, 0);
	const std::string ask = ",\"annotations\":{\"io.hugetext/enable\":\"1\"}";
	r = hook(t.path, state_json("creating", ",\"pid\":" + std::to_string(child) + ask));
	INFO(r.err);
	CHECK(r.status == 1);
	CHECK(r.err.find("the container's process " + std::to_string(child) + " is gone") != std::string::npos);

	// Our own process: the host's mount namespace.  Refused, recorded, nothing mounted.
	r = hook(t.path, state_json("creating", ",\"pid\":" + self + ask));
	INFO(r.err);
	CHECK(r.status == 0);
	CHECK(r.err.find("not injected: its process shares the host's mount namespace") != std::string::npos);
	std::string rec = read_file(t.path + "/containers/" + id64 + ".json");
	CHECK(rec.find("\"injected\":false") != std::string::npos);
	CHECK(rec.find("\"pid\":" + self) != std::string::npos);
	CHECK(read_file(t.path + "/hook.log").find(id64 + " not injected: its process shares") != std::string::npos);
	CHECK(read_file("/proc/self/mountinfo") == mounts);
	struct stat st;
	REQUIRE(stat((t.path + "/containers").c_str(), &st) == 0);
	CHECK((st.st_mode & 0777) == 0700);
	REQUIRE(stat((t.path + "/containers/" + id64 + ".json").c_str(), &st) == 0);
	CHECK((st.st_mode & 0777) == 0600);

	// containers = off in the policy file: recorded as refused, not even looked at.
	std::ofstream(t.path + "/hugetext.conf") << "containers = off\n";
	chmod((t.path + "/hugetext.conf").c_str(), 0644);
	r = hook(t.path, state_json("creating", ",\"pid\":" + self + ask));
	CHECK(r.status == 0);
	CHECK(r.err.find("not injected: the host's policy is containers = off") != std::string::npos);

	// poststop: the record goes.
	r = hook(t.path, state_json("stopped", ""));
	CHECK(r.status == 0);
	CHECK(!file_exists(t.path + "/containers/" + id64 + ".json"));
	CHECK(read_file(t.path + "/hook.log").find(id64 + " stopped: record and cache view removed") !=
	      std::string::npos);
}

// --- the injection itself, without an engine: a process in a mount namespace of its own ---

namespace {

// A "container": a child in a new mount namespace with an overlay rootfs at @merged (lower
// @lower, upper and work under @top), that waits for a byte on a pipe, then runs @check in
// that namespace, chrooted into the rootfs, and writes its result back.
struct fake_ctr {
	pid_t pid = -1;
	int go[2] = { -1, -1 }, done[2] = { -1, -1 };

	fake_ctr(const std::string &lower, const std::string &top, const std::string &merged,
		 std::string (*check)(const std::string &merged))
	{
		for (const char *d : { "/u", "/w" })
			mkdir((top + d).c_str(), 0755);
		mkdir(merged.c_str(), 0755);
		if (pipe(go) < 0 || pipe(done) < 0)
			return;
		pid = fork();
		if (pid != 0) {
			// Our ends only: the child's result ends with its end of done.
			close(go[0]);
			close(done[1]);
			go[0] = done[1] = -1;
			return;
		}
		close(go[1]);
		close(done[0]);
		std::string opts = "lowerdir=" + lower + ",upperdir=" + top + "/u,workdir=" + top + "/w";
		std::string out = "setup failed";
		char c;
		if (unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
		    mount("hth-fake", merged.c_str(), "overlay", 0, opts.c_str()) == 0)
			out = "ready";
		if (write(done[1], out.data(), out.size()) < 0 || read(go[0], &c, 1) != 1)
			_exit(1);
		// As the container's processes will see it: paths resolve inside the rootfs.
		if (chroot(merged.c_str()) < 0 || chdir("/") < 0)
			_exit(1);
		out = check("");
		if (write(done[1], out.data(), out.size()) < 0)
			_exit(1);
		_exit(0);
	}
	std::string wait_ready()
	{
		char buf[64] = "";
		ssize_t n = pid > 0 ? read(done[0], buf, sizeof(buf) - 1) : -1;
		return n > 0 ? std::string(buf, (size_t)n) : "no child";
	}
	std::string run_check()
	{
		char buf[4096];
		std::string out;
		if (write(go[1], "x", 1) != 1)
			return "no child";
		close(go[1]);
		go[1] = -1;
		ssize_t n;
		while ((n = read(done[0], buf, sizeof(buf))) > 0)
			out.append(buf, (size_t)n);
		return out;
	}
	~fake_ctr()
	{
		for (int fd : { go[0], go[1], done[0], done[1] })
			if (fd >= 0)
				close(fd);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
};

// What the container's namespace shows: its ld.so.preload, the preload's bytes, whether writes fail.
std::string look(const std::string &merged)
{
	std::string s = "etc: " + read_file(merged + "/etc/ld.so.preload") + "|";
	s += "run: " + read_file(merged + "/run/hugetext/ld.so.preload") + "|";
	s += "preload-size: " + std::to_string(read_file(merged + "/run/hugetext/libhugetext-preload.so").size()) + "|";
	int fd = open((merged + "/etc/ld.so.preload").c_str(), O_WRONLY | O_APPEND);
	s += std::string("write: ") + (fd >= 0 ? "done" : std::strerror(errno)) + "|";
	if (fd >= 0)
		close(fd);
	fd = open((merged + "/run/hugetext/new").c_str(), O_WRONLY | O_CREAT, 0644);
	s += std::string("create: ") + (fd >= 0 ? "done" : std::strerror(errno)) + "|";
	if (fd >= 0)
		close(fd);
	return s;
}

// A rootfs with the host's glibc loader and libc, and an /etc.
void glibc_tree(const std::string &root)
{
	std::string libc = libc_path(), ld = "/lib64/ld-linux-x86-64.so.2";
	run_prog({ "mkdir", "-p", root + "/etc", root + "/lib64", root + "/lib/x86_64-linux-gnu",
		   root + "/lib/aarch64-linux-gnu" });
	run_prog({ "cp", "-L", libc, root + "/lib/" + (file_exists(ld) ? "x86_64" : "aarch64") + "-linux-gnu/libc.so.6" });
	if (file_exists(ld))
		run_prog({ "cp", "-L", ld, root + "/lib64/" });
	else
		run_prog({ "cp", "-L", "/lib/ld-linux-aarch64.so.1", root + "/lib/" });
	// A sanitizer build's preload needs its runtimes too (libasan, libubsan):
	// the image gets the host's, as an image built with them would have.
	std::string dir = root + "/lib/" + (file_exists(ld) ? "x86_64" : "aarch64") + "-linux-gnu/";
	std::string host = std::string("/lib/") + (file_exists(ld) ? "x86_64" : "aarch64") + "-linux-gnu/";
	prog_result d = run_prog({ "readelf", "-d", build_path("lib/libhugetext-preload.so") });
	for (size_t at = d.out.find("Shared library: ["); at != std::string::npos;
	     at = d.out.find("Shared library: [", at + 1)) {
		size_t b = at + 17, e = d.out.find(']', b);
		std::string name = d.out.substr(b, e - b);
		if (name != "libc.so.6" && file_exists(host + name))
			run_prog({ "cp", "-L", host + name, dir + name });
	}
}

std::string config_json(const std::string &root)
{
	return "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"" + root +
	       "\"},\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"}]}}";
}

} // namespace

TEST_CASE("injection without an engine: a mount namespace of its own gets the read-only mounts, the image's "
	  "lower layer and the host are left as they were", "[ocihook][inject]")
{
	if (geteuid() != 0) {
		WARN("not root: the hook runs as root only");
		return;
	}
	temp t;
	REQUIRE(!t.path.empty());
	std::string lower = t.path + "/lower", merged = t.path + "/merged";
	glibc_tree(lower);
	std::string before = read_file("/proc/self/mountinfo");
	fake_ctr c(lower, t.path, merged, look);
	std::string ready = c.wait_ready();
	if (ready != "ready") {
		WARN("no overlay mount in a new mount namespace here (" << ready << "): nothing to inject into");
		return;
	}
	std::ofstream(t.path + "/config.json") << config_json(merged);
	std::string state = "{\"ociVersion\":\"1.0.2\",\"id\":\"" + id64 + "\",\"status\":\"creating\",\"pid\":" +
			    std::to_string(c.pid) + ",\"bundle\":\"" + t.path +
			    "\",\"annotations\":{\"io.hugetext/enable\":\"1\"}}";
	prog_result r = hook(t.path, state);
	INFO(r.err);
	CHECK(r.status == 0);
	CHECK(r.err.find(" injected (glibc ") != std::string::npos);
	std::string rec = read_file(t.path + "/containers/" + id64 + ".json");
	CHECK(rec.find("\"injected\":true") != std::string::npos);
	CHECK(rec.find("\"upperdir\":\"" + t.path + "/u\"") != std::string::npos);
	std::string seen = c.run_check();
	INFO(seen);
	const std::string list = "/run/hugetext/libhugetext-preload.so\n";
	CHECK(seen.find("etc: " + list + "|") != std::string::npos);
	CHECK(seen.find("run: " + list + "|") != std::string::npos);
	CHECK(seen.find("preload-size: " + std::to_string(read_file(build_path("lib/libhugetext-preload.so")).size())) !=
	      std::string::npos);
	CHECK(seen.find("write: Read-only file system|") != std::string::npos);
	CHECK(seen.find("create: Read-only file system|") != std::string::npos);
	// The mount points went to the upper layer, none to the image's lower one; no mount reached us.
	CHECK(file_exists(t.path + "/u/etc/ld.so.preload"));
	CHECK(file_exists(t.path + "/u/run/hugetext"));
	CHECK(!file_exists(lower + "/etc/ld.so.preload"));
	CHECK(!file_exists(lower + "/run"));
	CHECK(read_file("/proc/self/mountinfo") == before);
}

TEST_CASE("injection without an engine: links out of the rootfs are refused, and what they name is untouched",
	  "[ocihook][inject]")
{
	if (geteuid() != 0) {
		WARN("not root: the hook runs as root only");
		return;
	}
	temp t;
	REQUIRE(!t.path.empty());
	// What the links name, on the host.
	std::string host = t.path + "/host";
	run_prog({ "mkdir", "-p", host + "/etc", host + "/run" });
	std::ofstream(host + "/ld.so.preload") << "host's\n";
	const struct {
		const char *name, *link, *target, *reason;
	} cases[] = {
		{ "preload", "/etc/ld.so.preload", "/ld.so.preload", "/etc/ld.so.preload is a symbolic link: refused" },
		{ "run", "/run", "/run", "/run is a symbolic link: refused" },
		{ "run-hugetext", "/run/hugetext", "/run", "/run/hugetext is a symbolic link: refused" },
	};
	for (auto &k : cases) {
		INFO(k.name);
		std::string top = t.path + "/" + k.name, lower = top + "/lower", merged = top + "/merged";
		mkdir(top.c_str(), 0755);
		glibc_tree(lower);
		run_prog({ "mkdir", "-p", lower + "/run" });
		if (std::string(k.link) == "/run")
			rmdir((lower + "/run").c_str());
		REQUIRE(symlink((host + k.target).c_str(), (lower + k.link).c_str()) == 0);
		const std::string list = "find '" + host + "' -printf '%p %M %s %i %T@\\n'; cat '" + host + "/ld.so.preload'";
		std::string snap = run_prog({ "sh", "-c", list }).out;
		fake_ctr c(lower, top, merged, look);
		if (c.wait_ready() != "ready") {
			WARN("no overlay mount in a new mount namespace here: nothing to inject into");
			return;
		}
		std::ofstream(top + "/config.json") << config_json(merged);
		std::string state = "{\"ociVersion\":\"1.0.2\",\"id\":\"" + id64 + "\",\"status\":\"creating\",\"pid\":" +
				    std::to_string(c.pid) + ",\"bundle\":\"" + top +
				    "\",\"annotations\":{\"io.hugetext/enable\":\"1\"}}";
		prog_result r = hook(t.path, state);
		INFO(r.err);
		CHECK(r.status == 0);
		CHECK(r.err.find(std::string(" not injected: ") + k.reason) != std::string::npos);
		std::string seen = c.run_check();
		CHECK(seen.find("preload-size: 0|") != std::string::npos);
		CHECK(run_prog({ "sh", "-c", list }).out == snap);
		CHECK(!file_exists(top + "/u/etc/ld.so.preload")); // nothing made for a container left alone
	}
}
