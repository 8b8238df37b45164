/*
 * dlopen-main LIB: four threads run the program's own generated code while
 * the main thread dlopen()s LIB (a library built from bigtext.S).  Prints
 * what the program can observe of dlopen(): its result, dlerror(), errno,
 * RTLD_NOLOAD, a failing dlopen's message; then the library's huge page kB
 * (right after dlopen returned), its checksum, and the threads' count of
 * wrong answers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../bigtext.h"
#include "../smaps-count.h"

static volatile int stop;
static int started;
static unsigned long wrong, calls;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *runner(void *arg)
{
	unsigned t = (unsigned)(unsigned long)arg, w = 0, c = 0;

	while (!stop) {
		for (unsigned i = t; i < bigtext_count; i += 4) {
			w += bigtext_get(i)(5) != (int)(15 + i);
			c++;
		}
		if (c == (bigtext_count - t + 3) / 4)
			__atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&mu);
	wrong += w;
	calls += c;
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[4];
	void *h;
	const char *err;

	if (argc < 2)
		return 2;
	for (unsigned long t = 0; t < 4; t++)
		pthread_create(&th[t], NULL, runner, (void *)t);
	/* Every thread runs the code when dlopen() is called, however busy the machine. */
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < 4)
		usleep(1000);

	errno = 0;
	h = dlopen(argv[1], RTLD_NOW);
	printf("dlopen %s\n", h ? "ok" : "failed");
	if (!h)
		printf("dlopen error %s\n", dlerror());
	err = dlerror();
	printf("dlerror after %s\n", err ? err : "(none)");
	if (h) {
		char *start = dlsym(h, "bigtext_start"), *end = dlsym(h, "bigtext_end");
		unsigned *count = dlsym(h, "bigtext_count"), *stride = dlsym(h, "bigtext_stride");
		unsigned long sum = 0;

		printf("dso_huge_kb %lu\n", start && end ? huge_kb_in(start, end) : 0);
		if (start && count && stride)
			for (unsigned i = 0; i < *count; i++)
				sum = sum * 31 + (unsigned)((int (*)(int))(void *)(start + (unsigned long)i * *stride))(7);
		printf("dso sum %lu\n", sum);
		printf("noload same %d\n", dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) == h);
	}
	errno = 0;
	printf("missing %s\n", dlopen("libhugetext-no-such-library.so", RTLD_NOW) ? "loaded?" : dlerror());
	printf("missing errno %d\n", errno);

	stop = 1;
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	printf("wrong %lu\n", wrong);
	printf("threads ran %s\n", calls ? "yes" : "no");
	printf("sum %lu\n", bigtext_sum(7));
	return 0;
}
