// The Debian packages: built from a copy of the source tree with
// dpkg-buildpackage, unpacked with dpkg -x into a throw-away root, their
// file lists and control data checked, the service unit verified, and a
// consumer built against the unpacked hugetext.pc and run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "../helpers.hpp"

namespace fs = std::filesystem;

static const char *const packages[] = { "libhugetext0", "libhugetext-dev", "hugetext" };

// What ends up in the packages' environment must not come from meson test.
static const std::vector<std::string> clean_env = {
	"LD_PRELOAD", "LD_LIBRARY_PATH", "DESTDIR", "MESONINTROSPECT", "PKG_CONFIG_PATH",
	"PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR", "CFLAGS", "LDFLAGS",
};

static std::string trim(const std::string &s)
{
	size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
	return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

static std::string query(const std::vector<std::string> &argv)
{
	prog_opts o;
	o.cwd = source_path("");
	prog_result r = run_prog(argv, o);
	return r.status == 0 ? trim(r.out) : "";
}

extern "C" const char *test_skip_reason(void)
{
	static std::string why;

	for (const char *p : { "dpkg-buildpackage", "dpkg-deb", "dpkg-architecture", "dh" })
		if (!have_program(p))
			return (why = std::string(p) + " is missing: apt-get install dpkg-dev debhelper").c_str();
	if (!file_exists(source_path("debian/control")))
		return "the source tree has no debian/";
	prog_opts o;
	o.cwd = source_path("");
	prog_result r = run_prog({ "dpkg-checkbuilddeps" }, o);
	if (r.status != 0)
		return (why = "the build dependencies are missing: " + trim(r.err)).c_str();
	return nullptr;
}

// The packages, built once for all the cases; removed at exit.
struct built {
	std::string dir;       // holds src/, the .debs, the roots
	std::string version;   // 0.1.0-1
	std::string arch;      // amd64
	std::string multiarch; // x86_64-linux-gnu
	std::string root;      // every package unpacked together
	std::string log;       // dpkg-buildpackage's output
	int status = -1;

	built();
	~built() { if (!dir.empty()) fs::remove_all(dir); }
	std::string deb(const std::string &pkg) const
	{
		return dir + "/" + pkg + "_" + version + "_" + arch + ".deb";
	}
	std::string pkg_root(const std::string &pkg) const { return dir + "/root-" + pkg; }
	std::string libdir() const { return "usr/lib/" + multiarch; }
};

// The working tree as meson sees it (git's tracked and unignored files, or
// everything but build directories), so the build never writes into it.
static int copy_source(const std::string &to)
{
	std::string src = source_path("");
	std::string cmd = "mkdir -p '" + to + "' && cd '" + src + "' && "
		"if [ -d .git ] && command -v git >/dev/null; then "
		"git ls-files -co --exclude-standard -z | tar --null -T - -cf -; "
		"else tar --exclude=./.git --exclude='./build*' --exclude='./obj-*' --exclude=./debian/build -cf - .; fi"
		" | tar -xf - -C '" + to + "'";
	return run_prog({ "sh", "-c", cmd }).status;
}

built::built()
{
	char tmpl[] = "/tmp/hugetext-package-XXXXXX";
	if (!mkdtemp(tmpl))
		return;
	dir = tmpl;
	version = query({ "dpkg-parsechangelog", "-S", "Version" });
	arch = query({ "dpkg-architecture", "-qDEB_HOST_ARCH" });
	multiarch = query({ "dpkg-architecture", "-qDEB_HOST_MULTIARCH" });
	if (copy_source(dir + "/src") != 0)
		return;

	prog_opts o = {};
	o.cwd = dir + "/src";
	o.env = clean_env;
	o.env.push_back("DEB_BUILD_OPTIONS=nocheck parallel=" +
			std::to_string(std::max(1u, std::thread::hardware_concurrency())));
	o.timeout_s = 1500;
	prog_result r = run_prog({ "dpkg-buildpackage", "-us", "-uc", "-b" }, o);
	status = r.status;
	log = r.out + r.err;
	if (status != 0)
		return;

	root = dir + "/root";
	for (const char *p : packages) {
		run_prog({ "dpkg", "-x", deb(p), pkg_root(p) });
		run_prog({ "dpkg", "-x", deb(p), root });
	}
}

static const built &packages_built()
{
	static built b;

	if (b.status != 0) {
		size_t cut = b.log.size() > 6000 ? b.log.size() - 6000 : 0;
		INFO("dpkg-buildpackage exited " << b.status << "; the end of its output:\n"
		     << b.log.substr(cut));
		REQUIRE(b.status == 0);
	}
	return b;
}

// Every file and symbolic link under @root ("path" or "path -> target").
static std::set<std::string> file_list(const std::string &root)
{
	std::set<std::string> out;

	for (auto &e : fs::recursive_directory_iterator(root)) {
		std::string rel = e.path().string().substr(root.size() + 1);
		if (e.is_symlink())
			out.insert(rel + " -> " + fs::read_symlink(e.path()).string());
		else if (!e.is_directory())
			out.insert(rel);
	}
	return out;
}

static std::string joined(const std::set<std::string> &s)
{
	std::string out;
	for (auto &x : s)
		out += "  " + x + "\n";
	return out;
}

TEST_CASE("each package holds exactly the files it should")
{
	const built &b = packages_built();
	const std::string lib = b.libdir();
	const std::string full = "libhugetext.so." + b.version.substr(0, b.version.find('-'));
	auto doc = [](const std::string &p) {
		return std::set<std::string>{ "usr/share/doc/" + p + "/changelog.Debian.gz",
					      "usr/share/doc/" + p + "/copyright" };
	};
	std::map<std::string, std::set<std::string>> want = {
		{ "libhugetext0", {
			lib + "/libhugetext-preload.so",
			lib + "/libhugetext-preload-pinned.so",
			lib + "/" + full,
			lib + "/libhugetext.so.0 -> " + full,
			"usr/share/lintian/overrides/libhugetext0",
		} },
		{ "libhugetext-dev", {
			"usr/include/hugetext.h",
			"usr/include/large_page.h",
			lib + "/libhugetext.so -> libhugetext.so.0",
			lib + "/pkgconfig/hugetext.pc",
			"usr/share/man/man3/hugetext.3.gz",
			"usr/share/man/man3/large_page.3.gz",
			"usr/share/lintian/overrides/libhugetext-dev",
		} },
		{ "hugetext", {
			"etc/hugetext.conf",
			"lib/systemd/system/hugetext-serve.service",
			"lib/systemd/system/hugetext-serve.socket",
			"lib/systemd/system/hugetext-setup.service",
			"usr/bin/hugetext",
			"usr/share/man/man1/hugetext.1.gz",
			"usr/share/man/man7/hugetext.7.gz",
			"usr/share/lintian/overrides/hugetext",
			"usr/share/containers/oci/hooks.d/50-hugetext.json",
		} },
	};
	for (const char *p : packages) {
		want[p].merge(doc(p));
		std::set<std::string> got = file_list(b.pkg_root(p));
		INFO(p << " holds:\n" << joined(got) << "expected:\n" << joined(want[p]));
		CHECK(got == want[p]);
	}
}

TEST_CASE("the packages depend on each other by exact version")
{
	const built &b = packages_built();
	const std::string exact = "libhugetext0 (= " + b.version + ")";

	for (const char *p : { "libhugetext-dev", "hugetext" }) {
		std::string dep = query({ "dpkg-deb", "-f", b.deb(p), "Depends" });
		INFO(p << " Depends: " << dep);
		CHECK(dep.find(exact) != std::string::npos);
	}
}

TEST_CASE("the policy file is a conffile that sets nothing")
{
	const built &b = packages_built();

	CHECK(query({ "dpkg-deb", "-I", b.deb("hugetext"), "conffiles" }) == "/etc/hugetext.conf");
	std::istringstream conf(read_file(b.root + "/etc/hugetext.conf"));
	std::string line;
	int lines = 0;
	while (std::getline(conf, line)) {
		line = trim(line);
		INFO("line: " << line);
		CHECK((line.empty() || line[0] == '#'));
		lines++;
	}
	CHECK(lines > 10); // the keys are documented there
}

TEST_CASE("the packaged command takes the packaged policy file, and each example in it")
{
	const built &b = packages_built();
	const std::string hugetext = b.root + "/usr/bin/hugetext", conf = b.root + "/etc/hugetext.conf";

	// The file is honoured only when root owns it; dpkg -x makes it ours.
	if (geteuid() != 0) {
		WARN("not root: the unpacked policy file is not root's, so hugetext setup would refuse it");
		return;
	}
	prog_result as_shipped = run_prog({ hugetext, "setup", "--dry-run", "--config", conf });
	INFO(as_shipped.out << as_shipped.err);
	CHECK(as_shipped.status == 0);
	CHECK(as_shipped.out.find("would") == std::string::npos); // nothing to do

	// Every "#key = value" example, uncommented, parses (2: a bad file).
	std::istringstream in(read_file(conf));
	std::string line, on;
	int examples = 0;
	while (std::getline(in, line)) {
		bool example = line.size() > 1 && line[0] == '#' && std::islower((unsigned char)line[1]) &&
			       line.find(" = ") != std::string::npos;
		examples += example;
		on += (example ? line.substr(1) : line) + "\n";
	}
	const std::string on_path = b.dir + "/examples.conf";
	std::ofstream(on_path) << on;
	fs::permissions(on_path, fs::perms::owner_read | fs::perms::owner_write |
				 fs::perms::group_read | fs::perms::others_read);
	prog_result all_on = run_prog({ hugetext, "setup", "--dry-run", "--config", on_path });
	INFO(on << all_on.out << all_on.err);
	CHECK(examples >= 10);
	CHECK(all_on.status == 0);
}

TEST_CASE("the set-up is enabled on install but not started; the text service's socket is started")
{
	const built &b = packages_built();
	std::string postinst = query({ "dpkg-deb", "-I", b.deb("hugetext"), "postinst" });

	INFO(postinst);
	CHECK(postinst.find("deb-systemd-helper enable 'hugetext-setup.service'") != std::string::npos);
	// --no-start: installing reserves no memory and mounts nothing.
	CHECK(postinst.find("deb-systemd-invoke start 'hugetext-setup.service'") == std::string::npos);
	// The socket listens at once; the service starts at the first offer.
	CHECK(postinst.find("deb-systemd-helper enable 'hugetext-serve.socket'") != std::string::npos);
	CHECK(postinst.find("hugetext-serve.socket") != std::string::npos);
}

TEST_CASE("removing the library takes its line out of ld.so.preload, and only on remove")
{
	const built &b = packages_built();
	const std::string fake = b.dir + "/fake-root", list = fake + "/etc/ld.so.preload";
	const std::string preload = "/" + b.libdir() + "/libhugetext-preload.so";
	const std::string other = "/usr/lib/libother-preload.so\n";

	fs::create_directories(fake + "/etc");
	std::string prerm = query({ "dpkg-deb", "-I", b.deb("libhugetext0"), "prerm" });
	REQUIRE(!prerm.empty());
	std::ofstream(b.dir + "/prerm") << prerm << "\n";
	prog_opts o;
	o.env = { "DPKG_ROOT=" + fake };

	std::ofstream(list) << other << preload << "\n";
	prog_result up = run_prog({ "sh", b.dir + "/prerm", "upgrade", b.version }, o);
	CHECK(up.status == 0);
	CHECK(read_file(list) == other + preload + "\n");

	prog_result rm = run_prog({ "sh", b.dir + "/prerm", "remove" }, o);
	INFO(rm.err);
	CHECK(rm.status == 0);
	CHECK(read_file(list) == other);

	fs::remove(list); // no list at all: nothing to do
	CHECK(run_prog({ "sh", b.dir + "/prerm", "remove" }, o).status == 0);
	CHECK(!file_exists(list));
}

namespace {

// The ```ini block under @heading in the Markdown file @md.
std::string doc_block(const std::string &md, const std::string &heading)
{
	std::string text = read_file(source_path(md));
	size_t at = text.find("\n" + heading + "\n");
	if (at == std::string::npos)
		return "";
	auto blocks = fenced_blocks(text.substr(at), "ini");
	return blocks.empty() ? "" : blocks[0];
}

// A root to verify units in: the packages' files, the host's targets and
// slices (the units' default dependencies name them), and @extra files.
std::string verify_root(const built &b, const std::map<std::string, std::string> &extra)
{
	std::string root = b.dir + "/verify-root";
	fs::remove_all(root);
	fs::copy(b.root, root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
	for (const char *dir : { "/lib/systemd/system", "/usr/lib/systemd/system" }) {
		std::error_code ec;
		for (auto &e : fs::directory_iterator(dir, ec)) {
			std::string ext = e.path().extension();
			fs::path to = root + "/lib/systemd/system/" + e.path().filename().string();
			if ((ext == ".target" || ext == ".slice") && !fs::exists(to))
				fs::copy_file(e.path(), to, ec);
		}
	}
	for (auto &[path, text] : extra) {
		fs::create_directories(fs::path(root + path).parent_path());
		std::ofstream(root + path) << text;
	}
	return root;
}

// systemd-analyze verify of @units in @root: its output, empty when all is well.
std::string verify(const built &b, const std::string &root, const std::vector<std::string> &units,
		   int *status)
{
	// The command and the man pages it names are looked up in the root.
	std::vector<std::string> argv = { "systemd-analyze", "--root=" + root, "verify" };
	argv.insert(argv.end(), units.begin(), units.end());
	prog_opts o;
	o.env = { "MANPATH=" + b.root + "/usr/share/man" };
	if (!have_program("man"))
		argv.insert(argv.begin() + 1, "--man=no");
	prog_result r = run_prog(argv, o);
	*status = r.status;
	return r.out + r.err;
}

} // namespace

TEST_CASE("systemd-analyze verify finds nothing wrong with the units")
{
	const built &b = packages_built();
	const std::string dir = "/lib/systemd/system/";

	if (!have_program("systemd-analyze")) {
		WARN("systemd-analyze is missing (apt-get install systemd): the units are not verified");
		return;
	}
	CHECK(read_file(b.root + dir + "hugetext-setup.service").find("ExecStart=/usr/bin/hugetext setup\n") !=
	      std::string::npos);
	CHECK(read_file(b.root + dir + "hugetext-serve.service").find("ExecStart=/usr/bin/hugetext serve\n") !=
	      std::string::npos);
	std::string root = verify_root(b, {});
	for (const char *unit : { "hugetext-setup.service", "hugetext-serve.service", "hugetext-serve.socket" }) {
		int status = -1;
		std::string out = verify(b, root, { dir + unit }, &status);
		INFO(unit << ": " << out);
		CHECK(status == 0);
		CHECK(out == "");
	}
}

TEST_CASE("the systemd drop-in of docs/deploy.md verifies on a server's unit, and is read")
{
	const built &b = packages_built();

	if (!have_program("systemd-analyze")) {
		WARN("systemd-analyze is missing (apt-get install systemd): the drop-in is not verified");
		return;
	}
	std::string dropin = doc_block("docs/deploy.md", "## One service: a systemd drop-in");
	REQUIRE(dropin.find("[Service]\n") == 0);
	// The docs name x86-64's path: it is the one the package installs there.
	size_t at = dropin.find("LD_PRELOAD=");
	REQUIRE(at != std::string::npos);
	std::string lib = dropin.substr(at + 11, dropin.find('\n', at) - at - 11);
	if (b.multiarch == "x86_64-linux-gnu")
		CHECK(file_exists(b.root + lib));
	const std::string unit = "/etc/systemd/system/mysqld.service";
	const std::string server = "[Unit]\nDescription=a server\n\n[Service]\nExecStart=/usr/bin/hugetext status\n";
	int status = -1;
	std::string out = verify(b, verify_root(b, { { unit, server }, { unit + ".d/override.conf", dropin } }),
				 { "mysqld.service" }, &status);
	INFO(out);
	CHECK(status == 0);
	CHECK(out == "");
	// The drop-in is read: a key systemd does not know in it is named.
	out = verify(b, verify_root(b, { { unit, server }, { unit + ".d/override.conf", dropin + "Environmnet=X=1\n" } }),
		     { "mysqld.service" }, &status);
	CHECK(out.find("override.conf") != std::string::npos);
	CHECK(out.find("Environmnet") != std::string::npos);
}

TEST_CASE("a program builds against the unpacked hugetext.pc, links and runs")
{
	const built &b = packages_built();
	const std::string libdir = b.root + "/" + b.libdir();
	const std::string c = b.dir + "/consumer.c", exe = b.dir + "/consumer";

	std::ofstream(c) <<
		"#define _GNU_SOURCE\n"
		"#include <dlfcn.h>\n"
		"#include <stdio.h>\n"
		"#include <hugetext.h>\n"
		"#include <large_page.h>\n"
		"int main(void)\n"
		"{\n"
		"\tDl_info info;\n"
		"\tif (!dladdr((void *)ht_version, &info))\n"
		"\t\treturn 1;\n"
		"\tprintf(\"version %s\\nfrom %s\\nstatus %s\\n\", ht_version(), info.dli_fname,\n"
		"\t       MAP_STATUS_STR_SHORT(map_ok));\n"
		"\treturn 0;\n"
		"}\n";
	prog_opts pc;
	pc.env = clean_env;
	pc.env.insert(pc.env.end(), { "PKG_CONFIG_LIBDIR=" + libdir + "/pkgconfig",
				      "PKG_CONFIG_SYSROOT_DIR=" + b.root,
				      // -I and -L into the root even for /usr.
				      "PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1",
				      "PKG_CONFIG_ALLOW_SYSTEM_LIBS=1" });
	prog_result flags = run_prog({ "pkg-config", "--cflags", "--libs", "hugetext" }, pc);
	INFO("pkg-config: " << flags.out << flags.err);
	REQUIRE(flags.status == 0);
	CHECK(flags.out.find("-I" + b.root + "/usr/include") != std::string::npos);
	CHECK(flags.out.find("-L" + libdir) != std::string::npos);

	prog_result cc = run_prog({ "sh", "-c", "cc -o '" + exe + "' '" + c + "' " + trim(flags.out) }, pc);
	INFO("cc: " << cc.out << cc.err);
	REQUIRE(cc.status == 0);

	prog_opts run;
	run.env = { "LD_LIBRARY_PATH=" + libdir };
	prog_result r = run_prog({ exe }, run);
	INFO("consumer: " << r.out << r.err);
	REQUIRE(r.status == 0);
	CHECK(line_value(r.out, "version") == HT_VERSION_STRING);
	CHECK(line_value(r.out, "from") == libdir + "/libhugetext.so.0");
	CHECK(!line_value(r.out, "status").empty());
}

TEST_CASE("the packaged command runs and finds the packaged preload")
{
	const built &b = packages_built();
	const std::string hugetext = b.root + "/usr/bin/hugetext";

	prog_result v = run_prog({ hugetext, "--version" });
	CHECK(v.status == 0);
	CHECK(trim(v.out) == std::string("hugetext ") + HT_VERSION_STRING);

	// bindir/../lib/MULTIARCH: found next to the command, in the root.
	prog_result r = run_prog({ hugetext, "run", "--", "sh", "-c", "printf '%s' \"$LD_PRELOAD\"" });
	INFO(r.out << r.err);
	CHECK(r.status == 0);
	CHECK(r.out == b.root + "/" + b.libdir() + "/libhugetext-preload.so");
}

TEST_CASE("the OCI hook's hooks.d file names the packaged command and preload")
{
	const built &b = packages_built();
	std::string json = read_file(b.root + "/usr/share/containers/oci/hooks.d/50-hugetext.json");
	INFO(json);
	const std::string preload = "/" + b.libdir() + "/libhugetext-preload.so";
	CHECK(json.find("\"path\": \"/usr/bin/hugetext\"") != std::string::npos);
	CHECK(json.find("\"args\": [\"hugetext\", \"oci-hook\", \"--preload\", \"" + preload + "\"]") != std::string::npos);
	CHECK(json.find("\"stages\": [\"createRuntime\", \"poststop\"]") != std::string::npos);
	CHECK(file_exists(b.root + preload));
	// The packaged command takes the hook's arguments (usage errors exit 2, not this).
	prog_result r = run_prog({ b.root + "/usr/bin/hugetext", "oci-hook", "--help" });
	CHECK(r.status == 0);
	CHECK(r.out.find("usage: hugetext oci-hook") == 0);
}

TEST_CASE("lintian reports no errors or warnings")
{
	const built &b = packages_built();

	if (!have_program("lintian")) {
		WARN("lintian is missing (apt-get install lintian): the packages are not checked");
		return;
	}
	std::string changes = b.dir + "/hugetext_" + b.version + "_" + b.arch + ".changes";
	prog_opts o;
	o.timeout_s = 600;
	// Warnings too: the overrides in debian/ say why each one left is fine.
	prog_result r = run_prog({ "lintian", "--fail-on", "error,warning", changes }, o);
	INFO("lintian:\n" << r.out << r.err);
	CHECK(r.status == 0);
	CHECK(("\n" + r.out).find("\nE: ") == std::string::npos);
	CHECK(("\n" + r.out).find("\nW: ") == std::string::npos);
}
