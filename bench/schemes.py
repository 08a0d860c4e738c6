#!/usr/bin/env python3
"""bench/schemes.py: the receiver's rate per provider scheme.

webhook.fcgi in the supported setup (1 process × 32 request threads,
synchronous = FULL) behind lighttpd on 127.0.0.1 (mod_fastcgi, "bin-path",
"max-procs" => 1), with one config holding the default source (Standard
Webhooks) and a `[source NAME]` per scheme of docs/providers.md, NAME =
the scheme's name, each with a secret in its provider's own form (a
Discord key pair made here, the public key in the config; Twilio's `url =`
the exact URL wrk posts to).  Rows: `standard`, the default source at
PREFIX, and each scheme at PREFIX/NAME, with distinct deliveries signed in
that scheme just before each row (bench/signed_schemes.py gen; the
standard row's by bench/signed.py gen), bodies of about 1 KiB as
bench/run's.

At each connection count of BENCH_CONNS (default "5 32"),
BENCH_SCHEME_ROUNDS rounds (default 3): each round a fresh inbox, every
row once (a 2 s probe that sizes the deliveries, then BENCH_SECONDS of
wrk), the order rotating so that each row comes early in one round and
late in another.  The ratio scheme ÷ standard is taken within each round,
and its median over the rounds is the figure; goal: ≥ 0.9 at 5
connections.  A row is valid as bench/run's: no non-2xx, no socket error
or timeout, no pre-generated request ran short, the worker not replaced,
and the inbox gained exactly one row per delivery sent — counted among
the source's own ids (NAME/…, or the default source's msg_…) and in the
whole inbox alike.

Appends a section to the results (BENCH_RESULTS, default
bench/RESULTS.md) and notes the goals (BENCH_GOALS, under bench/run);
wrk outputs and server logs stay in build/bench/logs/TIME-schemes/.

Runnable alone:
  BENCH_SCHEMES_ONLY=1 bench/run
  BENCH_SECONDS=3 BENCH_SCHEME_ROUNDS=1 BENCH_SCHEME_LIST="stripe twilio" \\
      python3 bench/schemes.py --out build/bench/trial-schemes.md

Environment (all optional): BENCH_SECONDS (default 10), BENCH_CONNS
(default "5 32"), BENCH_THREADS (default 2), BENCH_PROBE_SECONDS (default
2), BENCH_SCHEME_ROUNDS (default 3), BENCH_SCHEME_LIST (the schemes
measured, default all), BENCH_RESULTS, BENCH_GOALS, B (build directory).

Everything started here (the lighttpds and their workers, wrk) is stopped
on exit, by process id; the temporary directory is removed.
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True    # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl   # noqa: E402
import signed_schemes as ss   # noqa: E402

PROG = "bench/schemes.py"
THREADS = 32        # request threads of the one webhook.fcgi process
PREFIX = "/webhook"  # bench/run's: the receiver's URL; PREFIX/NAME a source
GOAL = 0.9
GOAL_CONNS = 5
COST_DELIVERIES = 2000   # bench/scheme_cost: deliveries of each kind
COST_ROUNDS = 5          # and the times each is checked
# What each row sends and what the receiver checks (docs/providers.md).
WHAT = {
    "standard": "default source: `webhook-signature` v1, HMAC-SHA256 of "
                "`id.ts.body`, base64 (bench/signed.py)",
    "stripe": "`Stripe-Signature: t=…,v1=…`, HMAC-SHA256 of `t.body`, hex; "
              "a `payment_intent.succeeded` event (`id`, `created`, "
              "`data.object.id`)",
    "github": "`X-Hub-Signature-256`, HMAC-SHA256 of the body, hex; a push, "
              "`X-GitHub-Delivery` a new UUID",
    "shopify": "`X-Shopify-Hmac-Sha256`, HMAC-SHA256 of the body, base64; "
               "`orders/updated`, `X-Shopify-Webhook-Id` a new UUID",
    "woocommerce": "`X-WC-Webhook-Signature`, HMAC-SHA256 of the body, "
                   "base64; `order.updated`, a new `X-WC-Webhook-Delivery-ID`",
    "slack": "`X-Slack-Signature: v0=…`, HMAC-SHA256 of `v0:ts:body`, hex; "
             "an `event_callback` with a new `event_id`",
    "paddle": "`Paddle-Signature: ts=…;h1=…`, HMAC-SHA256 of `ts:body`, "
              "hex; `transaction.completed`, a new `event_id`",
    "mercadopago": "`x-signature: ts=…,v1=…`, HMAC-SHA256 of "
                   "`id:DATA.ID;request-id:X-REQUEST-ID;ts:TS;`, hex, the "
                   "query's `data.id` and `type`; a `payment.updated` "
                   "notice, a new notification id and `x-request-id`",
    "discord": "`X-Signature-Ed25519`, Ed25519 over `ts` + body; an "
               "application command (type 2) with a new `id`",
    "gitlab": "`X-Gitlab-Token`, the token compared (BLAKE2b digests); a "
              "push, `X-Gitlab-Event-UUID` a new UUID",
    "twilio": "`X-Twilio-Signature`, HMAC-SHA1 of the URL + the sorted "
              "form parameters, base64; an incoming SMS (19 form "
              "parameters), `I-Twilio-Idempotency-Token` a new UUID",
    "hmac": "generic: `X-Signature: sha256=…`, HMAC-SHA256 of `ts.body`, "
            "hex, `X-Timestamp`; `id = /id`",
}


def id_range(name):
    """The webhook_id range of a source's events: NAME/… (an index range:
    '0' follows '/'), or the default source's msg_… (bench/signed.py)."""
    if name == "standard":
        return ("msg_", "msg`")
    return (name + "/", name + "0")


def count(db, name=None):
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(db, timeout=10)
    try:
        if name is None:
            return con.execute("SELECT count(*) FROM events").fetchone()[0]
        return con.execute("SELECT count(*) FROM events WHERE webhook_id >= ? "
                           "AND webhook_id < ?", id_range(name)).fetchone()[0]
    finally:
        con.close()


class SchemeSession(bl.Session):
    """bench/run's method (benchlib), the deliveries signed by the scheme
    the path names: PREFIX is the standard row, PREFIX/NAME scheme NAME."""

    keys = None

    def gen(self, conf, port, path, count, threads):
        name = path[len(PREFIX) + 1:]
        if not name:
            return super().gen(conf, port, path, count, threads)
        subprocess.run([sys.executable, os.path.join(bl.BENCH, "signed_schemes.py"),
                        "gen", "--keys", self.keys, "--scheme", name,
                        "--host", "127.0.0.1:%d" % port, "--path", path,
                        "--count", str(count), "--threads", str(threads),
                        "--out", os.path.join(self.work, "req")],
                       check=True, stdout=subprocess.DEVNULL)


def median(v):
    return statistics.median(v) if v else 0.0


def main():
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("--out", help="the results file to append to "
                    "(BENCH_RESULTS)")
    a = ap.parse_args()
    s = SchemeSession(PROG, "schemes")
    results = a.out or os.environ.get(
        "BENCH_RESULTS", os.path.join(bl.ROOT, "bench", "RESULTS.md"))
    conns_list = [int(c) for c in os.environ.get("BENCH_CONNS", "5 32").split()]
    rounds = bl.env_int("BENCH_SCHEME_ROUNDS", 3)
    schemes = os.environ.get("BENCH_SCHEME_LIST", " ".join(ss.SCHEMES)).split()
    for n in schemes:
        if n not in ss.SCHEMES:
            raise bl.Die("BENCH_SCHEME_LIST: %s is not one of %s"
                         % (n, " ".join(ss.SCHEMES)))
    names = ["standard"] + schemes
    build = os.path.join(bl.ROOT, s.B)
    if not os.access(os.path.join(build, "webhook.fcgi"), os.X_OK):
        raise bl.Die("%s/webhook.fcgi not built (run make)" % s.B)
    fcgi = s.copy_bin(os.path.join(build, "webhook.fcgi"))
    s.keys = os.path.join(s.work, "keys.json")
    subprocess.run([sys.executable, os.path.join(bl.BENCH, "signed_schemes.py"),
                    "keys", "--out", s.keys], check=True)
    keys = ss.load_keys(s.keys)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    mach = bl.machine()
    load_start = bl.loadavg()
    steal0 = bl.steal()

    def server(tag):
        """A fresh lighttpd + webhook.fcgi (1 × 32) and inbox: (server,
        its config, its database)."""
        d = os.path.join(s.work, tag)
        os.makedirs(d, exist_ok=True)
        conf, db = os.path.join(d, "webhook.conf"), os.path.join(d, "inbox.db")
        srv = bl.Lighttpd(s, tag, fcgi, 1, prefix=PREFIX, env={
            "WEBHOOK_CONF": conf, "WEBHOOK_THREADS": str(THREADS)})
        ss.write_conf(keys, db, srv.url(PREFIX), conf)
        srv.start()
        # Two deliveries of each row's kind: the config verifies them all
        # (else nothing below is worth running) and the inbox is open.
        for n in names:
            cmd = ([sys.executable, os.path.join(bl.BENCH, "signed.py"), "post",
                    "--conf", conf] if n == "standard" else
                   [sys.executable, os.path.join(bl.BENCH, "signed_schemes.py"),
                    "post", "--keys", s.keys, "--scheme", n])
            r = subprocess.run(cmd + ["--host", "127.0.0.1:%d" % srv.port,
                                      "--path", PREFIX + ("" if n == "standard"
                                                          else "/" + n),
                                      "--count", "2"],
                               capture_output=True, text=True)
            if r.returncode or count(db, n) != 2:
                raise bl.Die("%s: two %s deliveries not both stored: %s %s"
                             % (tag, n, r.stdout.strip(), srv.logs()[-800:]))
        return srv, conf, db

    rows = []
    for c in conns_list:
        for i in range(rounds):
            # Rotate: round i starts i/rounds of the way along the list.
            k = (i * len(names)) // rounds
            order = names[k:] + names[:k]
            tag = "c%d-r%d" % (c, i + 1)
            srv, conf, db = server(tag)
            for n in order:
                path = PREFIX + ("" if n == "standard" else "/" + n)
                label = "%s-%s" % (n, tag)
                rate, bad = s.probe(srv, path, conf, c, label)
                total0 = bl.settled(lambda: count(db))
                r = s.measured(srv, path, conf, c, label, rate,
                               rows=lambda: count(db, n), probe_bad=bad)
                total1 = bl.settled(lambda: count(db))
                if total1 - total0 != r["sent"]:
                    r["valid"] = False
                    r["why"].append("the whole inbox gained %d rows for %d "
                                    "sent" % (total1 - total0, r["sent"]))
                r.update(scheme=n, round=i + 1, position=order.index(n) + 1)
                rows.append(r)
            srv.stop()
            for f in os.listdir(os.path.dirname(db)):
                if f.startswith("inbox.db"):
                    os.unlink(os.path.join(os.path.dirname(db), f))
    # What each row's check costs alone: bench/scheme_cost, the same kind
    # of deliveries parsed once, then verified and their fields extracted
    # as receive.c does, CPU per check (no server, no store).
    cost = {}
    cost_bin = os.path.join(build, "bench", "scheme_cost")
    if os.access(cost_bin, os.X_OK):
        d = os.path.join(s.work, "cost")
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, "webhook.conf")
        ss.write_conf(keys, os.path.join(d, "inbox.db"),
                      "http://127.0.0.1:8080" + PREFIX, conf)
        for n in names:
            path = PREFIX + ("" if n == "standard" else "/" + n)
            s.gen(conf, 8080, path, COST_DELIVERIES, 1)
            r = subprocess.run([cost_bin, conf, n, os.path.join(s.work, "req.0"),
                                str(COST_ROUNDS)], capture_output=True, text=True)
            s.clear_reqs()
            if r.returncode:
                raise bl.Die("%s: %s" % (cost_bin, r.stderr.strip()))
            cost[n] = float(r.stdout.split("us_per_check=")[1])
        s.commands.append("%s/bench/scheme_cost $TMP/cost/webhook.conf NAME "
                          "$TMP/req.0 %d   # %d deliveries of each row's kind"
                          % (s.B, COST_ROUNDS, COST_DELIVERIES))
    else:
        s.say("%s not built (make %s/bench/scheme_cost): no CPU per check"
              % (cost_bin, s.B))
    load_end = bl.loadavg()
    steal1 = bl.steal()
    finished = time.strftime("%H:%M:%S UTC", time.gmtime())

    # ---- the section -----------------------------------------------------
    def row(n, c, i):
        for r in rows:
            if r["scheme"] == n and r["conns"] == c and r["round"] == i:
                return r
        return None

    L = ["## The receiver per provider scheme: run of %s (bench/schemes.py)"
         % started, ""]
    L.append(bl.machine_line(mach, load_start, load_end, finished, steal0,
                             steal1))
    L.append("- Software: webhook.fcgi from git %s (run as a copy), lighttpd "
             "%s, wrk %s."
             % (bl.git_version(), bl.version(["lighttpd", "-v"], r"lighttpd/(\S+)"),
                bl.version(["wrk", "-v"], r"^wrk (\S+)")))
    L.append("- Setup: the supported setup, one lighttpd with \"max-procs\" => "
             "1, webhook.fcgi with WEBHOOK_THREADS=%d and synchronous = FULL; "
             "one config with the default source and a `[source NAME]` per "
             "scheme (bench/signed_schemes.py conf), the standard row at `%s`, "
             "each scheme's at `%s/NAME`. %d round(s) at each connection count, "
             "each on a fresh inbox with every row once, the order rotating "
             "(round r starts (r − 1)/%d of the way along the list); %d s per "
             "row after a %d s probe that sizes the pre-generated, distinct, "
             "signed deliveries (bodies about 1 KiB: each provider's event "
             "shape, filler in a free-text field)."
             % (THREADS, PREFIX, PREFIX, rounds, rounds, s.secs, s.probe_secs))
    L.append("- Valid: no non-2xx, no socket error or timeout, no request ran "
             "short, the worker not replaced, and the rows the source gained "
             "(ids `NAME/…`; the standard row's `msg_…`) = the whole inbox's "
             "gain = deliveries sent.")
    L.append("")
    L.append("What each row sends:")
    L.append("")
    for n in names:
        L.append("- `%s`: %s" % (n, WHAT[n]))
    L.append("")
    L.append("<details><summary>Commands</summary>")
    L.append("")
    L.append("```")
    # One row's command: the others differ only in their connection
    # count, path and requests file (RESULTS.md holds the latest run's
    # figures, not every command line).
    L.extend(s.commands[:1])
    L.append("```")
    L.append("")
    L.append("(%d rows, each this command with its own connection count, "
             "path and requests file.)" % len(s.commands))
    L.append("")
    L.append("</details>")
    L.append("")
    L.append("Latencies: each delivery's own time (bench/run's note). "
             "÷ standard: this row's req/s ÷ the standard row's of the same "
             "round.")
    L.append("")
    L.append("| scheme | conns (wrk -t/-c) | round (position) | req/s | p50 | p99 "
             "| machine CPU per request | rows stored / sent (completed) | "
             "valid | ÷ standard |")
    L.append("|---|---|--:|--:|--:|--:|--:|--:|---|--:|")
    med = {}
    for c in conns_list:
        for n in names:
            ratios = []
            for i in range(1, rounds + 1):
                r, st = row(n, c, i), row("standard", c, i)
                q = r["rps"] / st["rps"] if st and st["rps"] > 0 else 0
                if n != "standard" and r["valid"] and st["valid"]:
                    ratios.append(q)
                L.append("| %s | %d (-t%d -c%d) | %d (%d) | %.0f | %s | %s | "
                         "%.0f µs | %s / %d (%d) | %s | %s |"
                         % (n, c, r["threads"], c, i, r["position"], r["rps"],
                            bl.us(r["p50"]), bl.us(r["p99"]), r["cpu_us"],
                            r["stored"], r["sent"], r["completed"],
                            "yes" if r["valid"] else "**INVALID**",
                            "–" if n == "standard" else "%.2f" % q))
            med[(n, c)] = ratios
    L.append("")
    L.append("Median over the rounds (valid pairs only; goal at %d "
             "connections: ≥ %.1f × standard):" % (GOAL_CONNS, GOAL))
    L.append("")
    L.append("| scheme | " + " | ".join("%d conns: req/s ÷ standard (median), "
                                         "median p99" % c for c in conns_list)
             + " | CPU per check (bench/scheme_cost) | goal |")
    L.append("|---|" + "--:|" * (len(conns_list) + 1) + "---|")
    for n in names:
        cells = []
        for c in conns_list:
            p99 = median([r["p99"] for r in rows
                          if r["scheme"] == n and r["conns"] == c])
            if n == "standard":
                cells.append("%.0f req/s, %s" % (
                    median([r["rps"] for r in rows
                            if r["scheme"] == n and r["conns"] == c]),
                    bl.us(p99)))
            else:
                v = med[(n, c)]
                cells.append("**%.2f** (%s), %s" % (
                    median(v), " ".join("%.2f" % x for x in v) or "none valid",
                    bl.us(p99)))
        if n == "standard":
            met = "–"
        else:
            v = med.get((n, GOAL_CONNS), [])
            met = ("invalid" if len(v) < rounds else
                   "met" if median(v) >= GOAL else "not met")
            if (n, GOAL_CONNS) in med:
                bl.goal("Scheme %s ≥ %.1f × standard req/s at %d connections "
                        "(1 × 32, FULL), median of %d rounds"
                        % (n, GOAL, GOAL_CONNS, len(v)),
                        "%.2f" % median(v), met)
        cells.append("%.1f µs" % cost[n] if n in cost else "–")
        L.append("| %s | %s | %s |" % (n, " | ".join(cells),
                                       "**%s**" % met if met in
                                       ("not met", "invalid") else met))
    if cost:
        L.append("")
        L.append("CPU per check: `bench/scheme_cost` (bench/scheme_cost.c) "
                 "on %d deliveries of each row's kind, each checked %d times "
                 "after one untimed pass: parsed once, then verified and its "
                 "fields extracted as lib/receive/receive.c does (every "
                 "source alike: scheme_verify, then scheme_event_read), the "
                 "thread's CPU time ÷ "
                 "checks; no server, no store. For scale: the machine's CPU "
                 "per request above is the whole request's (wrk, lighttpd, "
                 "webhook.fcgi, the store and its syncs)."
                 % (COST_DELIVERIES, COST_ROUNDS))
    bl.finish(s, results, L, [r for r in rows if r["why"]])
    return 0


if __name__ == "__main__":
    bl.run(main, PROG)
