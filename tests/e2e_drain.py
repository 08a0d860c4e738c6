"""webhook-drain end to end (docs/DESIGN.md "The drainer"): a real lighttpd
with webhook.fcgi fills the inbox; the drainer runs as cron would, with
tests/record-handler.sh recording every hand-out; libfaketime moves the
clock instead of sleeping."""
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
import unittest

import harness
from harness import (SECRET_A, DRAIN, FCGI, ROOT, FAKETIME, Sandbox, Lighttpd,
                     end_sandbox, event_body, record_lines, run_drain,
                     signed_params, write_conf)

HANDLER = os.path.join(ROOT, "tests", "record-handler.sh")


class DrainBase(unittest.TestCase):
    conf_extra = {}

    def setUp(self):
        self.sb = Sandbox()
        self.record = os.path.join(self.sb.dir, "record.tsv")
        self.keys = {"database": self.sb.db, "secret": SECRET_A,
                     "handler": HANDLER, "settle": "0s",
                     # Room for a loaded machine: a handler killed by
                     # its timeout only where a test means it to be.
                     "handler_timeout": "60s", "max_attempts": "3",
                     "retry_base": "30s"}
        self.keys.update(self.conf_extra)
        write_conf(self.sb.conf, **self.keys)
        self.srv = Lighttpd(self.sb, procs=2)

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def deliver(self, msg_id, **kw):
        body = event_body(msg_id, **kw)
        status = self.srv.deliver(SECRET_A, msg_id, body)[0]
        self.assertEqual(status, 200)
        return body

    def drain(self, *args, offset=None, check=True, timeout=60):
        """Run webhook-drain; offset: seconds to move its clock forward."""
        p = run_drain(self.sb, *args, record=self.record, offset=offset,
                      timeout=timeout)
        if check and p.returncode not in (0, 1):
            self.fail("webhook-drain %s: exit %d\n%s%s" % (
                args, p.returncode, p.stdout, p.stderr))
        return p

    def handed(self):
        """Hand-outs so far: list of dicts from the record."""
        return [{"id": c[0], "attempt": int(c[1]), "type": c[2],
                 "object": c[3], "object_id": c[4], "created_at": c[5],
                 "stale": c[6], "sha": c[7], "bytes": int(c[8])}
                for c in record_lines(self.record)]

    def ids(self):
        return [h["id"] for h in self.handed()]

    def state(self, msg_id):
        rows = self.sb.rows("SELECT * FROM events WHERE webhook_id = ?", (msg_id,))
        return rows[0] if rows else None


class TestOrder(DrainBase):
    def test_out_of_order_arrival_handed_out_in_event_time_order(self):
        self.deliver("u3", obj_id=7, created_at="2026-11-30T10:00:03Z")
        self.deliver("u1", obj_id=7, created_at="2026-11-30T10:00:01+00:00")
        self.deliver("u2", obj_id=7, created_at="2026-11-30T12:00:02+02:00")
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        self.assertEqual(self.ids(), ["u1", "u2", "u3"])
        h = self.handed()[1]
        self.assertEqual((h["type"], h["object"], h["object_id"], h["attempt"]),
                         ("client.updated", "client", "7", 1))
        self.assertEqual(h["created_at"], "2026-11-30T12:00:02+02:00")  # as sent

    def test_offsets_compared_as_instants(self):
        # 10:00:00+02:00 is 08:00Z, earlier than 09:00:00.5Z.
        self.deliver("late_text", obj_id=1, created_at="2026-11-30T09:00:00.5Z")
        self.deliver("early_text", obj_id=1, created_at="2026-11-30T10:00:00+02:00")
        self.drain("run")
        self.assertEqual(self.ids(), ["early_text", "late_text"])

    def test_older_event_arriving_after_newer_done_is_stale(self):
        self.deliver("new", obj_id=9, created_at="2026-11-30T10:00:05Z")
        self.drain("run")
        self.deliver("old", obj_id=9, created_at="2026-11-30T10:00:01Z")
        p = self.drain("-v", "run")
        self.assertIn("stale", p.stdout)
        self.assertEqual(self.ids(), ["new"])
        self.assertEqual(self.state("old")["state"], "stale")

    def test_updated_after_deleted_is_stale(self):
        self.deliver("del", obj_id=5, etype="client.deleted",
                     created_at="2026-11-30T11:00:00Z")
        self.drain("run")
        self.deliver("upd", obj_id=5, etype="client.updated",
                     created_at="2026-11-30T10:59:59.999Z")
        self.drain("run")
        self.assertEqual(self.ids(), ["del"])
        self.assertEqual(self.state("upd")["state"], "stale")

    def test_older_object_version_is_stale_by_updated_at(self):
        self.deliver("v2", obj_id=3, created_at="2026-11-30T10:00:00Z",
                     updated_at="2026-11-30T09:00:02Z")
        self.drain("run")
        # A later event clock, but an older version of the object.
        self.deliver("v1", obj_id=3, created_at="2026-11-30T10:00:09Z",
                     updated_at="2026-11-30T09:00:01Z")
        self.drain("run")
        self.assertEqual(self.state("v1")["state"], "stale")

    def test_equal_created_at_both_handed_out(self):
        self.deliver("same_a", obj_id=4, created_at="2026-11-30T10:00:00Z")
        self.drain("run")
        self.deliver("same_b", obj_id=4, created_at="2026-11-30T10:00:00.000Z")
        self.drain("run")
        self.assertEqual(self.ids(), ["same_a", "same_b"])

    def test_events_without_clock_never_stale_and_unparseable_clock_logged(self):
        self.deliver("clocked", obj_id=6, created_at="2026-11-30T10:00:00Z")
        self.drain("run")
        self.deliver("garbled", obj_id=6, created_at="yesterday-ish")
        self.drain("run")
        self.assertEqual(self.ids(), ["clocked", "garbled"])
        self.assertIn("createdAt is not an ISO-8601 instant", self.srv.log())

    def test_settle_leaves_fresh_events_for_the_next_run(self):
        write_conf(self.sb.conf, **dict(self.keys, settle="60s"))
        self.deliver("fresh", obj_id=1)
        self.drain("run")
        self.assertEqual(self.ids(), [])
        self.drain("run", offset=61)
        self.assertEqual(self.ids(), ["fresh"])


class TestFailure(DrainBase):
    def test_fail_once_then_succeed(self):
        self.deliver("flaky", obj_id=1, behave="fail_once")
        p = self.drain("run")
        self.assertEqual(p.returncode, 1)
        self.assertIn("flaky failed (exit 4)", p.stderr)
        self.assertEqual(self.state("flaky")["state"], "pending")
        p = self.drain("run")       # not due yet: nothing happens
        self.assertEqual(self.ids(), ["flaky"])
        p = self.drain("run", offset=60)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        row = self.state("flaky")
        self.assertEqual((row["state"], row["attempts"]), ("done", 2))
        self.assertEqual([h["attempt"] for h in self.handed()], [1, 2])

    def test_always_failing_goes_dead_then_requeue(self):
        self.deliver("doomed", obj_id=1, behave="fail_always")
        outputs = []
        for k in range(3):
            outputs.append(self.drain("run", offset=k * 4000))
        self.assertIn("doomed failed (exit 3)", outputs[0].stderr)
        self.assertEqual(outputs[1].stderr, "")        # not at every retry
        self.assertIn("doomed is dead after 3 failures", outputs[2].stderr)
        row = self.state("doomed")
        self.assertEqual((row["state"], row["attempts"]), ("dead", 3))
        self.assertIn("boom on attempt 3", bytes(row["last_output"]).decode())
        # dead stays: later runs leave it alone
        self.drain("run", offset=99999)
        self.assertEqual(len(self.ids()), 3)
        st = self.drain("status")
        self.assertEqual(st.returncode, 1)
        self.assertIn("1 dead event", st.stdout)
        p = self.drain("requeue", "doomed")
        self.assertEqual(p.returncode, 0)
        self.drain("run", offset=99999)
        self.assertEqual([h["attempt"] for h in self.handed()], [1, 2, 3, 4])
        self.assertEqual(self.state("doomed")["failures"], 1)  # fresh budget

    def test_handler_past_timeout_killed_with_its_children_and_retried(self):
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="2s"))
        self.deliver("slow", obj_id=1, behave="sleep")
        t0 = time.monotonic()
        p = self.drain("run")
        elapsed = time.monotonic() - t0
        self.assertLess(elapsed, 20)
        self.assertIn("timed out after 2 s", p.stderr)
        row = self.state("slow")
        self.assertEqual((row["state"], row["failures"]), ("pending", 1))
        time.sleep(0.5)
        # The handler's odd duration and -x (whole command line) keep
        # other programs' sleeps on this machine out of the count.
        out = subprocess.run(["pgrep", "-x", "-f", "sleep 59.917"],
                             capture_output=True, text=True).stdout.split()
        self.assertEqual(out, [], "the handler's children survived")

    def test_per_object_hold_releases_on_done_and_on_dead(self):
        self.deliver("a1", obj_id="A", created_at="2026-11-30T10:00:01Z",
                     behave="fail_once")
        self.deliver("a2", obj_id="A", created_at="2026-11-30T10:00:02Z")
        self.deliver("b1", obj_id="B", created_at="2026-11-30T10:00:03Z")
        self.drain("run")
        # a1 failed: a2 is held, b1 (another object) is not.
        self.assertEqual(self.ids(), ["a1", "b1"])
        lst = self.drain("list", "--state", "pending").stdout
        self.assertRegex(lst, r"a2 .*blocked")
        self.drain("run", offset=60)
        self.assertEqual(self.ids(), ["a1", "b1", "a1", "a2"])
        # A dead event releases its object.
        self.deliver("c1", obj_id="C", created_at="2026-11-30T10:00:04Z",
                     behave="fail_always")
        self.deliver("c2", obj_id="C", created_at="2026-11-30T10:00:05Z")
        for k in range(3):
            self.drain("run", offset=k * 4000)
        self.assertEqual(self.state("c1")["state"], "dead")
        self.assertEqual(self.state("c2")["state"], "done")
        self.assertEqual(self.ids()[-1], "c2")

    def test_requeue_of_stale_event_hands_it_out_and_says_so(self):
        self.deliver("newer", obj_id=2, created_at="2026-11-30T10:00:05Z")
        self.drain("run")
        self.deliver("older", obj_id=2, created_at="2026-11-30T10:00:01Z")
        self.drain("run")
        self.assertEqual(self.state("older")["state"], "stale")
        p = self.drain("requeue", "older")
        self.assertIn("older than what was already done", p.stdout)
        p = self.drain("run")
        self.assertEqual((p.stdout, p.stderr), ("", ""))    # run stays silent
        self.assertEqual(self.ids(), ["newer", "older"])
        self.assertEqual(self.handed()[-1]["stale"], "1")
        self.assertEqual(self.state("older")["state"], "done")
        # The requeued old event did not move the object's clock back.
        self.deliver("middle", obj_id=2, created_at="2026-11-30T10:00:03Z")
        self.drain("run")
        self.assertEqual(self.state("middle")["state"], "stale")

    def test_forget_then_replay_accepted_and_handed_out_again(self):
        body = self.deliver("replayed", obj_id=8, created_at="2026-11-30T10:00:00Z")
        self.drain("run")
        self.assertEqual(self.srv.deliver(SECRET_A, "replayed", body)[2], b"duplicate\n")
        p = self.drain("forget", "replayed")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.srv.deliver(SECRET_A, "replayed", body)[2], b"stored\n")
        self.drain("run")
        self.assertEqual(self.ids(), ["replayed", "replayed"])
        # A replay of an event older than what was done since is stale.
        self.deliver("newest", obj_id=8, created_at="2026-11-30T10:00:09Z")
        self.drain("run")
        self.drain("forget", "replayed")
        self.srv.deliver(SECRET_A, "replayed", body)
        self.drain("run")
        self.assertEqual(self.state("replayed")["state"], "stale")


class TestPlumbing(DrainBase):
    def test_body_larger_than_pipe_buffer_and_handler_not_reading(self):
        write_conf(self.sb.conf, **dict(self.keys, max_body="2000000"))
        big = self.deliver("big", obj_id=1, blob="q" * 1500000)
        self.deliver("x_no_stdin", obj_id=2, blob="r" * 500000)
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        h = {x["id"]: x for x in self.handed()}
        import hashlib
        self.assertEqual(h["big"]["sha"], hashlib.sha256(big).hexdigest())
        self.assertEqual(h["big"]["bytes"], len(big))
        self.assertEqual(self.state("x_no_stdin")["state"], "done")

    def test_output_beyond_capture_bound_keeps_the_tail(self):
        self.deliver("noisy", obj_id=1, behave="chatty")
        self.drain("run")
        out = bytes(self.state("noisy")["last_output"])
        self.assertLessEqual(len(out), 4096)
        self.assertTrue(out.endswith(b"THE END\n"), out[-50:])

    def test_overlapping_run_exits_zero_silently(self):
        self.deliver("long", obj_id=1, behave="sleep_short")
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="10s"))
        env = dict(os.environ, RECORD=self.record, **self.sb.env())
        first = subprocess.Popen([DRAIN, "-c", self.sb.conf, "run"], env=env)
        time.sleep(1)
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        self.assertEqual(first.wait(30), 0)
        self.assertEqual(self.ids(), ["long"])

    @harness.sqlite_only("the run lock; PostgreSQL's leases: e2e_postgresql")
    def test_sigkill_mid_handler_hands_that_event_out_again_only(self):
        # k2's first attempt would run a minute, a command of its own
        # beside it.  The drainer is SIGKILLed meanwhile: its guard
        # (lib/drain/guard.h) kills the handler's whole group at once, which
        # frees the run lock the handler inherited, so the next run hands
        # k2 out again -- not after an orphan's minute, nor never (an
        # orphan that hangs would hold the lock for good).
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="120s"))
        self.deliver("k1", obj_id=1, created_at="2026-11-30T10:00:01Z")
        self.deliver("k2", obj_id=2, created_at="2026-11-30T10:00:02Z",
                     behave="sleep_once")
        self.deliver("k3", obj_id=3, created_at="2026-11-30T10:00:03Z")
        env = dict(os.environ, RECORD=self.record, **self.sb.env())
        with harness.reaped(subprocess.Popen([DRAIN, "-c", self.sb.conf, "run"],
                                             env=env)) as d:
            deadline = time.time() + 60
            while "k2" not in self.ids():
                self.assertLess(time.time(), deadline, "k2 never handed out")
                time.sleep(0.05)
            shells = harness.handler_children(d.pid)
            self.assertEqual(len(shells), 1, harness.children(d.pid))
            self.assertFalse(harness.group_gone(shells[0]))
            d.send_signal(signal.SIGKILL)
            d.wait()
        deadline = time.time() + 30
        while not harness.group_gone(shells[0]):
            self.assertLess(time.time(), deadline, "k2's handler outlived its "
                            "SIGKILLed drainer by 30 s")
            time.sleep(0.05)
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stdout), (0, ""))
        self.assertEqual(self.ids(), ["k1", "k2", "k2", "k3"])
        self.assertEqual(self.state("k2")["attempts"], 2)

    @harness.sqlite_only("the run lock (runs share a PostgreSQL inbox)")
    def test_lock_held_by_an_escaped_process_is_diagnosed(self):
        # A handler that leaves a daemon behind (setsid) leaves the run lock
        # held: runs exit quietly, and status must name the lock, not cron.
        # The daemon's command line is this test's own (sleep sums its
        # arguments), so that killing it kills no other test's process.
        # The handler returns only once the daemon has left its process
        # group: when the handler ends the drainer kills what is left of
        # the group, and a daemon caught before its setsid() would hold
        # nothing (this test failed that way twice in one evening).
        daemon = "sleep 30 0.%d" % os.getpid()
        left = os.path.join(self.sb.dir, "daemon-left-the-group")
        self.addCleanup(subprocess.run, ["pkill", "-xf", daemon])
        write_conf(self.sb.conf, **dict(self.keys, handler=
                   "cat >/dev/null; setsid -f sh -c 'touch %s; exec %s'"
                   " </dev/null >/dev/null 2>&1;"
                   " while [ ! -e %s ]; do sleep 0.01; done" % (left, daemon, left)))
        self.deliver("esc1", obj_id=1)
        t0 = time.monotonic()
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertLess(time.monotonic() - t0, 10)
        self.deliver("esc2", obj_id=2)
        p = self.drain("-v", "run")
        self.assertIn("another run holds the lock", p.stdout)
        self.assertEqual(self.state("esc2")["state"], "pending")
        st = self.drain("status", "--max-idle", "60s", offset=120)
        self.assertEqual(st.returncode, 1)
        self.assertIn("found the run lock held", st.stdout)
        self.assertIn("fuser -v", st.stdout)

    def test_max_time_stops_taking_new_events(self):
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="10s"))
        for i in range(4):
            self.deliver("mt%d" % i, obj_id=i, behave="sleep_short",
                         created_at="2026-11-30T10:00:0%dZ" % i)
        t0 = time.monotonic()
        self.drain("run", "--max-time", "1")
        self.assertLess(time.monotonic() - t0, 8)
        self.assertEqual(self.ids(), ["mt0"])

    def test_two_runs_at_once_on_a_backlog_of_1000(self):
        # 1000 deliveries through the real receiver, 5 in flight.
        def send(part):
            for i in part:
                self.deliver("bk%04d" % i, obj_id=i % 37,
                             created_at="2026-11-30T10:%02d:%02dZ" % (i // 60 % 60, i % 60))
        threads = [threading.Thread(target=send, args=(range(k, 1000, 5),))
                   for k in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        write_conf(self.sb.conf, **dict(self.keys, handler="cat >/dev/null; "
                                        "echo \"$WEBHOOK_ID\" >> \"$RECORD\""))
        env = dict(os.environ, RECORD=self.record, **self.sb.env())
        runs = [subprocess.Popen([DRAIN, "-c", self.sb.conf, "run"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(2)]
        # However long a busy machine (or the sanitizer build) takes: a
        # hang is no hand-out for 120 s, not a run longer than some bound.
        seen, last = -1, time.monotonic()
        while any(r.poll() is None for r in runs):
            n = os.path.getsize(self.record) if os.path.exists(self.record) else 0
            if n != seen:
                seen, last = n, time.monotonic()
            self.assertLess(time.monotonic() - last, 120,
                            "no event handed out for 120 s: hung")
            time.sleep(0.5)
        for r in runs:
            out, err = r.communicate(timeout=60)
            self.assertEqual((r.returncode, out, err), (0, b"", b""))
        with open(self.record) as f:
            got = [l.strip() for l in f]
        self.assertEqual(len(got), 1000)
        self.assertEqual(len(set(got)), 1000)

    def test_receiver_not_blocked_while_a_handler_runs(self):
        write_conf(self.sb.conf, **dict(self.keys, handler_timeout="10s"))
        self.deliver("hold", obj_id=1, behave="sleep_short")
        env = dict(os.environ, RECORD=self.record, **self.sb.env())
        d = subprocess.Popen([DRAIN, "-c", self.sb.conf, "run"], env=env)
        time.sleep(0.8)     # the handler is running (sleep 3)
        t0 = time.monotonic()
        self.deliver("during", obj_id=2)
        answered = time.monotonic() - t0
        self.assertIsNone(d.poll(), "the drainer finished too early to tell")
        # Well inside the handler's 3 s: a receiver waiting on the drainer
        # would answer only after it (room left for a busy machine).
        self.assertLess(answered, 2.0)
        d.wait(30)


class TestRetention(DrainBase):
    def cgi_deliver(self, msg_id, body, offset):
        """The receiver as plain CGI under a moved clock (a late retry)."""
        env = dict(self.sb.env(), LD_PRELOAD=FAKETIME, NO_FAKE_STAT="1",
                   FAKETIME="+%ds" % offset, FAKETIME_DONT_RESET="1")
        fake_now = int(time.time()) + offset
        env.update(dict(signed_params(SECRET_A, msg_id, body, ts=fake_now,
                                      conf=self.sb.conf)))
        out = subprocess.run([FCGI], input=body, env=env, capture_output=True,
                             timeout=30)
        return out.stdout

    def test_retention_bodies_then_ids_dead_kept(self):
        body = self.deliver("old_done", obj_id=1)
        self.deliver("old_dead", obj_id=2, behave="fail_always")
        for k in range(3):
            self.drain("run", offset=k * 4000)
        self.assertEqual(self.state("old_dead")["state"], "dead")
        day = 86400
        self.drain("run", offset=6 * day)
        self.assertIsNotNone(self.state("old_done")["body"])
        self.drain("run", offset=8 * day)
        self.assertIsNone(self.state("old_done")["body"])
        # A late retry of the purged-body event: still a duplicate.
        self.assertIn(b"duplicate", self.cgi_deliver("old_done", body, 8 * day))
        self.assertEqual(len(self.ids()), 4)
        self.drain("run", offset=30 * day)
        self.assertIsNotNone(self.state("old_done"))
        p = self.drain("-v", "run", offset=32 * day)
        self.assertIn("1 records", p.stdout)
        self.assertIsNone(self.state("old_done"))
        self.assertEqual(self.state("old_dead")["state"], "dead")
        self.assertIsNotNone(self.state("old_dead")["body"])
        self.assertEqual(self.sb.rows("SELECT * FROM objects"), [])

    def test_retention_below_three_days_refused(self):
        write_conf(self.sb.conf, **dict(self.keys, retention="2d"))
        p = self.drain("run", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr, r"webhook.conf:\d+: retention: below 3d")


class TestOperator(DrainBase):
    def test_status_list_show_json_and_filters(self):
        self.deliver("s1", obj_id=1, etype="payment.created")
        self.deliver("s2", obj_id=2, etype="client.updated")
        p = self.drain("status", check=False)
        self.assertEqual(p.returncode, 1)           # pending, never drained
        self.assertIn("no drainer run recorded", p.stdout)
        self.drain("run")
        p = self.drain("status", "--json")
        self.assertEqual(p.returncode, 0)
        j = json.loads(p.stdout)
        self.assertEqual((j["done"], j["pending"], j["attention"]), (2, 0, []))
        p = self.drain("status", "--max-idle", "60s", offset=120)
        self.assertEqual(p.returncode, 1)
        self.assertIn("the last drainer run started", p.stdout)
        lines = self.drain("list", "--type", "payment.*").stdout.splitlines()
        self.assertEqual(len(lines), 1)
        self.assertIn("s1", lines[0])
        js = [json.loads(l) for l in self.drain("list", "--json", "--object",
                                                 "client:2").stdout.splitlines()]
        self.assertEqual([x["webhook_id"] for x in js], ["s2"])
        self.assertEqual(self.drain("show", "--body", "s1").stdout.encode(),
                         bytes(self.state("s1")["body"]))
        p = self.drain("show", "nope", check=False)
        self.assertEqual(p.returncode, 1)

    def test_bulk_requeue_and_forget_dry_run_first(self):
        for i in range(3):
            self.deliver("bulk%d" % i, obj_id=i, behave="fail_always")
        for k in range(3):
            self.drain("run", offset=k * 4000)
        p = self.drain("requeue", "--state", "dead")
        self.assertIn("would requeue 3 events", p.stdout)
        self.assertEqual(self.state("bulk0")["state"], "dead")
        p = self.drain("requeue", "--state", "dead", "--yes")
        self.assertIn("requeued 3 events", p.stdout)
        self.assertEqual(self.state("bulk0")["state"], "pending")
        p = self.drain("forget", "--state", "pending", "--yes")
        self.assertIn("forgot 3 events", p.stdout)
        self.assertEqual(self.sb.count(), 0)

    def test_missing_inbox_is_not_created_by_status_list_or_run(self):
        # A mistyped `database` must not turn into an empty inbox that
        # status reports as fine (review finding).
        typo = os.path.join(self.sb.dir, "typo.db")
        write_conf(self.sb.conf, **dict(self.keys, database=typo))
        for cmd in (("status",), ("list",), ("show", "x"), ("forget", "x")):
            p = self.drain(*cmd, check=False)
            self.assertEqual(p.returncode, 1, cmd)
            self.assertIn("no inbox at", p.stderr)
        p = self.drain("run")       # cron before the first delivery: quiet
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        self.assertFalse(os.path.exists(typo))

    def test_run_lock_follows_the_real_path_and_token_stays_private(self):
        alias = os.path.join(self.sb.dir, "alias.db")
        os.symlink(self.sb.db, alias)
        other = os.path.join(self.sb.dir, "other.conf")
        write_conf(other, **dict(self.keys, database=alias,
                                 handler="cat >/dev/null; env >> \"$RECORD.env\"; sleep 1"))
        write_conf(self.sb.conf, **dict(self.keys, handler=
                   "cat >/dev/null; env >> \"$RECORD.env\"; sleep 1"))
        self.deliver("lk1", obj_id=1)
        # The drainer's own WEBHOOK_* never reach a real event's handler:
        # the API token, and WEBHOOK_TEST (check --handler's mark only).
        env = dict(os.environ, RECORD=self.record, WEBHOOK_API_TOKEN="tok_secret",
                   WEBHOOK_TEST="1", **self.sb.env())
        runs = [subprocess.Popen([DRAIN, "-c", c, "run"], env=env)
                for c in (self.sb.conf, other)]
        for r in runs:
            self.assertEqual(r.wait(30), 0)
        self.assertEqual(self.state("lk1")["attempts"], 1)   # handed out once
        with open(self.record + ".env") as f:
            handler_env = f.read()
        self.assertIn("WEBHOOK_ID=lk1", handler_env)
        self.assertNotIn("tok_secret", handler_env)
        self.assertNotIn("WEBHOOK_TEST=", handler_env)

    def test_relative_handler_runs_from_the_config_directory(self):
        h = os.path.join(self.sb.dir, "h.sh")
        with open(h, "w") as f:
            f.write("#!/bin/sh\ncat >/dev/null\necho \"$WEBHOOK_ID\" >> \"$RECORD.rel\"\n")
        os.chmod(h, 0o755)
        write_conf(self.sb.conf, **dict(self.keys, handler="./h.sh"))
        self.deliver("rel1", obj_id=1)
        env = dict(os.environ, RECORD=self.record, **self.sb.env())
        p = subprocess.run([DRAIN, "-c", self.sb.conf, "run"], env=env, cwd="/",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        with open(self.record + ".rel") as f:
            self.assertEqual(f.read(), "rel1\n")

    def test_json_output_is_valid_for_any_bytes(self):
        body = b'{"id":"x","type":"bad\xff\xfe type","createdAt":"2026-11-30T10:00:00Z"}'
        self.assertEqual(self.srv.deliver(SECRET_A, "utf1", body)[0], 200)
        for line in self.drain("list", "--json").stdout.splitlines():
            json.loads(line)
        json.loads(self.drain("show", "--json", "utf1").stdout)

    def test_usage_and_config_errors_exit_2(self):
        self.assertEqual(self.drain("frobnicate", check=False).returncode, 2)
        self.assertEqual(self.drain("list", "--state", "bogus", check=False).returncode, 2)
        self.assertEqual(self.drain("forget", check=False).returncode, 2)
        write_conf(self.sb.conf, **dict(self.keys, handlr="x"))
        p = self.drain("status", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("handlr: unknown key", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
