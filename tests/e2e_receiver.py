"""webhook.fcgi end to end: a real lighttpd on 127.0.0.1, a real SQLite
file, every answer of docs/DESIGN.md "The receiver's answers"."""
import hashlib
import hmac
import os
import re
import signal
import socket
import sqlite3
import struct
import subprocess
import threading
import time
import unittest

import harness

from harness import (SECRET_A, SECRET_B, FCGI, Sandbox, Lighttpd, FcgiProcess,
                     end_sandbox, event_body, fingerprint, sign, signed_params,
                     write_conf, SANITIZED)


class ReceiverBase(unittest.TestCase):
    procs = 2
    conf_keys = {}

    def setUp(self):
        self.sb = Sandbox()
        keys = {"database": self.sb.db, "secret": SECRET_A,
                "busy_timeout": "1s"}
        keys.update(self.conf_keys)
        write_conf(self.sb.conf, **keys)
        self.srv = Lighttpd(self.sb, procs=self.procs)
        self.n = 0

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def new_id(self, prefix="msg_"):
        self.n += 1
        return "%s%s_%d" % (prefix, self._testMethodName, self.n)

    def assertNothingStored(self):
        self.assertEqual(self.sb.count(), 0)


class TestAccept(ReceiverBase):
    def test_new_event_stored_byte_for_byte(self):
        mid = self.new_id()
        body = event_body(mid, obj_id=42, created_at="2026-11-30T10:00:00.5+02:00",
                          updated_at="2026-11-30T08:00:00Z")
        status, headers, text = self.srv.deliver(SECRET_A, mid, body)
        self.assertEqual(status, 200)
        self.assertNotIn(mid.encode(), text)       # nothing echoed
        rows = self.sb.rows()
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual(r["webhook_id"], mid)
        self.assertEqual(bytes(r["body"]), body)
        self.assertEqual(r["state"], "pending")
        self.assertEqual(r["type"], "client.updated")
        self.assertEqual(r["created_at"], "2026-11-30T08:00:00.500000000Z")
        self.assertEqual(r["created_at_raw"], "2026-11-30T10:00:00.5+02:00")
        self.assertEqual((r["object_type"], r["object_id"]), ("client", "42"))
        self.assertEqual(r["updated_at"], "2026-11-30T08:00:00.000000000Z")
        self.assertEqual(r["secret_fp"], fingerprint(SECRET_A))
        if harness.PG:
            self.assertEqual(self.sb.rows("SELECT value FROM meta WHERE key ="
                                          " 'schema_version'"), [{"value": "5"}])
            # Not yet counted as received in history by a drainer.
            self.assertEqual(self.sb.rows("SELECT admitted FROM events"),
                             [{"admitted": 0}])
            return
        con = sqlite3.connect(self.sb.db)
        self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "wal")
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], 5)
        # Stored outside the per-object hold index until a drainer admits
        # it (schema.sql, version 2).
        self.assertEqual(con.execute("SELECT admitted FROM events").fetchall(), [(0,)])
        con.close()

    def test_duplicate_and_resigned_duplicate_answer_200_once_stored(self):
        mid = self.new_id()
        body = event_body(mid)
        now = int(time.time())
        self.assertEqual(self.srv.deliver(SECRET_A, mid, body, ts=now)[0], 200)
        status, _, text = self.srv.deliver(SECRET_A, mid, body, ts=now)
        self.assertEqual(status, 200)
        self.assertIn(b"duplicate", text)
        # A retry is re-signed at a later timestamp: still the same event.
        self.assertEqual(self.srv.deliver(SECRET_A, mid, body, ts=now + 7)[0], 200)
        self.assertEqual(self.sb.count(), 1)

    def test_second_secret_verifies_and_is_recorded(self):
        write_conf(self.sb.conf, database=self.sb.db, secret=[SECRET_A, SECRET_B])
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_B, mid, event_body(mid))[0], 200)
        self.assertEqual(self.sb.rows()[0]["secret_fp"], fingerprint(SECRET_B))

    def test_only_second_of_two_signatures_verifies(self):
        mid = self.new_id()
        body = event_body(mid)
        ts = int(time.time())
        bad = sign(SECRET_B, mid, ts, body)
        good = sign(SECRET_A, mid, ts, body)
        h = {"webhook-id": mid, "webhook-timestamp": str(ts),
             "webhook-signature": bad + " " + good}
        self.assertEqual(self.srv.post(h, body)[0], 200)
        self.assertEqual(self.sb.count(), 1)

    def test_repeated_signature_header_lines(self):
        # Two header lines: lighttpd joins them with ", ", leaving a stray
        # comma on the first entry.
        mid = self.new_id()
        body = event_body(mid)
        ts = int(time.time())
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=10)
        c.putrequest("POST", "/hook")
        c.putheader("webhook-id", mid)
        c.putheader("webhook-timestamp", str(ts))
        c.putheader("webhook-signature", sign(SECRET_B, mid, ts, body))
        c.putheader("webhook-signature", sign(SECRET_A, mid, ts, body))
        c.putheader("content-length", str(len(body)))
        c.endheaders(body)
        self.assertEqual(c.getresponse().status, 200)
        c.close()
        self.assertEqual(self.sb.count(), 1)

    def test_header_names_in_any_case(self):
        mid = self.new_id()
        body = event_body(mid)
        ts = int(time.time())
        h = {"WEBHOOK-ID": mid, "Webhook-Timestamp": str(ts),
             "wEbHoOk-SiGnAtUrE": sign(SECRET_A, mid, ts, body)}
        self.assertEqual(self.srv.post(h, body)[0], 200)

    def test_inbound_relay_non_json_stored_nothing_extracted(self):
        mid = self.new_id("in_")
        body = b"\x00\xffnot json at all\r\n" * 10
        self.assertEqual(self.srv.deliver(SECRET_A, mid, body)[0], 200)
        r = self.sb.rows()[0]
        self.assertEqual(bytes(r["body"]), body)
        self.assertIsNone(r["type"])
        self.assertIsNone(r["object_id"])

    def test_inbound_relay_with_event_shaped_json_extracts_nothing(self):
        mid = self.new_id("in_")
        body = event_body("x", obj_id=7)
        self.assertEqual(self.srv.deliver(SECRET_A, mid, body)[0], 200)
        r = self.sb.rows()[0]
        self.assertIsNone(r["type"])
        self.assertIsNone(r["created_at"])
        self.assertIsNone(r["object_id"])

    def test_empty_body_signed(self):
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, b"")[0], 200)
        self.assertEqual(bytes(self.sb.rows()[0]["body"]), b"")

    def test_large_body_over_several_fastcgi_records_chunked(self):
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A,
                   max_body=600000)
        mid = self.new_id()
        body = event_body(mid, blob="x" * 500000)
        status, _, _ = self.srv.deliver(SECRET_A, mid, body, chunked=True)
        self.assertEqual(status, 200)
        self.assertEqual(bytes(self.sb.rows()[0]["body"]), body)


class TestRefuse(ReceiverBase):
    def assertRefused(self, want, status, msg=None):
        self.assertEqual(status, want, msg)
        self.assertNothingStored()

    def test_tampered_body(self):
        mid = self.new_id()
        body = event_body(mid)
        ts = int(time.time())
        h = {"webhook-id": mid, "webhook-timestamp": str(ts),
             "webhook-signature": sign(SECRET_A, mid, ts, body)}
        self.assertRefused(401, self.srv.post(h, body.replace(b"1", b"2"))[0])

    def test_wrong_secret(self):
        mid = self.new_id()
        self.assertRefused(401, self.srv.deliver(SECRET_B, mid, event_body(mid))[0])

    def test_unknown_signature_version_only(self):
        mid = self.new_id()
        body = event_body(mid)
        ts = int(time.time())
        good = sign(SECRET_A, mid, ts, body)
        h = {"webhook-id": mid, "webhook-timestamp": str(ts),
             "webhook-signature": "v2," + good[3:]}
        self.assertRefused(401, self.srv.post(h, body)[0])

    def test_timestamp_six_minutes_old_and_ahead(self):
        for delta in (-360, 360):
            mid = self.new_id()
            status = self.srv.deliver(SECRET_A, mid, event_body(mid),
                                      ts=int(time.time()) + delta)[0]
            self.assertRefused(401, status, "delta %d" % delta)

    def test_timestamp_not_plain_integer(self):
        for ts in ("1e9", "+1764000000", " 1764000000", "01764000000", "abc",
                   str(int(time.time())) + ".0"):
            mid = self.new_id()
            body = event_body(mid)
            h = {"webhook-id": mid, "webhook-timestamp": ts,
                 "webhook-signature": sign(SECRET_A, mid, ts, body)}
            self.assertRefused(401, self.srv.post(h, body)[0], ts)

    def test_signature_without_wellformed_entry(self):
        for sig in ("garbage", "v1,", "v1,!!!!", ",,,", "v1 abc"):
            mid = self.new_id()
            ts = int(time.time())
            h = {"webhook-id": mid, "webhook-timestamp": str(ts),
                 "webhook-signature": sig}
            self.assertRefused(401, self.srv.post(h, b"{}")[0], sig)

    def test_missing_or_empty_headers(self):
        mid = self.new_id()
        body = event_body(mid)
        ts = int(time.time())
        full = {"webhook-id": mid, "webhook-timestamp": str(ts),
                "webhook-signature": sign(SECRET_A, mid, ts, body)}
        for name in full:
            for empty in (False, True):
                h = dict(full)
                if empty:
                    h[name] = ""
                else:
                    del h[name]
                self.assertRefused(400, self.srv.post(h, body)[0],
                                   "%s %s" % (name, "empty" if empty else "missing"))

    def test_svix_branded_headers_are_standard_webhooks(self):
        # Svix-run senders send the same scheme under svix-* names: stored
        # once, byte for byte, and a redelivery is a duplicate (200).
        mid = self.new_id()
        body = event_body(mid)
        ts = int(time.time())
        h = {"svix-id": mid, "svix-timestamp": str(ts),
             "svix-signature": sign(SECRET_A, mid, ts, body)}
        self.assertEqual(self.srv.post(h, body)[0], 200)
        self.assertEqual(self.srv.post(h, body)[0], 200)
        rows = self.sb.rows()
        self.assertEqual([(r["webhook_id"], bytes(r["body"])) for r in rows],
                         [(mid, body)])
        # Signed with another secret under those names: refused as ever.
        h["svix-id"] = mid + "_x"
        h["svix-signature"] = sign(SECRET_B, mid + "_x", ts, body)
        self.assertEqual(self.srv.post(h, body)[0], 401)
        self.assertEqual(self.sb.count(), 1)

    def test_another_providers_delivery_is_named_in_the_log(self):
        # A Stripe delivery sent to this endpoint: 400 as any delivery
        # without webhook-id, and the log line says what it looks like.
        body = b'{"id": "evt_1", "object": "event", "created": 1764000000}'
        ts = int(time.time())
        mac = hmac.new(b"whsec_stripe_test_secret", b"%d." % ts + body,
                       hashlib.sha256).hexdigest()
        h = {"Stripe-Signature": "t=%d,v1=%s" % (ts, mac),
             "content-type": "application/json"}
        self.assertRefused(400, self.srv.post(h, body)[0])
        want = ("this looks like Stripe's Stripe-Signature; this endpoint "
                "is Standard Webhooks: add a [source …] with scheme = stripe")
        deadline = time.monotonic() + 10
        while want not in self.srv.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertIn(want, self.srv.log())
        # Headers of no known provider keep the plain reason.
        self.assertRefused(400, self.srv.post({"X-Other": "1"}, body)[0])
        deadline = time.monotonic() + 10
        plain = re.compile(r"refused 400 .*webhook-id or webhook-timestamp "
                           r"missing$", re.M)
        while not plain.search(self.srv.log()) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertRegex(self.srv.log(), plain)
        self.assertNothingStored()

    def test_get_is_405_with_allow(self):
        status, headers, _ = self.srv.post({}, b"", method="GET")
        self.assertEqual(status, 405)
        self.assertEqual(headers.get("Allow"), "POST")

    def test_body_over_max_body(self):
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A,
                   max_body=1000)
        mid = self.new_id()
        body = event_body(mid, blob="y" * 2000)
        self.assertRefused(413, self.srv.deliver(SECRET_A, mid, body)[0])
        # Chunked: lighttpd still sends a length; the limit holds either way.
        mid = self.new_id()
        body = event_body(mid, blob="y" * 2000)
        self.assertRefused(413, self.srv.deliver(SECRET_A, mid, body, chunked=True)[0])
        # At the limit exactly: accepted.
        mid = self.new_id()
        body = event_body(mid)
        body = body[:-1] + b" " * (1000 - len(body)) + b"}"
        self.assertEqual(len(body), 1000)
        self.assertEqual(self.srv.deliver(SECRET_A, mid, body)[0], 200)

    def test_refusals_logged_with_id_never_secret_or_body(self):
        mid = self.new_id()
        body = event_body(mid, marker="BODYMARKER")
        self.srv.deliver(SECRET_B, mid, body)
        time.sleep(0.2)
        log = self.srv.log()
        self.assertRegex(log, r"refused 401 webhook-id=%s: " % re.escape(mid))
        self.assertNotIn("BODYMARKER", log)
        self.assertNotIn(SECRET_A[6:], log)
        self.assertNotIn(SECRET_B[6:], log)


class TestMisconfigured(ReceiverBase):
    def test_config_without_secret_is_503_with_clear_log(self):
        write_conf(self.sb.conf, database=self.sb.db)
        mid = self.new_id()
        status, headers, _ = self.srv.deliver(SECRET_A, mid, event_body(mid))
        self.assertEqual(status, 503)
        self.assertIn("Retry-After", headers)
        time.sleep(0.2)
        self.assertIn("secret: required", self.srv.log())
        self.assertNothingStored()

    def test_bad_secret_value_never_logged(self):
        write_conf(self.sb.conf, database=self.sb.db,
                   secret="whsec_C2FVsBQIhrscChlQIMV-b5sSYspob7oD")
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 503)
        time.sleep(0.2)
        log = self.srv.log()
        self.assertIn("secret: not standard base64", log)
        self.assertNotIn("C2FVsBQIhrscChlQIMV", log)

    def wait_log(self, text):
        deadline = time.monotonic() + 30
        while text not in self.srv.log():
            self.assertLess(time.monotonic(), deadline, self.srv.log())
            time.sleep(0.05)
        return self.srv.log()

    def test_bad_secret_line_beside_a_good_one_is_skipped(self):
        # One secret line that cannot load (a URL-safe paste) beside one
        # that does: not 503 for every delivery -- the good one verifies,
        # the bad line is logged, never its value (docs/signing-secrets.md).
        bad = "whsec_C2FVsBQIhrscChlQIMV-b5sSYspob7oD"
        write_conf(self.sb.conf, secret=[bad, SECRET_A], database=self.sb.db)
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 200)
        self.assertEqual(self.sb.count(), 1)
        log = self.wait_log("this secret is not used")
        self.assertRegex(log, r"webhook\.conf:1: secret: not standard base64"
                         r".*this secret is not used; 1 other verifies")
        self.assertNotIn("C2FVsBQIhrscChlQIMV", log)
        self.assertNotIn("503", log)

    def test_secret_with_spare_bits_loads_as_the_references(self):
        # The Python reference's test secret shape: its last character
        # carries bits past the last byte, which base64.b64decode (here
        # harness.sign) ignores; so does the receiver.
        odd = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr"
        write_conf(self.sb.conf, database=self.sb.db, secret=odd)
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(odd, mid, event_body(mid))[0], 200)
        self.assertEqual(self.sb.rows()[0]["secret_fp"], fingerprint(odd))

    def test_edited_config_applies_without_restart(self):
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_B, mid, event_body(mid))[0], 401)
        pids = self.srv.workers()
        # Rotation: add the new secret; the same workers accept it next request.
        write_conf(self.sb.conf, database=self.sb.db, secret=[SECRET_B, SECRET_A])
        for _ in range(4):      # reach every worker
            mid = self.new_id()
            self.assertEqual(self.srv.deliver(SECRET_B, mid, event_body(mid))[0], 200)
        self.assertEqual(self.srv.workers(), pids)
        # Then drop the old one.
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_B)
        for _ in range(4):
            mid = self.new_id()
            self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 401)

    def test_unopenable_database_is_503(self):
        for bad in ("/nonexistent-dir/inbox.db", "/proc/inbox.db"):
            write_conf(self.sb.conf, database=bad, secret=SECRET_A)
            mid = self.new_id()
            status, headers, _ = self.srv.deliver(SECRET_A, mid, event_body(mid))
            self.assertEqual(status, 503, bad)
            self.assertIn("Retry-After", headers)

    def test_database_path_is_a_directory_is_503(self):
        os.mkdir(os.path.join(self.sb.dir, "adir"))
        write_conf(self.sb.conf, database=os.path.join(self.sb.dir, "adir"),
                   secret=SECRET_A)
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 503)

    @harness.sqlite_only("file modes; a role's privileges: e2e_postgresql")
    @unittest.skipUnless(os.geteuid() == 0, "needs root to switch to nobody")
    def test_readonly_database_is_503(self):
        # A database this user may read but not write, as when the web
        # server's user differs from the one that created the inbox.
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 200)
        for p in (self.sb.dir, self.sb.conf):
            os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.sb.db + suffix):
                os.chmod(self.sb.db + suffix, 0o644)
        mid = self.new_id()
        body = event_body(mid)
        env = dict(self.sb.env())
        env.update(dict(signed_params(SECRET_A, mid, body, conf=self.sb.conf)))
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # the log dir is root's
        env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
        out = subprocess.run(["runuser", "-u", "nobody", "--", FCGI], input=body,
                             env=env, capture_output=True, timeout=30)
        self.assertTrue(out.stdout.startswith(b"Status: 503"), out.stdout + out.stderr)
        self.assertIn(b"Retry-After: 30", out.stdout)
        self.assertIn(b"readonly", out.stderr)
        self.assertEqual(self.sb.count(), 1)

    def test_config_or_database_inside_document_root_is_503(self):
        inside = os.path.join(self.srv.docroot, "inbox.db")
        write_conf(self.sb.conf, database=inside, secret=SECRET_A)
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 503)
        self.assertFalse(os.path.exists(inside))
        time.sleep(0.2)
        self.assertIn("inside the document root", self.srv.log())

    def deliver_meets_the_lock(self):
        """A delivery while another session holds the lock it needs: 503
        with Retry-After 30, after waiting busy_timeout (1 s).  Its id."""
        mid = self.new_id()
        t0 = time.monotonic()
        status, headers, _ = self.srv.deliver(SECRET_A, mid, event_body(mid))
        waited = time.monotonic() - t0
        self.assertEqual(status, 503)
        self.assertEqual(headers.get("Retry-After"), "30")
        self.assertGreater(waited, 0.9)    # it did wait busy_timeout (1 s)
        return mid

    @unittest.skipUnless(harness.PG, "PostgreSQL's version of the next")
    def test_table_lock_held_past_busy_timeout_then_released(self):
        # Another session holds a lock every insert waits for: the store
        # gives up at busy_timeout (lock_timeout and our own wait), 503.
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 200)
        holder = subprocess.Popen(
            ["psql", "-X", "-q", "-d", self.sb.direct, "-c",
             "BEGIN; LOCK TABLE events IN SHARE MODE;"
             " SELECT pg_sleep(600);"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while not self.sb.rows("SELECT pid FROM pg_locks WHERE"
                                   " relation = 'events'::regclass"
                                   " AND mode = 'ShareLock' AND granted"):
                self.assertLess(time.time(), deadline, "lock never taken")
                time.sleep(0.05)
            mid = self.deliver_meets_the_lock()
        finally:
            # Its backend sleeps on, lock held, until told to stop.
            self.sb.rows("SELECT pg_terminate_backend(pid) FROM pg_locks"
                         " WHERE relation = 'events'::regclass"
                         " AND mode = 'ShareLock'")
            holder.kill()
            holder.wait()
        deadline = time.time() + 60
        while True:   # the server notices the client gone, then the lock
            status = self.srv.deliver(SECRET_A, mid, event_body(mid))[0]
            if status == 200 or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(status, 200)
        self.assertEqual(self.sb.count(), 2)

    @harness.sqlite_only("SQLite's write lock; PostgreSQL's: the test above")
    def test_write_lock_held_past_busy_timeout_then_released(self):
        mid = self.new_id()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 200)
        con = sqlite3.connect(self.sb.db, isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
        try:
            mid = self.deliver_meets_the_lock()
        finally:
            con.execute("ROLLBACK")
            con.close()
        self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 200)
        self.assertEqual(self.sb.count(), 2)


class TestLostFiles(ReceiverBase):
    @harness.sqlite_only("files moved under the receiver")
    def test_database_moved_or_deleted_under_the_receiver(self):
        # Every 200 must be in the file the config names: a worker must not
        # go on acknowledging into an unlinked or moved-away file.
        acked = []

        def send(prefix, n):
            for i in range(n):
                mid = self.new_id(prefix)
                if self.srv.deliver(SECRET_A, mid, event_body(mid))[0] == 200:
                    acked.append(mid)

        send("before", 3)
        os.rename(self.sb.db, self.sb.db + ".moved")
        for suffix in ("-wal", "-shm"):
            if os.path.exists(self.sb.db + suffix):
                os.rename(self.sb.db + suffix, self.sb.db + ".moved" + suffix)
        acked.clear()
        send("moved", 6)
        for f in os.listdir(self.sb.dir):
            if f.startswith("inbox.db"):
                os.unlink(os.path.join(self.sb.dir, f))
        acked_after_delete = []
        before = len(acked)
        send("deleted", 6)
        acked_after_delete = acked[before:]
        stored = {r["webhook_id"] for r in self.sb.rows("SELECT webhook_id FROM events")}
        self.assertTrue(acked_after_delete, "nothing was acknowledged at all")
        self.assertEqual(sorted(set(acked_after_delete) - stored), [])
        time.sleep(0.2)
        self.assertIn("moved or deleted while open", self.srv.log())


class TestConcurrency(ReceiverBase):
    procs = 4

    def test_five_in_flight_with_duplicates_each_stored_once(self):
        ids = ["msg_conc_%d" % i for i in range(60)]
        bodies = {i: event_body(i, obj_id=n % 7) for n, i in enumerate(ids)}
        # Every id delivered 3 times, 5 at a time, interleaved.
        work = [i for i in ids for _ in range(3)]
        work = work[::2] + work[1::2]
        results = []
        lock = threading.Lock()

        def worker(items):
            for i in items:
                st = self.srv.deliver(SECRET_A, i, bodies[i])[0]
                with lock:
                    results.append(st)

        threads = [threading.Thread(target=worker, args=(work[k::5],))
                   for k in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [200] * len(work))
        stored = sorted(r["webhook_id"] for r in
                        self.sb.rows("SELECT webhook_id FROM events"))
        self.assertEqual(stored, sorted(ids))


class TestDirect(unittest.TestCase):
    """Cases no web server produces on demand, through our FastCGI client
    (webhook.fcgi on a listening socket, as spawn-fcgi starts it), and the
    plain-CGI mode."""

    def setUp(self):
        self.sb = Sandbox()
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A)
        self.p = FcgiProcess(self.sb, env={"WEBHOOK_CONF": self.sb.conf})

    def tearDown(self):
        end_sandbox(self, self.sb, self.p)

    def test_repeated_signature_params_like_nginx_1_22(self):
        body = event_body("msg_rep")
        ts = int(time.time())
        params = [("REQUEST_METHOD", "POST"), ("CONTENT_LENGTH", str(len(body))),
                  ("HTTP_WEBHOOK_ID", "msg_rep"), ("HTTP_WEBHOOK_TIMESTAMP", str(ts)),
                  ("HTTP_WEBHOOK_SIGNATURE", sign(SECRET_B, "msg_rep", ts, body)),
                  ("HTTP_WEBHOOK_SIGNATURE", sign(SECRET_A, "msg_rep", ts, body))]
        self.assertEqual(self.p.request(params, body)[0], 200)
        self.assertEqual(self.sb.count(), 1)

    def test_no_content_length_body_read_to_end_over_many_records(self):
        body = event_body("msg_nocl", blob="z" * 300000)
        params = [p for p in signed_params(SECRET_A, "msg_nocl", body)
                  if p[0] != "CONTENT_LENGTH"]
        s = self.p.open(params)
        for i in range(0, len(body), 1000):     # many small records
            self.p.send_stdin(s, body[i:i + 1000])
        self.assertEqual(self.p.finish(s)[0], 200)
        self.assertEqual(bytes(self.sb.rows()[0]["body"]), body)

    def test_no_content_length_over_max_body_is_413(self):
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A, max_body=5000)
        body = event_body("msg_big", blob="z" * 10000)
        params = [p for p in signed_params(SECRET_A, "msg_big", body)
                  if p[0] != "CONTENT_LENGTH"]
        self.assertEqual(self.p.request(params, body)[0], 413)
        self.assertEqual(self.sb.count(), 0)

    def test_content_length_over_max_body_refused_before_reading(self):
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A, max_body=5000)
        params = signed_params(SECRET_A, "msg_cl", b"{}")
        params = [(k, "999999999" if k == "CONTENT_LENGTH" else v) for k, v in params]
        s = self.p.open(params)     # no body sent at all
        self.assertEqual(self.p.finish(s)[0], 413)

    def test_bad_or_lying_content_length_is_400(self):
        body = event_body("msg_lie")
        for cl in ("abc", "-5", "12 ", str(len(body) + 10)):
            params = [(k, cl if k == "CONTENT_LENGTH" else v)
                      for k, v in signed_params(SECRET_A, "msg_lie", body)]
            self.assertEqual(self.p.request(params, body)[0], 400, cl)
        self.assertEqual(self.sb.count(), 0)

    def test_overlong_id_is_400_and_huge_signature_header_401(self):
        body = b"{}"
        long_id = "m" * 300
        self.assertEqual(self.p.request(signed_params(SECRET_A, long_id, body), body)[0], 400)
        params = signed_params(SECRET_A, "msg_huge", body)
        params = [(k, v + " " + "v1,AAAA" * 4000 if k == "HTTP_WEBHOOK_SIGNATURE" else v)
                  for k, v in params]
        self.assertEqual(self.p.request(params, body)[0], 401)
        self.assertEqual(self.sb.count(), 0)

    def test_webhook_conf_as_fastcgi_param(self):
        other = os.path.join(self.sb.dir, "other.conf")
        other_db = os.path.join(self.sb.dir, "other.db")
        write_conf(other, database=other_db, secret=SECRET_B)
        body = event_body("msg_param")
        params = signed_params(SECRET_B, "msg_param", body, conf=other)
        self.assertEqual(self.p.request(params, body)[0], 200)
        self.assertEqual(self.sb.count(), 0)
        self.assertTrue(os.path.exists(other_db))

    def test_slow_body_gets_408_at_body_timeout_and_blocks_nobody(self):
        # Servers that stream bodies (mod_proxy_fcgi) hand a trickling
        # client straight to us: it must not hold a thread past
        # body_timeout, nor delay the deliveries behind it.
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A,
                   body_timeout="1s")
        body = event_body("msg_slow", blob="s" * 5000)
        slow = [self.p.open(signed_params(SECRET_A, "msg_slow%d" % i, body),
                            [body[:100]]) for i in range(12)]   # > threads
        t0 = time.monotonic()
        fast = event_body("msg_fast")
        self.assertEqual(self.p.request(signed_params(SECRET_A, "msg_fast", fast),
                                        fast)[0], 200)
        self.assertLess(time.monotonic() - t0, 5)
        statuses = [self.p.finish(s, timeout=10, end_stdin=False)[0] for s in slow]
        self.assertEqual(statuses, [408] * 12)
        self.assertEqual([r["webhook_id"] for r in self.sb.rows()], ["msg_fast"])

    def test_kept_connection_idle_past_body_timeout_serves_the_next(self):
        # FCGI_KEEP_CONN (nginx's fastcgi_keep_conn on): the server reuses
        # the connection.  The body's read limit must not outlive its
        # request: the next request on the connection may come much later.
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A,
                   body_timeout="1s")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.p.path)
        s.settimeout(10)
        for n, pause in ((1, 0), (2, 2.5)):
            time.sleep(pause)                       # idle, past body_timeout
            mid = "msg_keep%d" % n
            body = event_body(mid)
            blob = b"".join(harness._nv(k.encode(), v.encode())
                            for k, v in signed_params(SECRET_A, mid, body))
            s.sendall(harness._record(harness.FCGI_BEGIN_REQUEST,
                                      struct.pack(">HB5x", 1, 1), n) +   # KEEP_CONN
                      harness._record(harness.FCGI_PARAMS, blob, n) +
                      harness._record(harness.FCGI_PARAMS, b"", n) +
                      harness._record(harness.FCGI_STDIN, body, n) +
                      harness._record(harness.FCGI_STDIN, b"", n))
            out = harness.read_answer(s, n)
            self.assertTrue(out.startswith(b"Status: 200"), (mid, out))
        s.close()
        self.assertEqual(self.sb.count(), 2)

    def test_sigterm_when_idle_exits_within_a_second(self):
        body = event_body("msg_idle")
        self.assertEqual(self.p.request(signed_params(SECRET_A, "msg_idle", body), body)[0], 200)
        t0 = time.monotonic()
        self.p.proc.send_signal(signal.SIGTERM)
        self.p.proc.wait(5)
        # Promptly, not at some poll's or linger's end (room for a busy
        # machine's scheduling).
        self.assertLess(time.monotonic() - t0, 3.0)

    def sockets_held(self):
        fd_dir = "/proc/%d/fd" % self.p.proc.pid
        n = 0
        for name in os.listdir(fd_dir):
            try:
                n += os.readlink(os.path.join(fd_dir, name)).startswith("socket:")
            except FileNotFoundError:
                pass
        return n

    def wait_accepted(self, before, timeout=60):
        deadline = time.monotonic() + timeout
        while self.sockets_held() <= before:
            self.assertLess(time.monotonic(), deadline, "never accepted")
            time.sleep(0.02)

    def test_sigterm_before_a_new_connection_speaks_serves_it_then_exits(self):
        # A connection accepted just before the stop, whose begin record
        # comes a moment later (a busy web server): served, then the
        # process exits.  In libfcgi's own accept our wake signal ended
        # its wait for those first bytes: the connection was dropped, and
        # the thread then spun on the closed descriptor for ever.
        before = self.sockets_held()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.p.path)
        self.wait_accepted(before)
        self.p.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)             # the stop's wake signals meanwhile
        self.assertIsNone(self.p.proc.poll())   # the connection in hand
        body = event_body("msg_late_params")
        s.sendall(harness._record(harness.FCGI_BEGIN_REQUEST,
                                  struct.pack(">HB5x", 1, 0)))
        blob = b"".join(harness._nv(k.encode(), v.encode()) for k, v in
                        signed_params(SECRET_A, "msg_late_params", body))
        s.sendall(harness._record(harness.FCGI_PARAMS, blob) +
                  harness._record(harness.FCGI_PARAMS, b""))
        self.p.send_stdin(s, body)
        self.assertEqual(self.p.finish(s)[0], 200)
        self.p.proc.wait(10)
        self.assertEqual(self.sb.count(), 1)

    def test_peer_that_keeps_sending_after_the_answer_holds_nothing(self):
        # A refusal before the body (413) is followed by a lingering close:
        # read what the server still sends, so that closing does not reset
        # the answer away.  A peer that never stops sending must not hold
        # the thread, nor a stop, past the linger's 2 s in all (libfcgi's
        # own lingering close waited 2 s per read, without end).
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A, max_body=5000)
        params = signed_params(SECRET_A, "msg_linger", b"{}")
        params = [(k, "999999" if k == "CONTENT_LENGTH" else v) for k, v in params]
        s = self.p.open(params)
        s.sendall(struct.pack(">BBHHBx", 1, harness.FCGI_STDIN, 1, 5000, 0))
        s.settimeout(30)
        self.assertTrue(harness.read_answer(s).startswith(b"Status: 413"))
        self.p.proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        stop = threading.Event()

        def trickle():      # a byte every 0.2 s, until the socket fails
            try:
                while not stop.is_set():
                    s.send(b"x")
                    time.sleep(0.2)
            except OSError:
                pass
        t = threading.Thread(target=trickle)
        t.start()
        try:
            self.p.proc.wait(20)
        finally:
            stop.set()
            t.join()
            s.close()
        self.assertLess(time.monotonic() - t0, 20)

    def test_sigterm_with_a_kept_idle_connection_exits_and_closes_it(self):
        # FCGI_KEEP_CONN: a thread waits on the connection for its next
        # request; a stop ends that wait at once.
        body = event_body("msg_kept")
        s = self.p.open(signed_params(SECRET_A, "msg_kept", body), [body],
                        keep=True)
        s.sendall(harness._record(harness.FCGI_STDIN, b""))
        s.settimeout(10)
        self.assertTrue(harness.read_answer(s).startswith(b"Status: 200"))
        t0 = time.monotonic()
        self.p.proc.send_signal(signal.SIGTERM)
        self.p.proc.wait(5)
        self.assertLess(time.monotonic() - t0, 3.0)
        self.assertEqual(s.recv(65536), b"")    # closed by the exit
        s.close()
        self.assertEqual(self.sb.count(), 1)

    def test_sigterm_when_busy_finishes_the_request(self):
        body = event_body("msg_busy")
        s = self.p.open(signed_params(SECRET_A, "msg_busy", body), [body[:10]])
        self.p.wait_read(s)      # it holds the request
        self.p.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        self.assertIsNone(self.p.proc.poll())   # still finishing
        self.p.send_stdin(s, body[10:])
        self.assertEqual(self.p.finish(s)[0], 200)
        self.p.proc.wait(5)
        self.assertEqual(self.sb.count(), 1)

    def test_tcp_listener_serves_but_refuses_fcgi_web_server_addrs(self):
        # spawn-fcgi -p: fd 0 listens on 127.0.0.1.  Served; but libfcgi's
        # peer check (FCGI_WEB_SERVER_ADDRS) ran inside its own accept,
        # which we no longer use: with the variable set we refuse to start
        # rather than serve every peer.
        def start(env):
            lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            lsock.bind(("127.0.0.1", 0))
            lsock.listen(8)
            e = dict(self.sb.env(), WEBHOOK_CONF=self.sb.conf, **env)
            proc = subprocess.Popen([FCGI], stdin=lsock.fileno(),
                                    stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env=e)
            return lsock, proc

        lsock, proc = start({"FCGI_WEB_SERVER_ADDRS": "127.0.0.1"})
        try:
            self.assertEqual(proc.wait(30), 1)
            self.assertIn(b"FCGI_WEB_SERVER_ADDRS is not supported",
                          proc.stderr.read())
        finally:
            lsock.close()
        lsock, proc = start({})
        try:
            body = event_body("msg_tcp")
            s = socket.create_connection(lsock.getsockname(), timeout=30)
            blob = b"".join(harness._nv(k.encode(), v.encode()) for k, v in
                            signed_params(SECRET_A, "msg_tcp", body))
            s.sendall(harness._record(harness.FCGI_BEGIN_REQUEST,
                                      struct.pack(">HB5x", 1, 0)) +
                      harness._record(harness.FCGI_PARAMS, blob) +
                      harness._record(harness.FCGI_PARAMS, b"") +
                      harness._record(harness.FCGI_STDIN, body) +
                      harness._record(harness.FCGI_STDIN, b""))
            self.assertEqual(harness.parse_cgi(harness.read_answer(s))[0], 200)
            s.close()
        finally:
            proc.terminate()
            proc.wait(30)
            proc.stderr.close()
            lsock.close()
        self.assertEqual(self.sb.count(), 1)

    def test_plain_cgi_mode(self):
        body = event_body("msg_cgi")
        env = dict(self.sb.env())
        env.update(dict(signed_params(SECRET_A, "msg_cgi", body, conf=self.sb.conf)))
        out = subprocess.run([FCGI], input=body, env=env, capture_output=True,
                             timeout=30)
        self.assertEqual(out.returncode, 0)
        self.assertTrue(out.stdout.startswith(b"Status: 200"), out.stdout)
        out = subprocess.run([FCGI], input=body, env=env, capture_output=True,
                             timeout=30)
        self.assertIn(b"duplicate", out.stdout)
        self.assertEqual(self.sb.count(), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
