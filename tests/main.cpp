// Catch2 runner shared by every test program.  A program that needs what
// the machine lacks defines test_skip_reason(); when it answers, the whole
// program exits 77, which meson reports as skipped, with the reason.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "helpers.hpp"

extern "C" __attribute__((weak)) const char *test_skip_reason(void)
{
	return nullptr;
}

int main(int argc, char **argv)
{
	const char *why = test_skip_reason();

	if (why) {
		std::printf("SKIP: %s\n", why);
		return 77;
	}
	return Catch::Session().run(argc, argv);
}
