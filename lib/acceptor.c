/*
 * acceptor: the election and the hand-over of listening sockets.  See
 * acceptor.h.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "acceptor.h"

extern char **environ;

/* Tries to bind or connect while an election settles: a new acceptor
 * binds, then listens (connect is refused in between), and a dying one
 * may take our socket and vanish before answering. */
#define JOIN_TRIES		100
#define JOIN_RETRY_NS		5000000		/* 5 ms */
/* Standbys waiting to be admitted at once (listen(2) backlog). */
#define CTL_BACKLOG		64
/* Descriptors we make room for in one message: one is expected; more are
 * received (the kernel closes what does not fit) and refused. */
#define FDS_MAX			4

static void
set_err(struct buf *err, const char *what, int e)
{
	buf_reset(err);
	(void)buf_printf(err, "%s: %s", what, strerror(e));
}

static void
hash_string(crypto_generichash_state *h, const char *s)
{
	/* With its NUL: "ab" "c" and "a" "bc" differ. */
	crypto_generichash_update(h, (const unsigned char *)s, strlen(s) + 1);
}

/* The identity of the file at `path` (device and inode), or nothing when
 * it cannot be read. */
static void
hash_file(crypto_generichash_state *h, const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1)
		return;
	crypto_generichash_update(h, (const unsigned char *)&st.st_dev,
	    sizeof st.st_dev);
	crypto_generichash_update(h, (const unsigned char *)&st.st_ino,
	    sizeof st.st_ino);
}

int
acceptor_group_name(struct acceptor_group *g, struct buf *err)
{
	static const char prefix[] = "webhook.fcgi-";
	crypto_generichash_state h;
	unsigned char digest[16];
	char path[PATH_MAX], hex[sizeof digest * 2 + 1];
	uid_t uid = getuid();
	ssize_t n;
	char **e;

	memset(g, 0, sizeof *g);
	if (crypto_generichash_init(&h, NULL, 0, sizeof digest) != 0) {
		buf_reset(err);
		(void)buf_printf(err, "crypto_generichash_init failed");
		return -1;
	}
	crypto_generichash_update(&h, (const unsigned char *)&uid, sizeof uid);
	if ((n = readlink("/proc/self/exe", path, sizeof path - 1)) <= 0) {
		set_err(err, "/proc/self/exe", errno);
		return -1;
	}
	path[n] = '\0';
	/* A replaced binary reads "PATH (deleted)": old and new versions of
	 * the program never share a group (nor this file's protocol). */
	hash_string(&h, path);
	if (getcwd(path, sizeof path) == NULL) {
		set_err(err, "getcwd", errno);
		return -1;
	}
	hash_string(&h, path);
	/* Names are as seen in our mount namespace and root; abstract
	 * sockets are shared by the whole network namespace.  Two
	 * containers on the host's network, or two chroots, may run the
	 * same paths over different files (another webhook.conf, another
	 * inbox): the namespace and the files themselves tell them apart. */
	if ((n = readlink("/proc/self/ns/mnt", path, sizeof path - 1)) > 0) {
		path[n] = '\0';
		hash_string(&h, path);
	}
	hash_file(&h, "/proc/self/exe");
	hash_file(&h, "/");
	hash_file(&h, ".");
	for (e = environ; e != NULL && *e != NULL; e++)
		hash_string(&h, *e);
	crypto_generichash_final(&h, digest, sizeof digest);
	sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);

	/* Abstract namespace (unix(7)): sun_path[0] is NUL, the name is the
	 * bytes after it, exactly `len` long; nothing on disk to clean up. */
	g->sa.sun_family = AF_UNIX;
	memcpy(g->sa.sun_path + 1, prefix, sizeof prefix - 1);
	memcpy(g->sa.sun_path + sizeof prefix, hex, sizeof hex - 1);
	g->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	    sizeof prefix - 1 + sizeof hex - 1);
	(void)snprintf(g->name, sizeof g->name, "@%s%s", prefix, hex);
	return 0;
}

static void
set_timeout(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static void
set_send_timeout(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Is the process at the other end of `fd` one of our user's?  0 yes, -1
 * no (reason in err). */
static int
same_user(int fd, struct buf *err)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		set_err(err, "SO_PEERCRED", errno);
		return -1;
	}
	if (cred.uid != getuid()) {
		buf_reset(err);
		(void)buf_printf(err, "the other end is uid %ld, not ours (%ld)",
		    (long)cred.uid, (long)getuid());
		return -1;
	}
	return 0;
}

static void
nap(void)
{
	struct timespec ts = { 0, JOIN_RETRY_NS };

	(void)nanosleep(&ts, NULL);
}

/* Say hello on the connected `s` and read the answer.  Returns
 * ACCEPTOR_STANDBY, ACCEPTOR_ALONE (refused; err says why), or -1 when the
 * acceptor vanished before answering (try again). */
static int
hello(int s, struct buf *err)
{
	char byte = 'H', answer;
	ssize_t n;

	if (send(s, &byte, 1, MSG_NOSIGNAL) != 1) {
		if (errno == EPIPE || errno == ECONNRESET)
			return -1;
		set_err(err, "send to the acceptor", errno);
		return ACCEPTOR_ALONE;
	}
	set_timeout(s, ACCEPTOR_TIMEOUT_MS);
	n = recv(s, &answer, 1, 0);
	if (n == 0 || (n == -1 && errno == ECONNRESET))
		return -1;
	if (n == -1) {
		set_err(err, "no answer from the acceptor", errno);
		return ACCEPTOR_ALONE;
	}
	if (answer != 'Y') {
		buf_reset(err);
		(void)buf_printf(err, "the acceptor takes no more standbys");
		return ACCEPTOR_ALONE;
	}
	set_timeout(s, 0);
	return ACCEPTOR_STANDBY;
}

enum acceptor_role
acceptor_join(const struct acceptor_group *g, int *fd, struct buf *err)
{
	int i, s, rc;

	*fd = -1;
	for (i = 0; i < JOIN_TRIES; i++) {
		s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (s == -1) {
			set_err(err, "socket", errno);
			return ACCEPTOR_ALONE;
		}
		if (bind(s, (const struct sockaddr *)&g->sa, g->len) == 0) {
			if (listen(s, CTL_BACKLOG) == -1) {
				set_err(err, "listen", errno);
				close(s);
				return ACCEPTOR_ALONE;
			}
			*fd = s;
			return ACCEPTOR_LEAD;
		}
		if (errno != EADDRINUSE) {
			set_err(err, "bind", errno);
			close(s);
			return ACCEPTOR_ALONE;
		}
		/* A listener whose queue is full (anyone's: abstract names
		 * have no owner) would hold connect(2) for ever: bound it,
		 * and the hello, with SO_SNDTIMEO. */
		set_send_timeout(s, ACCEPTOR_TIMEOUT_MS);
		if (connect(s, (const struct sockaddr *)&g->sa, g->len) == -1) {
			int e = errno;
			close(s);
			/* Bound, not listening yet; or gone since our bind. */
			if (e == ECONNREFUSED || e == ENOENT) {
				nap();
				continue;
			}
			buf_reset(err);
			if (e == EAGAIN)
				(void)buf_printf(err, "connect: no room in the "
				    "acceptor's queue for %d ms",
				    ACCEPTOR_TIMEOUT_MS);
			else
				set_err(err, "connect", e);
			return ACCEPTOR_ALONE;
		}
		if (same_user(s, err) == -1) {
			close(s);
			return ACCEPTOR_ALONE;
		}
		rc = hello(s, err);
		if (rc == ACCEPTOR_STANDBY) {
			/* Passes may wait for a busy acceptor (the pings
			 * tell a busy one from a stopped one). */
			set_send_timeout(s, 0);
			*fd = s;
			return ACCEPTOR_STANDBY;
		}
		close(s);
		if (rc == ACCEPTOR_ALONE)
			return ACCEPTOR_ALONE;
		nap();
	}
	buf_reset(err);
	(void)buf_printf(err, "no acceptor settled after %d tries", JOIN_TRIES);
	return ACCEPTOR_ALONE;
}

int
acceptor_admit(int ctl, int *conn, struct buf *err)
{
	char byte;
	ssize_t n;
	int c;

	*conn = -1;
	if ((c = accept4(ctl, NULL, NULL, SOCK_CLOEXEC)) == -1) {
		set_err(err, "accept", errno);
		return -1;
	}
	if (same_user(c, err) == -1)
		goto fail;
	set_timeout(c, ACCEPTOR_TIMEOUT_MS);
	n = recv(c, &byte, 1, 0);
	if (n != 1 || byte != 'H') {
		if (n == -1)
			set_err(err, "recv from a standby", errno);
		else {
			buf_reset(err);
			(void)buf_printf(err, "a standby sent no hello");
		}
		goto fail;
	}
	set_timeout(c, 0);
	*conn = c;
	return 0;
fail:
	close(c);
	return -1;
}

int
acceptor_answer(int conn, int served)
{
	char byte = served ? 'Y' : 'N';

	return send(conn, &byte, 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

void
acceptor_ping(int conn)
{
	char byte = 'P';

	(void)send(conn, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int
acceptor_heard(int conn)
{
	char b[64];
	ssize_t n;
	int heard = 0;

	while ((n = recv(conn, b, sizeof b, MSG_DONTWAIT)) > 0)
		heard = 1;
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return -1;
	return heard;
}

/* A one-byte message at *byte, with room for ancillary data in
 * ctl[ctllen]. */
static void
message(struct msghdr *msg, struct iovec *iov, char *byte, void *ctl,
    size_t ctllen)
{
	memset(msg, 0, sizeof *msg);
	iov->iov_base = byte;
	iov->iov_len = 1;
	msg->msg_iov = iov;
	msg->msg_iovlen = 1;
	msg->msg_control = ctl;
	msg->msg_controllen = ctllen;
}

int
acceptor_pass(int conn, int fd)
{
	union {
		struct cmsghdr	hdr;
		char		space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr msg;
	struct cmsghdr *c;
	struct iovec iov;
	char byte = 'C';

	memset(&ctl, 0, sizeof ctl);
	message(&msg, &iov, &byte, ctl.space, sizeof ctl.space);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(conn, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* Is `fd` a stream socket? */
static int
is_stream(int fd)
{
	int v = 0;
	socklen_t len = sizeof v;

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) == 0 &&
	    v == SOCK_STREAM;
}

int
acceptor_receive(int conn)
{
	union {
		struct cmsghdr	hdr;
		char		space[CMSG_SPACE(sizeof(int) * FDS_MAX)];
	} cbuf;
	int fds[FDS_MAX], nfds, i;
	struct msghdr msg;
	struct cmsghdr *h;
	struct iovec iov;
	char byte;
	ssize_t n;

	for (;;) {
		message(&msg, &iov, &byte, cbuf.space, sizeof cbuf.space);
		n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		nfds = 0;
		for (h = CMSG_FIRSTHDR(&msg); h != NULL; h = CMSG_NXTHDR(&msg, h)) {
			size_t k;

			if (h->cmsg_level != SOL_SOCKET ||
			    h->cmsg_type != SCM_RIGHTS || h->cmsg_len < CMSG_LEN(0))
				continue;
			for (k = 0; k < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int) &&
			    nfds < FDS_MAX; k++)
				memcpy(&fds[nfds++], CMSG_DATA(h) + k * sizeof(int),
				    sizeof(int));
		}
		if (byte == 'C' && nfds == 1 && !(msg.msg_flags & MSG_CTRUNC) &&
		    is_stream(fds[0]))
			return fds[0];
		/* Not one connection: drop what came, wait for the next. */
		for (i = 0; i < nfds; i++)
			close(fds[i]);
	}
}
