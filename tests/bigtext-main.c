/*
 * A program with tens of MiB of code, for the preload tests.  It prints a
 * checksum that needs every function, the number of its open descriptors,
 * and (with "smaps") the bytes of its own text on huge pages, counted here
 * independently of the library (main_huge_kb: at main()'s start).  "hold
 * MS" keeps it alive for MS ms.
 * "await MS [LINGER]" waits up to MS ms for its text to be on huge pages and
 * for its line in HUGETEXT_REPORT, if set (a move in the background), then
 * LINGER ms more.  "unshare" calls setns() and unshare(CLONE_NEWUSER),
 * which need a single-threaded process, first thing in main(); "unshare
 * threaded" does so with a thread of its own alive, to show the rule (and
 * see namespaces() for more).
 * "folios" prints the kB of its text on anonymous folios of 64 KiB or
 * more (folio_kb, counted as root from pagemap and kpageflags; -1 when
 * those cannot be read) and movable_kb.
 * "closefrom FILE" closes every descriptor above stderr first thing, as
 * daemons do, then works with FILE through a descriptor of its own and
 * keeps closing every other one; then it awaits the move.
 * "patch MS" waits MS ms, then makes the page of one function writable and
 * rewrites the function, as hot patchers and debuggers do, then awaits the
 * move and checks the patch is still there and the page still writable.
 * "patch MS DIR" patches as soon as DIR holds a shared cache entry being
 * filled (a name with ".tmp." in it), or after MS ms.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <time.h>
#include <unistd.h>

#include "bigtext.h"
#include "report-line.h"
#include "smaps-count.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The mapping of the executable segment that holds bigtext, from the program headers. */
static int text_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long *span = arg, page = (unsigned long)getpagesize();

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		unsigned long lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || lo > (unsigned long)bigtext_start ||
		    hi < (unsigned long)bigtext_end)
			continue;
		span[0] = lo & ~(page - 1);
		span[1] = (hi + page - 1) & ~(page - 1);
		return 1;
	}
	return 0;
}

/*
 * The bytes of the whole 2 MiB pages of the text's mapping, in kB: all a
 * move can cover.  The mapping, not bigtext alone: where the load address
 * is 2 MiB-aligned (one start in 32 with arm64's 64 KiB segment alignment)
 * the first page, with main() and the PLT before bigtext, is whole too.
 */
static unsigned long movable_kb(void)
{
	unsigned long span[2] = { (unsigned long)bigtext_start, (unsigned long)bigtext_end };
	unsigned long lo, hi;

	dl_iterate_phdr(text_segment, span);
	lo = (span[0] + (2ul << 20) - 1) & ~((2ul << 20) - 1);
	hi = span[1] & ~((2ul << 20) - 1);
	return hi > lo ? (hi - lo) / 1024 : 0;
}

/* Where the program started, when "cd" moved it. */
static char start_dir[4096];

/* True once HUGETEXT_REPORT (if set) holds a line from this process. */
static int reported(void)
{
	const char *path = getenv("HUGETEXT_REPORT");
	char full[8192];

	if (!path || !*path)
		return 1;
	if (path[0] != '/' && start_dir[0]) {
		snprintf(full, sizeof(full), "%s/%s", start_dir, path);
		path = full;
	}
	return report_has_line(path);
}

/*
 * Waits for the move to end: for its report line when there is a report
 * (written last, whatever the outcome), else for the text on huge pages.
 */
static void await_huge(int ms)
{
	const char *report = getenv("HUGETEXT_REPORT");
	double t0 = now_ms();
	unsigned long kb = huge_kb_in(bigtext_start, bigtext_end);

	while (!(report && *report ? reported() : kb >= movable_kb()) && now_ms() - t0 < ms) {
		usleep(2000);
		kb = huge_kb_in(bigtext_start, bigtext_end);
	}
	/* The line may have come after the last count. */
	kb = huge_kb_in(bigtext_start, bigtext_end);
	printf("pid %ld\nmovable_kb %lu\nawait_huge_kb %lu\n", (long)getpid(), movable_kb(), kb);
}

static void *idle_thread(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

/* Prints 0 or the errno name of each call; the calls come before anything else. */
static const char *err_name(int e)
{
	return e ? strerrorname_np(e) : "0";
}

/* In a child made by clone() alone: no fork() handlers ran in it. */
static int unshare_child(void *arg)
{
	(void)arg;
	_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
}

/*
 * "unshare [threaded | chroot DIR | clone]": setns() into our own mount
 * namespace and unshare(CLONE_NEWUSER), with a thread of our own alive,
 * after chroot(DIR) (no /proc there), or the latter in a clone() child.
 */
static void namespaces(int argc, char **argv)
{
	const char *how = argc > 2 ? argv[2] : "";
	unsigned long before = huge_kb_in(bigtext_start, bigtext_end);
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	static char stack[256 * 1024];
	pthread_t th;
	int s, u, st;

	if (strcmp(how, "threaded") == 0)
		pthread_create(&th, NULL, idle_thread, NULL);
	if (strcmp(how, "chroot") == 0 && argc > 3 && chroot(argv[3]) != 0)
		printf("chroot %s\n", err_name(errno));
	if (strcmp(how, "clone") == 0) {
		pid_t pid = clone(unshare_child, stack + sizeof(stack), SIGCHLD, NULL);

		u = pid < 0 ? errno : waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		printf("clone_unshare %s\n", u < 0 ? "lost" : err_name(u));
	}
	s = fd >= 0 && setns(fd, CLONE_NEWNS) == 0 ? 0 : errno;
	u = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
	if (fd >= 0)
		close(fd);
	printf("huge_kb_before %lu\nsetns %s\nunshare %s\n", before, err_name(s), err_name(u));
}

/*
 * Closes what it did not open, then writes FILE and reads it back a few
 * times while a background move may be running: a descriptor of the
 * library's that took our number, or one of ours it closed, would show.
 */
static void closefrom_work(const char *path)
{
	char buf[64], back[64];
	int fd, good = 1;

	close_range(3, ~0U, 0);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	for (int i = 0; i < 50 && fd >= 0 && good; i++) {
		int n = snprintf(buf, sizeof(buf), "line %d\n", i);

		/* And again and again, as a program that hands out descriptors might. */
		close_range((unsigned)fd + 1, ~0U, 0);
		good = pwrite(fd, buf, (size_t)n, 0) == n && pread(fd, back, (size_t)n, 0) == n &&
		       memcmp(buf, back, (size_t)n) == 0;
		usleep(500);
	}
	printf("closefrom %s\n", fd >= 0 && good && close(fd) == 0 ? "ok" : "broken");
	await_huge(20000);
}

/* "return VALUE" over function @i: mov eax, VALUE; ret (arm64: mov w0, #VALUE; ret). */
static void write_fn(unsigned i, unsigned char value)
{
#if defined(__aarch64__)
	uint32_t code[] = { 0x52800000u | (uint32_t)value << 5, 0xd65f03c0u };
#else
	unsigned char code[] = { 0xb8, value, 0, 0, 0, 0xc3 };
#endif

	memcpy((void *)bigtext_get(i), code, sizeof(code));
	__builtin___clear_cache((char *)bigtext_get(i), (char *)bigtext_get(i) + sizeof(code));
}

/* Whether @dir holds a name with ".tmp." in it: a shared cache entry being filled. */
/*
 * kB mapped from the code's last page to the end of its 2 MiB page ("smaps
 * tail"): free address space before main() in a layout such as
 * bigtext-tail's, where only a mapping the library made can be.
 */
static unsigned long after_code_kb(void)
{
	unsigned long span[2] = { 0, 0 }, lo, hi, kb = 0;
	char line[512];
	FILE *f;

	if (!dl_iterate_phdr(text_segment, span))
		return 0;
	unsigned long from = span[1], to = (span[1] + (2ul << 20) - 1) & ~((2ul << 20) - 1);
	f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < to && hi > from)
			kb += ((hi < to ? hi : to) - (lo > from ? lo : from)) / 1024;
	if (f)
		fclose(f);
	return kb;
}

#ifdef BT_RODATA_MIB
/* Read-only data after the code in the file: it holds the code's last 2 MiB page whole (node's layout). */
const unsigned char bt_rodata[BT_RODATA_MIB << 20] = { 1 };
#endif

static int filling(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && !found && (e = readdir(d)) != NULL)
		found = strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return found;
}

static void patch_work(int ms, const char *watch)
{
	unsigned i = bigtext_count / 2;
	unsigned long page = (unsigned long)bigtext_get(i) & ~4095ul;
	int first, second;

	if (!watch)
		usleep((useconds_t)ms * 1000);
	/* Polled every 0.1 ms: the fill lasts milliseconds, even for a small text. */
	for (int waited = 0; watch && waited < ms * 10 && !filling(watch); waited++)
		usleep(100);
	if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
		printf("patch mprotect-failed\n");
		return;
	}
	write_fn(i, 42);
	first = bigtext_get(i)(5);
	await_huge(20000);
	/* A move that put the old code back would answer 15 + i here, or fault. */
	second = bigtext_get(i)(5);
	write_fn(i, 43);
	printf("patch %d %d %d\n", first, second, bigtext_get(i)(5));
}

static void *nothing(void *arg)
{
	return arg;
}

/*
 * "spin MS [WAIT [threaded]]": run the code for MS ms of this thread's CPU
 * time, then say how much of it is on huge pages, how many threads the
 * process has, and whether glibc still runs it single-threaded
 * (__libc_single_threaded: no thread was ever made).  With WAIT, first
 * wait up to WAIT ms (idle) for all of the movable code to be on huge
 * pages and for this thread to be the only one: a background move that
 * was due may still be copying (slowly, under qemu).  "threaded" makes a
 * thread of the program's own first and joins it, as a runtime's start
 * does.
 */
static void spin_work(int ms, int wait, int threaded)
{
	unsigned long sum = 0;
	pthread_t th;
	double t0;

	if (threaded && pthread_create(&th, NULL, nothing, NULL) == 0)
		pthread_join(th, NULL);
	t0 = thread_cpu_ms();
	do
		sum += bigtext_sum(3);
	while (thread_cpu_ms() - t0 < ms);
	/* A background move may still be swapping: give it a moment to end. */
	usleep(200 * 1000);
	for (int waited = 0; waited < wait; waited += 10) {
		if (huge_kb_in(bigtext_start, bigtext_end) >= movable_kb() && thread_count() == 1)
			break;
		usleep(10 * 1000);
	}
	printf("spin_sum_odd %lu\nspin_huge_kb %lu\nthreads %d\nsingle_threaded %d\n", sum & 1,
	       huge_kb_in(bigtext_start, bigtext_end), thread_count(), __libc_single_threaded);
}

int main(int argc, char **argv)
{
	/*
	 * "smaps": the text on huge pages first thing in main(), before the
	 * sum runs every function (seconds under qemu, time enough for a move
	 * in the background to end), and again after it.
	 */
	unsigned long main_kb = argc > 1 && strcmp(argv[1], "smaps") == 0 ?
		huge_kb_in(bigtext_start, bigtext_end) : 0;

	/* "cd DIR ARGS...": change directory first, then do ARGS. */
	if (argc > 3 && strcmp(argv[1], "cd") == 0) {
		if (getcwd(start_dir, sizeof(start_dir)) == NULL || chdir(argv[2]) != 0)
			return 1;
		argv += 2;
		argc -= 2;
	}
	if (argc > 2 && strcmp(argv[1], "patch") == 0) {
		patch_work(atoi(argv[2]), argc > 3 ? argv[3] : NULL);
		return 0;
	}
	/*
	 * "threads": pthread_create() with an attribute the thread cannot have
	 * (a 256 TiB stack: more than a process's address space, whatever the
	 * overcommit setting) and with a good one; prints glibc's answers.
	 */
	if (argc > 1 && strcmp(argv[1], "threads") == 0) {
		pthread_attr_t attr;
		static int token;
		pthread_t th;
		void *back = NULL;
		int bad, good;

		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, (size_t)1 << 48);
		bad = pthread_create(&th, &attr, nothing, NULL);
		pthread_attr_destroy(&attr);
		good = pthread_create(&th, NULL, nothing, &token);
		if (good == 0)
			pthread_join(th, &back);
		printf("bad_stack %s\ngood %s\nreturned %s\n", err_name(bad), err_name(good),
		       back == &token ? "arg" : "other");
		return 0;
	}
	if (argc > 2 && strcmp(argv[1], "spin") == 0) {
		spin_work(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 0,
			  argc > 4 && strcmp(argv[4], "threaded") == 0);
		return 0;
	}
	if (argc > 2 && strcmp(argv[1], "closefrom") == 0)
		closefrom_work(argv[2]);
	if (argc > 1 && strcmp(argv[1], "unshare") == 0)
		namespaces(argc, argv);
	printf("sum %lu\n", bigtext_sum(7));
	printf("fds %d\n", count_fds());
	if (argc > 1 && strcmp(argv[1], "folios") == 0)
		printf("folio_kb %ld\nmovable_kb %lu\n", folio_anon_kb_in(bigtext_start, bigtext_end),
		       movable_kb());
	if (argc > 1 && strcmp(argv[1], "smaps") == 0)
		printf("main_huge_kb %lu\nhuge_kb %lu\nfile_pmd_kb %lu\n", main_kb,
		       huge_kb_in(bigtext_start, bigtext_end), file_pmd_kb_in(bigtext_start, bigtext_end));
	/* "smaps tail": also what is mapped after the code (a PIE's neighbours differ each start). */
	if (argc > 2 && strcmp(argv[1], "smaps") == 0 && strcmp(argv[2], "tail") == 0)
		printf("after_code_kb %lu\n", after_code_kb());
	if (argc > 2 && strcmp(argv[1], "await") == 0) {
		await_huge(atoi(argv[2]));
		/* "await MS LINGER": stay a little after, for what the move does last. */
		if (argc > 3)
			usleep((useconds_t)atoi(argv[3]) * 1000);
	}
	/* "hold MS": stay alive a while, so a test can look at several at once. */
	if (argc > 2 && strcmp(argv[1], "hold") == 0) {
		printf("ready\n");
		fflush(stdout);
		usleep((useconds_t)atoi(argv[2]) * 1000);
	}
	return 0;
}
