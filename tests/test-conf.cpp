// Description: the policy file /etc/hugetext.conf: the parser on buffers
// (every key, comments, whitespace, duplicates, warm lists, sizes, bad
// lines) and the loader's checks of who may write the file.
#include <catch2/catch.hpp>

#include <filesystem>

#include <cerrno>
#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include "conf.h"
#include "hugetext.h"
#include "policy.h"
#include "sys.h"
}

#include "helpers.hpp"

namespace {

struct parsed {
	int rc;
	std::string err;
	ht_conf conf;
};

// On the heap: the struct is about 12 KiB.
std::unique_ptr<parsed> parse(const std::string &text)
{
	auto p = std::make_unique<parsed>();
	char err[256];
	p->rc = ht_conf_parse(text.data(), text.size(), &p->conf, err, sizeof(err));
	p->err = err;
	return p;
}

std::unique_ptr<parsed> load(const std::string &path)
{
	auto p = std::make_unique<parsed>();
	char err[256];
	p->rc = ht_conf_load(path.c_str(), &p->conf, err, sizeof(err));
	p->err = err;
	return p;
}

bool all_zero(const ht_conf &c)
{
	static const ht_conf zero{};
	return std::memcmp(&c, &zero, sizeof(c)) == 0;
}

// A file written with @mode, owned by @uid; removed at the end.
struct conf_file {
	std::string path;
	conf_file(const std::string &name, const std::string &text, unsigned mode = 0644, uid_t uid = 0)
		: path(temp_path(name))
	{
		unlink(path.c_str());
		int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		REQUIRE(fd >= 0);
		REQUIRE(write(fd, text.data(), text.size()) == (ssize_t)text.size());
		close(fd);
		REQUIRE(chmod(path.c_str(), mode) == 0);
		if (geteuid() == 0)
			REQUIRE(chown(path.c_str(), uid, 0) == 0);
	}
	~conf_file() { unlink(path.c_str()); }
};

} // namespace

TEST_CASE("every key is read into its field", "[conf]")
{
	auto p = parse("mode = explicit\n"
		       "programs = ^/usr/bin/(node|java)$\n"
		       "match = libLLVM|libclang\n"
		       "ignore = libc\\.so\n"
		       "min_code = 8M\n"
		       "budget_ms = 250\n"
		       "page_cache = 0\n"
		       "async = 1\n"
		       "verbose = 1\n"
		       "pool = 64\n"
		       "hugetlbfs = /dev/hugepages\n"
		       "warm = /usr/bin/node\n");
	REQUIRE(p->rc == 0);
	CHECK(p->err.empty());
	const ht_conf &c = p->conf;
	CHECK(c.set == (HT_CONF_MODE | HT_CONF_PROGRAMS | HT_CONF_MATCH | HT_CONF_IGNORE | HT_CONF_MIN_CODE |
			HT_CONF_BUDGET_MS | HT_CONF_PAGE_CACHE | HT_CONF_ASYNC | HT_CONF_VERBOSE | HT_CONF_POOL |
			HT_CONF_HUGETLBFS | HT_CONF_WARM));
	CHECK(c.mode == HT_CONF_MODE_EXPLICIT);
	CHECK(std::string(c.programs) == "^/usr/bin/(node|java)$");
	CHECK(std::string(c.match) == "libLLVM|libclang");
	CHECK(std::string(c.ignore) == "libc\\.so");
	CHECK(c.min_code == 8u << 20);
	CHECK(c.budget_ms == 250);
	CHECK(c.page_cache == 0);
	CHECK(c.async == 1);
	CHECK(c.verbose == 1);
	CHECK(c.pool == 64);
	CHECK(std::string(c.hugetlbfs) == "/dev/hugepages");
	REQUIRE(c.nwarm == 1);
	CHECK(std::string(ht_conf_warm(&c, 0)) == "/usr/bin/node");
	CHECK(ht_conf_warm(&c, 1) == nullptr);
	CHECK(c.nunknown == 0);
}

TEST_CASE("each mode name, and nothing else", "[conf]")
{
	CHECK(parse("mode = auto")->conf.mode == HT_CONF_MODE_AUTO);
	CHECK(parse("mode = thp")->conf.mode == HT_CONF_MODE_THP);
	CHECK(parse("mode = explicit")->conf.mode == HT_CONF_MODE_EXPLICIT);
	CHECK(parse("mode = off")->conf.mode == HT_CONF_MODE_OFF);
	CHECK(parse("mode = folios")->conf.mode == HT_CONF_MODE_FOLIOS);
	auto p = parse("mode = fast\n");
	CHECK(p->rc == -EINVAL);
	CHECK(p->err == "line 1: mode: 'fast' is not auto, thp, explicit, off or folios");
	CHECK(parse("mode = AUTO")->rc == -EINVAL);
}

TEST_CASE("an empty file, blank lines and comments set nothing", "[conf]")
{
	for (const char *text : { "", "\n\n", "# only a comment\n", "   \t\n  # indented comment\n", "\r\n" }) {
		auto p = parse(text);
		CHECK(p->rc == 0);
		CHECK(p->conf.set == 0);
		CHECK(all_zero(p->conf));
	}
}

TEST_CASE("whitespace around keys and values is trimmed; a comment after whitespace ends the value",
	  "[conf]")
{
	auto p = parse("  \tmatch\t=   libfoo|libbar   # the big ones\r\n"
		       "ignore=a#b\n"
		       "programs =x  #\n");
	REQUIRE(p->rc == 0);
	CHECK(std::string(p->conf.match) == "libfoo|libbar");
	CHECK(std::string(p->conf.ignore) == "a#b");   // '#' inside a value is the value's
	CHECK(std::string(p->conf.programs) == "x");
	// The first '=' splits: the value may hold more.
	p = parse("match = a=b\n");
	REQUIRE(p->rc == 0);
	CHECK(std::string(p->conf.match) == "a=b");
}

TEST_CASE("the last of a repeated key wins; warm adds to a list", "[conf]")
{
	auto p = parse("pool = 8\nmode = thp\npool = 16\nwarm = /a\nmode = off\nwarm = /b\nwarm = /a\n"
		       "match = x\nmatch = y");
	REQUIRE(p->rc == 0);
	CHECK(p->conf.pool == 16);
	CHECK(p->conf.mode == HT_CONF_MODE_OFF);
	CHECK(std::string(p->conf.match) == "y");
	REQUIRE(p->conf.nwarm == 3);
	CHECK(std::string(ht_conf_warm(&p->conf, 0)) == "/a");
	CHECK(std::string(ht_conf_warm(&p->conf, 1)) == "/b");
	CHECK(std::string(ht_conf_warm(&p->conf, 2)) == "/a");
}

TEST_CASE("the warm list holds 64 entries and 8 KiB of paths, no more", "[conf]")
{
	std::string text;
	for (unsigned i = 0; i < HT_CONF_WARM_MAX; i++)
		text += "warm = /w" + std::to_string(i) + "\n";
	auto p = parse(text);
	REQUIRE(p->rc == 0);
	CHECK(p->conf.nwarm == HT_CONF_WARM_MAX);
	CHECK(std::string(ht_conf_warm(&p->conf, 63)) == "/w63");
	p = parse(text + "warm = /one-more\n");
	CHECK(p->rc == -EINVAL);
	CHECK(p->err == "line 65: warm: more than 64 files");

	std::string path(1000, 'p');
	path[0] = '/';
	text.clear();
	for (int i = 0; i < 8; i++)
		text += "warm = " + path + "\n";
	p = parse(text);
	REQUIRE(p->rc == 0);
	p = parse(text + "warm = " + path + "\n");
	CHECK(p->rc == -EINVAL);
	CHECK(p->err == "line 9: warm: the paths take more than 8192 bytes in all");
	CHECK(parse("warm = relative/path")->err == "line 1: warm: 'relative/path' is not an absolute path");
}

TEST_CASE("sizes take K, M or G in binary units and refuse overflow", "[conf]")
{
	const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
		{ "0", 0 }, { "4096", 4096 }, { "64K", 64 << 10 }, { "64k", 64 << 10 }, { "2M", 2 << 20 },
		{ "3G", 3ull << 30 }, { "18446744073709551615", UINT64_MAX }, { "17179869183G", 17179869183ull << 30 },
	};
	for (auto &g : good) {
		auto p = parse(std::string("min_code = ") + g.text);
		INFO(g.text);
		REQUIRE(p->rc == 0);
		CHECK(p->conf.min_code == g.bytes);
	}
	for (const char *bad : { "18446744073709551616", "17179869184G", "16777216T", "2MB", "2 M", "-1", "M", "2MiB",
				 "0x10", "1.5M" }) {
		auto p = parse(std::string("min_code = ") + bad);
		INFO(bad);
		CHECK(p->rc == -EINVAL);
		CHECK(p->err.rfind("line 1: min_code: '", 0) == 0);
	}
}

TEST_CASE("containers takes annotated, all or off, for the OCI hook", "[conf]")
{
	CHECK(parse("")->conf.containers == HT_CONF_CONTAINERS_ANNOTATED); // absent: the default
	auto p = parse("containers = annotated");
	CHECK(p->conf.set == HT_CONF_CONTAINERS);
	CHECK(p->conf.containers == HT_CONF_CONTAINERS_ANNOTATED);
	CHECK(parse("containers = all")->conf.containers == HT_CONF_CONTAINERS_ALL);
	CHECK(parse("containers = off")->conf.containers == HT_CONF_CONTAINERS_OFF);
	CHECK(parse("containers = off\ncontainers = all\n")->conf.containers == HT_CONF_CONTAINERS_ALL);
	for (const char *bad : { "yes", "1", "ALL", "annotated all", "none" }) {
		INFO(bad);
		auto b = parse(std::string("containers = ") + bad);
		CHECK(b->rc == -EINVAL);
		CHECK(b->err == std::string("line 1: containers: '") + bad + "' is not annotated, all or off");
	}
}

TEST_CASE("numbers and flags are checked", "[conf]")
{
	CHECK(parse("budget_ms = 3600000")->conf.budget_ms == 3600000);
	CHECK(parse("budget_ms = 3600001")->err == "line 1: budget_ms: larger than 3600000");
	CHECK(parse("budget_ms = 99999999999999999999999")->rc == -EINVAL);
	CHECK(parse("pool = 16777216")->conf.pool == 16777216);
	CHECK(parse("pool = 16777217")->err == "line 1: pool: larger than 16777216");
	CHECK(parse("pool = -1")->err == "line 1: pool: '-1' is not a whole number");
	CHECK(parse("pool = 0")->conf.set == HT_CONF_POOL);
	for (const char *key : { "page_cache", "async", "verbose" }) {
		CHECK(parse(std::string(key) + " = 1")->rc == 0);
		CHECK(parse(std::string(key) + " = 0")->rc == 0);
		CHECK(parse(std::string(key) + " = yes")->err == std::string("line 1: ") + key + ": 'yes' is neither 0 nor 1");
		CHECK(parse(std::string(key) + " = 2")->rc == -EINVAL);
	}
}

TEST_CASE("a bad line rejects the whole file, naming the line", "[conf]")
{
	const struct {
		const char *text, *err;
	} cases[] = {
		{ "mode = auto\njust words\n", "line 2: not 'key = value'" },
		{ "\n\n\nmatch =\n", "line 4: match: no value" },
		{ "Mode = auto\n", "line 1: 'Mode' is not a key (lowercase letters, digits and '_')" },
		{ "= auto\n", "line 1: '' is not a key (lowercase letters, digits and '_')" },
		{ "my key = 1\n", "line 1: 'my key' is not a key (lowercase letters, digits and '_')" },
		{ "hugetlbfs = dev/hugepages\n", "line 1: hugetlbfs: 'dev/hugepages' is not an absolute path" },
		{ "pool = 4 # pages\npool = four\n", "line 2: pool: 'four' is not a whole number" },
	};
	for (auto &c : cases) {
		INFO(c.text);
		auto p = parse(c.text);
		CHECK(p->rc == -EINVAL);
		CHECK(p->err == c.err);
		CHECK(all_zero(p->conf)); // nothing of the good lines before is kept
	}
}

TEST_CASE("values longer than their field are refused", "[conf]")
{
	std::string re(HT_CONF_RE_MAX - 1, 'a');
	CHECK(parse("match = " + re)->rc == 0);
	CHECK(parse("match = " + re + "a")->err == "line 1: match: value longer than 1023 bytes");
	std::string path = "/" + std::string(HT_CONF_PATH_MAX - 1, 'd');
	CHECK(parse("hugetlbfs = " + path)->err == "line 1: hugetlbfs: value longer than 1023 bytes");
}

TEST_CASE("overlong lines, NUL bytes and oversized buffers are refused", "[conf]")
{
	std::string comment = "#" + std::string(HT_CONF_MAX_LINE - 1, 'c');
	CHECK(parse(comment + "\n")->rc == 0);
	auto p = parse("pool = 1\n" + comment + "c\n");
	CHECK(p->rc == -EINVAL);
	CHECK(p->err == "line 2: longer than 4096 bytes");

	p = parse(std::string("pool = 1\nmode = a\0to\n", 21));
	CHECK(p->rc == -EINVAL);
	CHECK(p->err == "line 2: holds a NUL byte");
	p = parse(std::string("# \0\n", 4));
	CHECK(p->err == "line 1: holds a NUL byte");

	std::string big;
	while (big.size() <= HT_CONF_MAX_BYTES)
		big += "# filler filler filler filler filler filler filler filler\n";
	p = parse(big);
	CHECK(p->rc == -EINVAL);
	CHECK(p->err == "longer than 65536 bytes");
}

TEST_CASE("unknown keys are kept aside and the file still counts", "[conf]")
{
	std::string text = "pool = 2\nfuture_key = x\n";
	for (int i = 0; i < 10; i++)
		text += "other" + std::to_string(i) + " = y\n";
	text += "a_very_long_key_name_from_a_future_version = 1\n";
	auto p = parse(text);
	REQUIRE(p->rc == 0);
	CHECK(p->conf.pool == 2);
	CHECK(p->conf.nunknown == 12);
	CHECK(std::string(p->conf.unknown[0]) == "future_key");
	CHECK(p->conf.unknown_line[0] == 2);
	CHECK(std::string(p->conf.unknown[7]) == "other6");
	CHECK(p->conf.unknown_line[7] == 9);
}

TEST_CASE("the parser takes a buffer without a final newline or NUL", "[conf]")
{
	std::string text = "pool = 12345";
	auto p = parse(text.substr(0, 9)); // "pool = 12"
	REQUIRE(p->rc == 0);
	CHECK(p->conf.pool == 12);
	ht_conf c;
	CHECK(ht_conf_parse(nullptr, 0, &c, nullptr, 0) == 0);
	CHECK(ht_conf_parse(nullptr, 1, &c, nullptr, 0) == -EINVAL);
	CHECK(ht_conf_parse("x", 1, nullptr, nullptr, 0) == -EINVAL);
	char small[8];
	CHECK(ht_conf_parse("bad", 3, &c, small, sizeof(small)) == -EINVAL);
	CHECK(std::string(small) == "line 1:"); // truncated, terminated
}

TEST_CASE("the loader: a missing file is silent", "[conf][load]")
{
	auto p = load(temp_path("no-such-conf"));
	CHECK(p->rc == -ENOENT);
	CHECK(p->err.empty());
	// ... and leaves what it was given untouched.
	ht_conf c;
	memset(&c, 0x5a, sizeof(c));
	char err[64] = "x";
	CHECK(ht_conf_load(temp_path("no-such-conf").c_str(), &c, err, sizeof(err)) == -ENOENT);
	CHECK(((unsigned char *)&c)[0] == 0x5a);
	CHECK(((unsigned char *)&c)[sizeof(c) - 1] == 0x5a);
	CHECK(std::string(err).empty());
}

TEST_CASE("the loader reads a root-owned file writable by root alone", "[conf][load]")
{
	if (geteuid() != 0) {
		WARN("not root: cannot make a root-owned file; the other loader cases still run");
		return;
	}
	conf_file f("conf-good", "pool = 3\nwarm = /bin/true\n", 0644);
	auto p = load(f.path);
	CHECK(p->rc == 0);
	CHECK(p->conf.pool == 3);
	CHECK(p->conf.nwarm == 1);
	conf_file ro("conf-readonly", "mode = off\n", 0400);
	CHECK(load(ro.path)->conf.mode == HT_CONF_MODE_OFF);
}

TEST_CASE("the loader refuses files others own or may write", "[conf][load]")
{
	// Not root: every file the test makes is someone else's than root's.
	uid_t other = geteuid() == 0 ? 65534 : geteuid();
	{
		conf_file f("conf-foreign", "pool = 3\n", 0644, other);
		auto p = load(f.path);
		CHECK(p->rc == -EPERM);
		CHECK(p->err == f.path + ": not owned by root: ignored");
		CHECK(all_zero(p->conf));
	}
	if (geteuid() != 0)
		return;
	for (unsigned mode : { 0664u, 0646u, 0666u, 0620u }) {
		conf_file f("conf-writable", "pool = 3\n", mode);
		auto p = load(f.path);
		INFO(std::oct << mode);
		CHECK(p->rc == -EPERM);
		CHECK(p->err == f.path + ": writable by others than root: ignored");
	}
}

TEST_CASE("the loader refuses a symbolic link, a FIFO and a directory", "[conf][load]")
{
	std::string link = temp_path("conf-link"), fifo = temp_path("conf-fifo"), dir = temp_path("conf-dir");
	conf_file target("conf-target", "pool = 3\n");
	unlink(link.c_str());
	REQUIRE(symlink(target.path.c_str(), link.c_str()) == 0);
	auto p = load(link);
	CHECK(p->rc == -EPERM);
	CHECK(p->err == link + ": a symbolic link: ignored");
	unlink(link.c_str());

	unlink(fifo.c_str());
	REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
	p = load(fifo); // must not block waiting for a writer
	CHECK(p->rc == -EPERM);
	CHECK(p->err == fifo + ": not a regular file: ignored");
	unlink(fifo.c_str());

	rmdir(dir.c_str());
	REQUIRE(mkdir(dir.c_str(), 0755) == 0);
	p = load(dir);
	CHECK(p->rc == -EPERM);
	CHECK(p->err == dir + ": not a regular file: ignored");
	rmdir(dir.c_str());
}

TEST_CASE("the loader refuses a file past 64 KiB, and names a bad line", "[conf][load]")
{
	if (geteuid() != 0) {
		WARN("not root: a file of ours is refused for its owner first");
		return;
	}
	std::string big(HT_CONF_MAX_BYTES + 1, '\n');
	conf_file f("conf-big", big);
	auto p = load(f.path);
	CHECK(p->rc == -EFBIG);
	CHECK(p->err == f.path + ": longer than 65536 bytes: ignored");

	conf_file exact("conf-exact", std::string(HT_CONF_MAX_BYTES, '\n'));
	CHECK(load(exact.path)->rc == 0);

	conf_file bad("conf-bad", "pool = 3\n\nbudget_ms = soon\n");
	p = load(bad.path);
	CHECK(p->rc == -EINVAL);
	CHECK(p->err == bad.path + ": line 3: budget_ms: 'soon' is not a whole number");
	CHECK(all_zero(p->conf));
}

namespace {
ssize_t failing_pread(int, void *, size_t, off_t)
{
	errno = EIO;
	return -1;
}
int failing_fstat(int, struct stat *)
{
	errno = EOVERFLOW;
	return -1;
}
int failing_open(const char *, int, mode_t)
{
	errno = EMFILE;
	return -1;
}
// Puts the real system calls back however the case ends.
struct sys_guard {
	~sys_guard() { ht_sys_reset(); }
};
} // namespace

TEST_CASE("the loader survives failing system calls, with the reason and nothing kept", "[conf][load]")
{
	if (geteuid() != 0) {
		WARN("not root: a file of ours is refused for its owner before any read");
		return;
	}
	conf_file f("conf-faults", "pool = 3\n");
	sys_guard g;
	ht_sys.pread = failing_pread;
	auto p = load(f.path);
	CHECK(p->rc == -EIO);
	CHECK(p->err == f.path + ": cannot read: " + std::strerror(EIO));
	CHECK(all_zero(p->conf));
	ht_sys_reset();

	ht_sys.fstat = failing_fstat;
	p = load(f.path);
	CHECK(p->rc == -EOVERFLOW);
	CHECK(p->err == f.path + ": cannot stat: " + std::strerror(EOVERFLOW));
	ht_sys_reset();

	ht_sys.open = failing_open;
	p = load(f.path);
	CHECK(p->rc == -EMFILE);
	CHECK(p->err == f.path + ": cannot open: " + std::strerror(EMFILE));
	ht_sys_reset();

	CHECK(load(f.path)->conf.pool == 3);
}

TEST_CASE("cover_ends is a flag, off unless set", "[conf]")
{
	auto on = parse("cover_ends = 1\n");
	REQUIRE(on->rc == 0);
	CHECK(on->conf.set == HT_CONF_COVER_ENDS);
	CHECK(on->conf.cover_ends == 1);
	auto none = parse("mode = thp\n");
	REQUIRE(none->rc == 0);
	CHECK_FALSE(none->conf.set & HT_CONF_COVER_ENDS);
	CHECK(parse("cover_ends = yes\n")->rc == -EINVAL);
}

TEST_CASE("copy_hot is a flag, on unless set to 0, and reaches the options", "[conf]")
{
	auto on = parse("copy_hot = 1\n");
	REQUIRE(on->rc == 0);
	CHECK(on->conf.set == HT_CONF_COPY_HOT);
	CHECK(on->conf.copy_hot == 1);
	CHECK(parse("copy_hot = maybe\n")->rc == -EINVAL);
	struct ht_options o;
	struct ht_policy p;
	ht_options_init(&o);
	ht_policy_init(&p);
	CHECK(o.copy_hot == 1);
	auto off = parse("copy_hot = 0\n");
	REQUIRE(off->rc == 0);
	ht_policy_from_conf(&off->conf, &o, &p);
	CHECK(o.copy_hot == 0);
	ht_policy_from_conf(&on->conf, &o, &p);
	CHECK(o.copy_hot == 1);
}

TEST_CASE("big_libraries is 0, 1 or auto", "[conf]")
{
	const char *names[] = { "0", "1", "auto" };
	const int values[] = { HT_BIG_LIBRARIES_OFF, HT_BIG_LIBRARIES_ON, HT_BIG_LIBRARIES_AUTO };

	for (int i = 0; i < 3; i++) {
		auto p = parse(std::string("big_libraries = ") + names[i] + "\n");
		REQUIRE(p->rc == 0);
		CHECK(p->conf.set == HT_CONF_BIG_LIBRARIES);
		CHECK(p->conf.big_libraries == values[i]);
	}
	auto bad = parse("big_libraries = yes\n");
	CHECK(bad->rc == -EINVAL);
	CHECK(bad->err.find("big_libraries") != std::string::npos);
	CHECK_FALSE(parse("mode = thp\n")->conf.set & HT_CONF_BIG_LIBRARIES);
}

TEST_CASE("the shipped /etc/hugetext.conf sets nothing, and each of its commented keys parses", "[conf]")
{
	std::string text = read_file(source_path("data/hugetext.conf"));
	REQUIRE(!text.empty());
	auto shipped = parse(text);
	REQUIRE(shipped->rc == 0);
	CHECK(shipped->conf.set == 0);
	// Each "#key = value" line, uncommented alone, is a line the parser takes.
	size_t keys = 0, at = 0;
	while (at < text.size()) {
		size_t end = text.find('\n', at);
		std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
		at = end == std::string::npos ? text.size() : end + 1;
		if (line.size() < 2 || line[0] != '#' || line.find(" = ") == std::string::npos ||
		    line.find_first_not_of("abcdefghijklmnopqrstuvwxyz_", 1) != line.find(" = "))
			continue;
		INFO(line);
		auto one = parse(line.substr(1) + "\n");
		CHECK(one->rc == 0);
		CHECK(one->conf.set != 0);
		keys++;
	}
	CHECK(keys >= 20);
	// The line that shows min_code shows the preload's default.
	auto min = parse(text.substr(text.find("#min_code = ") + 1));
	CHECK(min->conf.min_code == HT_POLICY_MIN_CODE_DEFAULT);
}

TEST_CASE("every policy example in the docs parses, with no key the parser does not know", "[conf]")
{
	// The ```ini blocks of the Markdown docs; a unit's drop-in ([Service])
	// is systemd's, verified by the package test.
	size_t examples = 0;
	std::vector<std::string> docs = { "README.md" };
	for (auto &e : std::filesystem::directory_iterator(source_path("docs")))
		if (e.path().extension() == ".md")
			docs.push_back("docs/" + e.path().filename().string());
	for (auto &md : docs) {
		for (auto &block : fenced_blocks(read_file(source_path(md)), "ini")) {
			if (block[0] == '[')
				continue;
			INFO(md << ":\n" << block);
			auto p = parse(block);
			CHECK(p->rc == 0);
			CHECK(p->err == "");
			CHECK(p->conf.set != 0);
			CHECK(p->conf.nunknown == 0);
			examples++;
		}
	}
	CHECK(examples >= 2);
}

TEST_CASE("every variable and policy key the library reads is documented", "[conf][docs]")
{
	// Read from the sources, so that a new one without its line fails here.
	std::string lib;
	for (auto &e : std::filesystem::directory_iterator(source_path("lib")))
		if (e.path().extension() == ".c")
			lib += read_file(e.path().string());
	std::set<std::string> vars, keys;
	std::regex var_re("\"(HUGETEXT_[A-Z_]*[A-Z])=?\"");
	for (auto it = std::sregex_iterator(lib.begin(), lib.end(), var_re); it != std::sregex_iterator(); ++it)
		vars.insert((*it)[1]);
	std::string conf = read_file(source_path("lib/conf.c"));
	std::regex key_re("key_is\\(k, kn, \"([a-z_]+)\"\\)");
	for (auto it = std::sregex_iterator(conf.begin(), conf.end(), key_re); it != std::sregex_iterator(); ++it)
		keys.insert((*it)[1]);
	CHECK(vars.size() >= 20);
	CHECK(keys.size() >= 20);
	std::string man7 = read_file(source_path("man/hugetext.7")), usage = read_file(source_path("docs/usage.md"));
	std::string deploy = read_file(source_path("docs/deploy.md")), shipped = read_file(source_path("data/hugetext.conf"));
	for (auto &v : vars) {
		INFO(v);
		CHECK(std::regex_search(man7, std::regex("\\.B[IR]? " + v + "[=| \\n]")));
		CHECK(usage.find("`" + v + "=") != std::string::npos);
	}
	for (auto &k : keys) {
		INFO(k);
		CHECK(std::regex_search(man7, std::regex("\\.B[IR]? \"" + k + " = ")));
		CHECK(shipped.find("#" + k + " = ") != std::string::npos);
		CHECK((deploy.find("`" + k + "`") != std::string::npos || deploy.find("\n" + k + " = ") != std::string::npos));
	}
}
