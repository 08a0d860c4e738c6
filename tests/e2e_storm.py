"""The storm (README, "Tests"): the provider simulator (tests/provider_sim.py)
delivers thousands of events over a few hundred objects to a real lighttpd
with several webhook.fcgi workers — five in flight, duplicates, replays,
hold-backs that reorder an object's events, retries, forged deliveries and
a secret rotation in the middle — while `webhook-drain run` is started
every ~0.3 s, sometimes two at once, as cron would, with a handler that
records every hand-out.  Then the same storm while workers are SIGKILLed
and one drain is SIGKILLed in the middle of a handler.

  STORM_SEED=N      replay a storm (the seed is printed at the start)
  STORM_EVENTS=N    its size (changes published; default sized to ~1 min)
  STORM_KEEP=1      keep a failed storm's sandbox (inbox, record, logs)

What a seed replays: the world's changes, the simulator's decisions
(hold-backs, duplicates, replays, forged deliveries, rotation points) and
the cron/killer schedules.  Thread timing is not replayable; the seed and
the figures printed make a failure reproducible in kind.

Also here: self-checks of the simulator's API (tests/PROVIDER-API.md), the
server the drainer's API client is tested against.
"""
import collections
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import (SECRET_A, SECRET_B, DRAIN, FCGI, ROOT, Sandbox, Lighttpd,
                     proc_stat, write_conf)
import ledger
import provider_sim as ps

# Never configured: deliveries signed with it must be refused.
SECRET_C = "whsec_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAAqqqqqqqqqqqqqq"
# PROVIDER.md: one attempt may take at most 15 s.  The bound asserted on
# every answer the receiver gives: its own request deadline
# (RECEIVE_DEADLINE_S, 10 s) plus room for a busy machine to schedule the
# answer, still inside the provider's 15 s.  A correctness bound, not a
# speed goal (those live in make bench): a tighter one failed on a machine
# other jobs kept busy.
LATENCY_BOUND = float(os.environ.get("STORM_LATENCY_BOUND", "12.0"))
# Changes published by the storm (the kill variant: two thirds), over
# SPAN seconds.  make test runs this size (about a minute each on an idle
# machine, with the final drain); `make storm` runs it at STORM_EVENTS,
# larger, outside make test.
DEFAULT_EVENTS = 1500
SPAN = 40.0

# One hand-out, one line, one write(2) with O_APPEND (dash's printf to a
# `>>` redirection): id, attempt, object, object id, createdAt as sent,
# data.updated_at and the body's own "id" as the handler read them from
# stdin, WEBHOOK_STALE.  Builtins only, so the handler costs one exec.
# The first handler to claim $SLOW_FLAG (mkdir is atomic) says who it is
# and sleeps 1 s: the kill variant's drain is killed in that second.
# READ_BODY: stdin into $b, data.updated_at into $u, the body's "id"
# into $i ("-" when absent); e2e_pgstorm's handler reads the same way.
READ_BODY = r"""b=
while IFS= read -r l || [ -n "$l" ]; do b="$b$l
"; done
case "$b" in
*'"updated_at":"'*) u=${b#*\"updated_at\":\"}; u=${u%%\"*} ;;
*) u=- ;;
esac
case "$b" in
'{"id":"'*) i=${b#\{\"id\":\"}; i=${i%%\"*} ;;
*) i=- ;;
esac
"""
HANDLER = "#!/bin/sh\n" + READ_BODY + r"""if [ -n "${SLOW_FLAG:-}" ] && [ -e "$SLOW_FLAG" ] && mkdir "$SLOW_FLAG.claimed" 2>/dev/null; then
	printf '%s\t%s\n' "$WEBHOOK_ID" "$$" > "$SLOW_FLAG.tmp" && mv "$SLOW_FLAG.tmp" "$SLOW_FLAG.who"
	sleep 1
fi
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$WEBHOOK_ID" "${WEBHOOK_ATTEMPT:-}" \
	"${WEBHOOK_OBJECT:-}" "${WEBHOOK_OBJECT_ID:-}" "${WEBHOOK_CREATED_AT:-}" \
	"$u" "$i" "${WEBHOOK_STALE:-0}" >> "$RECORD"
exit 0
"""

Run = collections.namedtuple("Run", "pid args rc out err killed started ended")


def say(*a):
    print("storm:", *a, file=sys.stderr, flush=True)


def ppid(pid):
    fields = proc_stat(pid)
    return int(fields[1]) if fields else None


def exe(pid):
    try:
        return os.path.realpath("/proc/%d/exe" % pid)
    except OSError:
        return None


class Storm:
    """One storm: a sandbox (config, inbox), lighttpd with `procs`
    webhook.fcgi workers, the simulator, cron-like drains and, with
    kill=True, the killers.  run() then check() (a list of problems,
    empty when everything held) and figures()."""
    ENV = "STORM"       # the prefix of the variables that replay it


    def __init__(self, seed, events, objects=None, rate=None, procs=4, kill=False,
                 settle=1, fcgi=FCGI, drain=DRAIN, span=SPAN):
        self.seed, self.n, self.kill = seed, events, kill
        self.objects = objects or max(20, events // 8)
        # Published changes per second: deliveries span `span` seconds; the
        # drainer runs all along and catches up after.
        self.rate = rate or max(20.0, events / span)
        self.settle = settle
        self.fcgi, self.drain = fcgi, drain
        self.sb = Sandbox(prefix="webhook-storm-")
        self.record = os.path.join(self.sb.dir, "record.tsv")
        self.slow_flag = os.path.join(self.sb.dir, "slow")
        self.runs_dir = os.path.join(self.sb.dir, "runs")     # each run's stdout, stderr
        os.mkdir(self.runs_dir)
        self.handler = os.path.join(self.sb.dir, "storm-handler.sh")
        with open(self.handler, "w") as f:
            f.write(HANDLER)
        os.chmod(self.handler, 0o755)
        self.keys = {"database": self.sb.db, "secret": [SECRET_A],
                     "handler": self.handler, "settle": "%ds" % settle,
                     "handler_timeout": "20s", "max_attempts": "12",
                     "retry_base": "1s", "retry_max": "2s"}
        write_conf(self.sb.conf, **self.keys)
        self.srv = Lighttpd(self.sb, procs=procs, fcgi=fcgi)
        self.world = ps.World(seed)
        self.ledger = ps.Ledger()
        self.dlv = ps.Deliverer("http://127.0.0.1:%d/hook" % self.srv.port, [SECRET_A],
                                self.ledger, seed=seed + 1, timeout=5.0,
                                impatient_rate=0.01,
                                on_sent=self.kill_in_flight if kill else None)
        self.kill_rng = random.Random(seed + 5)
        self.worker_pids = []
        self.fcgi_real = os.path.realpath(fcgi)
        self.runs = []
        self.ended = {}                 # pid -> when it exited (a waiter thread)
        self.live = {}                  # pid -> (Popen, args, out file, err file, t)
        self.live_lock = threading.Lock()
        self.killed_drains = set()
        self.killed_id = None
        self.worker_kills = 0
        self.events_log = []            # (time, what) of the rotation and kills
        self.problems_extra = []
        self.t0 = self.t_delivered = self.t_end = None
        # Waits that grow with the size (the bench runs 100k events).
        self.long_wait = max(180.0, events / 40.0)
        self.stop = threading.Event()
        self.cron_stop = threading.Event()
        self.run_seq = 0

    # ---- drains -------------------------------------------------------
    def env(self):
        return dict(os.environ, RECORD=self.record,
                    SLOW_FLAG=self.slow_flag if self.kill else "", **self.sb.env())

    def start_run(self, args):
        self.run_seq += 1
        base = os.path.join(self.runs_dir, "%d" % self.run_seq)
        out, err = open(base + ".out", "w+b"), open(base + ".err", "w+b")
        p = subprocess.Popen([self.drain, "-c", self.sb.conf] + args, env=self.env(),
                             stdout=out, stderr=err)
        with self.live_lock:
            self.live[p.pid] = (p, args, out, err, time.monotonic())

        def waiter():
            p.wait()
            self.ended[p.pid] = time.monotonic()
        threading.Thread(target=waiter, daemon=True).start()
        return p

    def reap(self, block=False):
        with self.live_lock:
            items = list(self.live.items())
        for pid, (p, args, out, err, t) in items:
            if block and not self.wait_while_handing_out(p):
                self.problems_extra.append("webhook-drain %s (pid %d) handed nothing "
                                           "out for %d s" % (args, pid, self.long_wait))
                p.kill()
                p.wait()
            if p.poll() is None:
                continue
            out.seek(0)
            err.seek(0)
            self.runs.append(Run(pid, args, p.returncode, out.read(), err.read(),
                                 pid in self.killed_drains, t,
                                 self.ended.get(pid, time.monotonic())))
            out.close()
            err.close()
            with self.live_lock:
                del self.live[pid]

    def wait_while_handing_out(self, p):
        """Wait for run p while it makes progress: a run left with the
        storm's backlog may take minutes on a loaded machine (each hand-out
        starts a shell), which is no hang; one that hands nothing out for
        long_wait seconds is.  True when p ended."""
        def size():
            try:
                return os.path.getsize(self.record)
            except OSError:
                return 0
        last, since = size(), time.monotonic()
        while True:
            try:
                p.wait(5)
                return True
            except subprocess.TimeoutExpired:
                pass
            now = size()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since > self.long_wait:
                return False

    def cron(self):
        """webhook-drain run every 0.2-0.4 s, sometimes two at once, whether
        or not the last one finished."""
        rng = random.Random(self.seed + 2)
        while not self.cron_stop.is_set():
            for _ in range(2 if rng.random() < 0.3 else 1):
                self.start_run(["run"] if rng.random() < 0.8 else ["run", "--max-time", "3"])
            self.reap()
            self.cron_stop.wait(rng.uniform(0.2, 0.4))
        self.reap(block=True)

    def drain_until_idle(self, limit=None):
        """After the storm: runs until nothing is pending (settled events
        included)."""
        limit = limit or 3 * self.long_wait
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            time.sleep(self.settle + 0.2)
            p = self.start_run(["run"])
            p.wait()
            self.reap()
            st = subprocess.run([self.drain, "-c", self.sb.conf, "status", "--json"],
                                env=self.env(), capture_output=True, text=True)
            try:
                if json.loads(st.stdout)["pending"] == 0:
                    return True
            except (ValueError, KeyError):
                self.problems_extra.append("status --json: %r %r" % (st.stdout, st.stderr))
                return False
        self.problems_extra.append("events still pending after %d s of drains" % limit)
        return False

    # ---- killers (kill=True) -------------------------------------------
    def ours(self, pid):
        """pid is still one of lighttpd's webhook.fcgi workers (not a pid
        reused since the list was taken)."""
        return ppid(pid) == self.srv.proc.pid and exe(pid) == self.fcgi_real

    def kill_a_worker(self, rng):
        pids = list(self.worker_pids)
        if pids:
            pid = rng.choice(pids)
            try:
                if self.ours(pid):
                    os.kill(pid, signal.SIGKILL)
                    self.worker_kills += 1
            except ProcessLookupError:
                pass

    def watch_workers(self):
        """The workers' pids, fresh every 20 ms: pgrep takes milliseconds,
        a kill meant to land inside a request cannot wait for it."""
        while not self.stop.wait(0.02):
            self.worker_pids = [p for p in self.srv.workers() if exe(p) == self.fcgi_real]

    def kill_workers(self):
        """SIGKILL a worker at random moments (most find it idle)."""
        rng = random.Random(self.seed + 3)
        while not self.stop.wait(rng.uniform(0.15, 0.8)):
            self.kill_a_worker(rng)

    def kill_in_flight(self, msg_id):
        """Right after a delivery is sent: now and then SIGKILL a worker, so
        that kills land inside requests (before, during or after the
        commit)."""
        with self.live_lock:
            hit = not self.stop.is_set() and self.kill_rng.random() < 0.02
        if hit:
            self.kill_a_worker(self.kill_rng)

    def watch_slow(self):
        """When the handler that claimed $SLOW_FLAG says who it is, SIGKILL
        the webhook-drain above it, mid-handler."""
        who = self.slow_flag + ".who"
        while not self.stop.is_set() and self.killed_id is None:
            try:
                with open(who) as f:
                    line = f.read()
            except FileNotFoundError:
                time.sleep(0.01)
                continue
            mid, pid = line.rstrip("\n").split("\t")
            pid = int(pid)
            with self.live_lock:
                drains = set(self.live)
            p = pid
            while p and p > 1 and p not in drains:
                p = ppid(p)
            if not p or p not in drains:
                self.problems_extra.append("slow handler %d (%s): no webhook-drain of "
                                           "ours above it" % (pid, mid))
                return
            self.killed_drains.add(p)
            os.kill(p, signal.SIGKILL)
            self.killed_id = mid
            self.events_log.append((time.monotonic(), "SIGKILL webhook-drain %d while "
                                    "its handler ran %s" % (p, mid)))
            return

    # ---- the storm -------------------------------------------------------
    def forged_event(self, rng, i):
        """An event for a real object from the far future: stored and
        handed out, it would also wreck the final-state check."""
        key = rng.choice(sorted(self.world.objects))
        obj_id = self.world.objects[key]["id"]
        mid = "msg_forged_%d_%d" % (self.seed, i)
        body = json.dumps({"id": mid, "type": key[0] + ".updated",
                           "createdAt": "2099-12-31T00:00:00Z",
                           "data": {"object": key[0], "id": obj_id,
                                    "updated_at": "2099-12-31T00:00:00Z"}},
                          separators=(",", ":")).encode()
        return ps.Event(id=mid, type=key[0] + ".updated", relay=False, body=body,
                        kind=key[0], obj_id=obj_id)

    def configure_secrets(self, secrets):
        """The operator's side of the rotation: the receivers' config."""
        write_conf(self.sb.conf, **dict(self.keys, secret=secrets))

    def at_change(self, i):
        """Before change i is published: the kill variant's slow flag."""
        if self.kill and i == int(self.n * 0.4):
            open(self.slow_flag, "w").close()

    def publish(self):
        rng = random.Random(self.seed + 4)
        n = self.n
        add_both, drop_a, switch_b = n // 2, n // 2 + n // 20, n // 2 + n // 20 + 1
        forge_at = {int(n * f): how for f, how in
                    ((0.1, "wrong_secret"), (0.3, "tampered"), (0.45, "old_timestamp"),
                     (0.7, "future_timestamp"), (0.9, "wrong_secret"))}
        sent = []
        for i in range(n):
            wait = self.t0 + i / self.rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if i == add_both:
                self.configure_secrets([SECRET_A, SECRET_B])
                self.events_log.append((time.monotonic(), "config: secrets A and B"))
            if i == drop_a:
                # The operator drops the old secret a moment before the
                # provider switches: what is in flight signed with A gets
                # 401 and comes back signed with B.
                self.configure_secrets([SECRET_B])
                self.events_log.append((time.monotonic(), "config: secret B only"))
            if i == switch_b:
                time.sleep(0.3)
                self.dlv.set_secrets([SECRET_B])
                self.events_log.append((time.monotonic(), "simulator: signing with B"))
            self.at_change(i)
            if i in forge_at:
                self.dlv.forge(self.forged_event(rng, i), forge_at[i], secret=SECRET_C)
            if rng.random() < 0.03:
                evs = [self.world.relay()]
            else:
                evs = self.world.random_change(self.objects)
                if len(evs) == 2 and rng.random() < 0.5:
                    evs.reverse()       # one write: no order between the two
            for ev in evs:
                self.dlv.submit(ev)
                sent.append(ev)
            if rng.random() < 0.01 and len(sent) > 50:
                # A replay of an old event: the same webhook-id.
                self.dlv.replay(rng.choice(sent[:-50]), delay=rng.uniform(0, 1))

    def guarded(self, fn):
        """A thread's body: an exception is a problem of the storm, not a
        line lost in stderr."""
        def body():
            try:
                fn()
            except Exception as e:      # noqa: BLE001 — reported, then fails the check
                import traceback
                self.problems_extra.append("thread %s died: %s\n%s" % (
                    fn.__name__, e, traceback.format_exc()))
        return threading.Thread(target=body, daemon=True, name=fn.__name__)

    def background(self):
        """The threads beside the publisher: (drains, watchers).  Watchers
        end on self.stop, drains on self.cron_stop (after the watchers)."""
        watchers = []
        if self.kill:
            self.worker_pids = [p for p in self.srv.workers() if exe(p) == self.fcgi_real]
            watchers = [self.guarded(self.watch_workers), self.guarded(self.kill_workers),
                        self.guarded(self.watch_slow)]
        return [self.guarded(self.cron)], watchers

    def run(self):
        say("seed=%d events=%d objects=%d rate=%.0f/s kill=%s  (replay: %s_SEED=%d "
            "%s_EVENTS=%d)" % (self.seed, self.n, self.objects, self.rate, self.kill,
                               self.ENV, self.seed, self.ENV, self.n))
        self.t0 = time.monotonic()
        drains, watchers = self.background()
        for t in drains + watchers:
            t.start()
        try:
            self.publish()
            if not self.dlv.wait_idle(self.long_wait):
                self.problems_extra.append("deliveries still scheduled %d s after the last "
                                           "publication" % self.long_wait)
            self.t_delivered = time.monotonic()
        finally:
            self.stop.set()
            for t in watchers:
                t.join(10)
            self.cron_stop.set()
            for t in drains:
                t.join()
            self.dlv.stop()
        self.drain_until_idle()
        self.t_end = time.monotonic()
        return self

    def kill_drains(self):
        """Every thread told to stop, every drain still running killed."""
        self.stop.set()
        self.cron_stop.set()
        with self.live_lock:
            procs = [v[0] for v in self.live.values()]
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    def close(self):
        self.kill_drains()
        self.srv.stop()
        reports = self.sb.sanitizer_reports()
        self.sb.cleanup()
        return reports

    # ---- what happened ---------------------------------------------------
    def handed(self):
        """The record's lines, in hand-out order; self.torn: lines that
        are not one whole record (a write split or interleaved)."""
        out, self.torn = [], []
        if os.path.exists(self.record):
            with open(self.record) as f:
                for raw in f:
                    c = raw.rstrip("\n").split("\t")
                    if len(c) != 8 or not raw.endswith("\n"):
                        self.torn.append(raw)
                        continue
                    out.append(ledger.Line(*c))
        return out

    def inbox(self):
        return {r["webhook_id"]: r for r in self.sb.rows(
            "SELECT webhook_id, state, body, attempts, object_type, object_id, created_at,"
            " updated_at FROM events")}

    def check(self):
        """Every property of the issue, as a list of problems
        (tests/ledger.py's checks, then the kill's and the runs')."""
        P = list(self.problems_extra)
        rows = self.inbox()
        lines = self.handed()
        P += ["torn record line: %r" % raw for raw in self.torn]
        allowed = {self.killed_id: 2} if self.killed_id else {}
        P += ledger.check_all(self.ledger, rows, lines, LATENCY_BOUND, self.kill, allowed)
        count = collections.Counter(l.id for l in lines)
        if self.kill:
            if self.killed_id is None:
                P.append("the drain kill did not happen (no handler claimed the slow flag)")
            elif count[self.killed_id] < 1:
                P.append("%s was in hand at the kill and never handed out again"
                         % self.killed_id)
        # Every run exited 0 and said nothing (overlapping ones included),
        # except the one killed on purpose.
        for r in self.runs:
            if r.killed:
                if r.rc != -signal.SIGKILL:
                    P.append("the killed drain %d ended %d" % (r.pid, r.rc))
                continue
            if r.rc != 0 or r.out or r.err:
                P.append("webhook-drain %s (pid %d): exit %d, stdout %r, stderr %r"
                         % (" ".join(r.args), r.pid, r.rc, r.out[:300], r.err[:300]))
        return P

    def figures(self):
        L = self.ledger
        s = L.summary()
        rows = self.inbox()
        states = collections.Counter(r["state"] for r in rows.values())
        answered = [a.latency for a in L.attempts if a.status is not None]
        answered.sort()
        n_out = sum(1 for e in L.sent.values() if not e.relay)
        # Runs started while another was running (they found the lock
        # taken, or took it as the other let go).
        spans = sorted((r.started, r.ended) for r in self.runs)
        overlapping, busy_until = 0, 0
        for a, b in spans:
            if a < busy_until:
                overlapping += 1
            busy_until = max(busy_until, b)
        # Older events of an object acknowledged after a newer one.
        overtaken, newest_acked = 0, {}
        for mid, t in sorted(L.acked.items(), key=lambda x: x[1]):
            ev = L.sent[mid]
            if ev.relay:
                continue
            if ev.key in newest_acked and ev.created_ns < newest_acked[ev.key]:
                overtaken += 1
            newest_acked[ev.key] = max(newest_acked.get(ev.key, 0), ev.created_ns)
        writes = collections.Counter(e.write for e in L.sent.values() if not e.relay)
        # Committed, then the answer was lost (a kill, the simulator's
        # impatience): the first 2xx of the id says "duplicate".
        first_ok = {}
        for a in L.attempts:
            if a.ok and a.kind != "forged" and a.id not in first_ok:
                first_ok[a.id] = a
        unanswered = sum(1 for a in first_ok.values() if "duplicate" in (a.answer or ""))
        return {
            "seed": self.seed, "changes": self.n, "objects": len(self.world.objects)
            + len(self.world.deleted), "events": len(L.sent), "outbound": n_out,
            "relays": len(L.sent) - n_out, "attempts": s["attempts"],
            "by_kind": s["by_kind"], "by_status": s["by_status"],
            "acked": s["acked"], "forged": len(L.forged),
            "inbox": dict(states), "handed_out": len(self.handed()),
            "pairs_of_one_write": sum(1 for n in writes.values() if n > 1),
            "overtaken": overtaken, "committed_but_unanswered": unanswered,
            "truncated": sum(1 for e in L.sent.values() if e.truncated),
            "drain_runs": len(self.runs), "overlapping_runs": overlapping,
            "workers_at_end": len(self.srv.workers()),
            "worker_kills": self.worker_kills, "killed_in_hand": self.killed_id,
            "delivery_s": round(self.t_delivered - self.t0, 1) if self.t_delivered else None,
            "total_s": round(self.t_end - self.t0, 1) if self.t_end else None,
            "p50_ms": round(1000 * ps.pct(answered, 50), 1) if answered else None,
            "p99_ms": round(1000 * ps.pct(answered, 99), 1) if answered else None,
            "max_ms": round(1000 * answered[-1], 1) if answered else None,
        }


def storm_seed(env="STORM"):
    s = os.environ.get(env + "_SEED")
    return int(s) if s else random.SystemRandom().randrange(1, 10 ** 6)


def storm_events(default=DEFAULT_EVENTS, env="STORM"):
    return int(os.environ.get(env + "_EVENTS", default))


class TestStorm(unittest.TestCase):
    def storm(self, kill, events):
        st = Storm(storm_seed(), events, kill=kill)
        try:
            st.run()
            problems = st.check()
            fig = st.figures()
            say(json.dumps(fig))
            for t, what in st.events_log:
                say("  +%.1fs %s" % (t - st.t0, what))
            if problems:
                say("receiver/lighttpd stderr (tail):\n" + st.srv.log()[-3000:])
                if os.environ.get("STORM_KEEP"):
                    st.sb.cleanup = lambda: None
                    say("sandbox kept (STORM_KEEP): " + st.sb.dir)
        finally:
            reports = st.close()
        self.assertEqual(reports, [], "sanitizer reports:\n" + "\n".join(reports))
        self.assertEqual(problems, [], "seed %d: %d problems:\n%s" % (
            st.seed, len(problems), "\n".join(problems[:40])))
        return fig

    def test_storm(self):
        self.storm(False, storm_events())

    def test_storm_with_kills(self):
        self.storm(True, storm_events() * 2 // 3)


# ---- the simulator's own checks -------------------------------------------

class FakeClock:
    def __init__(self, ns):
        self.ns = ns

    def __call__(self):
        return self.ns


class TestProviderApi(unittest.TestCase):
    """tests/PROVIDER-API.md, served by provider_sim.ApiServer."""
    TOKEN = "tok_s3cr3t"

    def setUp(self):
        self.now = FakeClock(ps.parse_instant("2026-11-30T12:00:00Z"))
        self.world = ps.World(seed=11, clock=self.now)
        self.srv = ps.ApiServer(self.world, self.TOKEN, clock=self.now).start()

    def tearDown(self):
        self.srv.stop()

    def get(self, path, token=TOKEN, raw=False):
        h = {"Authorization": "Bearer " + token} if token is not None else {}
        req = urllib.request.Request(self.srv.base + path, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=10) as f:
                body, status, headers = f.read(), f.status, dict(f.headers)
        except urllib.error.HTTPError as e:
            body, status, headers = e.read(), e.code, dict(e.headers)
        return status, headers, (body if raw else json.loads(body))

    def post(self, path, obj):
        req = urllib.request.Request(self.srv.base + path, data=json.dumps(obj).encode(),
                                     method="POST")
        with urllib.request.urlopen(req, timeout=10) as f:
            return f.status

    def pages(self, path, limit):
        out, url = [], path + ("&" if "?" in path else "?") + "limit=%d" % limit
        while True:
            status, _, j = self.get(url)
            self.assertEqual(status, 200, j)
            self.assertLessEqual(len(j["data"]), limit)
            out.append(j["data"])
            if j["next_cursor"] is None:
                return out
            url = path.split("?")[0] + "?limit=%d&cursor=%s" % (limit, j["next_cursor"])

    def populate(self, n, kind="client"):
        for _ in range(n):
            self.now.ns += 1000 * ps.MS
            self.world.change((kind,), "create")

    def test_signer_matches_the_standard_webhooks_known_answers(self):
        path = os.path.join(os.path.dirname(ROOT), "shared", "vectors",
                            "standard-webhooks.json")
        with open(path) as f:
            vectors = [v for v in json.load(f) if v["name"] in ("kat_std_libs", "kat_rust_lib")]
        self.assertEqual(len(vectors), 2)
        for v in vectors:
            self.assertEqual(ps.sign(v["secret"], v["id"], int(v["timestamp"]),
                                     v["body"].encode()), v["signature_header"])

    def test_pagination_no_gaps_no_duplicates_ties_by_id(self):
        self.populate(230)
        # Five objects of one write share updated_at: the id breaks the tie.
        with self.world.lock:
            keys = sorted(self.world.objects)[10:15]
            for k in keys:
                self.world.objects[k]["updated_at"] = "2026-11-30T12:00:00.500Z"
        want = sorted(self.world.objects.values(),
                      key=lambda o: (ps.parse_instant(o["updated_at"]), ps.id_key(o["id"])))
        pages = self.pages("/public/v1/clients?updated_after=2026-01-01T00:00:00Z", 7)
        got = [o for p in pages for o in p]
        self.assertEqual([o["id"] for o in got], [o["id"] for o in want])
        self.assertEqual(len(pages), (len(want) + 6) // 7)
        self.assertEqual(got[0], want[0])
        # limit is capped at 500; the default is 100.
        self.populate(300)
        _, _, j = self.get("/public/v1/clients?limit=100000")
        self.assertEqual(len(j["data"]), 500)
        self.assertIsNotNone(j["next_cursor"])
        _, _, j = self.get("/public/v1/clients")
        self.assertEqual(len(j["data"]), 100)

    def test_pagination_while_objects_change_skips_nothing(self):
        self.populate(50)
        before = {o["id"] for o in self.world.objects.values()}
        _, _, j = self.get("/public/v1/clients?limit=10")
        first = j["data"]
        # An object already seen changes, and one not yet seen: the first
        # comes again at the end (its newer version), the second once.
        self.now.ns += ps.NS
        self.world.change(("client", first[0]["id"]), "update")
        unseen = [o for o in self.world.objects.values()
                  if o["id"] not in {x["id"] for x in first}][5]
        self.world.change(("client", unseen["id"]), "update")
        rest = []
        cur = j["next_cursor"]
        while cur:
            _, _, j = self.get("/public/v1/clients?limit=10&cursor=" + cur)
            rest += j["data"]
            cur = j["next_cursor"]
        ids = [o["id"] for o in first + rest]
        self.assertEqual(set(ids), before)
        self.assertEqual(collections.Counter(ids)[first[0]["id"]], 2)
        self.assertEqual(collections.Counter(ids)[unseen["id"]], 1)
        self.assertEqual(rest[-1], self.world.get("client", rest[-1]["id"]))

    def test_updated_after_is_strict_and_an_instant(self):
        self.populate(40)
        objs = sorted(self.world.objects.values(), key=lambda o: ps.parse_instant(o["updated_at"]))
        x = objs[20]
        t = x["updated_at"]
        _, _, j = self.get("/public/v1/clients?limit=500&updated_after=" + t)
        ids = [o["id"] for o in j["data"]]
        self.assertNotIn(x["id"], ids)
        self.assertEqual(ids, [o["id"] for o in objs[21:]])
        # The same instant in another offset; one nanosecond earlier.
        ns = ps.parse_instant(t)
        other = ps.iso(ns, -180)
        _, _, j2 = self.get("/public/v1/clients?limit=500&updated_after=" +
                            urllib.request.quote(other))
        self.assertEqual([o["id"] for o in j2["data"]], ids)
        earlier = ps.iso(ns - 1, digits=9)
        _, _, j3 = self.get("/public/v1/clients?limit=500&updated_after=" + earlier)
        self.assertEqual(j3["data"][0]["id"], x["id"])
        status, _, j = self.get("/public/v1/clients?updated_after=yesterday")
        self.assertEqual((status, j["error"]), (400, "bad_request"))

    def test_get_by_id_then_404_after_delete(self):
        self.populate(3)
        self.world.change(("invoice",), "create")
        inv = next(o for o in self.world.objects.values() if o["object"] == "invoice")
        status, headers, j = self.get("/public/v1/invoices/%d" % inv["id"])
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("application/json"))
        self.assertEqual(j, inv)
        self.assertEqual(j["id"], 9007199254000001)     # exact near 2^53
        self.now.ns += ps.NS
        ev = self.world.change(("invoice", inv["id"]), "delete")[0]
        self.assertEqual(ev.type, "invoice.deleted")
        status, _, j = self.get("/public/v1/invoices/%d" % inv["id"])
        self.assertEqual((status, j), (404, {"error": "not_found"}))
        _, _, j = self.get("/public/v1/invoices")
        self.assertEqual(j["data"], [])
        self.assertEqual(self.get("/public/v1/widgets/1")[0], 404)
        self.assertEqual(self.get("/public/v1/clients/nope")[0], 404)

    def test_events_last_30_days_oldest_first_as_delivered(self):
        start = self.now.ns
        self.world.history(400, 45, target_objects=30, now_ns=start)
        floor = start - 30 * ps.DAY_NS
        want = [e for e in self.world.events if e.created_ns >= floor]
        self.assertLess(len(want), len(self.world.events))      # some are older
        old = ps.iso(start - 60 * ps.DAY_NS)
        pages = self.pages("/public/v1/events?since=" + old, 50)
        got = [e for p in pages for e in p]
        self.assertEqual([e["id"] for e in got], [e.id for e in want])
        self.assertEqual(got[0], json.loads(want[0].body))     # the webhook body
        # since within the window: at or after it.
        mid = want[len(want) // 2]
        _, _, j = self.get("/public/v1/events?limit=500&since=" + mid.created_at.replace("+", "%2B"))
        self.assertEqual(j["data"][0]["id"], mid.id)
        # Time moves on: the window with it.
        self.now.ns += 10 * ps.DAY_NS
        _, _, j = self.get("/public/v1/events?limit=500")
        self.assertTrue(all(ps.parse_instant(e["createdAt"]) >= self.now.ns - 30 * ps.DAY_NS
                            for e in j["data"]))

    def test_bearer_token_required(self):
        self.populate(1)
        for token in (None, "wrong"):
            status, headers, j = self.get("/public/v1/clients", token=token)
            self.assertEqual((status, j), (401, {"error": "unauthorized"}))
            self.assertEqual(headers.get("WWW-Authenticate"), "Bearer")
        self.assertEqual(self.get("/public/v1/clients")[0], 200)

    def test_faults_and_request_log(self):
        self.populate(2)
        self.assertEqual(self.post("/_sim/faults", [
            {"path": "^/public/v1/clients$", "status": 503, "retry_after": 7, "times": 2},
            {"path": "/events", "body": "{not json"},
            {"path": "^/public/v1/orders$", "hang": 2.0, "times": 1}]), 200)
        for _ in range(2):
            status, headers, j = self.get("/public/v1/clients")
            self.assertEqual((status, headers.get("Retry-After")), (503, "7"))
        self.assertEqual(self.get("/public/v1/clients")[0], 200)
        self.assertEqual(self.get("/public/v1/events", raw=True)[2], b"{not json")
        t0 = time.monotonic()
        self.assertEqual(self.get("/public/v1/orders")[0], 200)
        self.assertGreaterEqual(time.monotonic() - t0, 2.0)
        t0 = time.monotonic()
        self.get("/public/v1/orders")
        self.assertLess(time.monotonic() - t0, 2.0)             # times: 1
        self.post("/_sim/faults", [])
        self.assertEqual(self.get("/public/v1/events")[0], 200)
        _, _, log = self.get("/_sim/requests", token=None)
        self.assertEqual([(r["method"], r["path"], r["status"]) for r in log][:4],
                         [("GET", "/public/v1/clients", 503)] * 2 +
                         [("GET", "/public/v1/clients", 200), ("GET", "/public/v1/events", 200)])
        self.assertEqual(log[-1]["query"], "")
        self.assertEqual(len(log), 7)

    def test_bad_cursor_and_limit_are_400(self):
        for q in ("cursor=garbage", "limit=0", "limit=-3", "limit=x"):
            status, _, j = self.get("/public/v1/clients?" + q)
            self.assertEqual((status, j["error"]), (400, "bad_request"), q)
        _, _, j = self.get("/public/v1/events?limit=1")
        status, _, _ = self.get("/public/v1/events?cursor=" + ps._b64({"q": "clients"}))
        self.assertEqual(status, 400)


class Flaky(BaseHTTPRequestHandler):
    """Answers by script: 500, 500, then 200; a `slow` id answers late."""
    protocol_version = "HTTP/1.1"
    seen = collections.Counter()
    headers_seen = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        mid = self.headers["webhook-id"]
        Flaky.seen[mid] += 1
        Flaky.headers_seen.append((mid, self.headers["webhook-timestamp"],
                                   self.headers["webhook-signature"]))
        if mid.startswith("slow") and Flaky.seen[mid] == 1:
            time.sleep(0.6)
        status = 500 if mid.startswith("flaky") and Flaky.seen[mid] <= 2 else 200
        try:
            self.send_response(status)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\n")
        except (BrokenPipeError, ConnectionResetError):
            pass        # the simulator gave up on the slow one


class TestDeliverer(unittest.TestCase):
    def test_retries_same_id_late_answer_fails_duplicates(self):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            ledger = ps.Ledger()
            d = ps.Deliverer("http://127.0.0.1:%d/hook" % httpd.server_address[1],
                             [SECRET_A], ledger, timeout=0.3, schedule=(0.05, 0.05, 0.05),
                             dup_rate=0, hold_rate=0)
            mk = lambda mid: ps.Event(id=mid, relay=False, body=b'{"id":"%s"}' % mid.encode())
            d.submit(mk("flaky1"))
            d.submit(mk("slow1"))
            d.submit(mk("fine1"))
            d.resend(mk("fine1"), delay=0.2)
            self.assertTrue(d.wait_idle(10))
            d.stop()
            self.assertEqual(Flaky.seen["flaky1"], 3)
            st = [a.status for a in ledger.attempts_of("flaky1")]
            self.assertEqual(st, [500, 500, 200])
            slow = ledger.attempts_of("slow1")
            self.assertEqual((slow[0].ok, slow[0].error), (False, "timeout"))
            self.assertTrue(slow[-1].ok)
            self.assertEqual(Flaky.seen["fine1"], 2)
            self.assertEqual(set(ledger.acked), {"flaky1", "slow1", "fine1"})
            for mid, ts, sig in Flaky.headers_seen:     # each attempt signed anew
                body = b'{"id":"%s"}' % mid.encode()
                self.assertEqual(sig, ps.sign(SECRET_A, mid, int(ts), body))
        finally:
            httpd.shutdown()
            httpd.server_close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
