// Description: the command line as a whole: --help and --version, unknown
// commands, each command's --help, and man pages that render without
// warnings and name every command, option and variable.
#include <catch2/catch.hpp>

#include <sstream>

#include "tooltest.hpp"

namespace {

const char *const commands[] = { "edit", "check", "run", "pool", "measure" };

// The long options a command's --help lists ("  --name" at a line's start).
std::vector<std::string> long_options(const std::string &help)
{
	std::vector<std::string> v;
	std::istringstream in(help);
	std::string line;
	while (std::getline(in, line)) {
		size_t at = line.find("--");
		if (at == std::string::npos || line.find_first_not_of(" -qh,") < at)
			continue;
		size_t end = line.find_first_of(" ,", at);
		v.push_back(line.substr(at, end - at));
	}
	return v;
}

} // namespace

TEST_CASE("--help prints the usage with every command on stdout", "[cli]")
{
	for (const char *h : { "--help", "-h", "help" }) {
		run_result r = tool({ h });
		CHECK(r.status == 0);
		CHECK(r.err == "");
		CHECK(r.out.find("usage: hugetext [--help] [--version] COMMAND [ARGS]\n") == 0);
		for (const char *c : commands)
			CHECK(r.out.find(std::string("\n  ") + c + " ") != std::string::npos);
	}
}

TEST_CASE("--version prints the project's version", "[cli]")
{
	run_result r = tool({ "--version" });
	CHECK(r.status == 0);
	CHECK(r.out == std::string("hugetext ") + HT_VERSION_STRING + "\n");
	CHECK(tool({ "-V" }).out == r.out);
}

TEST_CASE("an unknown command or no command prints the usage and exits 2", "[cli]")
{
	run_result r = tool({ "frobnicate", "x" });
	CHECK(r.status == 2);
	CHECK(r.out == "");
	CHECK(r.err.find("hugetext: unknown command 'frobnicate'\nusage: hugetext ") == 0);
	r = tool({ "--frobnicate" });
	CHECK(r.status == 2);
	CHECK(r.err.find("hugetext: unknown option '--frobnicate'\n") == 0);
	r = tool({});
	CHECK(r.status == 2);
	CHECK(r.err.find("usage: hugetext ") == 0);
}

TEST_CASE("each command has --help on stdout and rejects unknown options with 2", "[cli]")
{
	for (const char *c : commands) {
		INFO(c);
		run_result r = tool({ c, "--help" });
		CHECK(r.status == 0);
		CHECK(r.out.find(std::string("usage: hugetext ") + c) == 0);
		r = tool({ c, "--no-such-option" });
		CHECK(r.status == 2);
		CHECK(r.err.find(std::string("hugetext ") + c + ": unrecognized option '--no-such-option'") == 0);
	}
}

TEST_CASE("the man pages render without warnings", "[cli][man]")
{
	if (!have_program("groff")) {
		WARN("groff is not installed: the man pages are not checked");
		return;
	}
	for (const char *page : { "hugetext.1", "hugetext.3", "large_page.3", "hugetext.7" }) {
		INFO(page);
		run_result r = run_cmd({ "groff", "-man", "-ww", "-z", source_path(std::string("man/") + page) });
		CHECK(r.status == 0);
		CHECK(r.err == "");
	}
}

TEST_CASE("hugetext(1) documents every command and option; hugetext(7) every variable run sets", "[cli][man]")
{
	std::string page1 = replace_all(read_file(source_path("man/hugetext.1")), "\\-", "-");
	std::string page7 = replace_all(read_file(source_path("man/hugetext.7")), "\\-", "-");
	for (const char *c : commands) {
		CHECK(page1.find(std::string(".SS \"") + c + " ") != std::string::npos);
		for (auto &o : long_options(tool({ c, "--help" }).out)) {
			INFO(c << " " << o);
			CHECK(page1.find(o) != std::string::npos);
		}
	}
	std::string run_help = tool({ "run", "--help" }).out;
	size_t at = 0, count = 0;
	while ((at = run_help.find("HUGETEXT_", at)) != std::string::npos) {
		size_t end = run_help.find_first_of("=\n ", at);
		std::string var = run_help.substr(at, end - at);
		INFO(var);
		CHECK((page7.find("\n.B " + var) != std::string::npos || page7.find("\n.BI " + var) != std::string::npos));
		CHECK(page1.find(var) != std::string::npos);
		at = end;
		count++;
	}
	CHECK(count == 12);
}
