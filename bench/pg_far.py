#!/usr/bin/env python3
"""bench/pg_far.py: the drain against a PostgreSQL on "another host".

A site past one machine runs its PostgreSQL on a host of its own, so
every statement's round trip crosses a network: 0.2–1 ms inside one data
centre, where a Unix socket on this machine costs some microseconds.  This
machine has no network emulation (no sch_netem), so the distance is made
here: a relay on 127.0.0.1 that holds every chunk of bytes, each way, for
--delay-us before passing it on to the server's Unix socket, run in two
threads per connection (time.sleep, not an event loop's millisecond
timer).

It starts a server as the tests do (tests/pgserver.py), the relay in front
of it, and runs bench/drain_jobs.py's handler-`true` row (one job) on it:
how much of a hand-out is round trips is what changes when the delay does.
A measurement for docs/postgresql.md, not a `make bench` row.

    python3 bench/pg_far.py --delay-us 250 --events 1000 [--build build]
"""
import argparse
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests"))
import pgserver  # noqa: E402


def pump(src, dst, delay_s):
    """Bytes from src to dst, each chunk delay_s after it arrived."""
    q = queue.Queue()

    def writer():
        while True:
            item = q.get()
            if item is None:
                break
            due, data = item
            left = due - time.monotonic()
            if left > 0:
                time.sleep(left)
            try:
                dst.sendall(data)
            except OSError:
                break
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            q.put(None)
            break
        q.put((time.monotonic() + delay_s, data))
    t.join()


def relay(listener, sock_path, delay_s):
    while True:
        try:
            c, _ = listener.accept()
        except OSError:
            return
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock_path)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for a, b in ((c, s), (s, c)):
            threading.Thread(target=pump, args=(a, b, delay_s),
                             daemon=True).start()


def round_trip_ms(uri):
    """pgbench's "latency average" over 2000 `SELECT 1`, one client."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as f:
        f.write("SELECT 1;\n")
        f.flush()
        r = subprocess.run([os.path.join(pgserver.PG_BIN, "pgbench"), "-n",
                            "-t", "2000", "-f", f.name, uri],
                           capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("latency average"):
            return line.split("=")[1].strip().split()[0]
    return "? (%s)" % r.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delay-us", type=int, default=250,
                    help="one way, per chunk (default 250: a 0.5 ms round trip)")
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--build", default=os.environ.get("B", "build"))
    ap.add_argument("--out", default="build/bench/pg_far.md")
    a = ap.parse_args()
    srv = pgserver.PgServer(prefix="webhook-bench-far-")
    try:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        port = listener.getsockname()[1]
        sock_path = os.path.join(srv.sock, ".s.PGSQL.5432")
        threading.Thread(target=relay, args=(listener, sock_path,
                                             a.delay_us / 1e6),
                         daemon=True).start()
        uri = "postgresql://%s@127.0.0.1:%d/postgres?sslmode=disable" % (
            pgserver.SUPERUSER, port)
        # The round trip as the drainer meets it: pgbench's latency of
        # `SELECT 1`, through the relay and straight to the socket.
        for name, where in (("relay", uri), ("socket", srv.uri("postgres"))):
            print("bench/pg_far.py: SELECT 1 round trip, %s: %s ms" % (
                name, round_trip_ms(where)), flush=True)
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        env = dict(os.environ, B=a.build, BENCH_JOBS="1",
                   BENCH_DRAIN_PROCS="1")
        r = subprocess.run(["python3", "bench/drain_jobs.py", "--database",
                            uri, "--events", "10", "--true-events",
                            str(a.events), "--out", a.out], env=env)
        return r.returncode
    finally:
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
