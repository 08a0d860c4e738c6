/*
 * webhook.fcgi: the FastCGI (and plain CGI) responder's main — signals,
 * CGI or FastCGI, the request threads.  Each request goes through
 * lib/receive/receive.h (the status table of docs/DESIGN.md "The receiver's
 * answers") over lib/receive/request.h (the protocol), with the config from
 * lib/receive/site.h.
 *
 * FastCGI when fd 0 is a listening socket (FCGX_IsCGI says no) — or when
 * systemd passed one on fd 3 (LISTEN_FDS, moved to fd 0) — else one
 * plain CGI request from the environment and stdin.
 *
 * In FastCGI mode the process runs WEBHOOK_THREADS request threads (default
 * 8) so that a web server that sends it several requests at once (lighttpd,
 * nginx, mod_proxy_fcgi) gets them handled together: their deliveries are
 * committed in one transaction and one sync (lib/receive/committer.h).  The main
 * thread only waits for SIGTERM/SIGUSR1/SIGHUP: the threads then finish the
 * request in hand and stop taking new ones.
 */
#include <errno.h>
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
#include <unistd.h>

#include <fcgiapp.h>
#include <sodium.h>

#include "lib/store/inbox.h"
#include "lib/receive/receive.h"
#include "lib/receive/request.h"
#include "lib/receive/site.h"
#include "lib/receive/upgrade.h"
#include "lib/common/util.h"
#include "lib/program/version.h"

/* Request threads per FastCGI process (WEBHOOK_THREADS): enough to batch
 * the provider's 5 deliveries in flight with room for a busy server; a
 * thread costs a stack and a 64 KiB read buffer. */
#define THREADS_DEFAULT		8
#define THREADS_MAX		64
/* A new connection's begin record and parameters: each read waits at
 * most this long.  A web server sends them as it connects; one that does
 * not must not hold a thread, nor a stop, for longer than the provider
 * waits for an answer. */
#define PARAMS_TIMEOUT_MS	15000

/* What one request thread owns. */
struct worker {
	struct receive	 rv;
	FCGX_Request	 req;
	pthread_t	 tid;
	const int	*stop;	/* set: end before the next request */
};

/* The config in use, shared by the request threads. */
static struct site_cache sites;

static void
worker_init(struct worker *w)
{
	memset(w, 0, sizeof *w);
	receive_init(&w->rv);
}

static void
worker_free(struct worker *w)
{
	receive_free(&w->rv);
}

/* Where we were started from (lib/receive/upgrade.h), and webhook.conf beside
 * it: the path the web server runs, not a symlink's target.  argv[0] when
 * it is a path (lighttpd's bin-path, the wrapper's exec, and our own
 * re-exec after an upgrade), else the kernel's record of the exec. */
static void
find_self(const char *argv0)
{
	const char *p = argv0 != NULL && strchr(argv0, '/') != NULL ? argv0 :
	    (const char *)getauxval(AT_EXECFN);

	upgrade_init(p);
	site_cache_init(&sites, upgrade_path());
}

/* SIGUSR2 interrupts a thread waiting for a connection at shutdown: it
 * gets through only in that wait (request_next_fcgi's `waitmask`), so it
 * never interrupts a connection in hand. */
static sigset_t wake_set, wait_mask;

static void
on_wake(int sig)
{
	(void)sig;
}

/*
 * One request on w->req: wait for it (a connection on the listening
 * socket, fd 0, or the next request on the one the server kept open),
 * handle it and finish it.  SIGUSR2 can interrupt only the waiting.
 * Returns request_next_fcgi's code.
 */
static int
serve_one(struct worker *w)
{
	struct request r;
	int rc;

	rc = request_next_fcgi(&w->req, 0, &wait_mask, PARAMS_TIMEOUT_MS);
	if (rc != REQUEST_NEXT_READY)
		return rc;
	request_init_fcgi(&r, &w->req);
	(void)receive_handle(&w->rv, &sites, &r);
	request_finish_fcgi(&w->req);
	/* Replaced by a file that passed the checks: stop as on SIGTERM (the
	 * main thread sees the signal is ours, and starts the new program
	 * once every thread has finished the request in hand). */
	if (upgrade_due())
		kill(getpid(), SIGTERM);
	return REQUEST_NEXT_READY;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	int rc;

	/* No mutex around the accept (libfcgi's threaded example has one
	 * for platforms whose accept(2) is not thread-safe; Linux's is): the
	 * kernel wakes one blocked thread per connection, where a mutex cost
	 * a second wake-up per request. */
	for (;;) {
		/* Told to stop while busy: end after the request in hand,
		 * before taking another (no signal needed). */
		if (__atomic_load_n(w->stop, __ATOMIC_ACQUIRE))
			break;
		rc = serve_one(w);
		if (rc == REQUEST_NEXT_FAILED) {
			log_msg("accept on the FastCGI socket: %s",
			    strerror(errno));
			break;
		}
		/* REQUEST_NEXT_WOKEN means "stop" only when w->stop says so
		 * (checked above). */
	}
	/* A connection the server kept open, idle: close it now, without
	 * libfcgi's 2 s linger for the server to close first (the next
	 * program would not have it anyway: close-on-exec). */
	if (w->req.ipcFd >= 0)
		close(w->req.ipcFd);
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

/* Wake the threads waiting for a connection (SIGUSR2: EINTR there
 * only).  One about to wait may take it just before: hence the repeats. */
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
 * waiting for a connection is woken by SIGUSR2, which gets through only
 * there.
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
		/* Listening socket -1: request_next_fcgi accepts, never
		 * libfcgi (request.h). */
		if (FCGX_InitRequest(&w[i].req, -1, 0) != 0 ||
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
	/* Not FCGX_ShutdownPending: we never enter libfcgi's accept loop,
	 * which it sends spinning (request.h). */
	while (join_finished(w, nthreads) > 0) {
		poke(w, nthreads);
		usleep(20000);
	}
	for (i = 0; i < nthreads; i++)
		worker_free(&w[i]);
	free(w);
	return rc;
}

/* Plain CGI: this process's one request, then the inbox's checkpoint
 * turn once the answer is out. */
static int
serve_cgi(void)
{
	struct worker w;
	struct request r;

	inbox_process_short_lived();
	worker_init(&w);
	request_init_cgi(&r);
	(void)receive_handle(&w.rv, &sites, &r);
	worker_free(&w);
	/* The answer is complete once stdout closes: the web server need not
	 * wait for a checkpoint turn (inbox.h, short_lived). */
	fclose(stdout);
	site_maintain(&sites);
	/* No site_cache_free: the process ends here, and the kernel drops
	 * the inbox's files, locks and mappings at exit for less than
	 * closing them one by one and freeing SQLite's memory costs
	 * (docs/cgi.md).  Nothing of that close is durable: a short-lived
	 * connection does not checkpoint on close (inbox.h). */
	return 0;
}

/*
 * Every thread blocks the stop signals: the main thread reads them from
 * the signalfd returned (-1 on failure, logged).  libfcgi's own
 * SIGTERM/SIGUSR1 handlers never run.  SIGUSR2, blocked too, is the wake:
 * it gets through only in request_next_fcgi's wait (wait_mask).
 */
static int
stop_signals(void)
{
	struct sigaction sa;
	sigset_t stop;
	int sfd;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGUSR1);
	sigaddset(&stop, SIGHUP);
	sigemptyset(&wake_set);
	sigaddset(&wake_set, SIGUSR2);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_wake;	/* no SA_RESTART: the wait returns EINTR */
	sigaction(SIGUSR2, &sa, NULL);
	/* A server that closes its connection while we answer must not kill
	 * us (libfcgi reports the write error). */
	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	pthread_sigmask(SIG_BLOCK, &wake_set, &wait_mask);
	sigdelset(&wait_mask, SIGUSR2);
	if ((sfd = signalfd(-1, &stop, SFD_CLOEXEC)) == -1)
		log_msg("signalfd: %s", strerror(errno));
	return sfd;
}

/* libfcgi's own accept checks a TCP peer against FCGI_WEB_SERVER_ADDRS;
 * ours (request_next_fcgi) does not, and must not serve everyone where
 * the operator asked for a list. */
static int
tcp_allowlist_given(int fd)
{
	const char *list = getenv("FCGI_WEB_SERVER_ADDRS");
	struct sockaddr_storage sa;
	socklen_t len = sizeof sa;

	if (list == NULL || *list == '\0' ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) == -1)
		return 0;
	return sa.ss_family == AF_INET || sa.ss_family == AF_INET6;
}

int
main(int argc, char **argv)
{
	int sfd, rc, reexec = 0;

	log_init("webhook.fcgi");
	/* Started by a systemd .socket unit: its socket becomes fd 0, as
	 * spawn-fcgi's is (conf/systemd/webhook-fcgi.socket).  First: libfcgi
	 * decides CGI or FastCGI once, at the first FCGX_IsCGI. */
	if (request_take_listen_fds() == -1)
		return 1;
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
	/* Bodies over 128 KiB get their own mapping and go back to the system
	 * when freed.  glibc would otherwise raise this threshold after the
	 * first large free and keep every later large body in the heap. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (sodium_init() < 0) {
		log_msg("libsodium failed to initialise");
		return 1;
	}
	find_self(argv[0]);

	if (FCGX_IsCGI())
		return serve_cgi();
	if (FCGX_Init() != 0) {
		log_msg("FastCGI initialisation failed");
		return 1;
	}
	if (tcp_allowlist_given(0)) {
		log_msg("FCGI_WEB_SERVER_ADDRS is not supported: listen on a Unix "
		    "socket, or on 127.0.0.1 with a firewall (docs/fastcgi-stop.md)");
		return 1;
	}
	if ((sfd = stop_signals()) == -1)
		return 1;
	rc = serve(sfd, thread_count(), &reexec);
	site_cache_free(&sites);
	if (!reexec)
		goto out;
	/*
	 * Upgraded: every request in hand was answered.  Become the new
	 * program in this same process: the listening socket (fd 0) stays
	 * open, so connections the server made meanwhile wait in its queue
	 * for the new program instead of being refused or reset (a process
	 * that exited would lose them: lighttpd answers 500), and the server
	 * sees the same process.  Every other descriptor is close-on-exec; a
	 * stop signal that came meanwhile stays pending (blocked) for the
	 * new program.
	 */
	log_msg("starting the new %s", upgrade_path());
	upgrade_exec(argv);
	/* It answered the probe a moment ago, from the descriptor executed
	 * here: out of memory, or of processes.  Exit: the web server starts
	 * us anew. */
	log_msg("cannot start the new %s: %s; exiting", upgrade_path(),
	    strerror(errno));
	rc = 1;
out:
	close(sfd);
	return rc;
}
