/*
 * version: see program/version.h.  WEBHOOK_VERSION and WEBHOOK_COMMIT come from the
 * Makefile (-D); this file is recompiled whenever either changes.
 */
#include <sqlite3.h>
#include <sodium.h>

#include "lib/store/inbox.h"
#include "lib/program/version.h"

#ifndef WEBHOOK_VERSION
#define WEBHOOK_VERSION	"unknown"
#endif
#ifndef WEBHOOK_COMMIT
#define WEBHOOK_COMMIT	"unknown"
#endif

const char version_number[] = WEBHOOK_VERSION;
const char version_commit[] = WEBHOOK_COMMIT;

void
version_print(FILE *f, const char *progname)
{
	fprintf(f, "%s %s (commit %s)\n", progname, version_number,
	    version_commit);
	fprintf(f, "SQLite %s, libsodium %s, inbox schema %d\n",
	    sqlite3_libversion(), sodium_version_string(),
	    inbox_schema_version());
	fprintf(f, "inbox backends: %s\n", inbox_backends());
}
