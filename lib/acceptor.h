/*
 * acceptor: one process accepts for all its FastCGI siblings (issue 5).
 *
 * A web server runs several webhook.fcgi processes (lighttpd's max-procs,
 * mod_fcgid, spawn-fcgi -F), each accepting on its own listening socket
 * (or all on one).  Each then writes the inbox, and SQLite's locking
 * between processes costs: every commit re-reads pages the others changed
 * and retries its WAL read-mark while they commit.  One process with 32
 * request threads served 18-32 % more than 4 processes with 8 each, with a
 * third less CPU (bench/RESULTS.md, "Issue 5, fifth round" and sixth).
 *
 * So siblings elect one of them, the acceptor: the first to bind an
 * abstract Unix socket named after the group (unix(7)).  Every other one,
 * a standby, connects to it (SOCK_SEQPACKET) and from then on only
 * accepts connections on its own listening socket and passes each one to
 * the acceptor (SCM_RIGHTS), whose request threads serve it.  Every
 * process keeps its own listening socket for itself, so the socket lives
 * exactly as long as the process the server spawned; a server that
 * restarts a dead process finds its socket gone (lighttpd takes a socket
 * that still accepts for one it must not respawn).  Connections already
 * passed live on in the acceptor when a standby dies.
 *
 * When the acceptor is gone (it exited or was killed; the kernel frees the
 * name with its last descriptor), the standbys see their connection end
 * and elect again.  A standby that cannot pass a connection serves that
 * one itself.
 *
 * Siblings are processes that would answer any request identically: the
 * same user, executable, working directory and environment, in the same
 * mount namespace and root (abstract names are shared by a whole network
 * namespace: containers on the host's network must not meet).  The group
 * name is a hash of those.  (Not the parent: spawn-fcgi -F's children
 * outlive the spawn-fcgi that forked them, and some would find it, some
 * init.  Two servers running the same program for the same user in the
 * same environment do share one acceptor; their processes are
 * interchangeable.)
 *
 * Nothing depends on there being one acceptor: two processes writing one
 * inbox is what the inbox's locking is for.  So every failure leaves a
 * process serving its own socket (ACCEPTOR_ALONE) as before: the name
 * held by another user (the peer's uid is checked on both sides,
 * SO_PEERCRED), a refusal, no answer within ACCEPTOR_TIMEOUT_MS.
 */
#ifndef WEBHOOK_ACCEPTOR_H
#define WEBHOOK_ACCEPTOR_H

#include <sys/socket.h>
#include <sys/un.h>

#include "util.h"

/* Longest wait for the other side of a hand-over, ms: both sides are
 * local processes answering from their main thread's poll loop. */
#define ACCEPTOR_TIMEOUT_MS	2000
/* The acceptor pings every standby this often, ms; a standby that hears
 * nothing for ACCEPTOR_SILENCE_MS takes the acceptor for hung (stopped,
 * SIGSTOP) and serves its own socket (webhook.fcgi tries the group again
 * every 10 s): a stalled acceptor must not stall every process (as a stopped process never stalls the
 * others' WAL syncs, walsync.h). */
#define ACCEPTOR_PING_MS	1000
#define ACCEPTOR_SILENCE_MS	5000

enum acceptor_role {
	ACCEPTOR_LEAD,		/* we accept for the group */
	ACCEPTOR_STANDBY,	/* our socket is served by the acceptor */
	ACCEPTOR_ALONE		/* we accept on our own socket only */
};

/* The group's rendezvous: an abstract Unix socket address. */
struct acceptor_group {
	struct sockaddr_un	sa;
	socklen_t		len;
	char			name[64];	/* printable: "@webhook.fcgi-<hex>" */
};

/*
 * Name the group this process belongs to (see above): "\0webhook.fcgi-"
 * and 32 hex digits of a BLAKE2b hash (libsodium's crypto_generichash) of
 * the uid, /proc/self/exe's target, the working directory, the mount
 * namespace (/proc/self/ns/mnt), the device and inode of the executable,
 * of / and of the working directory, and every environment string.
 * Returns 0, or -1 with the reason in err.
 */
int	acceptor_group_name(struct acceptor_group *g, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Join the group.  Returns:
 *   ACCEPTOR_LEAD     *fd is the group's listening control socket: poll it
 *                     (POLLIN) and call acceptor_admit;
 *   ACCEPTOR_STANDBY  *fd is our connection to the acceptor: pass it our
 *                     connections (acceptor_pass) and poll it; POLLIN or
 *                     POLLHUP means the acceptor is gone (close *fd and
 *                     join again);
 *   ACCEPTOR_ALONE    *fd is -1, the reason in err: serve our socket
 *                     ourselves.
 * Blocks at most about ACCEPTOR_TIMEOUT_MS plus short retries while a
 * newly elected acceptor starts listening.  Descriptors are close-on-exec.
 */
enum acceptor_role acceptor_join(const struct acceptor_group *g, int *fd,
	    struct buf *err);

/*
 * The acceptor, when its control socket `ctl` is readable: take one
 * standby.  Checks its uid against ours and reads its hello, waiting at
 * most ACCEPTOR_TIMEOUT_MS.  Returns 0 with *conn, the standby's
 * connection (ours to close; read it with acceptor_receive), or -1 with
 * nothing left open and the reason in err.  Call acceptor_answer next.
 */
int	acceptor_admit(int ctl, int *conn, struct buf *err)
	    __attribute__((warn_unused_result));

/* Tell an admitted standby whether we take its connections (1) or not
 * (0: it serves its socket itself).  Returns 0, or -1 when the standby is
 * already gone. */
int	acceptor_answer(int conn, int served);

/*
 * A standby: pass the accepted connection `fd` to the acceptor on `conn`.
 * The caller still owns fd (close it after success: the acceptor holds
 * its own copy).  Returns 0, or -1 when the acceptor is gone (errno says
 * why): then serve fd yourself.  Blocks while the acceptor's queue on
 * `conn` is full.
 */
int	acceptor_pass(int conn, int fd) __attribute__((warn_unused_result));

/* The acceptor, every ACCEPTOR_PING_MS: tell the standby on `conn` that
 * we run.  Never blocks (a standby that reads nothing just misses it). */
void	acceptor_ping(int conn);

/* A standby, when `conn` is readable: read what the acceptor sent.
 * Returns 1 (pings: it runs), 0 (nothing to read), or -1 (it is gone). */
int	acceptor_heard(int conn);

/*
 * The acceptor: wait for the next connection a standby passes on `conn`.
 * Returns its descriptor (a stream socket, close-on-exec, ours to serve
 * and close), or -1 when the standby is gone or `conn` was shut down.
 * Messages that are not exactly one stream socket are dropped (their
 * descriptors closed).
 */
int	acceptor_receive(int conn) __attribute__((warn_unused_result));

#endif
