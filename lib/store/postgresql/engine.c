/*
 * inbox_pg: the PostgreSQL implementation of store/inbox.h — the connection
 * (opened within a deadline, reopened by the caller after a failure, with
 * a short backoff between failed attempts), the schema and its version,
 * synchronous_commit, the server's warnings, storing deliveries (a
 * duplicate writes, so that its commit is durable only once the first
 * copy is), cursors, and the helpers the other files of
 * lib/store/postgresql/ share (private.h); the statements themselves go
 * through lib/store/postgresql/statements.c.
 * docs/postgresql.md says why each is as it is.
 *
 * Discipline as SQLite's (STYLE.md 11): parameters bound, never spliced
 * into SQL (the few numbers printed into SET statements are ours); every
 * result checked; every write one short explicit transaction.
 */
#ifdef WEBHOOK_POSTGRESQL

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/store/postgresql/private.h"

/* schema-pg.sql, linked in by lib/store/schema.S (NUL-terminated). */
extern const char schema_pg_sql[];

/* After a failed connection attempt, other opens in this process fail at
 * once (INBOX_BUSY) for a while, doubling from BACKOFF_MIN_NS to
 * BACKOFF_MAX_NS: a receiver whose database is down answers its 503s
 * without each request paying for a connection attempt. */
#define BACKOFF_MIN_NS	(250LL * 1000000)
#define BACKOFF_MAX_NS	(5LL * 1000000000)
static pthread_mutex_t backoff_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t backoff_until, backoff_ns;

/* Connecting waits at most this long when the caller gave no deadline. */
#define CONNECT_WAIT_NS	(10LL * 1000000000)

/* ---- the connection ----------------------------------------------------- */

static void
on_notice(void *arg, const PGresult *r)
{
	struct inbox_pg *ib = arg;
	const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);

	if (sev != NULL && strcmp(sev, "WARNING") == 0) {
		ib->warned = 1;
		snprintf(ib->warning, sizeof ib->warning, "%s",
		    msg != NULL ? msg : "WARNING");
	}
}

/* The database as messages name it: the URI's parts without a password
 * (PQconninfoParse), e.g. "postgresql (host=/run/pg dbname=inbox)".  A
 * URI libpq cannot parse gets our own message, naming the kind of
 * problem only: libpq's quotes the offending token, which may be the
 * password ("invalid percent-encoded token: \"PW%zz\""), and messages
 * reach check, the drainer's output, the receiver's log and the report
 * (docs/postgresql.md, "Connecting"). */
static char *
redacted_name(const char *uri, struct buf *err)
{
	PQconninfoOption *opts, *o;
	char *errmsg = NULL;
	struct buf b;
	char *s;

	if ((opts = PQconninfoParse(uri, &errmsg)) == NULL) {
		buf_reset(err);
		if (errmsg == NULL)
			(void)buf_printf(err, "database: out of memory");
		else
			(void)buf_printf(err, "database: the postgresql:// URI "
			    "does not parse (a bad percent escape, a query "
			    "parameter without '=', an unknown parameter?); "
			    "libpq's message is not shown: it quotes the URI, "
			    "password and all");
		PQfreemem(errmsg);
		return NULL;
	}
	buf_init(&b, 4096);
	(void)buf_printf(&b, "postgresql (");
	for (o = opts; o->keyword != NULL; o++)
		if (o->val != NULL && *o->val != '\0' &&
		    strcmp(o->keyword, "password") != 0 &&
		    (strcmp(o->keyword, "host") == 0 ||
		    strcmp(o->keyword, "hostaddr") == 0 ||
		    strcmp(o->keyword, "port") == 0 ||
		    strcmp(o->keyword, "dbname") == 0 ||
		    strcmp(o->keyword, "user") == 0))
			(void)buf_printf(&b, "%s%s=%s", b.len > 12 ? " " : "",
			    o->keyword, o->val);
	(void)buf_printf(&b, ")");
	PQconninfoFree(opts);
	s = b.data != NULL ? strdup(b.data) : NULL;
	buf_free(&b);
	if (s == NULL) {
		buf_reset(err);
		(void)buf_printf(err, "database: out of memory");
	}
	return s;
}

/* libpq's message about a connection attempt, without the password:
 * libpq does not mean to quote it, but its messages quote option values
 * (a host name, an sslmode) and this is where a slip would leak it. */
static enum inbox_status
connect_fail(struct inbox_pg *ib, const char *uri, struct buf *err,
    enum inbox_status st, const char *msg)
{
	PQconninfoOption *opts, *o;
	const char *pw = NULL;
	enum inbox_status r;

	opts = PQconninfoParse(uri, NULL);
	for (o = opts; o != NULL && o->keyword != NULL; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL &&
		    *o->val != '\0')
			pw = o->val;
	if (pw != NULL && msg != NULL && strstr(msg, pw) != NULL)
		msg = "libpq's message quoted the connection string (not shown)";
	r = px_fail(ib, err, st, "cannot connect", msg);
	PQconninfoFree(opts);
	return r;
}

char *
inbox_pg_redacted(const char *uri)
{
	struct buf err;
	char *s;

	buf_init(&err, 1024);
	s = redacted_name(uri, &err);
	buf_free(&err);
	return s;
}

/* Connect within the deadline. */
static enum inbox_status
connect_db(struct inbox_pg *ib, const char *uri, int64_t deadline,
    struct buf *err)
{
	const char *keys[] = { "dbname", "connect_timeout",
	    "fallback_application_name", NULL };
	const char *vals[4];
	char timeout[24];
	PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
	struct pollfd pfd;
	int64_t left = deadline - util_mono_ns();

	/* libpq's own bound, whole seconds (at least 2, as libpq takes it),
	 * behind ours. */
	snprintf(timeout, sizeof timeout, "%lld", (long long)(left / 1000000000 < 2 ?
	    2 : left / 1000000000));
	vals[0] = uri;
	vals[1] = timeout;
	vals[2] = "webhook-inbox";
	vals[3] = NULL;
	if ((ib->conn = PQconnectStartParams(keys, vals, 1)) == NULL)
		return px_fail(ib, err, INBOX_FAILED, "cannot connect",
		    "out of memory");
	if (PQstatus(ib->conn) == CONNECTION_BAD)
		return connect_fail(ib, uri, err, INBOX_FAILED,
		    PQerrorMessage(ib->conn));
	while (ps != PGRES_POLLING_OK) {
		if (ps == PGRES_POLLING_FAILED)
			return connect_fail(ib, uri, err, INBOX_FAILED,
			    PQerrorMessage(ib->conn));
		if ((left = deadline - util_mono_ns()) <= 0)
			return px_fail(ib, err, INBOX_BUSY, "cannot connect",
			    "no answer in time");
		pfd.fd = PQsocket(ib->conn);
		pfd.events = ps == PGRES_POLLING_READING ? POLLIN : POLLOUT;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)(left / 1000000 + 1)) == -1 &&
		    errno != EINTR)
			return px_fail(ib, err, INBOX_FAILED, "cannot connect",
			    strerror(errno));
		if (pfd.revents != 0 || ps == PGRES_POLLING_ACTIVE)
			ps = PQconnectPoll(ib->conn);
	}
	PQsetNoticeReceiver(ib->conn, on_notice, ib);
	if (PQsetnonblocking(ib->conn, 1) == -1)
		return connect_fail(ib, uri, err, INBOX_FAILED,
		    PQerrorMessage(ib->conn));
	return INBOX_OK;
}

/*
 * Commits wait for the WAL flush (docs/DESIGN.md "The receiver's answers": a 200 survives a power cut):
 * synchronous_commit `on` at least.  The server's or the role's default
 * may say `off` or `local`; remote_write, on and remote_apply are kept.
 */
static enum inbox_status
make_synchronous(struct inbox_pg *ib, int64_t deadline, struct buf *err)
{
	PGresult *r = NULL;
	enum inbox_status s;
	const char *v;
	int weak;

	if ((s = px_query(ib, "SHOW synchronous_commit", NULL, deadline,
	    &r, "reading synchronous_commit", err)) != INBOX_OK)
		return s;
	v = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "off";
	snprintf(ib->sync_default, sizeof ib->sync_default, "%s", v);
	weak = strcmp(v, "off") == 0 || strcmp(v, "local") == 0;
	PQclear(r);
	/* Raised in each transaction (px_query, px_begin, px_pipeline), not
	 * by a session's SET: behind a pooler in transaction mode the next
	 * transaction may run in another server session, without it. */
	ib->sync_weak = weak;
	return INBOX_OK;
}

/* The schema's version: 0 when there is none yet. */
static enum inbox_status
read_version(struct inbox_pg *ib, int64_t deadline, int *version,
    struct buf *err)
{
	PGresult *r = NULL;
	enum inbox_status s;

	*version = 0;
	if ((s = px_query(ib, "SELECT to_regclass('meta') IS NOT NULL",
	    NULL, deadline, &r, "reading the schema version", err)) != INBOX_OK)
		return s;
	if (strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		PQclear(r);
		return INBOX_OK;
	}
	PQclear(r);
	if ((s = px_query(ib, "SELECT value FROM meta"
	    " WHERE key = 'schema_version'", NULL, deadline, &r,
	    "reading the schema version", err)) != INBOX_OK)
		return s;
	if (PQntuples(r) == 1)
		*version = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return INBOX_OK;
}

/*
 * Version 4 to 5: events.source as schema-pg.sql declares it (there the
 * last column, as here), rows already there the default source's
 * (docs/DESIGN.md "Sources").  Repeatable: two processes migrating at
 * once wait for each other's lock on events, and the second adds nothing.
 * A version-4 receiver still running leaves the column out: default.
 */
static const char migrate_v5[] =
    "ALTER TABLE events ADD COLUMN IF NOT EXISTS"
    " source text COLLATE \"C\" NOT NULL DEFAULT 'default';"
    "UPDATE meta SET value = '5' WHERE key = 'schema_version'"
    " AND value = '4'";

/*
 * A new database gets the schema in one transaction.  Two processes
 * opening a new database at once: one creates it, the other's CREATE
 * fails on the catalog's unique index and it reads the version again.
 * A newer version is refused, as on SQLite.
 */
static enum inbox_status
apply_schema(struct inbox_pg *ib, int64_t deadline, struct buf *err)
{
	enum inbox_status s;
	int version, tries;
	char version_sql[96];

	snprintf(version_sql, sizeof version_sql, "INSERT INTO meta (key, value)"
	    " VALUES ('schema_version', '%d')", inbox_schema_version());
	/* A try that creates or migrates is followed by one that reads the
	 * version it left. */
	for (tries = 0; tries < 3; tries++) {
		if ((s = read_version(ib, deadline, &version, err)) != INBOX_OK)
			return s;
		if (version > inbox_schema_version()) {
			buf_reset(err);
			(void)buf_printf(err, "%s: schema version %d is newer than "
			    "this program's %d", ib->name, version,
			    inbox_schema_version());
			return INBOX_FAILED;
		}
		if (version == inbox_schema_version())
			return INBOX_OK;
		if (version == 4) {
			if ((s = px_exec(ib, "BEGIN", NULL, deadline, "begin",
			    err)) != INBOX_OK)
				return s;
			if ((s = px_exec(ib, migrate_v5, NULL, deadline,
			    "migrating the schema to version 5", err)) ==
			    INBOX_OK && (s = px_commit(ib, deadline,
			    "migrating the schema to version 5", err)) ==
			    INBOX_OK)
				continue;	/* read the version again */
			px_rollback(ib);
			if (ib->broken)
				return s;
			continue;
		}
		if (version != 0) {
			/* No older PostgreSQL schema exists: the first is
			 * version 4, SQLite's (with the table `copied`), plus
			 * `seen` and `leases`. */
			buf_reset(err);
			(void)buf_printf(err, "%s: schema version %d is unknown "
			    "to this program", ib->name, version);
			return INBOX_FAILED;
		}
		if ((s = px_exec(ib, "BEGIN", NULL, deadline, "begin", err)) !=
		    INBOX_OK)
			return s;
		if ((s = px_exec(ib, schema_pg_sql, NULL, deadline,
		    "applying the schema", err)) == INBOX_OK &&
		    (s = px_exec(ib, version_sql, NULL, deadline,
		    "applying the schema", err)) == INBOX_OK &&
		    (s = px_commit(ib, deadline, "applying the schema", err)) ==
		    INBOX_OK)
			return INBOX_OK;
		px_rollback(ib);
		if (ib->broken)
			return s;
	}
	return s;
}

/* A token naming this connection as a lease's owner: host, process and
 * 64 random bits (two connections of one process differ too). */
static void
make_owner(struct inbox_pg *ib)
{
	char host[64] = "";
	unsigned char rnd[8];

	(void)gethostname(host, sizeof host - 1);
	randombytes_buf(rnd, sizeof rnd);
	snprintf(ib->owner, sizeof ib->owner, "%s:%ld:%02x%02x%02x%02x%02x%02x"
	    "%02x%02x", host, (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3],
	    rnd[4], rnd[5], rnd[6], rnd[7]);
}

enum inbox_status
inbox_pg_open(const char *uri, const struct inbox_options *o,
    struct inbox **out, struct buf *err)
{
	struct inbox_pg *ib;
	enum inbox_status s;
	int64_t now = util_mono_ns(), connect_deadline, deadline, wait;

	*out = NULL;
	if ((ib = calloc(1, sizeof *ib)) == NULL) {
		buf_reset(err);
		(void)buf_printf(err, "database: out of memory");
		return INBOX_FAILED;
	}
	ib->head.engine = &inbox_pg_engine;
	if ((ib->name = redacted_name(uri, err)) == NULL) {
		free(ib);
		return INBOX_FAILED;
	}
	pthread_mutex_lock(&backoff_mu);
	wait = backoff_until - now;
	pthread_mutex_unlock(&backoff_mu);
	if (wait > 0) {
		char msg[160];

		snprintf(msg, sizeof msg, "the last attempt failed; trying "
		    "again in %lld ms", (long long)(wait / 1000000 + 1));
		s = px_fail(ib, err, INBOX_BUSY, "cannot connect", msg);
		inbox_pg_close((struct inbox *)(void *)ib);
		return s;
	}
	ib->busy_timeout_ns = o->busy_timeout_ms * 1000000;
	ib->call_wait_ns = o->call_wait_ms * 1000000;
	ib->lease_ns = o->lease_ns > 0 ? o->lease_ns : INBOX_LEASE_DEFAULT_NS;
	/* Connecting waits until the caller's deadline or busy_timeout,
	 * whichever is first (README: a 503 within busy_timeout; a
	 * reconnection to a frozen server took the request's 10 s); with no
	 * deadline, call_wait, else at least CONNECT_WAIT_NS.  What follows
	 * is work on a server that answered (a new database's schema takes a
	 * while on a loaded machine): the caller's deadline alone. */
	connect_deadline = now + ib->busy_timeout_ns;
	if (o->deadline != 0 && o->deadline < connect_deadline)
		connect_deadline = o->deadline;
	else if (o->deadline == 0 && ib->call_wait_ns > 0)
		connect_deadline = now + ib->call_wait_ns;
	else if (o->deadline == 0 && ib->busy_timeout_ns < CONNECT_WAIT_NS)
		connect_deadline = now + CONNECT_WAIT_NS;
	deadline = o->deadline != 0 ? o->deadline : connect_deadline;
	make_owner(ib);
	if ((s = connect_db(ib, uri, connect_deadline, err)) != INBOX_OK) {
		pthread_mutex_lock(&backoff_mu);
		backoff_ns = backoff_ns == 0 ? BACKOFF_MIN_NS : backoff_ns * 2;
		if (backoff_ns > BACKOFF_MAX_NS)
			backoff_ns = BACKOFF_MAX_NS;
		backoff_until = util_mono_ns() + backoff_ns;
		pthread_mutex_unlock(&backoff_mu);
		goto fail;
	}
	pthread_mutex_lock(&backoff_mu);
	backoff_ns = backoff_until = 0;
	pthread_mutex_unlock(&backoff_mu);
	if ((s = make_synchronous(ib, deadline, err)) != INBOX_OK ||
	    (s = apply_schema(ib, deadline, err)) != INBOX_OK)
		goto fail;
	*out = (struct inbox *)(void *)ib;
	return INBOX_OK;
fail:
	inbox_pg_close((struct inbox *)(void *)ib);
	return s;
}

void
inbox_pg_close(struct inbox *pib)
{
	struct inbox_pg *ib = PG(pib);

	if (ib == NULL)
		return;
	if (ib->conn != NULL)
		PQfinish(ib->conn);
	free(ib->name);
	free(ib);
}

enum inbox_status
inbox_pg_maintain(struct inbox *ib, struct buf *err)
{
	(void)ib;
	(void)err;
	return INBOX_OK;	/* the server's autovacuum is its upkeep */
}

/* ---- storing ------------------------------------------------------------ */

/*
 * One delivery: the event if new; if its webhook-id is already there from
 * the same source ($13), a write to `seen` instead (schema-pg.sql), so
 * that this transaction's commit waits for the WAL to be flushed (and
 * replicated, with synchronous standbys) up to a point past the first
 * copy's commit.  One row: 1 when new; the source of the row found (NULL:
 * new, or committed after this statement's snapshot began: then
 * insert_one asks again, in a statement of its own).
 */
static const char store_sql[] =
    "WITH ins AS (INSERT INTO events (webhook_id, body, received_at,"
    "  webhook_timestamp, secret_fp, type, created_at, created_at_raw,"
    "  object_type, object_id, updated_at, truncated, sort_at, next_at,"
    "  admitted, source)"
    "  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,"
    "  coalesce($7, $3), $3, 0, $13)"
    "  ON CONFLICT (webhook_id) DO NOTHING RETURNING 1),"
    " cur AS (SELECT source FROM events WHERE webhook_id = $1"
    "  AND NOT EXISTS (SELECT 1 FROM ins)),"
    " dup AS (INSERT INTO seen (webhook_id, duplicates)"
    "  SELECT $1, 1 WHERE EXISTS (SELECT 1 FROM cur WHERE source = $13)"
    "  ON CONFLICT (webhook_id) DO UPDATE SET duplicates = seen.duplicates + 1"
    "  RETURNING 1)"
    " SELECT (SELECT count(*) FROM ins), (SELECT source FROM cur),"
    "  (SELECT count(*) FROM dup)";

/* The duplicate's write to `seen` (store_sql's dup), on its own. */
static const char seen_sql[] =
    "INSERT INTO seen (webhook_id, duplicates) VALUES ($1, 1)"
    " ON CONFLICT (webhook_id) DO UPDATE SET duplicates = seen.duplicates + 1";

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when the `left`
 * bytes there do not start one (RFC 3629: no overlongs, no surrogates, at
 * most U+10FFFF; a NUL byte is none either: text cannot hold it). */
static size_t
utf8_seq(const unsigned char *s, size_t left)
{
	if (s[0] < 0x80)
		return s[0] != 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return left >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if (left < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if (left < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80 || (s[0] == 0xf0 && s[1] < 0x90) ||
		    (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

int
px_utf8_valid(const void *s, size_t len)
{
	const unsigned char *u = s;
	size_t n, i;

	for (i = 0; i < len; i += n)
		if ((n = utf8_seq(u + i, len - i)) == 0)
			return 0;
	return 1;
}

/* Is s (NUL-terminated; NULL counts as valid) valid UTF-8? */
static int
utf8_valid(const char *s)
{
	return s == NULL || px_utf8_valid(s, strlen(s));
}

/*
 * PostgreSQL's text holds valid UTF-8 only (a UTF8 database), where
 * SQLite's holds any bytes: s as is when valid, else a copy in tmp with
 * each byte that starts no valid sequence written as U+FFFD (fields read
 * for people: type, createdAt as sent).  Never for a key (a webhook-id,
 * an object): no mapping into valid UTF-8 both keeps valid text as it is
 * and keeps distinct keys distinct, so those are refused or dropped
 * (insert_one).  NULL stays NULL; on out of memory, NULL with *oom.
 */
static const char *
utf8_text(const char *s, struct buf *tmp, int *oom)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n, i, len;

	if (utf8_valid(s))
		return s;
	buf_reset(tmp);
	len = strlen(s);
	for (i = 0; i < len; i += n) {
		if ((n = utf8_seq(u + i, len - i)) != 0) {
			if (buf_append(tmp, u + i, n) == -1)
				*oom = 1;
			continue;
		}
		n = 1;
		if (buf_append(tmp, "\xef\xbf\xbd", 3) == -1)
			*oom = 1;
	}
	if (buf_append(tmp, "", 1) == -1)
		*oom = 1;
	return *oom ? NULL : tmp->data;
}

/*
 * The id was there, but not in store_sql's snapshot (a concurrent
 * receiver committed it meanwhile): its source, read in a statement of
 * its own (READ COMMITTED: a snapshot that has it), into other, and for a
 * duplicate the write to `seen`.  A row gone again (forgotten meanwhile)
 * is taken as a duplicate: it was there.
 */
static enum inbox_status
recheck(struct inbox_pg *ib, const struct inbox_delivery *d, int64_t deadline,
    char other[INBOX_SOURCE_MAX + 1], struct buf *err)
{
	struct px_params p = { 0 };
	PGresult *r = NULL;
	enum inbox_status s;

	px_raw(&p, d->webhook_id);
	if ((s = px_query(ib, "SELECT source FROM events WHERE webhook_id = $1",
	    &p, deadline, &r, "storing the event", err)) != INBOX_OK)
		return s;
	snprintf(other, INBOX_SOURCE_MAX + 1, "%s", PQntuples(r) == 1 ?
	    PQgetvalue(r, 0, 0) : store_source(d));
	PQclear(r);
	if (strcmp(other, store_source(d)) != 0)
		return INBOX_OK;
	return px_exec(ib, seen_sql, &p, deadline, "storing the event", err);
}

/*
 * Store one delivery inside the caller's transaction; *changed 1
 * (stored), 0 (a duplicate: there from the same source) or -1 (there
 * from another source, named in other; nothing written).
 */
static enum inbox_status
insert_one(struct inbox_pg *ib, const struct inbox_delivery *d,
    int64_t deadline, int *changed, char other[INBOX_SOURCE_MAX + 1],
    struct buf *err)
{
	const struct event_fields *f = d->fields;
	struct px_params p = { 0 };
	char now[INSTANT_SIZE], ts[24], tr[24];
	PGresult *r = NULL;
	enum inbox_status s;
	struct buf t[7];
	int i, oom = 0, okey;

	/* A webhook-id this database cannot hold as it is gets no 200 (a
	 * stand-in could equal another delivery's id, whose duplicate would
	 * then be acknowledged unstored); providers send ASCII ids. */
	if (!utf8_valid(d->webhook_id))
		return px_fail(ib, err, INBOX_FAILED, "storing the event",
		    "the webhook-id is not valid UTF-8, which a PostgreSQL "
		    "inbox cannot store");
	/* An object key that is not: no key (no order, never stale), as
	 * lib/store/event.c does for a key it cannot represent, rather than one that
	 * could equal another object's. */
	okey = utf8_valid(f->object_type) && utf8_valid(f->object_id);
	for (i = 0; i < 7; i++)
		buf_init(&t[i], SIZE_MAX / 2);
	px_raw(&p, d->webhook_id);
	px_bytes(&p, d->body != NULL ? d->body : "", d->body_len);
	(void)px_instant(&p, util_now_ns(), now);
	px_int(&p, d->webhook_timestamp, ts);
	px_text(&p, utf8_text(d->secret_fp, &t[1], &oom));
	px_text(&p, utf8_text(f->type, &t[2], &oom));
	px_text(&p, f->created_at);	/* normalised instants: ASCII */
	px_text(&p, utf8_text(f->created_at_raw, &t[3], &oom));
	px_text(&p, okey ? f->object_type : NULL);
	px_text(&p, okey ? f->object_id : NULL);
	px_text(&p, f->updated_at);
	px_int(&p, f->truncated, tr);
	px_raw(&p, store_source(d));
	s = oom ? px_fail(ib, err, INBOX_FAILED, "storing the event",
	    "out of memory") : px_query(ib, store_sql, &p, deadline,
	    &r, "storing the event", err);
	for (i = 0; i < 7; i++)
		buf_free(&t[i]);
	if (s != INBOX_OK)
		return s;
	other[0] = '\0';
	*changed = PQntuples(r) == 1 && px_int_col(r, 0, 0) == 1;
	if (!*changed && PQntuples(r) == 1 && !PQgetisnull(r, 0, 1))
		snprintf(other, INBOX_SOURCE_MAX + 1, "%s", PQgetvalue(r, 0, 1));
	PQclear(r);
	if (!*changed && other[0] == '\0' &&
	    (s = recheck(ib, d, deadline, other, err)) != INBOX_OK)
		return s;
	if (!*changed && strcmp(other, store_source(d)) != 0)
		*changed = -1;
	return INBOX_OK;
}

/* The wait of a store, as SQLite's for its write lock (store/inbox.h): until
 * busy_timeout or the earliest of the deliveries' deadlines, whichever
 * comes first. */
static int64_t
store_deadline(struct inbox_pg *ib, const struct inbox_delivery *d, size_t n)
{
	int64_t dl = util_mono_ns() + ib->busy_timeout_ns;
	size_t i;

	for (i = 0; i < n; i++)
		if (d[i].deadline != 0 && d[i].deadline < dl)
			dl = d[i].deadline;
	return dl;
}

static enum inbox_status
set_cursor(struct inbox_pg *ib, const struct inbox_batch *b, int64_t deadline,
    struct buf *err)
{
	struct px_params p = { 0 };

	px_text(&p, b->cursor_name);
	px_text(&p, b->cursor_updated_after);
	px_text(&p, b->cursor_page);
	return px_exec(ib, "INSERT INTO cursors (name, updated_after, page)"
	    " VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET"
	    " updated_after = excluded.updated_after, page = excluded.page", &p,
	    deadline, "recording the cursor", err);
}

enum inbox_status
inbox_pg_store_batch(struct inbox *pib, struct inbox_batch *b, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	int64_t deadline = store_deadline(ib, b->d, b->n);
	enum inbox_status s;
	size_t i;
	int changed = 0, conflicts = 0;
	char other[INBOX_SOURCE_MAX + 1];
	struct buf why;

	b->stored = 0;
	for (i = 0; i < b->n; i++)
		if (!store_source_ok(&b->d[i], ib->name, err))
			return INBOX_FAILED;
	if ((s = px_begin(ib, deadline, err)) != INBOX_OK)
		return s;
	buf_init(&why, BUF_ERR_MAX);
	for (i = 0; i < b->n; i++) {
		if ((s = insert_one(ib, &b->d[i], deadline, &changed, other,
		    err)) != INBOX_OK)
			goto fail;
		/* Another source's id: this delivery only is refused
		 * (inbox_batch.changed), unless the caller cannot be told. */
		if (changed == -1 && conflicts++ == 0)
			store_conflict(&why, ib->name, b->d[i].webhook_id,
			    store_source(&b->d[i]), other);
		if (changed == -1 && b->changed == NULL) {
			s = INBOX_FAILED;
			goto fail;
		}
		if (changed == 1)
			b->stored++;
		if (b->changed != NULL)
			b->changed[i] = changed;
	}
	if (b->cursor_name != NULL &&
	    (s = set_cursor(ib, b, deadline, err)) != INBOX_OK)
		goto fail;
	if ((s = px_commit(ib, deadline, "storing a batch", err)) != INBOX_OK)
		goto fail;
	/* The first refused delivery's reason (lib/store/inbox.h). */
	if (conflicts > 0) {
		buf_reset(err);
		(void)buf_printf(err, "%s", why.data);
	}
	buf_free(&why);
	return INBOX_OK;
fail:
	/* A conflict that fails the batch says so; other failures their own. */
	if (conflicts > 0 && b->changed == NULL) {
		buf_reset(err);
		(void)buf_printf(err, "%s", why.data);
	}
	buf_free(&why);
	b->stored = 0;
	px_rollback(ib);
	return s;
}

enum inbox_status
inbox_pg_store(struct inbox *ib, const struct inbox_delivery *d,
    struct buf *err)
{
	struct inbox_batch b = { .d = d, .n = 1 };
	enum inbox_status s;

	/* changed NULL: another source's id fails the batch of one, with
	 * the reason (nothing written). */
	if ((s = inbox_pg_store_batch(ib, &b, err)) != INBOX_OK)
		return s;
	return b.stored == 1 ? INBOX_OK : INBOX_DUPLICATE;
}

enum inbox_status
inbox_pg_cursor_get(struct inbox *pib, const char *name, char **updated_after,
    char **page, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	PGresult *r = NULL;
	enum inbox_status s;
	int oom = 0;

	*updated_after = *page = NULL;
	px_text(&p, name);
	if ((s = px_query(ib, "SELECT updated_after, page FROM cursors"
	    " WHERE name = $1", &p, 0, &r, "reading a cursor", err)) != INBOX_OK)
		return s;
	if (PQntuples(r) == 1) {
		*updated_after = px_dup(r, 0, 0, &oom);
		*page = px_dup(r, 0, 1, &oom);
	}
	PQclear(r);
	if (oom) {
		free(*updated_after);
		free(*page);
		*updated_after = *page = NULL;
		return px_fail(ib, err, INBOX_FAILED, "reading a cursor",
		    "out of memory");
	}
	return INBOX_OK;
}

/* The engine's table (store/engine.h): every operation, in its order. */
const struct inbox_engine inbox_pg_engine = {
	.name = "postgresql",
	.open = inbox_pg_open,
	.close = inbox_pg_close,
	.maintain = inbox_pg_maintain,
	.store = inbox_pg_store,
	.store_batch = inbox_pg_store_batch,
	.cursor_get = inbox_pg_cursor_get,
	.next_due = inbox_pg_next_due,
	.claim = inbox_pg_claim,
	.finish_done = inbox_pg_finish_done,
	.finish_failed = inbox_pg_finish_failed,
	.finish_stale = inbox_pg_finish_stale,
	.is_stale = inbox_pg_is_stale,
	.list = inbox_pg_list,
	.count = inbox_pg_count,
	.requeue = inbox_pg_requeue,
	.forget = inbox_pg_forget,
	.purge = inbox_pg_purge,
	.status_report = inbox_pg_status_report,
	.count_sources = inbox_pg_count_sources,
	.probe_write = inbox_pg_probe_write,
	.probe_shared = inbox_pg_probe_shared,
	.server_facts = inbox_pg_server_facts,
	.note_lock = inbox_pg_note_lock,
	.note_run = inbox_pg_note_run,
	.history_add = inbox_pg_history_add,
	.history_read = inbox_pg_history_read,
	.runs_read = inbox_pg_runs_read,
	.queue_now = inbox_pg_queue_now,
	.dead_latest = inbox_pg_dead_latest,
	.blocked_list = inbox_pg_blocked_list,
	.table_read = inbox_pg_table_read,
	.table_merge = inbox_pg_table_merge,
	.table_holds = inbox_pg_table_holds,
};

#endif /* WEBHOOK_POSTGRESQL */
