// Description: `hugetext doctor` on this machine, in a private mount
// namespace with /run of its own: its lines against what the test reads
// itself (THP from sysfs, the kernel, the file system, the hypervisor
// flag, the iTLB multihit line, a process moved by the preload and one
// without it), its exit status, the shared cache mounted and not, the text
// service running and gone, and hostile inputs it must neither believe
// nor follow (a garbage or foreign state file, a /run/hugetext that is a
// symbolic link, an untrusted policy file).
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <string>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <json-c/json.h>

#include "tooltest.hpp"

extern "C" {
#include "calibrate.h"
}

extern "C" const char *test_skip_reason(void)
{
	if (geteuid() != 0)
		return "needs root: a private mount namespace with /run of its own";
	if (!private_run_dir("/run/hugetext/text"))
		return "no private mount namespace (unshare(CLONE_NEWNS) refused)";
	return nullptr;
}

namespace {

struct check_line {
	std::string level, value, text, fix;
};

// `hugetext doctor --json ARGS`: its exit status and its lines by id.
struct doctor_run {
	int status = -1;
	std::string out, err;
	json_object *o = nullptr;
	explicit doctor_run(const std::vector<std::string> &args = {})
	{
		std::vector<std::string> a{ "doctor", "--json" };
		a.insert(a.end(), args.begin(), args.end());
		run_result r = tool(a);
		status = r.status;
		out = r.out;
		err = r.err;
		o = json_tokener_parse(out.c_str());
	}
	~doctor_run() { json_object_put(o); }
	doctor_run(const doctor_run &) = delete;
	doctor_run &operator=(const doctor_run &) = delete;
	std::string str(json_object *x, const char *key) const
	{
		json_object *v;
		return json_object_object_get_ex(x, key, &v) ? json_object_get_string(v) : "";
	}
	std::vector<check_line> all(const std::string &id) const
	{
		std::vector<check_line> r;
		json_object *checks;
		if (!o || !json_object_object_get_ex(o, "checks", &checks))
			return r;
		for (size_t i = 0; i < json_object_array_length(checks); i++) {
			json_object *c = json_object_array_get_idx(checks, i);
			if (str(c, "id") == id)
				r.push_back({ str(c, "level"), str(c, "value"), str(c, "text"), str(c, "fix") });
		}
		return r;
	}
	check_line one(const std::string &id) const
	{
		std::vector<check_line> r = all(id);
		INFO("doctor output: " << out << err);
		INFO("line " << id);
		REQUIRE(r.size() == 1);
		return r[0];
	}
	json_object *object(const std::string &path) const
	{
		json_object *objs;
		if (!o || !json_object_object_get_ex(o, "objects", &objs))
			return nullptr;
		for (size_t i = 0; i < json_object_array_length(objs); i++) {
			json_object *x = json_object_array_get_idx(objs, i);
			if (str(x, "path") == path)
				return x;
		}
		return nullptr;
	}
	long long number(json_object *x, const char *key) const
	{
		json_object *v;
		return json_object_object_get_ex(x, key, &v) ? json_object_get_int64(v) : -1;
	}
	unsigned count_level(const std::string &level) const
	{
		json_object *checks;
		unsigned n = 0;
		if (o && json_object_object_get_ex(o, "checks", &checks))
			for (size_t i = 0; i < json_object_array_length(checks); i++)
				n += str(json_object_array_get_idx(checks, i), "level") == level;
		return n;
	}
};

std::string trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

std::string boot_id()
{
	return trim(read_file("/proc/sys/kernel/random/boot_id"));
}

// Root's calibration of this boot, as hte_calib_get() keeps it: the doctor reads it instead of running.
void seed_calibration(enum hte_calib_verdict v, const char *why)
{
	hte_calib c{};
	c.verdict = v;
	std::snprintf(c.why, sizeof(c.why), "%s", why);
	std::snprintf(c.boot_id, sizeof(c.boot_id), "%s", boot_id().c_str());
	c.seconds = 3.25;
	c.rounds = 12;
	c.npoints = 1;
	c.point[0].code_bytes = 16u << 20;
	c.point[0].pages = 4096;
	c.point[0].ns_4k = 3;
	c.point[0].ns_2m = 2;
	c.point[0].ratio = 1.5;
	c.point[0].lo = 1.2;
	c.point[0].hi = 1.7;
	c.point[0].huge_ok = 1;
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	REQUIRE(f);
	hte_calib_json(f, &c);
	fclose(f);
	write_file(HTE_CALIB_PATH, std::string(buf, len) + "\n", 0644);
	free(buf);
	REQUIRE(chmod(HTE_CALIB_PATH, 0644) == 0);
}

void clear_run_dir()
{
	for (const char *f : { "service.json", "service.sock", "calibration.json" })
		unlink((std::string("/run/hugetext/") + f).c_str());
}

// The whole-2 MiB anonymous huge bytes of a process's executable mappings, read here from smaps.
unsigned long long exec_anon_huge(int pid)
{
	std::ifstream f("/proc/" + std::to_string(pid) + "/smaps");
	std::string line;
	bool exec = false;
	unsigned long long sum = 0;
	while (std::getline(f, line)) {
		unsigned long long a, b;
		char perms[8];
		if (std::sscanf(line.c_str(), "%llx-%llx %7s", &a, &b, perms) == 3 && line.find(':') > 20) {
			exec = perms[2] == 'x';
			continue;
		}
		unsigned long long kb;
		if (exec && std::sscanf(line.c_str(), "AnonHugePages: %llu kB", &kb) == 1)
			sum += kb << 10;
	}
	return sum;
}

bool cpu_flag(const std::string &flag)
{
	std::ifstream f("/proc/cpuinfo");
	std::string line;
	while (std::getline(f, line))
		if (line.compare(0, 5, "flags") == 0)
			return (line + " ").find(" " + flag + " ") != std::string::npos;
	return false;
}

bool kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;
	REQUIRE(uname(&u) == 0);
	REQUIRE(std::sscanf(u.release, "%d.%d", &a, &b) == 2);
	return a > maj || (a == maj && b >= min);
}

} // namespace

TEST_CASE("the doctor's lines are what the machine is, read here on our own", "[doctor][live]")
{
	clear_run_dir();
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded: 1.50x as fast (95%: 1.20-1.70)");
	std::string prog = real_path(build_path("tests/tools/tools-waiter"));
	temp_dir tmp("doctor-live");
	std::string plain = tmp / "waiter-plain";
	write_file(plain, read_file(prog), 0755);
	REQUIRE(chmod(plain.c_str(), 0755) == 0);
	child moved({ tool_path(), "run", "--mode", "thp", "--", prog });
	child bare({ plain });
	REQUIRE(moved.read_line().compare(0, 5, "ready") == 0);
	REQUIRE(bare.read_line().compare(0, 5, "ready") == 0);
	unsigned long long anon = exec_anon_huge(moved.pid);

	doctor_run d;
	run_result text = tool({ "doctor" });
	CHECK(moved.finish() == 0);
	CHECK(bare.finish() == 0);
	REQUIRE(d.o);

	// THP, as sysfs says it.
	std::string thp = read_setting("/sys/kernel/mm/transparent_hugepage/enabled");
	CHECK(d.one("thp").value == thp);
	CHECK(d.one("thp").level == (thp == "never" ? "BLOCK" : "ok"));
	CHECK(d.one("thp_shmem").value == read_setting("/sys/kernel/mm/transparent_hugepage/shmem_enabled"));
	// PAGEMAP_SCAN: Linux 6.7 has it.
	CHECK(d.one("pagemap_scan").value == (kernel_at_least(6, 7) ? "yes" : "no"));
	// The build directory's file system holds the waiter: its line, decided as docs/kernels.md found it.
	struct statfs sfs;
	REQUIRE(statfs(prog.c_str(), &sfs) == 0);
	bool found = false;
	for (auto &l : d.all("fs")) {
		if (sfs.f_type == 0xEF53 && l.value.compare(0, 5, "ext4 ") == 0) {
			found = true;
			CHECK(l.level == (kernel_at_least(6, 16) ? "ok" : "warn"));
		}
		if (sfs.f_type == 0x58465342 && l.value.compare(0, 4, "xfs ") == 0) {
			found = true;
			CHECK(l.level == "ok");
		}
	}
	if (sfs.f_type == 0xEF53 || sfs.f_type == 0x58465342)
		CHECK(found);
	else
		WARN("the build directory is neither on ext4 nor on XFS: its file system's line not checked");
	// A guest when CPUID says so (the kernel's flag), the multihit line as sysfs has it.
	CHECK(d.one("guest").value == (cpu_flag("hypervisor") ? "yes" : "no"));
	std::string mh = file_exists("/sys/devices/system/cpu/vulnerabilities/itlb_multihit") ?
		trim(read_file("/sys/devices/system/cpu/vulnerabilities/itlb_multihit")) : "";
	CHECK(d.one("itlb_multihit").value == mh);
	// The calibration of this boot, read and not run again.
	CHECK(d.one("calibration").value == "huge_gains");
	CHECK(d.one("calibration").text.find("this boot's") != std::string::npos);
	CHECK(d.one("calibration").text.find("seeded: 1.50x") != std::string::npos);
	// No policy file in this namespace's view is the machine's own: whatever it is, the line exists.
	CHECK(d.all("policy").size() == 1);
	// The waiter moved by the preload: its huge pages as smaps says, and one without it, said so.
	json_object *w = d.object(prog);
	REQUIRE(w);
	CHECK(d.number(w, "with_preload") == 1);
	CHECK(d.number(w, "processes") == 1);
	json_object *huge;
	REQUIRE(json_object_object_get_ex(w, "huge", &huge));
	CHECK(d.number(huge, "thp") == (long long)anon);
	if (anon == 0)
		WARN("the preload did not move the waiter (THP off or no room): only the count is checked");
	json_object *p = d.object(plain);
	REQUIRE(p);
	CHECK(d.number(p, "with_preload") == 0);
	CHECK(d.str(p, "verdict") == "nothing: the preload is not loaded in its process");
	CHECK(d.str(p, "fix") == "hugetext run -- " + plain);
	// Exit status: 1 exactly when a line blocks; here, with THP on, nothing does.
	CHECK(d.status == (d.count_level("BLOCK") ? 1 : 0));
	CHECK(d.number(d.o, "exit") == d.status);
	if (thp != "never")
		CHECK(d.status == 0);
	// The text: one screen, every problem with its command.
	CHECK(text.status == d.status);
	size_t lines = 0;
	for (char c : text.out)
		lines += c == '\n';
	INFO(text.out);
	CHECK(lines <= 40);
	for (size_t at = 0; (at = text.out.find("\n  warn  ", at)) != std::string::npos;) {
		size_t next = text.out.find('\n', at + 1);
		CHECK(text.out.compare(next + 1, 12, "        do: ") == 0);
		at = next;
	}
	CHECK(text.out.find("Exit status " + std::to_string(text.status) + ".") != std::string::npos);
}

TEST_CASE("the calibration runs when this boot has none, and --calibrate runs it again", "[doctor][live]")
{
	clear_run_dir();
	doctor_run first;
	check_line c = first.one("calibration");
	CHECK(c.text.find("just measured, kept for this boot") != std::string::npos);
	// The figures behind the verdict are in the line (its why) and in the JSON.
	json_object *cal;
	REQUIRE(json_object_object_get_ex(first.o, "calibration", &cal));
	CHECK(first.str(cal, "verdict") == c.value);
	CHECK(c.text.find(first.str(cal, "why")) != std::string::npos);
	CHECK(c.text.find("ns") != std::string::npos);
	struct stat st;
	REQUIRE(stat(HTE_CALIB_PATH, &st) == 0);
	CHECK(st.st_uid == 0);
	doctor_run second;
	CHECK(second.one("calibration").text.find("this boot's") != std::string::npos);
	doctor_run again({ "--calibrate" });
	CHECK(again.one("calibration").text.find("just measured") != std::string::npos);
	// A verdict of no gain blocks: exit 1, in plain words, with what to do.
	seed_calibration(HTE_CALIB_NO_GAIN, "seeded: 1.00x (95%: 0.98-1.02)");
	doctor_run none;
	CHECK(none.one("calibration").level == "BLOCK");
	CHECK(none.one("calibration").text.find("gain nothing") != std::string::npos);
	CHECK(none.one("calibration").fix.find("--calibrate") != std::string::npos);
	CHECK(none.status == 1);
	run_result t = tool({ "doctor" });
	CHECK(t.status == 1);
	CHECK(t.out.find("BLOCK calibration") != std::string::npos);
}

TEST_CASE("the shared cache: not mounted, mounted with huge pages, mounted without", "[doctor][live]")
{
	clear_run_dir();
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded");
	umount2("/run/hugetext/text", MNT_DETACH);
	{
		doctor_run d;
		CHECK(d.one("text_cache").value == "absent");
	}
	REQUIRE(mount("doctor-test", "/run/hugetext/text", "tmpfs", MS_NOSUID | MS_NODEV,
		      "huge=within_size,size=64m,mode=1777") == 0);
	{
		doctor_run d;
		CHECK(d.one("text_cache").value == "mounted");
		CHECK(d.one("text_cache").level == "ok");
		CHECK(d.one("text_cache").text.find("of 64.0 MiB") != std::string::npos);
	}
	REQUIRE(umount2("/run/hugetext/text", 0) == 0);
	REQUIRE(mount("doctor-test", "/run/hugetext/text", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") == 0);
	{
		doctor_run d;
		CHECK(d.one("text_cache").level == "warn");
		CHECK(d.one("text_cache").text.find("without huge=") != std::string::npos);
	}
	REQUIRE(umount2("/run/hugetext/text", 0) == 0);
}

TEST_CASE("the text service: running, then gone; its state file read as the service wrote it", "[doctor][live]")
{
	clear_run_dir();
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded");
	child serve({ tool_path(), "serve", "--no-warm" });
	for (int i = 0; i < 100 && !file_exists("/run/hugetext/service.json"); i++)
		usleep(50000);
	REQUIRE(file_exists("/run/hugetext/service.json"));
	{
		doctor_run d;
		check_line s = d.one("service");
		CHECK(s.level == "ok");
		CHECK(s.value == "running");
		CHECK(s.text.find("pid " + std::to_string(serve.pid)) != std::string::npos);
	}
	kill(serve.pid, SIGTERM);
	serve.finish();
	umount2("/run/hugetext/text", MNT_DETACH);
	if (!file_exists("/run/hugetext/service.json")) {
		WARN("the service removed its state file as it ended: the stopped case is not checked");
		return;
	}
	doctor_run d;
	CHECK(d.one("service").value == "stopped");
	CHECK(d.one("service").level == "warn");
	CHECK(d.one("service").fix.find("hugetext serve &") != std::string::npos);
}

TEST_CASE("a garbage, foreign or linked state file is not believed, and said so", "[doctor][live]")
{
	clear_run_dir();
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded");
	const std::string state = "/run/hugetext/service.json";
	write_file(state, "garbage {\"pid\": 1}\n", 0644);
	{
		doctor_run d;
		CHECK(d.one("service").value == "garbage");
		CHECK(d.status == 0);
	}
	// A good-looking state, but another user's file.
	write_file(state, "{\"pid\":1,\"offers\":99,\"warmed_total\":0,\"filled_total\":0,\"evicted_total\":0,"
			  "\"refused_total\":0}\n", 0644);
	REQUIRE(chown(state.c_str(), 65534, 65534) == 0);
	{
		doctor_run d;
		CHECK(d.one("service").value == "untrusted");
		CHECK(d.one("service").text.find("not owned by root") != std::string::npos);
		CHECK(d.out.find("99 offers") == std::string::npos);
	}
	// A link to a file root may read and nobody should see through the doctor.
	unlink(state.c_str());
	REQUIRE(symlink("/etc/shadow", state.c_str()) == 0);
	{
		doctor_run d;
		CHECK(d.one("service").value == "untrusted");
		CHECK(d.one("service").text.find("symbolic link") != std::string::npos);
		CHECK(d.out.find("root:") == std::string::npos);
	}
	unlink(state.c_str());
	// A FIFO must not hang it.
	REQUIRE(mkfifo(state.c_str(), 0644) == 0);
	{
		doctor_run d;
		CHECK(d.one("service").value == "untrusted");
		CHECK(d.one("service").text.find("not a regular file") != std::string::npos);
	}
	unlink(state.c_str());
}

// Puts /run/hugetext back as it was, whatever a failed check left it as.
struct run_dir_back {
	~run_dir_back()
	{
		struct stat st;
		if (lstat("/run/hugetext", &st) == 0 && S_ISLNK(st.st_mode)) {
			unlink("/run/hugetext");
			rename("/run/hugetext.real", "/run/hugetext");
		}
		if (chown("/run/hugetext", 0, 0) != 0 || chmod("/run/hugetext", 0755) != 0)
			WARN("cannot put /run/hugetext back");
	}
};

TEST_CASE("a /run/hugetext that is a link, or not root's, is neither followed nor written", "[doctor][live]")
{
	run_dir_back back;
	clear_run_dir();
	temp_dir evil("doctor-evil");
	write_file(evil / "service.json", "{\"pid\":1,\"offers\":4242,\"warmed_total\":0,\"filled_total\":0,"
					  "\"evicted_total\":0,\"refused_total\":0}\n", 0644);
	REQUIRE(rename("/run/hugetext", "/run/hugetext.real") == 0);
	REQUIRE(symlink(evil.path.c_str(), "/run/hugetext") == 0);
	// The link's target gets a forged calibration of this boot, root's: it must not be read.
	seed_calibration(HTE_CALIB_NO_HUGE, "forged verdict");
	struct stat before;
	REQUIRE(stat((evil / "calibration.json").c_str(), &before) == 0);
	{
		doctor_run d;
		check_line r = d.one("run_dir");
		CHECK(r.level == "warn");
		CHECK(r.value == "a symbolic link");
		CHECK(d.all("service").empty());
		CHECK(d.out.find("4242") == std::string::npos);
		CHECK(d.out.find("forged verdict") == std::string::npos);
		CHECK(d.one("calibration").text.find("not kept") != std::string::npos);
		CHECK(d.one("calibration").value != "no_huge");
	}
	struct stat after;
	REQUIRE(stat((evil / "calibration.json").c_str(), &after) == 0);
	CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
	CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
	CHECK(after.st_ino == before.st_ino);
	REQUIRE(unlink("/run/hugetext") == 0);
	REQUIRE(rename("/run/hugetext.real", "/run/hugetext") == 0);
	// Root's directory that another user owns, or that anyone may write.
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded");
	REQUIRE(chown("/run/hugetext", 65534, 65534) == 0);
	{
		doctor_run d;
		CHECK(d.one("run_dir").value == "not owned by root");
	}
	REQUIRE(chown("/run/hugetext", 0, 0) == 0);
	REQUIRE(chmod("/run/hugetext", 0777) == 0);
	{
		doctor_run d;
		CHECK(d.one("run_dir").value == "writable by others than root");
	}
	REQUIRE(chmod("/run/hugetext", 0755) == 0);
	doctor_run d;
	CHECK(d.all("run_dir").empty());
}

TEST_CASE("the policy file: untrusted is ignored whole, trusted is read, mode = off blocks", "[doctor][live]")
{
	clear_run_dir();
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded");
	temp_dir tmp("doctor-policy");
	std::string conf = tmp / "hugetext.conf";
	// Anyone may write it: the preload ignores it, and so its mode = off blocks nothing.
	write_file(conf, "mode = off\n", 0666);
	REQUIRE(chmod(conf.c_str(), 0666) == 0);
	{
		doctor_run d({ "--config", conf });
		CHECK(d.one("policy").value == "untrusted");
		CHECK(d.one("policy").fix.find("chmod 644 " + conf) != std::string::npos);
		CHECK(d.all("policy_mode").empty());
		CHECK(d.status == 0);
	}
	// Another user's file.
	REQUIRE(chmod(conf.c_str(), 0644) == 0);
	REQUIRE(chown(conf.c_str(), 65534, 65534) == 0);
	{
		doctor_run d({ "--config", conf });
		CHECK(d.one("policy").value == "untrusted");
		CHECK(d.one("policy").text.find("not owned by root") != std::string::npos);
	}
	// A link, even to a good file.
	REQUIRE(chown(conf.c_str(), 0, 0) == 0);
	std::string link = tmp / "link.conf";
	REQUIRE(symlink(conf.c_str(), link.c_str()) == 0);
	{
		doctor_run d({ "--config", link });
		CHECK(d.one("policy").value == "untrusted");
		CHECK(d.one("policy").text.find("symbolic link") != std::string::npos);
	}
	// Root's: read, and its mode = off blocks everything.
	{
		doctor_run d({ "--config", conf });
		CHECK(d.one("policy").value == "trusted");
		CHECK(d.one("policy_mode").level == "BLOCK");
		CHECK(d.status == 1);
	}
	write_file(conf, "min_code = 8M\nservice = 0\nfrobnicate = yes\n", 0644);
	{
		doctor_run d({ "--config", conf });
		CHECK(d.one("policy").text.find("sets min_code, service") != std::string::npos);
		CHECK(d.one("policy_unknown").text.find("'frobnicate' (line 3)") != std::string::npos);
		CHECK(d.number(d.o, "min_code") == 8ll << 20);
		CHECK(d.all("service").empty());
		CHECK(d.status == 0);
	}
	write_file(conf, "mode = thp\nthis is not a line\n", 0644);
	{
		doctor_run d({ "--config", conf });
		CHECK(d.one("policy").value == "invalid");
		CHECK(d.one("policy").text.find("line 2") != std::string::npos);
	}
}

TEST_CASE("the preload in /etc/ld.so.preload, beside a name that is no file", "[doctor][live]")
{
	clear_run_dir();
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded");
	// This namespace's /etc gets an ld.so.preload of its own: an overlay, never the machine's file.
	temp_dir tmp("doctor-etc");
	REQUIRE(mkdir((tmp / "upper").c_str(), 0755) == 0);
	REQUIRE(mkdir((tmp / "work").c_str(), 0755) == 0);
	std::string preload = real_path(build_path("lib/libhugetext-preload.so"));
	write_file(tmp / "upper/ld.so.preload", preload + "\n/nonexistent/libgone.so\n", 0644);
	std::string opts = "lowerdir=/etc,upperdir=" + tmp / "upper" + ",workdir=" + tmp / "work";
	if (mount("overlay", "/etc", "overlay", 0, opts.c_str()) != 0) {
		WARN("cannot mount an overlay on /etc here (" << std::strerror(errno) << "): not checked");
		return;
	}
	doctor_run d;
	umount2("/etc", MNT_DETACH);
	check_line p = d.one("preload");
	CHECK(p.level == "ok");
	CHECK(p.value == preload);
	// The doctor itself runs with it now: one process at least.
	CHECK(p.text.find("in 0 running") == std::string::npos);
	CHECK(p.text.find("hugetext ") != std::string::npos); // the doctor itself, named with its pid
	check_line m = d.one("preload_missing");
	CHECK(m.level == "warn");
	CHECK(m.value == "/nonexistent/libgone.so");
	CHECK(m.fix.find("/etc/ld.so.preload") != std::string::npos);
}

TEST_CASE("run by another user: what it cannot read is said, this boot's calibration is root's", "[doctor][live]")
{
	if (!have_program("setpriv")) {
		WARN("setpriv is missing: not checked");
		return;
	}
	clear_run_dir();
	seed_calibration(HTE_CALIB_HUGE_GAINS, "seeded for everyone");
	// A copy nobody can reach: the build may be in root's home (mode 700).
	world_dir w;
	std::string t = w.put(tool_path());
	REQUIRE(!t.empty());
	run_result r = run_cmd({ "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", t, "doctor" });
	INFO(r.out << r.err);
	CHECK((r.status == 0 || r.status == 1));
	CHECK(r.out.find("not readable: run as root)") != std::string::npos);
	CHECK(r.out.find("could not be read (run as root)") != std::string::npos);
	CHECK(r.out.find("calibration (this boot's): 2 MiB pages of code gain here: seeded for everyone") !=
	      std::string::npos);
	// It wrote nothing of its own where root keeps the calibration.
	struct stat st;
	REQUIRE(stat(HTE_CALIB_PATH, &st) == 0);
	CHECK(st.st_uid == 0);
}

TEST_CASE("usage errors exit 2; --help exits 0", "[doctor][live]")
{
	run_result r = tool({ "doctor", "--frobnicate" });
	CHECK(r.status == 2);
	CHECK(r.err.find("usage: hugetext doctor") != std::string::npos);
	r = tool({ "doctor", "extra" });
	CHECK(r.status == 2);
	r = tool({ "doctor", "--config" });
	CHECK(r.status == 2);
	r = tool({ "doctor", "--help" });
	CHECK(r.status == 0);
	CHECK(r.out.find("Exit status: 0 nothing blocks") != std::string::npos);
	// hugetext(1) documents the command, each of its options and its exit status.
	std::string page = replace_all(read_file(source_path("man/hugetext.1")), "\\-", "-");
	CHECK(page.find(".SS \"doctor ") != std::string::npos);
	for (const char *o : { "--json", "--calibrate", "--config" }) {
		INFO(o);
		CHECK(r.out.find(std::string("  ") + o) != std::string::npos);
		CHECK((page.find(std::string(".B ") + o) != std::string::npos || page.find(std::string(".BI ") + o) != std::string::npos));
	}
	CHECK(page.find("3 the doctor could not look") != std::string::npos);
	// hugetext's own usage lists it.
	CHECK(tool({ "--help" }).out.find("\n  doctor [--json] [--calibrate]\n") != std::string::npos);
}
