#!/usr/bin/env python3
"""bench/cpu_per_request.py: where a request's CPU goes (issue 5's analysis).

Runs responders one after another behind lighttpd on 127.0.0.1 (tests/
harness.py's Lighttpd, mod_fastcgi with "max-procs"), drives each with wrk
and bench/requests.lua on distinct signed deliveries (bench/signed.py gen),
and prints per request: the FastCGI workers' CPU (user + system, and system
alone, from /proc/PID/stat), lighttpd's, and the whole machine's busy time
(/proc/stat) — plus req/s, p50/p99/p99.9 and, for webhook.fcgi, rows stored.

Each argument is one run, NAME:PROCS:THREADS:CONNS, where NAME is "bare"
(bench/bare.c, built by bench/run into build/bench/bare; THREADS is
BARE_THREADS), "baresync" (the same with BARE_SYNC: the durable ceiling) or
"full" /
"normal" (webhook.fcgi with that synchronous; THREADS is WEBHOOK_THREADS).
Example, 4 processes × 8 threads against 1 × 32, at 32 connections:

    python3 bench/cpu_per_request.py bare:4:1:32 full:4:8:32 full:1:32:32

Not part of `make bench`: a tool for comparing designs in one sitting.  The
machine is shared: compare runs made together, and repeat them.
"""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from harness import (SECRET_A, FCGI, Sandbox, Lighttpd,  # noqa: E402
                     event_body, write_conf)

TCK = os.sysconf("SC_CLK_TCK")
BARE = os.path.join(ROOT, os.environ.get("B", "build"), "bench", "bare")
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))


def proc_cpu(pid):
    """(user + system, system) seconds of one process, 0 once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return (int(fields[11]) + int(fields[12])) / TCK, int(fields[12]) / TCK


def proc_wchar(pid):
    """Bytes a process has passed to write(2) and its kind (/proc/PID/io:
    files and sockets alike), 0 once it is gone."""
    try:
        with open("/proc/%d/io" % pid) as f:
            return next(int(x.split()[1]) for x in f if x.startswith("wchar:"))
    except (OSError, StopIteration):
        return 0


def machine_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / TCK     # minus idle and iowait


def run(name, procs, threads, conns):
    sb = Sandbox()
    env = {"WEBHOOK_THREADS": str(threads)}
    label = name
    if name in ("bare", "baresync"):
        env = {"BARE_THREADS": str(threads)}
    if name == "baresync":
        name = "bare"
        env["BARE_SYNC"] = os.path.join(sb.dir, "body")
    write_conf(sb.conf, database=sb.db, secret=SECRET_A,
               synchronous="NORMAL" if name == "normal" else "FULL")
    srv = Lighttpd(sb, procs=procs, fcgi=BARE if name == "bare" else FCGI,
                   extra_env=env)
    try:
        for i in range(2 * procs):          # start every worker
            srv.deliver(SECRET_A, "warm%d" % i, event_body("warm%d" % i))
        warm = 0 if name == "bare" else sb.count()
        req = os.path.join(sb.dir, "req")
        # Enough for the fastest run seen here with a margin (bare ~27k/s,
        # webhook.fcgi ~12k/s), in each of the 2 files signed.py writes:
        # with 5 connections wrk runs one thread, which reads one file.
        count = 2 * (40000 if name == "bare" else 20000) * SECONDS
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "signed.py"),
                        "gen", "--conf", sb.conf, "--host",
                        "127.0.0.1:%d" % srv.port, "--path", "/hook", "--count",
                        str(count), "--threads", "2", "--out", req],
                       check=True, capture_output=True)
        workers = srv.workers()
        pids = workers + [srv.proc.pid]
        before = {p: proc_cpu(p) for p in pids}
        wchar0 = {p: proc_wchar(p) for p in workers}
        busy0 = machine_busy()
        out = subprocess.run(
            ["wrk", "-t2" if conns % 2 == 0 else "-t1", "-c%d" % conns,
             "-d%ds" % SECONDS, "--latency", "-s",
             os.path.join(ROOT, "bench", "requests.lua"),
             "http://127.0.0.1:%d/hook" % srv.port],
            env=dict(os.environ, BENCH_REQUESTS=req,
                     BENCH_CONNECTIONS=str(conns)), capture_output=True,
            text=True, check=True).stdout
        after = {p: proc_cpu(p) for p in pids}
        wchar = sum(proc_wchar(p) - wchar0[p] for p in workers)
        busy = machine_busy() - busy0
        line = next(x for x in out.splitlines() if x.startswith("BENCH "))
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        n = int(kv["requests"])
        wk = sum(after[p][0] - before[p][0] for p in workers)
        wks = sum(after[p][1] - before[p][1] for p in workers)
        lt = after[srv.proc.pid][0] - before[srv.proc.pid][0]
        time.sleep(0.5)                     # requests still in flight land
        rows = "-" if name == "bare" else str(sb.count() - warm)
        bad = int(kv["non2xx"]) + int(kv["exhausted"])
        why = "%s non-2xx, %s threads ran out of requests" % (kv["non2xx"],
                                                             kv["exhausted"])
        print("%-8s procs %d threads %2d conns %2d: %6.0f req/s  p50 %s µs  "
              "p99 %s µs  p99.9 %s µs  max %s µs (wrk-corrected p99 %s µs  p99.9 %s µs)  "
              "rows %s / sent %s%s | µs CPU per request: workers "
              "%.0f (system %.0f), lighttpd %.0f, machine %.0f | workers wrote "
              "%.0f bytes per request"
              % (label, procs, threads, conns, float(kv["rps"]), kv["raw_p50_us"],
                 kv["raw_p99_us"], kv["raw_p999_us"], kv["raw_max_us"],
                 kv["p99_us"], kv["p999_us"], rows, kv["sent"],
                 "  INVALID (%s)" % why if bad else "",
                 wk / n * 1e6, wks / n * 1e6, lt / n * 1e6, busy / n * 1e6,
                 wchar / n),
              flush=True)
    finally:
        srv.stop()
        sb.cleanup()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for spec in sys.argv[1:]:
        name, procs, threads, conns = spec.split(":")
        if name not in ("bare", "baresync", "full", "normal"):
            sys.exit("unknown responder %r (bare, baresync, full, normal)"
                     % name)
        run(name, int(procs), int(threads), int(conns))


if __name__ == "__main__":
    main()
