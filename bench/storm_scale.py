#!/usr/bin/env python3
"""bench/storm_scale.py: the storm at scale, and the inbox at 10k, 100k and
1M stored rows (issue 4, "Scale").  A benchmark, not a test: `make test`
never runs it.  Prints one markdown section on stdout (progress on stderr),
for bench/run to append to bench/RESULTS.md.

  python3 bench/storm_scale.py [--storm 30000,100000] [--storm-rate R]
                               [--sizes 10000,100000,1000000] [--probe 2000]
                               [--backlog 1000,10000,50000] [--backlog-seconds 10]
                               [--skip-storm] [--skip-inbox] [--seed N]

The storm: tests/e2e_storm.py's Storm (real lighttpd, 4 webhook.fcgi
workers, the provider simulator, cron-like overlapping drains with the
recording handler), at each size, with every check of the test; figures
and any problem found are printed.

The inbox: a database the binaries created (`webhook-drain status` applies
the schema), filled directly with Python's sqlite3 to N finished rows (done
mostly, some stale and dead, bodies kept, the objects' clocks), then at each
size: P deliveries through the real receiver (lighttpd, 4 workers, 5 in
flight as the provider sends) for the insert latency, and one
`webhook-drain run` with handler `true` over those P pending events for the
drain throughput.  B-tree depths (SQLite's dbstat) are shown beside them:
the figures may move with the depth of the indexes, not with the row count.
Then the drain rate against a pending backlog of B events (an outage's
worth, or a storm the drainer fell behind on), which must not depend on B
either.

Environment: B (build directory, default build), as bench/run.
Everything started here listens on 127.0.0.1 and is stopped here.
"""
import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("BUILD", os.environ.get("B", "build"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import provider_sim as ps                                   # noqa: E402
from harness import (SECRET_A, DRAIN, FCGI, Sandbox, Lighttpd,  # noqa: E402
                     write_conf, fingerprint)
from e2e_storm import Storm                                  # noqa: E402

BODY_PAD = "x" * 240        # bodies of ~450 bytes, like the simulator's


def say(*a):
    print("storm_scale:", *a, file=sys.stderr, flush=True)


def inst(ns):
    """The inbox's normalised instant: UTC with nanoseconds."""
    return ps.iso(ns, digits=9)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def ms(x):
    return "%.1f ms" % (1000 * x) if x is not None else "-"


# ---- the storm at scale -----------------------------------------------------

def storm_section(sizes, rate, seed):
    rows = []
    for n in sizes:
        st = Storm(seed, n, rate=rate)
        try:
            t0 = time.monotonic()
            st.run()
            problems = st.check()
            f = st.figures()
            f["wall_s"] = round(time.monotonic() - t0, 1)
            f["problems"] = problems
            say(json.dumps({k: v for k, v in f.items() if k != "problems"}))
            for p in problems[:20]:
                say("  PROBLEM", p)
            rows.append(f)
        finally:
            st.close()
    out = ["### The storm at scale", "",
           "tests/e2e_storm.py's storm (every check of the test) with more events: "
           "changes published at %s/s, 5 in flight, duplicates, replays, hold-backs, "
           "a rotation; drains every ~0.3 s, overlapping; recording handler "
           "(`/bin/sh`, builtins only)." % (rate or "size/40 s"), "",
           "| changes | events sent | objects | attempts | delivery span | answered p50 | p99 | max "
           "| handed out | stale | drain until idle | handed out / s (whole run) | problems | seed |",
           "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for f in rows:
        hs = f["handed_out"] / f["total_s"] if f["total_s"] else 0
        out.append("| %d | %d | %d | %d | %.1f s | %.1f ms | %.1f ms | %.1f ms | %d | %d | %.1f s "
                   "| %.0f | %d | %d |" % (
                       f["changes"], f["events"], f["objects"], f["attempts"], f["delivery_s"],
                       f["p50_ms"], f["p99_ms"], f["max_ms"], f["handed_out"],
                       f["inbox"].get("stale", 0), f["total_s"] - f["delivery_s"], hs,
                       len(f["problems"]), f["seed"]))
    for f in rows:
        if f["problems"]:
            out += ["", "Problems at %d changes (seed %d), first 20:" % (f["changes"], f["seed"]),
                    "", "```"] + [p[:400] for p in f["problems"][:20]] + ["```"]
    return out


# ---- the inbox at 10k / 100k / 1M rows --------------------------------------

KINDS = sorted(ps.KINDS)


class Filler:
    """Appends finished rows to the events table (and the objects' clocks),
    spread over the last 6 days (inside the default retention, so that
    the drainer's purge has nothing to drop during the bench)."""

    def __init__(self, db, total, n_objects=50000):
        self.con = sqlite3.connect(db, timeout=60)
        self.con.execute("PRAGMA synchronous = OFF")
        # Never checkpoint from here: this connection stays open beside the
        # receivers and drainers, and a checkpoint that is not the inbox's
        # own is a stranger's write to the file (docs/durability.md), which
        # they answer with a 503 or by not checkpointing for the run.  The
        # inbox's own checkpoint turns copy these rows in.
        self.con.execute("PRAGMA wal_autocheckpoint = 0")
        self.cols = [r[1] for r in self.con.execute("PRAGMA table_info(events)")]
        need = [r[1] for r in self.con.execute("PRAGMA table_info(events)")
                if r[3] and r[4] is None and not r[5]]
        self.fields = ["webhook_id", "state", "body", "received_at", "webhook_timestamp",
                       "secret_fp", "type", "created_at", "created_at_raw", "object_type",
                       "object_id", "updated_at", "truncated", "sort_at", "attempts",
                       "failures", "next_at", "finished_at", "admitted"]
        unknown = [c for c in need if c not in self.fields]
        if unknown:
            sys.exit("storm_scale: events has NOT NULL columns this filler does not know: %s"
                     % unknown)
        self.fields = [c for c in self.fields if c in self.cols]
        self.n = self.con.execute("SELECT count(*) FROM events").fetchone()[0]
        self.total = total
        self.n_objects = n_objects
        now = time.time_ns()
        self.start = now - 6 * ps.DAY_NS
        self.step = (6 * ps.DAY_NS - 3600 * ps.NS) // total
        self.fp = fingerprint(SECRET_A)
        self.rng = random.Random(1)
        self.clocks = {}

    def fill(self, upto, batch=20000):
        sql = "INSERT INTO events (%s) VALUES (%s)" % (
            ", ".join(self.fields), ", ".join("?" * len(self.fields)))
        while self.n < upto:
            rows = []
            for i in range(self.n, min(upto, self.n + batch)):
                rows.append(self.row(i))
            self.con.execute("BEGIN")
            self.con.executemany(sql, rows)
            self.con.executemany(
                "INSERT INTO objects (object_type, object_id, done_created_at, done_updated_at,"
                " done_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (object_type, object_id) DO UPDATE"
                " SET done_created_at = excluded.done_created_at,"
                " done_updated_at = excluded.done_updated_at, done_at = excluded.done_at",
                [(k[0], k[1]) + v for k, v in self.clocks.items()])
            self.con.execute("COMMIT")
            self.clocks.clear()
            self.n += len(rows)
        self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def row(self, i):
        t = self.start + i * self.step
        created, upd = t, t - 7 * ps.MS
        received = t + 40 * ps.MS
        finished = received + 1500 * ps.MS
        kind = KINDS[i % len(KINDS)]
        obj_id = str(1001 + (i // len(KINDS)) % self.n_objects)
        mid = "msg_bench%010d" % i
        state = "done"
        r = self.rng.random()
        if r < 0.02:
            state = "stale"
        elif r < 0.021:
            state = "dead"
        c_raw = ps.iso(created)
        body = ('{"id":"%s","type":"%s.updated","createdAt":"%s","data":{"object":"%s",'
                '"id":%s,"updated_at":"%s","note":"%s"}}'
                % (mid, kind, c_raw, kind, obj_id, ps.iso(upd), BODY_PAD)).encode()
        vals = {"webhook_id": mid, "state": state, "body": body,
                "received_at": inst(received), "webhook_timestamp": received // ps.NS,
                "secret_fp": self.fp, "type": kind + ".updated", "created_at": inst(created),
                "created_at_raw": c_raw, "object_type": kind, "object_id": obj_id,
                "updated_at": inst(upd), "truncated": 0, "sort_at": inst(created),
                "attempts": 0 if state == "stale" else (12 if state == "dead" else 1),
                "failures": 12 if state == "dead" else 0, "next_at": inst(received),
                "finished_at": inst(finished),
                "admitted": 1}     # the drainer admitted it before it finished
        if state == "done":
            self.clocks[(kind, obj_id)] = (inst(created), inst(upd), inst(finished))
        return tuple(vals[c] for c in self.fields)

    def fill_pending(self, n, batch=20000):
        """n pending events, settled and due, each of its own object (none
        holds another), as a backlog after an outage would be."""
        sql = "INSERT INTO events (%s) VALUES (%s)" % (
            ", ".join(self.fields), ", ".join("?" * len(self.fields)))
        base = time.time_ns() - 3600 * ps.NS
        done = 0
        while done < n:
            rows = []
            for i in range(done, min(n, done + batch)):
                t = base + i * ps.MS
                mid = "msg_backlog%010d" % i
                c_raw = ps.iso(t)
                body = ('{"id":"%s","type":"client.updated","createdAt":"%s","data":'
                        '{"object":"client","id":"bk%d","updated_at":"%s","note":"%s"}}'
                        % (mid, c_raw, i, ps.iso(t - ps.MS), BODY_PAD)).encode()
                vals = {"webhook_id": mid, "state": "pending", "body": body,
                        "received_at": inst(t + 40 * ps.MS), "webhook_timestamp": t // ps.NS,
                        "secret_fp": self.fp, "type": "client.updated", "created_at": inst(t),
                        "created_at_raw": c_raw, "object_type": "client",
                        "object_id": "bk%d" % i, "updated_at": inst(t - ps.MS),
                        "truncated": 0, "sort_at": inst(t), "attempts": 0, "failures": 0,
                        "next_at": inst(t + 40 * ps.MS), "finished_at": None,
                        "admitted": 0}     # as the receiver stores it
                rows.append(tuple(vals[c] for c in self.fields))
            self.con.execute("BEGIN")
            self.con.executemany(sql, rows)
            self.con.execute("COMMIT")
            done += len(rows)
        self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def clear_backlog(self):
        self.con.execute("DELETE FROM events WHERE webhook_id LIKE 'msg_backlog%'")
        self.con.execute("DELETE FROM objects WHERE object_id LIKE 'bk%'")
        self.con.commit()

    def depths(self):
        """B-tree depth of the tables and indexes the hot paths use."""
        names = ("events", "sqlite_autoindex_events_1", "events_pending",
                 "events_object_pending", "objects")
        out = {}
        try:
            for name in names:
                d = self.con.execute(
                    "SELECT max(length(path) - length(replace(path, '/', ''))) FROM dbstat"
                    " WHERE name = ? AND pagetype != 'overflow'", (name,)).fetchone()[0]
                out[name] = d
        except sqlite3.OperationalError as e:
            say("dbstat unavailable:", e)
        return out

    def close(self):
        self.con.close()


def probe(sb, n, seed):
    """n deliveries through the real receiver, 5 in flight, then one
    `webhook-drain run` with handler `true` over them."""
    srv = Lighttpd(sb, procs=4)
    try:
        world = ps.World(seed)
        ledger = ps.Ledger()
        d = ps.Deliverer("http://127.0.0.1:%d/hook" % srv.port, [SECRET_A], ledger,
                         seed=seed, timeout=15.0, dup_rate=0, hold_rate=0)
        evs = []
        while len(evs) < n:
            evs += world.random_change(min(n // 4, 2000), pair=False, truncated=False)
        t0 = time.monotonic()
        for ev in evs[:n]:
            d.submit(ev)
        d.wait_idle()
        t_deliver = time.monotonic() - t0
        d.stop()
    finally:
        srv.stop()
    lat = sorted(a.latency for a in ledger.attempts)
    bad = [a for a in ledger.attempts if not a.ok]
    t0 = time.monotonic()
    p = subprocess.run([DRAIN, "-c", sb.conf, "run"], capture_output=True, text=True)
    t_drain = time.monotonic() - t0
    con = sqlite3.connect(sb.db)
    pending = con.execute("SELECT count(*) FROM events WHERE state = 'pending'").fetchone()[0]
    con.close()
    return {"n": n, "deliver_s": t_deliver, "rps": n / t_deliver, "p50": ps.pct(lat, 50),
            "p99": ps.pct(lat, 99), "max": lat[-1], "failed_attempts": len(bad),
            "drain_s": t_drain, "drain_eps": n / t_drain, "drain_rc": p.returncode,
            "drain_err": p.stderr[-300:], "left_pending": pending}


def backlog_rate(sb, filler, n, seconds):
    """Drained events/s of one `webhook-drain run --max-time S` (handler
    `true`) facing n pending events."""
    filler.clear_backlog()
    filler.fill_pending(n)
    t0 = time.monotonic()
    p = subprocess.run([DRAIN, "-c", sb.conf, "run", "--max-time", str(seconds)],
                       capture_output=True, text=True)
    dt = time.monotonic() - t0
    con = sqlite3.connect(sb.db)
    done = con.execute("SELECT count(*) FROM events WHERE webhook_id LIKE 'msg_backlog%'"
                       " AND state = 'done'").fetchone()[0]
    con.close()
    filler.clear_backlog()
    return {"pending": n, "done": done, "seconds": dt, "eps": done / dt, "rc": p.returncode,
            "err": p.stderr[-300:]}


def inbox_section(sizes, n_probe, seed, backlogs=(), backlog_s=10):
    sb = Sandbox(prefix="webhook-bench-inbox-")
    results = []
    try:
        write_conf(sb.conf, database=sb.db, secret=SECRET_A, handler="true", settle="0s")
        # `check` opens (creates) the inbox with the real binary's schema.
        st = subprocess.run([DRAIN, "-c", sb.conf, "check"], capture_output=True, text=True)
        if not os.path.exists(sb.db):
            sys.exit("storm_scale: webhook-drain check did not create the inbox: " + st.stderr)
        filler = Filler(sb.db, max(sizes))
        for k, size in enumerate(sizes):
            t0 = time.monotonic()
            filler.fill(size)
            t_fill = time.monotonic() - t0
            depths = filler.depths()
            mb = os.path.getsize(sb.db) / 1e6
            say("inbox at %d rows (filled in %.0f s, %.0f MB), depths %s" % (
                filler.n, t_fill, mb, depths))
            r = probe(sb, n_probe, seed + k)
            r.update(size=size, rows=filler.n, mb=mb, depths=depths, fill_s=t_fill)
            filler.n += n_probe
            say(json.dumps({k2: v for k2, v in r.items() if k2 != "drain_err"}))
            results.append(r)
        backlog = []
        for b in backlogs:
            r = backlog_rate(sb, filler, b, backlog_s)
            say("backlog", json.dumps(r))
            backlog.append(r)
        filler.close()
    finally:
        sb.cleanup()
    dnames = ["events", "sqlite_autoindex_events_1", "events_pending", "events_object_pending",
              "objects"]
    out = ["### The inbox at %s stored rows" % ", ".join("%d" % s for s in sizes), "",
           "Finished rows (98 %% done, 2 %% stale, 0.1 %% dead; ~450-byte bodies kept; "
           "50 000 objects' clocks) written with Python's sqlite3 into the schema the "
           "binaries created; then, at each size, %d deliveries through lighttpd + "
           "4 webhook.fcgi workers (5 in flight, new webhook-ids, objects that overlap the "
           "stored ones) and one `webhook-drain run` with handler `true` over them." % n_probe,
           "",
           "| rows stored | inbox file | insert p50 | insert p99 | insert max | deliveries/s "
           "(5 in flight) | drain run | drained events/s | B-tree depth: events / its "
           "webhook_id key / pending / object-pending / objects |",
           "|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for r in results:
        d = r["depths"]
        out.append("| %d | %.0f MB | %s | %s | %s | %.0f | %.1f s | %.0f | %s |" % (
            r["rows"], r["mb"], ms(r["p50"]), ms(r["p99"]), ms(r["max"]), r["rps"],
            r["drain_s"], r["drain_eps"], " / ".join(str(d.get(x, "?")) for x in dnames)))
    if backlog:
        out += ["", "Drain throughput against the pending backlog (same inbox, %d stored "
                "rows): B pending events, settled and due, one object each, and one "
                "`webhook-drain run --max-time %d` with handler `true`." % (
                    results[-1]["rows"] if results else 0, backlog_s), "",
                "| pending backlog | handed out in the run | drained events/s |",
                "|--:|--:|--:|"]
        for r in backlog:
            out.append("| %d | %d in %.1f s | %.1f |" % (r["pending"], r["done"], r["seconds"],
                                                         r["eps"]))
    notes = []
    for r in results:
        if r["failed_attempts"] or r["drain_rc"] or r["left_pending"]:
            notes.append("- at %d rows: %d failed attempts, drain exit %d, %d left pending %s"
                         % (r["rows"], r["failed_attempts"], r["drain_rc"], r["left_pending"],
                            r["drain_err"]))
    if notes:
        out += [""] + notes
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--storm", default="30000,100000", help="storm sizes (changes)")
    ap.add_argument("--storm-rate", type=float, default=250.0,
                    help="changes published per second in the scaled storms")
    ap.add_argument("--sizes", default="10000,100000,1000000", help="inbox sizes (rows)")
    ap.add_argument("--probe", type=int, default=2000, help="deliveries measured per size")
    ap.add_argument("--backlog", default="1000,10000,50000",
                    help="pending backlogs the drain rate is measured against ('' for none)")
    ap.add_argument("--backlog-seconds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--skip-storm", action="store_true")
    ap.add_argument("--skip-inbox", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 10 ** 6)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    out = ["## Scale (bench/storm_scale.py) of %s" % started, "",
           "- Machine: nproc %d, load average %s at start; binaries %s, %s." % (
               os.cpu_count(), loadavg(), FCGI, DRAIN),
           "- Command: `python3 bench/storm_scale.py --storm %s --storm-rate %g --sizes %s "
           "--probe %d --seed %d%s%s`" % (a.storm, a.storm_rate, a.sizes, a.probe, seed,
                                         " --skip-storm" if a.skip_storm else "",
                                         " --skip-inbox" if a.skip_inbox else ""), ""]
    if not a.skip_inbox:
        out += inbox_section([int(x) for x in a.sizes.split(",")], a.probe, seed,
                             [int(x) for x in a.backlog.split(",") if x],
                             a.backlog_seconds) + [""]
    if not a.skip_storm:
        out += storm_section([int(x) for x in a.storm.split(",")], a.storm_rate, seed) + [""]
    out.append("- Load average at the end: %s." % loadavg())
    print("\n".join(out))


if __name__ == "__main__":
    main()
