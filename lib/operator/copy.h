/*
 * copy: `webhook-drain copy --to DATABASE` — move an inbox's contents
 * (events in every state, per-object clocks, sync/recover cursors,
 * history and runs) into another inbox, through store/inbox.h only, so that
 * either side may be any implementation of it (docs/moving.md).
 *
 * Resumable and idempotent: the source is read in pages of bounded size,
 * each page in one short read transaction that ends before the page is
 * written to the destination in one short write transaction; a copy
 * killed at any point leaves whole pages behind, and running it again
 * walks the source again and writes only what is missing or changed.
 *
 * Which side wins for a row both have (the rules, once, in operator/copy.c):
 *   events, cursors: the source's row, unless the destination changed its
 *     copy since it was copied (a hand-out, a verdict, an operator's
 *     requeue, retention: the row no longer matches the digest `copied`
 *     recorded), or deleted it (forget, retention): then the destination's.
 *     An event the destination received itself (the provider's retry of
 *     one in flight at the switch) takes the source's row while the
 *     destination has not handed it out (pending, attempts 0).
 *   objects: each clock the later of the two (clocks only move forward).
 *   history: each bucket the larger count (exact when the source's drainer
 *     stopped before the destination's started, the documented cut-over).
 *   runs: a run's record never changes; the ones missing are added.
 */
#ifndef WEBHOOK_COPY_H
#define WEBHOOK_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/program/config.h"
#include "lib/store/inbox.h"
#include "lib/common/util.h"

/* A batch: at most this many rows, and no more rows once this many bytes
 * of values (bodies mostly) were read: one short transaction on each side
 * (the receivers wait for the destination's write lock while one runs). */
#define COPY_BATCH_ROWS		200
#define COPY_BATCH_BYTES	(4u << 20)

/* Bytes of the digest `copied` keeps per row (BLAKE2b). */
#define COPY_DIGEST_LEN		16

struct copy_options {
	int		 dry;		/* decide and count only; dst may be NULL
					 * (a destination that does not exist:
					 * every row would be new) */
	size_t		 batch_rows;	/* 0: COPY_BATCH_ROWS */
	size_t		 batch_bytes;	/* 0: COPY_BATCH_BYTES */
};

/* Per table: rows read from the source, written (new or updated at the
 * destination), already the same there, kept as the destination has
 * them (changed or deleted there since copied: the destination wins),
 * and left out: rows the destination cannot hold as they are
 * (inbox_table_holds: text that is not valid UTF-8 for a PostgreSQL
 * inbox), never written, mended or dropped silently. */
struct copy_count {
	int64_t	read, written, same, kept, left_out;
};

/* Keys of the rows left out, escaped (util_escape), as many as fit. */
#define COPY_LEFT_OUT_SIZE	1024

struct copy_result {
	struct copy_count	t[INBOX_NTABLES];	/* by enum inbox_table */
	/* "events \x..id, …" of the first rows left out ("" when none), and
	 * why the first one was. */
	char			left_out[COPY_LEFT_OUT_SIZE];
	char			left_out_why[200];
};

struct copy_hooks {
	/* After each batch (NULL: none): the table and its counts so far. */
	void	(*progress)(void *arg, enum inbox_table t,
		    const struct copy_count *c);
	void	 *arg;
};

/*
 * Copy everything from src into dst (tables in the order objects,
 * cursors, events, history, runs: clocks first, so an event copied is
 * never judged without them).  r gets the counts, also on failure (what
 * was done).  A batch the destination found busy (a lock past its
 * timeout, a PostgreSQL serialization failure) is tried again, up to
 * COPY_TRIES times.  Returns 0, or -1 with the reason in err (one line
 * for the operator): an inbox was busy past its timeout or failed (the
 * batches written stay: run it again), or rows were left out (every
 * other row was copied; the keys and the reason in err and r).
 */
#define COPY_TRIES	3

int	copy_run(struct inbox *src, struct inbox *dst,
	    const struct copy_options *o, const struct copy_hooks *h,
	    struct copy_result *r, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * The destination `to` of a copy from c->database, opened with c's busy
 * timeout and durability (the schema applied or migrated, as inbox_open
 * does) into *dst.  A dry run into a file that does not exist yet opens
 * nothing (*dst NULL: every row would be new) and creates nothing.
 * Returns 0; 1 when `to` is c's own inbox; -1 with the reason in err.
 */
int	copy_open_destination(const struct config *c, const char *to, int dry,
	    struct inbox **dst, struct buf *err)
	    __attribute__((warn_unused_result));

/* The final count, one line per table ("dry run: " first for a dry run). */
void	copy_print(FILE *f, const struct copy_result *r, int dry);

/* The digest `copied` keeps of an event or cursor row (every column but
 * events.admitted, which only says whether history counted it yet, and
 * events.source when it is the default: a row copied before schema
 * version 5 added the column keeps the digest it was recorded with):
 * COPY_DIGEST_LEN bytes into out.  For the unit tests and the merge. */
void	copy_digest(enum inbox_table t, const struct inbox_value *row,
	    unsigned char out[COPY_DIGEST_LEN]);

#endif
