"""webhook-drain and the provider's API (docs/DESIGN.md "Handler",
"Retries"), against the simulator's API server (tests/provider_sim.py,
shapes in tests/PROVIDER-API.md) on 127.0.0.1: refetch of truncated events
and its failure outcomes, `sync` with its stored cursor, `recover` after an
outage."""
import base64
import json
import os
import signal
import subprocess
import time
import unittest

from harness import (SECRET_A, DRAIN, Sandbox, Lighttpd, end_sandbox,
                     record_lines, run_drain, write_conf)
from provider_sim import MS, World, ApiServer, parse_instant

TOKEN = "tok_" + "s3cr3t" * 6
# Records: id, refetched, gone, truncated, type, base64(stdin)
HANDLER = ("printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' \"$WEBHOOK_ID\" "
           "\"${WEBHOOK_REFETCHED:-0}\" \"${WEBHOOK_OBJECT_GONE:-0}\" "
           "\"${WEBHOOK_TRUNCATED:-0}\" \"$WEBHOOK_TYPE\" \"$(base64 -w0)\" >> \"$RECORD\"")


def api_requests(api):
    import urllib.request
    with urllib.request.urlopen(api.base + "/_sim/requests") as r:
        return json.loads(r.read())


class ApiBase(unittest.TestCase):
    def setUp(self):
        self.sb = Sandbox()
        self.world = World(seed=7)
        self.api = ApiServer(self.world, TOKEN).start()
        self.record = os.path.join(self.sb.dir, "record.tsv")
        token_file = os.path.join(self.sb.dir, "api-token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        self.keys = {"database": self.sb.db, "secret": SECRET_A,
                     "handler": HANDLER, "settle": "0s", "retry_base": "30s",
                     "max_attempts": "5", "api_url": self.api.base + "/public/v1",
                     "api_token_file": token_file, "api_timeout": "2s"}
        write_conf(self.sb.conf, **self.keys)
        self.srv = Lighttpd(self.sb, procs=2)

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv, self.api)

    def conf(self, **changes):
        keys = dict(self.keys)
        for k, v in changes.items():
            if v is None:
                keys.pop(k, None)
            else:
                keys[k] = v
        write_conf(self.sb.conf, **keys)

    def deliver(self, ev):
        st = self.srv.deliver(SECRET_A, ev.id, ev.body)[0]
        self.assertEqual(st, 200)

    def drain(self, *args, offset=None, timeout=120):
        p = run_drain(self.sb, *args, record=self.record, offset=offset,
                      timeout=timeout)
        self.assertNotIn(TOKEN, p.stdout + p.stderr)    # never printed
        return p

    def handed(self):
        return [{"id": c[0], "refetched": c[1], "gone": c[2],
                 "truncated": c[3], "type": c[4],
                 "body": base64.b64decode(c[5])}
                for c in record_lines(self.record)]

    def row(self, mid):
        r = self.sb.rows("SELECT * FROM events WHERE webhook_id = ?", (mid,))
        return r[0] if r else None

    def truncated_event(self, kind="client"):
        ev = self.world.change(action="create", key=(kind, None), truncated=False)[0]
        key = ev.key
        ev = self.world.change(key=key, action="update", truncated=True, pair=False)[0]
        self.assertIn(b'"object_truncated":true', ev.body)
        return ev


class TestRefetch(ApiBase):
    def test_truncated_event_handed_out_with_the_full_object(self):
        ev = self.truncated_event()
        self.deliver(ev)
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        h = self.handed()
        self.assertEqual([x["id"] for x in h], [ev.id])
        self.assertEqual(h[0]["refetched"], "1")
        got = json.loads(h[0]["body"])
        now = self.world.get(ev.kind, ev.obj_id)
        self.assertEqual(got["data"], now)              # the object as it is now
        self.assertEqual((got["id"], got["type"], got["createdAt"]),
                         (ev.id, ev.type, ev.created_at))  # the event's own fields
        # The object's version now guards both clocks: an older webhook of
        # it that arrives late is stale (the next test).
        reqs = [r for r in api_requests(self.api) if "/public/v1/clients/" in r["path"]]
        self.assertEqual(len(reqs), 1)

    def test_refetched_version_makes_an_older_late_event_stale(self):
        # The object's writes, oldest first: A (its event truncated, handed
        # out first), B and C (their events arrive late: B truncated, so
        # only its event clock; C with both clocks), then the write the API
        # shows when A is refetched, version V2.  V2 is published 100 ms
        # after C, so V2 is newer than B's and C's every clock.
        a = self.truncated_event()
        b = self.world.change(key=a.key, action="update", truncated=True, pair=False)[0]
        c = self.world.change(key=a.key, action="update", truncated=False, pair=False)[0]
        self.world.change(key=a.key, action="update", truncated=False, pair=False,
                          at=c.created_ns + 100 * MS)
        v2 = parse_instant(self.world.get(a.kind, a.obj_id)["updated_at"])
        # B and C are newer than A by its own clock: what makes them stale
        # can only be the refetched version, which counts as both clocks.
        self.assertLess(a.created_ns, b.created_ns)
        self.assertLess(b.created_ns, c.created_ns)
        self.assertLess(c.created_ns, v2)
        self.assertLess(c.updated_ns, v2)

        self.deliver(a)
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        h = self.handed()
        self.assertEqual([(x["id"], x["refetched"]) for x in h], [(a.id, "1")])
        self.assertEqual(parse_instant(json.loads(h[0]["body"])["data"]["updated_at"]), v2)

        self.deliver(b)         # late retries of older writes
        self.deliver(c)
        p = self.drain("run")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(self.row(b.id)["state"], "stale")
        self.assertEqual(self.row(c.id)["state"], "stale")
        self.assertEqual([x["id"] for x in self.handed()], [a.id])
        # Judged stale before any refetch: the API was asked once, for A.
        reqs = [r for r in api_requests(self.api) if "/public/v1/clients/" in r["path"]]
        self.assertEqual(len(reqs), 1)

        # Not everything of the object is stale now: a newer write goes out.
        d = self.world.change(key=a.key, action="update", truncated=False, pair=False)[0]
        self.deliver(d)
        self.drain("run")
        self.assertEqual([x["id"] for x in self.handed()], [a.id, d.id])


    def test_no_api_url_hands_truncated_event_out_as_stored(self):
        self.conf(api_url=None, api_token_file=None)
        ev = self.truncated_event()
        self.deliver(ev)
        p = self.drain("run")
        self.assertEqual(p.returncode, 0)
        h = self.handed()[0]
        self.assertEqual((h["refetched"], h["truncated"]), ("0", "1"))
        self.assertEqual(h["body"], ev.body)

    def test_refetch_pattern_refetches_untruncated_events(self):
        self.conf(refetch="payment.* invoice")
        ev = self.world.change(action="create", key=("payment", None), truncated=False)[0]
        self.deliver(ev)
        other = self.world.change(action="create", key=("client", None), truncated=False)[0]
        self.deliver(other)
        self.drain("run")
        h = {x["id"]: x for x in self.handed()}
        self.assertEqual(h[ev.id]["refetched"], "1")
        self.assertEqual(h[other.id]["refetched"], "0")

    def test_404_hands_out_the_stored_event_marked_gone(self):
        ev = self.truncated_event()
        self.world.change(key=ev.key, action="delete")
        self.deliver(ev)
        p = self.drain("run")
        self.assertEqual(p.returncode, 0)
        h = self.handed()[0]
        self.assertEqual((h["refetched"], h["gone"]), ("0", "1"))
        self.assertEqual(h["body"], ev.body)
        self.assertEqual(self.row(ev.id)["state"], "done")

    def test_refetches_counted_in_history_report_and_metrics(self):
        # Two objects the API answers with (one of them in a run that
        # fails), one it has deleted (404: no object, not counted).
        ok = [self.truncated_event(), self.truncated_event()]
        gone = self.truncated_event()
        self.world.change(key=gone.key, action="delete")
        for ev in ok + [gone]:
            self.deliver(ev)
        out = os.path.join(self.sb.dir, "report")
        os.mkdir(out)
        p = self.drain("run", "--report", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(h["refetched"] for h in self.handed()),
                         ["0", "1", "1"])
        runs = self.sb.rows("SELECT refetched FROM runs")
        self.assertEqual([r["refetched"] for r in runs], [2])
        with open(os.path.join(out, "metrics.prom")) as f:
            prom = f.read()
        self.assertIn("\nwebhook_refetches_total 2\n", prom)
        with open(os.path.join(out, "index.html")) as f:
            page = f.read()
        self.assertIn('id="t-refetched-24h"><b>2</b>', page)
        # A failed hand-out of a refetched object counts as well.
        self.conf(handler="cat >/dev/null; exit 1")
        third = self.truncated_event()
        self.deliver(third)
        self.drain("run")
        p = self.drain("report", "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "metrics.prom")) as f:
            self.assertIn("\nwebhook_refetches_total 3\n", f.read())

    def test_429_with_retry_after_is_honoured(self):
        ev = self.truncated_event()
        self.deliver(ev)
        self.api.set_faults([{"path": "/public/v1/clients/", "status": 429,
                              "retry_after": 600}])
        p = self.drain("run")
        self.assertEqual(p.returncode, 1)
        self.assertIn("refetch", p.stderr)
        self.assertEqual(self.handed(), [])
        r = self.row(ev.id)
        self.assertEqual((r["state"], r["failures"]), ("pending", 1))
        # Due only after Retry-After (600 s), not after retry_base (30 s).
        self.api.set_faults([])
        self.drain("run", offset=120)
        self.assertEqual(self.handed(), [])
        self.drain("run", offset=700)
        self.assertEqual(self.handed()[0]["refetched"], "1")

    def test_500_hanging_and_invalid_json_each_retried_then_recovered(self):
        for fault in ({"status": 500}, {"hang": 5}, {"body": "{not json"}):
            self.setUp_again()
            ev = self.truncated_event()
            self.deliver(ev)
            fault = dict(fault, path="/public/v1/clients/")
            self.api.set_faults([fault])
            t0 = time.monotonic()
            p = self.drain("run")
            self.assertLess(time.monotonic() - t0, 15, fault)  # api_timeout 2s
            self.assertEqual(p.returncode, 1, fault)
            self.assertEqual(self.handed(), [], fault)
            self.assertEqual(self.row(ev.id)["state"], "pending", fault)
            self.api.set_faults([])
            self.drain("run", offset=100)
            self.assertEqual([x["refetched"] for x in self.handed()], ["1"], fault)

    def setUp_again(self):
        if os.path.exists(self.record):
            os.unlink(self.record)

    def test_wrong_token_is_said_and_the_event_kept(self):
        bad = os.path.join(self.sb.dir, "bad-token")
        with open(bad, "w") as f:
            f.write("nope\n")
        self.conf(api_token_file=bad)
        ev = self.truncated_event()
        self.deliver(ev)
        p = self.drain("run")
        self.assertEqual(p.returncode, 1)
        self.assertIn("refused the token", p.stderr)
        self.assertEqual(self.row(ev.id)["state"], "pending")

    def test_receiver_does_not_need_the_token_file(self):
        # The web server's user cannot read the cron user's token: fine.
        self.conf(api_token_file=os.path.join(self.sb.dir, "missing-token"))
        ev = self.world.change(action="create", key=("client", None))[0]
        self.deliver(ev)


class TestSync(ApiBase):
    def make_objects(self, n):
        for _ in range(n):
            self.world.change(action="create", key=("client", None), truncated=False)

    def synced(self):
        rows = self.sb.rows("SELECT * FROM events WHERE type = 'client.synced'")
        return [(r["object_id"], r["created_at"]) for r in rows]

    def test_sync_stores_every_object_once_and_hands_them_out(self):
        self.make_objects(250)
        p = self.drain("sync", "clients")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout, "")      # not a terminal: no progress
        ids = [o for o, _ in self.synced()]
        self.assertEqual(len(ids), 250)
        self.assertEqual(len(set(ids)), 250)
        self.assertEqual(len(self.handed()), 250)
        # Again: nothing new.
        self.drain("sync", "clients")
        self.assertEqual(len(self.synced()), 250)
        # One changes: one new event.
        key = next(iter(self.world.objects))
        self.world.change(key=key, action="update")
        self.drain("sync", "clients")
        self.assertEqual(len(self.synced()), 251)

    def test_sync_killed_mid_page_resumes_without_gap_or_duplicate(self):
        self.make_objects(350)
        # Pages of 100.  The third page's request is held until released:
        # the sync is killed while it waits for that page, once the
        # simulator has it, with pages 1 and 2 stored (each with its
        # cursor, in one transaction, before the next page is asked for).
        self.api.set_faults([{"path": "^/public/v1/clients$", "after": 2,
                              "hold": True, "times": 1}])
        self.conf(api_timeout="60s")
        env = dict(os.environ, RECORD=self.record, **self.sb.env())
        d = subprocess.Popen([DRAIN, "-c", self.sb.conf, "sync", "clients"], env=env)
        try:
            self.assertTrue(self.api.wait_held(1, timeout=60),
                            "the sync never asked for its third page")
        finally:
            d.send_signal(signal.SIGKILL)
            d.wait()
        self.assertEqual(d.returncode, -signal.SIGKILL)
        self.assertEqual(len(self.synced()), 200)
        self.assertEqual(self.handed(), [])     # a sync hands out after its last page
        self.api.set_faults([])
        # Pages 1 and 2; the held request is logged when it is answered
        # (when the server stops, to nobody).
        served = len(api_requests(self.api))
        self.assertEqual(served, 2)
        p = self.drain("sync", "clients")
        self.assertEqual(p.returncode, 0, p.stderr)
        # It resumed from the stored page cursor, not from the start: pages
        # 3 and 4 only.
        resumed = api_requests(self.api)[served:]
        self.assertEqual(len(resumed), 2, resumed)
        self.assertIn("cursor=", resumed[0]["query"])
        ids = [o for o, _ in self.synced()]
        self.assertEqual(len(ids), 350)
        self.assertEqual(len(set(ids)), 350)
        handed = [h["id"] for h in self.handed()]
        self.assertEqual(len(handed), 350)
        self.assertEqual(len(handed), len(set(handed)))

    def test_sync_never_rolls_an_object_back(self):
        ev = self.world.change(action="create", key=("client", None), truncated=False)[0]
        newer = self.world.change(key=ev.key, action="update", truncated=False, pair=False)[0]
        self.deliver(newer)
        self.drain("run")
        # The API still shows the same version the webhook carried; the
        # webhook's event clock is later than its updated_at.
        self.drain("sync", "clients")
        rows = self.sb.rows("SELECT state FROM events WHERE type = 'client.synced'")
        self.assertEqual([r["state"] for r in rows], ["stale"])
        self.assertEqual([h["id"] for h in self.handed()], [newer.id])

    def test_webhook_older_than_synced_state_is_stale(self):
        ev = self.world.change(action="create", key=("client", None), truncated=False)[0]
        late = self.world.change(key=ev.key, action="update", truncated=False, pair=False)[0]
        self.world.change(key=ev.key, action="update", truncated=False, pair=False)
        self.drain("sync", "clients")
        self.deliver(late)      # a retry that arrives after the sync
        self.drain("run")
        self.assertEqual(self.row(late.id)["state"], "stale")

    def test_progress_on_a_terminal(self):
        self.make_objects(120)
        out = subprocess.run(["script", "-qec", "%s -c %s sync clients" % (DRAIN, self.sb.conf),
                              "/dev/null"], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, RECORD=self.record))
        self.assertIn("pages", out.stdout)
        self.assertIn("items", out.stdout)
        self.assertIn("sync clients: 120 objects", out.stdout)


class TestRecover(ApiBase):
    def test_recover_after_an_outage(self):
        delivered, missed = [], []
        for i in range(60):
            ev = self.world.change(action="create", key=("order", None), truncated=False)[0]
            (missed if 20 <= i < 45 else delivered).append(ev)
        for ev in delivered:
            self.deliver(ev)
        self.drain("run")
        self.assertEqual(len(self.handed()), 35)
        p = self.drain("-v", "recover", "--since", "1h")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("recover: 60 events listed, 25 were missing", p.stdout)
        handed = [h["id"] for h in self.handed()]
        self.assertEqual(sorted(handed), sorted(e.id for e in delivered + missed))
        self.assertEqual(len(handed), len(set(handed)))     # none twice
        # A late retry of a recovered event is a duplicate.
        self.assertEqual(self.srv.deliver(SECRET_A, missed[0].id, missed[0].body)[2],
                         b"duplicate\n")

    def test_recover_needs_since_and_clamps_to_30_days(self):
        p = self.drain("recover")
        self.assertEqual(p.returncode, 2)
        p = self.drain("recover", "--since", "45d")
        self.assertEqual(p.returncode, 0)
        self.assertIn("30 days", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
