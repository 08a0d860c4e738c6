/*
 * util: number parsing with ranges, capped buffers, log lines, small files
 * read whole, edit distance.
 * See common/util.h for the contracts.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/util.h"

int
util_parse_decimal(const char *s, size_t len, int64_t max, int64_t *out)
{
	int64_t v = 0;
	size_t i;

	if (len == 0 || (len > 1 && s[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (s[i] - '0' > max || v > (max - (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int
util_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0' || (*s != '-' && (*s < '0' || *s > '9')))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
util_parse_duration(const char *s, int64_t max_seconds, int64_t *out)
{
	size_t n;
	int64_t v, unit = 1;

	if (s == NULL)
		return -1;
	n = strlen(s);
	if (n == 0)
		return -1;
	switch (s[n - 1]) {
	case 's': unit = 1; n--; break;
	case 'm': unit = 60; n--; break;
	case 'h': unit = 3600; n--; break;
	case 'd': unit = 86400; n--; break;
	default: break;
	}
	/* Leading zeros are harmless here ("05m"), so do not use the canonical
	 * parser's rule; accept them by skipping. */
	while (n > 1 && *s == '0') {
		s++;
		n--;
	}
	if (util_parse_decimal(s, n, max_seconds, &v) == -1 || v > max_seconds / unit)
		return -1;
	*out = v * unit;
	return 0;
}

char *
util_format_duration(int64_t seconds, char *out, size_t outsz)
{
	static const struct { int64_t n; char unit; } units[] = {
		{ 86400, 'd' }, { 3600, 'h' }, { 60, 'm' },
	};
	size_t i;

	for (i = 0; i < sizeof units / sizeof units[0]; i++)
		if (seconds != 0 && seconds % units[i].n == 0) {
			(void)snprintf(out, outsz, "%lld%c",
			    (long long)(seconds / units[i].n), units[i].unit);
			return out;
		}
	(void)snprintf(out, outsz, "%llds", (long long)seconds);
	return out;
}

char *
util_read_file(const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *text = NULL;
	size_t got = 0;
	ssize_t n = 0;
	int fd, e = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1)
		e = errno;
	else if (!S_ISREG(st.st_mode))
		e = EINVAL;
	else if ((uintmax_t)st.st_size > max)
		e = EFBIG;
	else if ((text = malloc((size_t)st.st_size + 1)) == NULL)
		e = ENOMEM;
	while (e == 0 && got < (size_t)st.st_size &&
	    (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	if (e == 0 && n == -1)
		e = errno;
	if (e == 0 && memchr(text, '\0', got) != NULL)
		e = EILSEQ;
	close(fd);
	if (e != 0) {
		if (text != NULL)
			explicit_bzero(text, got);
		free(text);
		errno = e;
		return NULL;
	}
	text[got] = '\0';
	*len = got;
	return text;
}

void
buf_init(struct buf *b, size_t cap)
{
	b->data = NULL;
	b->len = b->size = 0;
	b->cap = cap;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	size_t want;
	char *nd;

	if (n > b->cap || b->len > b->cap - n) {
		errno = E2BIG;
		return -1;
	}
	want = b->len + n + 1;
	if (want > b->size) {
		size_t ns = b->size ? b->size : 256;
		while (ns < want)
			ns = ns > SIZE_MAX / 2 ? want : ns * 2;
		if ((nd = realloc(b->data, ns)) == NULL) {
			errno = ENOMEM;
			return -1;
		}
		b->data = nd;
		b->size = ns;
	}
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256], *big = NULL;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n < sizeof small)
		return buf_append(b, small, (size_t)n);
	if ((big = malloc((size_t)n + 1)) == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	rc = buf_append(b, big, (size_t)n);
	free(big);
	return rc;
}

int
buf_reserve(struct buf *b, size_t n)
{
	char *nd;

	if (n > b->cap || b->len > b->cap - n) {
		errno = E2BIG;
		return -1;
	}
	if (b->len + n + 1 <= b->size)
		return 0;
	if ((nd = realloc(b->data, b->len + n + 1)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	b->data = nd;
	b->size = b->len + n + 1;
	b->data[b->len] = '\0';
	return 0;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->size = 0;
}

char *
util_escape(const char *s, size_t len, char *out, size_t outsz)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0, need = 0, room;

	if (s == NULL) {
		snprintf(out, outsz, "-");
		return out;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		need += (c >= 0x20 && c < 0x7f && c != '\\') ? 1 : 4;
	}
	/* Room for the text and the NUL; when it does not all fit, keep room
	 * for "..." too. */
	room = need < outsz ? outsz - 1 : outsz - 4;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t w = (c >= 0x20 && c < 0x7f && c != '\\') ? 1 : 4;
		if (o + w > room)
			break;
		if (w == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (i < len) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

int
util_distance(const char *a, const char *b)
{
	int d[UTIL_DISTANCE_MAX + 1][UTIL_DISTANCE_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, j;

	if (la > UTIL_DISTANCE_MAX || lb > UTIL_DISTANCE_MAX)
		return INT_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			int ai = tolower((unsigned char)a[i - 1]);
			int bj = tolower((unsigned char)b[j - 1]);
			int v = d[i - 1][j - 1] + (ai != bj);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			/* a swap of neighbours: "ab" for "ba" */
			if (i > 1 && j > 1 && d[i - 2][j - 2] + 1 < v &&
			    ai == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == bj)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

static const char *log_prog = "webhook";
/* Every line goes to log_fd, which never changes once set: log_open swaps
 * the file behind it with dup2(2), atomically, so threads logging while a
 * config reload changes `log` never write to a closed descriptor. */
static int log_fd = STDERR_FILENO;
static int stderr_copy = -1;	/* the original stderr, to switch back to */
static int log_file;		/* log_fd holds a file log_open opened */
/*
 * The file's path and identity, for rotation (logrotate renames the file
 * and a new one takes its path; docs/vps.md, "The log"): before each line,
 * when the path no longer names the file we hold, we open it anew.  A
 * line between that stat and its write still goes to the renamed file,
 * which logrotate's `delaycompress` keeps as it is: no line is lost, and
 * no process needs a signal or a restart.  Guarded by log_lock; log_path
 * is ours (malloc).
 */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_path;
static dev_t log_dev;
static ino_t log_ino;

void
log_init(const char *progname)
{
	int fd;

	log_prog = progname;
	if (stderr_copy == -1 && (fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)) != -1) {
		stderr_copy = fd;
		if ((fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)) != -1)
			log_fd = fd;
	}
}

/* Open `path` for appending and put it behind log_fd; log_lock held.
 * Returns 0, or -1 with errno (ENOTSUP: no log_fd of our own to swap). */
static int
log_switch_locked(const char *path)
{
	struct stat st;
	int fd, e;

	/* The receiver and the drainer (two users on a shared host) append to
	 * the same file: create it 0660 whatever the umask. */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
	if (fd != -1)
		(void)fchmod(fd, 0660);
	else if (errno == EEXIST)
		fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (log_fd == STDERR_FILENO || fstat(fd, &st) == -1 ||
	    dup3(fd, log_fd, O_CLOEXEC) == -1) {
		e = log_fd == STDERR_FILENO ? ENOTSUP : errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	log_dev = st.st_dev;
	log_ino = st.st_ino;
	__atomic_store_n(&log_file, 1, __ATOMIC_RELAXED);
	return 0;
}

void
log_open(const char *path)
{
	char *copy = NULL;
	int rc, e = 0;

	pthread_mutex_lock(&log_lock);
	free(log_path);
	log_path = NULL;
	if (path == NULL || *path == '\0') {
		if (stderr_copy != -1 && log_fd != STDERR_FILENO &&
		    dup3(stderr_copy, log_fd, O_CLOEXEC) != -1)
			__atomic_store_n(&log_file, 0, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&log_lock);
		return;
	}
	rc = log_switch_locked(path);
	e = errno;
	if (rc == 0 && (copy = strdup(path)) != NULL)
		log_path = copy;
	pthread_mutex_unlock(&log_lock);
	/* Reported unlocked: log_msg takes the lock. */
	if (rc == -1 && e == ENOTSUP)
		log_msg("log: cannot switch to %s; logging to stderr", path);
	else if (rc == -1)
		log_msg("log: cannot open %s: %s; logging to stderr", path,
		    strerror(e));
}

/* Before a line: the path names another file, or none (rotated)?  Then
 * open it anew.  If that fails, lines go on to the file we hold. */
static void
log_follow(void)
{
	struct stat st;

	pthread_mutex_lock(&log_lock);
	if (log_path != NULL && (stat(log_path, &st) == -1 ||
	    st.st_ino != log_ino || st.st_dev != log_dev))
		(void)log_switch_locked(log_path);
	pthread_mutex_unlock(&log_lock);
}

int
log_is_file(void)
{
	return __atomic_load_n(&log_file, __ATOMIC_RELAXED);
}

/*
 * The message msg[0..len) as it goes on a log line, into out (outsz ≥ 8):
 * trailing line ends and spaces dropped when the message is whole
 * (libpq's and SQLite's messages end in "\n"), every other control byte (\n, \r, \t, ESC, DEL, ...) written
 * as \xHH as util_escape writes it, cut with "..." when it does not fit.
 * Here, where every line is written, so that no caller -- a libpq message
 * with its "HINT:" line, a handler's error -- can make one event two lines
 * (README "Logs": one line per event).  Text that is no control byte is
 * kept as it is: callers pass untrusted ids through util_escape already,
 * and its backslashes must not be escaped twice.  Returns the length.
 */
static size_t
log_one_line(const char *msg, size_t len, int whole, char *out,
    size_t outsz)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	while (whole && len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r' ||
	    msg[len - 1] == ' '))
		len--;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)msg[i];
		int ctl = c < 0x20 || c == 0x7f;

		if (o + (ctl ? 4 : 1) > outsz - 4)
			break;
		if (!ctl) {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	if (i < len) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	return o;
}

void
log_vmsg(const char *fmt, va_list ap)
{
	char line[2048], msg[2048], when[32];
	struct tm tm;
	time_t now = time(NULL);
	size_t m;
	int n, k;

	gmtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = snprintf(line, sizeof line, "%s %s[%ld]: ", when, log_prog,
	    (long)getpid());
	if (n < 0 || (size_t)n >= sizeof line - 8)
		return;
	k = vsnprintf(msg, sizeof msg, fmt, ap);
	if (k < 0)
		return;
	/* A log line is one line; an over-long message is cut visibly (a
	 * message vsnprintf cut is marked too: its end is gone). */
	m = log_one_line(msg, (size_t)k < sizeof msg ? (size_t)k :
	    sizeof msg - 1, (size_t)k < sizeof msg, line + n,
	    sizeof line - (size_t)n - 1);
	if ((size_t)k >= sizeof msg && (m < 3 ||
	    memcmp(line + n + m - 3, "...", 3) != 0)) {
		if (m > sizeof line - (size_t)n - 5)
			m = sizeof line - (size_t)n - 5;
		memcpy(line + n + m, "...", 3);
		m += 3;
	}
	line[(size_t)n + m] = '\n';
	log_follow();
	/* One write(2) so that lines from concurrent processes never mix. */
	if (write(log_fd, line, (size_t)n + m + 1) < 0) {
		/* nowhere left to report it */
	}
}

void
log_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(fmt, ap);
	va_end(ap);
}

int64_t
util_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
util_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int
util_path_resolve(const char *path, char out[PATH_MAX])
{
	char dir[PATH_MAX];
	const char *slash, *name;
	size_t n;

	if (realpath(path, out) != NULL)
		return 0;
	if ((slash = strrchr(path, '/')) == NULL) {
		name = path;
		if (getcwd(dir, sizeof dir) == NULL)
			return -1;
	} else {
		name = slash + 1;
		n = (size_t)(slash - path);
		if (n == 0)
			n = 1;	/* "/x": the root directory */
		if (n >= sizeof dir) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(dir, path, n);
		dir[n] = '\0';
		if (realpath(dir, out) == NULL)
			return -1;
		memcpy(dir, out, strlen(out) + 1);
	}
	if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		errno = EINVAL;
		return -1;
	}
	n = strlen(dir);
	if (snprintf(out, PATH_MAX, "%s%s%s", dir, n > 0 && dir[n - 1] == '/' ?
	    "" : "/", name) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Does `path` have a ".." component? */
static int
has_dotdot(const char *path)
{
	const char *p = path;

	while ((p = strstr(p, "..")) != NULL) {
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return 1;
		p += 2;
	}
	return 0;
}

int
util_path_inside(const char *dir, const char *path)
{
	char rdir[PATH_MAX], rpath[PATH_MAX];
	size_t n;

	if (realpath(dir, rdir) == NULL)
		return 0;
	/* A path that cannot be resolved cannot be opened (inbox_open and
	 * check refuse it), except by a reader that resolves ".." itself, as
	 * SQLite does: "DOCROOT/missing/../inbox.db" is DOCROOT/inbox.db to
	 * it.  Such a path cannot be shown to be outside; one without ".."
	 * (a directory name mistyped) is simply not there. */
	if (util_path_resolve(path, rpath) == -1)
		return has_dotdot(path);
	n = strlen(rdir);
	if (n == 1)	/* "/" holds everything */
		return 1;
	return strncmp(rpath, rdir, n) == 0 && (rpath[n] == '/' || rpath[n] == '\0');
}

int
util_is_conninfo(const char *database)
{
	/* libpq's connection keywords (PostgreSQL 15's "Parameter Key
	 * Words"), the ones a connection string is written with. */
	static const char *const kw[] = { "host", "hostaddr", "port",
	    "dbname", "user", "password", "passfile", "connect_timeout",
	    "client_encoding", "options", "application_name",
	    "fallback_application_name", "keepalives", "keepalives_idle",
	    "keepalives_interval", "keepalives_count", "tcp_user_timeout",
	    "replication", "gssencmode", "sslmode", "requiressl",
	    "sslcompression", "sslcert", "sslkey", "sslpassword",
	    "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
	    "ssl_min_protocol_version", "ssl_max_protocol_version",
	    "krbsrvname", "gsslib", "service", "target_session_attrs",
	    "load_balance_hosts", NULL };
	const char *s = database, *e;
	size_t i, n;

	if (s == NULL || strchr(s, '=') == NULL)
		return 0;
	for (; *s != '\0'; s++) {
		if (s != database && s[-1] != ' ' && s[-1] != '\t')
			continue;
		for (e = s; (*e >= 'a' && *e <= 'z') || *e == '_'; e++)
			;
		n = (size_t)(e - s);
		while (*e == ' ' || *e == '\t')
			e++;
		if (n == 0 || *e != '=')
			continue;
		for (i = 0; kw[i] != NULL; i++)
			if (strlen(kw[i]) == n && strncmp(kw[i], s, n) == 0)
				return 1;
	}
	return 0;
}

/*
 * Does the JSON text hold an escaped NUL (a backslash-u-0000 escape)
 * inside a string?  cJSON decodes it into its NUL-terminated strings, so
 * a value (or a key) would be cut short there: "a\u0000x" and "a" would
 * become one object.  The escape counts only after an odd run of
 * backslashes (an even run is literal backslashes followed by text).
 */
int
util_json_has_escaped_nul(const char *s, size_t len)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '\\') {
			run++;
			continue;
		}
		if (run % 2 == 1 && s[i] == 'u' && len - i >= 5 &&
		    memcmp(s + i + 1, "0000", 4) == 0)
			return 1;
		run = 0;
	}
	return 0;
}
