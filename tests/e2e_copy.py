"""webhook-drain copy end to end (docs/moving.md): a real lighttpd with
webhook.fcgi keeps storing into the source while copy runs, then the
documented cut-over moves the receivers to the destination; both inboxes are
drained by real runs, and every acknowledged event is handed out exactly
once across the two.  Also: a copy SIGKILLed mid-way and run again, two
copies giving the same destination, clocks and history carried over (an old
event arriving after the move is stale there), and the refusals."""
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import unittest

from harness import (SECRET_A, DRAIN, Sandbox, Lighttpd, end_sandbox,
                     event_body, write_conf)
import pgserver

# One line per hand-out: its id.
HANDLER = "cat >/dev/null; echo \"$WEBHOOK_ID\" >> \"$RECORD\""

# Each table in key order (schema.sql), for dumps.
TABLES = {"events": "webhook_id", "objects": "object_type, object_id",
          "cursors": "name", "history": "width_s, bucket_s, name, label, idx",
          "runs": "started_at"}


def dump(path, skip=("admitted",), tables=TABLES):
    """Every row of the copied tables (and `copied`, when asked), sorted
    by key; columns in `skip` left out."""
    con = sqlite3.connect(path, timeout=30)
    try:
        out = {}
        for t, key in tables.items():
            cols = [r[1] for r in con.execute("PRAGMA table_info(%s)" % t)
                    if r[1] not in skip]
            out[t] = con.execute("SELECT %s FROM %s ORDER BY %s" % (
                ", ".join(cols), t, key)).fetchall()
        return out
    finally:
        con.close()


def count(db, where="true"):
    """Events in an inbox (a SQLite file or a PostgreSQL URI) matching
    where; 0 when it has no tables yet."""
    if "://" in db:
        rows = pgserver.query(db, "SELECT count(*) AS n FROM events WHERE "
                              + where)
        return rows[0]["n"] if rows else 0
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute("SELECT count(*) FROM events WHERE " + where).fetchone()[0]
    finally:
        con.close()


def ids(db, where="true"):
    """The webhook ids of an inbox's events matching where."""
    if "://" in db:
        return {r["webhook_id"] for r in pgserver.query(
            db, "SELECT webhook_id FROM events WHERE " + where)}
    con = sqlite3.connect(db, timeout=30)
    try:
        return {r[0] for r in con.execute(
            "SELECT webhook_id FROM events WHERE " + where)}
    finally:
        con.close()


def dump_pg(uri, columns, tables=TABLES):
    """dump()'s form of a PostgreSQL inbox: the same columns (columns:
    dump()'s result of the source, for their names), sorted by key."""
    out = {}
    for t, key in tables.items():
        rows = pgserver.query(uri, "SELECT %s FROM %s ORDER BY %s" % (
            ", ".join(columns[t]), t, key))
        out[t] = [tuple(r[c] for c in columns[t]) for r in rows]
    return out


def columns(path, skip=("admitted",), tables=TABLES):
    con = sqlite3.connect(path, timeout=30)
    try:
        return {t: [r[1] for r in con.execute("PRAGMA table_info(%s)" % t)
                    if r[1] not in skip] for t in tables}
    finally:
        con.close()


class CopyBase(unittest.TestCase):
    def setUp(self):
        self.sb = Sandbox()
        self.new = os.path.join(self.sb.dir, "new.db")
        self.old_conf = os.path.join(self.sb.dir, "webhook.conf.old")
        self.record = os.path.join(self.sb.dir, "record.txt")
        self.keys = {"database": self.sb.db, "secret": SECRET_A,
                     "handler": HANDLER, "settle": "0s",
                     "handler_timeout": "30s", "busy_timeout": "10s"}
        write_conf(self.sb.conf, **self.keys)
        self.srv = Lighttpd(self.sb, procs=2)

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def deliver(self, msg_id, **kw):
        status = self.srv.deliver(SECRET_A, msg_id, event_body(msg_id, **kw))[0]
        return status

    def drain(self, *args, conf=None):
        """A cron run; while the provider sends, `--max-time` ends it (a
        run goes on while new events keep arriving)."""
        env = dict(os.environ, RECORD=self.record, **self.sb.env())
        p = subprocess.run([DRAIN, "-c", conf or self.sb.conf, "run"] +
                           list(args), env=env,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def copy(self, *args, conf=None, check=True, timeout=300):
        p = subprocess.run([DRAIN, "-c", conf or self.sb.conf, "copy"] +
                           list(args), env=dict(os.environ, **self.sb.env()),
                           capture_output=True, text=True, timeout=timeout)
        if check:
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p

    def wait_pg(self, uri, where, timeout=120):
        """Until a session of the server matches where (pg_stat_activity)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if pgserver.query(uri, "SELECT 1 FROM pg_stat_activity WHERE "
                              + where):
                return
            time.sleep(0.05)
        raise AssertionError("no session where " + where)

    def handed(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record) as f:
            return [l.strip() for l in f if l.strip()]


class Sender:
    """The provider: threads delivering new events (and now and then a
    retry of one already acknowledged) until stopped; remembers every id
    acknowledged with 200 and when each thread's last answered request
    began."""

    def __init__(self, test, threads=2, pause=0.0):
        """pause: seconds each thread waits between deliveries."""
        self.t = test
        self.pause = pause
        self.acked = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.began = [0.0] * threads    # start of the last answered request
        self.bad = []
        self.n = 0
        self.threads = [threading.Thread(target=self.run, args=(k,), daemon=True)
                        for k in range(threads)]
        for th in self.threads:
            th.start()

    @staticmethod
    def params(msg_id):
        """An id's event, the same at every retry: each thread's objects
        its own, event clocks growing with i, so none is ever stale."""
        k, i = (int(x) for x in msg_id.split("-")[1:])
        return dict(obj_id="%d-%d" % (k, i % 13),
                    created_at="2026-11-30T%02d:%02d:%02dZ" % (
                        10 + i // 3600, i // 60 % 60, i % 60))

    def run(self, k):
        i = 0
        while not self.stop.is_set():
            i += 1
            if i % 7 == 0 and self.acked:
                # The provider's retry of one already acknowledged.
                with self.lock:
                    msg_id = sorted(self.acked)[(i * 31) % len(self.acked)]
            else:
                msg_id = "live-%d-%05d" % (k, i)
            t0 = time.time()
            try:
                status = self.t.deliver(msg_id, **self.params(msg_id))
            except OSError as e:
                self.bad.append((msg_id, str(e)))
                continue
            if self.pause:
                time.sleep(self.pause)
            with self.lock:
                self.n += 1
                if status == 200:
                    self.acked.add(msg_id)
                else:
                    self.bad.append((msg_id, status))
                self.began[k] = t0

    def wait_all_began_after(self, t, timeout=120):
        """Until every thread had a request that began after t answered:
        nothing that began before t is still in flight."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if all(b > t for b in self.began):
                    return
            time.sleep(0.05)
        raise AssertionError("senders stuck")

    def finish(self):
        self.stop.set()
        for th in self.threads:
            th.join(60)
        return self.acked


class TestCutOver(CopyBase):
    def test_live_move_hands_out_every_acknowledged_event_exactly_once(self):
        self.live_move()

    @unittest.skipUnless(pgserver.available(), "no PostgreSQL server binaries")
    def test_live_move_to_postgresql(self):
        self.new = pgserver.shared().new_database("moved")
        # Fewer events than the SQLite move: each is a few round trips
        # more to hand out, and the move is the same.
        self.live_move(pause=0.1)

    def live_move(self, pause=0.0):
        # Before: events of every fate in the source, some done.
        for i in range(40):
            self.assertEqual(self.deliver("pre-9-%03d" % i,
                                          **Sender.params("pre-9-%03d" % i)), 200)
        self.drain()
        send = Sender(self, pause=pause)
        # (1) copy while the provider keeps sending; the source's cron
        # keeps draining (before, during and after the copy).
        while len(send.acked) < 30:
            time.sleep(0.05)
        self.copy("--to", self.new)
        # One more after the copy, sorting first: the old drainer does it.
        self.assertEqual(self.deliver("live-8-00001",
                                      **Sender.params("live-8-00001")), 200)
        self.drain("--max-time", "2")
        self.assertGreater(count(self.new), 0)
        self.assertEqual(count(self.sb.db, "webhook_id = 'live-8-00001' AND"
                               " state = 'done'"), 1)
        # (2) stop the source's drainer (the cron entry); keep the old
        # config for the second copy; (3) switch the receivers.
        with open(self.sb.conf) as f, open(self.old_conf, "w") as g:
            g.write(f.read())
        write_conf(self.sb.conf, **dict(self.keys, database=self.new))
        switched = time.time()
        # Wait until nothing begun before the switch is still in flight.
        send.wait_all_began_after(switched + 0.01)
        # The provider's retry of an event the old inbox had done after the
        # first copy (its 200 lost, say) lands in the new one as new.
        retried = sorted(ids(self.sb.db, "state = 'done'") - ids(self.new))[:3]
        self.assertGreater(len(retried), 0)
        for msg_id in retried:
            self.assertEqual(self.deliver(msg_id, **Sender.params(msg_id)), 200)
        self.assertEqual(count(self.new, "webhook_id IN (%s)" % ", ".join(
            "'%s'" % m for m in retried)), len(retried))
        # (4) copy again from the old config: what arrived meanwhile, and
        # what the source's drainer did since the first copy.
        out = self.copy("--to", self.new, conf=self.old_conf).stdout
        ev = re.search(r"^events: (\d+) read, (\d+) written, (\d+) the same, "
                       r"(\d+) kept", out, re.M)
        self.assertIsNotNone(ev, out)
        read, written, same, kept = (int(x) for x in ev.groups())
        # It brought what arrived or changed after the first copy, and the
        # destination had changed nothing yet.
        self.assertGreater(written, 0)
        self.assertEqual(kept, 0)
        # The retries took the old inbox's state: not handed out again.
        self.assertEqual(count(self.new, "state = 'done' AND webhook_id IN (%s)"
                               % ", ".join("'%s'" % m for m in retried)),
                         len(retried))
        # (5) the destination's cron; the provider still sending.
        self.drain("--max-time", "2")
        more = send.n + 50
        while send.n < more:
            time.sleep(0.05)
        acked = send.finish()
        self.drain()
        self.assertEqual(send.bad, [])
        acked |= {"pre-9-%03d" % i for i in range(40)} | {"live-8-00001"}
        handed = self.handed()
        # Every acknowledged event handed out once, across both inboxes.
        dupes = sorted({h for h in handed if handed.count(h) > 1})
        self.assertEqual(dupes, [])
        self.assertEqual(set(handed), acked)
        # The destination holds them all, done; the source is left as it was.
        self.assertEqual(count(self.new), len(acked))
        self.assertEqual(count(self.new, "state = 'done'"), len(acked))
        # Some of it came over by each copy, some arrived at the destination.
        self.assertGreater(count(self.sb.db), 40)
        self.assertLess(count(self.sb.db), len(acked))
        sys.stderr.write("\n%d acknowledged, %d at the source, second copy: %s\n"
                         % (len(acked), count(self.sb.db), ev.group(0)))


class TestCopy(CopyBase):
    def fill(self, start, n, size):
        pad = "x" * size

        def send(part):
            for i in part:
                self.assertEqual(self.deliver("bulk-%05d" % i, obj_id=i % 50,
                                              pad=pad), 200)
        threads = [threading.Thread(target=send, args=(range(start + k, n, 4),))
                   for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def test_killed_mid_copy_then_resumed_and_copying_twice_is_identical(self):
        # 50 events done (history, a run, object clocks), then a backlog
        # of 950 bodies of 24 KB: the copy takes several batches.
        self.fill(0, 50, 100)
        self.drain()
        self.fill(50, 1000, 24000)
        for attempt in range(3):
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(self.new + suffix):
                    os.unlink(self.new + suffix)
            p = subprocess.Popen([DRAIN, "-c", self.sb.conf, "copy", "--to",
                                  self.new], env=dict(os.environ, **self.sb.env()),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while p.poll() is None:
                try:
                    if os.path.exists(self.new) and count(self.new) > 0:
                        break
                except sqlite3.OperationalError:
                    pass
                time.sleep(0.005)
            p.send_signal(signal.SIGKILL)
            p.wait()
            got = count(self.new) if os.path.exists(self.new) else 0
            if 0 < got < 1000:
                break
        else:
            self.skipTest("the copy was never caught mid-way")
        sys.stderr.write("\nkilled with %d of 1000 events copied\n" % got)
        # Run again: it completes, and the destination equals the source.
        out = self.copy("--to", self.new).stdout
        self.assertIn("events: 1000 read, %d written, %d the same" % (
            1000 - got, got), out)
        src, dst = dump(self.sb.db, skip=()), dump(self.new, skip=())
        self.assertEqual(src, dst)
        self.assertGreater(len(dst["history"]), 0)
        self.assertEqual(len(dst["runs"]), 1)
        self.assertEqual(len(dst["objects"]), 50)
        # Twice: nothing written, the destination byte for byte the same,
        # its copy records included.
        with_records = dict(TABLES, copied="tbl, key")
        before = dump(self.new, skip=(), tables=with_records)
        out = self.copy("--to", self.new).stdout
        self.assertIn("events: 1000 read, 0 written, 1000 the same", out)
        self.assertEqual(dump(self.new, skip=(), tables=with_records), before)

    @unittest.skipUnless(pgserver.available(), "no PostgreSQL server binaries")
    def test_to_postgresql_killed_resumed_twice_and_back(self):
        # 30 events done (history, a run, clocks), then 200 bodies of
        # 24 KB: two pages of the 4 MiB bound.
        self.fill(0, 30, 100)
        self.drain()
        self.fill(30, 230, 24000)
        pg = pgserver.shared()
        new = pg.new_database("copy")
        self.copy("--to", new, "--dry-run")     # the schema, no rows
        # Another session holds an uncommitted insert of the last event:
        # the copy's last page waits for it, after the first committed,
        # and is SIGKILLed there (mid-way, whatever the machine's speed).
        blocker = subprocess.Popen(
            [pgserver.PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", new],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        blocker.stdin.write(
            "SET application_name = 'blocker'; BEGIN; INSERT INTO events"
            " (webhook_id, received_at, webhook_timestamp, sort_at, next_at)"
            " VALUES ('bulk-00229', 'x', 0, 'x', 'x');\n")
        blocker.stdin.flush()
        self.wait_pg(new, "application_name = 'blocker' AND state ="
                     " 'idle in transaction'")
        p = subprocess.Popen([DRAIN, "-c", self.sb.conf, "copy", "--to", new],
                             env=dict(os.environ, **self.sb.env()),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_pg(new, "application_name = 'webhook-inbox' AND"
                     " wait_event_type = 'Lock'")
        p.send_signal(signal.SIGKILL)
        p.wait()
        blocker.stdin.write("ROLLBACK;\n")
        blocker.stdin.close()
        blocker.wait(60)
        got = count(new)
        self.assertTrue(0 < got < 230, got)
        sys.stderr.write("\nkilled with %d of 230 events copied\n" % got)
        out = self.copy("--to", new).stdout
        self.assertIn("events: 230 read, %d written, %d the same" % (
            230 - got, got), out)
        cols = columns(self.sb.db, skip=())
        src = dump(self.sb.db, skip=())
        self.assertEqual(dump_pg(new, cols), src)
        self.assertEqual(len(src["objects"]), 30)
        self.assertEqual(len(src["runs"]), 1)
        self.assertGreater(len(src["history"]), 0)
        # Twice: nothing written, nothing changed (copy records included).
        records = pgserver.query(new, "SELECT tbl, key, digest FROM copied"
                                 " ORDER BY tbl, key")
        self.assertEqual(len(records), 230)    # each event (no cursor here)
        out = self.copy("--to", new).stdout
        self.assertIn("events: 230 read, 0 written, 230 the same", out)
        self.assertEqual(dump_pg(new, cols), src)
        self.assertEqual(pgserver.query(new, "SELECT tbl, key, digest FROM"
                                        " copied ORDER BY tbl, key"), records)
        # Back: from the PostgreSQL inbox into a new SQLite file.
        back_conf = os.path.join(self.sb.dir, "back.conf")
        write_conf(back_conf, **dict(self.keys, database=new))
        out = self.copy("--to", self.new, conf=back_conf).stdout
        self.assertIn("events: 230 read, 230 written", out)
        self.assertEqual(dump(self.new, skip=()), src)

    @unittest.skipUnless(pgserver.available(), "no PostgreSQL server binaries")
    def test_to_postgresql_rows_it_cannot_hold_are_named_and_left_out(self):
        self.assertEqual(self.deliver("good"), 200)
        # A webhook-id a SQLite receiver stored, not valid UTF-8.
        con = sqlite3.connect(self.sb.db, timeout=30)
        con.execute("INSERT INTO events (webhook_id, body, received_at,"
                    " webhook_timestamp, sort_at, next_at) SELECT"
                    " CAST(x'6261640aff' AS TEXT), body, received_at,"
                    " webhook_timestamp, sort_at, next_at FROM events")
        con.commit()
        con.close()
        new = pgserver.shared().new_database("refuse")
        for args in (("--dry-run",), ()):
            p = self.copy("--to", new, *args, check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("1 left out (the destination cannot hold them)",
                          p.stdout)
            # Named, escaped (no raw newline or 0xff in the message).
            self.assertIn("1 row left out, every other one copied", p.stderr)
            self.assertIn("events bad\\x0a\\xff", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertEqual(ids(new), {"good"})

    def test_clocks_carried_over_old_event_is_stale_at_the_destination(self):
        self.assertEqual(self.deliver("newer", obj_id=7,
                                      created_at="2026-11-30T12:00:00Z"), 200)
        self.drain()
        self.copy("--to", self.new)
        write_conf(self.sb.conf, **dict(self.keys, database=self.new))
        self.assertEqual(self.deliver("older", obj_id=7,
                                      created_at="2026-11-30T11:00:00Z"), 200)
        self.drain()
        self.assertEqual(self.handed(), ["newer"])
        con = sqlite3.connect(self.new)
        state = con.execute("SELECT state FROM events WHERE webhook_id = 'older'").fetchone()
        # The source's history came along: its one handled event.
        handled = con.execute("SELECT sum(n) FROM history WHERE name = 'handled'"
                              " AND label = ''").fetchone()
        runs = con.execute("SELECT count(*) FROM runs").fetchone()
        con.close()
        self.assertEqual(state, ("stale",))
        self.assertEqual(handled, (1,))
        self.assertEqual(runs, (2,))    # the source's and the destination's

    def test_dry_run_refusals_and_a_newer_destination(self):
        self.assertEqual(self.deliver("one"), 200)
        # A dry run into nothing creates nothing.
        out = self.copy("--to", self.new, "--dry-run").stdout
        self.assertIn("dry run: events: 1 read, 1 to write", out)
        self.assertFalse(os.path.exists(self.new))
        # Usage: no --to; the config's own inbox.
        self.assertEqual(self.copy(check=False).returncode, 2)
        self.assertEqual(self.copy("--to", self.sb.db, check=False).returncode, 2)
        # A destination from a newer program is left alone.
        con = sqlite3.connect(self.new)
        con.execute("CREATE TABLE future (x)")
        con.execute("PRAGMA user_version = 99")
        con.close()
        p = self.copy("--to", self.new, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("newer than this program", p.stderr)
        con = sqlite3.connect(self.new)
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], 99)
        self.assertEqual(con.execute("SELECT name FROM sqlite_master").fetchall(),
                         [("future",)])
        con.close()


if __name__ == "__main__":
    unittest.main()
