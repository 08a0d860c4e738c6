#!/usr/bin/env python3
"""bench/report.py: the operator's view (issue 19), two numbers.

 1. `webhook-drain report --out DIR` (index.html and metrics.prom) and
    `status --json` on a BENCH_REPORT_EVENTS-event inbox (default one
    million) with 30 days of history as a drainer would have written it
    for that traffic (5-minute buckets of received, handled, failed by two
    error classes, retried, dead, five event types, the wait histogram and
    the handler histogram per type) and a run a minute for 30 days.  The
    drainer's CPU time (user + system, from the kernel's rusage of the
    child) must stay under 1 s: the page is refreshed by every cron run.

 2. The run's added cost per event: `run` then `run --report DIR` on
    BENCH_REPORT_RUN_EVENTS pending events (default 2000, handler `true`),
    CPU per event of the drainer and its handlers.  History is always on
    (there is no switch), so its own cost shows only against an older build:
    with BENCH_BASELINE_DRAIN=/path/to/old/webhook-drain the same drain runs
    with it too, alternated three times, and the difference per event is
    reported.

The inboxes are made by the real binary (`check` applies schema.sql) and
filled with Python's sqlite3 (as bench/drain.py does), with short bodies.
And 3. the history's own cost, with nothing else changed: bench/
history_cost.c runs BENCH_HISTORY_EVENTS (default 2000) pending events
through drain_run with the history hooks and without, alternated, and
reports both and the ratio (`make bench` builds it).  The report's two
commands also report their peak RSS.  BENCH_REPORT_EVENTS sets the inbox's
size (1000000 under `make bench`, the size issue 19 names; a smaller one
for a quick look, e.g. 100000).

Appends a section to BENCH_RESULTS (default bench/RESULTS.md).
"""
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl   # noqa: E402

PROG = "bench/report.py"
B = os.environ.get("B", "build")
DRAIN = os.path.abspath(os.path.join(B, "webhook-drain"))
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
TYPES = ["client.updated", "client.created", "invoice.paid", "invoice.voided",
         "payment.failed"]
INSERT = ("INSERT INTO events (webhook_id, state, body, received_at,"
          " webhook_timestamp, type, created_at, created_at_raw, object_type,"
          " object_id, sort_at, attempts, failures, next_at, finished_at,"
          " last_error, admitted) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)")


def instant(s):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".000000000Z"


def cpu_of(args, env=None):
    """Run args; (CPU seconds of it and its children, wall s, process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
            wall, p)


def rss_of(args):
    """Run args (no children); (CPU s, wall s, peak RSS MB, returncode):
    the kernel's rusage of that one process (wait4), not of every child
    so far (RUSAGE_CHILDREN's maxrss is the largest of them all)."""
    t = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return (ru.ru_utime + ru.ru_stime, time.monotonic() - t,
            ru.ru_maxrss / 1024.0, p.returncode)


def history_cost(s, work, n):
    """build/bench/history_cost: the same run with and without the history
    hooks (medians of 3), and the history's own CPU, µs per event."""
    prog = os.path.abspath(os.path.join(B, "bench", "history_cost"))
    if not os.access(prog, os.X_OK):
        s.say("%s not built (make %s): no history row" % (prog, prog))
        return None
    d = os.path.join(work, "history")
    os.mkdir(d)
    p = subprocess.run([prog, d, str(n), "3"], capture_output=True, text=True)
    if p.returncode != 0:
        raise bl.Die("history_cost: %s" % p.stderr)
    got = {}
    for line in p.stdout.splitlines():
        way, _, us = line.split()
        got[way] = float(us)
    return got


def make_inbox(drain, d):
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "webhook.conf")
    with open(conf, "w") as f:
        f.write("database = %s/inbox.db\nsecret = %s\nhandler = true\n"
                "settle = 0s\nsynchronous = NORMAL\n" % (d, SECRET))
    p = subprocess.run([drain, "-c", conf, "check"], capture_output=True, text=True)
    if "opens in WAL mode" not in p.stdout:
        raise bl.Die("check (creating the inbox): %s%s" % (p.stdout, p.stderr))
    return conf, os.path.join(d, "inbox.db")


def event_rows(n, now, pending=0):
    """n events over the 30 days before now; the last `pending` pending,
    one in 10000 dead, the rest done."""
    rnd = random.Random(19)
    span = 30 * 86400
    for i in range(n):
        t = now - span + span * i // n
        st = "pending" if i >= n - pending else "dead" if i % 10000 == 7 else "done"
        ty = TYPES[i % len(TYPES)]
        yield ("msg_%09d" % i, st, b'{"id":"evt"}', instant(t), t, ty,
               instant(t - 1), instant(t - 1)[:19] + "Z", "client",
               "cli_%06d" % rnd.randrange(100000), instant(t - 1),
               0 if st == "pending" else 1, 3 if st == "dead" else 0,
               instant(t) if st != "pending" else instant(now - 60),
               None if st == "pending" else instant(t + 1),
               "exit 3" if st == "dead" else None)


def history_rows(n, now):
    """The history n events over 30 days leave (see the docstring)."""
    buckets = 30 * 288
    per = max(1, n // buckets)
    first = (now - 30 * 86400) // 300 * 300
    for k in range(buckets):
        b = first + k * 300
        yield (300, b, "received", "", 0, per)
        yield (300, b, "handled", "", 0, per - 2)
        yield (300, b, "failed", "exit 3", 0, 1)
        yield (300, b, "failed", "timed out after 60 s", 0, 1)
        yield (300, b, "retried", "", 0, 2)
        for t in TYPES:
            yield (300, b, "type_handled", t, 0, (per - 2) // len(TYPES))
            for idx, c in ((1, per // 10), (2, per // 50), (3, 2)):
                yield (300, b, "handler", t, idx, c)
            yield (300, b, "handler", t, -1, per * 30)
            yield (300, b, "handler", t, -2, 480)
        for idx, c in ((6, per // 2), (7, per // 2), (9, 3)):
            yield (300, b, "wait", "", idx, c)
        yield (300, b, "wait", "", -1, per * 4000)
        yield (300, b, "wait", "", -2, 58000)


def run_rows(now):
    for m in range(30 * 1440):
        t = now - 30 * 86400 + m * 60
        yield (instant(t), instant(t + 2), 20, 19, 1, 1, 0, 0, 0, 0, "failures")


def fill(db, n, now, pending=0, history=True):
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    con.executemany(INSERT, event_rows(n, now, pending))
    if history:
        con.executemany("INSERT INTO history VALUES (?,?,?,?,?,?)",
                        history_rows(n, now))
        con.executemany("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        run_rows(now))
    con.execute("COMMIT")
    con.close()


def report_part(s, work, n):
    conf, db = make_inbox(DRAIN, os.path.join(work, "big"))
    now = int(time.time())
    t = time.monotonic()
    fill(db, n, now, pending=1000)
    s.say("filled %d events in %.0f s" % (n, time.monotonic() - t))
    out = os.path.join(work, "site")
    os.mkdir(out)
    rows = []
    for what, args in (("report --out DIR", ["report", "--out", out]),
                       ("status --json", ["status", "--json"])):
        best = None
        for _ in range(3):
            cpu, wall, rss, rc = rss_of([DRAIN, "-c", conf] + args)
            if rc not in (0, 1):
                raise bl.Die("%s: exit %d" % (what, rc))
            best = (cpu, wall, rss) if best is None or cpu < best[0] else best
        rows.append((what, best))
    size = os.path.getsize(db) + os.path.getsize(db + "-wal") \
        if os.path.exists(db + "-wal") else os.path.getsize(db)
    return rows, size, os.path.getsize(os.path.join(out, "index.html"))


def run_part(s, work, n, drain, tag, report):
    conf, db = make_inbox(drain, os.path.join(work, tag))
    fill(db, n, int(time.time()), pending=n, history=False)
    args = [drain, "-c", conf, "run"]
    if report:
        args += ["--report", os.path.join(work, tag + "-site")]
        os.makedirs(args[-1], exist_ok=True)
    cpu, wall, p = cpu_of(args)
    if p.returncode != 0:
        raise bl.Die("%s run: %s" % (tag, p.stderr))
    shutil.rmtree(os.path.join(work, tag))
    return cpu / n * 1e6, wall / n * 1e6


class Say:
    def say(self, msg):
        print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


def main():
    sess = Say()
    n = bl.env_int("BENCH_REPORT_EVENTS", 1000000)
    rn = bl.env_int("BENCH_REPORT_RUN_EVENTS", 2000)
    hn = bl.env_int("BENCH_HISTORY_EVENTS", 2000)
    base = os.environ.get("BENCH_BASELINE_DRAIN", "")
    work = tempfile.mkdtemp(prefix="webhook-bench-report-")
    try:
        hist = history_cost(sess, work, hn)
        rows, dbsize, page = report_part(sess, work, n)
        runs = {"run": [], "run --report DIR": [], "baseline run": []}
        for i in range(3):
            runs["run"].append(run_part(sess, work, rn, DRAIN, "a%d" % i, False))
            runs["run --report DIR"].append(
                run_part(sess, work, rn, DRAIN, "r%d" % i, True))
            if base:
                runs["baseline run"].append(
                    run_part(sess, work, rn, base, "b%d" % i, False))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    L = ["## Report and metrics (issue 19, %s)" % time.strftime(
        "%Y-%m-%d %H:%M UTC", time.gmtime()), "",
        "Inbox of %d events (%.0f MB) with 30 days of history and a run a "
        "minute; best of 3, the drainer's CPU (user + system):" % (n, dbsize / 1e6), "",
        "| command | CPU s | wall s | peak RSS MB | under 1 s of CPU |",
        "|---|---|---|---|---|"]
    for what, (cpu, wall, rss) in rows:
        L.append("| %s | %.3f | %.3f | %.0f | %s |" % (
            what, cpu, wall, rss, "yes" if cpu < 1 else "**no**"))
    L += ["", "index.html: %d bytes." % page, "",
          "A run of %d pending events (handler `true`), CPU and wall per event "
          "of the drainer with its handlers, median of 3:" % rn, "",
          "| run | CPU µs/event | wall µs/event |", "|---|---|---|"]
    for what, v in runs.items():
        if v:
            v.sort()
            L.append("| %s | %.0f | %.0f |" % (what, v[1][0], v[1][1]))
    if runs["baseline run"]:
        L.append("")
        L.append("History's added CPU per event against BENCH_BASELINE_DRAIN: "
                 "%.0f µs." % (runs["run"][1][0] - runs["baseline run"][1][0]))
    elif not hist:
        L += ["", "(No BENCH_BASELINE_DRAIN: history's own cost is not "
              "separated; it is in the `run` row.)"]
    if hist:
        L += ["", "History's added cost (bench/history_cost.c): the same run "
              "of %d pending events (handler `true`, one object each) with "
              "the history hooks webhook-drain installs and without any, "
              "alternated, median of 3; CPU of the drainer and its handlers "
              "per event, and the history's own CPU (inside the runrec "
              "calls, the save's transaction included):" % hn, "",
              "| run | CPU µs/event |", "|---|---|",
              "| without history | %.1f |" % hist["without"],
              "| with history | %.1f |" % hist["with"],
              "| history's own | %.2f |" % hist["history"], "",
              "Ratio with / without: %.3f; the history's own share of the "
              "run with it: %.2f %%." % (
                  hist["with"] / hist["without"] if hist["without"] else 0,
                  100 * hist["history"] / hist["with"] if hist["with"] else 0)]
    text = "\n".join(L) + "\n\n"
    print(text)
    bl.append_results(os.environ.get("BENCH_RESULTS", "bench/RESULTS.md"), text)
    return 0


if __name__ == "__main__":
    bl.run(main, PROG)
