/* SPDX-License-Identifier: MIT */
/* Declarations shared inside the library; nothing here is exported. */
#ifndef HT_INTERNAL_H
#define HT_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "hugetext.h"
#include "maps.h"
#include "plan.h"

#define HT_PAGE 4096UL

/* --- options.c: settings, parsed from strings so tests need no env --- */

/* Parses a mode name; unknown or empty text gives -EINVAL and auto. */
int ht_parse_mode(const char *s, enum ht_mode *mode);
/* Parses a decimal number in [0, max]; anything else gives -EINVAL. */
int ht_parse_uint(const char *s, unsigned max, unsigned *out);
/* "1", "yes", "on", "true" -> 1; "0", "no", "off", "false", "" -> 0; else -EINVAL. */
int ht_parse_bool(const char *s, int *out);
/*
 * "auto" -> HT_SHARE_AUTO; a boolean -> HT_SHARE_ON or HT_SHARE_OFF; else
 * -EINVAL.  HT_BIG_LIBRARIES_* take the same values.
 */
int ht_parse_auto_bool(const char *s, int *out);
/* "now", "auto", "never" -> HT_COPY_*; else -EINVAL. */
int ht_parse_copy(const char *s, int *out);
/*
 * Reads the environment into @opt with @get (secure_getenv in the library).
 * Writes a note on each ignored value into @notes (may be NULL).
 */
void ht_options_env(struct ht_options *opt, char *(*get)(const char *),
		    char *notes, size_t notes_len);
/* Appends "ignored VAR="value"" to the notes in @notes (may be NULL). */
void ht_note_ignored(char *notes, size_t len, const char *var, const char *val);

/* --- report.c: the JSON and human lines, formatted into buffers --- */

/*
 * Bytes of the well-formed UTF-8 sequence that starts at @s (1 to 4), or 0
 * when none does (RFC 3629: no overlong form, surrogate, or code point past
 * U+10FFFF; a NUL ends any sequence, so a terminated string is never read
 * past its end).  JSON must be UTF-8, and paths are any bytes.  Pure.
 */
size_t ht_utf8_len(const unsigned char *s);

/*
 * The JSON string text of the character at @s, into @out (NUL-terminated):
 * quotes, backslashes and control bytes escaped, a well-formed UTF-8
 * sequence as it is, a byte that starts none as U+FFFD (a path in
 * Latin-1).  Returns: the bytes of @s it took (1 to 4).  Pure.
 */
size_t ht_json_piece(const unsigned char *s, char out[8]);

/* Returns: the length written (without NUL), or -ENOSPC. */
int ht_format_json(const struct ht_region *r, long pid, char *buf, size_t len);
int ht_format_human(const struct ht_region *r, char *buf, size_t len);
/* Sends @r to the report file and stderr as @opt asks; errors are dropped. */
void ht_report_emit(const struct ht_options *opt, const struct ht_region *r);
/* Writes a free-form note to stderr when verbose. */
void ht_report_note(const struct ht_options *opt, const char *msg);

/* --- remap.c: the move of one span --- */

/*
 * Memory for the check in the swap window (ht_window_checked), mapped
 * before the window opens: a program's allocator may wait on the window
 * while it holds its own lock, so the check must not call it.
 */
struct ht_check_mem {
	char *maps;        /* room for /proc/self/maps */
	size_t maps_cap;
	uint64_t *pagemap; /* room for the span's pagemap entries */
	size_t pages;
	size_t len;        /* the whole mapping, from maps */
};

/* Where the bytes of a span come from and what sits at its end. */
struct ht_source {
	int fd;            /* the object's file when its pages are clean, else -1 */
	uint64_t file_off; /* file offset of the span's first byte */
	size_t mapped;     /* bytes from span.start that are mapped code */
	int reserve_gap;   /* the rest of the span is free address space */
	double deadline_ms; /* ht_now_ms() after which filling stops; 0: none */
	/*
	 * NULL, or asked just before the swap whether the code is still what
	 * the copy holds (the program runs meanwhile in a background move).
	 */
	int (*unchanged)(const struct ht_source *src, struct ht_span span, const char *copy,
			 const struct ht_check_mem *m);
	const void *ctx;   /* for unchanged() */
};

/*
 * Copies the span onto huge pages and swaps the copy in.  Fills @r's
 * sizes, mode, status, error, fill and huge_bytes (not object or ms).
 * With a deadline, only the 2 MiB pages filled in time are swapped in:
 * r->end shrinks and r->error is HT_E_BUDGET.
 * On failure the original mapping is untouched.
 */
int ht_move_span(const struct ht_options *opt, struct ht_span span,
		 const struct ht_source *src, struct ht_region *r);

/* Copies the first @len bytes of the span's code into @dst (pread or memcpy). */
void ht_fill(const struct ht_options *opt, struct ht_span span, const struct ht_source *src,
	     char *dst, size_t len, struct ht_region *r);

/*
 * Swaps a finished read+execute copy over the span with one mremap().
 * On failure the copy is unmapped and the code is as it was.
 */
int ht_swap_in(char *copy, struct ht_span span, const struct ht_source *src, struct ht_region *r);

/* Nonzero when a seccomp filter is on (or unknown): then no thread is made. */
int ht_seccomp_filtered(void);

/* The huge-page copy being built; len 0 when there is none. */
struct ht_copy_in_flight {
	char *addr;
	size_t len;
};
extern struct ht_copy_in_flight ht_in_flight;

/* Milliseconds on the monotonic clock. */
double ht_now_ms(void);

/* --- api.c --- */
#include <pthread.h>
/* Held while the maps we read must stay true: one remap at a time. */
extern pthread_mutex_t ht_lock;
/* Set in a child of fork(): it makes no helper thread (its parent's locks may be held). */
extern int ht_forked_child;
/*
 * Set in the preload's background thread, which runs beside the program:
 * it fills alone, on one core, and checks the code is unchanged before
 * each swap.
 */
extern __thread int ht_in_background;
/* Set while this thread holds ht_lock: a dlopen() of ours (libelf) must not wait for it. */
extern __thread int ht_lock_held;
/* Take and drop ht_lock; the first take makes fork() safe for it. */
void ht_lock_acquire(void);
void ht_lock_release(void);
/*
 * The swap window of a background move: from the check that the program
 * left its code alone to the swap.  A program's mprotect() must not fall
 * inside it (a page made writable there would be swapped back read-only),
 * so the preload's mprotect() waits while it is open
 * (ht_mprotect_begin/end), and opening it waits for the calls already
 * under way.  ht_window_open() returns 0, or -1 when a call did not end
 * within 50 ms (a signal handler that interrupted one and called
 * mprotect() itself waits for the window): the window is closed again
 * and the move must give up.  Both waits are bounded: a call waits 100 ms
 * at most (the move may be stuck behind a lock the caller holds, such as
 * an allocator's), then goes on, and ht_window_intact(), asked just
 * before the swap, is then false: the move gives up.
 */
int ht_window_open(void);
int ht_window_intact(void);
void ht_window_close(void);
/* Whether a window is open now (for tests: what runs inside it). */
int ht_window_is_open(void);
void ht_mprotect_begin(void);
void ht_mprotect_end(void);
/*
 * A background move's last step before its swap: opens the swap window
 * (above) and checks the code with src->unchanged.  Returns 1 with
 * the window open (the caller closes it after the swap), 0 with it closed
 * (the move gives up).
 */
int ht_window_checked(const struct ht_source *src, struct ht_span span, const char *copy);
/* ht_remap with the lock held; @dso_bre selects one library, iodlr-style. */
int ht_remap_locked(const struct ht_options *opt, const char *dso_bre,
		    struct ht_region *regions, size_t max, size_t *count);
struct ht_object;
/* The same, leaving out the @nknown objects in @known (lock held). */
int ht_remap_new(const struct ht_options *opt, const char *dso_bre,
		 const struct ht_object *known, size_t nknown,
		 struct ht_region *regions, size_t max, size_t *count);
/*
 * When above 0: the time (ht_now_ms) the budget of the next whole-program
 * run counts from.  The preload sets it to its constructor's start, so
 * that HUGETEXT_BUDGET_MS holds all of the library's time, not only the
 * run's.
 */
extern double ht_budget_origin_ms;
/*
 * Set while the preload's constructor moves the program (its start-up
 * run): the objects then are those the loader mapped at start-up, and
 * their placement repeats (ht_objects_pin).
 */
extern int ht_preload_startup;
struct ht_seg_query;
/*
 * With ht_options.copy auto: takes a span that only a private copy can
 * move (@q, @bytes long) for a later copy.  Set by the preload to its
 * background thread's; NULL in the API library.  Returns 0 when the span
 * will be copied later, -1 when nothing in this process can do it.
 * Called with ht_lock held: it must only record.
 */
extern int (*ht_defer_copy)(const struct ht_options *opt, const struct ht_seg_query *q, size_t bytes);
/*
 * Where a deferred copy of what runs (ht_options.copy_hot) puts the parts
 * of its spans that it left on 4 KiB pages, for a later pass: up to @max
 * queries at @q, @n of them filled.
 */
struct ht_rest {
	struct ht_seg_query *q;
	size_t max, n;
};
/*
 * Moves the deferred segments @qs, planned again from fresh maps (takes
 * ht_lock); regions, max and count as for ht_remap().  @rest (or NULL)
 * receives what a copy of what runs left (ht_hot_rest).
 */
int ht_remap_deferred(const struct ht_options *opt, const struct ht_seg_query *qs, size_t n,
		      struct ht_region *regions, size_t max, size_t *count, struct ht_rest *rest);

#endif
