#!/usr/bin/env python3
"""bench/drain_jobs.py: `webhook-drain run --jobs N` (issue 20).

One run measures, on inboxes filled alike (bench/drain.py's fill: events
shaped like bench/signed.py's, 1 ms apart, spread over 1000 objects, none
stale, every one handed out):

 1. The trivial handler: `run` (one job) with handler `true` against the
    machine's rate of fork + setpgid + exec "/bin/sh -c true" + waitpid
    (bench/spawn.c), measured right before and right after in the same
    run.  Goal: ≥ 0.8 × that rate.

 2. A handler that takes 20 ms (`sleep 0.02`): `run --jobs N` for N = 1, 2,
    4, 8, each on its own copy of the inbox.  Goal: N jobs ≥ 0.8 × N × the
    one-job rate (the handler, not the inbox, is the bottleneck).

Each drain is validated: exit 0, every event done exactly once (sum of
attempts = events), nothing pending, stale or dead, and no object's events
finished out of their hand-out order (finished_at follows sort_at within
each object).  `-v` tells how many handlers ran at once, at most.

The backend is a parameter: --database sqlite (default: a file per row in
the session's directory) or --database postgresql://… (the PostgreSQL inbox
of issue 20; its fill and checks go in PostgresTarget, which this build
does not have yet: it says so and stops).

Environment (all optional):
  BENCH_JOBS_EVENTS    events per `sleep 0.02` drain (default 800)
  BENCH_TRUE_EVENTS    events in the handler-`true` drain (default 3000)
  BENCH_JOBS           the --jobs values (default "1 2 4 8")
  BENCH_RESULTS        the file to append to (default bench/RESULTS.md)
  B                    build directory (default build)
"""
import argparse
import base64
import os
import re
import resource
import secrets
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True    # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl   # noqa: E402
import drain as dr      # noqa: E402  (bench/drain.py: the fill, spawn)

PROG = "bench/drain_jobs.py"
SLEEP_HANDLER = "sleep 0.02"


class SqliteTarget:
    """One SQLite inbox per drain, in the session's directory."""
    name = "SQLite"

    def __init__(self, s, drain, secret):
        self.s, self.drain, self.secret = s, drain, secret

    def make(self, label, handler, events):
        conf = os.path.join(self.s.work, label, "webhook.conf")
        db = dr.write_conf(conf, self.secret)
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text.replace("handler = true\n", "handler = %s\n" % handler))
        dr.create_inbox(self.s, self.drain, conf)
        dr.fill(db, events)
        return conf

    def check(self, conf, n):
        """Problems with a finished drain: [] when valid."""
        why = []
        con = sqlite3.connect(conf.replace("webhook.conf", "inbox.db"), timeout=30)
        try:
            states = dict(con.execute(
                "SELECT state, count(*) FROM events GROUP BY state").fetchall())
            attempts = con.execute("SELECT sum(attempts) FROM events").fetchone()[0]
            disorder = con.execute(
                "SELECT count(*) FROM (SELECT finished_at, lag(finished_at) OVER"
                " (PARTITION BY object_type, object_id"
                "  ORDER BY sort_at, received_at, rowid) AS prev FROM events)"
                " WHERE prev IS NOT NULL AND finished_at <= prev").fetchone()[0]
        finally:
            con.close()
        if states != {"done": n}:
            why.append("states %s (want %d done)" % (states, n))
        if attempts != n:
            why.append("handed out %s times for %d events" % (attempts, n))
        if disorder:
            why.append("%d events finished before an earlier one of their "
                       "object" % disorder)
        return why


class PostgresTarget:
    """The hook for the PostgreSQL inbox (issue 20): make() creates a
    schema or database for the row and fills it with `events` (e.g. through
    `webhook-drain copy --to URI` from a SQLite fill), check() runs the same
    three checks as SqliteTarget.check over it."""
    name = "PostgreSQL"

    def __init__(self, s, drain, secret, uri):
        raise bl.Die("--database %s: this build has no PostgreSQL inbox yet "
                     "(PostgresTarget is the place for its fill and checks)"
                     % uri.split("@")[-1])


def drain_row(s, drain, target, conf, n, jobs, label):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = bl.load1()
    log = os.path.join(s.logdir, label + ".log")
    args = [drain, "-c", conf, "-v", "run"]
    if jobs:
        args += ["--jobs", str(jobs)]
    s.commands.append("webhook-drain -c $TMP/%s/webhook.conf -v run%s"
                      % (label, " --jobs %d" % jobs if jobs else ""))
    t = time.monotonic()
    with open(log, "w") as out:
        p = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT)
    secs = time.monotonic() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log, errors="replace") as f:
        output = f.read()
    why = target.check(conf, n)
    if p.returncode != 0:
        why.insert(0, "exit %d: %s" % (p.returncode, output.strip()[-300:]))
    m = re.search(r"up to (\d+) handlers at once", output)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    res = {"label": label, "jobs": jobs or 1, "n": n, "secs": secs,
           "rate": n / secs, "cpu_ms": 1000 * cpu / n,
           "peak": int(m.group(1)) if m else 1, "why": why,
           "load": "%s→%s" % (load0, bl.load1())}
    s.say("%s: %d events in %.2f s = %.1f events/s, CPU %.2f ms/event, at most "
          "%d at once, valid %s%s" % (label, n, secs, res["rate"], res["cpu_ms"],
                                      res["peak"], "no" if why else "yes",
                                      " (%s)" % "; ".join(why) if why else ""))
    return res


def main():
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("--database", default="sqlite",
                    help="sqlite (default) or a postgresql:// URI")
    a = ap.parse_args()
    s = bl.Session(PROG, "drain-jobs")
    n_jobs_events = bl.env_int("BENCH_JOBS_EVENTS", 800)
    n_true = bl.env_int("BENCH_TRUE_EVENTS", 3000)
    jobs_list = [int(x) for x in os.environ.get("BENCH_JOBS", "1 2 4 8").split()]
    results = os.environ.get("BENCH_RESULTS",
                             os.path.join(bl.ROOT, "bench", "RESULTS.md"))
    build = os.path.join(bl.ROOT, s.B)
    if not os.access(os.path.join(build, "webhook-drain"), os.X_OK):
        raise bl.Die("%s/webhook-drain not built (run make)" % s.B)
    drain = s.copy_bin(os.path.join(build, "webhook-drain"))
    os.makedirs(s.outdir, exist_ok=True)
    spawn = os.path.join(s.outdir, "spawn")
    subprocess.run(["cc", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-o", spawn,
                    os.path.join(bl.BENCH, "spawn.c")], check=True)
    spawn = s.copy_bin(spawn)
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    if a.database == "sqlite":
        target = SqliteTarget(s, drain, secret)
    elif a.database.startswith(("postgresql://", "postgres://")):
        target = PostgresTarget(s, drain, secret, a.database)
    else:
        raise bl.Die("--database: sqlite or a postgresql:// URI")

    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    mach = bl.machine()
    load_start = bl.loadavg()
    steal0 = bl.steal()
    tag = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))

    # ---- 1. handler `true` against the spawn ceiling ---------------------
    events = dr.backlog(n_true, tag + "t", secret, time.time_ns())
    conf = target.make("true", "true", events)
    ceil1 = dr.spawn_run(s, spawn, n_true)
    true_row = drain_row(s, drain, target, conf, n_true, 0, "true")
    ceil2 = dr.spawn_run(s, spawn, n_true)
    ceiling = (ceil1["rate"] + ceil2["rate"]) / 2

    # ---- 2. handler `sleep 0.02`, --jobs N --------------------------------
    events = dr.backlog(n_jobs_events, tag + "s", secret, time.time_ns())
    rows = []
    for j in jobs_list:
        label = "sleep-jobs%d" % j
        conf = target.make(label, SLEEP_HANDLER, events)
        rows.append(drain_row(s, drain, target, conf, n_jobs_events, j, label))
    one = next((r for r in rows if r["jobs"] == 1), None)

    load_end = bl.loadavg()
    steal1 = bl.steal()
    finished = time.strftime("%H:%M:%S UTC", time.gmtime())
    L = ["## Drainer, several handlers at once: run of %s (bench/drain_jobs.py)"
         % started, ""]
    L.append(bl.machine_line(mach, load_start, load_end, finished, steal0, steal1))
    L.append("- Software: webhook-drain from git %s (run as a copy); inbox: %s "
             "(%s); SQLite %s for the fill and the checks."
             % (bl.git_version(), target.name, bl.fs_of(s.work),
                sqlite3.sqlite_version))
    L.append("- Events: bench/drain.py's fill (client.updated, 1 KiB bodies, "
             "createdAt 1 ms apart, %d objects, none stale), `settle = 0s`; "
             "%d events for handler `true`, %d for `%s`."
             % (dr.OBJECTS, n_true, n_jobs_events, SLEEP_HANDLER))
    L.append("- Valid: exit 0, every event done, attempts = events, and within "
             "every object finished_at in hand-out order.")
    L.append("")
    L.append("```")
    L.append("%s/bench/spawn %d   # ceiling, before" % (s.B, n_true))
    L.extend(s.commands[:1])
    L.append("%s/bench/spawn %d   # ceiling, after" % (s.B, n_true))
    L.extend(s.commands[1:])
    L.append("```")
    L.append("")
    L.append("| what | events | seconds | events/s | CPU per event | at most at once "
             "| load (1 min) before→after | ratio | goal | valid |")
    L.append("|---|--:|--:|--:|--:|--:|---|--:|---|---|")
    L.append("| spawn ceiling (`/bin/sh -c true`), before / after | %d | %.2f / %.2f "
             "| %.0f / %.0f | – | 1 | – | 1.00 | – | yes |"
             % (n_true, ceil1["secs"], ceil2["secs"], ceil1["rate"], ceil2["rate"]))
    L.append("| `run`, handler `true` | %d | %.2f | **%.0f** | %.2f ms | %d | %s | "
             "**%s** of the ceiling | ≥ 0.80 | %s |"
             % (true_row["n"], true_row["secs"], true_row["rate"],
                true_row["cpu_ms"], true_row["peak"], true_row["load"],
                bl.ratio(true_row["rate"], ceiling),
                "**INVALID**" if true_row["why"] else "yes"))
    for r in rows:
        want = ("**%s** of %d × one job" % (bl.ratio(r["rate"], r["jobs"] * one["rate"]),
                                            r["jobs"])) if one else "–"
        L.append("| `run --jobs %d`, handler `%s` | %d | %.2f | **%.1f** | %.2f ms "
                 "| %d | %s | %s | ≥ 0.80 | %s |"
                 % (r["jobs"], SLEEP_HANDLER, r["n"], r["secs"], r["rate"],
                    r["cpu_ms"], r["peak"], r["load"], want,
                    "**INVALID**" if r["why"] else "yes"))
    L.append("")
    L.append("Ratio for handler `true`: events/s over the mean of the two ceiling "
             "runs (%.0f/s). For `--jobs N`: events/s over N × the one-job rate. "
             "Seconds are the whole `webhook-drain run` (start, hand-outs, "
             "retention, exit). CPU per event: user + system of the drainer and "
             "its handlers." % ceiling)
    notes = ["- %s: %s" % (r["label"], "; ".join(r["why"]))
             for r in [true_row] + rows if r["why"]]
    if notes:
        L += [""] + notes
    L.append("")
    bl.append_results(results, "\n".join(L) + "\n")
    s.say("results appended to %s; logs in %s" % (results, s.logdir))
    return 0


if __name__ == "__main__":
    bl.run(main, PROG)
