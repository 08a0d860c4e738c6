"""A 200 means on disk (issue 5): for every acknowledged request, a sync of
the WAL that began after the request's own WAL writes completes before the
answer is written — read off the system calls of real workers behind
lighttpd with strace — and SIGKILL of the workers right after their 200s
loses nothing.  Runs on the plain build only (strace and ASan do not mix)."""
import os
import re
import signal
import subprocess
import threading
import time
import unittest

from harness import (SECRET_A, FCGI, Sandbox, Lighttpd, event_body,
                     signed_params, write_conf, SANITIZED)

LINE = re.compile(r"^(\d+)\s+(?:[\d:.]+\s+)?(\w+)\((\d+)<([^>]*)>(.*)$")
RESUMED = re.compile(r"^(\d+)\s+(?:[\d:.]+\s+)?<\.\.\. (\w+) resumed>(.*)$")


def trace_sequences(path):
    """Per pid, the list of (syscall, fd path, rest) in the order issued.
    With several pids strace splits a call into "<unfinished ...>" and
    "<... call resumed>" lines: the two halves are joined, so a sync counts
    as done only at its result."""
    seqs, open_calls = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                pid, call = int(m.group(1)), (m.group(2), m.group(4), m.group(5))
                if m.group(5).endswith("<unfinished ...>"):
                    open_calls[pid] = call
                else:
                    seqs.setdefault(pid, []).append(call)
                continue
            m = RESUMED.match(line)
            if m and int(m.group(1)) in open_calls:
                pid = int(m.group(1))
                name, fdpath, rest = open_calls.pop(pid)
                seqs.setdefault(pid, []).append((name, fdpath, rest + m.group(3)))
    return seqs


def check_sequence(test, seq):
    """Every answer with status 200 must follow a WAL sync issued after the
    last WAL write.  Returns the number of 200s seen."""
    dirty = False          # WAL written since the last completed sync
    synced_since_write = False
    acks = 0
    for call, fdpath, rest in seq:
        if fdpath.endswith("-wal") and call in ("pwrite64", "write", "pwritev"):
            dirty, synced_since_write = True, False
        elif fdpath.endswith("-wal") and call in ("fdatasync", "fsync"):
            test.assertIn("= 0", rest, "a WAL sync failed: " + rest)
            dirty, synced_since_write = False, True
        elif call in ("write", "sendmsg", "sendto", "writev") and "Status: 200" in rest:
            acks += 1
            test.assertFalse(dirty, "a 200 was written before the WAL sync")
            test.assertTrue(synced_since_write,
                            "a 200 (a duplicate?) was written with no WAL sync before it")
            synced_since_write = False   # the next 200 needs its own sync
    return acks


@unittest.skipIf(SANITIZED, "strace traces the plain build")
class TestDurability(unittest.TestCase):
    def setUp(self):
        self.sb = Sandbox()
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A)
        self.srv = Lighttpd(self.sb, procs=4)
        # Start every worker and open its inbox before tracing.
        for i in range(8):
            mid = "warm%d" % i
            self.srv.deliver(SECRET_A, mid, event_body(mid))

    def tearDown(self):
        self.srv.stop()
        self.sb.cleanup()

    def send_concurrently(self, ids, dup_every=4):
        acked, lock = [], threading.Lock()

        def worker(part):
            for n, mid in part:
                st = self.srv.deliver(SECRET_A, mid, event_body(mid, obj_id=n % 13))[0]
                if n % dup_every == 0:   # an immediate retry: the duplicate path
                    st2 = self.srv.deliver(SECRET_A, mid, event_body(mid, obj_id=n % 13))[0]
                    self.assertEqual(st2, 200)
                with lock:
                    if st == 200:
                        acked.append(mid)
        items = list(enumerate(ids))
        threads = [threading.Thread(target=worker, args=(items[k::5],)) for k in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return acked

    def test_every_200_follows_a_wal_sync_that_began_after_its_writes(self):
        pids = self.srv.workers()
        self.assertEqual(len(pids), 4)
        out = os.path.join(self.sb.dir, "strace.out")
        args = ["strace", "-f", "-tt", "-y", "-o", out, "-e",
                "trace=pwrite64,pwritev,write,writev,fsync,fdatasync,sendmsg,sendto"]
        for p in pids:
            args += ["-p", str(p)]
        tr = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        time.sleep(1.0)             # attached
        acked = self.send_concurrently(["dur%03d" % i for i in range(200)])
        time.sleep(0.3)
        tr.send_signal(signal.SIGINT)
        tr.wait(10)
        self.assertEqual(len(acked), 200)
        seqs = trace_sequences(out)
        acks = sum(check_sequence(self, s) for s in seqs.values())
        # 200 new + 50 duplicates, all answered by traced workers.
        self.assertEqual(acks, 250)
        self.assertGreaterEqual(len([s for s in seqs.values() if s]), 2,
                                "the load did not spread over several workers")

    def test_sigkill_right_after_200s_loses_nothing(self):
        acked, stop = [], threading.Event()

        def killer():
            while not stop.is_set():
                for p in self.srv.workers():
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.05)
        k = threading.Thread(target=killer)
        k.start()
        try:
            for i in range(150):
                mid = "kill%03d" % i
                try:
                    st = self.srv.deliver(SECRET_A, mid, event_body(mid), timeout=10)[0]
                except OSError:
                    continue
                if st == 200:
                    acked.append(mid)
        finally:
            stop.set()
            k.join()
        self.assertGreater(len(acked), 20, "too few requests got through to judge")
        stored = {r["webhook_id"] for r in self.sb.rows("SELECT webhook_id FROM events")}
        self.assertEqual(sorted(set(acked) - stored), [])


@unittest.skipIf(SANITIZED, "strace traces the plain build")
class TestCgiDurability(unittest.TestCase):
    """Plain CGI commits with synchronous=FULL: SQLite syncs the WAL before
    the commit becomes visible, so the answer follows a sync too."""

    def test_plain_cgi_syncs_before_answering(self):
        sb = Sandbox()
        try:
            write_conf(sb.conf, database=sb.db, secret=SECRET_A)
            out = os.path.join(sb.dir, "strace.out")
            for mid in ("cgi1", "cgi2"):
                body = event_body(mid)
                env = dict(signed_params(SECRET_A, mid, body, conf=sb.conf))
                p = subprocess.run(["strace", "-y", "-o", out, "-e",
                                    "trace=pwrite64,write,fsync,fdatasync", FCGI],
                                   input=body, env=env, capture_output=True, timeout=30)
                self.assertTrue(p.stdout.startswith(b"Status: 200"), p.stdout)
                seq = []
                with open(out, errors="replace") as f:
                    for line in f:
                        m = re.match(r"^(\w+)\((\d+)<([^>]*)>(.*)$", line)
                        if m:
                            seq.append((m.group(1), m.group(3), m.group(4)))
                self.assertEqual(check_sequence(self, seq), 1, seq)
        finally:
            sb.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
