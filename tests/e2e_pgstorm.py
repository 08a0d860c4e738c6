"""The storm on PostgreSQL (docs/postgresql.md, "Tests"): one PostgreSQL
inbox (tests/pgserver.py, a server of this test's own) written by two web
hosts — two lighttpd instances, each on its own port with its own config and
webhook.fcgi workers — behind a load balancer (the provider simulator sends
each attempt to one of them at random), and drained by three drainers in
separate processes (`webhook-drain run` started again as soon as it ends, as
cron would; two of them with `--jobs 2`).  In one scenario:

- the simulator's storm (tests/provider_sim.py, as in tests/e2e_storm.py):
  duplicates, replays, hold-backs that reorder an object's events,
  forged deliveries, a secret rotation in the middle;
- drainers SIGKILLed while their handler runs (three times): their lease
  expires and another drainer hands the event out again, and the
  drainer's guard has killed its handlers at once (no end line from any);
- PostgreSQL restarted mid-storm, twice (`pg_ctl stop -m fast`, then
  `-m immediate`: a crash and its recovery): the receivers answer 503 with
  Retry-After while it is down and 200 after, the simulator retries as
  the provider does; drainers that lose it exit non-zero and the next
  ones carry on;

then everything drained, and the ledger, the handler's record and the
database say: no acknowledged event lost, none stored twice, never two
hand-outs of one event at once nor two of one object at once (each
hand-out logs its start and its end, O_APPEND, one write each), an event
handed out again only after the drainer that had it died or lost the
database, per-object order and the stale rule (tests/ledger.py, the
checks e2e_storm makes), no lease left.

  PGSTORM_SEED=N    replay a storm (the seed is printed at the start)
  PGSTORM_EVENTS=N  its size (changes published; `make storm` runs it big)
  PGSTORM_KEEP=1    keep a failed storm's sandboxes (record, logs)
"""
import collections
import json
import os
import queue
import random
import signal
import threading
import time
import unittest

import ledger
import pgserver
import provider_sim as ps
from e2e_storm import LATENCY_BOUND, READ_BODY, Storm, ppid, say, storm_events, storm_seed
from harness import SECRET_A, DRAIN, Sandbox, Lighttpd, write_conf
from harness import gone, group_gone as gone_group

# Changes published in make test: a few hundred, over SPAN seconds.
DEFAULT_EVENTS = 250
SPAN = 25.0
# When, as a fraction of the storm's changes: the drainer kills (a flag
# the next handler claims), the PostgreSQL restarts (stop mode).
KILL_AT = (0.2, 0.45, 0.7)
RESTART_AT = ((0.35, "fast"), (0.6, "immediate"))
# How long PostgreSQL stays down once stopped (seconds): long enough that
# deliveries meet it down.
DOWN_S = 1.5
# How long a SIGKILLed drainer's handler may outlive it: the guard kills
# it within microseconds; this only bounds a test whose guard failed.
GUARD_WAIT_S = 20.0
# Drainers that lost PostgreSQL may fail, and receivers answer 503, up to
# this long after it came back: a statement already in flight, a
# receiver's reconnect backoff (5 s at most), a busy machine.
OUTAGE_SLACK_S = 15.0
# The provider's schedule, compressed: long enough to outlive a restart
# on a busy machine (the receivers' reconnect backoff is 5 s at most).
SCHEDULE = (0.2, 0.5, 1, 2, 4, 8, 16, 16, 16, 16)

# Each hand-out: a "start" line when the handler starts (webhook-id,
# object, object id, createdAt, the drainer's pid, the handler's process
# group) and an "end" line when it ends (the 8 fields of tests/ledger.py's
# Line, then the drainer's pid); each line one write(2) with O_APPEND.
# Builtins only.  The drainer spawns `/bin/sh -c HANDLER`, which runs
# this script as its child (dash does not exec the last command of -c):
# $PPID is that shell, whose pid is the group's, and the drainer is its
# parent (/proc's stat, field 4; $PPID itself were dash ever to exec).
# A handler that claims one of $SLOW_DIR's flags (mkdir is atomic) says
# who it is and waits: its drainer is SIGKILLed meanwhile, and the
# drainer's guard (lib/drain/guard.h) must kill it at once, so it never writes
# its end line.  It waits at most 30 s (an orphan the guard missed ends,
# and is caught by its end line), or until the killer releases it (the
# flag's .done) when it has no drainer to kill.
HANDLER = r"""#!/bin/sh
read -r st < /proc/$PPID/stat
set -- $st
if [ "$2" = "(sh)" ]; then DRAINER=$4; else DRAINER=$PPID; fi
printf 'start\t%s\t%s\t%s\t%s\t%s\t%s\n' "$WEBHOOK_ID" "${WEBHOOK_OBJECT:-}" \
	"${WEBHOOK_OBJECT_ID:-}" "${WEBHOOK_CREATED_AT:-}" "$DRAINER" "$PPID" >> "$RECORD"
""" + READ_BODY + r"""for f in "$SLOW_DIR"/*.flag; do
	if [ -e "$f" ] && mkdir "$f.claimed" 2>/dev/null; then
		printf '%s\t%s\t%s\n' "$WEBHOOK_ID" "$$" "$DRAINER" > "$f.tmp" && mv "$f.tmp" "$f.who"
		n=0
		while [ ! -e "$f.done" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
		break
	fi
done
printf 'end\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$WEBHOOK_ID" "${WEBHOOK_ATTEMPT:-}" \
	"${WEBHOOK_OBJECT:-}" "${WEBHOOK_OBJECT_ID:-}" "${WEBHOOK_CREATED_AT:-}" \
	"$u" "$i" "${WEBHOOK_STALE:-0}" "$DRAINER" >> "$RECORD"
exit 0
"""

# The three drainers: each runs one `webhook-drain run` at a time, again
# as soon as the last one ended.
DRAINERS = (["run", "--jobs", "2"], ["run", "--jobs", "2", "--max-time", "3"], ["run"])


class PgStorm(Storm):
    """Storm's publisher, drains and checks, on PostgreSQL: two web hosts,
    three drainers, kills and restarts (the module's docstring)."""
    ENV = "PGSTORM"

    def __init__(self, seed, events, span=SPAN):
        self.seed, self.n, self.kill = seed, events, True
        self.objects = max(20, events // 8)
        self.rate = max(10.0, events / span)
        self.settle = 1
        self.drain = DRAIN
        self.pg = pgserver.PgServer(prefix="webhook-pgstorm-pg-")
        db = self.pg.new_database()
        # Two web hosts, each with its own directory and config naming the
        # one database; the drainers use the first's.
        self.hosts = [Sandbox(prefix="webhook-pgstorm-%s-" % h) for h in "ab"]
        self.sb = self.hosts[0]
        for h in self.hosts:
            h.db = db
        self.record = os.path.join(self.sb.dir, "record.tsv")
        self.slow_dir = os.path.join(self.sb.dir, "slow")
        os.mkdir(self.slow_dir)
        self.runs_dir = os.path.join(self.sb.dir, "runs")
        os.mkdir(self.runs_dir)
        self.handler = os.path.join(self.sb.dir, "pgstorm-handler.sh")
        with open(self.handler, "w") as f:
            f.write(HANDLER)
        os.chmod(self.handler, 0o755)
        # handler_timeout: the killer finds and SIGKILLs a slow handler's
        # drainer well within it (the handler waits for the kill, at most
        # 30 s, so only a drainer left alive times it out); the lease
        # (lib/drain/drain.h) is then 5 + 2 + 10 + 4 = 21 s.
        self.keys = {"database": db, "secret": [SECRET_A], "handler": self.handler,
                     "settle": "%ds" % self.settle, "handler_timeout": "5s",
                     "api_timeout": "1s", "max_attempts": "12",
                     "retry_base": "1s", "retry_max": "2s"}
        self.configure_secrets([SECRET_A])
        self.srvs = []
        for h in self.hosts:
            self.srvs.append(Lighttpd(h, procs=2))
        self.world = ps.World(seed)
        self.ledger = ps.Ledger()
        self.dlv = ps.Deliverer(["http://127.0.0.1:%d/hook" % s.port for s in self.srvs],
                                [SECRET_A], self.ledger, seed=seed + 1, timeout=5.0,
                                schedule=SCHEDULE, impatient_rate=0.01)
        self.runs, self.ended, self.live = [], {}, {}
        self.live_lock, self.reap_lock = threading.Lock(), threading.Lock()
        self.killed_drains, self.killed_ids = set(), []
        self.events_log, self.problems_extra = [], []
        self.outages = []               # (down, up) monotonic times
        self.restarts = queue.Queue()
        self.t0 = self.t_delivered = self.t_end = None
        self.long_wait = max(180.0, events / 40.0)
        self.stop, self.cron_stop = threading.Event(), threading.Event()
        self.run_seq = 0

    # ---- Storm's hooks ---------------------------------------------------
    def env(self):
        return dict(os.environ, RECORD=self.record, SLOW_DIR=self.slow_dir, **self.sb.env())

    def configure_secrets(self, secrets):
        for h in self.hosts:
            write_conf(h.conf, **dict(self.keys, secret=secrets))

    def at_change(self, i):
        for k, f in enumerate(KILL_AT):
            if i == int(self.n * f):
                open(os.path.join(self.slow_dir, "%d.flag" % k), "w").close()
        for f, mode in RESTART_AT:
            if i == int(self.n * f):
                self.restarts.put(mode)

    def background(self):
        drains = [self.guarded(lambda a=a, k=k: self.drainer(k, a))
                  for k, a in enumerate(DRAINERS)]
        return drains + [self.guarded(self.restarter)], [self.guarded(self.killer)]

    def publish(self):
        super().publish()
        # On a busy machine the drainers lag behind the publisher: the last
        # flag may not be claimed by the time the last change is published
        # (a loaded CI run saw 2 kills of 3).  The drainers and the killer
        # go on until each flag's drainer is killed.
        deadline = time.monotonic() + self.long_wait
        while len(self.killed_ids) < len(KILL_AT) and time.monotonic() < deadline:
            time.sleep(0.1)

    def reap(self, block=False):
        with self.reap_lock:        # three drainer threads reap
            super().reap(block)

    # ---- drainers, killer, restarts --------------------------------------
    def drainer(self, k, args):
        """One drainer host: `webhook-drain run ARGS`, again and again."""
        rng = random.Random(self.seed + 10 + k)
        while not self.cron_stop.is_set():
            p = self.start_run(args)
            if not self.wait_while_handing_out(p):
                self.problems_extra.append("webhook-drain %s (pid %d) handed nothing "
                                           "out for %d s" % (args, p.pid, self.long_wait))
                p.kill()
                p.wait()
            self.after_run(p.pid)
            self.reap()
            self.cron_stop.wait(rng.uniform(0.1, 0.4))

    def after_run(self, drainer):
        """The run `drainer` has ended (well, killed, or failed with the
        database): a hand-out of its still open in the record -- killed,
        no end line -- must be gone, the guard (lib/drain/guard.h) having
        killed the handler's group when the drainer died.  Then a "gone"
        line ends them all: the next hand-out of their events may start."""
        ended, handlers = set(), {}
        if not os.path.exists(self.record):     # nothing handed out yet
            return
        with open(self.record) as f:
            for raw in f:
                c = raw.rstrip("\n").split("\t")
                if c[0] == "start" and len(c) == 7 and c[5] == str(drainer):
                    handlers[c[1]] = int(c[6])
                elif c[0] == "end" and len(c) == 10 and c[9] == str(drainer):
                    ended.add(c[1])
        open_ones = {m: h for m, h in handlers.items() if m not in ended}
        if not open_ones:
            return
        deadline = time.monotonic() + GUARD_WAIT_S
        for mid, shell in open_ones.items():
            while not gone_group(shell):
                if time.monotonic() > deadline:
                    self.problems_extra.append(
                        "ORPHAN: handler %d (%s) still runs %.0f s after its drainer %d "
                        "ended" % (shell, mid, GUARD_WAIT_S, drainer))
                    try:
                        os.killpg(shell, signal.SIGKILL)
                    except OSError:
                        pass
                    break
                time.sleep(0.01)
        with open(self.record, "a") as f:   # one write, O_APPEND
            f.write("gone\t%d\n" % drainer)

    def killer(self):
        """When a handler that claimed a slow flag says who it is, SIGKILL
        the webhook-drain above it, mid-handler."""
        done = set()
        while len(done) < len(KILL_AT) and not self.stop.wait(0.01):
            for k in range(len(KILL_AT)):
                who = os.path.join(self.slow_dir, "%d.flag.who" % k)
                if k in done or not os.path.exists(who):
                    continue
                done.add(k)
                with open(who) as f:
                    mid, pid, parent = f.read().rstrip("\n").split("\t")
                release = os.path.join(self.slow_dir, "%d.flag.done" % k)
                if int(parent) in self.killed_drains:
                    # Flags left unclaimed while PostgreSQL was down: a
                    # drainer's two slots took two, and it is dead already
                    # (so is this handler, if the guard did its work).
                    self.killed_ids.append(mid)
                    continue
                p = self.drain_above(int(pid))
                if p is None and gone(int(pid)):
                    # Its drainer ended first (it lost PostgreSQL), and
                    # the guard took the handler with it: in hand at a
                    # drainer's death all the same.
                    self.killed_ids.append(mid)
                    continue
                if p is None:
                    self.problems_extra.append("slow handler %s (%s): no webhook-drain of "
                                               "ours above it" % (pid, mid))
                    open(release, "w").close()
                    continue
                self.killed_drains.add(p)
                os.kill(p, signal.SIGKILL)
                self.killed_ids.append(mid)
                self.events_log.append((time.monotonic(), "SIGKILL webhook-drain %d while "
                                        "its handler ran %s" % (p, mid)))

    def drain_above(self, pid):
        """The webhook-drain of ours that pid (a handler) runs under, or
        None.  A drainer can reach its handler before start_run's thread
        has noted its pid (the machine busy): look again for up to 3 s
        (the slow handler waits for the kill, at most 30 s)."""
        deadline = time.monotonic() + 3
        while True:
            with self.live_lock:
                drains = set(self.live)
            p = pid
            while p and p > 1 and p not in drains:
                p = ppid(p)
            if p in drains or time.monotonic() > deadline:
                return p if p in drains else None
            time.sleep(0.01)

    def restarter(self):
        """PostgreSQL stopped (fast, or immediate: a crash), down DOWN_S,
        started again, as at_change asks."""
        while not (self.stop.is_set() and self.restarts.empty()):
            try:
                mode = self.restarts.get(timeout=0.2)
            except queue.Empty:
                continue
            down = time.monotonic()
            self.pg.stop(mode)
            time.sleep(DOWN_S)
            self.pg.start()
            self.outages.append((down, time.monotonic()))
            self.events_log.append((down, "PostgreSQL stopped (-m %s), back after %.1f s"
                                    % (mode, time.monotonic() - down)))

    # ---- what happened ---------------------------------------------------
    def inbox(self):
        return {r["webhook_id"]: r for r in pgserver.query(
            self.sb.db, "SELECT webhook_id, state, body, attempts FROM events")}

    def handed(self):
        """(intervals, lines): every start/end line in the record's order
        as (what, id, object key or None, drainer pid), and the end lines
        as tests/ledger.py's Line; self.torn: lines that are neither."""
        marks, lines, self.torn, self.by_pid = [], [], [], []
        if os.path.exists(self.record):
            with open(self.record) as f:
                for raw in f:
                    c = raw.rstrip("\n").split("\t")
                    if raw.endswith("\n") and c[0] == "start" and len(c) == 7:
                        marks.append(("start", c[1], (c[2], c[3]) if c[3] else None, c[5]))
                    elif raw.endswith("\n") and c[0] == "gone" and len(c) == 2:
                        marks.append(("gone", None, None, c[1]))
                    elif raw.endswith("\n") and c[0] == "end" and len(c) == 10:
                        marks.append(("end", c[1], (c[3], c[4]) if c[4] else None, c[9]))
                        lines.append(ledger.Line(*c[1:9]))
                        self.by_pid.append(int(c[9]))
                    else:
                        self.torn.append(raw)
        return marks, lines

    def check(self):
        P = list(self.problems_extra)
        marks, lines = self.handed()
        P += ["torn record line: %r" % raw for raw in self.torn]
        rows = self.inbox()
        # Stored once: the primary key says so; the database, asked.
        P += ["STORED TWICE: %s (%d rows)" % (r["webhook_id"], r["n"]) for r in
              pgserver.query(self.sb.db, "SELECT webhook_id, count(*) AS n FROM events"
                             " GROUP BY 1 HAVING count(*) > 1")]
        P += ["lease left after the drain: %r" % r for r in
              pgserver.query(self.sb.db, "SELECT * FROM leases")]
        # Never two hand-outs of one event, nor of one object, at once.
        open_id, open_obj, dead = {}, {}, set()
        for what, mid, obj, pid in marks:
            if what == "gone":
                # The drainer and (its guard's work) its handlers are gone
                # here: their hand-outs end, none of them may go on.
                dead.add(pid)
                for m in [m for m, d in open_id.items() if d == pid]:
                    del open_id[m]
                    for o in [o for o, x in open_obj.items() if x == m]:
                        del open_obj[o]
                continue
            if pid in dead:
                P.append("ORPHAN: %s %s under drainer %s after it ended" % (
                    mid, "started" if what == "start" else "ended", pid))
            if what == "start":
                if mid in open_id:
                    P.append("OVERLAP: %s started (drainer %s) while its hand-out by "
                             "drainer %s ran" % (mid, pid, open_id[mid]))
                if obj and obj in open_obj:
                    P.append("OVERLAP: %s of %s:%s started (drainer %s) while %s of that "
                             "object ran" % (mid, obj[0], obj[1], pid, open_obj[obj]))
                open_id[mid] = pid
                if obj:
                    open_obj[obj] = mid
            else:
                if open_id.pop(mid, None) is None:
                    P.append("%s ended without a start" % mid)
                if obj:
                    open_obj.pop(obj, None)
        P += ["%s started and never ended" % mid for mid in sorted(open_id)]
        # Handed out again only after the drainer that had it died (a kill)
        # or failed (it lost the database before recording the verdict).
        ok_pids = {r.pid for r in self.runs if r.rc == 0 and not r.killed}
        seen = collections.defaultdict(list)
        for l, pid in zip(lines, self.by_pid):
            seen[l.id].append(pid)
        allowed = {}
        for mid, pids in seen.items():
            if len(pids) > 1:
                allowed[mid] = len(pids)
                for pid in pids[:-1]:
                    if pid in ok_pids:
                        P.append("DOUBLE: %s handed out by drainer %d, which ended well, "
                                 "and again after (by %s)" % (mid, pid, pids[1:]))
        for mid in self.killed_ids:
            # The killed hand-out wrote no end line: one is the next.
            if not seen.get(mid):
                P.append("%s was in hand at a drainer's kill and not handed out again"
                         % mid)
        if len(self.killed_ids) != len(KILL_AT):
            # Which flags were raised, claimed, and by whom: what the next
            # look at such a run needs.
            P.append("%d drainer kills of %d happened (flags: %s)" % (
                len(self.killed_ids), len(KILL_AT),
                " ".join(sorted(os.listdir(self.slow_dir)))))
        # A drainer with --jobs 2 killed while its other handler read its
        # body: that body may end early (ledger.check_handouts).  So may
        # the body of a handler whose drainer was killed before the
        # handler looked up who its drainer was: it found itself
        # reparented (pid 1), no drainer of ours.
        killed = {r.pid for r in self.runs if r.killed}
        ours = {r.pid for r in self.runs}
        cut = {i for i, pid in enumerate(self.by_pid)
               if pid in killed or pid not in ours}
        P += ledger.check_all(self.ledger, rows, lines, LATENCY_BOUND, True, allowed,
                              exact_attempts=False, cut_short=cut)
        P += self.check_outages()
        # Runs: exit 0 and silent, but the killed ones and those that lost
        # the database while it was down.
        for r in self.runs:
            if r.killed:
                if r.rc != -signal.SIGKILL:
                    P.append("the killed drain %d ended %d" % (r.pid, r.rc))
            elif r.rc != 0 or r.out or r.err:
                if not (r.rc == 1 and self.in_outage(r.started, r.ended)):
                    P.append("webhook-drain %s (pid %d): exit %d, stdout %r, stderr %r"
                             % (" ".join(r.args), r.pid, r.rc, r.out[:300], r.err[:300]))
        return P

    def in_outage(self, start, end):
        return any(start <= up + OUTAGE_SLACK_S and end >= down for down, up in self.outages)

    def check_outages(self):
        """503 with Retry-After while PostgreSQL was down, nothing else but
        200, 401 (forged, the rotation) or 409-free answers; at least one
        delivery met it down; the provider's retries got their 200."""
        P = []
        if len(self.outages) != len(RESTART_AT):
            P.append("%d PostgreSQL restarts of %d happened" % (len(self.outages),
                                                                len(RESTART_AT)))
        n503 = 0
        for a in self.ledger.attempts:
            if a.status is None or a.status < 500:
                continue
            if a.status != 503 or not a.retry_after:
                P.append("%s attempt %d: %d (Retry-After %r), not 503 with Retry-After"
                         % (a.id, a.n, a.status, a.retry_after))
            elif not self.in_outage(a.t, a.t + a.latency):
                P.append("%s attempt %d: 503 at +%.1f s, PostgreSQL was up"
                         % (a.id, a.n, a.t - self.t0))
            n503 += 1
        if n503 == 0:
            P.append("no delivery met PostgreSQL down (no 503): the restarts tested nothing")
        return P

    def figures(self):
        s = self.ledger.summary()
        marks, lines = self.handed()
        return {"seed": self.seed, "changes": self.n, "events": s["events"],
                "acked": s["acked"], "attempts": s["attempts"], "by_status": s["by_status"],
                "by_host": dict(collections.Counter(a.target for a in self.ledger.attempts)),
                "inbox": dict(collections.Counter(r["state"] for r in self.inbox().values())),
                "handed_out": len(lines), "drain_runs": len(self.runs),
                "failed_runs": sum(1 for r in self.runs if r.rc != 0 and not r.killed),
                "killed": self.killed_ids,
                "delivery_s": round(self.t_delivered - self.t0, 1) if self.t_delivered else None,
                "total_s": round(self.t_end - self.t0, 1) if self.t_end else None}

    def close(self):
        self.kill_drains()
        for s in self.srvs:
            s.stop()
        reports = [r for h in self.hosts for r in h.sanitizer_reports()]
        self.pg.cleanup()
        for h in self.hosts:
            h.cleanup()
        return reports


class TestPgStorm(unittest.TestCase):
    def test_two_hosts_three_drainers_kills_and_restarts(self):
        st = PgStorm(storm_seed("PGSTORM"), storm_events(DEFAULT_EVENTS, "PGSTORM"))
        problems = ["the storm did not run"]
        try:
            st.run()
            problems = st.check()
            say(json.dumps(st.figures()))
            for t, what in sorted(st.events_log):
                say("  +%.1fs %s" % (t - st.t0, what))
            if problems:
                for s in st.srvs:
                    say("lighttpd stderr (tail):\n" + s.log()[-2000:])
                if os.environ.get("PGSTORM_KEEP"):
                    for h in st.hosts:
                        h.cleanup = lambda: None
                    st.pg.cleanup = lambda: None
                    say("sandboxes kept (PGSTORM_KEEP): %s %s, PostgreSQL in %s"
                        % (st.hosts[0].dir, st.hosts[1].dir, st.pg.dir))
        finally:
            reports = st.close()
        self.assertEqual(reports, [], "sanitizer reports:\n" + "\n".join(reports))
        if problems:
            self.fail("seed %d: %d problems:\n%s" % (st.seed, len(problems),
                                                     "\n".join(problems[:40])))


if __name__ == "__main__":
    unittest.main(verbosity=2)
