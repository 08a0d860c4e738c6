/*
 * upgrade: a FastCGI receiver replaced on disk becomes the new program
 * (docs/HOSTING.md, "Upgrading").
 *
 * A shared-hosting user uploads webhook.fcgi.new and renames it over
 * webhook.fcgi (a running executable cannot be overwritten: "Text file
 * busy"), and cannot restart the web server, whose mod_fcgid keeps its busy
 * processes for good.  So after each request a process looks at the path it
 * was started as (the path, not a symlink's target: the web server starts
 * that path again); when another file stands there, it checks that file
 * before leaving anything: an ELF executable that answers the probe
 * (`FILE --upgrade-probe NONCE`, which only a receiver answers, with its
 * schema version: an older receiver would refuse this inbox).  The
 * descriptor it checked is the one later executed (upgrade_exec), so a file
 * renamed in meanwhile is never run unchecked.  libfcgi cannot serve again
 * once told to stop: nothing that does not start may end a working process.
 */
#ifndef WEBHOOK_UPGRADE_H
#define WEBHOOK_UPGRADE_H

#include "lib/common/util.h"

/* How long the probe may take, ms. */
#define UPGRADE_PROBE_MS	5000

/*
 * Remember `path` (made absolute against the working directory, symlinks
 * kept) as the program's path, and the file it names now as the one
 * running.  Call once at start, before any thread.  Without /proc or
 * with a path that names nothing, nothing is checked later.
 */
void	upgrade_init(const char *path);

/* The path as remembered ("" before upgrade_init): webhook.conf is looked
 * for beside it. */
const char *upgrade_path(void);

/*
 * After a request: 1 when another file stands at the path and passed the
 * checks (it is then held open for upgrade_exec; later calls return 0), 0
 * otherwise.  A file that fails is logged once, with the reason, and not
 * tried again until the path names yet another file.  Thread-safe (one
 * caller checks at a time; the others return 0 meanwhile).
 */
int	upgrade_due(void);

/* Execute the checked file in place of this process, with argv and our
 * environment (descriptors without close-on-exec, such as the FastCGI
 * socket on fd 0, stay open).  Returns only on failure (errno set). */
void	upgrade_exec(char **argv);

/*
 * The new program's side: `webhook.fcgi --upgrade-probe NONCE` prints
 * "webhook.fcgi upgrade-probe NONCE schema N" and exits 0 (main calls it
 * outside any web server).
 */
void	upgrade_answer_probe(const char *nonce);

#endif
