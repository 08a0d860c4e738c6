/*
 * test_handler: lib/drain/handler.c — running the user's command for one event
 * (handler.h; docs/DESIGN.md "Handler", "Retries": a handler that times out is
 * killed with its whole process group).  Real /bin/sh handlers: exit codes,
 * stdin delivered exactly, output tail kept, the timeout, stray children
 * killed, the environment, signal deaths and SIGPIPE; and several at once
 * (handler_start, handler_wait_any): the one that ended is reported, each
 * job's timeout and stdin served, a signal ends the wait.
 *
 * main ignores SIGPIPE as webhook-drain does, so a handler that exits
 * without reading its stdin must not kill the test (Check would report the
 * signal).  Files the handlers write go in one mkdtemp directory, removed
 * at the end.
 */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/drain/handler.h"
#include "tests/check_common.h"

#define SEC		1000000000LL
#define TWO_MIB		(2u * 1024 * 1024)

static char tmpdir[] = "/tmp/webhook-test-handler-XXXXXX";

/* One run: the result and the error text of a start failure. */
struct run {
	struct handler_result	r;
	struct buf		err;
	int			rc;
	int64_t			wall_ns;	/* around the call */
};

static void
run_env(const char *cmd, const void *in, size_t len,
    const struct handler_env *env, size_t nenv, int64_t timeout_ns,
    struct run *x)
{
	int64_t t0;

	buf_init(&x->err, BUF_ERR_MAX);
	t0 = util_mono_ns();
	x->rc = handler_run(cmd, in, len, env, nenv, timeout_ns, &x->r,
	    &x->err);
	x->wall_ns = util_mono_ns() - t0;
	ck_assert_msg(x->rc == 0, "handler_run(%s): %s", cmd,
	    x->err.data ? x->err.data : "");
}

static void
run(const char *cmd, const void *in, size_t len, int64_t timeout_ns,
    struct run *x)
{
	run_env(cmd, in, len, NULL, 0, timeout_ns, x);
}

/* The kept output as a NUL-terminated string (output is not terminated). */
static const char *
out_text(struct run *x, char *s, size_t ssz)
{
	size_t n = x->r.output_len < ssz - 1 ? x->r.output_len : ssz - 1;

	memcpy(s, x->r.output, n);
	s[n] = '\0';
	return s;
}

/* A per-test file name in tmpdir. */
static void
tmp_path(char *out, size_t outsz, const char *name)
{
	snprintf(out, outsz, "%s/%s-%ld", tmpdir, name, (long)getpid());
}

static long
read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	long pid = -1;

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	ck_assert_int_gt(pid, 1);
	return pid;
}

/* Is the process gone?  A killed orphan may linger as a zombie until the
 * container's init reaps it; that counts as gone. */
static int
gone(long pid)
{
	char path[64], stat[256];
	FILE *f;
	char *p;
	size_t n;

	if (kill((pid_t)pid, 0) == -1 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 1;
	n = fread(stat, 1, sizeof stat - 1, f);
	fclose(f);
	stat[n] = '\0';
	p = strrchr(stat, ')');
	return p != NULL && (p[2] == 'Z' || p[2] == 'X');
}

/* Wait up to 2 s for `pid` to go (SIGKILL is not instant); kill it
 * ourselves if it did not, so a failing test leaves nothing behind. */
static int
gone_soon(long pid)
{
	struct timespec ts = { 0, 10 * 1000000 };

	for (int i = 0; i < 200; i++) {
		if (gone(pid))
			return 1;
		nanosleep(&ts, NULL);
	}
	kill((pid_t)pid, SIGKILL);
	return 0;
}

START_TEST(exit_zero)
{
	struct run x;

	run("exit 0", "", 0, 10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_int_eq(x.r.exited, 1);
	ck_assert_int_eq(x.r.status, 0);
	ck_assert_int_eq(x.r.timed_out, 0);
	ck_assert_uint_eq(x.r.output_len, 0);
	ck_assert_str_eq(x.r.error, "");
	buf_free(&x.err);
}
END_TEST

START_TEST(exit_three)
{
	struct run x;
	char s[64];

	run("echo failing; exit 3", "", 0, 10 * SEC, &x);
	ck_assert(!handler_ok(&x.r));
	ck_assert_int_eq(x.r.exited, 1);
	ck_assert_int_eq(x.r.status, 3);
	ck_assert_str_eq(x.r.error, "exit 3");
	ck_assert_str_eq(out_text(&x, s, sizeof s), "failing\n");
	ck_assert_int_eq(x.r.output_cut, 0);
	buf_free(&x.err);
}
END_TEST

START_TEST(stdout_and_stderr_together)
{
	struct run x;
	char s[64];

	run("echo one; echo two >&2; echo three", "", 0, 10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_str_eq(out_text(&x, s, sizeof s), "one\ntwo\nthree\n");
	buf_free(&x.err);
}
END_TEST

/* 2 MiB with every byte value (NULs included) arrives exactly. */
START_TEST(stdin_two_mib_exact)
{
	unsigned char *in, h[crypto_hash_sha256_BYTES];
	char hex[crypto_hash_sha256_BYTES * 2 + 1], want[128], s[256];
	struct run x;

	in = malloc(TWO_MIB);
	ck_assert_ptr_nonnull(in);
	for (size_t i = 0; i < TWO_MIB; i++)
		in[i] = (unsigned char)(i * 7 + i / 256);
	crypto_hash_sha256(h, in, TWO_MIB);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	snprintf(want, sizeof want, "%s  -\n", hex);

	run("sha256sum", in, TWO_MIB, 20 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_str_eq(out_text(&x, s, sizeof s), want);

	run("wc -c", in, TWO_MIB, 20 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_str_eq(out_text(&x, s, sizeof s), "2097152\n");
	buf_free(&x.err);
	free(in);
}
END_TEST

START_TEST(stdin_empty)
{
	struct run x;
	char s[64];

	/* No input: stdin is at EOF at once, not left open. */
	run("wc -c", "", 0, 5 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_str_eq(out_text(&x, s, sizeof s), "0\n");
	buf_free(&x.err);
}
END_TEST

/* A handler that never reads its stdin: EPIPE for us, no SIGPIPE (main
 * ignores it; Check would report the signal), and no error. */
START_TEST(stdin_not_read)
{
	char *in = malloc(TWO_MIB);
	struct run x;

	ck_assert_ptr_nonnull(in);
	memset(in, 'a', TWO_MIB);
	run("exit 0", in, TWO_MIB, 10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_str_eq(x.r.error, "");
	ck_assert_int_lt(x.wall_ns, 5 * SEC);

	run("head -c 10 >/dev/null; exit 4", in, TWO_MIB, 10 * SEC, &x);
	ck_assert_str_eq(x.r.error, "exit 4");
	buf_free(&x.err);
	free(in);
}
END_TEST

/*
 * A handler that sends its output elsewhere (a log file, a common first
 * line of a handler script) and then reads a body larger than a pipe
 * buffer: handler.h promises stdin is written while output is read, so it
 * must not hang until the timeout once our output pipe has closed.
 */
START_TEST(stdin_after_output_closed)
{
	char *in = malloc(TWO_MIB);
	char cmd[512], path[256], s[64];
	struct run x;
	FILE *f;

	ck_assert_ptr_nonnull(in);
	memset(in, 'b', TWO_MIB);
	tmp_path(path, sizeof path, "count");
	snprintf(cmd, sizeof cmd, "exec >/dev/null 2>&1; sleep 0.2; "
	    "wc -c > '%s'", path);
	run(cmd, in, TWO_MIB, 3 * SEC, &x);
	ck_assert_msg(handler_ok(&x.r), "error \"%s\" after %lld ms",
	    x.r.error, (long long)(x.wall_ns / 1000000));
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(s, sizeof s, f));
	fclose(f);
	ck_assert_str_eq(s, "2097152\n");
	buf_free(&x.err);
	free(in);
}
END_TEST

/* 1 MB of output: the last HANDLER_OUTPUT_KEEP bytes, ending with the
 * handler's last line, output_cut set. */
START_TEST(output_tail_kept)
{
	struct buf want;
	char line[32];
	struct run x;

	buf_init(&want, 4 * 1024 * 1024);
	for (int i = 1; i <= 160000; i++) {
		int n = snprintf(line, sizeof line, "%d\n", i);
		ck_assert_int_eq(buf_append(&want, line, (size_t)n), 0);
	}
	ck_assert_uint_gt(want.len, 1000000);

	run("seq 1 160000", "", 0, 20 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_int_eq(x.r.output_cut, 1);
	ck_assert_uint_eq(x.r.output_len, HANDLER_OUTPUT_KEEP);
	ck_assert(memcmp(x.r.output, want.data + want.len - HANDLER_OUTPUT_KEEP,
	    HANDLER_OUTPUT_KEEP) == 0);
	ck_assert(memcmp(x.r.output + HANDLER_OUTPUT_KEEP - 7, "160000\n",
	    7) == 0);
	buf_free(&want);
	buf_free(&x.err);
}
END_TEST

START_TEST(output_exactly_keep_not_cut)
{
	char cmd[128];
	struct run x;

	/* Exactly HANDLER_OUTPUT_KEEP bytes: all kept, nothing cut. */
	snprintf(cmd, sizeof cmd, "head -c %d /dev/zero | tr '\\0' x",
	    HANDLER_OUTPUT_KEEP);
	run(cmd, "", 0, 10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_uint_eq(x.r.output_len, HANDLER_OUTPUT_KEEP);
	ck_assert_int_eq(x.r.output_cut, 0);

	snprintf(cmd, sizeof cmd, "head -c %d /dev/zero | tr '\\0' x; echo y",
	    HANDLER_OUTPUT_KEEP);
	run(cmd, "", 0, 10 * SEC, &x);
	ck_assert_uint_eq(x.r.output_len, HANDLER_OUTPUT_KEEP);
	ck_assert_int_eq(x.r.output_cut, 1);
	ck_assert(memcmp(x.r.output + HANDLER_OUTPUT_KEEP - 3, "xy\n", 3) == 0);
	buf_free(&x.err);
}
END_TEST

START_TEST(timeout)
{
	struct run x;

	run("sleep 30", "", 0, 1 * SEC, &x);
	ck_assert(!handler_ok(&x.r));
	ck_assert_int_eq(x.r.timed_out, 1);
	ck_assert_str_eq(x.r.error, "timed out after 1 s");
	ck_assert_int_ge(x.wall_ns, 1 * SEC);
	ck_assert_msg(x.wall_ns < 10 * SEC, "took %lld ms",
	    (long long)(x.wall_ns / 1000000));
	buf_free(&x.err);
}
END_TEST

/* A handler that ignores SIGTERM still ends: SIGKILL after the grace. */
START_TEST(timeout_sigterm_ignored)
{
	struct run x;

	run("trap '' TERM; sleep 30", "", 0, 1 * SEC, &x);
	ck_assert(!handler_ok(&x.r));
	ck_assert_int_eq(x.r.timed_out, 1);
	ck_assert_str_eq(x.r.error, "timed out after 1 s");
	ck_assert_msg(x.wall_ns < 1 * SEC + HANDLER_KILL_GRACE_NS + 3 * SEC,
	    "took %lld ms", (long long)(x.wall_ns / 1000000));
	buf_free(&x.err);
}
END_TEST

/* A handler that closed its output still gets the timeout. */
START_TEST(timeout_output_closed)
{
	struct run x;

	run("exec >/dev/null 2>&1; sleep 30", "", 0, 1 * SEC, &x);
	ck_assert_int_eq(x.r.timed_out, 1);
	ck_assert_str_eq(x.r.error, "timed out after 1 s");
	ck_assert_msg(x.wall_ns < 10 * SEC, "took %lld ms",
	    (long long)(x.wall_ns / 1000000));
	buf_free(&x.err);
}
END_TEST

/* Past the timeout the whole group is killed: a background child too. */
START_TEST(timeout_kills_group)
{
	char cmd[512], path[256];
	struct run x;
	long bg;

	tmp_path(path, sizeof path, "bgpid");
	snprintf(cmd, sizeof cmd, "sleep 30 & echo $! > '%s'; sleep 30", path);
	run(cmd, "", 0, 1 * SEC, &x);
	ck_assert_int_eq(x.r.timed_out, 1);
	ck_assert_msg(x.wall_ns < 10 * SEC, "took %lld ms",
	    (long long)(x.wall_ns / 1000000));
	bg = read_pid(path);
	ck_assert_msg(gone_soon(bg), "background child %ld survived the "
	    "timeout", bg);
	buf_free(&x.err);
}
END_TEST

/* The shell exits at once, its child holds our output pipe open: we return
 * promptly and the child is killed (handler.h: strays are killed). */
START_TEST(exit_leaves_child)
{
	char cmd[512], path[256];
	struct run x;
	long bg;

	tmp_path(path, sizeof path, "strays");
	snprintf(cmd, sizeof cmd, "(sleep 30) & echo $! > '%s'; exit 0", path);
	run(cmd, "", 0, 20 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_int_eq(x.r.timed_out, 0);
	ck_assert_msg(x.wall_ns < 5 * SEC, "took %lld ms",
	    (long long)(x.wall_ns / 1000000));
	bg = read_pid(path);
	ck_assert_msg(gone_soon(bg), "stray child %ld still runs", bg);
	buf_free(&x.err);
}
END_TEST

START_TEST(environment)
{
	struct handler_env env[] = {
		{ "WEBHOOK_ID", "msg_2bq" },
		{ "WEBHOOK_ATTEMPT", "3" },
		{ "WEBHOOK_SPACES", "a b\tc" },
		{ "WEBHOOK_TEST_GONE", NULL },
	};
	struct run x;
	char s[256];

	/* Set here, so that NULL has something to remove. */
	ck_assert_int_eq(setenv("WEBHOOK_TEST_GONE", "present", 1), 0);
	ck_assert_int_eq(setenv("WEBHOOK_TEST_KEPT", "kept", 1), 0);
	run_env("printf '%s|%s|%s|%s|%s\\n' \"$WEBHOOK_ID\""
	    " \"$WEBHOOK_ATTEMPT\""
	    " \"$WEBHOOK_SPACES\" \"${WEBHOOK_TEST_GONE-unset}\""
	    " \"$WEBHOOK_TEST_KEPT\"", "", 0, env, NELEM(env), 10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_str_eq(out_text(&x, s, sizeof s),
	    "msg_2bq|3|a b\tc|unset|kept\n");
	/* Our own environment is untouched. */
	ck_assert_str_eq(getenv("WEBHOOK_TEST_GONE"), "present");
	ck_assert_ptr_null(getenv("WEBHOOK_ID"));
	buf_free(&x.err);
}
END_TEST

START_TEST(killed_by_signal)
{
	struct run x;

	run("kill -9 $$", "", 0, 10 * SEC, &x);
	ck_assert(!handler_ok(&x.r));
	ck_assert_int_eq(x.r.exited, 0);
	ck_assert_int_eq(x.r.signal, 9);
	ck_assert_int_eq(x.r.timed_out, 0);
	ck_assert_str_eq(x.r.error, "killed by signal 9");
	buf_free(&x.err);
}
END_TEST

START_TEST(command_not_found)
{
	struct run x;

	run("/nonexistent/handler-xyz", "", 0, 10 * SEC, &x);
	ck_assert(!handler_ok(&x.r));
	ck_assert_int_eq(x.r.status, 127);
	ck_assert_str_eq(x.r.error, "exit 127 (command not found?)");
	buf_free(&x.err);
}
END_TEST

/*
 * SIGPIPE is ignored in the drainer (and in this test's main) but must be
 * default in the handler.  A shell cannot trap or show a signal that was
 * ignored on entry, so look at it two ways: the kernel's SigIgn mask of the
 * shell, and `yes | head -1`, where an ignored SIGPIPE makes yes report
 * "Broken pipe" on stderr instead of dying quietly.
 */
START_TEST(sigpipe_default_in_child)
{
	struct run x;
	char s[512];
	unsigned long long mask;

	/* As main set it. */
	ck_assert(signal(SIGPIPE, SIG_IGN) == SIG_IGN);

	run("yes | head -1", "", 0, 10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_msg(x.wall_ns < 5 * SEC, "took %lld ms",
	    (long long)(x.wall_ns / 1000000));
	ck_assert_str_eq(out_text(&x, s, sizeof s), "y\n");

	run("sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status", "", 0,
	    10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	out_text(&x, s, sizeof s);
	ck_assert_int_eq(sscanf(s, "%llx", &mask), 1);
	ck_assert_msg((mask & (1ULL << (SIGPIPE - 1))) == 0,
	    "SIGPIPE ignored in the handler (SigIgn %s)", s);
	buf_free(&x.err);
}
END_TEST

START_TEST(elapsed_measured)
{
	struct run x;

	run("sleep 0.3", "", 0, 10 * SEC, &x);
	ck_assert(handler_ok(&x.r));
	ck_assert_int_ge(x.r.elapsed_ns, 250 * 1000000LL);
	ck_assert_int_le(x.r.elapsed_ns, x.wall_ns);
	buf_free(&x.err);
}
END_TEST


/* ---- several at once: handler_start, handler_wait_any ------------------- */

/* A command that waits (polling) until `path` exists, then prints `word`. */
static void
gated(char *cmd, size_t cmdsz, const char *path, const char *word)
{
	snprintf(cmd, cmdsz, "i=0; while [ ! -e '%s' ] && [ $i -lt 600 ]; do "
	    "sleep 0.05; i=$((i+1)); done; echo %s", path, word);
}

static void
touch(const char *path)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fclose(f);
}

static struct handler_job *
start(const char *cmd, const void *in, size_t len, int64_t timeout_ns)
{
	struct handler_job *j;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	j = handler_start(cmd, in, len, NULL, 0, timeout_ns, &err);
	ck_assert_msg(j != NULL, "handler_start(%s): %s", cmd,
	    err.data ? err.data : "");
	buf_free(&err);
	return j;
}

/* The second job ends while the first, started before it, still runs (it
 * cannot end before the test lets it): wait_any reports the second, then,
 * once let go, the first; each with its own output. */
START_TEST(wait_any_reports_the_one_that_ended)
{
	struct handler_job *jobs[3] = { NULL, NULL, NULL };
	struct handler_result r;
	char cmd[512], path[256], s[64];
	int i;

	tmp_path(path, sizeof path, "gate");
	gated(cmd, sizeof cmd, path, "first");
	jobs[0] = start(cmd, "", 0, 60 * SEC);
	jobs[2] = start("echo second; exit 5", "", 0, 60 * SEC);
	i = handler_wait_any(jobs, 3, -1, &r);
	ck_assert_int_eq(i, 2);
	ck_assert_ptr_null(jobs[2]);
	ck_assert_ptr_nonnull(jobs[0]);
	ck_assert_int_eq(r.status, 5);
	ck_assert_str_eq(r.error, "exit 5");
	ck_assert_uint_eq(r.output_len, 7);
	ck_assert(memcmp(r.output, "second\n", 7) == 0);
	/* Nothing else ends while the gate is shut: a bounded wait says so
	 * and leaves the job as it was. */
	ck_assert_int_eq(handler_wait_any(jobs, 3, 100 * 1000000LL, &r), -1);
	ck_assert_ptr_nonnull(jobs[0]);
	touch(path);
	i = handler_wait_any(jobs, 3, -1, &r);
	ck_assert_int_eq(i, 0);
	ck_assert(handler_ok(&r));
	memcpy(s, r.output, r.output_len);
	s[r.output_len] = '\0';
	ck_assert_str_eq(s, "first\n");
	ck_assert_ptr_null(jobs[0]);
	/* No job left: -1 at once. */
	ck_assert_int_eq(handler_wait_any(jobs, 3, -1, &r), -1);
}
END_TEST

/*
 * The verdict is the handler's own (docs/jobs.md "Looking after running
 * handlers"): a
 * handler that exited 0 while its drainer was away past the deadline
 * (kill -STOP, swapped out, blocked in a store call) is a success, not
 * "timed out".  Here the test is the absent drainer: it does not call
 * handler_wait_any until the shell has exited (waitid WNOWAIT leaves it
 * for the handler to reap) and the timeout has passed.
 */
START_TEST(exited_while_away_is_not_timed_out)
{
	struct handler_job *j;
	struct handler_result r;
	siginfo_t si;
	int64_t t0 = util_mono_ns();

	j = start("echo done; exit 0", "", 0, SEC / 5);
	memset(&si, 0, sizeof si);
	ck_assert_int_eq(waitid(P_PID, (id_t)handler_job_pid(j), &si,
	    WEXITED | WNOWAIT), 0);
	while (util_mono_ns() - t0 < SEC / 5 + SEC / 10)
		usleep(20000);
	ck_assert_int_eq(handler_wait_any(&j, 1, -1, &r), 0);
	ck_assert_msg(handler_ok(&r), "verdict \"%s\"", r.error);
	ck_assert_int_eq(r.timed_out, 0);
	ck_assert_int_eq(r.exited, 1);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.error, "");
	ck_assert_uint_eq(r.output_len, 5);
	ck_assert_int_eq(memcmp(r.output, "done\n", 5), 0);

	/* Its exit status stands whatever it is: exit 3, not "timed out". */
	t0 = util_mono_ns();
	j = start("exit 3", "", 0, SEC / 5);
	ck_assert_int_eq(waitid(P_PID, (id_t)handler_job_pid(j), &si,
	    WEXITED | WNOWAIT), 0);
	while (util_mono_ns() - t0 < SEC / 5 + SEC / 10)
		usleep(20000);
	ck_assert_int_eq(handler_wait_any(&j, 1, -1, &r), 0);
	ck_assert_int_eq(r.timed_out, 0);
	ck_assert_str_eq(r.error, "exit 3");
}
END_TEST

/* A job's timeout is enforced while the wait is for any job: the one
 * past its timeout is killed and reported, the other runs on. */
START_TEST(wait_any_enforces_each_timeout)
{
	struct handler_job *jobs[2];
	struct handler_result r;
	char cmd[512], path[256];

	tmp_path(path, sizeof path, "gate");
	gated(cmd, sizeof cmd, path, "late");
	jobs[0] = start(cmd, "", 0, 60 * SEC);
	jobs[1] = start("sleep 30", "", 0, 1 * SEC);
	ck_assert_int_eq(handler_wait_any(jobs, 2, -1, &r), 1);
	ck_assert_int_eq(r.timed_out, 1);
	ck_assert_str_eq(r.error, "timed out after 1 s");
	ck_assert_ptr_nonnull(jobs[0]);
	touch(path);
	ck_assert_int_eq(handler_wait_any(jobs, 2, -1, &r), 0);
	ck_assert(handler_ok(&r));
	ck_assert_int_eq(r.timed_out, 0);
}
END_TEST

/* Three large stdins fed at once, each arriving exactly at its own job. */
START_TEST(wait_any_feeds_every_stdin)
{
	struct handler_job *jobs[3];
	unsigned char *in[3];
	char want[3][128];
	struct handler_result r;
	int seen = 0;

	for (int k = 0; k < 3; k++) {
		unsigned char h[crypto_hash_sha256_BYTES];
		char hex[crypto_hash_sha256_BYTES * 2 + 1];

		in[k] = malloc(TWO_MIB);
		ck_assert_ptr_nonnull(in[k]);
		for (size_t i = 0; i < TWO_MIB; i++)
			in[k][i] = (unsigned char)(i * (3 + 2 * k) + i / 251);
		crypto_hash_sha256(h, in[k], TWO_MIB);
		sodium_bin2hex(hex, sizeof hex, h, sizeof h);
		snprintf(want[k], sizeof want[k], "%s  -\n", hex);
		jobs[k] = start("sha256sum", in[k], TWO_MIB, 60 * SEC);
	}
	for (int n = 0; n < 3; n++) {
		int i = handler_wait_any(jobs, 3, -1, &r);

		ck_assert_int_ge(i, 0);
		ck_assert(handler_ok(&r));
		ck_assert_uint_eq(r.output_len, strlen(want[i]));
		ck_assert(memcmp(r.output, want[i], r.output_len) == 0);
		seen |= 1 << i;
	}
	ck_assert_int_eq(seen, 7);
	for (int k = 0; k < 3; k++)
		free(in[k]);
}
END_TEST

static volatile sig_atomic_t alarmed;

static void
on_alarm(int sig)
{
	(void)sig;
	alarmed = 1;
}

/* A signal ends the wait (the drainer's SIGTERM must be seen while
 * handlers run); the job goes on and is reported by the next wait. */
START_TEST(wait_any_returns_on_a_signal)
{
	struct handler_job *jobs[1];
	struct handler_result r;
	struct sigaction sa;
	char cmd[512], path[256];

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;	/* as webhook-drain's: poll returns anyway */
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	tmp_path(path, sizeof path, "gate");
	gated(cmd, sizeof cmd, path, "after");
	jobs[0] = start(cmd, "", 0, 60 * SEC);
	alarm(1);
	ck_assert_int_eq(handler_wait_any(jobs, 1, -1, &r), -1);
	ck_assert_int_eq(alarmed, 1);
	ck_assert_ptr_nonnull(jobs[0]);
	ck_assert_int_gt(handler_job_pid(jobs[0]), 1);
	touch(path);
	ck_assert_int_eq(handler_wait_any(jobs, 1, -1, &r), 0);
	ck_assert(handler_ok(&r));
}
END_TEST

/* A wait of 0 (the drain run's look before each claim) reads what the
 * pipe holds: a handler that writes more than a pipe buffer ends while
 * its caller only ever looks without waiting. */
START_TEST(wait_any_zero_reads_without_waiting)
{
	struct handler_job *jobs[1];
	struct handler_result r;
	int i, got = -1;

	jobs[0] = start("head -c 1048576 /dev/zero | tr '\\0' x; echo; "
	    "echo end", "", 0, 60 * SEC);
	for (i = 0; i < 6000 && got != 0; i++) {
		got = handler_wait_any(jobs, 1, 0, &r);
		if (got != 0)
			usleep(10 * 1000);	/* the caller's other work */
	}
	ck_assert_int_eq(got, 0);
	ck_assert(handler_ok(&r));
	ck_assert(r.output_cut);
	ck_assert_uint_eq(r.output_len, HANDLER_OUTPUT_KEEP);
	ck_assert(memcmp(r.output + r.output_len - 5, "\nend\n", 5) == 0);
}
END_TEST

/* A caller that owns the poll (a refetch waiting on the API's sockets)
 * serves the jobs through handler_poll_fds and handler_poll_serve: the
 * pipes are read, and a timeout is enforced by the due instant it is
 * given, with no event on any descriptor. */
START_TEST(poll_fds_and_serve_in_the_callers_poll)
{
	struct handler_job *jobs[2];
	struct pollfd pfd[2 * HANDLER_POLLFDS];
	struct handler_result r[2];
	int64_t due, now;
	int i, ended = 0, seen[2] = { 0, 0 };

	jobs[0] = start("sleep 30", "", 0, 1 * SEC);
	jobs[1] = start("head -c 1048576 /dev/zero | tr '\\0' y; echo; "
	    "echo end", "", 0, 60 * SEC);
	while (ended < 2) {
		struct handler_result one;
		int ms;

		ck_assert_int_eq(handler_poll_fds(jobs, 2, pfd, &due), 2 - ended);
		ck_assert(due >= 0);	/* the sleeper's timeout at least */
		now = util_mono_ns();
		ms = due <= now ? 0 : (int)((due - now) / 1000000 + 1);
		ck_assert_int_ge(poll(pfd, 2 * HANDLER_POLLFDS, ms), 0);
		while ((i = handler_poll_serve(jobs, 2, pfd, &one)) >= 0) {
			ck_assert(!seen[i]);
			seen[i] = 1;
			r[i] = one;
			ended++;
		}
	}
	ck_assert_ptr_null(jobs[0]);
	ck_assert_ptr_null(jobs[1]);
	ck_assert(r[0].timed_out);
	ck_assert(!handler_ok(&r[0]));
	ck_assert(handler_ok(&r[1]));
	ck_assert(r[1].output_cut);
	ck_assert(memcmp(r[1].output + r[1].output_len - 5, "\nend\n", 5) == 0);
	ck_assert_int_eq(handler_poll_fds(jobs, 2, pfd, &due), 0);
	ck_assert(due == -1);
}
END_TEST

static Suite *
handler_suite(void)
{
	Suite *s = suite_create("handler");
	TCase *tc;

	tc = tcase_create("exit");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, exit_zero);
	tcase_add_test(tc, exit_three);
	tcase_add_test(tc, killed_by_signal);
	tcase_add_test(tc, command_not_found);
	tcase_add_test(tc, elapsed_measured);
	suite_add_tcase(s, tc);

	tc = tcase_create("io");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, stdout_and_stderr_together);
	tcase_add_test(tc, stdin_two_mib_exact);
	tcase_add_test(tc, stdin_empty);
	tcase_add_test(tc, stdin_not_read);
	tcase_add_test(tc, stdin_after_output_closed);
	tcase_add_test(tc, output_tail_kept);
	tcase_add_test(tc, output_exactly_keep_not_cut);
	tcase_add_test(tc, environment);
	tcase_add_test(tc, sigpipe_default_in_child);
	suite_add_tcase(s, tc);

	tc = tcase_create("processes");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, timeout);
	tcase_add_test(tc, timeout_sigterm_ignored);
	tcase_add_test(tc, timeout_output_closed);
	tcase_add_test(tc, timeout_kills_group);
	tcase_add_test(tc, exit_leaves_child);
	suite_add_tcase(s, tc);

	tc = tcase_create("several");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, wait_any_reports_the_one_that_ended);
	tcase_add_test(tc, wait_any_enforces_each_timeout);
	tcase_add_test(tc, exited_while_away_is_not_timed_out);
	tcase_add_test(tc, wait_any_feeds_every_stdin);
	tcase_add_test(tc, wait_any_returns_on_a_signal);
	tcase_add_test(tc, wait_any_zero_reads_without_waiting);
	tcase_add_test(tc, poll_fds_and_serve_in_the_callers_poll);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	/* As webhook-drain does: a handler that leaves its stdin unread
	 * must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (sodium_init() < 0)
		return 1;
	return check_main_in_tmpdir(handler_suite, tmpdir);
}
