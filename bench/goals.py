#!/usr/bin/env python3
"""bench/goals.py: the "Goals against now" table of a `make bench` run.

    python3 bench/goals.py GOALS --out RESULTS

GOALS is the file the run's scripts noted their goals in (benchlib.goal:
one line per goal, tab-separated: the goal, this run's figure, and "met",
"not met", "invalid" or "valid" for a figure without a goal); bench/run
empties it at its start and `make bench` runs this last.  The table goes
into RESULTS right under the run's "## Run of" heading, where a reader
looks first (at the end when there is no such heading); an empty or
missing GOALS file changes nothing.
"""
import argparse
import os
import sys

PROG = "bench/goals.py"


def table(lines):
    out = ["### Goals against now (this run, noted by the scripts)", "",
           "| goal | now | |", "|---|---|---|"]
    for line in lines:
        f = line.rstrip("\n").split("\t")
        if len(f) != 3:
            continue
        what, now, met = f
        out.append("| %s | %s | %s |" % (what, now, "**%s**" % met
                                         if met in ("not met", "invalid")
                                         else met))
    return out + [""]


def main():
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("goals")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        with open(a.goals) as f:
            lines = [line for line in f if line.strip()]
    except FileNotFoundError:
        lines = []
    if not lines:
        return 0
    with open(a.out) as f:
        text = f.read().split("\n")
    at = next((i for i, line in enumerate(text) if line.startswith("## Run of")),
              None)
    if at is None:
        text += [""] + table(lines)
    else:
        text[at + 1:at + 1] = [""] + table(lines)[:-1]
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(text))
    os.replace(tmp, a.out)
    print("%s: %d goals into %s" % (PROG, len(lines), a.out), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
