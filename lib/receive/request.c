/*
 * request: one request over FastCGI (libfcgi's FCGX) or plain CGI
 * (environment, stdin, stdout) — receive/request.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "lib/receive/request.h"
#include "lib/common/util.h"

/* Plain CGI: the most of an unread body we read and discard before a
 * refusal (request_discard_input).  FastCGI needs none of this: the server
 * gets the answer whatever we read. */
#define CGI_DRAIN_MAX		(16 << 20)
/* ...and for at most this many seconds. */
#define CGI_DRAIN_S		2

void
request_respond(struct request *r, int status, const char *reason,
    const char *extra_header, const char *text)
{
	request_respond_typed(r, status, reason, "text/plain", extra_header,
	    text);
}

void
request_respond_typed(struct request *r, int status, const char *reason,
    const char *content_type, const char *extra_header, const char *text)
{
	char head[320], length[96] = "";
	int n;

	/* A 204 has no body and no Content-Length (RFC 9110, 8.6). */
	if (status != 204)
		(void)snprintf(length, sizeof length, "Content-Type: %s\r\n"
		    "Content-Length: %zu\r\n", content_type, strlen(text));
	n = snprintf(head, sizeof head, "Status: %d %s\r\n%s"
	    "X-Webhook-Inbox: receiver\r\n%s\r\n", status, reason, length,
	    extra_header ? extra_header : "");
	if (n < 0 || (size_t)n >= sizeof head)
		return;
	r->ops->write(r, head, (size_t)n, text, strlen(text));
}

void
request_discard_input(struct request *r)
{
	if (r->body_read)
		return;
	r->body_read = 1;
	if (r->ops->discard != NULL)
		r->ops->discard(r);
}

/* ---- FastCGI ---------------------------------------------------------- */

/* Call each(arg, value) for every "NAME=value" of `env` (NULL-terminated;
 * NULL: none) whose name is `name`, in order; -1 as soon as it does. */
static int
each_in(const char *const *env, const char *name,
    int (*each)(void *, const char *), void *arg)
{
	size_t len = strlen(name);
	const char *const *e;

	for (e = env; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, name, len) != 0 || (*e)[len] != '=')
			continue;
		if (each(arg, *e + len + 1) == -1)
			return -1;
	}
	return 0;
}

static const char *
fcgi_param(struct request *r, const char *name)
{
	FCGX_Request *fr = r->impl;

	return FCGX_GetParam(name, fr->envp);
}

/* Every "NAME=value" of the parameters, not only FCGX_GetParam's first. */
static int
fcgi_param_each(struct request *r, const char *name,
    int (*each)(void *, const char *), void *arg)
{
	FCGX_Request *fr = r->impl;

	return each_in((const char *const *)fr->envp, name, each, arg);
}

/* Let the next read on the server's connection wait at most until
 * `deadline` (monotonic ns; 0: no limit again). */
static void
fcgi_read_deadline(FCGX_Request *fr, int64_t deadline)
{
	struct timeval tv = { 0, 0 };

	if (fr->ipcFd < 0)
		return;
	if (deadline != 0) {
		int64_t left = deadline - util_mono_ns();
		if (left < 1000000)
			left = 1000000;
		tv.tv_sec = (time_t)(left / 1000000000);
		tv.tv_usec = (suseconds_t)(left % 1000000000 / 1000);
	}
	(void)setsockopt(fr->ipcFd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/*
 * A slow client must not hold a thread, and every delivery behind it,
 * when the server streams bodies (Apache's mod_proxy_fcgi): the deadline
 * is the request's, not a read's.  FCGX_GetStr keeps filling until it has
 * `want` bytes, one FastCGI record after another, and a socket timeout
 * bounds only each read(2): a body trickled a byte a second never trips
 * it.  So never ask libfcgi for more than it already holds: the bytes of
 * the current record still in its buffer (FCGX_Stream's public rdNext and
 * stop), or, when none are, one byte — at most one fill, whose read(2)
 * waits no longer than the time left (SO_RCVTIMEO set just before).  The
 * deadline is then checked again before the next fill.  (poll(2) on
 * ipcFd cannot do this: libfcgi may hold the next record in its private
 * buffer while the socket has nothing to read.)
 */
static int
fcgi_read(struct request *r, char *buf, size_t want, int64_t deadline)
{
	FCGX_Request *fr = r->impl;
	FCGX_Stream *in = fr->in;
	size_t held;
	int n, more;

	if (want == 0)
		return 0;
	if (util_mono_ns() >= deadline)
		return REQUEST_READ_LATE;
	held = (size_t)(in->stop - in->rdNext);
	if (held > 0)
		return FCGX_GetStr(buf, (int)(held < want ? held : want), in);
	fcgi_read_deadline(fr, deadline);
	n = FCGX_GetStr(buf, 1, in);
	if (n < 1)
		return FCGX_GetError(in) == 0 ? 0 : util_mono_ns() >= deadline ?
		    REQUEST_READ_LATE : REQUEST_READ_ERROR;
	/* The rest of the record the fill brought in, without another. */
	held = (size_t)(in->stop - in->rdNext);
	if (held > want - 1)
		held = want - 1;
	more = held > 0 ? FCGX_GetStr(buf + 1, (int)held, in) : 0;
	return more < 0 ? REQUEST_READ_ERROR : 1 + more;
}

/* The connection closes after this request unless the server keeps it for
 * the next (FCGI_KEEP_CONN: nginx with fastcgi_keep_conn): only then must
 * the next request's reads wait without a limit. */
static void
fcgi_read_done(struct request *r)
{
	FCGX_Request *fr = r->impl;

	if (fr->keepConnection)
		fcgi_read_deadline(fr, 0);
}

static void
fcgi_write(struct request *r, const char *head, size_t headlen,
    const char *body, size_t bodylen)
{
	FCGX_Request *fr = r->impl;

	FCGX_PutStr(head, (int)headlen, fr->out);
	FCGX_PutStr(body, (int)bodylen, fr->out);
}

static const struct request_ops fcgi_ops = {
	fcgi_param, fcgi_param_each, fcgi_read, fcgi_read_done, fcgi_write,
	NULL
};

void
request_init_fcgi(struct request *r, FCGX_Request *fr)
{
	r->ops = &fcgi_ops;
	r->impl = fr;
	r->long_lived = 1;
	r->body_to_eof = 1;
	r->body_read = 0;
}

/* After a shortage of descriptors or memory, wait this long before the
 * next accept(2): the connection stays queued, and a thread that retried
 * at once would spin until the shortage ends. */
#define ACCEPT_PAUSE_US		100000

/* An accept(2) failure that concerns one connection, or a shortage that
 * passes: accept again (libfcgi's is_reasonable_accept_errno, and the
 * shortages it let end the thread). */
static int
accept_again(int e)
{
	switch (e) {
	case ECONNABORTED: case EPROTO: case ECONNRESET: case ETIMEDOUT:
	case EHOSTUNREACH: case ENETUNREACH: case EPERM:
		return 1;
	case EMFILE: case ENFILE: case ENOBUFS: case ENOMEM:
		usleep(ACCEPT_PAUSE_US);
		return 1;
	default:
		return 0;
	}
}

/* Wait for a connection in hand: the kept one's next request, or a new
 * one into fr->ipcFd.  The only place the wake signals get through. */
static int
wait_connection(FCGX_Request *fr, int listen_fd, const sigset_t *waitmask)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof peer;
	sigset_t mask;
	int fd, e, one = 1;

	if (fr->ipcFd >= 0) {
		struct pollfd p = { fr->ipcFd, POLLIN, 0 };

		/* ppoll sets the mask and waits in one step: no signal is
		 * lost between the two. */
		if (ppoll(&p, 1, NULL, waitmask) >= 0)
			return REQUEST_NEXT_READY;
		if (errno == EINTR)
			return REQUEST_NEXT_WOKEN;
		FCGX_Free(fr, 1);
		return REQUEST_NEXT_AGAIN;
	}
	/* accept(2) has no such form: a signal just before it is seen after
	 * the next connection only, so the caller repeats its wake. */
	pthread_sigmask(SIG_SETMASK, waitmask, &mask);
	fd = accept4(listen_fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (fd == -1) {
		errno = e;
		return e == EINTR ? REQUEST_NEXT_WOKEN :
		    accept_again(e) ? REQUEST_NEXT_AGAIN : REQUEST_NEXT_FAILED;
	}
	/* A TCP listener: no Nagle delay on our answers (as libfcgi). */
	if (peer.ss_family == AF_INET || peer.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	fr->ipcFd = fd;
	return REQUEST_NEXT_READY;
}

int
request_next_fcgi(FCGX_Request *fr, int listen_fd, const sigset_t *waitmask,
    int params_timeout_ms)
{
	struct timeval tv = { params_timeout_ms / 1000,
	    (suseconds_t)(params_timeout_ms % 1000) * 1000 };
	int rc;

	if ((rc = wait_connection(fr, listen_fd, waitmask)) != REQUEST_NEXT_READY)
		return rc;
	(void)setsockopt(fr->ipcFd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	/* FCGX_Accept_r begins with FCGX_Finish_r, which closes the
	 * connection unless it is kept: it is ours to keep until libfcgi has
	 * read the begin record, which sets the flag for this request. */
	fr->keepConnection = 1;
	/* Detached (FCGX_Detach), libfcgi closes the connection without its
	 * lingering read: request_finish_fcgi lingers, within a bound. */
	(void)FCGX_Detach(fr);
	/* It reads from fr->ipcFd.  On a connection that ends or fails
	 * before its begin record does, libfcgi closes it and tries to accept
	 * another on listening socket -1, which fails at once. */
	if (FCGX_Accept_r(fr) < 0)
		return REQUEST_NEXT_AGAIN;
	/* One that fails between two parameters (a read timed out, the
	 * server went away) comes back as a request with those read so far
	 * and its stream in error: nobody is left to answer. */
	if (FCGX_GetError(fr->in) != 0) {
		FCGX_Free(fr, 1);
		return REQUEST_NEXT_AGAIN;
	}
	return REQUEST_NEXT_READY;
}

/*
 * After the answer: stop sending, then read and drop what the server still
 * sends until it closes or LINGER_MS have passed in all, then close.
 * Closing with bytes unread resets the connection, and a server may then
 * drop our answer (a refusal sent before the body was read).  libfcgi's
 * own lingering close (OS_Close) waits 2 s per read with no total bound:
 * a peer that kept sending held the thread, and a stop, for ever.
 */
#define LINGER_MS	2000

static void
linger_close(int fd)
{
	int64_t end = util_mono_ns() + LINGER_MS * (int64_t)1000000, left;
	struct pollfd p = { fd, POLLIN, 0 };
	char trash[4096];

	if (shutdown(fd, SHUT_WR) == 0)
		while ((left = (end - util_mono_ns()) / 1000000) > 0 &&
		    poll(&p, 1, (int)left) > 0 &&
		    read(fd, trash, sizeof trash) > 0)
			;
	close(fd);
}

void
request_finish_fcgi(FCGX_Request *fr)
{
	int fd = -1;

	/* Our own descriptor of a connection the server does not keep:
	 * FCGX_Finish_r always closes such a one (detached: at once, no
	 * linger), and the connection lives on in ours.  A kept one that
	 * failed, libfcgi closes at once too: no answer is left to protect
	 * on it. */
	if (fr->ipcFd >= 0 && !fr->keepConnection)
		fd = fcntl(fr->ipcFd, F_DUPFD_CLOEXEC, 0);
	FCGX_Finish_r(fr);
	if (fd >= 0)
		linger_close(fd);
}

/* ---- plain CGI -------------------------------------------------------- */

static const char *
cgi_param(struct request *r, const char *name)
{
	(void)r;
	return getenv(name);
}

/* The environment holds a name once. */
static int
cgi_param_each(struct request *r, const char *name,
    int (*each)(void *, const char *), void *arg)
{
	const char *v = getenv(name);

	(void)r;
	return v == NULL ? 0 : each(arg, v);
}

/* Wait until fd 0 has something to read, at most until `deadline`
 * (monotonic ns).  Returns 0, REQUEST_READ_LATE or REQUEST_READ_ERROR. */
static int
stdin_wait(int64_t deadline)
{
	struct pollfd pfd = { 0, POLLIN, 0 };

	for (;;) {
		int64_t left = deadline - util_mono_ns();
		int rc;

		if (left <= 0)
			return REQUEST_READ_LATE;
		rc = poll(&pfd, 1, (int)((left + 999999) / 1000000));
		if (rc > 0)
			return 0;
		if (rc == -1 && errno != EINTR)
			return REQUEST_READ_ERROR;
	}
}

/*
 * Plain CGI: a slow chunked client holds a whole process, so the body has
 * the request's deadline too: poll(2) on stdin with the time left, then
 * read(2) what is there (no stdio: its buffer would hide bytes from
 * poll).  A short read is fine, the caller loops.
 */
static int
cgi_read(struct request *r, char *buf, size_t want, int64_t deadline)
{
	ssize_t n;
	int rc;

	(void)r;
	for (;;) {
		if ((rc = stdin_wait(deadline)) != 0)
			return rc;
		n = read(0, buf, want < INT32_MAX ? want : INT32_MAX);
		if (n >= 0)
			return (int)n;
		if (errno != EINTR && errno != EAGAIN)
			return REQUEST_READ_ERROR;
	}
}

static void
cgi_write(struct request *r, const char *head, size_t headlen,
    const char *body, size_t bodylen)
{
	(void)r;
	fwrite(head, 1, headlen, stdout);
	fwrite(body, 1, bodylen, stdout);
	fflush(stdout);
}

/* At most CGI_DRAIN_MAX bytes, for at most CGI_DRAIN_S: a client too
 * slow for the body's deadline must not keep the process after the
 * refusal either. */
static void
cgi_discard(struct request *r)
{
	const char *cl = getenv("CONTENT_LENGTH");
	int64_t left = CGI_DRAIN_MAX;
	int64_t until = util_mono_ns() + CGI_DRAIN_S * (int64_t)1000000000;
	char chunk[REQUEST_READ_CHUNK];
	int n;

	if (cl != NULL && *cl != '\0' &&
	    util_parse_decimal(cl, strlen(cl), INT64_MAX, &left) == 0 &&
	    left > CGI_DRAIN_MAX)
		left = CGI_DRAIN_MAX;
	while (left > 0 && (n = cgi_read(r, chunk, left < (int64_t)sizeof chunk ?
	    (size_t)left : sizeof chunk, until)) > 0)
		left -= n;
}

static const struct request_ops cgi_ops = {
	cgi_param, cgi_param_each, cgi_read, NULL, cgi_write, cgi_discard
};

void
request_init_cgi(struct request *r)
{
	r->ops = &cgi_ops;
	r->impl = NULL;
	r->long_lived = 0;
	r->body_to_eof = 0;
	r->body_read = 0;
}

/* The first descriptor systemd passes (sd_listen_fds(3),
 * SD_LISTEN_FDS_START).  Not libsystemd's sd_listen_fds: two variables
 * read here are the whole protocol, and the static build
 * (make static) has no libsystemd to link. */
#define LISTEN_FDS_START	3

int
request_take_listen_fds(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int64_t p, n;
	int type = 0, listening = 0;
	socklen_t len = sizeof type;

	if (pid == NULL || fds == NULL ||
	    util_parse_int(pid, 1, INT32_MAX, &p) == -1 || p != (int64_t)getpid())
		return 0;
	if (util_parse_int(fds, 0, INT32_MAX, &n) == -1 || n != 1) {
		log_msg("LISTEN_FDS=%s: the receiver takes exactly one socket "
		    "from systemd; its .socket unit must have one ListenStream=",
		    fds);
		return -1;
	}
	if (getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
	    type != SOCK_STREAM ||
	    getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_ACCEPTCONN, &listening,
	    &(socklen_t){ sizeof listening }) == -1 || !listening) {
		log_msg("LISTEN_FDS=1 but fd 3 is not a listening stream socket; "
		    "the .socket unit must say ListenStream= and Accept=no");
		return -1;
	}
	if (dup2(LISTEN_FDS_START, STDIN_FILENO) == -1) {
		log_msg("dup2 of systemd's socket to fd 0: %s", strerror(errno));
		return -1;
	}
	close(LISTEN_FDS_START);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return 1;
}
