/*
 * dlexact-main SCENARIO: prints what a program can observe of dlopen() in
 * one scenario (results, dlerror(), errno, which objects are loaded), for
 * a comparison with and without the preload.  Lines starting "huge " are
 * the only ones the preload may change.  Lives next to libhtx.so and
 * libhtouter.so, which it loads through $ORIGIN.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../smaps-count.h"

#define HTX "$ORIGIN/libhtx.so"
#define OUTER "$ORIGIN/libhtouter.so"

/* Exported (export_dynamic) for dlsym(dlopen(NULL)). */
int dlexact_marker = 7;

static void said(const char *what, void *h)
{
	const char *e = h ? NULL : dlerror();

	printf("%s %s\n", what, h ? "ok" : "failed");
	if (!h)
		printf("%s error %s\n", what, e ? e : "(none)");
}

static void dlerror_now(const char *what)
{
	const char *e = dlerror();

	printf("%s dlerror %s\n", what, e ? e : "(none)");
}

static int htx_value_of(void *h)
{
	int (*f)(void) = (int (*)(void))dlsym(h, "htx_value");

	return f ? f() : -1;
}

static int origin(void)
{
	void *h;

	errno = 0;
	h = dlopen(HTX, RTLD_NOW);
	said("origin", h);
	printf("origin errno %d\n", errno);
	dlerror_now("origin");
	printf("origin value %d\n", h ? htx_value_of(h) : -1);
	return 0;
}

/* Loaded by its full path: only the constructor's search is under test. */
static void *open_outer(void)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	char *slash;

	if (n <= 0)
		return NULL;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return NULL;
	strcpy(slash, "/libhtouter.so");
	return dlopen(path, RTLD_NOW);
}

static int ctor(void)
{
	void **inner;
	char *inner_said, *origin_said;
	int *frames;
	void *h = open_outer();

	said("outer", h);
	if (!h)
		return 0;
	inner = dlsym(h, "htouter_inner");
	inner_said = dlsym(h, "htouter_inner_said");
	origin_said = dlsym(h, "htouter_origin_said");
	printf("constructor runpath %s\n", inner_said ? inner_said : "?");
	printf("constructor origin %s\n", origin_said ? origin_said : "?");
	frames = dlsym(h, "htouter_frames");
	printf("constructor backtrace %s\n", frames && *frames > 0 ? "ok" : "none");
	if (inner && *inner) {
		char *start = dlsym(*inner, "bigtext_start"), *end = dlsym(*inner, "bigtext_end");
		unsigned *count = dlsym(*inner, "bigtext_count"), *stride = dlsym(*inner, "bigtext_stride");
		unsigned long sum = 0;

		/* Measured first: what the preload did before dlopen() returned (copy or page cache). */
		printf("huge inner_kb %lu\n", start && end ? huge_kb_in(start, end) + file_pmd_kb_in(start, end) : 0);
		for (unsigned i = 0; start && count && stride && i < *count; i++)
			sum = sum * 31 + (unsigned)((int (*)(int))(void *)(start + (unsigned long)i * *stride))(7);
		printf("inner sum %lu\n", sum);
	}
	dlerror_now("outer");
	/* Its destructor prints what its own dlopen() gave. */
	printf("outer close %d\n", dlclose(h));
	return 0;
}

static int noload(void)
{
	void *h0, *h;

	errno = 0;
	h0 = dlopen(HTX, RTLD_NOW | RTLD_NOLOAD);
	said("noload before", h0);
	printf("noload before errno %d\n", errno);
	h = dlopen(HTX, RTLD_NOW);
	said("load", h);
	printf("noload after same %d\n", h && dlopen(HTX, RTLD_LAZY | RTLD_NOLOAD) == h);
	dlerror_now("noload");
	return 0;
}

static int nodelete(void)
{
	void *h = dlopen(HTX, RTLD_NOW);

	said("plain", h);
	if (h)
		dlclose(h);
	printf("plain kept %d\n", dlopen(HTX, RTLD_NOW | RTLD_NOLOAD) != NULL);
	dlerror();
	h = dlopen(HTX, RTLD_NOW | RTLD_NODELETE);
	said("nodelete", h);
	if (h)
		dlclose(h);
	printf("nodelete kept %d\n", dlopen(HTX, RTLD_NOW | RTLD_NOLOAD) != NULL);
	return 0;
}

static int global(void)
{
	void *h = dlopen(HTX, RTLD_NOW | RTLD_LOCAL);

	said("local", h);
	printf("local default %d\n", dlsym(RTLD_DEFAULT, "htx_value") != NULL);
	dlerror();
	h = dlopen(HTX, RTLD_NOW | RTLD_GLOBAL);
	said("global", h);
	printf("global default %d\n", dlsym(RTLD_DEFAULT, "htx_value") != NULL);
	return 0;
}

static int null(void)
{
	void *h1, *h2;
	int *marker;

	errno = 0;
	h1 = dlopen(NULL, RTLD_NOW);
	h2 = dlopen(NULL, RTLD_LAZY | RTLD_GLOBAL);
	said("null", h1);
	printf("null same %d\n", h1 == h2);
	printf("null errno %d\n", errno);
	dlerror_now("null");
	marker = h1 ? dlsym(h1, "dlexact_marker") : NULL;
	printf("null marker %d\n", marker ? *marker : -1);
	return 0;
}

static int mopen(void)
{
	void *h = dlmopen(LM_ID_NEWLM, HTX, RTLD_NOW);
	Lmid_t lmid = 0;

	said("dlmopen", h);
	if (!h)
		return 0;
	printf("dlmopen namespace new %d\n", dlinfo(h, RTLD_DI_LMID, &lmid) == 0 && lmid != LM_ID_BASE);
	printf("dlmopen value %d\n", htx_value_of(h));
	printf("dlmopen base loaded %d\n", dlopen(HTX, RTLD_NOW | RTLD_NOLOAD) != NULL);
	return 0;
}

static int errors(void)
{
	void *h;

	errno = 0;
	h = dlopen("libhtx-no-such-library.so", RTLD_NOW);
	said("missing", h);
	printf("missing errno %d\n", errno);
	dlerror_now("missing again");
	(void)dlopen("libhtx-no-such-library.so", RTLD_NOW);
	errno = 1234;
	h = dlopen(HTX, RTLD_NOW);
	/* No dlerror() between: the success must clear the failure's message. */
	printf("success errno %d\n", errno);
	dlerror_now("success");
	said("success", h);
	return 0;
}

static void *thread_loop(void *arg)
{
	long bad = 0;

	(void)arg;
	for (int i = 0; i < 40; i++) {
		void *h = dlopen(i % 2 ? HTX : OUTER, RTLD_NOW);

		bad += !h;
		if (h && i % 2)
			bad += htx_value_of(h) != 42;
		if (h)
			dlclose(h);
	}
	return (void *)bad;
}

static int threads(void)
{
	pthread_t th[4];
	long total = 0;

	for (int t = 0; t < 4; t++)
		pthread_create(&th[t], NULL, thread_loop, NULL);
	for (int t = 0; t < 4; t++) {
		void *bad;

		pthread_join(th[t], &bad);
		total += (long)bad;
	}
	printf("threads failures %ld\n", total);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(void);
	} scenarios[] = {
		{ "origin", origin }, { "ctor", ctor }, { "noload", noload },
		{ "nodelete", nodelete }, { "global", global }, { "null", null },
		{ "dlmopen", mopen }, { "errors", errors }, { "threads", threads },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; argc > 1 && i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strcmp(argv[1], scenarios[i].name) == 0)
			return scenarios[i].run();
	return 2;
}
