/*
 * cgi_sqlite_floor: the least a durable plain-CGI receiver that keeps its
 * events in SQLite does (bench/cgi.py's second reference).  Reads the body,
 * opens the database (already in WAL mode: bench/cgi.py creates it with one
 * table), inserts the body in one autocommit statement with
 * synchronous=FULL, answers 200, then, like webhook.fcgi, leaves the
 * checkpoint to after the answer (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, and a
 * TRUNCATE checkpoint once the WAL passes 128 frames).  No signature, no
 * parsing, no schema check, no second table or index.  Linked statically,
 * as the receiver it is compared with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <sqlite3.h>

static int frames;

static int
on_wal(void *arg, sqlite3 *db, const char *name, int n)
{
	(void)arg; (void)db; (void)name;
	frames = n;
	return SQLITE_OK;
}

int
main(void)
{
	static char body[1 << 20];
	const char *cl = getenv("CONTENT_LENGTH"), *path = getenv("WEBHOOK_CONF");
	long want = cl ? strtol(cl, NULL, 10) : 0, got = 0;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	ssize_t n;

	if (want < 0 || want > (long)sizeof body || path == NULL)
		return 1;
	while (got < want && (n = read(0, body + got, (size_t)(want - got))) > 0)
		got += n;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return 1;
	(void)sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	sqlite3_busy_timeout(db, 5000);
	sqlite3_wal_hook(db, on_wal, NULL);
	if (sqlite3_exec(db, "PRAGMA synchronous = FULL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO t (body) VALUES (?)", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 1, body, (int)got, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		return 1;
	sqlite3_finalize(st);
	fputs("Status: 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\r\nstored\n",
	    stdout);
	fclose(stdout);
	if (frames > 128)
		(void)sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_close(db);
	return 0;
}
