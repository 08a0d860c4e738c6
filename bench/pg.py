#!/usr/bin/env python3
"""bench/pg.py: the receiver on PostgreSQL (issue 20).

webhook.fcgi as the supported setup, one process of 32 request threads
behind lighttpd on 127.0.0.1 (mod_fastcgi, "bin-path", "max-procs" => 1,
WEBHOOK_THREADS=32), with `database = postgresql://…` on a PostgreSQL this
script starts (tests/pgserver.py, as the tests start theirs: initdb in a
temporary directory as the unprivileged user webhook-pg, a Unix socket in
that directory only, fsync = on, synchronous_commit = on) and stops; or,
with --database postgresql://…, on a server you run (a database is created
for the run and dropped after it).  For each connection count of
BENCH_CONNS (default "5 32"): a short probe that sizes the set of distinct
signed deliveries (bench/signed.py gen), then BENCH_SECONDS of wrk with
bench/requests.lua, validated as bench/run does: no non-2xx answer, no
socket error or timeout, no pre-generated request ran short, the worker
not replaced, and the inbox gained exactly one row per delivery sent
(counted in PostgreSQL).

Beside it, the same run's SQLite and ceiling rows: under bench/run
(BENCH_RUN_ROWS names its rows file) its bare, bare + sync 1 × 32 (the
durable ceiling of the same shape) and FULL 1 × 32 rows; run alone, this
script measures bare + sync 1 × 32 and SQLite FULL 1 × 32 itself, each
right before the PostgreSQL row at the same connection count.  Appends a
section to the results; wrk outputs and server logs stay in
build/bench/logs/TIME-pg/.

Runnable alone, e.g.
  BENCH_SECONDS=3 python3 bench/pg.py --out build/bench/trial-pg.md

Environment (all optional): BENCH_SECONDS (default 10), BENCH_CONNS
(default "5 32"), BENCH_THREADS (default 2), BENCH_PROBE_SECONDS (default
2), BENCH_RESULTS (default bench/RESULTS.md), BENCH_RUN_ROWS (bench/run's
rows), B (build directory, default build).

Everything started here (PostgreSQL, the lighttpds and their workers, wrk)
is stopped on exit, by process id; the temporary directory is removed.
"""
import argparse
import base64
import os
import secrets
import subprocess
import sys
import time

sys.dont_write_bytecode = True    # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl   # noqa: E402

PROG = "bench/pg.py"
THREADS = 32        # request threads of the one webhook.fcgi process
# bench/run's rows file: tab-separated, one row per measured run.
RUN_COLUMNS = ("label", "server", "conns", "threads", "rps", "p50", "p99",
               "p999", "non2xx", "stored", "sent", "completed", "valid", "max",
               "p99_wrk", "p999_wrk", "cpu_us", "why")
WHAT = {
    "bare": "bare (ceiling)",
    "baresync1": "bare + group-committed fdatasync, 1 × 32 (durable ceiling)",
    "full1": "webhook.fcgi, SQLite FULL, 1 × 32",
    "pg": "webhook.fcgi, **PostgreSQL**, 1 × 32",
}
LIMITS = (
    "the WAL flush each commit waits for (synchronous_commit = on) and the "
    "one connection the process has: its group-commit leader "
    "(lib/receive/committer.c) stores a batch of up to 64 deliveries in one "
    "transaction (BEGIN, an insert per delivery, COMMIT: a round trip "
    "each over the Unix socket) and waits for one flush at its commit "
    "while the next batch gathers; at 5 connections batches are small, so "
    "a request pays about one flush and three round trips, at 32 the flush "
    "is shared and the round trips and the server's own CPU per insert set "
    "the pace, on the same cores as lighttpd, wrk and the receiver.")


def run_rows(path, conns):
    """bench/run's rows of the servers shown beside ours, by (server,
    conns); {} without its file."""
    out = {}
    if not path:
        return out
    with open(path) as f:
        for line in f:
            v = dict(zip(RUN_COLUMNS, line.rstrip("\n").split("\t")))
            if v.get("server") in WHAT and int(v["conns"]) in conns:
                for k in RUN_COLUMNS[2:17]:
                    if k != "valid":
                        v[k] = float(v[k]) if v[k] not in ("", "-") else None
                v["valid"] = v["valid"] == "yes"
                out[(v["server"], int(v["conns"]))] = v
    return out


def write_conf(path, secret, database):
    return bl.write_conf(path, PROG, [("database", database),
                                      ("secret", secret)])


def main():
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("--database", default="postgresql",
                    help="postgresql (a server started here, default) or a "
                    "postgresql:// URI")
    ap.add_argument("--out", help="the results file to append to "
                    "(BENCH_RESULTS)")
    a = ap.parse_args()
    s = bl.Session(PROG, "pg")
    results = a.out or os.environ.get(
        "BENCH_RESULTS", os.path.join(bl.ROOT, "bench", "RESULTS.md"))
    conns_list = [int(c) for c in os.environ.get("BENCH_CONNS", "5 32").split()]
    beside = run_rows(os.environ.get("BENCH_RUN_ROWS"), conns_list)
    build = os.path.join(bl.ROOT, s.B)
    if not os.access(os.path.join(build, "webhook.fcgi"), os.X_OK):
        raise bl.Die("%s/webhook.fcgi not built (run make)" % s.B)
    fcgi = s.copy_bin(os.path.join(build, "webhook.fcgi"))
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    mach = bl.machine()
    load_start = bl.loadavg()
    steal0 = bl.steal()

    pg = bl.Postgres(s, a.database)
    uri = pg.new_database("receiver")
    conf = write_conf(os.path.join(s.work, "pg", "webhook.conf"), secret, uri)
    servers = {"pg": bl.Lighttpd(s, "pg", fcgi, 1, env={
        "WEBHOOK_CONF": conf, "WEBHOOK_THREADS": str(THREADS)})}
    counters = {"pg": lambda: pg.count(uri, "SELECT count(*) FROM events")}
    if not beside:
        # Alone: the durable ceiling and SQLite in the same shape, here.
        os.makedirs(s.outdir, exist_ok=True)
        bare = os.path.join(s.outdir, "bare")
        subprocess.run(["cc", "-O2", "-g", "-Wall", "-Wextra", "-Werror",
                        "-pthread", "-o", bare,
                        os.path.join(bl.BENCH, "bare.c"), "-lfcgi"], check=True)
        bare = s.copy_bin(bare)
        os.makedirs(os.path.join(s.work, "baresync1", "files"))
        servers["baresync1"] = bl.Lighttpd(s, "baresync1", bare, 1, env={
            "BARE_SYNC": os.path.join(s.work, "baresync1", "files", "body"),
            "BARE_THREADS": str(THREADS)})
        sconf = write_conf(os.path.join(s.work, "full1", "webhook.conf"),
                           secret, os.path.join(s.work, "full1", "inbox.db"))
        servers["full1"] = bl.Lighttpd(s, "full1", fcgi, 1, env={
            "WEBHOOK_CONF": sconf, "WEBHOOK_THREADS": str(THREADS)})
        db = os.path.join(s.work, "full1", "inbox.db")
        counters["full1"] = lambda: (bl.count_rows(db, "events")
                                     if os.path.exists(db) else 0)
    for name, srv in servers.items():
        srv.start()
        # A first delivery opens the inbox (PostgreSQL: connects, prepares
        # the store), so that the probe measures requests, not the start.
        if name != "baresync1" and subprocess.run(
                [sys.executable, os.path.join(bl.BENCH, "signed.py"), "post",
                 "--conf", conf, "--host", "127.0.0.1:%d" % srv.port,
                 "--count", "3"], stdout=subprocess.DEVNULL).returncode:
            raise bl.Die("%s: a first delivery was not answered 2xx: %s"
                         % (name, srv.logs()[-500:]))

    rows = []
    for c in conns_list:
        for name in ("baresync1", "full1", "pg"):
            if name not in servers:
                continue
            label = "%s-c%d" % (name, c)
            rate, bad = s.probe(servers[name], "/webhook", conf, c, label)
            r = s.measured(servers[name], "/webhook", conf, c, label, rate,
                           rows=counters.get(name), probe_bad=bad)
            r["here"] = True
            rows.append(r)
    for srv in servers.values():
        srv.stop()
    load_end = bl.loadavg()
    steal1 = bl.steal()
    finished = time.strftime("%H:%M:%S UTC", time.gmtime())

    # ---- the section -----------------------------------------------------
    def row_of(name, c):
        for r in rows:
            if r["server"] == name and r["conns"] == c:
                return r
        v = beside.get((name, c))
        if v is None:
            return None
        return dict(v, server=name, conns=c, threads=int(v["threads"]),
                    here=False, completed=int(v["completed"]),
                    sent=int(v["sent"]),
                    stored=None if v["stored"] is None else int(v["stored"]),
                    non2xx=int(v["non2xx"]))

    L = ["## The receiver on PostgreSQL: run of %s (bench/pg.py)" % started, ""]
    L.append(bl.machine_line(mach, load_start, load_end, finished, steal0, steal1))
    L.append("- Software: webhook.fcgi from git %s (run as a copy), lighttpd %s, "
             "wrk %s; PostgreSQL %s, %s; %s."
             % (bl.git_version(),
                bl.version(["lighttpd", "-v"], r"lighttpd/(\S+)"),
                bl.version(["wrk", "-v"], r"^wrk (\S+)"), pg.version, pg.where,
                pg.settings))
    L.append("- Setup: one lighttpd, \"max-procs\" => 1, webhook.fcgi with "
             "WEBHOOK_THREADS=%d (one connection to PostgreSQL, its group-commit "
             "leader's); %d s per run after a %d s probe that sizes the "
             "pre-generated requests; deliveries as bench/run's (1 KiB bodies, "
             "each sent once; 3 deliveries before the first probe open the inbox). %s"
             % (THREADS, s.secs, s.probe_secs,
                "The rows marked *bench/run* are that script's, from the same "
                "`make bench`." if beside else
                "Run alone: the durable ceiling and SQLite FULL of the same "
                "shape measured here, each right before the PostgreSQL row."))
    L.append("- Valid: no non-2xx, no socket error or timeout, no request ran "
             "short, the worker not replaced, and rows stored (counted in "
             "PostgreSQL for its row) = deliveries sent.")
    L.append("")
    L.append("```")
    L.extend(s.commands)
    L.append("```")
    L.append("")
    L.append("Latencies: each delivery's own time (bench/run's note); "
             "wrk-corrected p99 / p99.9 after them.")
    L.append("")
    L.append("| responder | conns (wrk -t/-c) | req/s | p50 | p99 | p99.9 | max "
             "| p99 / p99.9 wrk-corrected | machine CPU per request | non-2xx "
             "| rows stored / sent (completed) | valid | req/s ÷ durable "
             "ceiling | p99 ÷ durable ceiling | req/s ÷ SQLite FULL 1 × 32 |")
    L.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|")
    for c in conns_list:
        ceil, sq = row_of("baresync1", c), row_of("full1", c)
        for name in ("bare", "baresync1", "full1", "pg"):
            r = row_of(name, c)
            if r is None:
                continue
            L.append("| %s%s | %d (-t%d -c%d) | %s%.0f%s | %s | %s | %s | %s | "
                     "%s / %s | %.0f µs | %d | %s / %d (%d) | %s | %s | %s | %s |"
                     % (WHAT[name], "" if r["here"] else " *bench/run*", c,
                        r["threads"], c, "**" if name == "pg" else "", r["rps"],
                        "**" if name == "pg" else "", bl.us(r["p50"]),
                        bl.us(r["p99"]), bl.us(r["p999"]), bl.us(r["max"]),
                        bl.us(r["p99_wrk"]), bl.us(r["p999_wrk"]), r["cpu_us"],
                        r["non2xx"], "–" if r["stored"] is None else r["stored"],
                        r["sent"], r["completed"],
                        "yes" if r["valid"] else "**INVALID**",
                        bl.ratio(r["rps"], ceil["rps"]) if ceil else "-",
                        bl.ratio(r["p99"], ceil["p99"]) if ceil else "-",
                        bl.ratio(r["rps"], sq["rps"]) if sq else "-"))
        r = row_of("pg", c)
        if r and ceil:
            bl.goal("PostgreSQL receiver, 1 × 32, %d connections: req/s ÷ the "
                    "durable ceiling (issue 20: figures, no goal set)" % c,
                    "%s (%.0f req/s, p99 %s; SQLite FULL %s)"
                    % (bl.ratio(r["rps"], ceil["rps"]), r["rps"], bl.us(r["p99"]),
                       "%.0f req/s" % sq["rps"] if sq else "-"),
                    "valid" if r["valid"] else "invalid")
    L.append("")
    L.append("What limits it: " + LIMITS)
    bl.finish(s, results, L, [r for r in rows if r["why"]])
    return 0


if __name__ == "__main__":
    bl.run(main, PROG)
