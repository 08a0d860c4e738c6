/*
 * runlock: flock(2) beside the inbox.  See drain/runlock.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/drain/runlock.h"

int
runlock_try(const char *database, struct buf *err)
{
	struct buf path;
	int fd;

	char real[PATH_MAX];

	/* The lock is the inbox's, however it is named: a symlink or another
	 * spelling of the path must find the same lock. */
	if (realpath(database, real) != NULL)
		database = real;
	buf_init(&path, 8192);
	if (buf_printf(&path, "%s.drain-lock", database) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "%s: lock path too long", database);
		return -1;
	}
	/* No O_CLOEXEC: handlers inherit it on purpose (see drain/runlock.h).
	 * Read-only is enough for flock(2), so a group member can take the
	 * lock even when cron's umask 022 left the file 0640. */
	fd = open(path.data, O_RDONLY | O_CREAT | O_NOFOLLOW, 0660);
	if (fd == -1) {
		buf_reset(err);
		(void)buf_printf(err, "%s: %s", path.data, strerror(errno));
		buf_free(&path);
		return -1;
	}
	/* Created by us under a restrictive umask: give the group its share.
	 * (Fails harmlessly when another user owns the file.) */
	(void)fchmod(fd, 0660);
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK) {
			buf_free(&path);
			return -2;
		}
		buf_reset(err);
		(void)buf_printf(err, "%s: %s", path.data, strerror(e));
		buf_free(&path);
		return -1;
	}
	buf_free(&path);
	return fd;
}

void
runlock_release(int fd)
{
	if (fd >= 0)
		close(fd);	/* our copy; an orphaned handler may hold another */
}
