/* SPDX-License-Identifier: MIT */
/*
 * The text service's parts, between its files (not for the tests: the
 * pure parts they reach are in serve.h):
 *
 *   serve.c        the command, the worker (what is done with an offer), the state file
 *   serve-net.c    the socket: accepting, reading, held connections, the per-uid gate
 *   serve-socks.c  a socket of its own for each container the hook injected
 *   serve-fill.c   the shared cache: its directories, fills, shares, eviction, views
 *   serve-real.c   the real file behind an overlay file; the hook's container records
 *   serve-pure.c   pure parts (serve.h)
 *
 * Two threads: the acceptor (serve-net.c) takes every connection at once
 * and does only cheap things (credentials, a read, fstat, the file's own
 * checks, the dedup); the worker (serve.c) does what costs (ELF checks,
 * /proc reads, warms, fills, links), one client's job after another's,
 * within each client's budget.  One mutex (srv.mu) guards the tables.
 */
#ifndef HTE_SERVE_INT_H
#define HTE_SERVE_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "serve.h"
#include "service.h"

#define MAX_PENDING 64     /* offers taken and not yet settled (queued or waiting to be warmed again) */
#define MAX_PER_CLIENT 8   /* of them, from one client */
#define MAX_DONE 1024      /* offers remembered, so a repeat costs nothing */
#define DONE_FOR_S 60      /* for this long: an offer after it means the entry is gone or unusable */
#define RETRY_S 1          /* between two looks at a file still in use */
#define RETRY_MAX_S 32     /* the most between two warms that can only take part of a file */
#define FILL_AFTER 30      /* warms while the sender runs before the cache is filled */
#define KEEP_TRYING_S 300  /* five minutes of retries, then the file is dropped */
#define GONE_TRIES 5       /* warms that took nothing once the sender was gone, before a fill */
#define LOG_KEEP 32        /* lines of each kind kept for the state file */
#define LOG_PER_CLIENT 8   /* lines of one client in a log: its next replaces its oldest, a flood wipes no other's */

#define MAX_CLIENTS 512    /* uids and containers known at once (idle ones are forgotten) */
#define HELD_PER_UID 4     /* connections of one uid held open while their message is awaited */
#define HELD_MAX 256       /* and of everyone */
#define HOLD_MS 20         /* how long one is held */
#define CONN_RATE 1000.0   /* connections a second one uid may open, sustained... */
#define CONN_BURST 256.0   /* ...and at once; past that its uid is shut out for a while */
#define BAN_MAX_S 64       /* the longest shut-out: 1 s, doubling at each repeat */
#define BAN_FORGET_S 600   /* repeats are forgotten after this long without one */
#define CPU_RATE 0.25      /* seconds of the worker's CPU a second, per client... */
#define CPU_BURST 2.0      /* ...and at once */
#define RECORDS_MAX 512    /* container records read */
#define VIEW_SWEEP_S 30    /* between two looks for views of stopped containers */
#define VIEW_GRACE_S 60    /* a view with no record is a container being made, for this long */
#define CSOCK_MAX HTE_CONTAINER_SOCKETS_MAX /* containers with a socket of their own at once */
#define CSOCK_TAG 0x40000000u         /* epoll tags: CSOCK_TAG + i, container socket i... */
#define CSOCK_NOTIFY (UINT32_MAX - 1) /* ...and the watch on their directory */

/* What one offered file is known as, so a repeat costs a lookup. */
struct key {
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_sec, ctime_sec;
	long mtime_nsec, ctime_nsec; /* the change time too: a write that put the time back */
	uint64_t file_off, len, mapped;
};

enum client_kind { CLIENT_UID, CLIENT_CONTAINER };

/*
 * A client: a host uid (its connections, whatever container they come
 * from, and the offers of its processes on the host), or a container the
 * hook recorded (the offers of its processes).  Budgets, caps and the
 * cache's share are counted per client.
 */
struct client {
	int used;
	enum client_kind kind;
	uid_t uid;                   /* CLIENT_UID: the uid; CLIENT_CONTAINER: the last sender's */
	unsigned long long mntns;    /* CLIENT_CONTAINER: its mount namespace */
	char id[HTE_ID_MAX + 1];     /* CLIENT_CONTAINER: its id */
	char name[HTE_ID_MAX + 16];  /* "uid 1000", "container ID": in logs, the state and entries' owner */
	struct hte_bucket conn;      /* CLIENT_UID: connections */
	struct hte_bucket cpu;       /* the worker's CPU seconds */
	unsigned held, pending;
	double banned_until, last_ban; /* monotonic seconds */
	unsigned strikes;
	unsigned long conns, offers, refused, dropped, warmed, filled, linked, bans;
	double cpu_used;
	uint64_t cache_bytes;        /* its entries in the cache, at the last look */
	unsigned cache_entries;
	unsigned long served;        /* when the worker last ran a job of it (srv.jobs) */
	double last_seen;
};

/* An offer taken: queued for its checks, or waiting to be warmed again. */
struct pending {
	int fd;                  /* the offered descriptor */
	int real;                /* the real file (an overlay's lower layer's, else a dup of fd), -1 until checked */
	struct stat st;          /* fstat(fd): the file as the sender sees it */
	struct stat rst;         /* fstat(real) */
	struct ht_offer m;
	struct key k;            /* of st: the dedup's */
	char name[256];          /* the entry's name: the real file's key */
	char view_name[256];     /* its name in the sender's container's view, "" for none */
	char view_id[HTE_ID_MAX + 1];
	char real_path[512];     /* for the logs */
	int client;              /* in srv.clients */
	uid_t uid;
	pid_t sender;
	unsigned long long mntns;
	int checked;             /* the worker's checks are done */
	int busy;                /* the worker runs it now: nobody else touches it */
	unsigned tries, gone_tries, wait_s;
	time_t next, until;
};

struct line {
	char text[400];
	int owner; /* the client it is about, -1: none */
};

/* The last lines of one kind, oldest first. */
struct log {
	struct line l[LOG_KEEP];
	unsigned n;
	unsigned long total;
};

struct serve_state {
	pthread_mutex_t mu;          /* everything below but the options */
	pthread_cond_t work;         /* the worker waits on it */
	const char *socket, *state, *config, *records;
	uint64_t cache_size;         /* 0: no shared cache */
	int no_warm;                 /* --no-warm: the shared cache only */
	int once;
	struct key done[MAX_DONE];
	time_t done_at[MAX_DONE];
	unsigned ndone, done_next;
	struct pending pend[MAX_PENDING];
	unsigned npend;
	struct client clients[MAX_CLIENTS];
	struct log warmed, filled, refused, evicted, linked;
	unsigned long offers, warms, tries, jobs; /* tries: attempt() calls, the waits' clock */
	unsigned long conns, dropped, held_total, bans_total;
	unsigned held;
	unsigned csocks;             /* containers with a socket of their own */
	const char *gate;            /* how a flooding uid is shut out: "acl", or why not */
	uint64_t cache_used, cache_share;
	unsigned long settled;       /* offers settled (for --once) */
	unsigned long queued;        /* offers queued: the worker's wake-ups are not lost */
	volatile sig_atomic_t stop;
};

extern struct serve_state srv;

/* serve.c */
void log_add(struct log *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A refusal about client @c (-1: none), counted for it; its lines in the log are LOG_PER_CLIENT at most. */
void refuse_log(int c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double mono_now(void);
void key_of(const struct stat *st, const struct ht_offer *m, struct key *k);
/* Under srv.mu: whether @k was served lately or is taken already. */
int key_seen(const struct key *k);
/* Under srv.mu: the client of @uid (CLIENT_UID), made when new; -1 when the table is full. */
int client_of_uid(uid_t uid);
/* Under srv.mu: the client of the container @id (mount namespace @mntns); -1 when full. */
int client_of_container(const char *id, unsigned long long mntns, uid_t uid);
/* Under srv.mu: queues a checked-cheaply offer for the worker.  Returns 0, or -1 when no room (dropped). */
int queue_offer(const struct pending *p);

/* serve-net.c */
int listen_socket(void);
/* The acceptor's epoll on @lfd, made before the service says it is up.  0, or -1 (said). */
int accept_open(int lfd);
/* Accepts and reads until srv.stop; the worker runs beside it. */
void accept_loop(int lfd);
/* Lifts the gate's shut-outs (at exit). */
void gate_clear(void);
/* Whether the sender may have root read through @fd, on its mount (docs/service.md).  NULL, or why not. */
const char *reader_refusal(int fd);

/* serve-socks.c (the acceptor's) */
/* Makes <sockets>/ and watches it in @ep; listens for the containers there.  0, or -1 (said): none. */
int csock_open(int ep);
/* The watch said something: new directories get a listener, gone ones lose theirs. */
void csock_notified(double now);
/* The listener of epoll tag @tag and its container's id (HTE_ID_MAX + 1 bytes); -1 for none. */
int csock_fd(uint32_t tag, char *id);
/* Stops reading the listener of @tag until @until (its container is over its rate). */
void csock_pause(uint32_t tag, double until);
/* Whether the listener of @tag is paused. */
int csock_paused(uint32_t tag);
/* Resumes paused listeners, closes those of stopped containers.  Returns the ms until its next timer, -1: none. */
int csock_tick(double now);
/* Closes every container's listener and removes its socket file (the directories stay for the next service). */
void csock_close(void);

/* serve-fill.c */
int open_shared_dir(int *mfd_out);
/* Fills the entry @p->name from @p->real, owned by @p's client.  Returns NULL, or why not. */
const char *fill_entry(int mfd, int dirfd, const struct pending *p);
/* True when the entry @name holds the span's bytes of @fd, all of them compared. */
int entry_matches(int dirfd, const char *name, int fd, const struct ht_offer *m);
/*
 * Links the entry @p->name into @p's container's view under @p->view_name,
 * once it is compared, whole, with the offered file.  Returns: 1 linked,
 * 0 nothing to do (no view, or linked already), -1 refused (@why).
 */
int link_view(int dirfd, const struct pending *p, const char **why);
/* Removes temporary files a killed service left (entries and links being made). */
void clean_leftovers(void);
/* Removes the views of containers whose record is gone or whose init no longer runs. */
void sweep_views(void);
/* Recounts what each client holds in the cache (cache_bytes, cache_entries; srv.cache_used). */
void count_shares(void);

/* serve-real.c */
/*
 * The real file behind @p->fd: for an overlay file, the lower layer's
 * file on the host (refused when it is the upper layer's); else the file
 * itself.  Sets p->real, p->rst and p->real_path.  Returns: NULL, or why not.
 */
const char *find_real_file(struct pending *p);
/*
 * The live container record whose mount namespace is @mntns: its id into
 * @id (HTE_ID_MAX + 1 bytes).  Returns 1 (found, its init runs), 0 when none.
 */
int container_of_mntns(unsigned long long mntns, char *id, int *has_view);
/*
 * The same by the network namespace of the sender's socket (for a sender
 * that has gone before its mount namespace was looked at): the one live
 * record whose init is in @netns, never the host's.  Returns 1 or 0.
 */
int container_of_netns(unsigned long long netns, char *id, int *has_view);
/* Whether the container @id has a live record (its init runs). */
int container_live(const char *id);
/* 1: @id's record is there and its init runs; 0: the record is there, its init is gone; -1: no record. */
int container_state(const char *id);
/* Whether @id's live record says the hook made its view of the cache. */
int container_has_view(const char *id);

#endif
