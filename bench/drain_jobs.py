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
    4, 8, each on its own copy of the inbox, and on PostgreSQL also N = 1,
    2, 4 separate `webhook-drain run` processes (no --jobs) at once on one
    inbox.  Goal: N handlers ≥ 0.8 × N × the one-job rate (the handler, not
    the inbox, is the bottleneck), and no loss of order.

Each drain is validated: every run exited 0, every event done exactly once
(sum of attempts = events), nothing pending, stale or dead, and no object's
events finished out of their hand-out order (finished_at follows sort_at
within each object).  The `sleep 0.02` handlers also write a ledger, a line
as each starts and as it ends (shell builtins around the sleep), checked
for: every event handed out once, never two of one object at once, per
object in event-time order.  `-v` tells how many handlers ran at once.

The backend is a parameter: --database sqlite (default: a file per row in
the session's directory), --database postgresql (a server started here as
the tests start theirs, tests/pgserver.py, and stopped at the end) or
--database postgresql://… (a server you run; its role must be allowed to
CREATE DATABASE: a database per row, dropped at the end).  A PostgreSQL
row's schema is made by webhook-drain, its events by psql's COPY.

Runnable alone at a reduced size, e.g.
  python3 bench/drain_jobs.py --database postgresql --events 100 \\
      --true-events 200 --out build/bench/trial.md

Environment (all optional):
  BENCH_JOBS_EVENTS    events per `sleep 0.02` drain (default 800)
  BENCH_TRUE_EVENTS    events in the handler-`true` drain (default 3000)
  BENCH_JOBS           the --jobs values (default "1 2 4 8")
  BENCH_DRAIN_PROCS    drainer processes at once, PostgreSQL (default "1 2 4")
  BENCH_GOALS          a file to note each goal against its figure in
                       (bench/run sets it; bench/goals.py reads it)
  BENCH_RESULTS        the file to append to (default bench/RESULTS.md)
  B                    build directory (default build)
"""
import argparse
import base64
import csv
import io
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


def write_conf(path, secret, database, handler):
    """A drainer's webhook.conf: bench/drain.py's, with this database and
    handler."""
    return bl.write_conf(path, PROG, [("database", database),
                                      ("secret", secret),
                                      ("handler", handler),
                                      ("settle", "0s")])


class SqliteTarget:
    """One SQLite inbox per drain, in the session's directory."""
    name = "SQLite"
    key = "sqlite"

    def __init__(self, s, drain, secret):
        self.s, self.drain, self.secret = s, drain, secret

    def make(self, label, handler, events):
        conf = os.path.join(self.s.work, label, "webhook.conf")
        db = os.path.join(self.s.work, label, "inbox.db")
        write_conf(conf, self.secret, db, handler)
        dr.create_inbox(self.s, self.drain, conf)
        dr.fill(db, events)
        return conf

    def check(self, conf, n):
        """Problems with a finished drain: [] when valid."""
        con = sqlite3.connect(conf.replace("webhook.conf", "inbox.db"), timeout=30)
        try:
            return checks(lambda sql: con.execute(sql).fetchall(), "rowid", n)
        finally:
            con.close()

    def describe(self):
        return "SQLite %s, a file per row on %s" % (sqlite3.sqlite_version,
                                                    bl.fs_of(self.s.work))


def checks(rows, arrival, n):
    """The inbox's side of a valid drain, through rows(sql) -> [tuple]:
    every event done, handed out once, and within each object finished in
    hand-out order (arrival: the tiebreak column, rowid or seq)."""
    why = []
    states = dict(rows("SELECT state, count(*) FROM events GROUP BY state"))
    attempts = rows("SELECT sum(attempts) FROM events")[0][0]
    disorder = rows(
        "SELECT count(*) FROM (SELECT finished_at, lag(finished_at) OVER"
        " (PARTITION BY object_type, object_id"
        "  ORDER BY sort_at, received_at, %s) AS prev FROM events) t"
        " WHERE prev IS NOT NULL AND finished_at <= prev" % arrival)[0][0]
    if states != {"done": n}:
        why.append("states %s (want %d done)" % (states, n))
    if int(attempts or 0) != n:
        why.append("handed out %s times for %d events" % (attempts, n))
    if disorder:
        why.append("%d events finished before an earlier one of their "
                   "object" % disorder)
    return why


class PostgresTarget:
    """A database per drain on a PostgreSQL (bl.Postgres: one started here,
    or the server a URI names): the schema by the real program (`status`
    opens, so creates, the inbox), then the events by psql's COPY, every
    column as lib/store/postgresql/engine.c's insert fills it (bench/drain.py's rows, in
    the same order; admitted 0 as the receiver stores them)."""
    name = "PostgreSQL"
    key = "postgresql"

    def __init__(self, s, drain, secret, spec):
        self.s, self.drain, self.secret = s, drain, secret
        self.pg = bl.Postgres(s, spec)
        self.uris = {}

    def make(self, label, handler, events):
        uri = self.pg.new_database(label)
        conf = write_conf(os.path.join(self.s.work, label, "webhook.conf"),
                          self.secret, uri, handler)
        p = subprocess.run([self.drain, "-c", conf, "status"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise bl.Die("webhook-drain status (creating the inbox %s) exited "
                         "%d: %s" % (label, p.returncode, p.stderr.strip()))
        data = io.StringIO()
        w = csv.writer(data, lineterminator="\n")
        for e in events:
            w.writerow([e[0], "\\x" + e[1].hex()] + list(e[2:]) + [0])
        cols = dr.INSERT.split("(", 1)[1].split(")", 1)[0]
        p = subprocess.run([self.pg.pg.PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1",
                            "-d", uri, "-c", "COPY events (%s) FROM STDIN WITH "
                            "(FORMAT csv)" % cols], input=data.getvalue(),
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise bl.Die("psql COPY into %s: %s" % (label, p.stderr.strip()))
        self.uris[conf] = uri
        return conf

    def check(self, conf, n):
        uri = self.uris[conf]

        def rows(sql):
            out = self.pg.value(sql, uri)
            return [tuple(line.split("|")) if "|" in line else (line,)
                    for line in out.splitlines()]
        # psql gives text: the states' counts as numbers for the compare.
        def typed(sql):
            return [tuple(int(v) if v.isdigit() else v for v in r)
                    for r in rows(sql)]
        return checks(typed, "seq", n)

    def describe(self):
        return ("PostgreSQL %s, %s; %s; a database per row, its schema by "
                "webhook-drain, its events by psql's COPY"
                % (self.pg.version, self.pg.where, self.pg.settings))


# The `sleep 0.02` handler, recording its own start and end in a ledger
# (shell builtins: no process more than `sh -c` and sleep).
LEDGER_HANDLER = ('echo "S $WEBHOOK_OBJECT_ID $WEBHOOK_CREATED_AT $WEBHOOK_ID"'
                  ' >>%s && ' + SLEEP_HANDLER + ' && '
                  'echo "E $WEBHOOK_OBJECT_ID $WEBHOOK_CREATED_AT $WEBHOOK_ID"'
                  ' >>%s')


def ledger_check(path, events):
    """What the handlers' own ledger says about a drain: every event handed
    out exactly once, never two of one object at once, and within each
    object in event-time order (createdAt as sent, which orders the fill's
    events).  Returns (reasons it is invalid, most handlers at once)."""
    want = {e[0]: (e[9], e[7]) for e in events}   # id -> (object, createdAt)
    why = []
    started, ended = {}, set()
    running = {}          # object -> id in its handler now
    last = {}             # object -> createdAt of its last hand-out
    now = peak = 0
    late = overlap = bad = 0
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        f = line.split(" ")
        if len(f) != 4 or f[0] not in "SE" or want.get(f[3]) != (f[1], f[2]):
            bad += 1
            continue
        kind, obj, created, eid = f
        if kind == "S":
            started[eid] = started.get(eid, 0) + 1
            if obj in running:
                overlap += 1
            if obj in last and created <= last[obj]:
                late += 1
            running[obj] = eid
            last[obj] = created
            now += 1
            peak = max(peak, now)
        else:
            ended.add(eid)
            if running.get(obj) == eid:
                del running[obj]
            now -= 1
    missing = sum(1 for e in want if e not in started or e not in ended)
    twice = sum(1 for c in started.values() if c > 1)
    if bad:
        why.append("ledger: %d lines not of this fill" % bad)
    if missing:
        why.append("ledger: %d events not handed out start to end" % missing)
    if twice:
        why.append("ledger: %d events handed out more than once" % twice)
    if overlap:
        why.append("ledger: %d hand-outs began while their object's previous "
                   "one ran" % overlap)
    if late:
        why.append("ledger: %d hand-outs out of their object's event-time "
                   "order" % late)
    return why, peak


def drain_row(s, drain, target, conf, n, jobs, label, procs=1, events=None):
    """`procs` runs of `webhook-drain run` (with --jobs when jobs) at once
    on one inbox, until all exit; events: the fill, whose ledger (beside
    conf, when the handler writes one) is checked."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = bl.load1()
    args = [drain, "-c", conf, "-v", "run"]
    if jobs:
        args += ["--jobs", str(jobs)]
    s.commands.append("webhook-drain -c $TMP/%s/webhook.conf -v run%s%s"
                      % (label, " --jobs %d" % jobs if jobs else "",
                         "   # %d at once" % procs if procs > 1 else ""))
    logs = [os.path.join(s.logdir, "%s.%d.log" % (label, i)) for i in range(procs)]
    t = time.monotonic()
    ps = []
    for log in logs:
        with open(log, "w") as out:
            ps.append(s.popen(args, stdout=out, stderr=subprocess.STDOUT))
    for p in ps:
        p.wait()
        s.procs.remove(p)
    secs = time.monotonic() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = ""
    for log in logs:
        with open(log, errors="replace") as f:
            output += f.read()
    why = target.check(conf, n)
    for p in ps:
        if p.returncode != 0:
            why.insert(0, "exit %d: %s" % (p.returncode, output.strip()[-300:]))
    peak = max([int(x) for x in re.findall(r"up to (\d+) handlers at once",
                                           output)] or [1])
    ledger = os.path.join(os.path.dirname(conf), "ledger")
    if events is not None:
        lw, peak = ledger_check(ledger, events)
        why += lw
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    res = {"label": label, "jobs": jobs or 1, "flag": bool(jobs),
           "procs": procs, "n": n,
           "secs": secs, "rate": n / secs, "cpu_ms": 1000 * cpu / n,
           "peak": peak, "why": why, "ledger": events is not None,
           "load": "%s→%s" % (load0, bl.load1())}
    s.say("%s: %d events in %.2f s = %.1f events/s, CPU %.2f ms/event, at most "
          "%d at once, valid %s%s" % (label, n, secs, res["rate"], res["cpu_ms"],
                                      res["peak"], "no" if why else "yes",
                                      " (%s)" % "; ".join(why) if why else ""))
    return res


def words(name, default):
    """A list of whole numbers from the environment variable name."""
    v = os.environ.get(name, default).split()
    if not all(x.isdigit() and 0 < int(x) <= 64 for x in v):
        raise bl.Die("%s=%r: whole numbers in 1..64" % (name, " ".join(v)))
    return [int(x) for x in v]


def main():
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("--database", default="sqlite",
                    help="sqlite (default), postgresql (a server started "
                    "here) or a postgresql:// URI")
    ap.add_argument("--events", type=int,
                    help="events per sleep drain (BENCH_JOBS_EVENTS)")
    ap.add_argument("--true-events", type=int,
                    help="events in the handler-true drain (BENCH_TRUE_EVENTS)")
    ap.add_argument("--out", help="the results file to append to "
                    "(BENCH_RESULTS)")
    a = ap.parse_args()
    s = bl.Session(PROG, "drain-jobs")
    n_jobs_events = a.events or bl.env_int("BENCH_JOBS_EVENTS", 800)
    n_true = a.true_events or bl.env_int("BENCH_TRUE_EVENTS", 3000)
    jobs_list = words("BENCH_JOBS", "1 2 4 8")
    results = a.out or os.environ.get(
        "BENCH_RESULTS", os.path.join(bl.ROOT, "bench", "RESULTS.md"))
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
        procs_list = []
    else:
        target = PostgresTarget(s, drain, secret, a.database)
        # Separate drainers share an inbox on PostgreSQL only (SQLite's run
        # lock admits one).
        procs_list = words("BENCH_DRAIN_PROCS", "1 2 4")

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

    # ---- 2. handler `sleep 0.02`: --jobs N, and N drainers ----------------
    events = dr.backlog(n_jobs_events, tag + "s", secret, time.time_ns())
    rows = []
    for j, procs in [(j, 1) for j in jobs_list] + [(0, p) for p in procs_list]:
        label = "sleep-jobs%d" % j if j else "sleep-procs%d" % procs
        ledger = os.path.join(s.work, label, "ledger")
        conf = target.make(label, LEDGER_HANDLER % (ledger, ledger), events)
        rows.append(drain_row(s, drain, target, conf, n_jobs_events, j, label,
                              procs=procs, events=events))
    one = next((r for r in rows if r["flag"] and r["jobs"] == 1), None)

    load_end = bl.loadavg()
    steal1 = bl.steal()
    finished = time.strftime("%H:%M:%S UTC", time.gmtime())
    L = ["## Drainer, several handlers at once, on %s: run of %s "
         "(bench/drain_jobs.py)" % (target.name, started), ""]
    L.append(bl.machine_line(mach, load_start, load_end, finished, steal0, steal1))
    L.append("- Software: webhook-drain from git %s (run as a copy); inbox: %s."
             % (bl.git_version(), target.describe()))
    L.append("- Events: bench/drain.py's fill (client.updated, 1 KiB bodies, "
             "createdAt 1 ms apart, %d objects, none stale), `settle = 0s`; "
             "%d events for handler `true`, %d for `%s`."
             % (dr.OBJECTS, n_true, n_jobs_events, SLEEP_HANDLER))
    L.append("- Valid: every run exited 0; the inbox: every event done, "
             "attempts = events, within every object finished_at in hand-out "
             "order; for the `%s` rows also the handlers' own ledger (each "
             "appends a line as it starts and as it ends, shell builtins): "
             "every event handed out once, never two of one object at once, "
             "and per object in event-time order (createdAt)." % SLEEP_HANDLER)
    L.append("")
    L.append("```")
    L.append("%s/bench/spawn %d   # ceiling, before" % (s.B, n_true))
    L.extend(s.commands[:1])
    L.append("%s/bench/spawn %d   # ceiling, after" % (s.B, n_true))
    L.extend(s.commands[1:])
    L.append("```")
    L.append("")
    L.append("The `%s` handler with its ledger: `%s`"
             % (SLEEP_HANDLER, LEDGER_HANDLER % ("$TMP/ROW/ledger",
                                                 "$TMP/ROW/ledger")))
    L.append("")
    L.append("| what | events | seconds | events/s | CPU per event | at most at once "
             "| load (1 min) before→after | ratio | goal | valid |")
    L.append("|---|--:|--:|--:|--:|--:|---|--:|---|---|")
    L.append("| spawn ceiling (`/bin/sh -c true`), before / after | %d | %.2f / %.2f "
             "| %.0f / %.0f | – | 1 | – | 1.00 | – | yes |"
             % (n_true, ceil1["secs"], ceil2["secs"], ceil1["rate"], ceil2["rate"]))
    true_ratio = bl.ratio(true_row["rate"], ceiling)
    L.append("| `run`, handler `true` | %d | %.2f | **%.0f** | %.2f ms | %d | %s | "
             "**%s** of the ceiling | ≥ 0.80 | %s |"
             % (true_row["n"], true_row["secs"], true_row["rate"],
                true_row["cpu_ms"], true_row["peak"], true_row["load"],
                true_ratio, "**INVALID**" if true_row["why"] else "yes"))
    bl.goal("%s: one job, handler `true`, ≥ 0.80 × fork+exec of `/bin/sh -c "
            "true` (issue 20)" % target.name, "%s (%.0f/s of %.0f/s)"
            % (true_ratio, true_row["rate"], ceiling),
            met(true_ratio, true_row))
    for r in rows:
        n = r["jobs"] * r["procs"]
        what = ("`run --jobs %d`" % r["jobs"] if r["flag"] else
                "%d × `run` at once" % r["procs"] if r["procs"] > 1 else
                "1 × `run` (no --jobs)")
        rat = bl.ratio(r["rate"], n * one["rate"]) if one else "-"
        want = ("**%s** of %d × one job" % (rat, n)) if one else "–"
        L.append("| %s, handler `%s` | %d | %.2f | **%.1f** | %.2f ms "
                 "| %d | %s | %s | ≥ 0.80 | %s |"
                 % (what, SLEEP_HANDLER, r["n"], r["secs"], r["rate"],
                    r["cpu_ms"], r["peak"], r["load"], want,
                    "**INVALID**" if r["why"] else "yes"))
        if r is not one:
            bl.goal("%s: %s, handler `%s`, ≥ 0.80 × %d × one job, order kept "
                    "(issue 20)" % (target.name, what,
                                    SLEEP_HANDLER, n),
                    "%s (%.1f/s; one job %.1f/s)" % (rat, r["rate"], one["rate"])
                    if one else "-", met(rat, r))
    L.append("")
    L.append("Ratio for handler `true`: events/s over the mean of the two ceiling "
             "runs (%.0f/s). For N jobs or N drainers: events/s over N × the "
             "one-job rate (`run --jobs 1`, same backend, this run). Seconds are "
             "the whole `webhook-drain run` (start, hand-outs, retention, exit; "
             "for N drainers, until the last exits). CPU per event: user + "
             "system of the drainers and their handlers. At most at once: the "
             "drainer's own count (`-v`), or for the ledger rows the most "
             "handlers between their start and end lines at once."
             % ceiling)
    L.append("")
    L.append("What limits it: " + LIMITS[target.key])
    notes = ["- %s: %s" % (r["label"], "; ".join(r["why"]))
             for r in [true_row] + rows if r["why"]]
    if notes:
        L += [""] + notes
    L.append("")
    bl.append_results(results, "\n".join(L) + "\n")
    s.say("results appended to %s; logs in %s" % (results, s.logdir))
    return 0


def met(ratio, row):
    if row["why"]:
        return "invalid"
    return "met" if ratio != "-" and float(ratio) >= 0.8 else "not met"


# One line per backend for the section's "what limits it" (the reasoning
# is docs/jobs.md's "Limits and costs" and docs/postgresql.md's "Benchmark").
LIMITS = {
    "sqlite": "with handler `true`, starting the process (the ceiling's "
    "fork + exec; the drainer adds its claim and verdict, two short SQLite "
    "transactions without a sync); with `sleep 0.02`, the 20 ms per "
    "hand-out until N handlers' own CPU (two execs each) or the one "
    "drainer's claim loop fills the idle cores.",
    "postgresql": "as on SQLite, plus three round trips to the server "
    "per hand-out (the next due event; a claim: lease, row lock, stale "
    "rule; a verdict fenced by the lease), the claim and the verdict each "
    "a transaction whose commit waits for a WAL flush (synchronous_commit "
    "= on), with the server on the same cores: with handler `true` they "
    "add to a process start that alone takes longer than the ceiling's "
    "(docs/postgresql.md, \"Benchmark\"); N drainers also walk the same "
    "due events and skip each other's leased objects, which costs claims "
    "that find nothing.",
}


if __name__ == "__main__":
    bl.run(main, PROG)
