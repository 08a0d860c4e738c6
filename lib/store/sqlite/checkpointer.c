/*
 * checkpointer: the SQLite engine's background upkeep (lib/store/inbox.h,
 * inbox_upkeep_start) for a receiver process whose threads commit with
 * group commit: such a writer never checkpoints on its commit path
 * (docs/durability.md), so a thread of its own takes the WAL checkpoint
 * turns (inbox_wal_checkpoint_turn; docs/checkpoints.md), on a connection
 * of its own, woken after each commit and at least once a second so that
 * an idle process takes a turn for the other processes' commits too.
 *
 * Only for a writer opened with group_commit and synchronous FULL: any
 * other SQLite connection checkpoints by itself, as SQLite's own
 * auto-checkpoint does, and needs no thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/store/sqlite/private.h"

struct inbox_upkeep {
	struct inbox_head head;		/* first: the engine (store/engine.h) */
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;		/* the WAL grew, or stop */
	int		 stop;
	int		 frames;	/* the writer's WAL size, as last told */
	struct inbox	*ib;		/* the thread's own connection */
	char		*path;
	struct inbox_options o;		/* to reopen it */
};

static void *
checkpointer_main(void *arg)
{
	struct inbox_upkeep *up = arg;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	pthread_mutex_lock(&up->mu);
	while (!up->stop) {
		struct timespec until;
		int frames = up->frames;

		pthread_mutex_unlock(&up->mu);
		/* The inbox replaced or truncated under us (one stat a second):
		 * a connection still open on the old files would keep the new
		 * inbox from being set up (WAL mode needs every other
		 * connection gone), so reopen at the path; the writer closed
		 * its own when its batch failed. */
		if (up->ib != NULL && !ib_same_files(up->ib)) {
			inbox_close(up->ib);
			up->ib = NULL;
		}
		if (up->ib == NULL &&
		    inbox_open(up->path, &up->o, &up->ib, &err) != INBOX_OK)
			log_msg("inbox: checkpointer: %s", err.data);
		/* Usually a look at the shared page and nothing more; whichever
		 * receiver process is writing takes the turn when one is due
		 * (one at a time: SQLite's WAL-reset race). */
		if (up->ib != NULL &&
		    inbox_wal_checkpoint_turn(up->ib, frames, &err) != INBOX_OK)
			log_msg("inbox: %s", err.data);
		pthread_mutex_lock(&up->mu);
		if (up->stop)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&up->cv, &up->mu, &until);
	}
	pthread_mutex_unlock(&up->mu);
	buf_free(&err);
	return NULL;
}

static void
upkeep_free(struct inbox_upkeep *up)
{
	inbox_close(up->ib);
	pthread_cond_destroy(&up->cv);
	pthread_mutex_destroy(&up->mu);
	free(up->path);
	free(up);
}

enum inbox_status
inbox_sqlite_upkeep_start(const char *path, const struct inbox_options *o,
    struct inbox_upkeep **out, struct buf *err)
{
	struct inbox_upkeep *up;
	enum inbox_status s;

	*out = NULL;
	if (!o->group_commit || o->synchronous != INBOX_SYNC_FULL)
		return INBOX_OK;
	if ((up = calloc(1, sizeof *up)) == NULL ||
	    (up->path = strdup(path)) == NULL) {
		free(up);
		buf_reset(err);
		(void)buf_printf(err, "%s: out of memory", path);
		return INBOX_FAILED;
	}
	up->head.engine = &inbox_sqlite_engine;
	pthread_mutex_init(&up->mu, NULL);
	pthread_cond_init(&up->cv, NULL);
	/* Its own connection commits nothing of the receiver's: no group
	 * commit.  The first open is bounded by the caller's deadline (a
	 * request's); the reopens by busy_timeout alone. */
	up->o = *o;
	up->o.group_commit = 0;
	s = inbox_open(path, &up->o, &up->ib, err);
	up->o.deadline = 0;
	if (s != INBOX_OK) {
		upkeep_free(up);
		return s;
	}
	if (pthread_create(&up->thread, NULL, checkpointer_main, up) != 0) {
		upkeep_free(up);
		buf_reset(err);
		(void)buf_printf(err, "%s: cannot start the checkpointer", path);
		return INBOX_FAILED;
	}
	*out = up;
	return INBOX_OK;
}

void
inbox_sqlite_upkeep_note(struct inbox_upkeep *up, const struct inbox *writer)
{
	pthread_mutex_lock(&up->mu);
	up->frames = inbox_wal_frames(writer);
	pthread_cond_signal(&up->cv);
	pthread_mutex_unlock(&up->mu);
}

void
inbox_sqlite_upkeep_stop(struct inbox_upkeep *up)
{
	pthread_mutex_lock(&up->mu);
	up->stop = 1;
	pthread_cond_signal(&up->cv);
	pthread_mutex_unlock(&up->mu);
	pthread_join(up->thread, NULL);
	upkeep_free(up);
}
