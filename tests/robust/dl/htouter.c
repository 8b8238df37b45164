/*
 * libhtouter.so (RUNPATH $ORIGIN/sub): while it is being dlopen()ed, its
 * constructor dlopen()s libhtinner.so by bare name, which only its RUNPATH
 * finds, and libhtx.so through $ORIGIN; its destructor dlopen()s by
 * $ORIGIN again.  What the calls gave is left for the program to print.
 * The constructor also walks its stack (through the dlopen() that runs
 * it), as crash handlers and profilers do.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>

void *htouter_inner;
int htouter_frames;
char htouter_inner_said[512], htouter_origin_said[512];

static void said(char *buf, size_t len, void *h)
{
	const char *e = h ? NULL : dlerror();

	snprintf(buf, len, "%s", h ? "ok" : e ? e : "failed without dlerror");
}

__attribute__((constructor)) static void htouter_init(void)
{
	void *frames[64];

	htouter_frames = backtrace(frames, 64);
	htouter_inner = dlopen("libhtinner.so", RTLD_NOW);
	said(htouter_inner_said, sizeof(htouter_inner_said), htouter_inner);
	said(htouter_origin_said, sizeof(htouter_origin_said), dlopen("$ORIGIN/libhtx.so", RTLD_NOW));
}

__attribute__((destructor)) static void htouter_fini(void)
{
	char buf[512];

	said(buf, sizeof(buf), dlopen("$ORIGIN/libhtx.so", RTLD_NOW));
	printf("destructor origin %s\n", buf);
	fflush(stdout);
}
