#!/usr/bin/env python3
"""bench/sync_pages.py: an fdatasync's wall time by the pages written before it.

    python3 bench/sync_pages.py [--dir DIR] [--rounds N] [--pages 1,2,4,8,16]

Writes K distinct 4 KiB pages (pwrite each, as SQLite writes WAL frames)
into a file of fixed size, then fdatasync, K taking each value in turn
round after round (so a drift in the machine's load favours no K); prints
each K's mean, p50 and p90 wall time.  What a group commit's sync costs
for the pages its batch wrote (docs/receiver-throughput.md): the ceiling
writes about 1 KiB per delivery, an in-process SQLite receiver several
frames per batch.  DIR (default build/bench) must be on the disk the
inbox would be on.  Starts nothing, leaves nothing.
"""
import argparse
import os
import statistics
import sys
import time

PAGE = 4096
SLOTS = 256         # the file's size in pages: written round-robin, never grown


def main():
    ap = argparse.ArgumentParser(prog="bench/sync_pages.py")
    ap.add_argument("--dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bench"))
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--pages", default="1,2,4,8,16")
    a = ap.parse_args()
    ks = [int(k) for k in a.pages.split(",")]
    if a.rounds < 1 or not ks or min(ks) < 1 or max(ks) > SLOTS:
        ap.error("--rounds >= 1, --pages from 1 to %d" % SLOTS)
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "sync-pages.%d" % os.getpid())
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, PAGE * SLOTS)
        os.fsync(fd)
        page = os.urandom(PAGE)
        at = 0
        times = {k: [] for k in ks}
        for r in range(a.rounds):
            for k in (ks if r % 2 == 0 else ks[::-1]):
                t0 = time.perf_counter_ns()
                for _ in range(k):
                    os.pwrite(fd, page, (at % SLOTS) * PAGE)
                    at += 1
                os.fdatasync(fd)
                times[k].append((time.perf_counter_ns() - t0) / 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    print("pages  mean_us  p50_us  p90_us  (%d rounds, %s)" % (a.rounds, a.dir))
    for k in ks:
        t = sorted(times[k])
        print("%5d  %7.0f  %6.0f  %6.0f" % (k, statistics.mean(t), t[len(t) // 2],
                                           t[int(len(t) * 0.9)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
