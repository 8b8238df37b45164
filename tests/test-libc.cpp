// Description: every call the library makes into libc that a program could
// define too reaches glibc's own: the list of the libraries' undefined
// symbols is checked against the routed and allowed names, and a program
// that exports its own regcomp/regexec/regfree/renameat2 never has them
// called by us.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <map>
#include <regex.h>
#include <set>
#include <sstream>
#include <string>

#include "helpers.hpp"

extern "C" {
#include "internal.h"
#include "sys.h"
}

// Names lib/sys.c looks up in libc's own scope (HT_LIBC_FUNCS there, with
// the large-file names the headers link to).  Only sys.c may name them.
static const std::set<std::string> routed = {
	"mmap", "mmap64", "munmap", "mremap", "madvise", "mprotect", "mincore",
	"open", "open64", "openat", "openat64", "read", "pread", "pread64", "write", "close",
	"fstat", "fstat64", "fstatfs", "fstatfs64", "ftruncate", "ftruncate64",
	"posix_fadvise", "posix_fadvise64", "ioctl", "mkdirat", "renameat2", "unlinkat",
	"linkat", "readlink", "getcwd", "syscall", "clock_gettime", "nanosleep", "getpid",
	"geteuid", "secure_getenv", "sigfillset", "regcomp", "regexec", "regfree",
};

// Names the libraries may bind by name, each with the reason a program's
// definition cannot hurt us (docs/failure-model.md, "What the library calls").
static const char *const pure = "pure function on plain C types, fixed by ISO C or POSIX: a "
	"program's own must mean the same, or the compiler and every other library it "
	"loads break already";
static const std::map<std::string, std::string> allowed = {
	{ "memchr", pure }, { "memcmp", pure }, { "memcpy", pure }, { "memmove", pure },
	{ "memset", pure }, { "strchr", pure }, { "strcmp", pure }, { "strcpy", pure },
	{ "strlen", pure }, { "strncmp", pure }, { "strncpy", pure }, { "strnlen", pure },
	{ "strrchr", pure }, { "strstr", pure }, { "strcasecmp", pure }, { "strerror", pure },
	{ "snprintf", pure }, { "vsnprintf", pure }, { "qsort", pure }, { "strdup", pure },
	{ "strndup", pure },
	{ "__memcpy_chk", pure }, { "__memset_chk", pure }, { "__snprintf_chk", pure },
	{ "__vsnprintf_chk", pure }, { "__strcpy_chk", pure }, { "__stack_chk_fail", pure },
	{ "malloc", "interposing allocators (jemalloc, tcmalloc, mimalloc) are supported: "
		    "glibc itself allocates through the same names" },
	{ "free", "as malloc" }, { "realloc", "as malloc" }, { "calloc", "as malloc" },
	{ "__errno_location", "errno is the program's: one per thread, shared with libc" },
	{ "__tls_get_addr", "the loader's TLS runtime" },
	{ "__register_atfork", "pthread_atfork: one fork runtime per process" },
	{ "__cxa_finalize", "destructors of the library, run by libc at unload" },
	{ "_ITM_deregisterTMCloneTable", "weak, toolchain glue" },
	{ "_ITM_registerTMCloneTable", "weak, toolchain glue" },
	{ "__gmon_start__", "weak, toolchain glue" },
	{ "dl_iterate_phdr", "the loader's interface: how the library finds objects and libc itself" },
	{ "dladdr", "the loader's interface" }, { "dladdr1", "the loader's interface" },
	{ "dlsym", "the loader's interface" }, { "dlclose", "the loader's interface" },
	{ "dlopen", "the loader's interface; the preload interposes it on purpose" },
	{ "dlerror", "the loader's interface" },
	{ "getauxval", "the auxiliary vector the kernel handed the process (the base page size): "
		       "read-only data glibc's loader keeps, a name reserved to it" },
	{ "__getauxval", "arm64 only: libgcc's outline atomics (GCC's default there) ask it once, "
			 "in a constructor, whether the processor has LSE atomics; glibc's own name" },
	{ "__environ", "the environment, only read (the preload's constructor looks for HUGETEXT_ "
		       "names): glibc's own variable, the one its getenv() reads, a name reserved to it" },
};

// pthread_*: one thread runtime per process; sanitizers intercept
// pthread_create and must see our threads.
static bool allowed_name(const std::string &s)
{
	// A sanitizer build's instrumentation calls its own runtime.
	for (const char *rt : { "__asan_", "__ubsan_", "__sanitizer_", "__lsan_" })
		if (s.rfind(rt, 0) == 0)
			return true;
	return allowed.count(s) || s.rfind("pthread_", 0) == 0;
}

// Calls outside lib/sys.c not switched yet, in files other sessions own.
// An entry that no longer applies is harmless; a new one needs a reason.
static const std::map<std::string, std::set<std::string>> pending = {
};

static std::string strip_version(const std::string &s)
{
	size_t at = s.find('@');
	return at == std::string::npos ? s : s.substr(0, at);
}

// "object: name" for every undefined symbol nm lists in @path.
static std::vector<std::pair<std::string, std::string>> undefined(const std::string &path, bool dynamic)
{
	std::vector<std::string> argv = { "nm", "-A", "--undefined-only" };
	if (dynamic)
		argv.push_back("-D");
	argv.push_back(path);
	prog_result r = run_prog(argv);
	INFO(r.err);
	REQUIRE(r.status == 0);
	std::vector<std::pair<std::string, std::string>> out;
	std::istringstream in(r.out);
	std::string line;
	while (std::getline(in, line)) {
		// "file.a:member.o:                 U name" or "file.so:                 U name"
		size_t u = line.rfind(" U ");
		size_t colon = line.rfind(':', u);
		if (u == std::string::npos || colon == std::string::npos)
			continue;
		std::string obj = line.substr(0, colon);
		size_t inner = obj.rfind(':');
		if (inner != std::string::npos)
			obj = obj.substr(inner + 1);
		size_t slash = obj.rfind('/');
		if (slash != std::string::npos)
			obj = obj.substr(slash + 1);
		out.emplace_back(obj, strip_version(line.substr(u + 3)));
	}
	return out;
}

static const char *libraries[] = { "lib/libhugetext.so", "lib/libhugetext-preload.so" };

TEST_CASE("every libc name the built libraries bind is routed through sys.c or allowed with a reason", "[libc]")
{
	REQUIRE(have_program("nm"));
	for (const char *lib : libraries) {
		auto syms = undefined(build_path(lib), true);
		INFO(lib);
		CHECK(syms.size() > 10);
		for (auto &s : syms) {
			INFO(s.second);
			CHECK((routed.count(s.second) || allowed_name(s.second)));
		}
	}
}

// What ld.so must look up in every process that loads a library, before any
// of its code runs: the symbols of its GLOB_DAT relocations (lazy PLT
// slots are looked up at their first call only).
static std::vector<std::string> load_time_bindings(const std::string &path)
{
	prog_result r = run_prog({ "readelf", "-rW", path });
	INFO(r.err);
	REQUIRE(r.status == 0);
	std::vector<std::string> out;
	std::istringstream in(r.out);
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream f(line);
		std::string offset, info, type, value, name;
		if (f >> offset >> info >> type >> value >> name && type.find("GLOB_DAT") != std::string::npos)
			out.push_back(strip_version(name));
	}
	return out;
}

TEST_CASE("loading either library makes ld.so look up no libc function, only the toolchain's glue and __environ",
	  "[libc]")
{
	// sys.c finds libc's functions itself, when first needed; a fallback that
	// took their addresses cost every process 33 lookups at load (issue 21).
	static const std::set<std::string> data = { "__environ", "__cxa_finalize", "__gmon_start__",
						    "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable" };
	REQUIRE(have_program("readelf"));
	for (const char *lib : libraries) {
		auto names = load_time_bindings(build_path(lib));
		INFO(lib);
		// The glue of crtbeginS.o is in every shared library gcc links.
		CHECK(!names.empty());
		for (auto &n : names) {
			INFO(n);
			// A sanitizer build's runtime has its own.
			bool sanitizer = allowed_name(n) && !allowed.count(n) && n.rfind("pthread_", 0) != 0;
			CHECK((data.count(n) || sanitizer));
		}
	}
}

// The objects of both libraries: the internal archive and the preload's own.
static std::vector<std::pair<std::string, std::string>> object_symbols()
{
	auto syms = undefined(build_path("lib/libhugetext-internal.a"), false);
	std::string dir = build_path("lib/libhugetext-preload.so.p");
	DIR *d = opendir(dir.c_str());
	REQUIRE(d);
	while (struct dirent *e = readdir(d)) {
		std::string n = e->d_name;
		// Only objects of sources that still exist: ninja leaves old ones behind.
		if (n.size() > 2 && n.compare(n.size() - 2, 2, ".o") == 0 &&
		    file_exists(source_path("lib/" + n.substr(0, n.size() - 2))))
			for (auto &s : undefined(dir + "/" + n, false))
				syms.push_back(s);
	}
	closedir(d);
	return syms;
}

TEST_CASE("only lib/sys.c names the libc functions a program could define too", "[libc]")
{
	REQUIRE(have_program("nm"));
	auto syms = object_symbols();
	bool saw_sys = false;
	for (auto &s : syms) {
		saw_sys |= s.first == "sys.c.o";
		if (s.first == "sys.c.o" || !routed.count(s.second))
			continue;
		auto p = pending.find(s.first);
		bool waiting = p != pending.end() && p->second.count(s.second);
		INFO(s.first << " calls " << s.second << " by name: use ht_libc() or a wrapper of lib/sys.h");
		CHECK(waiting);
	}
	CHECK(saw_sys);
}

TEST_CASE("the symbol lookup finds libc's default versions, as dlsym does", "[libc]")
{
	ht_dynsyms d{};
	char path[512];
	REQUIRE(ht_dynsyms_find("libc.so.6", &d, path, sizeof(path)));
	CHECK(std::string(path).find("/libc.so.6") != std::string::npos);
	CHECK(!ht_dynsyms_find("no-such-object.so.1", &d, path, sizeof(path)));
	REQUIRE(ht_dynsyms_find("libc.so.6", &d, path, sizeof(path)));
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	REQUIRE(libc);
	// regexec has two versions: 2.2.5 (compat, hidden) and 2.3.4 (default).
	for (const char *name : { "getpid", "regexec", "regcomp", "renameat2", "dlopen", "dlsym" }) {
		INFO(name);
		CHECK(ht_dynsym_lookup(&d, name) == dlsym(libc, name));
	}
	CHECK(ht_dynsym_lookup(&d, "no_such_function_in_libc") == nullptr);
	// A data object is not a function.
	CHECK(ht_dynsym_lookup(&d, "environ") == nullptr);
	dlclose(libc);
}

TEST_CASE("ht_libc() gives glibc's own functions", "[libc]")
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	REQUIRE(libc);
	CHECK((void *)ht_libc()->regcomp == dlsym(libc, "regcomp"));
	CHECK((void *)ht_libc()->renameat2 == dlsym(libc, "renameat2"));
	CHECK((void *)ht_libc()->getpid == dlsym(libc, "getpid"));
	dlclose(libc);
	regex_t re;
	REQUIRE(ht_regcomp(&re, "^ab+c$", REG_EXTENDED | REG_NOSUB) == 0);
	CHECK(ht_regexec(&re, "abbbc", 0, nullptr, 0) == 0);
	CHECK(ht_regexec(&re, "ac", 0, nullptr, 0) == REG_NOMATCH);
	ht_regfree(&re);
	CHECK(ht_getpid() == getpid());
	CHECK(ht_geteuid() == geteuid());
	setenv("HT_TEST_LIBC_VAR", "x", 1);
	CHECK(std::string(ht_secure_getenv("HT_TEST_LIBC_VAR")) == "x");
}

static int failing_regcomp(regex_t *, const char *, int)
{
	return REG_ESPACE;
}

TEST_CASE("a pattern that cannot be compiled fails the run through the seam", "[libc]")
{
	ht_options o;
	ht_options_init(&o);
	o.match = "x";
	ht_region r[4];
	size_t n = 0;
	ht_sys.regcomp = failing_regcomp;
	int err = ht_remap(&o, r, 4, &n);
	ht_sys_reset();
	CHECK(err == -EINVAL);
	REQUIRE(n == 1);
	CHECK(r[0].status == HT_STATUS_FAILED);
	CHECK(r[0].error == HT_E_BAD_REGEX);
}

// --- a program that exports regcomp/regexec/regfree/renameat2 ---

static const std::string prog() { return build_path("tests/ownlibc"); }

static prog_result run_ownlibc(const std::vector<std::string> &env)
{
	prog_opts o;
	o.env = env;
	o.timeout_s = 60;
	prog_result r = run_prog({ prog() }, o);
	INFO(r.out << r.err);
	CHECK(r.status == 0);
	CHECK(line_value(r.out, "own_ok") == "1");
	return r;
}

static void check_untouched(const prog_result &r, const prog_result &plain)
{
	INFO(r.err);
	CHECK(line_value(r.out, "foreign_calls") == "0");
	CHECK(line_value(r.out, "foreign_names") == "none");
	CHECK(line_value(r.out, "sum") == line_value(plain.out, "sum"));
	CHECK(r.err.empty());
}

// The program's own line in the report: moved, on huge pages.
static void check_moved(const std::string &report)
{
	auto lines = read_report(report);
	int mine = 0;
	for (auto &l : lines) {
		if (l["object"] != prog())
			continue;
		mine++;
		INFO(l["status"] << " " << l["error"]);
		CHECK(l["status"] == "ok");
		CHECK(std::stoul(l["huge_bytes"]) > 0);
	}
	CHECK(mine == 1);
}

static const char *skip_without_thp()
{
	return thp_enabled() ? nullptr : "transparent huge pages are off";
}

static void run_under_preload(const std::vector<std::string> &settings)
{
	if (const char *why = skip_without_thp()) {
		WARN(why);
		return;
	}
	prog_result plain = run_ownlibc({});
	check_untouched(plain, plain);
	small_page_cache(prog());
	std::string report = temp_path("ownlibc.json");
	std::vector<std::string> env = { "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"),
					 "HUGETEXT_REPORT=" + report };
	env.insert(env.end(), settings.begin(), settings.end());
	prog_result r = run_ownlibc(env);
	check_untouched(r, plain);
	check_moved(report);
}

TEST_CASE("a program's own regcomp/regexec/regfree are never called by the preload", "[libc]")
{
	run_under_preload({});
}

TEST_CASE("nor with HUGETEXT_MATCH=., which compiles and runs patterns", "[libc]")
{
	run_under_preload({ "HUGETEXT_MATCH=." });
}

TEST_CASE("with HUGETEXT_MODE=off a program's own regcomp is not called either", "[libc]")
{
	std::string report = temp_path("ownlibc-off.json");
	prog_result plain = run_ownlibc({});
	prog_result r = run_ownlibc({ "LD_PRELOAD=" + build_path("lib/libhugetext-preload.so"),
				      "HUGETEXT_MODE=off", "HUGETEXT_MATCH=.", "HUGETEXT_REPORT=" + report });
	check_untouched(r, plain);
	CHECK(read_report(report).empty());
}
