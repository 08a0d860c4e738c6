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
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <sodium.h>

#include "lib/config.h"
#include "lib/event.h"
#include "lib/inbox.h"
#include "lib/signature.h"
#include "lib/util.h"

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

/* One request, whichever protocol carries it. */
struct request {
	FCGX_Request	*fcgi;		/* NULL in plain CGI mode */
	char		**envp;
};

/* What survives between requests in one process. */
struct state {
	char		*conf_path;	/* the file `conf` was read from */
	struct stat	 conf_st;	/* its identity when read */
	int		 conf_ok;
	struct config	 conf;
	struct buf	 conf_err;	/* why it is not ok */
	char		*docroot;	/* DOCUMENT_ROOT the checks below ran for */
	const char	*docroot_problem;	/* NULL: both outside it */
	struct inbox	*inbox;		/* open on conf.database, or NULL */
	struct buf	 body;		/* "id.timestamp." + body */
	struct buf	 sigs;		/* webhook-signature values joined */
	struct buf	 err;
	char		 self_conf[PATH_MAX];	/* webhook.conf beside us */
};

static const char *
param(struct request *r, const char *name)
{
	if (r->fcgi != NULL)
		return FCGX_GetParam(name, r->envp);
	return getenv(name);
}

/* Write the whole answer.  Bodies are short fixed texts: nothing of the
 * request is echoed (the provider shows our first 2 KB to account admins). */
static void
respond(struct request *r, int status, const char *reason,
    const char *extra_header, const char *text)
{
	char head[256];
	int n;

	n = snprintf(head, sizeof head, "Status: %d %s\r\n"
	    "Content-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
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

static void
refuse(struct request *r, int status, const char *id, const char *why)
{
	char esc[WEBHOOK_ID_MAX * 4 + 8];

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
	case 413:
		respond(r, 413, "Content Too Large", NULL, "body too large\n");
		break;
	default:
		respond(r, 503, "Service Unavailable",
		    "Retry-After: " RETRY_AFTER "\r\n", "try again later\n");
		break;
	}
}

/*
 * Make st->conf current for this request: find the file (WEBHOOK_CONF as a
 * FastCGI/CGI parameter, then the process environment, then webhook.conf
 * beside the executable), re-read it when it changed (one stat per request:
 * a secret rotation is an edit, and shared-hosting users cannot restart
 * workers), check the document root, open the inbox.  Returns 0 when the
 * request can go on; else -1 with the reason logged once per change.
 */
static int
prepare(struct state *st, struct request *r)
{
	const char *path = param(r, "WEBHOOK_CONF");
	const char *docroot = param(r, "DOCUMENT_ROOT");
	struct inbox_options io;
	struct stat sb;
	int changed;

	if (path == NULL || *path == '\0')
		path = getenv("WEBHOOK_CONF");
	if (path == NULL || *path == '\0')
		path = st->self_conf;
	if (stat(path, &sb) == -1)
		memset(&sb, 0, sizeof sb);
	changed = st->conf_path == NULL || strcmp(st->conf_path, path) != 0 ||
	    sb.st_ino != st->conf_st.st_ino || sb.st_dev != st->conf_st.st_dev ||
	    sb.st_size != st->conf_st.st_size ||
	    sb.st_mtim.tv_sec != st->conf_st.st_mtim.tv_sec ||
	    sb.st_mtim.tv_nsec != st->conf_st.st_mtim.tv_nsec ||
	    sb.st_ctim.tv_sec != st->conf_st.st_ctim.tv_sec ||
	    sb.st_ctim.tv_nsec != st->conf_st.st_ctim.tv_nsec;
	if (changed) {
		inbox_close(st->inbox);
		st->inbox = NULL;
		config_free(&st->conf);
		free(st->conf_path);
		free(st->docroot);
		st->docroot = NULL;
		st->conf_st = sb;
		if ((st->conf_path = strdup(path)) == NULL) {
			st->conf_ok = 0;
			return -1;
		}
		st->conf_ok = config_load(path, &st->conf, &st->conf_err) == 0;
		if (st->conf_ok) {
			log_open(st->conf.log);
		} else {
			log_open(NULL);
			log_msg("config: %s (answering 503 until it is fixed)",
			    st->conf_err.data);
		}
	}
	if (!st->conf_ok)
		return -1;

	/* Secrets and the database must not be downloadable. */
	if (docroot == NULL)
		docroot = "";
	if (st->docroot == NULL || strcmp(st->docroot, docroot) != 0) {
		free(st->docroot);
		st->docroot = strdup(docroot);
		st->docroot_problem = NULL;
		if (*docroot != '\0' && util_path_inside(docroot, st->conf.path))
			st->docroot_problem = "the config file";
		else if (*docroot != '\0' && util_path_inside(docroot, st->conf.database))
			st->docroot_problem = "the database";
		if (st->docroot_problem != NULL)
			log_msg("config: %s is inside the document root %s, where "
			    "anyone can download it; move it outside and point "
			    "WEBHOOK_CONF / database at the new place (answering "
			    "503 until then)", st->docroot_problem, docroot);
		if (st->docroot == NULL)
			return -1;
	}
	if (st->docroot_problem != NULL)
		return -1;

	if (st->inbox == NULL) {
		io.busy_timeout_ms = st->conf.busy_timeout;
		io.synchronous = st->conf.synchronous;
		/* A FastCGI worker lives for many requests: group commit
		 * (bench/RESULTS.md).  Plain CGI commits and syncs at once. */
		io.group_commit = r->fcgi != NULL;
		if (inbox_open(st->conf.database, &io, &st->inbox,
		    &st->err) != INBOX_OK) {
			log_msg("inbox: %s", st->err.data);
			return -1;
		}
	}
	return 0;
}

/* Join every webhook-signature into st->sigs: one header value from a
 * server that joins repeated lines, or several FastCGI parameters of the
 * same name from Debian 12's nginx.  -1 when over SIGNATURE_HEADER_MAX. */
static int
collect_signatures(struct state *st, struct request *r)
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

/* Read the body to its end into st->body, behind the `prefix` bytes already
 * there.  Returns 0; 1 when it passes max_body (413); -1 on a read error. */
static int
read_body(struct state *st, struct request *r, size_t prefix,
    int64_t content_length)
{
	size_t max = (size_t)st->conf.max_body;
	char chunk[READ_CHUNK];

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
		if (r->fcgi != NULL)
			n = FCGX_GetStr(chunk, (int)want, r->fcgi->in);
		else
			n = (int)fread(chunk, 1, want, stdin);
		if (n < 0)
			return -1;
		if (n == 0)
			return r->fcgi != NULL || !ferror(stdin) ? 0 : -1;
		if ((size_t)n > max - got)
			return 1;
		if (buf_append(&st->body, chunk, (size_t)n) == -1)
			return -1;
	}
}

static void
handle(struct state *st, struct request *r)
{
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
		return;
	}
	if (prepare(st, r) == -1) {
		refuse(r, 503, id, "not configured (see the config line above)");
		return;
	}
	if (id == NULL || *id == '\0' || ts == NULL || *ts == '\0') {
		refuse(r, 400, id, "webhook-id or webhook-timestamp missing");
		return;
	}
	if (collect_signatures(st, r) == -1) {
		refuse(r, 401, id, "webhook-signature longer than 16 KiB");
		return;
	}
	if (st->sigs.len == 0) {
		refuse(r, 400, id, "webhook-signature missing");
		return;
	}
	if (strlen(id) > WEBHOOK_ID_MAX) {
		refuse(r, 400, id, "webhook-id longer than 256 bytes");
		return;
	}
	if (st->sigs.len > SIGNATURE_HEADER_MAX) {
		refuse(r, 401, id, "webhook-signature longer than 16 KiB");
		return;
	}
	if (cl != NULL && *cl != '\0') {
		if (util_parse_decimal(cl, strlen(cl), INT64_MAX, &content_length)
		    == -1) {
			refuse(r, 400, id, "CONTENT_LENGTH is not a number");
			return;
		}
		if (content_length > st->conf.max_body) {
			refuse(r, 413, id, "CONTENT_LENGTH over max_body");
			return;
		}
	}

	/* The signed content is id.timestamp.body: read the body straight in
	 * behind the prefix, so it is hashed where it lies. */
	buf_reset(&st->body);
	st->body.cap = strlen(id) + strlen(ts) + 2 + (size_t)st->conf.max_body;
	if (buf_printf(&st->body, "%s.%s.", id, ts) == -1) {
		refuse(r, 503, id, "out of memory");
		return;
	}
	prefix = st->body.len;
	rc = read_body(st, r, prefix, content_length);
	if (rc == 1) {
		refuse(r, 413, id, "body over max_body");
		return;
	}
	if (rc == -1) {
		refuse(r, 400, id, "body could not be read to its end");
		return;
	}
	if (content_length >= 0 && st->body.len - prefix != (size_t)content_length) {
		refuse(r, 400, id, "body length differs from CONTENT_LENGTH");
		return;
	}
	if (signature_check_timestamp(ts, strlen(ts), (int64_t)time(NULL),
	    st->conf.tolerance, &why) == -1 ||
	    util_parse_decimal(ts, strlen(ts), INT64_MAX, &timestamp) == -1) {
		refuse(r, 401, id, why ? why : "webhook-timestamp unreadable");
		return;
	}
	if (signature_verify(st->conf.secrets, st->conf.nsecrets,
	    (const unsigned char *)st->body.data, st->body.len, st->sigs.data,
	    st->sigs.len, &which) == -1) {
		refuse(r, 401, id, "no signature entry verifies");
		return;
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
	d.secret_fp = st->conf.secrets[which].fingerprint;
	d.body = st->body.data + prefix;
	d.body_len = st->body.len - prefix;
	d.fields = &fields;
	s = inbox_store(st->inbox, &d, &st->err);
	if (s == INBOX_OK) {
		respond(r, 200, "OK", NULL, "stored\n");
	} else if (s == INBOX_DUPLICATE) {
		respond(r, 200, "OK", NULL, "duplicate\n");
	} else {
		refuse(r, 503, id, st->err.data);
		if (s == INBOX_FAILED) {	/* reopen next time */
			inbox_close(st->inbox);
			st->inbox = NULL;
		}
	}
out:
	event_fields_free(&fields);
	/* A 1 MiB body should not pin 1 MiB per idle worker. */
	if (st->body.size > 2 * READ_CHUNK) {
		buf_free(&st->body);
		buf_init(&st->body, 0);
	}
}

static void
state_init(struct state *st)
{
	char exe[PATH_MAX];
	ssize_t n;

	memset(st, 0, sizeof *st);
	buf_init(&st->conf_err, 4096);
	buf_init(&st->body, 0);
	buf_init(&st->sigs, SIGNATURE_HEADER_MAX + 1);
	buf_init(&st->err, 4096);
	snprintf(st->self_conf, sizeof st->self_conf, "webhook.conf");
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		char *slash;
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL &&
		    (size_t)(slash - exe) + sizeof "/webhook.conf" <= sizeof st->self_conf) {
			memcpy(st->self_conf, exe, (size_t)(slash - exe));
			memcpy(st->self_conf + (slash - exe), "/webhook.conf",
			    sizeof "/webhook.conf");
		}
	}
}

static void
state_free(struct state *st)
{
	inbox_close(st->inbox);
	config_free(&st->conf);
	free(st->conf_path);
	free(st->docroot);
	buf_free(&st->conf_err);
	buf_free(&st->body);
	buf_free(&st->sigs);
	buf_free(&st->err);
}

int
main(int argc, char **argv)
{
	struct state st;
	struct request r;
	FCGX_Request req;
	sigset_t stop, old;

	(void)argc;
	(void)argv;
	log_init("webhook.fcgi");
	if (sodium_init() < 0) {
		log_msg("libsodium failed to initialise");
		return 1;
	}
	state_init(&st);

	if (FCGX_IsCGI()) {
		r.fcgi = NULL;
		r.envp = NULL;
		handle(&st, &r);
		state_free(&st);
		return 0;
	}

	/* libfcgi installs SIGTERM/SIGUSR1 handlers (without SA_RESTART)
	 * that make an idle FCGX_Accept_r return; we keep them blocked while
	 * a request is in hand, so it is finished before the process ends. */
	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, 0, 0) != 0) {
		log_msg("FastCGI initialisation failed");
		state_free(&st);
		return 1;
	}
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGUSR1);
	sigaddset(&stop, SIGHUP);
	while (FCGX_Accept_r(&req) >= 0) {
		sigprocmask(SIG_BLOCK, &stop, &old);
		r.fcgi = &req;
		r.envp = req.envp;
		handle(&st, &r);
		FCGX_Finish_r(&req);
		/* The answer is out: housekeeping costs no request any time. */
		if (st.inbox != NULL && inbox_maintain(st.inbox, &st.err) != INBOX_OK)
			log_msg("inbox: %s", st.err.data);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	state_free(&st);
	return 0;
}
