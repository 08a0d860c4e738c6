/*
 * test_acceptor: lib/acceptor.c — the group's name, the election, and the
 * passing of connections (SCM_RIGHTS over SOCK_SEQPACKET).  The processes
 * of a real group are in tests/e2e_acceptor.py; here one process plays
 * both sides (an acceptor and a standby may be two threads: the kernel
 * does not care).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/acceptor.h"
#include "tests/check_common.h"

static const char *
err_text(const struct buf *b)
{
	return b->data != NULL ? b->data : "";
}

/* A group of our own: the process's name with a test-specific suffix in
 * the environment, so that parallel runs never meet. */
static void
own_group(struct acceptor_group *g, const char *tag)
{
	struct buf err;
	char v[64];

	snprintf(v, sizeof v, "%s-%ld", tag, (long)getpid());
	setenv("TEST_ACCEPTOR_GROUP", v, 1);
	buf_init(&err, 256);
	ck_assert_msg(acceptor_group_name(g, &err) == 0, "%s", err_text(&err));
	buf_free(&err);
}

START_TEST(group_name_is_stable_and_follows_the_environment)
{
	struct acceptor_group a, b, c;
	size_t i;

	own_group(&a, "one");
	own_group(&b, "one");
	own_group(&c, "two");
	ck_assert_int_eq(a.len, b.len);
	ck_assert_int_eq(memcmp(&a.sa, &b.sa, a.len), 0);
	ck_assert_str_eq(a.name, b.name);
	ck_assert_str_ne(a.name, c.name);
	/* Abstract: a NUL, then the printable name without its '@'. */
	ck_assert_int_eq(a.sa.sun_path[0], '\0');
	ck_assert_int_eq((int)strlen(a.name), (int)(a.len -
	    offsetof(struct sockaddr_un, sun_path)));
	ck_assert_int_eq(memcmp(a.sa.sun_path + 1, a.name + 1,
	    strlen(a.name) - 1), 0);
	ck_assert(strncmp(a.name, "@webhook.fcgi-", 14) == 0);
	ck_assert_int_eq((int)strlen(a.name), 14 + 32);
	for (i = 14; i < strlen(a.name); i++)
		ck_assert(strchr("0123456789abcdef", a.name[i]) != NULL);
	unsetenv("TEST_ACCEPTOR_GROUP");
}
END_TEST

struct admit_arg {
	int	ctl;
	int	answer;		/* what to tell the standby */
	int	conn;		/* out */
	int	rc;		/* out */
};

static void *
admit_one(void *p)
{
	struct admit_arg *a = p;
	struct buf err;

	buf_init(&err, 256);
	a->rc = acceptor_admit(a->ctl, &a->conn, &err);
	if (a->rc == 0)
		(void)acceptor_answer(a->conn, a->answer);
	buf_free(&err);
	return NULL;
}

START_TEST(first_leads_second_stands_by_and_passes_connections)
{
	struct acceptor_group g;
	struct admit_arg aa = { .answer = 1 };
	struct buf err;
	pthread_t t;
	int ctl, conn, sv[2], got;
	char byte;

	own_group(&g, "elect");
	buf_init(&err, 256);
	ck_assert_int_eq(acceptor_join(&g, &ctl, &err), ACCEPTOR_LEAD);
	aa.ctl = ctl;
	ck_assert_int_eq(pthread_create(&t, NULL, admit_one, &aa), 0);
	ck_assert_msg(acceptor_join(&g, &conn, &err) == ACCEPTOR_STANDBY, "%s",
	    err_text(&err));
	pthread_join(t, NULL);
	ck_assert_int_eq(aa.rc, 0);

	/* A connection passes: the acceptor's copy is the same socket. */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(acceptor_pass(conn, sv[0]), 0);
	close(sv[0]);
	got = acceptor_receive(aa.conn);
	ck_assert_int_ge(got, 0);
	ck_assert_int_eq(write(got, "x", 1), 1);
	ck_assert_int_eq(read(sv[1], &byte, 1), 1);
	ck_assert_int_eq(byte, 'x');
	close(got);
	close(sv[1]);

	/* The standby leaves: the acceptor's receive ends. */
	close(conn);
	ck_assert_int_eq(acceptor_receive(aa.conn), -1);
	close(aa.conn);

	/* The acceptor leaves: the name is free, the next one leads. */
	close(ctl);
	ck_assert_int_eq(acceptor_join(&g, &ctl, &err), ACCEPTOR_LEAD);
	close(ctl);
	buf_free(&err);
	unsetenv("TEST_ACCEPTOR_GROUP");
}
END_TEST

START_TEST(refused_standby_serves_alone)
{
	struct acceptor_group g;
	struct admit_arg aa = { .answer = 0 };
	struct buf err;
	pthread_t t;
	int ctl, conn;

	own_group(&g, "refuse");
	buf_init(&err, 256);
	ck_assert_int_eq(acceptor_join(&g, &ctl, &err), ACCEPTOR_LEAD);
	aa.ctl = ctl;
	ck_assert_int_eq(pthread_create(&t, NULL, admit_one, &aa), 0);
	ck_assert_int_eq(acceptor_join(&g, &conn, &err), ACCEPTOR_ALONE);
	ck_assert_int_eq(conn, -1);
	ck_assert_msg(strstr(err_text(&err), "no more standbys") != NULL, "%s",
	    err_text(&err));
	pthread_join(t, NULL);
	close(aa.conn);
	close(ctl);
	buf_free(&err);
	unsetenv("TEST_ACCEPTOR_GROUP");
}
END_TEST

/* Send `nfds` descriptors in one message with the given first byte. */
static void
send_fds(int s, char byte, const int *fds, int nfds)
{
	union {
		struct cmsghdr	hdr;
		char		space[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	struct msghdr msg;
	struct cmsghdr *c;
	struct iovec iov;

	memset(&msg, 0, sizeof msg);
	memset(&ctl, 0, sizeof ctl);
	iov.iov_base = &byte;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds > 0) {
		msg.msg_control = ctl.space;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	ck_assert_int_eq(sendmsg(s, &msg, 0), 1);
}

/* How many descriptors this process has open. */
static int
open_fds(void)
{
	char path[64];
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		if (access(path, F_OK) == 0)
			n++;
	}
	return n;
}

START_TEST(receive_drops_what_is_not_one_stream_socket)
{
	int ch[2], a[2], b[2], p[2], two[2], got, before;
	struct stat sa, sg;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, ch), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
	ck_assert_int_eq(pipe(p), 0);
	before = open_fds();

	send_fds(ch[0], 'C', NULL, 0);		/* no descriptor */
	send_fds(ch[0], 'C', p, 1);		/* a pipe, not a socket */
	two[0] = a[0];
	two[1] = b[0];
	send_fds(ch[0], 'C', two, 2);		/* two at once */
	send_fds(ch[0], 'X', &a[0], 1);		/* not a connection message */
	send_fds(ch[0], 'C', &b[0], 1);		/* the good one */

	got = acceptor_receive(ch[1]);
	ck_assert_int_ge(got, 0);
	ck_assert_int_eq(fstat(got, &sg), 0);
	ck_assert_int_eq(fstat(b[0], &sa), 0);
	ck_assert(sa.st_ino == sg.st_ino);
	close(got);
	/* Every dropped descriptor was closed again. */
	ck_assert_int_eq(open_fds(), before);

	close(ch[0]);
	ck_assert_int_eq(acceptor_receive(ch[1]), -1);
	close(ch[1]);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* A name held by a process of another user: we neither hand ourselves
 * over nor lead.  As root, a child drops to "nobody" to hold it. */
START_TEST(name_of_another_user_means_alone)
{
	struct acceptor_group g;
	struct buf err;
	int up[2], fd;
	pid_t pid;
	char c;

	if (geteuid() != 0)
		return;		/* needs a second user */
	own_group(&g, "foreign");
	ck_assert_int_eq(pipe(up), 0);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		int s;

		close(up[0]);
		if (setgid(65534) == -1 || setuid(65534) == -1)
			_exit(1);
		s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (s == -1 || bind(s, (struct sockaddr *)&g.sa, g.len) == -1 ||
		    listen(s, 4) == -1)
			_exit(2);
		(void)!write(up[1], "u", 1);
		pause();
		_exit(0);
	}
	close(up[1]);
	ck_assert_int_eq(read(up[0], &c, 1), 1);
	close(up[0]);
	buf_init(&err, 256);
	ck_assert_int_eq(acceptor_join(&g, &fd, &err), ACCEPTOR_ALONE);
	ck_assert_int_eq(fd, -1);
	ck_assert_msg(strstr(err_text(&err), "uid 65534") != NULL, "%s",
	    err_text(&err));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	buf_free(&err);
	unsetenv("TEST_ACCEPTOR_GROUP");
}
END_TEST

static Suite *
acceptor_suite(void)
{
	Suite *s = suite_create("acceptor");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, group_name_is_stable_and_follows_the_environment);
	tcase_add_test(tc, first_leads_second_stands_by_and_passes_connections);
	tcase_add_test(tc, refused_standby_serves_alone);
	tcase_add_test(tc, receive_drops_what_is_not_one_stream_socket);
	tcase_add_test(tc, name_of_another_user_means_alone);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main(acceptor_suite());
}
