// Catch2 runner shared by every test program.  A program that needs what
// the machine lacks defines test_skip_reason(); when it answers, the whole
// program exits 77, which meson reports as skipped, with the reason.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "helpers.hpp"

extern "C" __attribute__((weak)) const char *test_skip_reason(void)
{
	return nullptr;
}

int main(int argc, char **argv)
{
	const char *why = test_skip_reason();

	/*
	 * Most tests check the copy.  Whether a binary built a moment ago sits
	 * in 2 MiB page-cache pages depends on the file system, and the
	 * preload's warming would change it from one test to the next: the
	 * programs they start copy always, unless a test asks otherwise
	 * (tests/test-pagecache.cpp tests the page-cache path).
	 */
	setenv("HUGETEXT_PAGE_CACHE", "0", 0);
	/*
	 * The same for the preload's default copy policy (auto: a private copy
	 * waits until the process has run long enough to pay for it): the
	 * programs the tests start copy at once, unless a test asks otherwise
	 * (tests/test-copy.cpp tests the deferred copy).
	 */
	setenv("HUGETEXT_COPY", "now", 0);

	if (why) {
		std::printf("SKIP: %s\n", why);
		return 77;
	}
	return Catch::Session().run(argc, argv);
}
