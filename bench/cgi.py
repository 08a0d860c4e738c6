#!/usr/bin/env python3
"""The plain-CGI row of `make bench` (bench/README: method).

A host without FastCGI, and the .htaccess snippet's branch for large
bodies, start the receiver once per request.  This measures that whole
life (process start, config, inbox open, verify, commit, answer, exit)
against a ceiling measured in the same run: bench/cgi_ceiling, a static
CGI program that appends the body to a file and fdatasync()s it, and
against bench/cgi_sqlite_floor, the least a CGI program that keeps its
events in SQLite does (open, one INSERT with synchronous=FULL, answer,
checkpoint after the answer): what any SQLite-backed plain-CGI receiver
pays on this machine before it verifies or parses anything.  All run
under the same client (bench/cgiloop: fork, environment, body on stdin,
answer read, process reaped; one request at a time), alternated, PAIRS
times.  Goal (issue 16): the receiver at >= 0.7 x the ceiling.

  cgi.py BUILD_STATIC BUILD [--requests N] [--pairs P] [--out FILE]

Prints a markdown section (and appends it to --out when given): req/s of
each run, the ratio of each pair, and the syscalls of one request of each
(strace -c: fdatasync/fsync, pwrite64, unlink).
"""
import argparse
import base64
import hashlib
import hmac
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SECRET = "whsec_" + base64.b64encode(b"bench-cgi-secret-0123456789abcd").decode()


def sign(mid, ts, body):
    key = base64.b64decode(SECRET[len("whsec_"):])
    mac = hmac.new(key, b"%s.%d." % (mid.encode(), ts) + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def requests(path, n, tag):
    ts = int(time.time())
    with open(path, "w") as f:
        for i in range(n):
            mid = "msg_cgi_%s_%06d" % (tag, i)
            body = ('{"id":"%s","type":"client.updated","createdAt":'
                    '"2026-11-30T10:00:00.%03dZ","data":{"object":"client",'
                    '"id":"cli_%d","name":"bench"}}' % (mid, i % 1000, i % 500)).encode()
            f.write("%s %d %s %s\n" % (mid, ts, sign(mid, ts, body), body.hex()))


def run(loop, prog, reqs, conf):
    out = subprocess.run([loop, prog, reqs, conf], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("cgiloop %s: %s%s" % (prog, out.stdout, out.stderr))
    return float(re.search(r"([0-9.]+) req/s", out.stdout).group(1))


def syscalls(loop, prog, reqs, conf, tmp):
    """strace -f -c of cgiloop running one request."""
    one = os.path.join(tmp, "one.req")
    with open(reqs) as f, open(one, "w") as o:
        o.write(f.readline())
    trace = os.path.join(tmp, "strace.txt")
    subprocess.run(["strace", "-f", "-c", "-o", trace, loop, prog, one, conf],
                   capture_output=True, check=True)
    counts = {}
    with open(trace) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[-1] in ("fdatasync", "fsync", "pwrite64",
                                                  "unlink", "write"):
                counts[parts[-1]] = int(parts[3]) if parts[3].isdigit() else int(parts[4])
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("static")
    ap.add_argument("build")
    ap.add_argument("--requests", type=int, default=1500)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    loop = os.path.join(a.build, "bench", "cgiloop")
    ceiling = os.path.join(a.static, "bench", "cgi_ceiling")
    floor = os.path.join(a.static, "bench", "cgi_sqlite_floor")
    ours = os.path.join(a.static, "webhook.fcgi")
    for p in (loop, ceiling, floor, ours):
        if not os.access(p, os.X_OK):
            sys.exit("cgi.py: %s is not built" % p)
    tmp = tempfile.mkdtemp(prefix="webhook-bench-cgi-")
    try:
        conf = os.path.join(tmp, "webhook.conf")
        with open(conf, "w") as f:
            f.write("database = %s/inbox.db\nsecret = %s\n" % (tmp, SECRET))
        sink = os.path.join(tmp, "ceiling.data")
        floordb = os.path.join(tmp, "floor.db")
        subprocess.run(["sqlite3", floordb, "PRAGMA journal_mode = WAL; "
                        "CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)"],
                       check=True, capture_output=True)
        rows = []
        for pair in range(a.pairs):
            reqs = os.path.join(tmp, "r%d" % pair)
            requests(reqs, a.requests, "p%d" % pair)
            c = run(loop, ceiling, reqs, sink)
            f = run(loop, floor, reqs, floordb)
            o = run(loop, ours, reqs, conf)
            rows.append((c, f, o))
        sc = syscalls(loop, ceiling, reqs, sink, tmp)
        requests(reqs, 1, "strace")
        so = syscalls(loop, ours, reqs, conf, tmp)
        stored = subprocess.run(["sqlite3", os.path.join(tmp, "inbox.db"),
                                 "SELECT count(*) FROM events"],
                                capture_output=True, text=True).stdout.strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ratios = [o / c for c, f, o in rows]
    floors = [f / c for c, f, o in rows]
    vs_floor = [o / f for c, f, o in rows]
    lines = ["### Plain CGI: a process per request (bench/cgi.py)", "",
             "%d requests per run, one at a time, runs alternated; the ceiling "
             "appends each body to a file and fdatasync()s it (static, like "
             "the receiver); the SQLite floor opens a one-table WAL database, "
             "inserts the body with synchronous=FULL and answers (static too)."
             % a.requests, "",
             "| round | ceiling req/s | SQLite floor req/s | webhook.fcgi (static) req/s "
             "| floor / ceiling | webhook.fcgi / ceiling | webhook.fcgi / floor |",
             "|---|---|---|---|---|---|---|"]
    for i, (c, f, o) in enumerate(rows):
        lines.append("| %d | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f |"
                     % (i + 1, c, f, o, f / c, o / c, o / f))
    lines += ["", "Medians: webhook.fcgi / ceiling **%.2f** (goal >= 0.70); "
              "SQLite floor / ceiling **%.2f**; webhook.fcgi / floor **%.2f**." % (
                  statistics.median(ratios), statistics.median(floors),
                  statistics.median(vs_floor)),
              "%s rows stored of %d sent. "
              "One request's syscalls (strace -f -c, process start included): "
              "ceiling %s; webhook.fcgi %s." % (
                  stored,
                  a.pairs * a.requests + 1, sc, so), ""]
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n")
    return 0 if statistics.median(ratios) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
