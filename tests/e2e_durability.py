"""A 200 means on disk (docs/durability.md): for every acknowledged request,
a sync of the WAL that began after the request's own WAL writes completes
before the answer is written — read off the system calls of real workers
behind lighttpd with strace — and SIGKILL of the workers right after their
200s loses nothing.  Runs on the plain build only (strace and ASan do not
mix)."""
import os
import re
import signal
import subprocess
import threading
import time
import unittest

from harness import (ROOT, SECRET_A, FCGI, Sandbox, Lighttpd, event_body,
                     signed_params, write_conf, SANITIZED)

# strace -f -ttt -T -y: "TID 1764485123.123456 call(fd<path>, ...) = 0 <0.000123>"
LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(\w+)\((\d+)<([^>]*)>(.*)$")
RESUMED = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
DURATION = re.compile(r"<(\d+\.\d+)>\s*$")


def parse_trace(path):
    """Completed calls as (tid, start, end, name, fd path, text), joining
    the halves strace splits when threads interleave."""
    calls, open_calls = [], {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                tid, t0 = int(m.group(1)), float(m.group(2))
                name, fdpath, rest = m.group(3), m.group(5), m.group(6)
                if rest.endswith("<unfinished ...>"):
                    open_calls[tid] = (t0, name, fdpath, rest)
                    continue
                d = DURATION.search(rest)
                calls.append((tid, t0, t0 + (float(d.group(1)) if d else 0.0),
                              name, fdpath, rest))
                continue
            m = RESUMED.match(line)
            if m and int(m.group(1)) in open_calls:
                tid = int(m.group(1))
                t0, name, fdpath, rest = open_calls.pop(tid)
                d = DURATION.search(m.group(4))
                end = t0 + float(d.group(1)) if d else float(m.group(2))
                calls.append((tid, t0, end, name, fdpath, rest + m.group(4)))
    calls.sort(key=lambda c: c[1])
    return calls


# strace -e trace=clone,clone3: "TID TIME clone3({flags=…|CLONE_THREAD|…, …}
# => {parent_tid=[NEW]}, 88) = NEW <0.000081>", split like any other call.
CLONE = re.compile(r"^(\d+)\s+\d+\.\d+\s+(clone3?|v?fork)\((.*)$")
RETURNED = re.compile(r"\)\s+=\s+(\d+)(?:\s+<\d+\.\d+>)?\s*$")


def parse_clones(path):
    """(parent tid, new tid, CLONE_THREAD?) of every clone, clone3, fork or
    vfork the trace saw succeed, joining the halves strace splits."""
    out, open_calls = [], {}
    with open(path, errors="replace") as f:
        for line in f:
            m = CLONE.match(line)
            if m:
                tid, text = int(m.group(1)), m.group(3)
                if text.rstrip().endswith("<unfinished ...>"):
                    open_calls[tid] = text
                    continue
            else:
                m = RESUMED.match(line)
                if (not m or m.group(3) not in ("clone", "clone3", "fork", "vfork")
                        or int(m.group(1)) not in open_calls):
                    continue
                tid = int(m.group(1))
                text = open_calls.pop(tid) + m.group(4)
            r = RETURNED.search(text)
            if r:
                out.append((tid, int(r.group(1)), "CLONE_THREAD" in text))
    return out


def list_threads(pids, tgid_of):
    """Add every thread the processes `pids` have now to tgid_of (thread
    id -> process id)."""
    for p in pids:
        try:
            for t in os.listdir("/proc/%d/task" % p):
                tgid_of[int(t)] = p
        except FileNotFoundError:
            pass


def add_clones(tgid_of, clones):
    """The threads (and processes) created while traced: a thread belongs to
    its creator's process, a process to itself.  A creator may itself be
    one of them, created earlier or later in the file."""
    changed = True
    while changed:
        changed = False
        for parent, child, thread in clones:
            if child in tgid_of:
                continue
            if not thread:
                tgid_of[child] = child
            elif parent in tgid_of:
                tgid_of[child] = tgid_of[parent]
            else:
                continue
            changed = True


def check_acks(test, calls, tgid_of, ids, duplicates):
    """docs/durability.md's rule, per request, with the request found by its
    webhook-id: the thread that read "HTTP_WEBHOOK_ID<id>" answers 200
    later; the first WAL write holding the id (the row, in its batch) must
    be followed by a sync of the WAL that STARTS after that write ended and
    ENDS before the 200.  The sync may be another worker's: receivers share
    syncs (lib/store/sqlite/walsync.h), and a sync covers every write to the file that
    came before it, whoever wrote it (all workers write the one -wal file;
    strace's clock is the machine's).  A duplicate is held to the same rule
    against its first copy's write, and must also see a sync begin after
    it arrived.  Returns (200s checked, how many of them were covered by
    another process's sync only)."""
    syncs = [c for c in calls if c[3] in ("fdatasync", "fsync") and c[4].endswith("-wal")]
    for c in syncs:
        test.assertIn("= 0", c[5], "a WAL sync failed")
    test.assertEqual(len({c[4] for c in syncs}), 1, "syncs of more than one WAL file")
    checked = shared = 0
    for mid in ids:
        token = "HTTP_WEBHOOK_ID" + mid
        arrivals = [c for c in calls if c[3] in ("read", "recvfrom") and token in c[5]]
        test.assertTrue(arrivals, "no traced read of %s's parameters" % mid)
        first = next((c for c in calls if c[3] in ("pwrite64", "pwritev")
                      and c[4].endswith("-wal") and mid in c[5]), None)
        test.assertIsNotNone(first, "%s: its row was never seen written" % mid)
        for arr in arrivals:
            tid, proc = arr[0], tgid_of[arr[0]]
            ack = next((c for c in calls if c[0] == tid and c[1] > arr[1] and
                        c[3] in ("write", "sendmsg", "writev") and "Status: 200" in c[5]),
                       None)
            test.assertIsNotNone(ack, "%s: no 200 after its arrival" % mid)
            covering = [s for s in syncs if s[1] > first[2] and s[2] < ack[1]]
            test.assertTrue(covering, "%s: answered 200 before a WAL sync that "
                            "began after its row was written had completed" % mid)
            if mid in duplicates and arr is not arrivals[0]:
                test.assertTrue(any(s[1] > arr[1] for s in covering),
                                "%s (duplicate): no WAL sync began between its "
                                "arrival and its 200" % mid)
            else:
                test.assertEqual(tgid_of[first[0]], proc,
                                 "%s: stored by another process" % mid)
            if not any(tgid_of[s[0]] == proc for s in covering):
                shared += 1
            checked += 1
    return checked, shared


@unittest.skipIf(SANITIZED, "strace traces the plain build")
class TestDurability(unittest.TestCase):
    """4 processes behind lighttpd, as conf/lighttpd-webhook.conf runs
    them: every process writes, and the WAL syncs are shared between
    processes (lib/store/sqlite/walsync.h)."""
    ENV = {}
    PROCS = 4

    def setUp(self):
        self.sb = Sandbox()
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A)
        self.srv = Lighttpd(self.sb, procs=self.PROCS, extra_env=self.ENV)
        # Start the workers and open the inbox before tracing.  (lighttpd
        # gives these one at a time to one worker: the others open theirs,
        # and start their checkpointer threads, while traced.)
        for i in range(8):
            mid = "warm%d" % i
            self.srv.deliver(SECRET_A, mid, event_body(mid))

    def tearDown(self):
        self.srv.stop()
        self.sb.cleanup()

    def send_concurrently(self, ids, dup_every=4, clients=16):
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
        threads = [threading.Thread(target=worker, args=(items[k::clients],))
                   for k in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return acked

    def test_every_200_follows_a_wal_sync_that_began_after_its_writes(self):
        pids = self.srv.workers()
        self.assertEqual(len(pids), self.PROCS)
        # Which process each traced thread belongs to (strace -f prints
        # thread ids only).  Threads come and go while traced: a worker
        # whose inbox the warm-up did not open (lighttpd sends sequential
        # requests to one worker) starts its committer's checkpointer
        # thread at its first request, and that thread syncs the WAL when
        # it takes a checkpoint turn.  So: the threads there before, those
        # there once strace has attached and at the end, and every thread
        # created in between, from its clone in the trace.
        tgid_of = {}
        list_threads(pids, tgid_of)
        out = os.path.join(self.sb.dir, "strace.out")
        args = ["strace", "-f", "-ttt", "-T", "-y", "-s", "9000", "-o", out, "-e",
                "trace=read,recvfrom,pwrite64,pwritev,write,writev,fsync,"
                "fdatasync,sendmsg,clone,clone3,fork,vfork"]
        for p in pids:
            args += ["-p", str(p)]
        tr = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        self.wait_traced(pids, tr)
        list_threads(pids, tgid_of)
        ids = ["dur%03d" % i for i in range(200)]
        acked = self.send_concurrently(ids)
        time.sleep(0.3)
        list_threads(pids, tgid_of)
        tr.send_signal(signal.SIGINT)
        tr.wait(10)
        self.assertEqual(len(acked), 200)
        calls = parse_trace(out)
        add_clones(tgid_of, parse_clones(out))
        unknown = sorted({c[0] for c in calls} - set(tgid_of))
        self.assertEqual(unknown, [], "traced threads of no known process: %s"
                         % [c[:5] for c in calls if c[0] in unknown][:10])
        dups = {mid for n, mid in enumerate(ids) if n % 4 == 0}
        # 200 new + 50 duplicates, every one checked.
        checked, shared = check_acks(self, calls, tgid_of, ids, dups)
        self.assertEqual(checked, 250)
        print("\n  %d of 250 answers were covered by another worker's sync"
              % shared, end=" ")
        writers = {tgid_of[c[0]] for c in calls if c[3] == "pwrite64"}
        self.check_writers(writers)
        # Batches formed (more answers than syncs), so the rule was checked
        # where a leader commits for other threads too.
        nsync = sum(1 for c in calls if c[3] == "fdatasync" and c[4].endswith("-wal"))
        self.assertLess(nsync, 250, "no request shared a sync: batching untested")

    def wait_traced(self, pids, tr, timeout=30):
        """Until strace has attached to every thread of `pids` (their
        TracerPid), instead of sleeping for it."""
        deadline = time.time() + timeout
        while True:
            tracers = set()
            for p in pids:
                for t in os.listdir("/proc/%d/task" % p):
                    try:
                        with open("/proc/%d/task/%s/status" % (p, t)) as f:
                            tracers.update(int(l.split()[1]) for l in f
                                           if l.startswith("TracerPid:"))
                    except FileNotFoundError:
                        pass        # a thread that just ended
            if tracers == {tr.pid}:
                return
            self.assertIsNone(tr.poll(), "strace exited")
            self.assertLess(time.time(), deadline, "strace did not attach")
            time.sleep(0.05)

    def check_writers(self, writers):
        self.assertGreaterEqual(len(writers), 2,
                                "the load did not spread over several workers")

    def test_wal_stays_bounded_under_unbroken_load(self):
        # PASSIVE checkpoints alone never let the WAL restart while writes
        # never pause: 1.6 GB after 15 s of this load before the fix.
        # 4000 deliveries of 60 KiB at full speed (~300 MB of WAL frames:
        # large bodies write as many frames as 16000 small ones in a
        # quarter of the requests, so a busy machine still gets there),
        # however long it takes (wrk stops when bench/requests.lua has
        # handed each out once; 90 s at most); the receiver's RESTART
        # checkpoints (INBOX_WAL_RESTART_FRAMES, 64 MiB) must restart it, so
        # that it stays far below what it would hold without them.
        req = os.path.join(self.sb.dir, "req")
        subprocess.run(["python3", os.path.join(ROOT, "bench", "signed.py"), "gen",
                        "--conf", self.sb.conf, "--host", "127.0.0.1:%d" % self.srv.port,
                        "--path", "/hook", "--count", "4000", "--body-size", "61440",
                        "--threads", "2",
                        "--out", req], check=True, capture_output=True)
        peak, stop = [0], threading.Event()

        def watch():
            while not stop.is_set():
                try:
                    peak[0] = max(peak[0], os.path.getsize(self.sb.db + "-wal"))
                except OSError:
                    pass
                time.sleep(0.02)
        w = threading.Thread(target=watch)
        w.start()
        # wrk sleeps its whole -d even when every thread has stopped
        # itself; SIGINT ends that sleep and still prints done()'s line.
        wrk = subprocess.Popen(["wrk", "-t2", "-c32", "-d90s", "-s",
                                os.path.join(ROOT, "bench", "requests.lua"),
                                "http://127.0.0.1:%d/hook" % self.srv.port],
                               env=dict(os.environ, BENCH_REQUESTS=req),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
        while wrk.poll() is None and self.sb.count() < 4000 + 8:
            time.sleep(0.5)
        wrk.send_signal(signal.SIGINT)
        out = wrk.communicate(timeout=60)[0]
        stop.set()
        w.join()
        kv = dict(x.split("=", 1) for x in
                  next(l for l in out.splitlines() if l.startswith("BENCH ")).split()[1:])
        self.assertEqual(int(kv["non2xx"]), 0, "receiver's log (tail):\n"
                         + self.srv.log()[-3000:])
        self.assertGreaterEqual(int(kv["sent"]), 3000, "too little load to tell")
        time.sleep(1)                       # requests in flight land
        self.assertEqual(self.sb.count(), int(kv["sent"]) + 8)  # + the warm-up
        # The test's power: the frames written far exceed the bound (a WAL
        # that never restarted would hold them all).
        self.assertGreater(os.path.getsize(self.sb.db), 200 << 20)
        size = os.path.getsize(self.sb.db)
        print("\n  WAL peak %d MB for a %d MB inbox" % (peak[0] >> 20, size >> 20),
              end=" ")
        # Restarts, not a speed: a WAL that never restarted would hold every
        # frame (more than the inbox's size).  How far past the 64 MiB
        # restart point it gets depends on when a loaded machine lets the
        # RESTART checkpoint run (68 MB alone at load 7, 135 MB beside a
        # clean-clone test run, a benchmark and two fuzzers).
        self.assertLess(peak[0], size * 0.7, "WAL grew to %d MB" % (peak[0] >> 20))

    def test_sigkill_right_after_200s_loses_nothing(self):
        acked, stop, answered = [], threading.Event(), threading.Event()

        def killer():
            # Every 50 ms, but only once a 200 came since the last kill:
            # on a busy machine a worker's restart can take longer than
            # that, and killing it again before it answered anything kept
            # every worker down (19 answers in 40 s, under load).
            while not stop.is_set():
                if answered.wait(0.05):
                    answered.clear()
                    for p in self.srv.workers():
                        try:
                            os.kill(p, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    time.sleep(0.05)
        k = threading.Thread(target=killer)
        k.start()
        # For 3 s of killing, and on until 60 answers of 200, for at most
        # 120 s.
        start = time.time()
        try:
            i = 0
            while ((time.time() < start + 3 or len(acked) < 60) and
                   time.time() < start + 120):
                i += 1
                mid = "kill%04d" % i
                try:
                    st = self.srv.deliver(SECRET_A, mid, event_body(mid), timeout=10)[0]
                except OSError:
                    continue
                if st == 200:
                    acked.append(mid)
                    answered.set()
        finally:
            stop.set()
            k.join()
        self.assertGreater(len(acked), 20, "too few requests got through to judge")
        stored = {r["webhook_id"] for r in self.sb.rows("SELECT webhook_id FROM events")}
        self.assertEqual(sorted(set(acked) - stored), [])


@unittest.skipIf(SANITIZED, "strace traces the plain build")
class TestDurabilityOneProcess(TestDurability):
    """The supported setup where the user controls it: one process with 32
    request threads (group commit inside it, lib/receive/committer.h)."""
    ENV = {"WEBHOOK_THREADS": "32"}
    PROCS = 1

    def check_writers(self, writers):
        self.assertEqual(len(writers), 1)


@unittest.skipIf(SANITIZED, "strace traces the plain build")
class TestCgiDurability(unittest.TestCase):
    """Plain CGI commits with synchronous=FULL: SQLite syncs the WAL before
    the commit becomes visible, so the answer follows a sync too — its own
    sync, one per request: the close no longer checkpoints (inbox.h,
    short_lived), so no database page is written or synced and the WAL is
    not deleted before or after the answer; a checkpoint (a truncation of
    the WAL) comes only after the answer, every few dozen requests, and
    keeps the WAL bounded with no drainer running."""

    # Requests traced: past INBOX_WAL_SHORT_CHECKPOINT_FRAMES (128 frames, about
    # 4 a request), so the run crosses at least one checkpoint turn.
    REQUESTS = 45

    def cgi(self, sb, mid, trace):
        body = event_body(mid, obj_id=mid)
        env = dict(signed_params(SECRET_A, mid, body, conf=sb.conf))
        env["GATEWAY_INTERFACE"] = "CGI/1.1"
        p = subprocess.run(["strace", "-f", "-ttt", "-T", "-y", "-s", "9000",
                            "-o", trace, "-e",
                            "trace=pwrite64,write,fsync,fdatasync,unlink,ftruncate",
                            FCGI], input=body, env=env, capture_output=True,
                           timeout=60)
        self.assertTrue(p.stdout.startswith(b"Status: 200"), p.stdout)
        return parse_trace(trace)

    def test_plain_cgi_syncs_before_answering(self):
        sb = Sandbox()
        try:
            write_conf(sb.conf, database=sb.db, secret=SECRET_A)
            out = os.path.join(sb.dir, "strace.out")
            truncated = 0
            for i in range(self.REQUESTS):
                mid = "cgi%03d" % i
                calls = self.cgi(sb, mid, out)
                first = next(c for c in calls if c[3] == "pwrite64" and
                             c[4].endswith("-wal") and mid in c[5])
                ack = next(c for c in calls if c[3] == "write" and "Status: 200" in c[5])
                before = [c for c in calls if c[1] < ack[1]]
                wal_syncs = [c for c in before if c[3] in ("fdatasync", "fsync")
                             and c[4].endswith("-wal")]
                self.assertTrue(any(c[1] > first[2] and c[2] < ack[1]
                                    for c in wal_syncs),
                                "plain CGI answered before syncing the WAL")
                # Its own sync, and nothing of a checkpoint before the answer:
                # no page written to or synced in the database file (but by
                # the first request, which creates the inbox: its header).
                self.assertEqual(len([c for c in wal_syncs if c[1] > first[2]]), 1,
                                 [c[3:5] for c in calls])
                if i > 0:
                    self.assertEqual([c[3:5] for c in before
                                      if c[4].endswith("inbox.db") and c[3] in
                                      ("pwrite64", "fdatasync", "fsync")],
                                     [], "a checkpoint on the request's path")
                # The WAL is never deleted; after the answer it may be
                # truncated (a checkpoint turn), never before.
                self.assertEqual([c for c in calls if c[3] == "unlink"], [])
                self.assertEqual([c for c in before if c[3] == "ftruncate"
                                  and c[4].endswith("-wal")], [])
                truncated += any(c[3] == "ftruncate" and c[4].endswith("-wal")
                                 for c in calls)
            self.assertGreaterEqual(truncated, 1, "no checkpoint turn in %d "
                                    "requests: the WAL would grow" % self.REQUESTS)
            self.assertEqual(sb.count(), self.REQUESTS)
        finally:
            sb.cleanup()

    def test_wal_stays_bounded_without_a_drainer(self):
        sb = Sandbox()
        try:
            write_conf(sb.conf, database=sb.db, secret=SECRET_A)
            biggest = 0
            for i in range(150):
                mid = "bound%03d" % i
                body = event_body(mid, obj_id=mid)
                env = dict(signed_params(SECRET_A, mid, body, conf=sb.conf))
                p = subprocess.run([FCGI], input=body, env=env,
                                   capture_output=True, timeout=30)
                self.assertTrue(p.stdout.startswith(b"Status: 200"), p.stdout)
                biggest = max(biggest, os.path.getsize(sb.db + "-wal"))
            # 128 frames of 4 KiB and the few of the request that crosses.
            self.assertLess(biggest, 1 << 20)
            self.assertEqual(sb.count(), 150)
        finally:
            sb.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
