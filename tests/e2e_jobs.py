"""webhook-drain run --jobs N end to end (docs/jobs.md): a real lighttpd with
webhook.fcgi fills the inbox; the drainer runs several handlers at once.

The handler (written into each sandbox) records one line per hand-out:
its start and end (ns, the handler's own clock), the webhook-id, the
object id, the event time and the attempt.  What the tests assert on is
those recorded intervals and the inbox's rows, never wall time: no two
intervals of one object overlap, each object's hand-outs follow its event
times, every event is handed out, and at least two intervals overlap
(the proof of parallelism).

Handlers are gated where a test must catch the run mid-way: an event whose
id is listed in the sandbox's hold/ directory waits (polling) until the
test creates go/ID, and touches started/ID first, so the test knows which
handlers run without guessing at times.
"""
import json
import os
import signal
import time
import unittest

import pgserver
from harness import (PG, SECRET_A, Sandbox, Lighttpd, children, handler_children, end_sandbox,
                     event_body, group_gone, reaped, record_lines, run_drain,
                     start_drain, write_conf)
from provider_sim import World, ApiServer

HANDLER = r"""#!/bin/sh
# Test handler for e2e_jobs: see the module's docstring.
d=%(dir)s
s=$(date +%%s%%N)
: > "$d/started/$WEBHOOK_ID"
cat > /dev/null
if [ -e "$d/hold/$WEBHOOK_ID" ]; then
	i=0
	while [ ! -e "$d/go/$WEBHOOK_ID" ] && [ $i -lt 1200 ]; do
		sleep 0.05; i=$((i+1))
	done
fi
sleep %(sleep)s
e=$(date +%%s%%N)
printf '%%s\t%%s\t%%s\t%%s\t%%s\t%%s\t%%s\n' "$s" "$e" "$WEBHOOK_ID" \
    "${WEBHOOK_OBJECT_ID:--}" "${WEBHOOK_CREATED_AT:--}" "$WEBHOOK_ATTEMPT" \
    "${WEBHOOK_STALE:-0}" >> "$d/record.tsv"
case "$WEBHOOK_ID" in fail*) echo "failing on purpose"; exit 3 ;; esac
exit 0
"""


def created(sec):
    """An event time, sec seconds after 10:00:00 (sec < 60)."""
    return "2026-11-30T10:%02d:%02d.%03dZ" % (sec // 60, sec % 60,
                                              int(sec * 1000) % 1000)


class JobsBase(unittest.TestCase):
    sleep = "0.2"

    def setUp(self):
        self.sb = Sandbox()
        for sub in ("hold", "go", "started"):
            os.mkdir(os.path.join(self.sb.dir, sub))
        self.handler = os.path.join(self.sb.dir, "handler.sh")
        with open(self.handler, "w") as f:
            f.write(HANDLER % {"dir": self.sb.dir, "sleep": self.sleep})
        os.chmod(self.handler, 0o755)
        self.record = os.path.join(self.sb.dir, "record.tsv")
        self.keys = {"database": self.sb.db, "secret": SECRET_A,
                     "handler": self.handler, "settle": "0s",
                     "handler_timeout": "120s", "max_attempts": "5",
                     "retry_base": "1h"}
        write_conf(self.sb.conf, **self.keys)
        self.srv = Lighttpd(self.sb, procs=2)

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def deliver(self, msg_id, obj_id=1, at=0, body=None):
        body = body or event_body(msg_id, obj_id=obj_id, created_at=created(at))
        status = self.srv.deliver(SECRET_A, msg_id, body)[0]
        self.assertEqual(status, 200)

    def deliver_no_object(self, msg_id, at):
        body = json.dumps({"id": msg_id, "type": "ping", "createdAt": created(at),
                           "data": {"note": "no object key"}}).encode()
        self.deliver(msg_id, body=body)

    def hold(self, *ids):
        for i in ids:
            open(os.path.join(self.sb.dir, "hold", i), "w").close()

    def go(self, *ids):
        for i in ids:
            open(os.path.join(self.sb.dir, "go", i), "w").close()

    def started(self):
        return set(os.listdir(os.path.join(self.sb.dir, "started")))

    def wait_for(self, what, cond, timeout=120):
        """Poll cond() until true; a generous bound, not a timing claim."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if cond():
                return
            time.sleep(0.05)
        self.fail("waited %d s for %s" % (timeout, what))

    def drain(self, *args, timeout=300):
        p = run_drain(self.sb, *args, timeout=timeout)
        if p.returncode not in (0, 1):
            self.fail("webhook-drain %s: exit %d\n%s%s" % (
                args, p.returncode, p.stdout, p.stderr))
        return p

    def start_drain(self, *args):
        return reaped(start_drain(self.sb, *args))

    def handed(self):
        """Hand-outs so far, in the order they were recorded."""
        return [{"start": int(c[0]), "end": int(c[1]), "id": c[2],
                 "object": c[3], "created_at": c[4], "attempt": int(c[5]),
                 "stale": c[6]} for c in record_lines(self.record)]

    def state(self, msg_id):
        rows = self.sb.rows("SELECT * FROM events WHERE webhook_id = ?", (msg_id,))
        return rows[0] if rows else None

    def assert_objects_one_at_a_time(self, handed):
        """No two hand-outs of one object overlap in time, and each object's
        hand-outs follow its event times."""
        by_obj = {}
        for h in handed:
            if h["object"] != "-":
                by_obj.setdefault(h["object"], []).append(h)
        for obj, hs in by_obj.items():
            hs.sort(key=lambda h: h["start"])
            for a, b in zip(hs, hs[1:]):
                self.assertLessEqual(a["end"], b["start"],
                                     "object %s: %s and %s overlap"
                                     % (obj, a["id"], b["id"]))
            times = [h["created_at"] for h in hs]
            self.assertEqual(times, sorted(times),
                             "object %s out of order: %s" % (obj, [h["id"] for h in hs]))
        return by_obj

    def overlapping_pairs(self, handed):
        n = 0
        for i, a in enumerate(handed):
            for b in handed[i + 1:]:
                if a["start"] < b["end"] and b["start"] < a["end"]:
                    n += 1
        return n


class TestParallel(JobsBase):
    def test_jobs_4_order_exclusion_and_every_event(self):
        # 8 objects x 4 events, delivered newest first (the order must come
        # from the event times), and 4 events without an object key.
        ids = []
        for k in (3, 2, 1, 0):
            for obj in range(8):
                msg = "o%d_e%d" % (obj, k)
                self.deliver(msg, obj_id=100 + obj, at=k * 10 + obj)
                ids.append(msg)
        for k in range(4):
            self.deliver_no_object("free%d" % k, at=k)
            ids.append("free%d" % k)
        p = self.drain("-v", "run", "--jobs", "4")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("up to 4 handlers at once", p.stdout)
        handed = self.handed()
        self.assertEqual(sorted(h["id"] for h in handed), sorted(ids),
                         "every event handed out exactly once")
        self.assertTrue(all(h["attempt"] == 1 for h in handed))
        by_obj = self.assert_objects_one_at_a_time(handed)
        self.assertEqual(len(by_obj), 8)
        for obj, hs in by_obj.items():
            self.assertEqual([h["id"].split("_")[1] for h in hs],
                             ["e0", "e1", "e2", "e3"])
        self.assertGreater(self.overlapping_pairs(handed), 0,
                           "no two handlers ran at the same time")
        rows = self.sb.rows("SELECT state, count(*) AS n FROM events GROUP BY state")
        self.assertEqual(rows, [{"state": "done", "n": len(ids)}])

    def test_config_jobs_used_and_flag_bounds(self):
        write_conf(self.sb.conf, jobs="3", **self.keys)
        for obj in range(5):
            self.deliver("c%d" % obj, obj_id=obj, at=obj)
        p = self.drain("-v", "run")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # 5 due events of 5 objects: the run fills its 3 slots before it
        # waits for any handler.
        self.assertIn("up to 3 handlers at once", p.stdout)
        self.assertEqual(len(self.handed()), 5)
        for bad in ("0", "65", "x", "-1"):
            p = run_drain(self.sb, "run", "--jobs", bad)
            self.assertEqual(p.returncode, 2, (bad, p.stdout, p.stderr))
            self.assertIn("--jobs", p.stderr)
        write_conf(self.sb.conf, jobs="65", **self.keys)
        p = run_drain(self.sb, "run")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("jobs", p.stderr)

    def test_failing_object_held_while_others_flow(self):
        self.deliver("fail_a1", obj_id=1, at=1)
        self.deliver("a2", obj_id=1, at=2)
        self.deliver("a3", obj_id=1, at=3)
        for obj in range(2, 8):
            self.deliver("b%d_1" % obj, obj_id=obj, at=1)
            self.deliver("b%d_2" % obj, obj_id=obj, at=2)
        p = self.drain("run", "--jobs", "4")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # a failure
        ids = [h["id"] for h in self.handed()]
        self.assertEqual(ids.count("fail_a1"), 1)
        self.assertNotIn("a2", ids)
        self.assertNotIn("a3", ids)
        self.assertEqual(len(ids), 1 + 12)
        self.assert_objects_one_at_a_time(self.handed())
        st = self.state("fail_a1")
        self.assertEqual((st["state"], st["failures"], st["attempts"]),
                         ("pending", 1, 1))
        self.assertEqual((self.state("a2")["state"], self.state("a2")["attempts"]),
                         ("pending", 0))


class TestStale(JobsBase):
    sleep = "0"

    def test_stale_rule_as_with_one_job(self):
        self.deliver("x_new", obj_id=9, at=5)
        self.drain("run", "--jobs", "4")
        self.deliver("x_old", obj_id=9, at=1)
        self.deliver("x_newer", obj_id=9, at=9)
        for obj in range(4):
            self.deliver("y%d" % obj, obj_id=20 + obj, at=3)
        p = self.drain("run", "--jobs", "4")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        ids = [h["id"] for h in self.handed()]
        self.assertNotIn("x_old", ids)
        self.assertEqual(self.state("x_old")["state"], "stale")
        self.assertEqual(self.state("x_newer")["state"], "done")
        self.assertEqual(len(ids), 1 + 1 + 4)

    def test_late_older_event_waits_for_its_object_then_is_stale(self):
        # z0 runs while y2 runs (both gated).  y1, older than y2, arrives
        # meanwhile, and w, another object's.  When z0 ends the run looks
        # again from z0's place: y1 is due but its object is in flight (it
        # must be passed over), w is claimed (its start proves the run
        # looked past y1).  Once y2 ends, y1 is judged: stale.
        self.hold("z0", "y2")
        self.deliver("z0", obj_id=1, at=0)
        self.deliver("y2", obj_id=2, at=2)
        with self.start_drain("-v", "run", "--jobs", "4") as p:
            self.wait_for("z0 and y2 to start",
                          lambda: {"z0", "y2"} <= self.started())
            self.deliver("y1", obj_id=2, at=1)
            self.deliver("w", obj_id=3, at=3)
            self.go("z0")
            self.wait_for("w to start", lambda: "w" in self.started())
            self.assertNotIn("y1", self.started())
            self.go("y2")
            out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, out + err)
        ids = [h["id"] for h in self.handed()]
        self.assertEqual(sorted(ids), ["w", "y2", "z0"])
        self.assertEqual(self.state("y1")["state"], "stale")
        self.assertEqual(self.state("y1")["attempts"], 0)
        self.assert_objects_one_at_a_time(self.handed())


class TestStopping(JobsBase):
    sleep = "0"

    def test_max_time_stops_claiming_and_waits_for_running(self):
        ids = ["m%d" % i for i in range(12)]
        for i, msg in enumerate(ids):
            self.deliver(msg, obj_id=i, at=i)
        self.hold("m0", "m1")
        with self.start_drain("-v", "run", "--jobs", "2", "--max-time", "1") as p:
            self.wait_for("m0 and m1 to start",
                          lambda: {"m0", "m1"} <= self.started())
            # Released only now: max-time passes while both run.  The run
            # must not have ended (nothing recorded yet), and claims none
            # after them.
            time.sleep(1.5)
            self.assertIsNone(p.poll(), "the run ended with handlers running")
            self.go("m0", "m1")
            out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertIn("stopping: --max-time 1 s reached", out)
        self.assertEqual(sorted(h["id"] for h in self.handed()), ["m0", "m1"])
        for msg in ("m0", "m1"):
            self.assertEqual(self.state(msg)["state"], "done")
        for msg in ids[2:]:
            st = self.state(msg)
            self.assertEqual((st["state"], st["attempts"]), ("pending", 0), msg)

    def test_sigterm_lets_running_handlers_finish_and_records_them(self):
        ids = ["t%d" % i for i in range(8)]
        for i, msg in enumerate(ids):
            self.deliver(msg, obj_id=i, at=i)
        self.hold(*ids)
        with self.start_drain("-v", "run", "--jobs", "3") as p:
            self.wait_for("three handlers to start",
                          lambda: len(self.started()) == 3)
            running = self.started()
            p.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            self.assertIsNone(p.poll(), "the run ended with handlers running")
            self.go(*ids)
            out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertIn("SIGTERM received", out)
        self.assertEqual(self.started(), running, "claimed after SIGTERM")
        self.assertEqual(sorted(h["id"] for h in self.handed()), sorted(running))
        for msg in ids:
            st = self.state(msg)
            want = ("done", 1) if msg in running else ("pending", 0)
            self.assertEqual((st["state"], st["attempts"]), want, msg)
        runs = self.sb.rows("SELECT * FROM runs")
        self.assertEqual(len(runs), 1)

    def test_sigkill_mid_jobs_loses_nothing(self):
        ids = ["k%d" % i for i in range(6)]
        for i, msg in enumerate(ids):
            self.deliver(msg, obj_id=i % 3, at=i)
        self.hold(*ids)
        with self.start_drain("run", "--jobs", "3") as p:
            self.wait_for("three handlers to start",
                          lambda: len(self.started()) == 3)
            running = self.started()
            shells = handler_children(p.pid)
            self.assertEqual(len(shells), 3, children(p.pid))
            self.assertFalse(any(group_gone(s) for s in shells))
            p.kill()
            p.communicate(timeout=60)
        # The drainer's guard (lib/drain/guard.h) kills its three handlers with
        # it: none runs on without a deadline, none records a hand-out
        # even once let go, and the run lock they inherited is free.
        self.wait_for("the guard to end the handlers",
                      lambda: all(group_gone(s) for s in shells))
        self.go(*ids)
        # Their events were claimed but never recorded: pending, attempted
        # once.
        for msg in running:
            st = self.state(msg)
            self.assertEqual((st["state"], st["attempts"]), ("pending", 1), msg)
        if PG:
            # The killed drainer's leases hold its three objects until
            # they expire (handler_timeout and more: docs/postgresql.md,
            # "Several drainers: leases"); the next run leaves them alone
            # until then.  Expired here by the server's clock, as if the
            # time had passed.
            p = self.drain("run", "--jobs", "3")
            self.assertEqual(p.returncode, 0, p.stderr)
            for msg in running:
                self.assertEqual(self.state(msg)["state"], "pending", msg)
            self.assertEqual(len(self.sb.rows("SELECT * FROM leases")), 3)
            pgserver.execute(self.sb.direct, "UPDATE leases SET expires_at ="
                             " clock_timestamp() - interval '1 second'")
        # The next run hands out everything, the three again.
        p = self.drain("run", "--jobs", "3")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        for msg in ids:
            self.assertEqual(self.state(msg)["state"], "done", msg)
        handed = self.handed()
        self.assertEqual(sorted(h["id"] for h in handed), sorted(ids))
        again = [h for h in handed if h["id"] in running]
        self.assertEqual(sorted(h["attempt"] for h in again), [2, 2, 2])
        self.assert_objects_one_at_a_time(handed)


# For TestAttend: the slow event's handler never ends by itself; killed
# (SIGTERM to its group), it records its own start and the moment the
# signal reached it.
SLOW_HANDLER = r"""#!/bin/sh
d=%(dir)s
s=$(date +%%s%%N)
trap 'printf "%%s\t%%s\n" "$s" "$(date +%%s%%N)" > "$d/killed/$WEBHOOK_ID"; exit 143' TERM
: > "$d/started/$WEBHOOK_ID"
cat > /dev/null
i=0
while [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done
exit 0
"""


class TestAttend(JobsBase):
    """While one job refetches from an API that hangs, the run still looks
    after the handlers running in the others."""
    TOKEN = "tok_" + "attend" * 6
    HANDLER_TIMEOUT = 2
    API_TIMEOUT = 6

    def setUp(self):
        super().setUp()
        os.mkdir(os.path.join(self.sb.dir, "killed"))
        with open(self.handler, "w") as f:
            f.write(SLOW_HANDLER % {"dir": self.sb.dir})
        self.world = World(seed=20)
        self.api = ApiServer(self.world, self.TOKEN).start()
        token_file = os.path.join(self.sb.dir, "api-token")
        with open(token_file, "w") as f:
            f.write(self.TOKEN + "\n")
        # exec: the script is the shell the run spawns, so the group's
        # SIGTERM finds its trap, and no outer shell's end gets the group
        # SIGKILLed (strays) while the trap writes.
        self.keys.update({"handler": "exec " + self.handler,
                          "handler_timeout": "%ds" % self.HANDLER_TIMEOUT,
                          "api_url": self.api.url, "api_token_file": token_file,
                          "api_timeout": "%ds" % self.API_TIMEOUT})
        write_conf(self.sb.conf, **self.keys)

    def tearDown(self):
        self.api.stop()         # lets the held requests go
        super().tearDown()

    def truncated_event(self):
        ev = self.world.change(action="create", key=("client", None),
                               truncated=False)[0]
        ev = self.world.change(key=ev.key, action="update", truncated=True,
                               pair=False)[0]
        self.assertIn(b'"object_truncated":true', ev.body)
        return ev

    def test_handler_timeout_enforced_while_another_job_refetches(self):
        # The slow event sorts first (an event time two days back; the
        # simulator's are now): it runs in one slot while the other refetches
        # the truncated ones, one after the other, from an API that holds
        # every request past api_timeout.
        self.deliver("slow_a", obj_id=1, at=0)
        truncated = [self.truncated_event() for _ in range(3)]
        for ev in truncated:
            self.assertEqual(self.srv.deliver(SECRET_A, ev.id, ev.body)[0], 200)
        self.api.set_faults([{"path": "^/public/", "hold": True}])
        with self.start_drain("-v", "run", "--jobs", "2") as p:
            # The slow handler's failure is recorded while the refetches
            # still go on: at least one truncated event is not even claimed
            # yet (each refetch waits api_timeout, 3 x 6 s in all, against
            # a 2 s handler_timeout).
            self.wait_for("the slow handler's failure to be recorded",
                          lambda: self.state("slow_a")["failures"] == 1)
            unclaimed = [ev.id for ev in truncated
                         if self.state(ev.id)["attempts"] == 0]
            out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 1, out + err)      # failures
        st = self.state("slow_a")
        self.assertEqual((st["state"], st["failures"], st["attempts"]),
                         ("pending", 1, 1))
        self.assertIn("timed out after %d s" % self.HANDLER_TIMEOUT,
                      st["last_error"])
        self.assertNotEqual(unclaimed, [], "the slow handler's failure was "
                            "recorded only after every refetch")
        # Killed by its timeout, from the handler's own clock: well before
        # even the first refetch could have given up.
        with open(os.path.join(self.sb.dir, "killed", "slow_a")) as f:
            start, killed = (int(x) for x in f.read().split())
        # (Its clock starts after the shell's start-up, the run's before.)
        self.assertGreaterEqual(killed - start, (self.HANDLER_TIMEOUT - 1) * 10**9)
        self.assertLess(killed - start,
                        (self.HANDLER_TIMEOUT + self.API_TIMEOUT) * 10**9,
                        "the handler was killed late: %.1f s after it started"
                        % ((killed - start) / 1e9))
        # Every truncated event was tried (the API timed out: failed).
        self.assertGreaterEqual(self.api.held, 3)
        for ev in truncated:
            st = self.state(ev.id)
            self.assertEqual((st["state"], st["failures"]), ("pending", 1), ev.id)
            self.assertIn("refetch", st["last_error"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
