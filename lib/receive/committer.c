/*
 * committer: leader-based group commit, with the store's background
 * upkeep beside it (lib/store/inbox.h, inbox_upkeep_start).  See
 * lib/receive/committer.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include "lib/receive/committer.h"

/* One waiting delivery; lives on its request thread's stack.  The thread
 * sleeps on its own semaphore (wake) until a leader has set `role`:
 * DONE with the outcome in `status`, or LEAD when it is its turn to commit
 * for everyone queued.  One targeted wake-up per delivery: a broadcast
 * would wake every waiting thread per batch only to send most of them
 * back to sleep (docs/durability.md). */
enum role { WAIT, LEAD, DONE };

struct pending {
	const struct inbox_delivery	*d;
	enum inbox_status		 status;
	enum role			 role;	/* under mu, then read after wake */
	sem_t				*wake;
	struct buf			*err;
	struct pending			*next;
};

/*
 * Test points: where a thread's interleaving with a leader's hand-off
 * decides what it must do.  Nothing in the product: only
 * tests/test_committer.c, which compiles this file into itself with
 * COMMITTER_TEST_POINTS defined, makes them a call (to hold one thread
 * there while another goes on, deterministically).
 *   QUEUED     a delivery is queued and the mutex released; its thread has
 *              not yet looked at its role (a hand-off may land here)
 *   COMMITTED  a leader committed its batch and has not yet handed on
 */
enum test_point { TP_QUEUED, TP_COMMITTED };
#ifdef COMMITTER_TEST_POINTS
static void committer_test_point(enum test_point tp, struct pending *me);
#define TEST_POINT(tp, me)	committer_test_point((tp), (me))
#else
#define TEST_POINT(tp, me)	((void)0)
#endif

/* Each request thread's semaphore, created on its first delivery.  It
 * outlives every delivery of its thread, so a leader may post to it after
 * the waiter has already returned (sem_post touches nothing after waking). */
static _Thread_local sem_t thread_wake;
static _Thread_local int thread_wake_ready;

struct committer {
	pthread_mutex_t	 mu;
	struct pending	*head, **tail;	/* waiting, not yet in a batch */
	int		 busy;		/* a leader is committing */
	int		 broken;	/* reopen the writer (leader only) */
	struct inbox	*writer;	/* used by the leader only */

	struct inbox_upkeep *upkeep;	/* the store's, NULL when none */
	char		*path;
	struct inbox_options wo;	/* the writer's, to reopen it */
};

enum inbox_status
committer_open(const char *path, const struct inbox_options *o,
    struct committer **out, struct buf *err)
{
	struct inbox_options wo = *o;
	struct committer *cm;
	enum inbox_status s;

	*out = NULL;
	if ((cm = calloc(1, sizeof *cm)) == NULL || (cm->path = strdup(path)) == NULL) {
		free(cm);
		buf_reset(err);
		(void)buf_printf(err, "%s: out of memory", path);
		return INBOX_FAILED;
	}
	pthread_mutex_init(&cm->mu, NULL);
	cm->tail = &cm->head;
	wo.group_commit = 1;
	cm->wo = wo;
	/* o->deadline is the first request's, for these opens only: the
	 * reopens take the deadline of the batch they serve. */
	cm->wo.deadline = 0;
	if ((s = inbox_open(path, &wo, &cm->writer, err)) != INBOX_OK)
		goto fail;
	/* With the caller's options: the store decides whether they need
	 * any (a writer without group commit keeps itself). */
	if ((s = inbox_upkeep_start(path, o, &cm->upkeep, err)) != INBOX_OK)
		goto fail;
	*out = cm;
	return INBOX_OK;
fail:
	committer_close(cm);
	return s;
}

void
committer_close(struct committer *cm)
{
	if (cm == NULL)
		return;
	inbox_upkeep_stop(cm->upkeep);
	inbox_close(cm->writer);
	pthread_mutex_destroy(&cm->mu);
	free(cm->path);
	free(cm);
}


/* The leader's work: one transaction for the batch.  Called without the
 * mutex; the batch is ours alone. */
static enum inbox_status
commit_batch(struct committer *cm, struct pending *batch, size_t n)
{
	struct inbox_delivery d[COMMITTER_BATCH] = { { 0 } };
	int changed[COMMITTER_BATCH];
	struct inbox_batch b = { .d = d, .n = n, .changed = changed };
	struct pending *p;
	enum inbox_status s;
	size_t i;

	for (i = 0, p = batch; i < n; i++, p = p->next)
		d[i] = *p->d;
	/* After a failure (an I/O error, the file moved or deleted): a fresh
	 * connection at the configured path before anything else. */
	s = INBOX_OK;
	if (cm->broken) {
		/* The reopen waits for locks no longer than the batch may. */
		struct inbox_options wo = cm->wo;

		for (i = 0; i < n; i++)
			if (d[i].deadline != 0 && (wo.deadline == 0 ||
			    d[i].deadline < wo.deadline))
				wo.deadline = d[i].deadline;
		inbox_close(cm->writer);
		cm->writer = NULL;
		if ((s = inbox_open(cm->path, &wo, &cm->writer, batch->err)) ==
		    INBOX_OK)
			cm->broken = 0;
		else
			s = INBOX_FAILED;
	}
	/* The first request's buffer carries the reason for everyone. */
	if (s == INBOX_OK)
		s = inbox_store_batch(cm->writer, &b, batch->err);
	/* Any failed batch, busy included: the next leader starts from a
	 * fresh connection, whatever state this one was left in (a connection
	 * stuck in a transaction would otherwise fail every batch after). */
	if (s != INBOX_OK) {
		cm->broken = 1;		/* only the leader reads or writes it */
		/* Closed now, not at the next batch: an open connection on
		 * replaced files would block the new inbox's setup. */
		inbox_close(cm->writer);
		cm->writer = NULL;
	}
	for (i = 0, p = batch; i < n; i++, p = p->next) {
		if (s != INBOX_OK) {
			p->status = s;
			if (p != batch) {
				buf_reset(p->err);
				(void)buf_printf(p->err, "%s", batch->err->data ?
				    batch->err->data : "");
			}
		} else if (changed[i] == -1) {
			/* Its id is another source's (store/inbox.h): this
			 * delivery alone failed, the others stand. */
			p->status = INBOX_FAILED;
			buf_reset(p->err);
			(void)buf_printf(p->err, "webhook-id is already stored "
			    "from another source: nothing written; `webhook-drain "
			    "show ID` says whose (docs/DESIGN.md \"Sources\")");
		} else {
			p->status = changed[i] ? INBOX_OK : INBOX_DUPLICATE;
		}
	}
	return s;
}

/* Wait for our own semaphore: a leader posts it exactly once. */
static void
wait_turn(struct pending *me)
{
	while (sem_wait(me->wake) == -1 && errno == EINTR)
		;
}

enum inbox_status
committer_store(struct committer *cm, const struct inbox_delivery *d,
    struct buf *err)
{
	struct pending me = { d, INBOX_FAILED, WAIT, &thread_wake, err, NULL };
	int lead;

	if (!thread_wake_ready) {
		if (sem_init(&thread_wake, 0, 0) == -1) {
			buf_reset(err);
			(void)buf_printf(err, "cannot create a semaphore: %s",
			    strerror(errno));
			return INBOX_FAILED;
		}
		thread_wake_ready = 1;
	}
	pthread_mutex_lock(&cm->mu);
	*cm->tail = &me;
	cm->tail = &me.next;
	if ((lead = !cm->busy)) {
		cm->busy = 1;	/* the queue was empty: we are its head */
		me.role = LEAD;
	}
	pthread_mutex_unlock(&cm->mu);
	TEST_POINT(TP_QUEUED, &me);
	/* Not the leader now: a leader sets our role (DONE, or LEAD when it
	 * hands us the lead) and then posts our semaphore, exactly once.
	 * Wait for that post whatever me.role already says: a hand-off can
	 * set LEAD between the unlock above and a look at me.role, and
	 * skipping the wait then would leave its post on the semaphore, to
	 * wake this thread's next wait at once, role WAIT, as a second leader
	 * on the same connection. */
	if (!lead)
		wait_turn(&me);
	if (me.role == DONE)
		return me.status;
	if (me.role != LEAD) {
		/* Woken with no role: a post we did not wait for.  Leading now
		 * would put two threads on the writer connection (a corrupt
		 * inbox); a restarted process is the safe way out. */
		log_msg("committer: woken without a role (a bug); stopping");
		abort();
	}

	/* Lead: we are at the head of the queue.  Take up to COMMITTER_BATCH
	 * (our own delivery first), commit them, then hand the lead to
	 * whoever queued meanwhile and wake the batch. */
	{
		struct pending *batch, *p, *last = NULL, *next_leader;
		size_t n = 0;

		pthread_mutex_lock(&cm->mu);
		batch = cm->head;
		for (p = batch; p != NULL && n < COMMITTER_BATCH; p = p->next) {
			last = p;
			n++;
		}
		cm->head = last->next;
		if (cm->head == NULL)
			cm->tail = &cm->head;
		last->next = NULL;
		pthread_mutex_unlock(&cm->mu);

		(void)commit_batch(cm, batch, n);
		TEST_POINT(TP_COMMITTED, &me);

		pthread_mutex_lock(&cm->mu);
		next_leader = cm->head;
		if (next_leader != NULL)
			next_leader->role = LEAD;
		else
			cm->busy = 0;
		/* Before the next leader is woken: cm->writer is still ours. */
		inbox_upkeep_note(cm->upkeep, cm->writer);
		pthread_mutex_unlock(&cm->mu);

		/* The next leader first: its batch is already waiting.  Read
		 * each `next` before the post: a woken thread's pending is
		 * gone the moment it returns. */
		if (next_leader != NULL)
			sem_post(next_leader->wake);
		for (p = batch; p != NULL; p = last) {
			last = p->next;
			if (p == &me)
				continue;
			p->role = DONE;
			sem_post(p->wake);
		}
	}
	return me.status;
}
