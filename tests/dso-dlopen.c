/*
 * Loads a library built like libbigtext.so with dlopen(argv[1]) and, before
 * calling anything in it, prints the huge page kB of its two code
 * segments: a remap triggered by dlopen() must be done by the time
 * dlopen() returns.  Then it calls all of it and prints a checksum.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "smaps-count.h"

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	char *start, *end, *two, *two_e;
	unsigned stride, count;
	unsigned long sum = 0;

	if (!h) {
		printf("dlopen failed: %s\n", dlerror());
		return 1;
	}
	start = dlsym(h, "bigtext_start");
	end = dlsym(h, "bigtext_end");
	two = dlsym(h, "two_start");
	two_e = dlsym(h, "two_end");
	if (!start || !end || !two || !two_e || !dlsym(h, "bigtext_count"))
		return 1;
	printf("text_huge_kb %lu\n", huge_kb_in(start, end));
	printf("two_huge_kb %lu\n", huge_kb_in(two, two_e));
	count = *(unsigned *)dlsym(h, "bigtext_count");
	stride = *(unsigned *)dlsym(h, "bigtext_stride");
	for (unsigned i = 0; i < count; i++)
		sum = sum * 31 + (unsigned)((int (*)(int))(void *)(start + (unsigned long)i * stride))(7);
	printf("sum %lu\n", sum);
	dlclose(h);
	return 0;
}
