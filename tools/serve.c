/* SPDX-License-Identifier: MIT */
/*
 * hugetext serve: the text service.  Processes running the preload hand it
 * the open files of big objects whose code no shared path serves yet; it
 * makes that code huge for every later start, off their critical path:
 *
 *   1. it warms the file's page cache into 2 MiB pages (as `hugetext warm`),
 *      which the kernel maps huge by itself where the file system keeps
 *      such pages (XFS, ext4 from 6.16): no copy at all;
 *   2. where that did not take, it fills the shared cache's entry, root's
 *      and read-only, under HT_TEXT_CACHE_DIR/shared, which every user's
 *      later starts map (the tmpfs is mounted with a size limit when absent);
 *   3. a file still mapped by running processes is warmed again later.
 *
 * Only files that only root can write are served, and only when the
 * sender runs them: nothing a user can write reaches another user.  A
 * container's overlay file is judged, warmed and filled as the real file
 * behind it (serve-real.c), and the entry linked into the container's view
 * (serve-fill.c).  The acceptor (serve-net.c) takes every connection at
 * once and shuts a flooding uid out; this file's worker does what costs,
 * one client's job after another's, within each client's budget.  The
 * state file (HTE_SERVE_STATE) says what it did, for `hugetext status`.
 * The contract is docs/service.md.
 */
#include "tool.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>

#include "cache.h"
#include "conf.h"
#include "objects.h"
#include "serve-int.h"
#include "setup.h"
#include "status.h"
#include "sys.h"

static const char serve_usage[] =
	"usage: hugetext serve [--socket PATH] [--state PATH] [--config FILE] [--no-warm] [--once]\n"
	"\n"
	"Run the text service: take the files that processes running the preload\n"
	"offer, and make their code huge for later starts (warm the page cache into\n"
	"2 MiB pages; else fill the shared text cache at " HT_TEXT_CACHE_DIR ", mounted\n"
	"when absent with text_cache_size of /etc/hugetext.conf as its limit, by\n"
	"default 1/16 of memory).  Under systemd the socket comes from\n"
	"hugetext-serve.socket; started by hand it binds " HT_SERVICE_SOCKET " itself.\n"
	"'service = 0' in /etc/hugetext.conf (or --config FILE): exit at once.\n"
	"--state PATH: where it says what it did (default " HTE_SERVE_STATE "; \"\": nowhere).\n"
	"--no-warm: never warm the page cache, fill the shared cache only.\n"
	"--once: serve one offer, then exit (for tests).\n";

struct serve_state srv;

double mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Adds a line about client @owner: it replaces that client's oldest when it has LOG_PER_CLIENT, else the oldest. */
static void log_vadd(struct log *g, int owner, const char *fmt, va_list ap)
{
	unsigned mine = 0, drop = 0;

	pthread_mutex_lock(&srv.mu);
	for (unsigned i = 0; i < g->n; i++)
		if (owner >= 0 && g->l[i].owner == owner && mine++ == 0)
			drop = i;
	if (mine >= LOG_PER_CLIENT || g->n == LOG_KEEP) {
		if (mine < LOG_PER_CLIENT)
			drop = 0;
		memmove(&g->l[drop], &g->l[drop + 1], (g->n - drop - 1) * sizeof(g->l[0]));
		g->n--;
	}
	vsnprintf(g->l[g->n].text, sizeof(g->l[0].text), fmt, ap);
	g->l[g->n].owner = owner;
	g->n++;
	g->total++;
	pthread_mutex_unlock(&srv.mu);
}

void log_add(struct log *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vadd(g, -1, fmt, ap);
	va_end(ap);
}

void refuse_log(int c, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&srv.mu);
	if (c >= 0)
		srv.clients[c].refused++;
	va_start(ap, fmt);
	log_vadd(&srv.refused, c, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&srv.mu);
}

/* --- the offers known --- */

static void fd_path(int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(buf, len, "(fd %d)", fd);
}

void key_of(const struct stat *st, const struct ht_offer *m, struct key *k)
{
	memset(k, 0, sizeof(*k));
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->size = st->st_size;
	k->mtime_sec = st->st_mtim.tv_sec;
	k->mtime_nsec = st->st_mtim.tv_nsec;
	k->ctime_sec = st->st_ctim.tv_sec;
	k->ctime_nsec = st->st_ctim.tv_nsec;
	k->file_off = m->file_off;
	k->len = m->len;
	k->mapped = m->mapped;
}

int key_seen(const struct key *k)
{
	time_t now = time(NULL);

	for (unsigned i = 0; i < srv.ndone; i++)
		if (!memcmp(&srv.done[i], k, sizeof(*k)) && now - srv.done_at[i] < DONE_FOR_S)
			return 1;
	for (unsigned i = 0; i < srv.npend; i++)
		if (!memcmp(&srv.pend[i].k, k, sizeof(*k)))
			return 1;
	return 0;
}

static void remember(const struct key *k)
{
	srv.done[srv.done_next] = *k;
	srv.done_at[srv.done_next] = time(NULL);
	srv.done_next = (srv.done_next + 1) % MAX_DONE;
	srv.ndone += srv.ndone < MAX_DONE;
}

/* --- the clients --- */

/* A free slot, forgetting the client idle longest when none is (never one that holds or waits for something). */
static int new_client(void)
{
	double now = mono_now(), oldest = 0;
	int pick = -1;

	for (int i = 0; i < MAX_CLIENTS; i++)
		if (!srv.clients[i].used)
			return i;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &srv.clients[i];

		if (c->held || c->pending || c->banned_until > now || now - c->last_seen < 60)
			continue;
		if (pick < 0 || c->last_seen < oldest) {
			pick = i;
			oldest = c->last_seen;
		}
	}
	return pick;
}

int client_of_uid(uid_t uid)
{
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (srv.clients[i].used && srv.clients[i].kind == CLIENT_UID && srv.clients[i].uid == uid)
			return i;
	i = new_client();
	if (i < 0)
		return -1;
	memset(&srv.clients[i], 0, sizeof(srv.clients[i]));
	srv.clients[i].used = 1;
	srv.clients[i].kind = CLIENT_UID;
	srv.clients[i].uid = uid;
	srv.clients[i].last_seen = mono_now();
	snprintf(srv.clients[i].name, sizeof(srv.clients[i].name), "uid %u", (unsigned)uid);
	return i;
}

int client_of_container(const char *id, unsigned long long mntns, uid_t uid)
{
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (srv.clients[i].used && srv.clients[i].kind == CLIENT_CONTAINER && !strcmp(srv.clients[i].id, id))
			break;
	if (i == MAX_CLIENTS) {
		i = new_client();
		if (i < 0)
			return -1;
		memset(&srv.clients[i], 0, sizeof(srv.clients[i]));
		srv.clients[i].used = 1;
		srv.clients[i].kind = CLIENT_CONTAINER;
		snprintf(srv.clients[i].id, sizeof(srv.clients[i].id), "%s", id);
		snprintf(srv.clients[i].name, sizeof(srv.clients[i].name), "container %s", id);
	}
	srv.clients[i].uid = uid;
	srv.clients[i].mntns = mntns;
	srv.clients[i].last_seen = mono_now();
	return i;
}

int queue_offer(const struct pending *p)
{
	struct client *c = &srv.clients[p->client];

	if (srv.npend >= MAX_PENDING || c->pending >= MAX_PER_CLIENT)
		return -1;
	srv.pend[srv.npend] = *p;
	srv.pend[srv.npend].next = time(NULL);
	srv.npend++;
	srv.queued++;
	c->pending++;
	return 0;
}

/* --- checks that cost: the worker's --- */

/*
 * The entry's name, as the library looks it up: by the offered file itself
 * (device, inode, size, time), never by its build ID, which any file can
 * claim (docs/service.md).  The offer's span must lie in an executable
 * segment of a valid ELF file.  Returns: NULL or why not.
 */
static const char *entry_name(int fd, const struct stat *st, const struct ht_offer *m, char *name,
			      size_t len)
{
	struct ht_cache_key ck = { .file_off = m->file_off, .len = m->len, .mapped = m->mapped };
	char path[64];
	struct hte_file f;
	int in_text = 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (hte_file_open(&f, path, 0, "serve") < 0)
		return "not an ELF file hugetext can read";
	for (size_t i = 0; i < f.elf.nload; i++) {
		const struct hte_seg *s = &f.elf.load[i];

		/* The span's code overlaps an executable segment's bytes in the file. */
		if ((s->flags & PF_X) && m->file_off < s->offset + s->filesz &&
		    s->offset < m->file_off + m->mapped)
			in_text = 1;
	}
	hte_file_close(&f);
	if (!in_text)
		return "the span is not in the file's code";
	ht_cache_key_of_file(&ck, st);
	return ht_cache_name(&ck, name, len) < 0 ? "cache key too long" : NULL;
}

/* The name the container's processes look the entry up by: the file as fstat() shows it to them. */
static const char *view_name(struct pending *p)
{
	struct ht_cache_key ck = { .file_off = p->m.file_off, .len = p->m.len, .mapped = p->m.mapped };

	ht_cache_key_of_file(&ck, &p->st);
	return ht_cache_name(&ck, p->view_name, sizeof(p->view_name)) < 0 ? "cache key too long" : NULL;
}

/*
 * Whether the sender maps the file executable: on 6.6 and later its maps
 * show an overlay file as the overlay's (the offered descriptor's device
 * and inode), on 6.1 as the real file.  Returns 1, 0, or -1 when its maps
 * cannot be read (it has gone).
 */
static int sender_maps_file(const struct pending *p)
{
	char maps[64], *buf;
	size_t len;
	int runs;

	snprintf(maps, sizeof(maps), "/proc/%ld/maps", (long)p->sender);
	if (ht_sys_read_file(maps, &buf, &len) < 0)
		return -1;
	/* A zombie has no maps: as if gone. */
	if (len == 0) {
		free(buf);
		return -1;
	}
	runs = hte_maps_runs_file(buf, len, p->st.st_dev, p->st.st_ino) ||
	       hte_maps_runs_file(buf, len, p->rst.st_dev, p->rst.st_ino);
	free(buf);
	return runs;
}

/* True while the sender still maps the file: its pages cannot be dropped and read again. */
static int sender_runs(const struct pending *p)
{
	return sender_maps_file(p) == 1;
}

/* The checks of an offer that cost: the real file, its own checks, its ELF, the sender.  Returns: NULL, or why not. */
static const char *check_offer(struct pending *p)
{
	const char *why = find_real_file(p);

	if (why)
		return why;
	/* The real file as the host sees it: its owner and mode, its mount, its size. */
	if (p->rst.st_dev != p->st.st_dev || p->rst.st_ino != p->st.st_ino) {
		why = ht_offer_refusal(&p->rst);
		if (!why)
			why = reader_refusal(p->real);
		if (!why)
			why = ht_offer_check(&p->m, (uint64_t)p->rst.st_size);
		if (why)
			return why;
	}
	/* A span that is no code of a readable ELF file is refused now, not after the wait. */
	why = entry_name(p->real, &p->rst, &p->m, p->name, sizeof(p->name));
	if (why)
		return why;
	/*
	 * A short-lived sender (a compiler's cc1, a --version) may have exited,
	 * or be a zombie with no maps, before its offer is read: the file's own
	 * checks above then decide.  That gives nothing away: anyone may map
	 * root's code into a process of their own and offer it (docs/service.md).
	 */
	if (sender_maps_file(p) == 0)
		return "the sender does not run this file";
	return p->view_id[0] ? view_name(p) : NULL;
}

/* --- serving one file --- */

/*
 * Fills the file's shared cache entry (named at the offer: fill_entry
 * checks the file did not change since), then links it into the sender's
 * container's view.  Returns 1 when done, 0 with no cache, -1 when
 * refused (@why).
 */
static int fill_file(struct pending *p, const char *after, const char **why)
{
	char path[512];
	int mfd = -1, dirfd;
	const char *lwhy;
	double t0;

	*why = NULL;
	dirfd = open_shared_dir(&mfd);
	if (dirfd < 0) {
		if (mfd >= 0)
			close(mfd);
		return 0;
	}
	t0 = mono_now();
	*why = fill_entry(mfd, dirfd, p);
	if (!*why) {
		fd_path(p->real, path, sizeof(path));
		log_add(&srv.filled, "%s: %s (%llu MiB, uid %u, %.0f ms%s)", path, p->name,
			(unsigned long long)(p->m.len >> 20), (unsigned)p->uid, (mono_now() - t0) * 1000, after);
		pthread_mutex_lock(&srv.mu);
		srv.clients[p->client].filled++;
		pthread_mutex_unlock(&srv.mu);
		if (link_view(dirfd, p, &lwhy) < 0)
			refuse_log(p->client, "%s: not linked into container %s's view: %s", p->real_path, p->view_id, lwhy);
	}
	close(dirfd);
	close(mfd);
	return *why ? -1 : 1;
}

/*
 * A container's offer of a file whose entry is there already (filled for
 * another container of the same image, or the host): linked now, once
 * compared whole.  Returns: 1 linked (done), 0 no such entry, -1 refused.
 */
static int link_existing(struct pending *p, const char **why)
{
	int mfd = -1, dirfd = open_shared_dir(&mfd), r = 0;

	*why = NULL;
	if (dirfd >= 0 && faccessat(dirfd, p->name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
	    entry_matches(dirfd, p->name, p->real, &p->m)) {
		r = link_view(dirfd, p, why);
		/* Linked already (another process of the container offered it first): done too. */
		if (r == 0)
			r = 1;
	}
	if (dirfd >= 0)
		close(dirfd);
	if (mfd >= 0)
		close(mfd);
	return r;
}

/*
 * One more try counted: 0 (try again, twice as long after the last, up to
 * RETRY_MAX_S) while KEEP_TRYING_S from the offer lasts, else 1.
 */
static int later(struct pending *p)
{
	p->tries++;
	if (time(NULL) >= p->until)
		return 1;
	p->wait_s = p->wait_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : p->wait_s * 2;
	return 0;
}

/*
 * One attempt at a file: warm its page cache (the kernel then maps it huge
 * with no copy and no memory of ours); where that cannot take, fill the
 * shared cache.  Pages that running processes map cannot be dropped and
 * read again, so a warm that did not take all is tried again later, less
 * and less often, for KEEP_TRYING_S when the sender has gone (other
 * processes map the file); the cache is filled when the warm gave nothing GONE_TRIES times
 * once the sender was gone (this file system keeps no 2 MiB pages), or after FILL_AFTER tries
 * while it runs (a server: its next start is served from the cache).
 * Returns 1 when done, 0 to try again, -1 when refused (@why).
 */
static int attempt(struct pending *p, const char **why)
{
	char buf[32], after[160] = "";
	struct hte_warm w = { 0 };
	int r = 1, runs;

	*why = NULL;
	pthread_mutex_lock(&srv.mu);
	srv.tries++;
	pthread_mutex_unlock(&srv.mu);
	/*
	 * Not while the sender runs, until it has run FILL_AFTER tries: a warm
	 * drops the file's pages that no process maps and reads them again,
	 * and the sender, which has not run most of its code yet, would fault
	 * on them while they are read back (clang's first compile lost 4% so).
	 * A short-lived program is served once it has gone; a server, whose
	 * mapped pages no warm can replace anyway, after FILL_AFTER seconds.
	 */
	if (p->tries + 1 < FILL_AFTER && sender_runs(p)) {
		p->tries++;
		return 0;
	}
	/*
	 * A span off the 2 MiB grid (its first 2 MiB page starts at a file
	 * offset that is no multiple of 2 MiB: a library loaded after the
	 * containers' preload) cannot be mapped from the page cache's 2 MiB
	 * pages, which the kernel maps only where address and offset agree:
	 * no warm, the entry at once.
	 */
	if (!srv.no_warm && p->m.file_off % HT_HUGE_PAGE_SIZE == 0) {
		/* The real file: for a container's, the lower layer's, whose page cache every container shares. */
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", p->real);
		pthread_mutex_lock(&srv.mu);
		srv.warms++;
		pthread_mutex_unlock(&srv.mu);
		r = hte_warm_file(buf, 1, &w);
		if (r == 0 && w.code && w.huge == w.code) {
			log_add(&srv.warmed, "%s: %llu MiB in 2 MiB page-cache pages%s, try %u (uid %u)", p->real_path,
				(unsigned long long)(w.huge >> 20), w.already ? ", already" : "",
				p->tries + 1, (unsigned)p->uid);
			pthread_mutex_lock(&srv.mu);
			srv.clients[p->client].warmed++;
			pthread_mutex_unlock(&srv.mu);
			return 1;
		}
	}
	runs = r == 0 && sender_runs(p);
	/* The sender runs: a server's next start is served from the cache after a while. */
	if (r == 0 && runs && ++p->tries < FILL_AFTER)
		return 0;
	/*
	 * The sender is gone and the file system keeps 2 MiB pages: others
	 * still map it (a compiler's driver, the next compile).  Each warm
	 * maps, drops and reads the code again, so they come less often.
	 */
	if (r == 0 && !runs && w.huge > 0 && later(p) == 0)
		return 0;
	/*
	 * Nothing took: either this file system keeps no 2 MiB pages, or
	 * another process still maps all of the file (a compiler's driver
	 * outlives the cc1 that sent it).  A few more tries tell them apart.
	 */
	if (r == 0 && !runs && w.huge == 0 && ++p->gone_tries < GONE_TRIES)
		return 0;
	/* Why not the page cache: the state file says what the last warm found. */
	if (!srv.no_warm && p->m.file_off % HT_HUGE_PAGE_SIZE)
		snprintf(after, sizeof(after), "; off the 2 MiB grid at file offset %#llx: no warm",
			 (unsigned long long)p->m.file_off);
	else if (!srv.no_warm)
		snprintf(after, sizeof(after), "; warm %s: %llu of %llu MiB in 2 MiB pages, try %u%s",
			 r < 0 ? "failed" : r > 0 ? "found no whole 2 MiB of code" : "took",
			 (unsigned long long)(w.huge >> 20), (unsigned long long)(w.code >> 20), p->tries + 1,
			 runs ? ", the sender runs" : "");
	r = fill_file(p, after, why);
	/* No cache to fill: the page cache is the only way, while the tries last. */
	return r != 0 ? r : later(p);
}

/* A job: the checks at its first turn (and a link when its entry is there), then an attempt. */
static int run_job(struct pending *p, const char **why)
{
	int r;

	if (!p->checked) {
		*why = check_offer(p);
		if (*why)
			return -1;
		p->checked = 1;
		if (p->view_name[0]) {
			r = link_existing(p, why);
			if (r != 0)
				return r;
		}
	}
	return attempt(p, why);
}

/* --- the worker --- */

/* Under srv.mu: the due job of the client served least lately whose budget allows; NULL when none. */
static struct pending *pick_job(time_t now, double mnow)
{
	struct pending *best = NULL;
	unsigned long best_served = 0;

	for (unsigned i = 0; i < srv.npend; i++) {
		struct pending *p = &srv.pend[i];
		struct client *c = &srv.clients[p->client];

		if (p->busy || p->next > now || !hte_bucket_ready(&c->cpu, mnow, CPU_RATE, CPU_BURST))
			continue;
		if (!best || c->served < best_served) {
			best = p;
			best_served = c->served;
		}
	}
	return best;
}

/*
 * Under srv.mu: ends a job; its descriptors are closed, its slot freed.
 * A file that passed the checks is remembered, done or refused (a repeat
 * costs a lookup); one refused by them is not, as before the worker: the
 * sender may run it next time.
 */
static void settle(struct pending *p, int r, const char *why)
{
	struct client *c = &srv.clients[p->client];

	if (r < 0)
		refuse_log(p->client, "%s (uid %u, pid %ld)", why, (unsigned)p->uid, (long)p->sender);
	if (p->checked)
		remember(&p->k);
	close(p->fd);
	if (p->real >= 0)
		close(p->real);
	c->pending--;
	srv.settled++;
	*p = srv.pend[--srv.npend];
}

static void write_state(void);

/* Chores on the worker's clock: the views of stopped containers, the shares' counts. */
static void chores(double mnow, double *swept, double *counted)
{
	if (mnow - *swept >= VIEW_SWEEP_S) {
		*swept = mnow;
		sweep_views();
	}
	if (mnow - *counted >= 5) {
		*counted = mnow;
		count_shares();
	}
}

static void *worker(void *arg)
{
	double swept = 0, counted = 0, wrote = 0;
	sigset_t all;

	(void)arg;
	/* Signals go to the acceptor, whose epoll_wait() they end. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	pthread_mutex_lock(&srv.mu);
	while (!srv.stop) {
		double mnow = mono_now(), t0, spent;
		struct pending *p = pick_job(time(NULL), mnow);
		const char *why = NULL;
		int r;

		if (!p) {
			struct timespec until;
			unsigned long queued = srv.queued;

			pthread_mutex_unlock(&srv.mu);
			chores(mnow, &swept, &counted);
			write_state();
			wrote = mono_now();
			pthread_mutex_lock(&srv.mu);
			if (srv.stop || (srv.once && srv.settled))
				break;
			/* An offer queued meanwhile: its signal came while nobody waited. */
			if (srv.queued != queued)
				continue;
			clock_gettime(CLOCK_REALTIME, &until);
			/* New work signals; retries are due at whole seconds; the state stays fresh. */
			until.tv_nsec += 200 * 1000 * 1000;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&srv.work, &srv.mu, &until);
			continue;
		}
		p->busy = 1;
		srv.clients[p->client].served = ++srv.jobs;
		pthread_mutex_unlock(&srv.mu);
		t0 = cpu_now();
		r = run_job(p, &why);
		spent = cpu_now() - t0;
		pthread_mutex_lock(&srv.mu);
		hte_bucket_charge(&srv.clients[p->client].cpu, mono_now(), CPU_RATE, CPU_BURST, spent);
		srv.clients[p->client].cpu_used += spent;
		p->busy = 0;
		if (r == 0)
			p->next = time(NULL) + p->wait_s;
		else
			settle(p, r, why);
		if (mono_now() - wrote > 0.1 || r != 0) {
			pthread_mutex_unlock(&srv.mu);
			if (r == 1)
				count_shares();
			write_state();
			wrote = mono_now();
			pthread_mutex_lock(&srv.mu);
		}
		if (srv.once && srv.settled)
			break;
	}
	srv.stop = srv.stop || srv.once;
	pthread_mutex_unlock(&srv.mu);
	return NULL;
}

/* --- the state file --- */

static void state_list(FILE *f, const char *name, const struct log *g)
{
	fprintf(f, ",\"%s_total\":%lu,\"%s\":[", name, g->total, name);
	for (unsigned i = 0; i < g->n; i++) {
		if (i)
			fputc(',', f);
		hte_json_str(f, g->l[i].text);
	}
	fputc(']', f);
}

/* The clients with something to say: what they sent, what the service did for them, what they hold. */
static void state_clients(FILE *f, double now)
{
	int first = 1;

	fprintf(f, ",\"clients\":[");
	for (int i = 0; i < MAX_CLIENTS; i++) {
		const struct client *c = &srv.clients[i];

		if (!c->used || (!c->offers && !c->cache_entries && !c->bans))
			continue;
		fprintf(f, "%s{\"client\":", first ? "" : ",");
		hte_json_str(f, c->name);
		fprintf(f, ",\"kind\":\"%s\",\"uid\":%u", c->kind == CLIENT_UID ? "uid" : "container", (unsigned)c->uid);
		if (c->kind == CLIENT_CONTAINER) {
			fprintf(f, ",\"id\":");
			hte_json_str(f, c->id);
		}
		fprintf(f,
			",\"connections\":%lu,\"offers\":%lu,\"refused\":%lu,\"dropped\":%lu,\"warmed\":%lu,"
			"\"filled\":%lu,\"held\":%u,\"pending\":%u,\"cpu_s\":%.3f,\"cache_bytes\":%llu,"
			"\"cache_entries\":%u,\"shut_out\":%s,\"shut_out_s\":%.0f,\"shut_outs\":%lu}",
			c->conns, c->offers, c->refused, c->dropped, c->warmed, c->filled, c->held, c->pending,
			c->cpu_used, (unsigned long long)c->cache_bytes, c->cache_entries,
			c->banned_until > now ? "true" : "false", c->banned_until > now ? c->banned_until - now : 0,
			c->bans);
		first = 0;
	}
	fputc(']', f);
}

static void write_state(void)
{
	char tmp[600];
	FILE *f;

	if (!srv.state)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", srv.state);
	f = fopen(tmp, "we");
	if (!f)
		return;
	pthread_mutex_lock(&srv.mu);
	fprintf(f, "{\"pid\":%ld,\"socket\":", (long)getpid());
	hte_json_str(f, srv.socket);
	fprintf(f,
		",\"cache_dir\":\"%s/%s\",\"cache_size\":%llu,\"cache_used\":%llu,\"cache_share\":%llu,"
		"\"offers\":%lu,\"pending\":%u,\"warms\":%lu,\"tries\":%lu,\"connections\":%lu,\"dropped\":%lu,"
		"\"held\":%u,\"held_total\":%lu,\"shut_outs\":%lu,\"container_sockets\":%u,\"gate\":",
		HT_TEXT_CACHE_DIR, HT_SERVICE_SHARED, (unsigned long long)srv.cache_size,
		(unsigned long long)srv.cache_used, (unsigned long long)srv.cache_share, srv.offers, srv.npend,
		srv.warms, srv.tries, srv.conns, srv.dropped, srv.held, srv.held_total, srv.bans_total, srv.csocks);
	hte_json_str(f, srv.gate ? srv.gate : "");
	state_list(f, "warmed", &srv.warmed);
	state_list(f, "filled", &srv.filled);
	state_list(f, "linked", &srv.linked);
	state_list(f, "evicted", &srv.evicted);
	state_list(f, "refused", &srv.refused);
	state_clients(f, mono_now());
	pthread_mutex_unlock(&srv.mu);
	fprintf(f, "}\n");
	if (fclose(f) == 0)
		rename(tmp, srv.state);
	else
		unlink(tmp);
}

/* --- the command --- */

static void on_signal(int sig)
{
	(void)sig;
	srv.stop = 1;
}

/* text_cache_size and service from /etc/hugetext.conf.  Returns: 0, 1 when off, -1 on a bad file. */
static int read_conf(void)
{
	struct ht_conf *c = calloc(1, sizeof(*c));
	char err[256] = "";
	char *buf;
	size_t len;
	uint64_t mem = 0;
	int r = 0;

	if (!c)
		return -1;
	if (ht_conf_load(srv.config, c, err, sizeof(err)) < 0 && err[0]) {
		hte_error("serve", "%s", err);
		free(c);
		return -1;
	}
	if ((c->set & HT_CONF_SERVICE) && !c->service)
		r = 1;
	if (ht_sys_read_file("/proc/meminfo", &buf, &len) == 0) {
		char *p = strstr(buf, "MemTotal:");

		mem = p ? strtoull(p + 9, NULL, 10) * 1024 : 0;
		free(buf);
	}
	srv.cache_size = (c->set & HT_CONF_TEXT_CACHE_SIZE) ? c->text_cache_size : hte_auto_cache_size(mem);
	free(c);
	return r;
}

/* The mutex is recursive: log_add() takes it, from inside and outside of it. */
static void init_state(void)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&srv.mu, &a);
	pthread_mutexattr_destroy(&a);
	pthread_cond_init(&srv.work, NULL);
	srv.socket = HT_SERVICE_SOCKET;
	srv.state = HTE_SERVE_STATE;
	srv.config = HT_CONF_PATH;
	srv.records = HTE_CONTAINER_RECORDS;
}

/* Descriptors for every held connection and waiting file, and some. */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < 4096) {
		r.rlim_cur = r.rlim_max < 4096 ? r.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int hte_cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "state", required_argument, NULL, 't' },
		{ "once", no_argument, NULL, '1' },
		{ "config", required_argument, NULL, 'c' },
		{ "no-warm", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_t work;
	int c, lfd, conf;

	init_state();
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': srv.socket = optarg; break;
		case 't': srv.state = *optarg ? optarg : NULL; break;
		case '1': srv.once = 1; break;
		case 'c': srv.config = optarg; break;
		case 'w': srv.no_warm = 1; break;
		case 'h': fputs(serve_usage, stdout); return HTE_EXIT_OK;
		default: fputs(serve_usage, stderr); return HTE_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fputs(serve_usage, stderr);
		return HTE_EXIT_USAGE;
	}
	conf = read_conf();
	if (conf < 0)
		return HTE_EXIT_FAIL;
	if (conf > 0) {
		printf("serve: off ('service = 0' in %s)\n", srv.config);
		return HTE_EXIT_OK;
	}
	if (geteuid() != 0) {
		hte_error("serve", "must run as root (it fills root's cache and reads other users' maps)");
		return HTE_EXIT_FAIL;
	}
	raise_fd_limit();
	lfd = listen_socket();
	if (lfd == -ENOTSOCK) {
		hte_error("serve", "LISTEN_FDS: descriptor 3 is not a listening local SEQPACKET socket");
		return HTE_EXIT_FAIL;
	}
	if (lfd < 0) {
		hte_error("serve", "%s: %s", srv.socket, strerror(-lfd));
		return HTE_EXIT_FAIL;
	}
	/* No SA_RESTART: a signal ends the acceptor's epoll_wait(). */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("serve: listening on %s; shared cache limit %llu MiB; floods shut out by %s\n", srv.socket,
	       (unsigned long long)(srv.cache_size >> 20), srv.gate);
	/* What a killed service left half-made goes first. */
	clean_leftovers();
	count_shares();
	/* The state file says the service is up: its descriptors are made first (the worker makes none). */
	if (accept_open(lfd) < 0) {
		close(lfd);
		return HTE_EXIT_FAIL;
	}
	write_state();
	if (pthread_create(&work, NULL, worker, NULL) != 0) {
		hte_error("serve", "cannot start its worker thread");
		close(lfd);
		return HTE_EXIT_FAIL;
	}
	accept_loop(lfd);
	pthread_mutex_lock(&srv.mu);
	srv.stop = 1;
	pthread_cond_signal(&srv.work);
	pthread_mutex_unlock(&srv.mu);
	pthread_join(work, NULL);
	gate_clear();
	for (unsigned i = 0; i < srv.npend; i++) {
		close(srv.pend[i].fd);
		if (srv.pend[i].real >= 0)
			close(srv.pend[i].real);
	}
	write_state();
	close(lfd);
	return HTE_EXIT_OK;
}
