/*
 * test_request: lib/receive/request.c — the answer's bytes, the plain-CGI
 * implementation (environment, stdin, stdout: each test runs in its own
 * forked process, so redirecting them is its own business), and the fake
 * that the receive tests and harnesses stand on; and request_next_fcgi
 * over a real listening socket, with the stop's wake signals.  The
 * FastCGI reads and writes run behind real servers in the end-to-end
 * suites.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/receive/request.h"
#include "lib/common/util.h"
#include "tests/fake_request.h"
#include "tests/check_common.h"

static char dir[] = "/tmp/webhook-test-request-XXXXXX";

/* A far deadline (monotonic ns). */
#define LATER	(util_mono_ns() + 60 * (int64_t)1000000000)

static void
fake_init(struct request *r, struct request_fake *f,
    const char *const *params, const char *body)
{
	memset(f, 0, sizeof *f);
	f->params = params;
	f->body = body;
	f->body_len = body ? strlen(body) : 0;
	f->late_at = -1;
	f->fail_at = -1;
	request_init_fake(r, f);
}

START_TEST(respond_head_and_text)
{
	struct request r;
	struct request_fake f;

	fake_init(&r, &f, NULL, NULL);
	request_respond(&r, 405, "Method Not Allowed", "Allow: POST\r\n",
	    "method not allowed\n");
	ck_assert_str_eq(f.out, "Status: 405 Method Not Allowed\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 19\r\n"
	    "X-Webhook-Inbox: receiver\r\nAllow: POST\r\n\r\n"
	    "method not allowed\n");
	ck_assert_int_eq(f.writes, 1);
}
END_TEST

static int
collect(void *arg, const char *v)
{
	struct buf *b = arg;

	return buf_printf(b, "[%s]", v);
}

static int
first_only(void *arg, const char *v)
{
	(void)v;
	++*(int *)arg;
	return -1;
}

START_TEST(fake_params_first_and_every)
{
	static const char *const p[] = { "A=1", "AB=2", "A=3", "B=", NULL };
	struct request r;
	struct request_fake f;
	struct buf b;
	int n = 0;

	fake_init(&r, &f, p, NULL);
	ck_assert_str_eq(request_param(&r, "A"), "1");
	ck_assert_str_eq(request_param(&r, "AB"), "2");
	ck_assert_str_eq(request_param(&r, "B"), "");
	ck_assert_ptr_null(request_param(&r, "C"));
	buf_init(&b, 100);
	ck_assert_int_eq(request_param_each(&r, "A", collect, &b), 0);
	ck_assert_str_eq(b.data, "[1][3]");
	buf_free(&b);
	/* A callback's -1 stops the walk and is returned. */
	ck_assert_int_eq(request_param_each(&r, "A", first_only, &n), -1);
	ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(fake_reads_in_chunks_then_fails_as_told)
{
	struct request r;
	struct request_fake f;
	char buf[16];

	fake_init(&r, &f, NULL, "0123456789");
	f.chunk = 4;
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 4);
	ck_assert_int_eq(request_read(&r, buf, 2, LATER), 2);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 4);
	ck_assert_int_eq(memcmp(buf, "6789", 4), 0);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 0);

	fake_init(&r, &f, NULL, "0123456789");
	f.late_at = 3;
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 3);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER),
	    REQUEST_READ_LATE);

	fake_init(&r, &f, NULL, "0123456789");
	f.fail_at = 0;
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER),
	    REQUEST_READ_ERROR);

	/* Like FastCGI, a stream read past its deadline is late. */
	fake_init(&r, &f, NULL, "0123456789");
	f.body_to_eof = 1;
	request_init_fake(&r, &f);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, util_mono_ns() - 1),
	    REQUEST_READ_LATE);
}
END_TEST

START_TEST(discard_once_and_not_after_the_body)
{
	struct request r;
	struct request_fake f;

	fake_init(&r, &f, NULL, "body");
	request_discard_input(&r);
	ck_assert(f.discarded);
	ck_assert_int_eq(f.consumed, 4);
	f.discarded = 0;
	request_discard_input(&r);
	ck_assert(!f.discarded);

	fake_init(&r, &f, NULL, "body");
	r.body_read = 1;
	request_discard_input(&r);
	ck_assert(!f.discarded);
}
END_TEST

/* stdin from a file holding `text`; stdout to DIR/NAME.out. */
static void
cgi_files(const char *name, const char *text)
{
	char in[256], out[256];

	snprintf(in, sizeof in, "%s/%s.in", dir, name);
	snprintf(out, sizeof out, "%s/%s.out", dir, name);
	check_write_file(in, text);
	ck_assert_ptr_nonnull(freopen(in, "r", stdin));
	ck_assert_ptr_nonnull(freopen(out, "w", stdout));
}

static char *
cgi_output(const char *name)
{
	char out[256];
	size_t len;

	fflush(stdout);
	snprintf(out, sizeof out, "%s/%s.out", dir, name);
	return util_read_file(out, 1 << 16, &len);
}

START_TEST(cgi_params_from_the_environment)
{
	struct request r;
	struct buf b;

	setenv("HTTP_WEBHOOK_SIGNATURE", "v1,abc", 1);
	unsetenv("HTTP_WEBHOOK_ID");
	request_init_cgi(&r);
	ck_assert(!r.long_lived && !r.body_to_eof);
	ck_assert_str_eq(request_param(&r, "HTTP_WEBHOOK_SIGNATURE"), "v1,abc");
	ck_assert_ptr_null(request_param(&r, "HTTP_WEBHOOK_ID"));
	buf_init(&b, 100);
	ck_assert_int_eq(request_param_each(&r, "HTTP_WEBHOOK_SIGNATURE",
	    collect, &b), 0);
	ck_assert_str_eq(b.data, "[v1,abc]");
	buf_reset(&b);
	ck_assert_int_eq(request_param_each(&r, "HTTP_WEBHOOK_ID", collect, &b),
	    0);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

/* A deadline far enough not to matter. */
static int64_t
later(void)
{
	return util_mono_ns() + 30 * (int64_t)1000000000;
}

START_TEST(cgi_reads_stdin_writes_stdout)
{
	struct request r;
	char buf[16], *out;

	cgi_files("rw", "hello");
	request_init_cgi(&r);
	ck_assert_int_eq(request_read(&r, buf, 3, later()), 3);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 2);
	ck_assert_int_eq(memcmp(buf, "lo", 2), 0);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 0);
	request_respond(&r, 200, "OK", NULL, "stored\n");
	out = cgi_output("rw");
	ck_assert_str_eq(out, "Status: 200 OK\r\nContent-Type: text/plain\r\n"
	    "Content-Length: 7\r\nX-Webhook-Inbox: receiver\r\n\r\nstored\n");
	free(out);
}
END_TEST

START_TEST(cgi_read_error)
{
	struct request r;
	char buf[16];

	request_init_cgi(&r);
	close(0);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()),
	    REQUEST_READ_ERROR);
}
END_TEST

/* Plain CGI has the request's deadline too (docs/DESIGN.md "The receiver's
 * answers", 408; docs/caps.md, RECEIVE_DEADLINE_S).  A client that sends
 * nothing more (a pipe kept open, nothing written) gets REQUEST_READ_LATE
 * at the deadline, not a process held until the web server's own timeout. */
START_TEST(cgi_read_deadline)
{
	struct request r;
	char buf[16];
	int p[2];
	int64_t t0;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(dup2(p[0], 0), 0);
	close(p[0]);
	ck_assert_int_eq(write(p[1], "ab", 2), 2);
	request_init_cgi(&r);
	t0 = util_mono_ns();
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, t0 + 200000000), 2);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, t0 + 200000000),
	    REQUEST_READ_LATE);
	ck_assert_int_ge(util_mono_ns() - t0, 190000000);
	close(p[1]);
}
END_TEST

/* Discarding reads CONTENT_LENGTH bytes, not what follows on stdin. */
START_TEST(cgi_discard_up_to_content_length)
{
	struct request r;
	char buf[16];

	cgi_files("discard", "0123456789");
	setenv("CONTENT_LENGTH", "6", 1);
	request_init_cgi(&r);
	request_discard_input(&r);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 4);
	ck_assert_int_eq(memcmp(buf, "6789", 4), 0);

	/* No CONTENT_LENGTH: to the end. */
	cgi_files("discard2", "0123456789");
	unsetenv("CONTENT_LENGTH");
	request_init_cgi(&r);
	request_discard_input(&r);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 0);
}
END_TEST

/* ---- FastCGI: request_next_fcgi, over a real listening Unix socket ---- */

/* FastCGI record types and the responder role (the FastCGI spec, 8). */
#define FCGI_BEGIN	1
#define FCGI_PARAMS	4

static sigset_t waitmask;	/* SIGUSR2 unblocked: the wait's mask */

static void
on_usr2(int sig)
{
	(void)sig;
}

/* SIGUSR2 blocked but for the wait, with a handler that lets it end a
 * system call (no SA_RESTART), as webhook.fcgi sets it up. */
static void
wake_setup(void)
{
	struct sigaction sa;
	sigset_t usr2;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, &waitmask);
	sigdelset(&waitmask, SIGUSR2);
	ck_assert_int_eq(FCGX_Init(), 0);
}

static struct sockaddr_un listen_addr;

/* A listening Unix socket in the test's directory. */
static int
listener(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&listen_addr, 0, sizeof listen_addr);
	listen_addr.sun_family = AF_UNIX;
	snprintf(listen_addr.sun_path, sizeof listen_addr.sun_path,
	    "%s/l%d.sock", dir, (int)getpid());
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&listen_addr,
	    sizeof listen_addr), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	return fd;
}

/* A client connection, queued until accepted. */
static int
client(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&listen_addr,
	    sizeof listen_addr), 0);
	return fd;
}

static void
send_all(int fd, const void *p, size_t len)
{
	ck_assert_int_eq(write(fd, p, len), (ssize_t)len);
}

/* One record: the 8-byte header, then `len` bytes of content. */
static void
send_record(int fd, int type, const void *content, size_t len)
{
	unsigned char h[8] = { 1, (unsigned char)type, 0, 1,
	    (unsigned char)(len >> 8), (unsigned char)len, 0, 0 };

	send_all(fd, h, sizeof h);
	if (len > 0)
		send_all(fd, content, len);
}

/* A responder's begin record (keep: FCGI_KEEP_CONN). */
static void
send_begin(int fd, int keep)
{
	unsigned char b[8] = { 0, 1, (unsigned char)keep, 0, 0, 0, 0, 0 };

	send_record(fd, FCGI_BEGIN, b, sizeof b);
}

/* "NAME=value" as one short name-value pair, split into two PARAMS
 * records `pause_ms` apart, then the empty one that ends them. */
static void
send_params(int fd, const char *name, const char *value, int pause_ms)
{
	unsigned char nv[256];
	size_t nl = strlen(name), vl = strlen(value), half;

	ck_assert(nl < 128 && vl < 128 && 2 + nl + vl <= sizeof nv);
	nv[0] = (unsigned char)nl;
	nv[1] = (unsigned char)vl;
	memcpy(nv + 2, name, nl);
	memcpy(nv + 2 + nl, value, vl);
	half = (2 + nl + vl) / 2;
	send_record(fd, FCGI_PARAMS, nv, half);
	if (pause_ms > 0)
		usleep((useconds_t)pause_ms * 1000);
	send_record(fd, FCGI_PARAMS, nv + half, 2 + nl + vl - half);
	send_record(fd, FCGI_PARAMS, NULL, 0);
}

/* A thread that sends SIGUSR2 to `target` every 2 ms until told to stop:
 * the stop's wake signals, as serve() sends them. */
struct poker {
	pthread_t	 tid;
	pthread_t	 target;
	int		 stop;
	int		 sent;
};

static void *
poke_main(void *arg)
{
	struct poker *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		pthread_kill(p->target, SIGUSR2);
		p->sent++;
		usleep(2000);
	}
	return NULL;
}

static void
poker_start(struct poker *p)
{
	memset(p, 0, sizeof *p);
	p->target = pthread_self();
	ck_assert_int_eq(pthread_create(&p->tid, NULL, poke_main, p), 0);
}

static int
poker_stop(struct poker *p)
{
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_join(p->tid, NULL);
	return p->sent;
}

/* A client that speaks after `pause_ms`, from its own thread. */
struct slow_client {
	pthread_t	 tid;
	int		 fd;
	int		 pause_ms;
};

static void *
slow_main(void *arg)
{
	struct slow_client *c = arg;

	usleep((useconds_t)c->pause_ms * 1000);
	send_begin(c->fd, 0);
	send_params(c->fd, "REQUEST_METHOD", "POST", c->pause_ms);
	return NULL;
}

START_TEST(next_woken_while_waiting_accepts_nothing)
{
	FCGX_Request fr;
	struct poker p;
	int lfd, c;

	wake_setup();
	lfd = listener();
	FCGX_InitRequest(&fr, -1, 0);
	poker_start(&p);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_WOKEN);
	poker_stop(&p);
	ck_assert_int_eq(fr.ipcFd, -1);
	/* A connection made after the wake waits in the queue for the next
	 * call, which serves it. */
	c = client();
	send_begin(c, 0);
	send_params(c, "REQUEST_METHOD", "POST", 0);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_READY);
	ck_assert_str_eq(FCGX_GetParam("REQUEST_METHOD", fr.envp), "POST");
	FCGX_Finish_r(&fr);
	close(c);
	close(lfd);
}
END_TEST

START_TEST(next_wake_signals_never_end_a_connection_in_hand)
{
	struct slow_client sc;
	FCGX_Request fr;
	struct poker p;
	int lfd, sent;

	/* The client connects first and speaks 200 ms later, its parameters
	 * in two records another 200 ms apart, while wake signals come every
	 * 2 ms: each read waits on, and the request arrives whole.  (libfcgi's
	 * own accept dropped this connection at the first signal.) */
	wake_setup();
	lfd = listener();
	sc.fd = client();
	sc.pause_ms = 200;
	FCGX_InitRequest(&fr, -1, 0);
	ck_assert_int_eq(pthread_create(&sc.tid, NULL, slow_main, &sc), 0);
	poker_start(&p);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_READY);
	sent = poker_stop(&p);
	pthread_join(sc.tid, NULL);
	ck_assert_int_gt(sent, 10);
	ck_assert_str_eq(FCGX_GetParam("REQUEST_METHOD", fr.envp), "POST");
	FCGX_Finish_r(&fr);
	close(sc.fd);
	close(lfd);
}
END_TEST

/* The number of open descriptors of this process. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

START_TEST(next_connection_that_ends_or_stalls_is_closed_then_again)
{
	FCGX_Request fr;
	int lfd, c, fds;
	int64_t t0;

	wake_setup();
	lfd = listener();
	FCGX_InitRequest(&fr, -1, 0);
	fds = open_fds();
	/* Closed before its begin record. */
	c = client();
	close(c);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_AGAIN);
	ck_assert_int_eq(fr.ipcFd, -1);
	ck_assert_int_eq(open_fds(), fds);
	/* Silent after its begin record: given up after the parameters'
	 * timeout (100 ms here), not waited on for ever. */
	c = client();
	send_begin(c, 0);
	t0 = util_mono_ns();
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 100),
	    REQUEST_NEXT_AGAIN);
	ck_assert_int_ge(util_mono_ns() - t0, 90 * 1000000);
	ck_assert_int_eq(fr.ipcFd, -1);
	ck_assert_int_eq(open_fds(), fds + 1);	/* our end of c only */
	close(c);
	close(lfd);
}
END_TEST

START_TEST(next_kept_connection_woken_stays_open_for_its_next_request)
{
	FCGX_Request fr;
	struct poker p;
	int lfd, c, kept;

	wake_setup();
	lfd = listener();
	FCGX_InitRequest(&fr, -1, 0);
	c = client();
	send_begin(c, 1);
	send_params(c, "REQUEST_METHOD", "POST", 0);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_READY);
	ck_assert(fr.keepConnection);
	kept = fr.ipcFd;
	FCGX_Finish_r(&fr);
	ck_assert_int_eq(fr.ipcFd, kept);
	/* Idle: a wake ends the wait and keeps the connection. */
	poker_start(&p);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_WOKEN);
	poker_stop(&p);
	ck_assert_int_eq(fr.ipcFd, kept);
	/* Its next request comes on it, not on a new connection. */
	send_begin(c, 0);
	send_params(c, "REQUEST_METHOD", "GET", 0);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_READY);
	ck_assert_int_eq(fr.ipcFd, kept);
	ck_assert_str_eq(FCGX_GetParam("REQUEST_METHOD", fr.envp), "GET");
	ck_assert(!fr.keepConnection);
	FCGX_Finish_r(&fr);
	ck_assert_int_eq(fr.ipcFd, -1);	/* closed: not kept this time */
	close(c);
	close(lfd);
}
END_TEST

START_TEST(next_over_tcp_answers_without_nagle_delay)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof a;
	FCGX_Request fr;
	int lfd, c, on = 0;

	/* spawn-fcgi -p: a TCP listener on 127.0.0.1.  libfcgi sets
	 * TCP_NODELAY on what it accepts; so must we, or each answer's last
	 * segment may wait for the server's delayed ACK. */
	wake_setup();
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(lfd, 8), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&a, sizeof a), 0);
	send_begin(c, 0);
	send_params(c, "REQUEST_METHOD", "POST", 0);
	FCGX_InitRequest(&fr, -1, 0);
	ck_assert_int_eq(request_next_fcgi(&fr, lfd, &waitmask, 5000),
	    REQUEST_NEXT_READY);
	len = sizeof on;
	ck_assert_int_eq(getsockopt(fr.ipcFd, IPPROTO_TCP, TCP_NODELAY, &on,
	    &len), 0);
	ck_assert_int_eq(on, 1);
	FCGX_Finish_r(&fr);
	close(c);
	close(lfd);
}
END_TEST

START_TEST(next_on_what_is_not_a_listening_socket_fails)
{
	FCGX_Request fr;
	int p[2];

	wake_setup();
	ck_assert_int_eq(pipe(p), 0);
	FCGX_InitRequest(&fr, -1, 0);
	ck_assert_int_eq(request_next_fcgi(&fr, p[0], &waitmask, 5000),
	    REQUEST_NEXT_FAILED);
	ck_assert_int_eq(errno, ENOTSOCK);
	close(p[0]);
	close(p[1]);
}
END_TEST

/*
 * The activation tests put sockets on fd 3, where Check keeps its own
 * channel to the runner in the test's process: each runs its body in a
 * child of its own, which reports a failed expectation on stderr (the
 * test's log) and exits 1; the test asserts that the child exited 0.
 */
#define EXPECT(c) do {							\
	if (!(c)) {							\
		fprintf(stderr, "%s:%d: expected %s\n", __FILE__,	\
		    __LINE__, #c);					\
		_exit(1);						\
	}								\
} while (0)

static void
in_child(void (*body)(void))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		body();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "an expectation failed in the child (status %d): see above", st);
}

/* Set the activation variables as systemd does for process `pid`. */
static void
activation_env(long pid, const char *fds)
{
	char v[32];

	snprintf(v, sizeof v, "%ld", pid);
	EXPECT(setenv("LISTEN_PID", v, 1) == 0);
	EXPECT(setenv("LISTEN_FDS", fds, 1) == 0);
	EXPECT(setenv("LISTEN_FDNAMES", "webhook-fcgi.socket", 1) == 0);
}

/* Is `fd` a listening socket? */
static int
is_listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof on;

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on;
}

/* A listening socket on fd 3, as systemd passes it; fd 0 /dev/null. */
static void
socket_on_fd_3(void)
{
	int lfd = listener(), null = open("/dev/null", O_RDONLY);

	EXPECT(null >= 0 && dup2(null, 0) == 0);
	EXPECT(dup2(lfd, 3) == 3);
	if (lfd != 3)
		close(lfd);
}

static void
takes_socket(void)
{
	FCGX_Request fr;
	int c;

	socket_on_fd_3();
	activation_env((long)getpid(), "1");
	EXPECT(request_take_listen_fds() == 1);
	EXPECT(is_listening(0));
	EXPECT(fcntl(3, F_GETFD) == -1);	/* closed */
	EXPECT(getenv("LISTEN_PID") == NULL);
	EXPECT(getenv("LISTEN_FDS") == NULL);
	EXPECT(getenv("LISTEN_FDNAMES") == NULL);
	/* Kept across an exec (the upgrade's): not close-on-exec. */
	EXPECT((fcntl(0, F_GETFD) & FD_CLOEXEC) == 0);
	/* libfcgi takes it for FastCGI, and a request arrives through it. */
	EXPECT(FCGX_IsCGI() == 0);
	/* The helpers below record Check's checkpoints on fd 3, which
	 * must not become the client's socket: /dev/null takes it. */
	EXPECT(open("/dev/null", O_WRONLY) == 3);
	c = client();
	send_begin(c, 0);
	send_params(c, "REQUEST_METHOD", "POST", 0);
	FCGX_InitRequest(&fr, -1, 0);
	EXPECT(request_next_fcgi(&fr, 0, &waitmask, 5000) == REQUEST_NEXT_READY);
	EXPECT(strcmp(FCGX_GetParam("REQUEST_METHOD", fr.envp), "POST") == 0);
	FCGX_Finish_r(&fr);
	close(c);
	/* Once taken, a second call finds nothing. */
	EXPECT(request_take_listen_fds() == 0);
}

START_TEST(listen_fds_moves_systemds_socket_to_fd_0)
{
	wake_setup();
	in_child(takes_socket);
}
END_TEST

static void
leaves_alone(void)
{
	socket_on_fd_3();
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	EXPECT(request_take_listen_fds() == 0);
	/* Our parent's (a shell started under a socket unit). */
	activation_env((long)getppid(), "1");
	EXPECT(request_take_listen_fds() == 0);
	EXPECT(!is_listening(0));
	EXPECT(is_listening(3));
	EXPECT(strcmp(getenv("LISTEN_FDS"), "1") == 0);
	activation_env((long)getpid(), "1");
	setenv("LISTEN_PID", "12x", 1);
	EXPECT(request_take_listen_fds() == 0);
	EXPECT(is_listening(3));
	EXPECT(!is_listening(0));
}

START_TEST(listen_fds_for_another_process_or_absent_change_nothing)
{
	in_child(leaves_alone);
}
END_TEST

static void
refuses(void)
{
	int p[2];

	socket_on_fd_3();
	/* Two sockets, none, garbage: the unit is wrong, said and refused. */
	activation_env((long)getpid(), "2");
	EXPECT(request_take_listen_fds() == -1);
	activation_env((long)getpid(), "0");
	EXPECT(request_take_listen_fds() == -1);
	activation_env((long)getpid(), "one");
	EXPECT(request_take_listen_fds() == -1);
	EXPECT(is_listening(3));
	EXPECT(!is_listening(0));
	/* fd 3 a socket that does not listen (Accept=yes would hand a
	 * connection), or a pipe. */
	EXPECT(dup2(client(), 3) == 3);
	activation_env((long)getpid(), "1");
	EXPECT(request_take_listen_fds() == -1);
	EXPECT(pipe(p) == 0 && dup2(p[0], 3) == 3);
	EXPECT(request_take_listen_fds() == -1);
	EXPECT(!is_listening(0));
}

START_TEST(listen_fds_wrong_for_us_is_refused)
{
	in_child(refuses);
}
END_TEST

static Suite *
request_suite(void)
{
	Suite *s = suite_create("request");
	TCase *tc = tcase_create("request");

	tcase_add_test(tc, respond_head_and_text);
	tcase_add_test(tc, fake_params_first_and_every);
	tcase_add_test(tc, fake_reads_in_chunks_then_fails_as_told);
	tcase_add_test(tc, discard_once_and_not_after_the_body);
	tcase_add_test(tc, cgi_params_from_the_environment);
	tcase_add_test(tc, cgi_reads_stdin_writes_stdout);
	tcase_add_test(tc, cgi_read_error);
	tcase_add_test(tc, cgi_read_deadline);
	tcase_add_test(tc, cgi_discard_up_to_content_length);
	tcase_add_test(tc, next_woken_while_waiting_accepts_nothing);
	tcase_add_test(tc, next_wake_signals_never_end_a_connection_in_hand);
	tcase_add_test(tc, next_connection_that_ends_or_stalls_is_closed_then_again);
	tcase_add_test(tc, next_kept_connection_woken_stays_open_for_its_next_request);
	tcase_add_test(tc, next_over_tcp_answers_without_nagle_delay);
	tcase_add_test(tc, next_on_what_is_not_a_listening_socket_fails);
	tcase_add_test(tc, listen_fds_moves_systemds_socket_to_fd_0);
	tcase_add_test(tc, listen_fds_for_another_process_or_absent_change_nothing);
	tcase_add_test(tc, listen_fds_wrong_for_us_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(request_suite, dir);
}
