"""The PostgreSQL inbox end to end (docs/postgresql.md): a real
PostgreSQL of Debian's (tests/pgserver.py, one per test class, so that a
test may stop, restart or reconfigure it), a real lighttpd with
webhook.fcgi, real webhook-drain processes.

- a duplicate's 200 comes only once its first copy is durable, even when
  that copy was committed with synchronous_commit = off;
- the server stopped while the receiver runs: 503 with Retry-After within
  the request's deadline, then 200 again once it is back, nothing
  acknowledged lost;
- several drainers at once: no event handed out twice at the same time,
  each object's events in order;
- a drainer SIGKILLed mid-hand-out: its lease expires and another drainer
  hands the event out again; a lease lost to another drainer records
  nothing;
- `check` on PostgreSQL, a password never printed.
"""
import os
import signal
import subprocess
import threading
import time
import unittest

import harness
import pgbouncer
import pgserver
import tcprelay
from harness import (SECRET_A, Sandbox, Lighttpd, end_sandbox,
                     event_body, reaped, start_drain, write_conf)

# $D: the drainer's pid.  The drainer spawns `/bin/sh -c HANDLER`, which
# runs this script as its child (dash does not exec the last command of
# -c): $PPID is that shell, one per hand-out, and the drainer its parent
# (field 4 of its /proc stat).
HANDLER_LOG = r'''cat >/dev/null
read -r st < /proc/$PPID/stat; set -- $st; D=$4
echo "start $WEBHOOK_ID $WEBHOOK_OBJECT_ID $WEBHOOK_ATTEMPT $D" >> "$RECORD"
sleep 0.1
echo "end $WEBHOOK_ID $WEBHOOK_OBJECT_ID $WEBHOOK_ATTEMPT $D" >> "$RECORD"
'''


class PgBase(unittest.TestCase):
    server_conf = ""

    @classmethod
    def setUpClass(cls):
        cls.pg = pgserver.PgServer(extra_conf=cls.server_conf)

    @classmethod
    def tearDownClass(cls):
        cls.pg.cleanup()

    def setUp(self):
        self.sb = Sandbox()
        self.db = self.pg.new_database()
        self.sb.db = self.db
        self.record = os.path.join(self.sb.dir, "record")
        self.handler = os.path.join(self.sb.dir, "handler.sh")
        with open(self.handler, "w") as f:
            f.write(HANDLER_LOG)
        self.keys = {"database": self.db, "secret": SECRET_A,
                     "busy_timeout": "1s", "handler": "sh " + self.handler,
                     "settle": "0s", "handler_timeout": "20s",
                     "api_timeout": "1s", "retry_base": "30s"}
        write_conf(self.sb.conf, **self.keys)
        self.srv = None
        self.n = 0

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def serve(self):
        self.srv = Lighttpd(self.sb, procs=2)

    def rows(self, sql):
        return pgserver.query(self.db, sql)

    def deliver(self, msg_id, expect=200, **kw):
        status, headers, _ = self.srv.deliver(SECRET_A, msg_id,
                                              event_body(msg_id, **kw))
        if expect is not None:
            self.assertEqual(status, expect, msg_id)
        return status, headers

    def drain_proc(self, *args):
        return start_drain(self.sb, *args, record=self.record)

    def drain(self, *args, timeout=300):
        p = self.drain_proc(*args)
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err

    def records(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record) as f:
            return [l.split() for l in f if l.strip()]


class TestDuplicateDurability(PgBase):
    # The WAL writer flushes others' asynchronous commits only every 10 s
    # (its longest delay) and nothing else commits meanwhile: an original
    # committed with synchronous_commit = off stays unflushed long enough
    # to see whether the duplicate's 200 waited for it.
    server_conf = ("wal_writer_delay = 10s\nwal_writer_flush_after = 0\n"
                   "autovacuum = off\n")

    def flushed(self):
        return self.rows("SELECT pg_current_wal_flush_lsn() AS f")[0]["f"]

    def lsn_ge(self, a, b):
        return self.rows("SELECT '%s'::pg_lsn >= '%s'::pg_lsn AS ge"
                         % (a, b))[0]["ge"]

    def test_duplicate_of_an_unflushed_original_waits_for_it(self):
        # Every session of this database commits asynchronously unless it
        # says otherwise: the receiver must raise it to on.
        self.pg.psql(self.db, "ALTER DATABASE %s SET synchronous_commit = off"
                     % self.db.split("/")[3].split("?")[0])
        self.serve()
        self.deliver("warmup")      # schema applied, receivers connected
        # The WAL writer's own cycle may flush in the moment between the
        # original's commit and our look: then try again with another.
        for attempt in range(5):
            if self.try_duplicate("dup_original%d" % attempt):
                return
        self.fail("the WAL writer flushed each original at once: no test")

    def try_duplicate(self, mid):
        # The original, as if stored by a receiver whose commit was not
        # durable yet (synchronous_commit = off), straight into events.
        out = self.pg.psql(self.db, """
            SET synchronous_commit = off;
            INSERT INTO events (webhook_id, body, received_at,
              webhook_timestamp, sort_at, next_at, admitted)
            VALUES ('%s', '\\x7b7d', '2026-11-30T10:00:00.000000000Z', 1,
              '2026-11-30T10:00:00.000000000Z',
              '2026-11-30T10:00:00.000000000Z', 0);
            SELECT pg_current_wal_insert_lsn();""" % mid)
        original_end = out.split()[-1]
        # Not flushed: the test could fail (a DO NOTHING duplicate would
        # leave it so, as the control below shows).
        if self.lsn_ge(self.flushed(), original_end):
            return False
        self.pg.psql(self.db, "SET synchronous_commit = on; INSERT INTO events"
                     " (webhook_id, received_at, webhook_timestamp, sort_at,"
                     " next_at) VALUES ('%s', '', 0, '', '') ON CONFLICT DO"
                     " NOTHING" % mid)
        self.assertFalse(self.lsn_ge(self.flushed(), original_end),
                         "control: a conflicting DO NOTHING flushed the WAL")
        # The provider's retry through the receiver: 200 only once the
        # original's commit is on disk.
        self.deliver(mid)
        self.assertTrue(self.lsn_ge(self.flushed(), original_end))
        self.assertEqual(self.rows("SELECT duplicates FROM seen WHERE"
                                   " webhook_id = '%s'" % mid),
                         [{"duplicates": 1}])
        self.assertEqual(self.rows("SELECT count(*) AS n FROM events WHERE"
                                   " webhook_id = '%s'" % mid), [{"n": 1}])
        # The receiver's sessions commit with synchronous_commit on
        # whatever the database's default (application_name is ours).
        got = self.rows("SELECT DISTINCT application_name AS a FROM"
                        " pg_stat_activity WHERE datname = current_database()"
                        " AND application_name = 'webhook-inbox'")
        self.assertEqual(got, [{"a": "webhook-inbox"}])
        return True


@unittest.skipUnless(pgbouncer.available(), "pgbouncer not installed")
class TestDuplicateDurabilityPooled(TestDuplicateDurability):
    """The same through a PgBouncer in transaction mode (tests/pgbouncer.py),
    the database's default still synchronous_commit = off: each
    transaction must raise it for itself, since the next one may run in
    another server session than a session-wide SET's."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bouncer = pgbouncer.PgBouncer(cls.pg)

    @classmethod
    def tearDownClass(cls):
        cls.bouncer.stop()
        super().tearDownClass()

    def serve(self):
        self.keys["database"] = self.bouncer.uri(
            self.db.split("/")[3].split("?")[0])
        write_conf(self.sb.conf, **self.keys)
        super().serve()

    def try_duplicate(self, mid):
        # Fresh server sessions behind the pooler: a SET made when the
        # receivers connected is gone from them, as it is from any
        # session a pooler hands the next transaction to.
        self.pg.psql(self.db, "SELECT pg_terminate_backend(pid) FROM"
                     " pg_stat_activity WHERE datname = current_database()"
                     " AND pid <> pg_backend_pid()"
                     " AND backend_type = 'client backend'")
        return super().try_duplicate(mid)


class TestServerDown(PgBase):
    def test_stopped_server_503_then_back_nothing_lost(self):
        self.serve()
        acked = []
        for i in range(5):
            self.deliver("before%d" % i, obj_id=i)
            acked.append("before%d" % i)
        self.pg.stop()
        for i in range(3):
            t0 = time.monotonic()
            status, headers = self.deliver("during%d" % i, expect=None)
            took = time.monotonic() - t0
            self.assertEqual(status, 503)
            self.assertEqual(headers.get("Retry-After"), "30")
            # Never past the request's deadline (RECEIVE_DEADLINE_S, 10 s).
            self.assertLess(took, 10.5)
        self.pg.start()
        deadline = time.time() + 120
        while True:     # reconnect backoff: at most 5 s between attempts
            status, _ = self.deliver("after", expect=None)
            if status == 200 or time.time() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(status, 200)
        acked.append("after")
        for i in range(3):      # the provider's retries of the 503s
            self.deliver("during%d" % i)
            acked.append("during%d" % i)
        stored = [r["webhook_id"] for r in self.rows(
            "SELECT webhook_id FROM events")]
        self.assertEqual(sorted(stored), sorted(acked))

    def test_frozen_server_503_at_busy_timeout(self):
        # A server that stops answering (SIGSTOP: a hung host) costs a
        # request its busy_timeout, never a hang: the statement's wait, and
        # the reconnection's after it (which waited the request's 10 s).
        busy = 3.0
        write_conf(self.sb.conf, **dict(self.keys, busy_timeout="3s"))
        self.serve()
        self.deliver("first")
        with open(os.path.join(self.pg.data, "postmaster.pid")) as f:
            master = f.readline().strip()
        pids = [master] + subprocess.run(
            ["pgrep", "-P", master], capture_output=True,
            text=True).stdout.split()
        self.assertGreater(len(pids), 2)   # the receivers' backends too
        for p in pids:
            os.kill(int(p), signal.SIGSTOP)
        try:
            # Enough to meet each receiver process's dropped connection
            # and then its reconnection (a backoff answers at once).
            for i in range(5):
                t0 = time.monotonic()
                status, headers = self.deliver("frozen", expect=None)
                took = time.monotonic() - t0
                self.assertEqual(status, 503)
                self.assertIn("Retry-After", headers)
                # 1.5 x busy_timeout: room for a loaded machine; the
                # reconnection took the request's 10 s.
                self.assertLess(took, 1.5 * busy, i)
        finally:
            for p in pids:
                os.kill(int(p), signal.SIGCONT)
        deadline = time.time() + 120
        while True:
            status, _ = self.deliver("frozen", expect=None)
            if status == 200 or time.time() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(status, 200)
        self.assertEqual(len(self.rows("SELECT webhook_id FROM events")), 2)


class TestPartition(PgBase):
    """Over TCP, a server that stops answering without closing (a relay
    that stops forwarding: tests/tcprelay.py), where every other test's
    Unix socket fails at once: the receiver's 503 within busy_timeout,
    and a drainer's calls end within theirs, so that its --max-time is
    held (docs/jobs.md)."""

    def setUp(self):
        super().setUp()
        self.relay = tcprelay.TcpRelay(os.path.join(self.pg.sock,
                                                    ".s.PGSQL.5432"))
        self.addCleanup(self.relay.close)
        self.db_tcp = self.relay.uri(self.db.split("/")[3].split("?")[0])
        self.keys["database"] = self.db_tcp
        self.keys["busy_timeout"] = "2s"
        write_conf(self.sb.conf, **self.keys)

    def test_receiver_503_within_busy_timeout_then_back(self):
        self.serve()
        self.deliver("before")
        self.relay.freeze()
        try:
            for i in range(4):
                t0 = time.monotonic()
                status, headers = self.deliver("during%d" % i, expect=None)
                took = time.monotonic() - t0
                self.assertEqual(status, 503, i)
                self.assertEqual(headers.get("Retry-After"), "30")
                self.assertLess(took, 2 * 1.5, i)
        finally:
            self.relay.thaw()
        deadline = time.time() + 120
        while True:
            status, _ = self.deliver("after", expect=None)
            if status == 200 or time.time() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(status, 200)
        self.assertEqual(sorted(r["webhook_id"] for r in self.rows(
            "SELECT webhook_id FROM events")), ["after", "before"])

    def test_drainer_run_ends_within_max_time_when_the_link_stops(self):
        self.serve()
        for i in range(6):
            self.deliver("ev%d" % i, obj_id=i)
        # Each hand-out takes 0.1 s (HANDLER_LOG): the link stops while
        # the run is mid-way, its connection idle or mid-statement.
        t0 = time.monotonic()
        with reaped(self.drain_proc("run", "--max-time", "3")) as p:
            while not self.records() and time.monotonic() - t0 < 60:
                time.sleep(0.05)
            self.relay.freeze()
            try:
                out, err = p.communicate(timeout=120)
            finally:
                self.relay.thaw()
        took = time.monotonic() - t0
        # --max-time 3, then at most one call's wait (busy_timeout, 2 s)
        # and a handler's end: 1.5 x that much is room for a loaded
        # machine; a statement's wait was 60 s.
        self.assertLess(took, (3 + 2 + 1) * 1.5, out + err)
        self.assertIn("no answer", out + err)


class TestDrainers(PgBase):
    def fill(self, n_objects, per_object):
        """Events of several objects, delivered newest first within each
        object (order comes from createdAt, not arrival)."""
        want = {}
        for k in reversed(range(per_object)):
            for o in range(n_objects):
                mid = "o%d_e%02d" % (o, k)
                self.deliver(mid, obj_id=o,
                             created_at="2026-11-30T10:00:%02dZ" % k)
                want.setdefault(str(o), []).insert(0, mid)
        return want

    def test_three_drainers_at_once_order_and_no_double_hand_out(self):
        self.serve()
        want = self.fill(6, 8)
        procs = [self.drain_proc("run") for _ in range(3)]
        for p in procs:
            out, err = p.communicate(timeout=600)
            self.assertEqual((p.returncode, err), (0, ""), out)
        recs = self.records()
        starts = [r for r in recs if r[0] == "start"]
        # Each event handed out exactly once (the handler always succeeds).
        self.assertEqual(sorted(r[1] for r in starts),
                         sorted(m for ms in want.values() for m in ms))
        # Per object: hand-outs in event-time order, never two at once
        # (each one's end before the next one's start, in the file's
        # order of appends).
        for obj, ids in want.items():
            mine = [r for r in recs if r[2] == obj]
            self.assertEqual([r[1] for r in mine if r[0] == "start"], ids)
            for i in range(0, len(mine), 2):
                self.assertEqual((mine[i][0], mine[i + 1][0]), ("start", "end"))
                self.assertEqual(mine[i][1], mine[i + 1][1])
        # The drainers did share the work: hand-outs by two pids of
        # theirs at least.
        pids = {r[4] for r in starts}
        self.assertLessEqual(pids, {str(p.pid) for p in procs})
        self.assertGreaterEqual(len(pids), 2)
        self.assertEqual(self.rows("SELECT count(*) AS n FROM events WHERE"
                                   " state = 'done'"), [{"n": 48}])
        self.assertEqual(self.rows("SELECT count(*) AS n FROM leases"),
                         [{"n": 0}])

    def test_sigkilled_drainer_lease_expires_and_another_takes_over(self):
        self.serve()
        marker = os.path.join(self.sb.dir, "first-attempt-running")
        with open(self.handler, "w") as f:
            f.write('cat >/dev/null\n'
                    'if [ "$WEBHOOK_ATTEMPT" = 1 ] && [ "$WEBHOOK_ID" = slow ];'
                    ' then echo $PPID > %s.tmp; mv %s.tmp %s; sleep 30; exit 1; fi\n'
                    % (marker, marker, marker) +
                    HANDLER_LOG)
        # The drainer is killed while this handler runs: the test has its
        # 8 s to do so on a busy machine; the lease lasts longer.
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="8s"))
        self.deliver("slow", obj_id=1, created_at="2026-11-30T10:00:00Z")
        self.deliver("after_slow", obj_id=1, created_at="2026-11-30T10:00:01Z")
        d = self.drain_proc("run")
        deadline = time.time() + 60
        while not os.path.exists(marker):
            self.assertLess(time.time(), deadline, "handler never started")
            time.sleep(0.02)
        with open(marker) as f:
            shell = int(f.read())
        self.assertFalse(harness.group_gone(shell), "the handler's group")
        d.send_signal(signal.SIGKILL)
        d.communicate()
        lease = self.rows("SELECT kind, object_id, expires_at > now() AS live"
                          " FROM leases")
        self.assertEqual(lease, [{"kind": "o", "object_id": "1", "live": True}])
        # Its guard (lib/drain/guard.h) killed the handler with it: nothing of
        # the first attempt runs on beside the hand-out after the lease.
        deadline = time.time() + 30
        while not harness.group_gone(shell):
            self.assertLess(time.time(), deadline, "the handler outlived its "
                            "SIGKILLed drainer by 30 s")
            time.sleep(0.05)
        # Another object flows while this one's lease is held.
        self.deliver("other", obj_id=2)
        rc, out, err = self.drain("run")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual([r[1] for r in self.records() if r[0] == "start"],
                         ["other"])
        self.assertEqual(self.rows("SELECT state, attempts FROM events WHERE"
                                   " webhook_id = 'slow'"),
                         [{"state": "pending", "attempts": 1}])
        # Once the lease expired, the next run takes the event over.
        deadline = time.time() + 120
        while self.rows("SELECT 1 AS x FROM leases WHERE expires_at > now()"):
            self.assertLess(time.time(), deadline, "lease never expired")
            time.sleep(0.5)
        rc, out, err = self.drain("run")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual([r[1] for r in self.records() if r[0] == "start"],
                         ["other", "slow", "after_slow"])
        self.assertEqual(self.rows("SELECT webhook_id, state, attempts FROM"
                                   " events ORDER BY webhook_id"),
                         [{"webhook_id": "after_slow", "state": "done",
                           "attempts": 1},
                          {"webhook_id": "other", "state": "done",
                           "attempts": 1},
                          {"webhook_id": "slow", "state": "done",
                           "attempts": 2}])

    def test_verdict_after_the_lease_was_taken_over_records_nothing(self):
        self.serve()
        marker = os.path.join(self.sb.dir, "running")
        go = os.path.join(self.sb.dir, "go")
        # The handler ends only once the lease was taken away: a fixed
        # sleep raced the UPDATE below on a busy machine (psql slower than
        # the handler_timeout, the verdict recorded first).
        with open(self.handler, "w") as f:
            f.write('cat >/dev/null; touch %s; while [ ! -e %s ]; do sleep 0.05;'
                    ' done\n' % (marker, go))
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="60s"))
        self.deliver("taken", obj_id=1)
        d = self.drain_proc("run")
        deadline = time.time() + 60
        while not os.path.exists(marker):
            self.assertLess(time.time(), deadline, "handler never started")
            time.sleep(0.02)
        # As if this drainer's lease had expired and another drainer took
        # the object (its owner token is no longer ours).
        pgserver.execute(self.db, "UPDATE leases SET owner = 'another'")
        open(go, "w").close()
        out, err = d.communicate(timeout=120)
        self.assertIn("its lease expired and another drainer took the event over", err)
        # Not a broken inbox: the run ends normally (it would go on with
        # other objects), and the other drainer's verdict is the one kept.
        self.assertEqual(d.returncode, 0, err)
        self.assertEqual(self.rows("SELECT state, attempts FROM events"),
                         [{"state": "pending", "attempts": 1}])
        self.assertEqual(self.rows("SELECT owner FROM leases"),
                         [{"owner": "another"}])

    def test_try_record_while_a_run_has_the_event_in_hand(self):
        # PostgreSQL has no run lock: a run's claim takes the object's
        # lease.  try --record on the object's first event, in hand, is
        # told so -- not "held behind an earlier pending event", which
        # there is none -- and neither runs nor records anything.
        self.serve()
        marker = os.path.join(self.sb.dir, "running")
        go = os.path.join(self.sb.dir, "go")
        with open(self.handler, "w") as f:
            f.write('cat >/dev/null; touch %s; n=0; while [ ! -e %s ] &&'
                    ' [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done\n'
                    % (marker, go))
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="120s"))
        self.deliver("first", obj_id=1)
        d = self.drain_proc("run")
        try:
            deadline = time.time() + 60
            while not os.path.exists(marker):
                self.assertLess(time.time(), deadline, "handler never started")
                time.sleep(0.02)
            os.unlink(marker)
            rc, out, err = self.drain("try", "first", "--record")
            self.assertEqual(rc, 1, out + err)
            self.assertIn("first is in hand: another run holds its object's"
                          " lease", err)
            self.assertNotIn("held behind", err)
            self.assertFalse(os.path.exists(marker), "try ran the handler")
            self.assertEqual(self.rows("SELECT state, attempts FROM events"),
                             [{"state": "pending", "attempts": 1}])
        finally:
            open(go, "w").close()
        out, err = d.communicate(timeout=120)
        self.assertEqual(d.returncode, 0, err)
        self.assertEqual(self.rows("SELECT state, attempts FROM events"),
                         [{"state": "done", "attempts": 1}])


class TestLogLines(PgBase):
    def test_refusal_with_a_hint_is_one_log_line(self):
        # A real PostgreSQL refusal carrying DETAIL and HINT lines (a
        # trigger's RAISE): the receiver's log keeps one line per event,
        # each with its time (README "Logs").
        log = os.path.join(self.sb.dir, "webhook.log")
        write_conf(self.sb.conf, **dict(self.keys, log=log))
        self.serve()
        self.deliver("before")
        self.pg.psql(self.db, "CREATE FUNCTION refuse() RETURNS trigger"
                     " LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION"
                     " 'refused by the test' USING DETAIL = 'a detail',"
                     " HINT = 'a hint'; END $$;"
                     " CREATE TRIGGER refuse BEFORE INSERT ON events"
                     " FOR EACH ROW EXECUTE FUNCTION refuse()")
        status, _ = self.deliver("hinted", expect=None)
        self.assertNotEqual(status, 200)
        deadline = time.time() + 30
        text = ""
        while "a hint" not in text:
            self.assertLess(time.time(), deadline, text)
            time.sleep(0.05)
            with open(log, errors="replace") as f:
                text = f.read()
        lines = text.splitlines()
        stamped = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ webhook\.fcgi\[\d+\]: "
        for line in lines:
            self.assertRegex(line, stamped)
        hinted = [l for l in lines if "a hint" in l]
        self.assertEqual(len(hinted), 1, text)
        self.assertIn("refused by the test", hinted[0])
        self.assertIn("hinted", hinted[0])
        self.assertIn("\\x0a", hinted[0])


class TestCheck(PgBase):
    def test_check_reports_the_server_and_never_the_password(self):
        uri = self.db.replace("user=webhook", "user=webhook&password=sekrit")
        write_conf(self.sb.conf, **dict(self.keys, database=uri))
        rc, out, err = self.drain("check")
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("sekrit", out + err)
        self.assertRegex(out, r"ok   database: postgresql \(.*\) reachable as "
                         r"role webhook: PostgreSQL 15")
        self.assertIn("schema version 5 (this program's: 5)", out)
        self.assertIn("ok   synchronous_commit: on", out)
        self.assertIn("may read and write every table", out)
        # A role that may only read: named as a failure, with the GRANT.
        self.pg.psql(self.db, "CREATE ROLE reader LOGIN;"
                     " GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
        self.pg.psql(self.db, "ALTER ROLE reader SET synchronous_commit = off")
        write_conf(self.sb.conf, **dict(self.keys, database=self.db.replace(
            "user=webhook", "user=reader")))
        rc, out, err = self.drain("check")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("WARN synchronous_commit: off for this role by default:"
                      " raised to on", out)
        self.assertRegex(out, r"FAIL database: this role cannot write every "
                         r"table: .*permission denied")

    def test_uri_that_does_not_parse_is_never_echoed(self):
        # A bad percent escape in the password: libpq's own message quotes
        # the token ("invalid percent-encoded token: ..."); ours names the
        # kind of problem only -- in check, every drainer command, the
        # receiver's log and the report page.
        uri = self.db.replace("postgresql://", "postgresql://webhook:PWbad%zz@")
        write_conf(self.sb.conf, **dict(self.keys, database=uri))
        seen = []
        rc, out, err = self.drain("check")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("does not parse", out + err)
        seen.append(out + err)
        report = os.path.join(self.sb.dir, "report")
        for args in (["run"], ["status"], ["list"], ["purge"],
                     ["report", "--out", report], ["show", "x"]):
            rc, out, err = self.drain(*args)
            self.assertNotEqual(rc, 0, (args, out, err))
            seen.append(out + err)
        self.serve()
        status, _ = self.deliver("bad_uri", expect=None)
        self.assertEqual(status, 503)
        time.sleep(0.2)
        seen.append(self.srv.log() + self.sb_log())
        self.assertIn("does not parse", seen[-1])
        if os.path.isdir(report):
            for name in os.listdir(report):
                with open(os.path.join(report, name), errors="replace") as f:
                    seen.append(f.read())
        for text in seen:
            self.assertNotIn("PWbad", text)
            self.assertNotIn("%zz", text)

    def test_role_that_may_only_read_gets_503_never_200(self):
        # e2e_receiver's read-only database, PostgreSQL's way: a role
        # without INSERT.  The schema exists (made by the owner).
        write_conf(self.sb.conf, **self.keys)
        self.serve()
        self.deliver("by_owner")
        self.pg.psql(self.db, "CREATE ROLE reader2 LOGIN;"
                     " GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader2")
        write_conf(self.sb.conf, **dict(self.keys, database=self.db.replace(
            "user=webhook", "user=reader2")))
        status, headers = self.deliver("by_reader", expect=None)
        self.assertEqual(status, 503)
        self.assertEqual(headers.get("Retry-After"), "30")
        self.assertEqual([r["webhook_id"] for r in self.rows(
            "SELECT webhook_id FROM events")], ["by_owner"])
        time.sleep(0.2)
        self.assertIn("permission denied", self.srv.log() + self.sb_log())

    def sb_log(self):
        p = os.path.join(self.sb.dir, "lighttpd.error.log")
        if not os.path.exists(p):
            return ""
        with open(p, errors="replace") as f:
            return f.read()

    def test_unreachable_server_fails_check_with_the_reason(self):
        write_conf(self.sb.conf, **dict(self.keys, database=self.db.replace(
            self.pg.sock, "/nonexistent")))
        rc, out, err = self.drain("check")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("FAIL database: postgresql (", out)
        self.assertIn("cannot connect", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
