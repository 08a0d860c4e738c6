#!/usr/bin/env python3
"""bench/copy_pg.py: `webhook-drain copy` from SQLite to PostgreSQL (issue
20, "Moving an existing inbox"; docs/moving.md).  Not a test.

A SQLite inbox of BENCH_COPY_EVENTS events (default 20000; bench/drain.py's
fill: bodies shaped like bench/signed.py's, BODY_SIZE bytes, over 1000
objects) is copied into a new database on a PostgreSQL server of its own
(tests/pgserver.py: a temporary cluster, Unix socket, fsync on), under
/usr/bin/time: wall time and peak resident memory of the copy; then the
same copy again (nothing to write: the cost of a repeat during a
cut-over), and back into a new SQLite file.

    python3 bench/copy_pg.py          (B=build by default)
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import drain as dr      # noqa: E402
import pgserver         # noqa: E402

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def timed(argv):
    """Run argv under /usr/bin/time: (seconds, peak KB, its stdout)."""
    p = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + argv,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: exit %d: %s" % (" ".join(argv), p.returncode, p.stderr))
    line = [l for l in p.stderr.splitlines() if l.startswith("TIME ")][-1]
    secs, kb = line.split()[1:]
    return float(secs), int(kb), p.stdout


def main():
    build = os.path.join(os.path.dirname(HERE), os.environ.get("B", "build"))
    drain = os.path.join(build, "webhook-drain")
    n = int(os.environ.get("BENCH_COPY_EVENTS", "20000"))
    work = tempfile.mkdtemp(prefix="webhook-bench-copy-")
    conf = os.path.join(work, "webhook.conf")
    db = dr.write_conf(conf, SECRET)
    dr.create_inbox(None, drain, conf)
    dr.fill(db, dr.backlog(n, "c", SECRET, time.time_ns()))
    srv = pgserver.PgServer()
    try:
        uri = srv.new_database("copy")
        print("source: %s, %d events, %.1f MB" % (db, n,
              os.path.getsize(db) / 1e6))
        print("$ webhook-drain -c %s copy --to '%s'" % (conf, uri))
        secs, kb, out = timed([drain, "-c", conf, "copy", "--to", uri])
        print(out.strip())
        print("first copy: %.2f s, peak RSS %.1f MB, %.0f events/s"
              % (secs, kb / 1024, n / secs))
        secs, kb, out = timed([drain, "-c", conf, "copy", "--to", uri])
        print("again (nothing to write): %.2f s, peak RSS %.1f MB"
              % (secs, kb / 1024))
        back_conf = os.path.join(work, "back.conf")
        with open(back_conf, "w") as f:
            f.write("database = %s\nsecret = %s\n" % (uri, SECRET))
        secs, kb, out = timed([drain, "-c", back_conf, "copy", "--to",
                               os.path.join(work, "back.db")])
        print("back into a new SQLite file: %.2f s, peak RSS %.1f MB"
              % (secs, kb / 1024))
        print("load average at the end: %.1f %.1f %.1f" % os.getloadavg())
    finally:
        srv.cleanup()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
