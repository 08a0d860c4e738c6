/*
 * webhook.fcgi: the FastCGI (and plain CGI) responder.
 *
 * Per request, in DESIGN.md's order: method, config, webhook headers, body
 * size, timestamp and signature, then one transaction that stores the event
 * under its webhook-id — and the answer from the status table.  Nothing here
 * makes a network call or runs a handler; that is webhook-drain's job.
 *
 * FastCGI when fd 0 is a listening socket (FCGX_IsCGI says no), else one
 * plain CGI request from the environment and stdin.
 *
 * In FastCGI mode the process runs WEBHOOK_THREADS request threads (default
 * 8) so that a web server that sends it several requests at once (lighttpd,
 * nginx, mod_proxy_fcgi) gets them handled together: their deliveries are
 * committed in one transaction and one sync (lib/committer.h).  The main
 * thread only waits for SIGTERM/SIGUSR1/SIGHUP: the threads then finish the
 * request in hand and stop taking new ones.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/auxv.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <sodium.h>

#include "lib/committer.h"
#include "lib/config.h"
#include "lib/event.h"
#include "lib/inbox.h"
#include "lib/signature.h"
#include "lib/upgrade.h"
#include "lib/util.h"
#include "lib/version.h"

/* Longest webhook-id, bytes.  Provider ids are ~30 characters; 256 leaves
 * room for any sender without letting a header become a storage problem. */
#define WEBHOOK_ID_MAX		256
/* Longest webhook-signature (all lines joined), bytes: 32 entries of a v1a
 * signature are under 4 KiB.  Longer is refused with 401, not truncated. */
#define SIGNATURE_HEADER_MAX	16384
/* Retry-After for 503s, seconds: long enough for an operator's fix or a
 * lock to clear, short against the provider's retry schedule. */
#define RETRY_AFTER		"30"
/* Bytes read per FCGX_GetStr / fread call. */
#define READ_CHUNK		65536
/* Request threads per FastCGI process (WEBHOOK_THREADS): enough to batch
 * the provider's 5 deliveries in flight with room for a busy server; a
 * thread costs a stack and a 64 KiB read buffer. */
#define THREADS_DEFAULT		8
#define THREADS_MAX		64

/* One request, whichever protocol carries it. */
struct request {
	FCGX_Request	*fcgi;		/* NULL in plain CGI mode */
	char		**envp;
	int		 body_read;	/* stdin consumed (plain CGI) */
};

/* Plain CGI: the most of an unread body we read and discard before a
 * refusal.  Apache's mod_cgid resets the client's connection when a CGI
 * program answers without reading its input, and the provider would see a
 * network error instead of our status.  FastCGI needs none of this: the
 * server gets the answer whatever we read. */
#define CGI_DRAIN_MAX		(16 << 20)

/*
 * One loaded config and what hangs off it, shared by the request threads.
 * A new one replaces it when the file changes (a secret rotation is an
 * edit); requests still using the old one keep it alive (refs).
 */
struct site {
	int		 refs;		/* under site_mu */
	char		*conf_path;
	struct stat	 conf_st;	/* identity of the file when read */
	int		 conf_ok;
	struct config	 conf;
	pthread_mutex_t	 mu;		/* guards what follows */
	char		*docroot;	/* DOCUMENT_ROOT the checks ran for */
	const char	*docroot_problem;	/* NULL: both outside it */
	struct committer *cm;		/* FastCGI: group commit */
	struct inbox	*ib;		/* plain CGI: one direct commit */
};

/* What one request thread owns. */
struct worker {
	struct buf	 body;	/* "id.timestamp." + body */
	struct buf	 sigs;	/* webhook-signature values joined */
	struct buf	 err;
	FCGX_Request	 req;
	pthread_t	 tid;
	const int	*stop;	/* set: end at the next EINTR in accept */
};

static pthread_mutex_t site_mu = PTHREAD_MUTEX_INITIALIZER;
static struct site *current;		/* under site_mu */
static char self_conf[PATH_MAX];	/* webhook.conf beside us */

static const char *
param(struct request *r, const char *name)
{
	if (r->fcgi != NULL)
		return FCGX_GetParam(name, r->envp);
	return getenv(name);
}

/* Write the whole answer.  Bodies are short fixed texts: nothing of the
 * request is echoed (the provider shows our first 2 KB to account admins).
 * Every answer of ours carries X-Webhook-Inbox: `webhook-drain send` (the
 * setup test) tells by it our answer from a web server's (a 200 for a
 * file it served as it is, a 500 of its own). */
static void
respond(struct request *r, int status, const char *reason,
    const char *extra_header, const char *text)
{
	char head[256];
	int n;

	n = snprintf(head, sizeof head, "Status: %d %s\r\n"
	    "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
	    "X-Webhook-Inbox: receiver\r\n%s\r\n",
	    status, reason, strlen(text), extra_header ? extra_header : "");
	if (n < 0 || (size_t)n >= sizeof head)
		return;
	if (r->fcgi != NULL) {
		FCGX_PutStr(head, n, r->fcgi->out);
		FCGX_PutStr(text, (int)strlen(text), r->fcgi->out);
	} else {
		fwrite(head, 1, (size_t)n, stdout);
		fputs(text, stdout);
		fflush(stdout);
	}
}

/* Read and discard what is left of a plain-CGI request's body, up to
 * CONTENT_LENGTH (or EOF when there is none) and CGI_DRAIN_MAX. */
static void
drain_cgi_input(struct request *r)
{
	const char *cl = getenv("CONTENT_LENGTH");
	int64_t left = CGI_DRAIN_MAX;
	char chunk[READ_CHUNK];
	size_t n;

	if (r->fcgi != NULL || r->body_read)
		return;
	r->body_read = 1;
	if (cl != NULL && *cl != '\0' &&
	    util_parse_decimal(cl, strlen(cl), INT64_MAX, &left) == 0 &&
	    left > CGI_DRAIN_MAX)
		left = CGI_DRAIN_MAX;
	while (left > 0 && (n = fread(chunk, 1, left < (int64_t)sizeof chunk ?
	    (size_t)left : sizeof chunk, stdin)) > 0)
		left -= (int64_t)n;
}

static void
refuse(struct request *r, int status, const char *id, const char *why)
{
	char esc[WEBHOOK_ID_MAX * 4 + 8];

	drain_cgi_input(r);
	log_msg("refused %d webhook-id=%s: %s", status,
	    util_escape(id, id ? strlen(id) : 0, esc, sizeof esc), why);
	switch (status) {
	case 400:
		respond(r, 400, "Bad Request", NULL, "bad request\n");
		break;
	case 401:
		respond(r, 401, "Unauthorized", NULL, "signature not accepted\n");
		break;
	case 405:
		respond(r, 405, "Method Not Allowed", "Allow: POST\r\n",
		    "method not allowed\n");
		break;
	case 408:
		respond(r, 408, "Request Timeout", NULL, "body too slow\n");
		break;
	case 413:
		respond(r, 413, "Content Too Large", NULL, "body too large\n");
		break;
	default:
		respond(r, 503, "Service Unavailable",
		    "Retry-After: " RETRY_AFTER "\r\n", "try again later\n");
		break;
	}
}

static void
site_release(struct site *st)
{
	int last;

	if (st == NULL)
		return;
	pthread_mutex_lock(&site_mu);
	last = --st->refs == 0;
	pthread_mutex_unlock(&site_mu);
	if (!last)
		return;
	committer_close(st->cm);
	inbox_close(st->ib);
	config_free(&st->conf);
	free(st->conf_path);
	free(st->docroot);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * The site for this request, with a reference (site_release it): the config
 * found through WEBHOOK_CONF as a FastCGI/CGI parameter, then the process
 * environment, then webhook.conf beside the executable — re-read when the
 * file changed (one stat per request: shared-hosting users cannot restart
 * workers).  A bad config is logged once, when it is read.
 */
static struct site *
site_acquire(struct request *r, struct buf *err)
{
	const char *path = param(r, "WEBHOOK_CONF");
	struct site *st, *old = NULL;
	struct stat sb;

	if (path == NULL || *path == '\0')
		path = getenv("WEBHOOK_CONF");
	if (path == NULL || *path == '\0')
		path = self_conf;
	if (stat(path, &sb) == -1)
		memset(&sb, 0, sizeof sb);
	pthread_mutex_lock(&site_mu);
	st = current;
	if (st == NULL || strcmp(st->conf_path, path) != 0 ||
	    !same_file(&sb, &st->conf_st)) {
		if ((st = calloc(1, sizeof *st)) == NULL ||
		    (st->conf_path = strdup(path)) == NULL) {
			free(st);
			pthread_mutex_unlock(&site_mu);
			return NULL;
		}
		pthread_mutex_init(&st->mu, NULL);
		st->conf_st = sb;
		st->refs = 1;		/* current's own reference */
		st->conf_ok = config_load(path, &st->conf, err) == 0;
		/* A broken config still names its log file (config.h);
		 * when it names none, the log stays where it was, never the
		 * web server's stderr instead of the file being read. */
		if (st->conf_ok || st->conf.log != NULL)
			log_open(st->conf.log);
		if (!st->conf_ok)
			log_msg("config: %s (answering 503 until it is fixed)",
			    err->data);
		old = current;
		current = st;
	}
	st->refs++;
	pthread_mutex_unlock(&site_mu);
	site_release(old);	/* drop current's reference to the old one */
	return st;
}

/*
 * Can this request go on with site `st`: config ok, neither the config
 * nor the database inside DOCUMENT_ROOT (both would be downloadable), the
 * inbox open?  Returns 0, or -1 with the reason logged.
 */
static int
prepare(struct site *st, struct request *r, struct buf *err)
{
	const char *docroot = param(r, "DOCUMENT_ROOT");
	struct inbox_options io;
	int rc = 0;

	if (!st->conf_ok)
		return -1;
	if (docroot == NULL)
		docroot = "";
	pthread_mutex_lock(&st->mu);
	if (st->docroot == NULL || strcmp(st->docroot, docroot) != 0) {
		free(st->docroot);
		st->docroot = strdup(docroot);
		st->docroot_problem = NULL;
		if (*docroot != '\0' && util_path_inside(docroot, st->conf.path))
			st->docroot_problem = "the config file";
		else if (*docroot != '\0' &&
		    util_path_inside(docroot, st->conf.database))
			st->docroot_problem = "the database";
		if (st->docroot_problem != NULL)
			log_msg("config: %s is inside the document root %s, where "
			    "anyone can download it; move it outside and point "
			    "WEBHOOK_CONF / database at the new place (answering "
			    "503 until then)", st->docroot_problem, docroot);
	}
	if (st->docroot == NULL || st->docroot_problem != NULL) {
		rc = -1;
		goto out;
	}
	io.busy_timeout_ms = st->conf.busy_timeout_ms;
	io.synchronous = st->conf.synchronous == CONFIG_SYNC_NORMAL ?
	    INBOX_SYNC_NORMAL : INBOX_SYNC_FULL;
	/* A FastCGI worker lives for many requests: group commit
	 * (docs/durability.md).  Plain CGI commits and syncs at once. */
	io.group_commit = r->fcgi != NULL;
	io.short_lived = r->fcgi == NULL;
	if (r->fcgi != NULL && st->cm == NULL &&
	    committer_open(st->conf.database, &io, &st->cm, err) != INBOX_OK) {
		log_msg("inbox: %s", err->data);
		rc = -1;
	} else if (r->fcgi == NULL && st->ib == NULL &&
	    inbox_open(st->conf.database, &io, &st->ib, err) != INBOX_OK) {
		log_msg("inbox: %s", err->data);
		rc = -1;
	}
out:
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/* Join every webhook-signature into w->sigs: one header value from a
 * server that joins repeated lines, or several FastCGI parameters of the
 * same name from Debian 12's nginx.  -1 when over SIGNATURE_HEADER_MAX. */
static int
collect_signatures(struct worker *st, struct request *r)
{
	static const char name[] = "HTTP_WEBHOOK_SIGNATURE=";
	const char *v;
	char **e;

	buf_reset(&st->sigs);
	if (r->fcgi == NULL) {
		v = getenv("HTTP_WEBHOOK_SIGNATURE");
		return v == NULL ? 0 : buf_append(&st->sigs, v, strlen(v));
	}
	for (e = r->envp; *e != NULL; e++) {
		if (strncmp(*e, name, sizeof name - 1) != 0)
			continue;
		v = *e + sizeof name - 1;
		if ((st->sigs.len > 0 && buf_append(&st->sigs, " ", 1) == -1) ||
		    buf_append(&st->sigs, v, strlen(v)) == -1)
			return -1;
	}
	return 0;
}

/* FastCGI: let the next read on the server's connection wait at most until
 * `deadline` (monotonic ns; 0: no limit again). */
static void
read_deadline(struct request *r, int64_t deadline)
{
	struct timeval tv = { 0, 0 };

	if (r->fcgi == NULL || r->fcgi->ipcFd < 0)
		return;
	if (deadline != 0) {
		int64_t left = deadline - util_mono_ns();
		if (left < 1000000)
			left = 1000000;
		tv.tv_sec = (time_t)(left / 1000000000);
		tv.tv_usec = (suseconds_t)(left % 1000000000 / 1000);
	}
	(void)setsockopt(r->fcgi->ipcFd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* Read the body to its end into w->body, behind the `prefix` bytes already
 * there.  Returns 0; 1 when it passes max_body (413); 2 when it is not in
 * by `deadline` (408: a slow client must not hold a thread, and every
 * delivery behind it, when the server streams bodies); -1 on a read error. */
static int
read_body(struct worker *st, struct request *r, size_t prefix,
    int64_t max_body, int64_t content_length, int64_t deadline)
{
	size_t max = (size_t)max_body;
	char chunk[READ_CHUNK];
	int rc = 0;

	for (;;) {
		size_t got = st->body.len - prefix, want = sizeof chunk;
		int n;

		/* Plain CGI: stdin need not end after the body; read exactly
		 * CONTENT_LENGTH when there is one.  FastCGI: always to the
		 * end of the stream (chunked bodies come without a length). */
		if (r->fcgi == NULL && content_length >= 0) {
			if (got >= (size_t)content_length)
				return 0;
			if (want > (size_t)content_length - got)
				want = (size_t)content_length - got;
		}
		if (r->fcgi != NULL) {
			if (util_mono_ns() >= deadline) {
				rc = 2;
				break;
			}
			read_deadline(r, deadline);
			n = FCGX_GetStr(chunk, (int)want, r->fcgi->in);
			if (n < (int)want && FCGX_GetError(r->fcgi->in) != 0) {
				rc = util_mono_ns() >= deadline ? 2 : -1;
				break;
			}
		} else {
			n = (int)fread(chunk, 1, want, stdin);
		}
		if (n < 0) {
			rc = -1;
			break;
		}
		if (n == 0) {
			rc = r->fcgi != NULL || !ferror(stdin) ? 0 : -1;
			break;
		}
		if ((size_t)n > max - got) {
			rc = 1;
			break;
		}
		if (buf_append(&st->body, chunk, (size_t)n) == -1) {
			rc = -1;
			break;
		}
	}
	/* The connection closes after this request unless the server keeps
	 * it for the next (FCGI_KEEP_CONN: nginx with fastcgi_keep_conn):
	 * only then must the next request's reads wait without a limit. */
	if (r->fcgi != NULL && r->fcgi->keepConnection)
		read_deadline(r, 0);
	return rc;
}

static void
handle(struct worker *w, struct request *r)
{
	struct worker *st = w;
	struct site *site = NULL;
	int64_t started = util_mono_ns();
	const char *method = param(r, "REQUEST_METHOD");
	const char *id = param(r, "HTTP_WEBHOOK_ID");
	const char *ts = param(r, "HTTP_WEBHOOK_TIMESTAMP");
	const char *cl = param(r, "CONTENT_LENGTH");
	const char *why = NULL;
	int64_t content_length = -1, timestamp;
	size_t prefix, which;
	struct event_fields fields;
	struct inbox_delivery d;
	enum inbox_status s;
	int rc;

	memset(&fields, 0, sizeof fields);
	if (method == NULL || strcmp(method, "POST") != 0) {
		refuse(r, 405, id, "method is not POST");
		goto out;
	}
	if ((site = site_acquire(r, &w->err)) == NULL ||
	    prepare(site, r, &w->err) == -1) {
		refuse(r, 503, id, "not usable: see the config: or inbox: line "
		    "logged when it was read or opened");
		goto out;
	}
	if (id == NULL || *id == '\0' || ts == NULL || *ts == '\0') {
		refuse(r, 400, id, "webhook-id or webhook-timestamp missing");
		goto out;
	}
	if (collect_signatures(st, r) == -1) {
		refuse(r, 401, id, "webhook-signature longer than 16 KiB");
		goto out;
	}
	if (st->sigs.len == 0) {
		refuse(r, 400, id, "webhook-signature missing");
		goto out;
	}
	if (strlen(id) > WEBHOOK_ID_MAX) {
		refuse(r, 400, id, "webhook-id longer than 256 bytes");
		goto out;
	}
	if (st->sigs.len > SIGNATURE_HEADER_MAX) {
		refuse(r, 401, id, "webhook-signature longer than 16 KiB");
		goto out;
	}
	if (cl != NULL && *cl != '\0') {
		if (util_parse_decimal(cl, strlen(cl), INT64_MAX, &content_length)
		    == -1) {
			refuse(r, 400, id, "CONTENT_LENGTH is not a number");
			goto out;
		}
		if (content_length > site->conf.max_body_bytes) {
			refuse(r, 413, id, "CONTENT_LENGTH over max_body");
			goto out;
		}
	}

	/* The signed content is id.timestamp.body: read the body straight in
	 * behind the prefix, so it is hashed where it lies. */
	buf_reset(&st->body);
	st->body.cap = strlen(id) + strlen(ts) + 2 + (size_t)site->conf.max_body_bytes;
	if (buf_printf(&st->body, "%s.%s.", id, ts) == -1) {
		refuse(r, 503, id, "out of memory");
		goto out;
	}
	prefix = st->body.len;
	/* A known length is allocated once: a 1 MiB body costs 1 MiB. */
	if (content_length > 0 && buf_reserve(&st->body, (size_t)content_length) == -1) {
		refuse(r, 503, id, "out of memory");
		goto out;
	}
	rc = read_body(st, r, prefix, site->conf.max_body_bytes, content_length,
	    started + site->conf.body_timeout_s * 1000000000);
	if (rc == 0)
		r->body_read = 1;
	if (rc == 1) {
		refuse(r, 413, id, "body over max_body");
		goto out;
	}
	if (rc == 2) {
		refuse(r, 408, id, "body not received within body_timeout");
		goto out;
	}
	if (rc == -1) {
		refuse(r, 400, id, "body could not be read to its end");
		goto out;
	}
	if (content_length >= 0 && st->body.len - prefix != (size_t)content_length) {
		refuse(r, 400, id, "body length differs from CONTENT_LENGTH");
		goto out;
	}
	if (signature_check_timestamp(ts, strlen(ts), (int64_t)time(NULL),
	    site->conf.tolerance_s, &why) == -1 ||
	    util_parse_decimal(ts, strlen(ts), INT64_MAX, &timestamp) == -1) {
		refuse(r, 401, id, why ? why : "webhook-timestamp unreadable");
		goto out;
	}
	if (signature_verify(site->conf.secrets, site->conf.nsecrets,
	    (const unsigned char *)st->body.data, st->body.len, st->sigs.data,
	    st->sigs.len, &which) == -1) {
		refuse(r, 401, id, "no signature entry verifies");
		goto out;
	}

	if (event_extract(id, st->body.data + prefix, st->body.len - prefix,
	    &fields) == -1) {
		refuse(r, 503, id, "out of memory");
		goto out;
	}
	if (fields.note != NULL) {
		char esc[WEBHOOK_ID_MAX * 4 + 8];
		log_msg("note webhook-id=%s: %s", util_escape(id, strlen(id),
		    esc, sizeof esc), fields.note);
	}
	d.webhook_id = id;
	d.webhook_timestamp = timestamp;
	d.secret_fp = site->conf.secrets[which].fingerprint;
	d.body = st->body.data + prefix;
	d.body_len = st->body.len - prefix;
	d.fields = &fields;
	if (r->fcgi != NULL) {
		s = committer_store(site->cm, &d, &st->err);
	} else {
		s = inbox_store(site->ib, &d, &st->err);
	}
	if (s == INBOX_OK)
		respond(r, 200, "OK", NULL, "stored\n");
	else if (s == INBOX_DUPLICATE)
		respond(r, 200, "OK", NULL, "duplicate\n");
	else
		refuse(r, 503, id, st->err.data);
out:
	event_fields_free(&fields);
	site_release(site);
	/* A 1 MiB body should not pin 1 MiB per idle worker. */
	if (st->body.size > 2 * READ_CHUNK) {
		buf_free(&st->body);
		buf_init(&st->body, 0);
	}
}

static void
worker_init(struct worker *w)
{
	memset(w, 0, sizeof *w);
	buf_init(&w->body, 0);
	buf_init(&w->sigs, SIGNATURE_HEADER_MAX + 1);
	buf_init(&w->err, 4096);
}

static void
worker_free(struct worker *w)
{
	buf_free(&w->body);
	buf_free(&w->sigs);
	buf_free(&w->err);
}

/* Where we were started from (lib/upgrade.h), and webhook.conf beside
 * it: the path the web server runs, not a symlink's target.  argv[0] when
 * it is a path (lighttpd's bin-path, the wrapper's exec, and our own
 * re-exec after an upgrade), else the kernel's record of the exec. */
static void
find_self(const char *argv0)
{
	const char *p = argv0 != NULL && strchr(argv0, '/') != NULL ? argv0 :
	    (const char *)getauxval(AT_EXECFN);
	const char *slash;

	upgrade_init(p);
	p = upgrade_path();
	snprintf(self_conf, sizeof self_conf, "webhook.conf");
	if ((slash = strrchr(p, '/')) != NULL &&
	    (size_t)(slash - p) + sizeof "/webhook.conf" <= sizeof self_conf) {
		memcpy(self_conf, p, (size_t)(slash - p));
		memcpy(self_conf + (slash - p), "/webhook.conf",
		    sizeof "/webhook.conf");
	}
}

/* SIGUSR2 interrupts a thread blocked in accept(2) at shutdown: it is
 * unblocked only around FCGX_Accept_r, so it never interrupts a request. */
static sigset_t wake_set;

static void
on_wake(int sig)
{
	(void)sig;
}

/*
 * One request on w->req: accept it (a connection on the listening socket,
 * or the next request on the connection already open in ipcFd), handle it
 * and finish it.  SIGUSR2 can interrupt only the accepting.  Returns
 * FCGX_Accept_r's result: < 0 when nothing was accepted.
 */
static int
serve_one(struct worker *w)
{
	struct request r;
	int rc;

	pthread_sigmask(SIG_UNBLOCK, &wake_set, NULL);
	rc = FCGX_Accept_r(&w->req);
	pthread_sigmask(SIG_BLOCK, &wake_set, NULL);
	if (rc < 0)
		return rc;
	r.fcgi = &w->req;
	r.envp = w->req.envp;
	r.body_read = 0;
	handle(w, &r);
	FCGX_Finish_r(&w->req);
	/* Replaced by a file that passed the checks: stop as on SIGTERM (the
	 * main thread sees the signal is ours, and starts the new program
	 * once every thread has finished the request in hand). */
	if (upgrade_due())
		kill(getpid(), SIGTERM);
	return 0;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	int rc;

	/* No mutex around FCGX_Accept_r (libfcgi's threaded example has one
	 * for platforms whose accept(2) is not thread-safe; Linux's is): the
	 * kernel wakes one blocked thread per connection, where a mutex cost
	 * a second wake-up per request. */
	for (;;) {
		/* Told to stop while busy: end after the request in hand,
		 * before taking another (no signal needed). */
		if (__atomic_load_n(w->stop, __ATOMIC_ACQUIRE))
			break;
		rc = serve_one(w);
		/* FCGI_FAIL_ACCEPT_ON_INTR: a SIGUSR2 ends accept(2) with
		 * EINTR; it means "stop" only when w->stop says so. */
		if (rc == -EINTR && !__atomic_load_n(w->stop, __ATOMIC_ACQUIRE))
			continue;
		if (rc < 0)
			break;
	}
	return NULL;
}

/* Join the threads that have ended; return how many still run. */
static int
join_finished(struct worker *w, int n)
{
	int i, alive = 0;

	for (i = 0; i < n; i++) {
		if (w[i].tid == 0)
			continue;
		if (pthread_tryjoin_np(w[i].tid, NULL) == 0)
			w[i].tid = 0;
		else
			alive++;
	}
	return alive;
}

static int
thread_count(void)
{
	const char *v = getenv("WEBHOOK_THREADS");
	int64_t n = THREADS_DEFAULT;

	if (v != NULL && *v != '\0' &&
	    util_parse_int(v, 1, THREADS_MAX, &n) == -1) {
		log_msg("WEBHOOK_THREADS=%s is not a number from 1 to %d; using %d",
		    v, THREADS_MAX, THREADS_DEFAULT);
		n = THREADS_DEFAULT;
	}
	return (int)n;
}

/* Wake the threads blocked in accept(2) (SIGUSR2: EINTR there only). */
static void
poke(struct worker *w, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (w[i].tid != 0)
			pthread_kill(w[i].tid, SIGUSR2);
}

/*
 * Serve until a stop signal (SIGTERM, SIGUSR1, SIGHUP, read from `sfd`),
 * or until our socket fails every thread: nthreads threads accept on fd 0
 * (the kernel hands each connection to one of them) and serve it.  At a
 * stop every thread finishes the request in hand and takes no other; one
 * blocked in accept(2) is woken by SIGUSR2, which is unblocked only there.
 * *reexec: the stop was our own, after an upgrade (serve_one).
 * Returns 0, or 1 when no thread could start or the socket failed.
 */
static int
serve(int sfd, int nthreads, int *reexec)
{
	struct pollfd pfd = { sfd, POLLIN, 0 };
	struct worker *w;
	int i, running = 0, stop = 0, rc = 0;

	if ((w = calloc((size_t)nthreads, sizeof *w)) == NULL) {
		log_msg("out of memory");
		return 1;
	}
	for (i = 0; i < nthreads; i++) {
		worker_init(&w[i]);
		w[i].stop = &stop;
		if (FCGX_InitRequest(&w[i].req, 0, FCGI_FAIL_ACCEPT_ON_INTR) != 0 ||
		    pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
			w[i].tid = 0;
			log_msg("cannot start request thread %d", i);
			break;
		}
		running++;
	}
	while (running > 0) {
		struct signalfd_siginfo si;

		if (poll(&pfd, 1, 200) == -1 && errno != EINTR) {
			log_msg("poll: %s", strerror(errno));
			rc = 1;
			break;
		}
		if ((pfd.revents & POLLIN) &&
		    read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
			/* From an upgrade (serve_one): start the new program once
			 * every thread is done. */
			*reexec = si.ssi_signo == SIGTERM &&
			    si.ssi_pid == (uint32_t)getpid();
			break;
		}
		if (join_finished(w, nthreads) == 0) {
			log_msg("the FastCGI socket failed every request thread");
			rc = 1;	/* our socket went away */
			break;
		}
	}
	if (running == 0)
		rc = 1;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	FCGX_ShutdownPending();
	while (join_finished(w, nthreads) > 0) {
		poke(w, nthreads);
		usleep(20000);
	}
	for (i = 0; i < nthreads; i++)
		worker_free(&w[i]);
	free(w);
	return rc;
}

int
main(int argc, char **argv)
{
	struct sigaction sa;
	struct request r;
	sigset_t stop;
	int sfd, rc;

	/* `webhook.fcgi --version` from a shell.  Never under a web server:
	 * a CGI GET with a query string without '=' becomes argv
	 * (/webhook.fcgi?--version), and the answer must stay ours. */
	if (argc >= 2 && getenv("GATEWAY_INTERFACE") == NULL && FCGX_IsCGI()) {
		if (argc == 2 && strcmp(argv[1], "--version") == 0) {
			version_print(stdout, "webhook.fcgi");
			return 0;
		}
		/* A running receiver asks whether we can replace it. */
		if (argc == 3 && strcmp(argv[1], "--upgrade-probe") == 0) {
			upgrade_answer_probe(argv[2]);
			return 0;
		}
	}
	log_init("webhook.fcgi");
	/* Bodies over 128 KiB get their own mapping and go back to the system
	 * when freed.  glibc would otherwise raise this threshold after the
	 * first large free and keep every later large body in the heap. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (sodium_init() < 0) {
		log_msg("libsodium failed to initialise");
		return 1;
	}
	find_self(argv[0]);

	if (FCGX_IsCGI()) {
		struct worker w;
		worker_init(&w);
		r.fcgi = NULL;
		r.envp = NULL;
		r.body_read = 0;
		handle(&w, &r);
		worker_free(&w);
		/* The answer is complete once stdout closes: the web server
		 * need not wait for a checkpoint turn (inbox.h, short_lived). */
		fclose(stdout);
		if (current != NULL && current->ib != NULL) {
			struct buf err;
			buf_init(&err, 1024);
			if (inbox_maintain(current->ib, &err) != INBOX_OK)
				log_msg("inbox: %s", err.data);
			buf_free(&err);
		}
		site_release(current);
		return 0;
	}

	if (FCGX_Init() != 0) {
		log_msg("FastCGI initialisation failed");
		return 1;
	}
	/* Every thread blocks the stop signals: the main thread reads them
	 * from a signalfd.  (libfcgi's own SIGTERM/SIGUSR1 handlers never
	 * run.) */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGUSR1);
	sigaddset(&stop, SIGHUP);
	sigemptyset(&wake_set);
	sigaddset(&wake_set, SIGUSR2);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_wake;	/* no SA_RESTART: accept(2) returns EINTR */
	sigaction(SIGUSR2, &sa, NULL);
	/* A server that closes its connection while we answer must not kill
	 * us (libfcgi reports the write error). */
	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	pthread_sigmask(SIG_BLOCK, &wake_set, NULL);
	if ((sfd = signalfd(-1, &stop, SFD_CLOEXEC)) == -1) {
		log_msg("signalfd: %s", strerror(errno));
		return 1;
	}

	{
		int reexec = 0;

		rc = serve(sfd, thread_count(), &reexec);
		pthread_mutex_lock(&site_mu);
		{
			struct site *st = current;
			current = NULL;
			pthread_mutex_unlock(&site_mu);
			site_release(st);
		}
		if (!reexec)
			goto out;
		/*
		 * Upgraded: every request in hand was answered.  Become the new
		 * program in this same process: the listening socket (fd 0)
		 * stays open, so connections the server made meanwhile wait in
		 * its queue for the new program instead of being refused or
		 * reset (a process that exited would lose them: lighttpd
		 * answers 500), and the server sees the same process.  Every
		 * other descriptor is close-on-exec; a stop signal that came
		 * meanwhile stays pending (blocked) for the new program.
		 */
		log_msg("starting the new %s", upgrade_path());
		upgrade_exec(argv);
		/* It answered the probe a moment ago, from the descriptor
		 * executed here: out of memory, or of processes.  libfcgi
		 * cannot serve again after a stop; the web server starts us
		 * anew. */
		log_msg("cannot start the new %s: %s; exiting", upgrade_path(),
		    strerror(errno));
		rc = 1;
	}
out:
	close(sfd);
	return rc;
}
