"""docs/report.md: the report page, metrics.prom and `status --json` against an
inbox filled through the real receiver (plain CGI) and drained by the
real drainer over a simulated day (libfaketime): failures, dead letters,
a blocked object, duplicates and a cron gap.  Every number asserted is
computed here, independently, from the ledger of what was sent and what
the handler saw (tests/record-handler.sh), never read back from the
inbox.
"""
import calendar
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (DRAIN, FAKETIME, FCGI, ROOT, SECRET_A, Sandbox,  # noqa: E402
                     event_body, signed_params, write_conf)

T0 = calendar.timegm((2026, 12, 1, 0, 0, 0))
GAP = range(10, 14)             # hours whose cron runs never happened
MAX_ATTEMPTS = 3
T_END = T0 + 23 * 3600 + 1800   # when the report is made
SHOTS = os.environ.get("REPORT_SHOTS", "/tmp/webhook-report-shots")


def at(t):
    """Environment that starts a process's clock at Unix time t."""
    import time as _t
    return {"LD_PRELOAD": FAKETIME, "TZ": "UTC", "NO_FAKE_STAT": "1",
            "FAKETIME": "@" + _t.strftime("%Y-%m-%d %H:%M:%S", _t.gmtime(t))}


def bucket(t, w=300):
    return t - t % w


class Ledger:
    """What was sent and what the handler saw, with when."""

    def __init__(self):
        self.sent = {}          # id -> (time, type, behave, object id)
        self.duplicates = 0
        self.outs = []          # (time, id, attempt, ok)

    def received_in(self, lo):
        return sum(1 for t, *_ in self.sent.values() if bucket(t) >= lo)

    def outcome(self, wid, attempt):
        behave = self.sent[wid][2]
        if behave == "fail_always":
            return False
        if behave == "fail_once":
            return attempt > 1
        return True


class ReportTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.sb = sb = Sandbox("webhook-report-")
        cls.record = os.path.join(sb.dir, "record")
        cls.out = os.path.join(sb.dir, "site")
        os.mkdir(cls.out)
        write_conf(sb.conf, database=sb.db, secret=SECRET_A,
                   handler="sh %s" % os.path.join(ROOT, "tests", "record-handler.sh"),
                   max_attempts=MAX_ATTEMPTS, retry_base="30m", retry_max="40m",
                   settle="2s")
        cls.L = L = Ledger()
        for h in range(24):
            cls.send_hour(h)
            if h not in GAP:
                cls.drain(T0 + h * 3600 + 600)
        cls.report = cls.cmd(T_END, "report", "--out", cls.out)
        cls.status = cls.cmd(T_END, "status", "--json")
        with open(os.path.join(cls.out, "index.html")) as f:
            cls.html = f.read()
        with open(os.path.join(cls.out, "metrics.prom")) as f:
            cls.prom = f.read()
        del L

    @classmethod
    def tearDownClass(cls):
        cls.sb.cleanup()

    @classmethod
    def post(cls, t, wid, body):
        env = dict(cls.sb.env(), **at(t))
        env.update(dict(signed_params(SECRET_A, wid, body, ts=t, conf=cls.sb.conf)))
        out = subprocess.run([FCGI], input=body, env=env, capture_output=True,
                             timeout=30)
        assert out.stdout.startswith(b"Status: 200"), out
        return out.stdout

    @classmethod
    def send(cls, t, wid, etype, obj, behave=None, created=None):
        extra = {"behave": behave} if behave else {}
        body = event_body(wid, obj_id=obj, etype=etype, created_at=created or
                          "2026-12-01T00:00:00Z", **extra)
        cls.post(t, wid, body)
        cls.L.sent[wid] = (t, etype, behave, obj)
        return body

    @classmethod
    def send_hour(cls, h):
        t = T0 + h * 3600 + 60
        for k in range(4):
            etype = "client.updated" if k % 2 == 0 else "invoice.paid"
            body = cls.send(t + k, "ok_%d_%d" % (h, k), etype, 1000 * h + k)
        # The provider's retry of a delivery whose 200 it did not see.
        assert b"duplicate" in cls.post(t + 5, "ok_%d_0" % h, event_body(
            "ok_%d_0" % h, obj_id=1000 * h, etype="client.updated",
            created_at="2026-12-01T00:00:00Z"))
        cls.L.duplicates += 1
        del body
        if h == 2:
            cls.send(t + 6, "flaky_2", "payment.failed", "f2", "fail_once")
        if h in (3, 7):
            cls.send(t + 6, "poison_%d" % h, "payment.failed", "p%d" % h,
                     "fail_always")
        if h == 22:     # a head that keeps failing, and one behind it
            cls.send(t + 6, "poison_22", "payment.failed", "blk", "fail_always",
                     created="2026-12-01T22:00:00Z")
            cls.send(t + 7, "after_22", "payment.failed", "blk",
                     created="2026-12-01T22:00:01Z")

    @classmethod
    def cmd(cls, t, *args):
        env = dict(os.environ, **cls.sb.env())
        env.update(at(t), RECORD=cls.record)
        return subprocess.run([DRAIN, "-c", cls.sb.conf] + list(args), env=env,
                              capture_output=True, text=True, timeout=120)

    @classmethod
    def drain(cls, t):
        before = cls.lines()
        out = cls.cmd(t, "run", "--report", cls.out)
        assert out.returncode in (0, 1), out
        for line in cls.lines()[len(before):]:
            wid, attempt = line.split("\t")[:2]
            cls.L.outs.append((t, wid, int(attempt),
                               cls.L.outcome(wid, int(attempt))))

    @classmethod
    def lines(cls):
        if not os.path.exists(cls.record):
            return []
        with open(cls.record) as f:
            return f.read().splitlines()

    # ---- the independent counts -------------------------------------------

    def window_lo(self, seconds):
        return bucket(T_END) - seconds + 300

    def outs_in(self, lo, ok=None):
        return [o for o in self.L.outs if bucket(o[0]) >= lo and
                (ok is None or o[3] == ok)]

    def dead_ids(self):
        fails = {}
        for _, wid, _, ok in self.L.outs:
            if not ok:
                fails[wid] = fails.get(wid, 0) + 1
        return sorted(w for w, n in fails.items() if n >= MAX_ATTEMPTS)

    # ---- the page ----------------------------------------------------------

    _dom = None

    def dom(self):
        """The page as headless Chromium parsed it (once per run)."""
        if not shutil.which("chromium"):
            self.skipTest("chromium is not installed (scripts/install-deps)")
        if ReportTest._dom is not None:
            return ReportTest._dom
        out = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--dump-dom", "file://" + os.path.join(self.out, "index.html")],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        ReportTest._dom = out.stdout
        return out.stdout

    def tile(self, dom, name):
        m = re.search(r'id="t-%s"[^>]*><b>([^<]*)</b>' % name, dom)
        self.assertIsNotNone(m, name)
        return m.group(1)

    def table(self, dom, tid):
        p = TableParser(tid)
        p.feed(dom)
        return p.rows

    def test_report_exits_0_and_is_self_contained(self):
        self.assertEqual(self.report.returncode, 0, self.report.stderr)
        self.assertNotIn("<script", self.html)
        self.assertIsNone(re.search(r'(src|href)="?(https?:)?//', self.html))
        for wid in self.L.sent:       # ids appear; bodies never do
            self.assertNotIn('"behave"', self.html)
        self.assertEqual([f for f in os.listdir(self.out) if ".tmp" in f], [])

    def test_report_out_makes_its_directory(self):
        # docs/report.md: DIR is made when missing, its parent must exist.
        fresh = os.path.join(self.sb.dir, "fresh-report")
        out = self.cmd(T_END, "report", "--out", fresh)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(sorted(os.listdir(fresh)), ["index.html", "metrics.prom"])
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(os.stat(fresh).st_mode & 0o777, 0o755 & ~umask)
        deep = os.path.join(self.sb.dir, "no-parent", "report")
        out = self.cmd(T_END, "report", "--out", deep)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("no-parent/report: No such file or directory", out.stderr)

    def test_tiles(self):
        dom = self.dom()
        h1, d1 = self.window_lo(3600), self.window_lo(86400)
        self.assertEqual(self.tile(dom, "ready"), "0")
        self.assertEqual(self.tile(dom, "retry"), "1")      # poison_22
        self.assertEqual(self.tile(dom, "blocked"), "1")    # object blk
        self.assertEqual(self.tile(dom, "dead"), str(len(self.dead_ids())))
        self.assertEqual(self.tile(dom, "received-1h"), str(self.L.received_in(h1)))
        self.assertEqual(self.tile(dom, "received-24h"), str(self.L.received_in(d1)))
        self.assertEqual(self.tile(dom, "handled-1h"), str(len(self.outs_in(h1, True))))
        self.assertEqual(self.tile(dom, "handled-24h"), str(len(self.outs_in(d1, True))))
        self.assertEqual(self.tile(dom, "failed-1h"), str(len(self.outs_in(h1, False))))
        self.assertEqual(self.tile(dom, "failed-24h"), str(len(self.outs_in(d1, False))))
        self.assertEqual(self.tile(dom, "duplicates"), "n/a")   # docs/report.md
        # The last successful run was at 23:10, 20 minutes before.
        m = re.search(r'id="last-success"[^>]*data-age-s="(\d+)"', dom)
        self.assertTrue(1190 <= int(m.group(1)) <= 1260, m.group(0))

    def test_runs_strip_shows_the_cron_gap(self):
        dom = self.dom()
        self.assertIn('id="runs-n">%d<' % (24 - len(GAP)), dom)
        gap = int(re.search(r'id="runs-gap" data-s="(\d+)"', dom).group(1))
        self.assertTrue(5 * 3600 - 120 <= gap <= 5 * 3600, gap)

    def test_failures_by_class(self):
        rows = {r[0]: r[1:] for r in self.table(self.dom(), "failures")[1:]}
        want = {}
        for lo_i, lo in enumerate((self.window_lo(3600), self.window_lo(86400),
                                   self.window_lo(7 * 86400))):
            for t, wid, _, ok in self.outs_in(lo, False):
                cls = "exit 3" if self.L.sent[wid][2] == "fail_always" else "exit 4"
                want.setdefault(cls, [0, 0, 0])[lo_i] += 1
        self.assertEqual(rows, {k: [str(x) for x in v] for k, v in want.items()})

    def test_blocked_and_dead_tables(self):
        dom = self.dom()
        blocked = self.table(dom, "blocked")[1:]
        self.assertEqual([(r[0], r[1], r[2], r[4]) for r in blocked],
                         [("client:blk", "poison_22", "2", "1")])
        self.assertIn("requeue --state pending --object &#39;client:blk&#39;",
                      self.html)
        dead = self.table(dom, "dead")[1:]
        self.assertEqual(sorted(r[0] for r in dead), self.dead_ids())
        self.assertTrue(all(r[5] == r[6] == "exit 3" and
                            r[3] == str(MAX_ATTEMPTS) for r in dead), dead)
        self.assertIn("webhook-drain requeue --state dead --yes", dom)

    def test_types(self):
        rows = {r[0]: r[1:5] for r in self.table(self.dom(), "types")[1:]}
        d1 = self.window_lo(86400)
        want = {}
        for t, wid, _, ok in self.outs_in(d1):
            e = want.setdefault(self.L.sent[wid][1], [0, 0, 0, 0])
            e[0 if ok else 1] += 1
            e[2 if ok else 3] += 1
        self.assertEqual(rows, {k: [str(x) for x in v] for k, v in want.items()})

    def test_screenshot(self):
        if not shutil.which("chromium"):
            self.skipTest("chromium is not installed")
        os.makedirs(SHOTS, exist_ok=True)
        for name, size in (("phone", "412,2600"), ("desktop", "1100,4400")):
            shot = os.path.join(SHOTS, "report-%s.png" % name)
            out = subprocess.run(
                ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                 "--hide-scrollbars", "--window-size=" + size,
                 "--screenshot=" + shot,
                 "file://" + os.path.join(self.out, "index.html")],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr[-2000:])
            self.assertGreater(os.path.getsize(shot), 10000)

    # ---- metrics.prom ------------------------------------------------------

    def metric(self, name):
        m = re.search(r"^%s (\S+)$" % re.escape(name), self.prom, re.M)
        self.assertIsNotNone(m, name)
        return float(m.group(1))

    def test_promtool_accepts_it(self):
        if not shutil.which("promtool"):
            self.skipTest("promtool is not installed (Debian prometheus)")
        out = subprocess.run(["promtool", "check", "metrics"], input=self.prom,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_metric_values(self):
        outs = self.L.outs
        fails = [o for o in outs if not o[3]]
        dead = self.dead_ids()
        self.assertEqual(self.metric("webhook_received_total"), len(self.L.sent))
        self.assertEqual(self.metric('webhook_deliveries_total{outcome="done"}'),
                         sum(1 for o in outs if o[3]))
        self.assertEqual(self.metric('webhook_deliveries_total{outcome="dead"}'),
                         len(dead))
        self.assertEqual(self.metric('webhook_deliveries_total{outcome="retry"}'),
                         len(fails) - len(dead))
        self.assertEqual(self.metric('webhook_drain_runs_total{result="ok"}') +
                         self.metric('webhook_drain_runs_total{result="failures"}'),
                         24 - len(GAP))
        self.assertEqual(self.metric('webhook_queue_events{state="dead"}'), len(dead))
        self.assertEqual(self.metric('webhook_queue_events{state="pending"}'), 2)
        self.assertEqual(self.metric("webhook_handler_seconds_count"), len(outs))
        self.assertEqual(self.metric("webhook_wait_seconds_count"),
                         sum(1 for o in outs if o[2] == 1))
        # Events of the cron gap waited four hours and more.
        self.assertEqual(self.metric('webhook_wait_seconds_bucket{le="3600"}'),
                         sum(1 for o in outs if o[2] == 1 and
                             o[0] - self.L.sent[o[1]][0] <= 3600))
        self.assertEqual(self.metric("webhook_last_success_timestamp_seconds") // 60,
                         (T0 + 23 * 3600 + 600) // 60)

    # ---- status --json -----------------------------------------------------

    def test_status_json_against_the_schema(self):
        self.assertEqual(self.status.returncode, 1)     # dead letters: attention
        doc = json.loads(self.status.stdout)
        with open(os.path.join(ROOT, "docs", "status.schema.json")) as f:
            schema = json.load(f)
        try:
            import jsonschema
            jsonschema.validate(doc, schema)
        except ImportError:
            for k in schema["required"]:
                self.assertIn(k, doc)
        self.assertEqual(doc["version"], 1)
        self.assertEqual(doc["queue"]["dead"], len(self.dead_ids()))
        self.assertEqual(doc["blocked_objects"], 1)
        self.assertFalse(doc["health"]["ok"])
        self.assertEqual(doc["windows"]["1h"]["received"],
                         self.L.received_in(self.window_lo(3600)))
        self.assertEqual(doc["windows"]["24h"]["failed"],
                         len(self.outs_in(self.window_lo(86400), False)))
        self.assertGreater(doc["db_bytes"], 0)


class TableParser(html.parser.HTMLParser):
    """The cells of the <table id=ID>, row by row."""

    def __init__(self, tid):
        super().__init__()
        self.tid, self.inside, self.rows, self.cell = tid, False, [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == self.tid:
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif self.inside and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


if __name__ == "__main__":
    unittest.main(verbosity=2)
