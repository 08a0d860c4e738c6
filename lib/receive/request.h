/*
 * request: one HTTP request as the web server hands it to us, whichever
 * protocol carries it — its parameters (CGI variables), its body, our
 * answer.  Two implementations behind one small table of operations:
 *
 *   FastCGI   libfcgi's FCGX_Request (a request thread's, after
 *             FCGX_Accept_r); the body is read to the end of the stream
 *             with a total deadline; the process lives for many requests.
 *   plain CGI the process environment, stdin and stdout; the body is
 *             exactly CONTENT_LENGTH bytes (stdin need not end after it).
 *
 * The tests and the fuzz target add a third, in memory, outside the
 * product (tests/fake_request.h): the table is public so they can.
 *
 * A struct request lives on the caller's stack for one request: setting
 * one up allocates nothing and makes no system call.
 */
#ifndef WEBHOOK_REQUEST_H
#define WEBHOOK_REQUEST_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <fcgiapp.h>

/* Bytes asked for per read (FCGX_GetStr, fread): one FastCGI record's
 * worth (a record carries at most 65535 bytes). */
#define REQUEST_READ_CHUNK	65536

/* request_read's answers besides a byte count. */
#define REQUEST_READ_ERROR	(-1)	/* the stream failed */
#define REQUEST_READ_LATE	(-2)	/* the deadline passed first */

struct request;

/* One implementation.  Every operation may assume r->ops is this table. */
struct request_ops {
	/* The value of parameter `name`, or NULL; valid for the request. */
	const char *(*param)(struct request *r, const char *name);
	/* Call each(arg, value) for every value of `name` in order (FastCGI
	 * may repeat a parameter); stop and return -1 when it does. */
	int	(*param_each)(struct request *r, const char *name,
		    int (*each)(void *arg, const char *value), void *arg);
	/* As request_read. */
	int	(*read)(struct request *r, char *buf, size_t want,
		    int64_t deadline);
	/* After the body was read: undo what read set up for it.  May be
	 * NULL. */
	void	(*read_done)(struct request *r);
	/* Write `head` then `body`, the whole answer, and push it out. */
	void	(*write)(struct request *r, const char *head, size_t headlen,
		    const char *body, size_t bodylen);
	/* Read and discard the unread body before a refusal; NULL when the
	 * protocol needs none. */
	void	(*discard)(struct request *r);
};

struct request {
	const struct request_ops *ops;
	void		*impl;		/* the implementation's own; not owned */
	/*
	 * The process serves many requests (FastCGI): its inbox commits in
	 * groups (lib/receive/committer.h).  0: one request per process (plain CGI),
	 * one direct commit.
	 */
	int		 long_lived;
	/* The body ends where the stream ends (FastCGI: chunked bodies come
	 * without a length).  0: read exactly CONTENT_LENGTH when given. */
	int		 body_to_eof;
	int		 body_read;	/* read to its end, or discarded */
};

/* Set `r` up for the FastCGI request `fr` (accepted; not owned). */
void	request_init_fcgi(struct request *r, FCGX_Request *fr);

/* request_next_fcgi's answers. */
#define REQUEST_NEXT_READY	0	/* a request is in `fr` */
#define REQUEST_NEXT_WOKEN	(-1)	/* a signal came while waiting */
#define REQUEST_NEXT_AGAIN	(-2)	/* a connection ended before a request */
#define REQUEST_NEXT_FAILED	(-3)	/* the listening socket failed (errno) */

/*
 * The next FastCGI request into `fr`, as FCGX_Accept_r does — but a signal
 * can end only the waiting, never a connection in hand.  Waits (with the
 * signal mask `waitmask`; the caller blocks the wake signals everywhere
 * else) for the next request on the connection the server kept open
 * (FCGI_KEEP_CONN), or for a new connection on `listen_fd`.  Once one is
 * here, libfcgi reads its begin record and parameters with the caller's
 * own mask, each read(2) waiting at most `params_timeout_ms`.
 *
 * Why not FCGX_Accept_r alone: a signal meant for its accept(2) can land
 * in what follows it (a 2 s poll on the new connection, the parameters'
 * reads), and libfcgi then drops that connection; after
 * FCGX_ShutdownPending, its accept loop can spin on a closed descriptor
 * (libfcgi 2.4.2 OS_Accept; docs/fastcgi-stop.md).
 *
 * `fr`: set up with FCGX_InitRequest(fr, -1, 0) — listening socket -1, so
 * that libfcgi never accepts a connection itself — and finished
 * (FCGX_Finish_r) after each request.  New connections are close-on-exec.
 * Returns a REQUEST_NEXT_* code; on REQUEST_NEXT_WOKEN a kept connection
 * stays open in `fr`.
 */
int	request_next_fcgi(FCGX_Request *fr, int listen_fd,
	    const sigset_t *waitmask, int params_timeout_ms);
/*
 * Finish the request request_next_fcgi gave (FCGX_Finish_r: the answer's
 * last records go out) and, unless the server keeps the connection,
 * close it lingering at most 2 s in all for the server to close first
 * (receive/request.c, linger_close).
 */
void	request_finish_fcgi(FCGX_Request *fr);
/*
 * systemd socket activation (sd_listen_fds(3)'s protocol): when
 * LISTEN_PID names this process, LISTEN_FDS must be 1 and fd 3 a
 * listening stream socket (a unit's .socket with one ListenStream=); it
 * is moved to fd 0, where FCGX_IsCGI and request_next_fcgi find the
 * FastCGI socket that spawn-fcgi and lighttpd hand over, and LISTEN_PID,
 * LISTEN_FDS and LISTEN_FDNAMES are unset (a handler or our own re-exec
 * after an upgrade must not take them for its own; the socket stays on
 * fd 0 across that exec).  Call once, first, before any thread starts.
 * Returns 1 when it took the socket, 0 when the variables are absent or
 * meant for another process (nothing changed), -1 when they are ours but
 * wrong (logged: what systemd gave and what the unit should say).
 */
int	request_take_listen_fds(void);
/* Set `r` up for this process's plain CGI request. */
void	request_init_cgi(struct request *r);

/* The value of parameter `name` (a CGI variable: "REQUEST_METHOD",
 * "HTTP_WEBHOOK_ID"…), or NULL when absent. */
static inline const char *
request_param(struct request *r, const char *name)
{
	return r->ops->param(r, name);
}

/* Every value of parameter `name`, as request_ops.param_each. */
static inline int
request_param_each(struct request *r, const char *name,
    int (*each)(void *arg, const char *value), void *arg)
{
	return r->ops->param_each(r, name, each, arg);
}

/*
 * Read at most `want` bytes of the body into `buf`, waiting no later than
 * `deadline` (monotonic ns, util_mono_ns), on every protocol: the
 * request's total deadline, not a per-read timeout.  Returns the byte count,
 * 0 at the end of the body, REQUEST_READ_LATE or REQUEST_READ_ERROR.  A
 * read that fails after part of a chunk arrived reports the failure.
 */
static inline int
request_read(struct request *r, char *buf, size_t want, int64_t deadline)
{
	return r->ops->read(r, buf, want, deadline);
}

/* The body was read: FastCGI lets the next read on a kept connection wait
 * without a limit again. */
static inline void
request_read_done(struct request *r)
{
	if (r->ops->read_done != NULL)
		r->ops->read_done(r);
}

/*
 * Answer: "Status: STATUS REASON", a text/plain body `text` (a short fixed
 * text: nothing of the request is echoed, the provider shows our first
 * 2 KB to account admins), `extra_header` (whole "Name: value\r\n" lines,
 * or NULL), and X-Webhook-Inbox: receiver, by which `webhook-drain send`
 * tells our answer from the web server's own.  Call once per request.
 */
void	request_respond(struct request *r, int status, const char *reason,
	    const char *extra_header, const char *text);
/* As request_respond, with another Content-Type ("application/json"): a
 * provider's synchronous answer (Slack's challenge, Discord's PONG). */
void	request_respond_typed(struct request *r, int status, const char *reason,
	    const char *content_type, const char *extra_header, const char *text);

/*
 * Before a refusal: read and discard what is left of a plain-CGI body, up
 * to CONTENT_LENGTH (or EOF when there is none) and at most CGI_DRAIN_MAX
 * bytes (receive/request.c).  Apache's mod_cgid resets the client's connection
 * when a CGI program answers without reading its input.  Once per
 * request; nothing after the body was read, nothing for FastCGI.
 */
void	request_discard_input(struct request *r);

#endif
