"""The operator's night (docs/DESIGN.md "The operator's tools"), end to end
on real processes: a real lighttpd with webhook.fcgi fills the inbox, the
drainer runs as cron would, libfaketime moves its clock.  One digest per run
for a failure storm, status failing within one run, `try` leaving the inbox
byte for byte as it was, JSON ids that round-trip, filters that match
nothing, and the heartbeat `run --ping` against a local listener (one that
hangs too)."""
import http.server
import json
import os
import socket
import sqlite3
import subprocess
import threading
import time
import unittest

from harness import (SECRET_A, DRAIN, Sandbox, Lighttpd, end_sandbox,
                     event_body, run_drain, sign, write_conf)

PHP_ERROR = ("PHP Parse error:  syntax error, unexpected token \"}\" in "
             "/home/shop/webhook.php on line 52")
# The handler of the story: a PHP file with a syntax error, for every event.
BROKEN = "cat >/dev/null; echo '%s'; exit 255" % PHP_ERROR.replace("'", "")
# Digest bound for the storm: a mail a person reads, whatever the count.
DIGEST_MAX = 3000


class OperatorBase(unittest.TestCase):
    handler = "cat >/dev/null"

    def setUp(self):
        self.sb = Sandbox()
        self.keys = {"database": self.sb.db, "secret": SECRET_A,
                     "handler": self.handler, "settle": "0s",
                     "handler_timeout": "5s", "max_attempts": "3",
                     "retry_base": "30s"}
        write_conf(self.sb.conf, **self.keys)
        self.srv = Lighttpd(self.sb, procs=2)

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def deliver(self, msg_id, obj_id=1):
        status = self.srv.deliver(SECRET_A, msg_id, event_body(msg_id, obj_id=obj_id))[0]
        self.assertEqual(status, 200)

    def drain(self, *args, offset=None):
        return run_drain(self.sb, *args, offset=offset)

    def handler_is(self, command):
        write_conf(self.sb.conf, **dict(self.keys, handler=command))

    def dump(self):
        con = sqlite3.connect(self.sb.db)
        try:
            return "\n".join(con.iterdump())
        finally:
            con.close()


class TestDigest(OperatorBase):
    handler = BROKEN

    def test_storm_of_200_is_one_digest_under_a_bound(self):
        for i in range(200):
            self.deliver("msg_%03d" % i, obj_id=i)
        p = self.drain("run")
        self.assertEqual(p.returncode, 1)
        out = p.stdout + p.stderr
        self.assertLess(len(out), DIGEST_MAX, out)
        self.assertIn("0 done, 0 stale, 200 failed for the first time", out)
        # One group: five ids, the rest counted; the error decoded as a line.
        self.assertEqual(out.count("failed (exit 255)"), 1, out)
        self.assertRegex(out, r"msg_\d{3}, msg_\d{3}, msg_\d{3}, msg_\d{3}, "
                         r"msg_\d{3} and 195 more failed \(exit 255\)")
        self.assertIn("  | " + PHP_ERROR + "\n", out)
        self.assertNotIn("\\x0a", out)
        # The commands to go on name the config this run was given.
        self.assertIn("webhook-drain -c %s try msg_" % self.sb.conf, out)
        self.assertIn("webhook-drain -c %s requeue --state retrying --yes"
                      % self.sb.conf, out)
        # Retries stay silent; deaths are one more digest.
        p = self.drain("run", offset=4000)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (1, "", ""))
        p = self.drain("run", offset=8000)
        out = p.stdout + p.stderr
        self.assertLess(len(out), DIGEST_MAX, out)
        self.assertIn("and 195 more are dead after 3 failures (last: exit 255)", out)
        self.assertIn("requeue --state dead --yes", out)

    def test_output_is_decoded_for_reading(self):
        # UTF-8 and backslashes as they are, CRLF a newline, ESC and a
        # byte that is not UTF-8 escaped; never a literal \x0a.
        self.handler_is("cat >/dev/null; printf 'Fehler: \\303\\274ber "
                        "App\\\\Foo\\r\\nbad \\033[2J \\377\\n'; exit 3")
        self.deliver("u1")
        p = self.drain("run")
        out = p.stdout + p.stderr
        self.assertIn("  | Fehler: \u00fcber App\\Foo\n  | bad \\x1b[2J \\xff\n", out)
        self.assertNotIn("\\x0a", out)
        self.assertNotIn("\\x0d", out)
        self.assertNotIn("\x1b", out)
        # -v's one-line form: the lines joined, no \x0a either.
        self.deliver("u2", obj_id=2)
        p = self.drain("-v", "run")
        self.assertIn("Output tail: Fehler: \u00fcber App\\Foo | bad \\x1b[2J \\xff\n",
                      p.stderr)
        self.assertNotIn("\\x0a", p.stderr)
        # JSON keeps real JSON escapes.
        j = json.loads(self.drain("show", "--json", "u1").stdout)
        self.assertEqual(j["last_output"], "Fehler: \u00fcber App\\Foo\r\nbad "
                         "\x1b[2J \\xff\n")

    def test_verbose_keeps_per_event_lines(self):
        for i in range(3):
            self.deliver("v%d" % i, obj_id=i)
        p = self.drain("-v", "run")
        for i in range(3):
            self.assertIn("v%d failed (exit 255); it will be retried" % i, p.stderr)

    def test_json_last_output_is_not_double_escaped(self):
        self.deliver("j1")
        self.drain("run")
        j = json.loads(self.drain("show", "--json", "j1").stdout)
        self.assertEqual(j["last_output"], PHP_ERROR + "\n")


class TestStatus(OperatorBase):
    def test_status_exits_1_within_one_run_of_the_first_failure(self):
        self.deliver("ok1", obj_id=1)
        self.drain("run")
        self.assertEqual(self.drain("status").returncode, 0)
        self.handler_is(BROKEN)
        self.deliver("f1", obj_id=2)
        self.deliver("f2", obj_id=2)
        self.drain("run")
        p = self.drain("status")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("the last run failed (failures: 0 done", p.stdout)
        self.assertIn("1 waiting for a retry, on 1 object", p.stdout)
        self.assertNotIn("\nok\n", p.stdout)
        # A run between retries does nothing and ends "ok": status must
        # not turn ok with it.
        p = self.drain("run", offset=5)
        self.assertEqual(p.returncode, 0)
        p = self.drain("status", offset=6)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("1 event retrying and none done since", p.stdout)
        # Still failing past --max-failing, even after a run that retried
        # nothing (its backoff not due) and so "failed" nothing.
        self.handler_is("cat >/dev/null")
        self.deliver("ok2", obj_id=3)
        self.drain("run")
        p = self.drain("status", "--max-failing", "10m", offset=601)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("failing since", p.stdout)
        self.assertIn("holding 1 object", p.stdout)
        lines = self.drain("list", "--state", "retrying").stdout.splitlines()
        self.assertEqual(len(lines), 1)
        self.assertIn("f1", lines[0])
        # --failing: the same filter, by the name queue tools use.
        failing = self.drain("list", "--failing").stdout.splitlines()
        self.assertEqual([l.split()[:4] for l in failing],
                         [l.split()[:4] for l in lines])
        p = self.drain("list", "--failing", "--state", "dead")
        self.assertEqual(p.returncode, 2)
        self.assertIn("one state at a time", p.stderr)
        # Fixed and requeued: fine again.
        self.assertEqual(self.drain("requeue", "--state", "retrying", "--yes").returncode, 0)
        self.drain("run", offset=601)
        p = self.drain("status", offset=602)
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_failing_counts_from_the_first_failure(self):
        # Received, then first handed out (and failed) two hours later,
        # after a cron gap: not "failing" for those two hours.
        self.handler_is(BROKEN)
        self.deliver("g1", obj_id=4)
        self.drain("run", offset=7200)
        p = self.drain("status", "--max-failing", "10m", offset=7260)
        self.assertEqual(p.returncode, 1, p.stdout)      # the last run failed
        self.assertNotIn("over --max-failing", p.stdout)
        p = self.drain("status", "--max-failing", "10m", offset=7200 + 660)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertRegex(p.stdout, r"1 event failing since 1[01]m ago "
                         r"\(over --max-failing 600s\)")
        # A requeue starts the count again.
        self.assertEqual(self.drain("requeue", "g1").returncode, 0)
        self.drain("run", offset=7200 + 700)
        p = self.drain("status", "--max-failing", "10m", offset=7200 + 760)
        self.assertNotIn("over --max-failing", p.stdout)

    def test_filter_matching_nothing_is_not_failure(self):
        self.deliver("n1")
        self.drain("run")
        for verb in ("requeue", "forget"):
            p = self.drain(verb, "--state", "dead", "--yes")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no matching event", p.stderr)
        self.assertEqual(self.drain("forget", "nosuch").returncode, 1)

    def test_json_ids_round_trip(self):
        mid = "msg_\u00fcber"
        # The header's bytes as UTF-8 (http.client would send latin-1).
        ts = int(time.time())
        body = event_body(mid)
        h = {"webhook-id": mid.encode(), "webhook-timestamp": str(ts),
             "webhook-signature": sign(SECRET_A, mid, ts, body),
             "content-type": "application/json"}
        self.assertEqual(self.srv.post(h, body)[0], 200)
        line = self.drain("list", "--json").stdout.splitlines()[0]
        self.assertIn("\u00fc", line)      # real UTF-8, not \\xc3\\xbc text
        got = json.loads(line)["webhook_id"]
        self.assertEqual(got, mid)
        self.assertEqual(self.drain("show", got).returncode, 0)
        self.assertEqual(self.drain("forget", got).returncode, 0)
        self.assertEqual(self.sb.count(), 0)


class TestTry(OperatorBase):
    def test_try_changes_nothing_and_gives_what_a_run_gives(self):
        env_file = os.path.join(self.sb.dir, "env.txt")
        self.handler_is("cat > %s.stdin; env | grep ^WEBHOOK_ | sort > %s; "
                        "echo tried; exit 7" % (env_file, env_file))
        self.deliver("t1", obj_id=5)
        self.drain("run")               # attempt 1 fails: pending, retrying
        with open(env_file) as f:
            run_env = f.read()
        with open(env_file + ".stdin", "rb") as f:
            run_stdin = f.read()
        before = self.dump()
        p = self.drain("try", "t1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("  | tried", p.stdout)
        self.assertIn("exit 7", p.stdout)
        self.assertIn("the inbox is unchanged", p.stdout)
        self.assertEqual(self.dump(), before)
        with open(env_file) as f:
            try_env = f.read()
        with open(env_file + ".stdin", "rb") as f:
            self.assertEqual(f.read(), run_stdin)
        # The same variables; the attempt is the one a run would give next.
        self.assertEqual(try_env, run_env.replace("WEBHOOK_ATTEMPT=1",
                                                  "WEBHOOK_ATTEMPT=2"))
        self.handler_is("cat >/dev/null; echo fixed")
        p = self.drain("try", "t1")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.dump(), before)
        self.assertEqual(self.drain("try", "nosuch").returncode, 1)


class TestTryRecord(OperatorBase):
    """try ID --record: the outcome recorded as a run records it."""

    def row(self, mid):
        con = sqlite3.connect(self.sb.db)
        try:
            return con.execute("SELECT state, attempts, failures, last_error,"
                               " next_at > strftime('%Y-%m-%dT%H:%M:%f', 'now')"
                               " FROM events WHERE webhook_id = ?",
                               (mid,)).fetchone()
        finally:
            con.close()

    def test_record_failure_retry_dead_then_done(self):
        self.handler_is("cat >/dev/null; echo \"attempt $WEBHOOK_ATTEMPT\"; exit 7")
        self.deliver("r1", obj_id=7)
        p = self.drain("try", "r1", "--record")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("  | attempt 1", p.stdout)
        self.assertIn("recorded: failure 1, retried from", p.stdout)
        self.assertNotIn("the inbox is unchanged", p.stdout)
        # As a run records it: one attempt, one failure, a backoff ahead.
        self.assertEqual(self.row("r1"), ("pending", 1, 1, "exit 7", 1))
        self.assertEqual(self.drain("try", "r1", "--record").returncode, 1)
        p = self.drain("try", "r1", "--record")
        self.assertIn("  | attempt 3", p.stdout)
        self.assertIn("recorded: failure 3, now dead", p.stdout)
        self.assertEqual(self.row("r1")[:3], ("dead", 3, 3))
        # A dead event is not handed out by a run: neither by --record.
        before = self.dump()
        p = self.drain("try", "r1", "--record")
        self.assertEqual(p.returncode, 1)
        self.assertIn("is dead, not pending", p.stderr)
        self.assertEqual(self.dump(), before)
        # Fixed, requeued, recorded done: a run then has nothing to do.
        self.handler_is("cat >/dev/null; echo fixed")
        self.assertEqual(self.drain("requeue", "r1").returncode, 0)
        p = self.drain("try", "r1", "--record")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("recorded: done", p.stdout)
        self.assertEqual(self.row("r1")[:3], ("done", 4, 0))
        self.assertIn("done", self.drain("show", "r1").stdout)

    def test_record_refuses_a_held_event_and_a_running_run(self):
        import fcntl
        self.handler_is("cat >/dev/null; exit 3")
        self.deliver("h1", obj_id=8)
        self.deliver("h2", obj_id=8)
        self.drain("run")                   # h1 fails: h2 is held behind it
        before = self.dump()
        p = self.drain("try", "h2", "--record")
        self.assertEqual(p.returncode, 1)
        self.assertIn("held behind an earlier pending event", p.stderr)
        self.assertEqual(self.dump(), before)
        # A run in progress (its lock held): nothing run, nothing written.
        with open(self.sb.db + ".drain-lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            p = self.drain("try", "h1", "--record")
        self.assertEqual(p.returncode, 1)
        self.assertIn("a run holds the run lock", p.stderr)
        self.assertEqual(self.dump(), before)
        # Without --record, the same event: run, nothing recorded.
        p = self.drain("try", "h1")
        self.assertIn("the inbox is unchanged", p.stdout)
        self.assertEqual(self.dump(), before)


class TestListAndCheckHandler(OperatorBase):
    def test_list_on_a_terminal_has_a_header_and_a_bounded_page(self):
        import pty
        for i in range(60):
            self.deliver("l%02d" % i, obj_id=i)
        master, slave = pty.openpty()
        try:
            p = subprocess.run([DRAIN, "-c", self.sb.conf, "list"],
                               stdout=slave, stderr=subprocess.PIPE,
                               env=dict(os.environ, **self.sb.env()), timeout=60)
            os.close(slave)
            slave = None
            out = b""
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            os.close(master)
            if slave is not None:
                os.close(slave)
        lines = out.decode().splitlines()
        self.assertEqual(p.returncode, 0)
        self.assertTrue(lines[0].startswith("received"), lines[0])
        self.assertEqual(len(lines), 1 + 50 + 1)
        self.assertIn("and 10 more", lines[-1])
        # A pipe gets them all, no header.
        self.assertEqual(len(self.drain("list").stdout.splitlines()), 60)

    def test_check_handler_runs_it_on_a_test_event(self):
        self.handler_is("cat >/dev/null; echo \"test=$WEBHOOK_TEST\"; exit 255")
        p = self.drain("check", "--handler")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("  | test=1", p.stdout)
        self.assertIn("exit 255", p.stdout)
        self.handler_is("cat >/dev/null")
        p = self.drain("check")             # only when asked
        self.assertNotIn("test event", p.stdout)
        p = self.drain("check", "--handler")
        self.assertIn("exit 0", p.stdout)


class TestCheckHelpsNeverHarms(unittest.TestCase):
    """check on each misconfiguration of the story, one test each."""

    def setUp(self):
        self.sb = Sandbox()
        self.home = os.path.join(self.sb.dir, "home")
        self.docroot = os.path.join(self.home, "public_html")
        self.data = os.path.join(self.home, "webhook")
        os.makedirs(self.docroot)
        os.makedirs(self.data)
        os.chmod(self.data, 0o700)
        self.keys = {"database": os.path.join(self.data, "inbox.db"),
                     "secret": SECRET_A, "handler": "cat >/dev/null"}

    def tearDown(self):
        self.sb.cleanup()

    def check(self, **changes):
        keys = dict(self.keys, **changes)
        write_conf(self.sb.conf, **keys)
        os.chmod(self.sb.conf, 0o600)
        p = subprocess.run([DRAIN, "-c", self.sb.conf, "check",
                            "--document-root", self.docroot],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **self.sb.env()))
        return p.returncode, p.stdout + p.stderr

    def test_database_in_public_html_creates_nothing(self):
        db = os.path.join(self.docroot, "inbox.db")
        rc, out = self.check(database=db)
        self.assertEqual(rc, 1, out)
        self.assertIn("inside the document root", out)
        self.assertFalse(os.path.exists(db), out)
        self.assertEqual(os.listdir(self.docroot), [])
        # Never advice that makes the document root group-writable.
        self.assertNotIn("2770", out)
        self.assertNotIn("g+w", out)

    def test_one_user_advice_is_owner_only(self):
        os.chmod(self.data, 0o755)
        rc, out = self.check()
        self.assertIn("chmod 700 %s" % self.data, out)
        os.chmod(self.data, 0o700)
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        self.assertIn("the one-user setup", out)

    def test_quoted_secret_loads_an_open_quote_is_named(self):
        # A value in double quotes is its content (docs/DESIGN.md
        # "Configuration"); a quote left open says how to write one.
        rc, out = self.check(secret='"%s"' % SECRET_A)
        self.assertEqual(rc, 0, out)
        rc, out = self.check(secret='"%s' % SECRET_A)
        self.assertEqual(rc, 2)
        self.assertIn("secret: a quote left open", out)
        self.assertNotIn(SECRET_A[6:], out)

    def test_every_config_error_in_one_pass(self):
        write_conf(self.sb.conf, database=self.keys["database"], tolerence="5",
                   secret='"%s' % SECRET_A, max_body="lots", handlr="x")
        p = subprocess.run([DRAIN, "-c", self.sb.conf, "check"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        for want in (":2: tolerence: unknown key (did you mean tolerance?)",
                     ":3: secret: a quote left open", ":4: max_body:",
                     ":5: handlr: unknown key (did you mean handler?)"):
            self.assertIn(want, p.stderr)
        self.assertFalse(os.path.exists(self.keys["database"]))

    def test_config_errors_then_every_check_that_can_run(self):
        # Errors with their lines first, then the findings on the keys
        # that loaded: the database inside the document root, the secret,
        # the handler left unset by the typo; still creates nothing.
        db = os.path.join(self.docroot, "inbox.db")
        write_conf(self.sb.conf, database=db, tolerence="5", secret=SECRET_A,
                   handlr="cat >/dev/null")
        os.chmod(self.sb.conf, 0o600)
        p = subprocess.run([DRAIN, "-c", self.sb.conf, "check",
                            "--document-root", self.docroot],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **self.sb.env()))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(":2: tolerence: unknown key (did you mean tolerance?)",
                      p.stderr)
        self.assertIn(":4: handlr: unknown key (did you mean handler?)",
                      p.stderr)
        self.assertIn("FAIL config: %s: 2 errors (above)" % self.sb.conf, p.stdout)
        self.assertIn("ok   secret: whsec_ HMAC-SHA256", p.stdout)
        self.assertIn("FAIL database: %s is inside the document root" % db,
                      p.stdout)
        self.assertIn("FAIL handler: not set", p.stdout)
        self.assertRegex(p.stdout, r"\n3 failed, \d+ warnings\n")
        self.assertEqual(os.listdir(self.docroot), [])

    def test_placeholder_secret_is_named(self):
        rc, out = self.check(secret="whsec_REPLACE_WITH_YOUR_SECRET")
        self.assertEqual(rc, 2)
        self.assertIn("the example's placeholder", out)


class TestCheckUrl(OperatorBase):
    """check --url against a real lighttpd: a working and a broken setup."""

    def probe(self, conf, url):
        p = subprocess.run([DRAIN, "-c", conf, "check", "--url", url],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, **self.sb.env()))
        return p.returncode, p.stdout + p.stderr

    def url_lines(self, out):
        return [l for l in out.splitlines() if " url: " in l]

    def test_working_endpoint_passes_all_four(self):
        rc, out = self.probe(self.sb.conf, "http://127.0.0.1:%d/hook" % self.srv.port)
        lines = self.url_lines(out)
        self.assertEqual(len(lines), 4, out)
        self.assertTrue(all(l.startswith("ok ") for l in lines), out)
        self.assertEqual(self.sb.count(), 2)    # the small and the 250 KB one
        # The receiver said which program it is: the drainer's build.
        ours = subprocess.run([DRAIN, "--version"], capture_output=True,
                              text=True).stdout.splitlines()[0]
        self.assertIn("signed small body: 200 as expected, from %s" %
                      ours.replace("webhook-drain", "webhook.fcgi"), lines[0])

    def test_broken_setups_name_the_step(self):
        # The drainer's config has another secret than the receiver's.
        other = os.path.join(self.sb.dir, "other.conf")
        write_conf(other, **dict(self.keys, secret="whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"))
        rc, out = self.probe(other, "http://127.0.0.1:%d/hook" % self.srv.port)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"FAIL url: signed small body: 401, not 200 — "
                         r"revisit HOSTING.md step 3 \(Edit: ")
        self.assertEqual(self.sb.count(), 0)
        # A URL that does not reach the receiver.
        rc, out = self.probe(self.sb.conf, "http://127.0.0.1:%d/nope.txt" % self.srv.port)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"FAIL url: signed small body: 404 from the web "
                         r"server itself, not 200 — revisit HOSTING.md step 2 "
                         r"\(Upload: ")
        self.assertIn("FAIL url: GET: 404, not 405", out)


class Listener:
    """An HTTP listener on 127.0.0.1 recording requests; hang=True accepts
    and never answers."""

    def __init__(self, hang=False):
        self.requests = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.hang = hang
        self.conns = []
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        self.sock.settimeout(0.2)
        end = time.monotonic() + 60
        while time.monotonic() < end and self.sock.fileno() != -1:
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.conns.append(c)
            if self.hang:
                continue
            data = b""
            c.settimeout(5)
            try:
                while b"\r\n\r\n" not in data:
                    data += c.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                while len(body) < n:
                    body += c.recv(65536)
                self.requests.append((head.split(b"\r\n")[0].decode(), body))
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")
            except OSError:
                pass
            c.close()

    def url(self):
        return "http://127.0.0.1:%d/ping/abc" % self.port

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


class TestPing(OperatorBase):
    def test_ping_success_and_failure(self):
        lst = Listener()
        try:
            self.deliver("p1", obj_id=1)
            p = self.drain("run", "--ping", lst.url())
            self.assertEqual(p.returncode, 0, p.stderr)
            self.handler_is(BROKEN)
            self.deliver("p2", obj_id=2)
            p = self.drain("run", "--ping", lst.url())
            self.assertEqual(p.returncode, 1)
            time.sleep(0.3)
            self.assertEqual([r[0] for r in lst.requests],
                             ["POST /ping/abc HTTP/1.1",
                              "POST /ping/abc/fail HTTP/1.1"])
            self.assertIn(b"1 failed for the first time", lst.requests[1][1])
        finally:
            lst.close()

    def test_hanging_listener_bounds_the_run_and_never_fails_it(self):
        lst = Listener(hang=True)
        try:
            self.deliver("h1")
            t0 = time.monotonic()
            p = self.drain("run", "--ping", lst.url())
            self.assertLess(time.monotonic() - t0, 15)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("ping", p.stderr)       # said, once
            self.assertEqual(self.sb.rows()[0]["state"], "done")
        finally:
            lst.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
