#!/usr/bin/env python3
"""bench/drain.py: the drainer's benchmark (issue 3).

One run measures:

 1. Events/s drained by `webhook-drain run` (handler `true`, settle 0s) on an
    inbox of BENCH_DRAIN_EVENTS pending events, and, in the same run, the
    machine's rate of fork + setpgid + exec "/bin/sh -c true" + waitpid
    (bench/spawn.c: what the drainer does per event, nothing else), measured
    right before and right after the drain: the ceiling of a process-per-
    event design.  Reported as drained ÷ ceiling.  A second drain with
    synchronous = NORMAL (same events) shows what the per-event commits cost.

 2. The receiver's latency while the drainer works a backlog: lighttpd +
    webhook.fcgi (BENCH_MAX_PROCS workers), wrk at BENCH_DRAIN_CONNS
    connections with distinct signed deliveries (bench/signed.py,
    bench/requests.lua, as bench/run), once with no drainer ("idle") and
    once while `webhook-drain run` drains a BENCH_BACKLOG-event backlog with
    handler `true` in the same database ("draining").  Each has its own
    lighttpd and its own inbox, both filled with the same backlog, so the
    two runs differ only by the drainer.  Reported: req/s, p50, p99 both
    ways and draining ÷ idle.

The inbox is filled fast, without the receiver: the database is created by
the real binary (`webhook-drain -c CONF status` applies schema.sql), then
the events table is filled with Python's sqlite3 in one transaction, every
column as lib/store/sqlite/engine.c's insert fills it (received_at, next_at, sort_at as
normalised instants, created_at from the body's createdAt, secret_fp as the
receiver's fingerprint, ...).  Before that, a cross-check stores three
deliveries through the real webhook.fcgi (run as plain CGI) and the same
bodies through the fill, and compares every column (values and SQLite
types): the run stops if they differ.  Events are shaped like
bench/signed.py's (client.updated, 1 KiB bodies), 1 ms apart in createdAt,
spread over 1000 objects, data.updated_at = createdAt: none is stale, every
one is handed to the handler.

Runs are validated as bench/run does (no non-2xx, no socket error, no
pre-generated request ran short, workers unchanged, rows gained = deliveries
sent), and the drains by `webhook-drain status --json` (every event done,
none pending, stale or dead, each handed out once).  Appends a section to
bench/RESULTS.md; wrk outputs and server logs stay in
build/bench/logs/TIME-drain/.

Environment (all optional):
  BENCH_DRAIN_EVENTS   events in the drained inbox (default 10000)
  BENCH_BACKLOG        backlog drained during the receiver run (default 20000)
  BENCH_SECONDS        length of each measured wrk run, s (default 10)
  BENCH_PROBE_SECONDS  the sizing probe before each wrk run, s (default 2)
  BENCH_DRAIN_CONNS    wrk connections (default 5)
  BENCH_THREADS        wrk threads (default 2; see bench/run)
  BENCH_MAX_PROCS      lighttpd "max-procs" (default 4)
  BENCH_RESULTS        the file to append to (default bench/RESULTS.md)
  BENCH_DRAIN_BASELINE another webhook-drain (an older commit's): it and ours
                       drain the same events BENCH_AB_PAIRS times (default 3),
                       alternating, each on a fresh inbox; reported as ratios
  B                    build directory (default build)

Everything started here (lighttpd and its workers, wrk, webhook-drain) is
stopped on exit, by process id; the temporary directory is removed.
"""
import base64
import hashlib
import hmac
import json
import os
import random
import re
import resource
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True    # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl   # noqa: E402
import signed           # noqa: E402

PROG = "bench/drain.py"
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
OBJECTS = 1000          # distinct data.id values the events are spread over
BODY_SIZE = 1024


# ---- events as the receiver stores them -----------------------------------

def instant_ns(ns):
    """lib/common/instant.h's normalised form of ns since the epoch."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + \
        ".%09dZ" % (ns % 10**9)


def provider_ms(ms):
    """createdAt as the provider sends it (bench/signed.py: milliseconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + \
        ".%03dZ" % (ms % 1000)


def fingerprint(secret):
    """The receiver's secret_fp: BLAKE2b-64 of the key bytes, hex
    (lib/common/signature.c)."""
    return hashlib.blake2b(base64.b64decode(secret[len("whsec_"):]),
                           digest_size=8).hexdigest()


def make_body(evt, created_ms, cli, rnd):
    """bench/signed.py's body shape, with this event's clock: createdAt and
    data.updated_at both created_ms."""
    raw = provider_ms(created_ms)
    head = signed.HEAD % (evt, raw, cli, raw, cli, cli, rnd.randrange(10000),
                          rnd.randrange(1, 200))
    pad = max(0, BODY_SIZE - len(head) - len(signed.TAIL))
    return (head + ("lorem ipsum dolor sit amet " * (pad // 27 + 1))[:pad]
            + signed.TAIL).encode()


def make_event(msg_id, evt, created_ms, received_ns, ts, cli, fp, rnd):
    """One row of the receiver's insert (lib/store/sqlite/engine.c), in its column order:
    webhook_id, body, received_at, webhook_timestamp, secret_fp, type,
    created_at, created_at_raw, object_type, object_id, updated_at,
    truncated, sort_at (= coalesce(created_at, received_at)), next_at
    (= received_at)."""
    body = make_body(evt, created_ms, cli, rnd)
    created = instant_ns(created_ms * 10**6)
    received = instant_ns(received_ns)
    return (msg_id, body, received, ts, fp, "client.updated", created,
            provider_ms(created_ms), "client", cli, created, 0, created,
            received)


INSERT = ("INSERT INTO events (webhook_id, body, received_at, webhook_timestamp,"
          " secret_fp, type, created_at, created_at_raw, object_type, object_id,"
          " updated_at, truncated, sort_at, next_at, admitted)"
          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
          " ON CONFLICT (webhook_id) DO NOTHING")


def backlog(n, tag, secret, end_ns):
    """n events received over the n ms before end_ns - 60 s, in order."""
    rnd = random.Random(tag)
    fp = fingerprint(secret)
    start_ms = end_ns // 10**6 - 60000 - n - 250
    out = []
    for i in range(n):
        created_ms = start_ms + i
        # Received 250 ms after it was created, sub-millisecond jitter that
        # keeps arrival order = createdAt order.
        received_ns = created_ms * 10**6 + 250 * 10**6 + (i % 1000) * 37
        cli = "cli_%08d" % rnd.randrange(OBJECTS)
        out.append(make_event("msg_%s%09d" % (tag, i), "evt_%s%09d" % (tag, i),
                              created_ms, received_ns, created_ms // 1000, cli,
                              fp, rnd))
    return out


def fill(db, rows):
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.executemany(INSERT, rows)
        con.execute("COMMIT")
    finally:
        con.close()


def write_conf(path, secret, sync="FULL"):
    d = os.path.dirname(path)
    bl.write_conf(path, PROG, [("database", "%s/inbox.db" % d),
                               ("secret", secret), ("synchronous", sync),
                               ("handler", "true"), ("settle", "0s")])
    return os.path.join(d, "inbox.db")


def create_inbox(s, drain, conf):
    """The schema, by the real binary: `check` opens (creates) the inbox;
    its findings about the rest of the setup do not matter here."""
    p = subprocess.run([drain, "-c", conf, "check"], capture_output=True,
                       text=True)
    if "opens in WAL mode" not in p.stdout:
        raise bl.Die("webhook-drain check (creating the inbox) exited %d: %s%s"
                     % (p.returncode, p.stdout.strip(), p.stderr.strip()))


def status(drain, conf):
    p = subprocess.run([drain, "-c", conf, "status", "--json"],
                       capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise bl.Die("webhook-drain status --json: %r %r" % (p.stdout, p.stderr))


def cross_check(s, fcgi, drain, secret):
    """Three deliveries through webhook.fcgi (plain CGI) and the same bodies
    through fill(): every column equal (but the id and the arrival time),
    and the same SQLite types.  Returns a one-line summary."""
    conf = os.path.join(s.work, "check", "webhook.conf")
    db = write_conf(conf, secret)
    create_inbox(s, drain, conf)
    key = base64.b64decode(secret[len("whsec_"):])
    now_ms = time.time_ns() // 10**6
    rnd = random.Random("check")
    fp = fingerprint(secret)
    mine = []
    for i in range(3):
        ts = int(time.time())
        row = make_event("msg_check%d" % i, "evt_check%d" % i, now_ms - 1000 + i,
                         time.time_ns(), ts, "cli_%08d" % i, fp, rnd)
        body = row[1]
        sig = "v1," + base64.b64encode(hmac.digest(
            key, b"msg_check%d.%d.%s" % (i, ts, body), "sha256")).decode()
        env = {"PATH": "/usr/bin:/bin", "GATEWAY_INTERFACE": "CGI/1.1",
               "REQUEST_METHOD": "POST", "CONTENT_LENGTH": str(len(body)),
               "CONTENT_TYPE": "application/json",
               "HTTP_WEBHOOK_ID": "msg_check%d" % i,
               "HTTP_WEBHOOK_TIMESTAMP": str(ts),
               "HTTP_WEBHOOK_SIGNATURE": sig, "WEBHOOK_CONF": conf}
        p = subprocess.run([fcgi], input=body, env=env, capture_output=True)
        if b"200" not in p.stdout.split(b"\r\n", 1)[0] or b"stored" not in p.stdout:
            raise bl.Die("cross-check: webhook.fcgi (CGI) answered %r %r"
                         % (p.stdout, p.stderr))
        mine.append(("msg_fill%d" % i,) + row[1:])
    fill(db, mine)
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(events)")]
    sel = ", ".join(cols + ["typeof(%s)" % c for c in cols])
    compared = 0
    try:
        for i in range(3):
            a = con.execute("SELECT %s FROM events WHERE webhook_id = ?" % sel,
                            ("msg_check%d" % i,)).fetchone()
            b = con.execute("SELECT %s FROM events WHERE webhook_id = ?" % sel,
                            ("msg_fill%d" % i,)).fetchone()
            if a is None or b is None:
                raise bl.Die("cross-check: row %d missing" % i)
            for j, c in enumerate(cols + ["typeof(%s)" % c for c in cols]):
                if c == "webhook_id":
                    continue
                if c in ("received_at", "next_at"):
                    if not INSTANT.match(a[j]) or not INSTANT.match(b[j]):
                        raise bl.Die("cross-check: %s not normalised: %r %r"
                                     % (c, a[j], b[j]))
                    continue
                if a[j] != b[j]:
                    raise bl.Die("cross-check: column %s differs: receiver %r, "
                                 "fill %r" % (c, a[j], b[j]))
                compared += 1
            ia, ib = cols.index("received_at"), cols.index("next_at")
            if a[ia] != a[ib] or b[ia] != b[ib]:
                raise bl.Die("cross-check: next_at != received_at")
    finally:
        con.close()
    return ("3 deliveries through webhook.fcgi (plain CGI) and the same bodies "
            "through the fill: %d of %d columns equal in value and SQLite type "
            "(received_at and next_at: both normalised instants, next_at = "
            "received_at; webhook_id differs by design)"
            % (len(cols) - 3, len(cols)))


# ---- 1. drain throughput ----------------------------------------------------

def spawn_run(s, spawn, n):
    t = time.monotonic()
    p = subprocess.run([spawn, str(n)], capture_output=True, text=True)
    wall = time.monotonic() - t
    m = re.search(r"rate=([\d.]+) failed=(\d+)", p.stdout)
    if p.returncode != 0 or not m:
        raise bl.Die("spawn failed: %s %s" % (p.stdout, p.stderr))
    s.say("spawn ceiling: %s" % p.stdout.strip())
    return {"n": n, "secs": float(re.search(r"seconds=([\d.]+)", p.stdout).group(1)),
            "rate": float(m.group(1)), "wall": wall}


def done_count(db):
    con = sqlite3.connect(db, timeout=10)
    try:
        return con.execute("SELECT count(*) FROM events WHERE state = 'done'"
                           ).fetchone()[0]
    finally:
        con.close()


def tenth_rates(samples, n, secs):
    """events/s over the first and the last tenth of the events, from
    (seconds, done) samples taken every SAMPLE s."""
    tenth = n // 10

    def at(k):  # seconds when done first reached k (linear between samples)
        for (t0, d0), (t1, d1) in zip(samples, samples[1:]):
            if d1 >= k:
                return t0 + (t1 - t0) * (k - d0) / (d1 - d0) if d1 > d0 else t1
        return secs
    t1, t9 = at(tenth), at(n - tenth)
    return (tenth / t1 if t1 > 0 else 0), (tenth / (secs - t9) if secs > t9 else 0)


SAMPLE = 0.5    # seconds between two looks at the done count during a drain


def drain_run(s, drain, conf, n, label):
    db = conf.replace("webhook.conf", "inbox.db")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = bl.load1()
    log = os.path.join(s.logdir, label + ".drain.log")
    with open(log, "wb") as out:
        t = time.monotonic()
        p = s.popen([drain, "-c", conf, "run"], stdout=out, stderr=out)
        samples = [(0.0, 0)]
        while p.poll() is None:
            time.sleep(SAMPLE)
            samples.append((time.monotonic() - t, done_count(db)))
        secs = time.monotonic() - t
    s.procs.remove(p)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    load1 = bl.load1()
    samples.append((secs, done_count(db)))
    first, last = tenth_rates(samples, n, secs)
    with open(log, errors="replace") as f:
        output = f.read()
    st = status(drain, conf)
    why = []
    if p.returncode != 0:
        why.append("webhook-drain run exited %d: %s" % (p.returncode,
                                                        output.strip()[:300]))
    if st["done"] != n or st["pending"] or st["stale"] or st["dead"]:
        why.append("status: %d done, %d pending, %d stale, %d dead (want %d done)"
                   % (st["done"], st["pending"], st["stale"], st["dead"], n))
    con = sqlite3.connect(conf.replace("webhook.conf", "inbox.db"))
    hand = con.execute("SELECT sum(attempts), count(*) FROM events").fetchone()
    con.close()
    if hand[0] != n:
        why.append("handed out %s times for %d events" % (hand[0], hand[1]))
    if output.strip():
        why.append("output: " + output.strip()[:200])
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    res = {"label": label, "n": n, "secs": secs, "rate": n / secs,
           "cpu_ms_per_event": 1000 * cpu / n, "valid": not [w for w in why
                                                              if not w.startswith("output")],
           "why": why, "load": "%s→%s" % (load0, load1),
           "outcome": st.get("last_run_outcome", ""), "first": first,
           "last": last}
    s.say("%s: %d events in %.2f s = %.0f events/s, CPU %.2f ms/event, valid %s%s"
          % (label, n, secs, n / secs, res["cpu_ms_per_event"],
             "yes" if res["valid"] else "no", " (%s)" % "; ".join(why) if why else ""))
    return res


# ---- main ----------------------------------------------------------------------

def drain_ab(s, drain, secret, events):
    """BENCH_DRAIN_BASELINE: that webhook-drain and ours drain the same
    events BENCH_AB_PAIRS times each, back to back, the order alternating,
    each on a fresh inbox.  Returns (pairs, baseline path)."""
    base = s.copy_bin(os.environ["BENCH_DRAIN_BASELINE"])
    pairs = []
    for k in range(bl.env_int("BENCH_AB_PAIRS", 3)):
        got = {}
        for who in (("base", "ours") if k % 2 == 0 else ("ours", "base")):
            conf = os.path.join(s.work, "ab-%d-%s" % (k, who), "webhook.conf")
            write_conf(conf, secret)
            binary = base if who == "base" else drain
            create_inbox(s, binary, conf)
            fill(conf.replace("webhook.conf", "inbox.db"), events)
            got[who] = drain_run(s, binary, conf, len(events), "ab%d-%s" % (k, who))
        pairs.append(got)
    return pairs, os.environ["BENCH_DRAIN_BASELINE"]


def ab_lines(ab):
    """RESULTS.md lines for drain_ab's pairs."""
    pairs, path = ab
    valid = [p for p in pairs if p["base"]["valid"] and p["ours"]["valid"]]
    L = ["", "A/B against `%s` (BENCH_DRAIN_BASELINE; synchronous = FULL, the "
         "same events, each drain on a fresh inbox, the order alternating):" % path,
         "", "| pair | baseline events/s | ours events/s | ours ÷ baseline | "
         "baseline CPU ms/event | ours CPU ms/event | valid |", "|--:|--:|--:|--:|--:|--:|---|"]
    for k, p in enumerate(pairs):
        b, o = p["base"], p["ours"]
        L.append("| %d | %.0f | %.0f | %s | %.2f | %.2f | %s |" % (
            k + 1, b["rate"], o["rate"], bl.ratio(o["rate"], b["rate"]),
            b["cpu_ms_per_event"], o["cpu_ms_per_event"],
            "yes" if p in valid else "**INVALID**"))
    if valid:
        L.append("")
        # The median of each pair's ratio: a pair's two drains ran back to
        # back, under the same load; pairs apart did not.
        rate = statistics.median(p["ours"]["rate"] / p["base"]["rate"]
                                 for p in valid)
        L.append("Median of the valid pairs' ratios: events/s ours ÷ baseline "
                 "**%.2f**, CPU per event ours ÷ baseline **%.2f**." % (
                     rate,
                     statistics.median(p["ours"]["cpu_ms_per_event"] /
                                       p["base"]["cpu_ms_per_event"] for p in valid)))
        bl.goal("A/B: the drain (one job, handler `true`) ≥ 0.95 × "
                "BENCH_DRAIN_BASELINE's events/s, median of %d pairs"
                % len(valid), "%.2f" % rate, "met" if rate >= 0.95 else "not met")
    else:
        bl.goal("A/B: the drain (one job, handler `true`) ≥ 0.95 × "
                "BENCH_DRAIN_BASELINE's events/s", "no valid pair", "invalid")
    return L


def main():
    s = bl.Session(PROG, "drain")
    baseline = os.environ.get("BENCH_DRAIN_BASELINE")
    n_events = bl.env_int("BENCH_DRAIN_EVENTS", 10000)
    n_backlog = bl.env_int("BENCH_BACKLOG", 20000)
    conns = bl.env_int("BENCH_DRAIN_CONNS", 5)
    procs = bl.env_int("BENCH_MAX_PROCS", 4)
    results = os.environ.get("BENCH_RESULTS",
                             os.path.join(bl.ROOT, "bench", "RESULTS.md"))
    for tool in ("lighttpd", "wrk", "cc", "ps", "df"):
        if shutil.which(tool) is None:
            raise bl.Die("%s not found (scripts/install-deps)" % tool)
    build = os.path.join(bl.ROOT, s.B)
    for b in ("webhook.fcgi", "webhook-drain"):
        if not os.access(os.path.join(build, b), os.X_OK):
            raise bl.Die("%s/%s not built (run make)" % (s.B, b))
    fcgi_built = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(
        os.path.getmtime(os.path.join(build, "webhook.fcgi"))))
    drain_built = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(
        os.path.getmtime(os.path.join(build, "webhook-drain"))))
    fcgi = s.copy_bin(os.path.join(build, "webhook.fcgi"))
    drain = s.copy_bin(os.path.join(build, "webhook-drain"))
    os.makedirs(s.outdir, exist_ok=True)
    spawn = os.path.join(s.outdir, "spawn")
    subprocess.run(["cc", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-o", spawn,
                    os.path.join(bl.BENCH, "spawn.c")], check=True)
    spawn = s.copy_bin(spawn)

    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    mach = bl.machine()
    load_start = bl.loadavg()
    steal0 = bl.steal()
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()

    check = cross_check(s, fcgi, drain, secret)
    s.say("fill cross-check: " + check)

    # ---- 1. drain throughput -------------------------------------------
    tag = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
    events = backlog(n_events, tag, secret, time.time_ns())
    dbs = {}
    for name, sync in (("drain", "FULL"), ("drain-normal", "NORMAL")):
        conf = os.path.join(s.work, name, "webhook.conf")
        db = write_conf(conf, secret, sync)
        create_inbox(s, drain, conf)
        t = time.monotonic()
        fill(db, events)
        s.say("%s: filled %d events in %.2f s" % (name, n_events, time.monotonic() - t))
        dbs[name] = conf
    ceil1 = spawn_run(s, spawn, n_events)
    full = drain_run(s, drain, dbs["drain"], n_events, "drain-FULL")
    ceil2 = spawn_run(s, spawn, n_events)
    normal = drain_run(s, drain, dbs["drain-normal"], n_events, "drain-NORMAL")
    ceiling = (ceil1["rate"] + ceil2["rate"]) / 2
    ab = drain_ab(s, drain, secret, events) if baseline else None

    # ---- 2. the receiver's latency, drainer idle and draining -------------
    servers = {}
    for name in ("idle", "draining"):
        conf = os.path.join(s.work, name, "webhook.conf")
        db = write_conf(conf, secret)
        create_inbox(s, drain, conf)
        fill(db, backlog(n_backlog, tag + name[0], secret, time.time_ns()))
        srv = bl.Lighttpd(s, name, fcgi, procs, env={"WEBHOOK_CONF": conf})
        srv.start()
        servers[name] = (srv, conf, db)
    rows = []
    srv, conf, db = servers["idle"]
    rate, bad = s.probe(srv, "/webhook", conf, conns, "idle-c%d" % conns)
    rows.append(s.measured(srv, "/webhook", conf, conns, "idle-c%d" % conns, rate,
                           db=db, table="events", probe_bad=bad))

    srv, conf, db = servers["draining"]
    dr = {}
    # As from cron: the drainer stops by itself at --max-time, after wrk.
    max_time = s.secs + 10

    def start_drainer():
        dr["log"] = open(os.path.join(s.logdir, "draining.drain.log"), "wb")
        dr["t0"] = time.monotonic()
        dr["p"] = s.popen([drain, "-c", conf, "run", "--max-time",
                           str(max_time)], stdout=dr["log"],
                          stderr=subprocess.STDOUT)
        # Start wrk once the drainer is handing events out.
        for _ in range(200):
            if done_count(db) > 0 or dr["p"].poll() is not None:
                break
            time.sleep(0.05)
        dr["done0"] = done_count(db)
        dr["w0"] = time.monotonic()
        s.say("draining: webhook-drain run %d started, %d done before wrk"
              % (dr["p"].pid, dr["done0"]))

    def after():
        dr["w1"] = time.monotonic()
        dr["done1"] = done_count(db)
        why = []
        if dr["p"].poll() is not None:
            why.append("the drainer ended during the run (exit %d): the backlog "
                       "ran out" % dr["p"].returncode)
        if dr["done0"] == 0:
            why.append("the drainer had not started handing out before wrk")
        return why

    rate, bad = s.probe(srv, "/webhook", conf, conns, "draining-c%d" % conns)
    rows.append(s.measured(srv, "/webhook", conf, conns, "draining-c%d" % conns,
                           rate, db=db, table="events", probe_bad=bad,
                           before_wrk=start_drainer, after_wrk=after))
    # The drainer stops at --max-time (checked between two events).
    try:
        rc = dr["p"].wait(max_time + 60)
    except subprocess.TimeoutExpired:
        s.stop_proc(dr["p"])
        rc = "killed: still running %d s after its --max-time" % 60
    drain_total = time.monotonic() - dr["t0"]
    dr["log"].close()
    st = status(drain, conf)
    during = (dr["done1"] - dr["done0"]) / (dr["w1"] - dr["w0"])
    load_end = bl.loadavg()
    steal1 = bl.steal()
    finished = time.strftime("%H:%M:%S UTC", time.gmtime())
    for srv, _, _ in servers.values():
        srv.stop()

    # ---- bench/RESULTS.md ------------------------------------------------
    v = {
        "lighttpd": bl.version(["lighttpd", "-v"], r"lighttpd/(\S+)"),
        "wrk": bl.version(["wrk", "-v"], r"^wrk (\S+)"),
        "sqlite": sqlite3.sqlite_version,
    }
    L = []
    L.append("## Drainer run of %s (bench/drain.py)" % started)
    L.append("")
    L.append(bl.machine_line(mach, load_start, load_end, finished, steal0, steal1))
    L.append("- Software: webhook.fcgi and webhook-drain from git %s (%s/webhook.fcgi "
             "of %s, %s/webhook-drain of %s, run as copies), lighttpd %s, wrk %s, "
             "SQLite %s (Python's sqlite3, for the fill and the counts); inbox on %s."
             % (bl.git_version(), s.B, fcgi_built, s.B, drain_built, v["lighttpd"],
                v["wrk"], v["sqlite"], bl.fs_of(s.work)))
    L.append("- Fill: %s; the events table filled with Python's sqlite3 in one "
             "transaction, every column as lib/store/sqlite/engine.c's insert fills it. "
             "Cross-check: %s." % ("`webhook-drain -c CONF status` creates the "
                                   "inbox (schema.sql)", check))
    L.append("- Events: client.updated, %d-byte bodies shaped like "
             "bench/signed.py's, createdAt 1 ms apart, %d objects, "
             "data.updated_at = createdAt (nothing stale: every event goes to the "
             "handler), received 250 ms after createdAt, all received over a "
             "minute ago; config `handler = true`, `settle = 0s`."
             % (BODY_SIZE, OBJECTS))
    L.append("- Command: `BENCH_DRAIN_EVENTS=%d BENCH_BACKLOG=%d BENCH_SECONDS=%d "
             "BENCH_DRAIN_CONNS=%d BENCH_THREADS=%d BENCH_MAX_PROCS=%d bench/drain.py`, "
             "which ran:" % (n_events, n_backlog, s.secs, conns, s.want_threads, procs))
    L.append("")
    L.append("```")
    L.append("webhook-drain -c $TMP/check/webhook.conf status   # creates the inbox; "
             "then 3 deliveries: webhook.fcgi as plain CGI, 3 rows by the fill")
    L.append("webhook-drain -c $TMP/drain/webhook.conf status   # creates the inbox; "
             "then the fill: %d events" % n_events)
    L.append("webhook-drain -c $TMP/drain-normal/webhook.conf status   # the same, "
             "synchronous = NORMAL")
    L.append("%s/bench/spawn %d   # ceiling, before" % (s.B, n_events))
    L.append("webhook-drain -c $TMP/drain/webhook.conf run   # synchronous = FULL")
    L.append("%s/bench/spawn %d   # ceiling, after" % (s.B, n_events))
    L.append("webhook-drain -c $TMP/drain-normal/webhook.conf run   # synchronous "
             "= NORMAL")
    L.append("lighttpd -D -f $TMP/idle/lighttpd.conf   # idle: %d-event backlog, "
             "no drainer" % n_backlog)
    L.append("lighttpd -D -f $TMP/draining/lighttpd.conf   # draining: %d-event "
             "backlog" % n_backlog)
    L.extend(s.commands[:1])
    L.append("webhook-drain -c $TMP/draining/webhook.conf run --max-time %d   # "
             "started right before the next wrk, once it has handed out its "
             "first event" % max_time)
    L.extend(s.commands[1:])
    L.append("```")
    L.append("")
    L.append("The generated config (the others differ only in `database` and, for "
             "drain-normal, `synchronous`):")
    L.append("")
    L.append("```")
    with open(dbs["drain"]) as f:
        L.append(re.sub(r"^secret = .*$", "secret = whsec_… (32 random bytes, "
                        "python3 secrets)", s.tmp(f.read()), flags=re.M).rstrip())
    L.append("```")
    L.append("")
    L.append("Drain throughput (%d events, handler `true`):" % n_events)
    L.append("")
    L.append("| what | events | seconds | events/s | first / last tenth of the "
             "events, events/s | CPU per event (user+sys, process and children) | "
             "load (1 min) before→after | ÷ ceiling | valid |")
    L.append("|---|--:|--:|--:|--:|--:|---|--:|---|")
    L.append("| ceiling: fork + setpgid + exec `/bin/sh -c true` + waitpid "
             "(bench/spawn.c), before | %d | %.2f | %.0f | – | – | – | 1.00 | yes |"
             % (ceil1["n"], ceil1["secs"], ceil1["rate"]))
    for r, what in ((full, "`webhook-drain run`, config synchronous = FULL "
                           "(default; the run's own commits are NORMAL)"),
                    (None, None), (normal, "`webhook-drain run`, config "
                                           "synchronous = NORMAL (diagnostic)")):
        if r is None:
            L.append("| ceiling, after | %d | %.2f | %.0f | – | – | – | 1.00 | yes |"
                     % (ceil2["n"], ceil2["secs"], ceil2["rate"]))
            continue
        L.append("| %s | %d | %.2f | **%.0f** | %.0f / %.0f | %.2f ms | %s | **%s** "
                 "| %s |"
                 % (what, r["n"], r["secs"], r["rate"], r["first"], r["last"],
                    r["cpu_ms_per_event"],
                    r["load"], bl.ratio(r["rate"], ceiling),
                    "yes" if r["valid"] else "**INVALID**"))
    L.append("")
    L.append("÷ ceiling: events/s over the mean of the two ceiling runs (%.0f/s). "
             "The drain's seconds are the whole `webhook-drain run` (start, "
             "%d hand-outs, retention pass, exit); its outcome: \"%s\". First / last "
             "tenth: the rate over the first and the last %d events handed out "
             "(the done count sampled every %.1f s), i.e. with %d and with %d "
             "events still pending."
             % (ceiling, n_events, full["outcome"], n_events // 10, SAMPLE,
                n_events, n_events // 10))
    notes = ["- %s: %s" % (r["label"], "; ".join(r["why"]))
             for r in (full, normal) if r["why"]]
    if notes:
        L.append("")
        L.extend(notes)
    if ab:
        L.extend(ab_lines(ab))
    L.append("")
    L.append("The receiver while the drainer works (lighttpd, webhook.fcgi "
             "\"max-procs\" => %d, synchronous = FULL; each run against its own "
             "inbox holding the same %d-event backlog; %d s per run after a %d s "
             "probe that sizes the pre-generated requests):"
             % (procs, n_backlog, s.secs, s.probe_secs))
    L.append("")
    L.append("p50 and p99: each delivery's own time; p99 wrk-corrected: "
             "wrk's figure after its coordinated-omission correction "
             "(bench/requests.lua; bench/run's note explains both).")
    L.append("")
    L.append("| drainer | conns (wrk -t/-c) | req/s | p50 | p99 | p99 wrk-corrected | non-2xx | rows "
             "stored / sent (completed) | load (1 min) before→after | valid | "
             "req/s ÷ idle | p50 ÷ idle | p99 ÷ idle |")
    L.append("|---|---|--:|--:|--:|--:|--:|--:|---|---|--:|--:|--:|")
    base = rows[0]
    for r in rows:
        what = "idle (not running)" if r["server"] == "idle" else \
            "`webhook-drain run` draining"
        L.append("| %s | %d (-t%d -c%d) | %.0f | %s | %s | %s | %d | %d / %d (%d) | %s "
                 "| %s | %s | %s | %s |"
                 % (what, r["conns"], r["threads"], r["conns"], r["rps"],
                    bl.us(r["p50"]), bl.us(r["p99"]), bl.us(r["p99_wrk"]),
                    r["non2xx"], r["stored"],
                    r["sent"], r["completed"], r["load"],
                    "yes" if r["valid"] else "**INVALID**",
                    bl.ratio(r["rps"], base["rps"]), bl.ratio(r["p50"], base["p50"]),
                    bl.ratio(r["p99"], base["p99"])))
    L.append("")
    L.append("During the draining run the drainer finished %d events in %.1f s "
             "(%.0f events/s, %s × its rate alone above); started with `run "
             "--max-time %d`, it stopped by itself %.1f s after it started, exit "
             "status %s; status afterwards: %d done, %d pending (%d of them the backlog's), "
             "%d stale, %d dead."
             % (dr["done1"] - dr["done0"], dr["w1"] - dr["w0"], during,
                bl.ratio(during, full["rate"]), max_time, drain_total, rc,
                st["done"], st["pending"], max(0, n_backlog - st["done"]), st["stale"],
                st["dead"]))
    if rc != 0:
        L.append("")
        L.append("**The drainer did not exit 0** (see build/bench/logs/%s-drain/"
                 "draining.drain.log)." % s.stamp)
    bl.finish(s, results, L, rows)
    return 0


if __name__ == "__main__":
    bl.run(main, PROG)
