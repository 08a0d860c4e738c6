/*
 * inbox_backend: the public functions of store/inbox.h, each handing its call to
 * the implementation the inbox was opened with (store/engine.h).
 * inbox_open chooses it from the database's name: a libpq URI
 * (postgresql://, postgres://) is a PostgreSQL inbox, anything else a
 * SQLite file.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/store/engine.h"

const char *
inbox_backends(void)
{
#ifdef WEBHOOK_POSTGRESQL
	return "sqlite, postgresql";
#else
	return "sqlite";
#endif
}

enum inbox_status
inbox_open(const char *database, const struct inbox_options *o,
    struct inbox **out, struct buf *err)
{
	*out = NULL;
	if (util_is_postgresql(database)) {
#ifdef WEBHOOK_POSTGRESQL
		return inbox_pg_backend.open(database, o, out, err);
#else
		buf_reset(err);
		(void)buf_printf(err, "database: a PostgreSQL inbox, but this "
		    "binary was built without PostgreSQL (backends: %s)",
		    inbox_backends());
		return INBOX_FAILED;
#endif
	}
	return inbox_sqlite_backend.open(database, o, out, err);
}

void
inbox_close(struct inbox *ib)
{
	if (ib != NULL)
		((struct inbox_head *)(void *)ib)->be->close(ib);
}

void
inbox_database_name(const char *database, char *out, size_t outsz)
{
#ifdef WEBHOOK_POSTGRESQL
	char *s;

	if (util_is_postgresql(database)) {
		s = inbox_pg_redacted(database);
		snprintf(out, outsz, "%s", s != NULL ? s :
		    "postgresql (an invalid URI)");
		free(s);
		return;
	}
#endif
	snprintf(out, outsz, "%s", database);
}

const char *
inbox_backend_name(const struct inbox *ib)
{
	return ((const struct inbox_head *)(const void *)ib)->be->name;
}

#define DISPATCH(ret, name, params, args) \
	ret inbox_##name params \
	{ \
		return ((struct inbox_head *)(void *)ib)->be->name args; \
	}
INBOX_OPS(DISPATCH)
