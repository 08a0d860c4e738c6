"""Shared pieces of bench/drain.py and bench/php.py (the same method as
bench/run, in Python).

- Session: a temporary directory, a log directory under build/bench/logs/,
  and the cleanup of everything started (lighttpd and its FastCGI workers,
  wrk, any other process), on exit, on an exception and on SIGINT/SIGTERM/
  SIGHUP, by process id only.
- Lighttpd: lighttpd -D on 127.0.0.1, a free port, one mod_fastcgi
  responder spawned with "bin-path" and "max-procs".
- Session.probe / Session.measured: wrk with distinct, correctly signed
  deliveries (bench/signed.py gen writes them, bench/requests.lua hands each
  out once), sized by a short probe, validated as bench/run does: no non-2xx
  answer, no socket error or timeout, no pre-generated request ran short,
  no worker replaced, and the database gained exactly one row per delivery
  sent.
"""
import atexit
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
TESTS = os.path.join(ROOT, "tests")

# Requests generated per second of measured run, over the probe's rate (the
# machine is noisy: a measured run may go faster than its probe), as in
# bench/run.
MARGIN = 1.6
# Requests in a first probe; four times more while a probe runs short.
PROBE_REQUESTS = int(os.environ.get("BENCH_PROBE_REQUESTS", "20000"))
SETTLE_MAX = 10     # seconds to wait for a row count to stop changing


def env_int(name, default, lo=1, hi=None):
    v = os.environ.get(name, "")
    if v == "":
        return default
    if not v.isdigit() or int(v) < lo or (hi is not None and int(v) > hi):
        sys.exit("%s=%s: not a whole number in %d..%s" % (name, v, lo, hi or "∞"))
    return int(v)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def load1():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def busy():
    """Jiffies all CPUs spent running (user, nice, system, irq, softirq),
    as bench/run's busy()."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                v = [int(x) for x in line.split()[1:]]
                return v[0] + v[1] + v[2] + v[5] + v[6]
    return 0


def steal():
    """(steal jiffies, all jiffies) of all CPUs."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                v = [int(x) for x in line.split()[1:]]
                return v[7], sum(v)
    return 0, 0


def steal_pct(a, b):
    d = b[1] - a[1]
    return "%.1f" % (100.0 * (b[0] - a[0]) / d) if d > 0 else "0.0"


def machine_line(mach, load_start, load_end, finished, steal0, steal1):
    """The "- Machine: …" line every results section starts with."""
    return ("- Machine: %s × %s (nproc %s), %s; load average %s at start, %s at "
            "the end (%s); CPU steal %s %% over the run."
            % (mach["nproc"], mach["model"], mach["nproc"], mach["kernel"],
               load_start, load_end, finished, steal_pct(steal0, steal1)))


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": subprocess.run(["nproc"], capture_output=True,
                                text=True).stdout.strip(),
        "model": model,
        "kernel": " ".join(os.uname()[i] for i in (0, 2)),
    }


def version(cmd, pattern, group=1):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
        out = r.stdout + r.stderr
    except OSError:
        return "?"
    m = re.search(pattern, out, re.M)
    return m.group(group) if m else "?"


def fs_of(path):
    out = subprocess.run(["df", "-PT", path], capture_output=True,
                         text=True).stdout.splitlines()
    if len(out) < 2:
        return "?"
    f = out[1].split()
    return "%s (%s)" % (f[1], f[0])


def git_version():
    v = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "-C", ROOT, "status", "--porcelain"],
                      capture_output=True, text=True).stdout.strip():
        v += " + uncommitted changes"
    return v


def us(u):
    """'180 µs' or '12.3 ms' from microseconds."""
    u = float(u)
    if u < 1000:
        return "%d µs" % u
    if u < 100000:
        return "%.2f ms" % (u / 1000)
    return "%.0f ms" % (u / 1000)


def ratio(a, b, fmt="%.2f"):
    a, b = float(a), float(b)
    return fmt % (a / b) if b > 0 else "-"


def threads_for(conns, want):
    """Largest t <= want that divides conns (wrk gives each thread
    conns/threads connections, rounded down)."""
    t = min(want, conns)
    while conns % t:
        t -= 1
    return t


def count_rows(db, table):
    con = sqlite3.connect(db, timeout=10)
    try:
        return con.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
    finally:
        con.close()


def settled_rows(db, table):
    """The row count of a SQLite table once it has stopped changing."""
    return settled(lambda: count_rows(db, table))


def settled(count):
    """count() once it has stopped changing (requests in flight when wrk
    stopped are still being answered)."""
    prev = -1
    n = 0
    for _ in range(SETTLE_MAX * 5):
        n = count()
        if n == prev:
            break
        prev = n
        time.sleep(0.2)
    return n


def write_conf(path, prog, keys):
    """A webhook.conf only its owner reads (it holds the secret): "#
    generated by prog", then `key = value` for each (key, value) of keys
    in order.  Makes the directory."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = os.umask(0o077)
    try:
        with open(path, "w") as f:
            f.write("# generated by %s\n" % prog)
            for k, v in keys:
                f.write("%s = %s\n" % (k, v))
    finally:
        os.umask(old)
    return path


def secret_line(conf):
    with open(conf) as f:
        for line in f:
            if line.split("=", 1)[0].strip() == "secret":
                return line.split("=", 1)[1].strip()
    raise ValueError(conf + ": no secret")


class Die(Exception):
    pass


class Lighttpd:
    """lighttpd -D on 127.0.0.1 with one mod_fastcgi responder.

    prefix     the fastcgi.server key: "/webhook" (check-local disabled)
               or ".php" (check-local: the script must be in htdocs)
    binary     "bin-path"; worker_exe is what /proc/PID/exe of a worker
               resolves to (only such processes are ever signalled)
    env        "bin-environment"
    """

    def __init__(self, session, name, binary, procs, prefix="/webhook",
                 env=None, htdocs=None, worker_exe=None):
        self.s = session
        self.name = name
        self.binary = binary
        self.procs = procs
        self.prefix = prefix
        self.worker_exe = os.path.realpath(worker_exe or binary)
        self.d = os.path.join(session.work, name)
        os.makedirs(os.path.join(self.d, "htdocs"), exist_ok=True)
        os.makedirs(os.path.join(self.d, "upload"), exist_ok=True)
        for src, dst in (htdocs or {}).items():
            shutil.copy(src, os.path.join(self.d, "htdocs", dst))
        self.port = free_port()
        self.proc = None
        self.seen = set()
        envs = ""
        if env:
            envs = ',\n\t\t"bin-environment" => ( %s )' % ", ".join(
                '"%s" => "%s"' % kv for kv in env.items())
        self.conf = os.path.join(self.d, "lighttpd.conf")
        with open(self.conf, "w") as f:
            f.write("""# generated by %s
server.modules = ( "mod_fastcgi" )
server.bind = "127.0.0.1"
server.port = %d
server.document-root = "%s/htdocs"
server.errorlog = "%s/error.log"
server.upload-dirs = ( "%s/upload" )
fastcgi.server = ( "%s" => ((
		"bin-path" => "%s",
		"socket" => "%s/fcgi.sock",
		"max-procs" => %d,
		"check-local" => "%s"%s
	)) )
""" % (session.prog, self.port, self.d, self.d, self.d, prefix, binary,
                self.d, procs, "disable" if prefix.startswith("/") else "enable",
                envs))

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def start(self):
        self.out = open(os.path.join(self.d, "stderr.log"), "ab")
        self.proc = subprocess.Popen(["lighttpd", "-D", "-f", self.conf],
                                     stdout=self.out, stderr=self.out)
        self.s.servers.append(self)
        for _ in range(100):
            if self.proc.poll() is not None:
                raise Die("lighttpd for %s exited at start: %s"
                          % (self.name, self.logs()))
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                if len(self.workers()) >= self.procs:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        w = self.workers()
        if len(w) < self.procs:
            raise Die("lighttpd for %s: %d of %d workers after 10 s"
                      % (self.name, len(w), self.procs))
        self.s.say("%s: lighttpd %d on 127.0.0.1:%d, workers %s"
                   % (self.name, self.proc.pid, self.port,
                      " ".join(map(str, w))))

    def workers(self):
        """PIDs of lighttpd's children (the FastCGI workers)."""
        if self.proc is None:
            return []
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)],
                             capture_output=True, text=True).stdout
        w = sorted(int(p) for p in out.split())
        self.seen.update(w)
        return w

    def logs(self):
        text = ""
        for f in ("stderr.log", "error.log"):
            try:
                with open(os.path.join(self.d, f), errors="replace") as fh:
                    text += fh.read()
            except OSError:
                pass
        return text

    def loglines(self):
        return self.logs().splitlines()

    def stop(self):
        if self.proc is None:
            return
        self.workers()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in sorted(self.seen):
            # Only a process still running the responder we started.
            try:
                if os.path.realpath("/proc/%d/exe" % p) != self.worker_exe:
                    continue
                os.kill(p, signal.SIGTERM)
                time.sleep(0.2)
                if os.path.realpath("/proc/%d/exe" % p) == self.worker_exe:
                    os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        self.out.close()
        for f in ("stderr.log", "error.log", "lighttpd.conf"):
            src = os.path.join(self.d, f)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(self.s.logdir,
                                              "%s.%s" % (self.name, f)))
        self.proc = None


class Session:
    def __init__(self, prog, tag):
        self.prog = prog
        self.tag = tag
        self.B = os.environ.get("B", "build")
        self.outdir = os.path.join(ROOT, self.B, "bench")
        self.stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.logdir = os.path.join(self.outdir, "logs", "%s-%s" % (self.stamp, tag))
        os.makedirs(self.logdir, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix="webhook-bench-%s." % tag)
        self.servers = []
        self.procs = []        # other Popen objects we started
        self.commands = []     # what ran, for the results
        self.finalizers = []   # called at cleanup, after the servers stop
        self.want_threads = env_int("BENCH_THREADS", 2)
        self.secs = env_int("BENCH_SECONDS", 10, 1, 200)
        self.probe_secs = env_int("BENCH_PROBE_SECONDS", 2)
        atexit.register(self.cleanup)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        sys.exit(128 + signum)

    def say(self, msg):
        print("%s: %s" % (self.prog, msg), file=sys.stderr, flush=True)

    def popen(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def stop_proc(self, p, grace=5):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def cleanup(self):
        for p in reversed(self.procs):
            try:
                self.stop_proc(p)
            except Exception:
                pass
        for s in reversed(self.servers):
            try:
                s.stop()
            except Exception as e:
                print("%s: stopping %s: %s" % (self.prog, s.name, e),
                      file=sys.stderr)
        while self.finalizers:
            try:
                self.finalizers.pop()()
            except Exception as e:
                print("%s: cleanup: %s" % (self.prog, e), file=sys.stderr)
        shutil.rmtree(self.work, ignore_errors=True)

    def copy_bin(self, path):
        """Run a copy: a `make` during the run must not change the binary
        under some runs and not others."""
        d = os.path.join(self.work, "bin")
        os.makedirs(d, exist_ok=True)
        dst = os.path.join(d, os.path.basename(path))
        shutil.copy2(path, dst)
        return dst

    def tmp(self, text):
        return text.replace(self.work, "$TMP")

    # ---- wrk -------------------------------------------------------------

    def gen(self, conf, port, path, count, threads):
        subprocess.run([sys.executable, os.path.join(BENCH, "signed.py"), "gen",
                        "--conf", conf, "--host", "127.0.0.1:%d" % port,
                        "--path", path, "--count", str(count),
                        "--threads", str(threads),
                        "--out", os.path.join(self.work, "req")],
                       check=True, stdout=subprocess.DEVNULL)

    def clear_reqs(self):
        for f in os.listdir(self.work):
            if f.startswith("req."):
                os.unlink(os.path.join(self.work, f))

    def wrk(self, out, threads, conns, secs, url):
        args = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % secs,
                "--timeout", "30s", "--latency", "-s",
                os.path.join(BENCH, "requests.lua"), url]
        env = dict(os.environ, BENCH_REQUESTS=os.path.join(self.work, "req"),
                   BENCH_CONNECTIONS=str(conns))
        with open(out, "wb") as f:
            p = self.popen(args, stdout=f, stderr=subprocess.STDOUT, env=env,
                           cwd=ROOT)
            rc = p.wait()
        self.procs.remove(p)
        text = open(out, errors="replace").read()
        m = re.search(r"^BENCH (.*)$", text, re.M)
        if rc != 0 or not m:
            raise Die("wrk failed (see %s):\n%s" % (out, text))
        w = {}
        for kv in m.group(1).split():
            k, v = kv.split("=", 1)
            w[k] = float(v) if "." in v else int(v)
        return w

    def probe(self, server, path, conf_for_gen, conns, label):
        """A short run that sizes the measured one; a probe that runs out
        of requests idles and so understates: again with four times as
        many.  Returns (req/s, non-2xx or socket errors)."""
        threads = threads_for(conns, self.want_threads)
        n = PROBE_REQUESTS
        while True:
            self.gen(conf_for_gen, server.port, path, n, threads)
            w = self.wrk(os.path.join(self.logdir, label + ".probe.txt"),
                         threads, conns, self.probe_secs, server.url(path))
            self.clear_reqs()
            if w["exhausted"] == 0 or n >= PROBE_REQUESTS * 64:
                break
            n *= 4
        return w["rps"], w["non2xx"] + w["connect"] + w["read"] + w["write"]

    def measured(self, server, path, conf_for_gen, conns, label, rate,
                 db=None, table=None, probe_bad=0, before_wrk=None,
                 after_wrk=None, count=None, rows=None):
        """Generate enough distinct deliveries for self.secs at `rate`
        (× MARGIN), run wrk once, validate.  before_wrk() runs right
        before wrk; after_wrk() right after it and returns a list of
        reasons the run is invalid.  The stored rows are counted in the
        SQLite file db's table, or by rows() (any other database).
        Returns a row (dict)."""
        if rows is None and db:
            rows = lambda: count_rows(db, table)  # noqa: E731
        threads = threads_for(conns, self.want_threads)
        if count is None:
            count = int(rate * self.secs * MARGIN + 100 * conns)
        why = []
        logs0 = len(server.loglines())
        workers0 = server.workers()
        before = settled(rows) if rows else 0
        self.gen(conf_for_gen, server.port, path, count, threads)
        self.say("%s: %d threads, %d connections, %ds, %d requests ready "
                 "(probe: %.0f req/s)" % (label, threads, conns, self.secs,
                                          count, rate))
        if before_wrk:
            before_wrk()
        load_before = load1()
        busy0 = busy()
        w = self.wrk(os.path.join(self.logdir, label + ".txt"), threads,
                     conns, self.secs, server.url(path))
        load_after = load1()
        busy1 = busy()
        extra = after_wrk() if after_wrk else []
        self.clear_reqs()
        stored = None
        if rows:
            stored = settled(rows) - before
        logs = server.loglines()[logs0:]
        with open(os.path.join(self.logdir, label + ".server.log"), "w") as f:
            f.write("\n".join(logs) + ("\n" if logs else ""))
        workers1 = server.workers()
        valid = True
        if w["non2xx"]:
            valid = False
            why.append("%d non-2xx" % w["non2xx"])
        if w["connect"] + w["read"] + w["write"]:
            valid = False
            why.append("socket errors connect %d read %d write %d"
                       % (w["connect"], w["read"], w["write"]))
        if w["timeout"]:
            valid = False
            why.append("%d over 30 s" % w["timeout"])
        # requests.lua undid wrk's coordinated-omission correction (p50 and
        # p99 below are each delivery's own time): the samples it recovered
        # must be exactly the responses wrk timed.
        if w["raw_n"] != w["requests"] - w["timeout"]:
            valid = False
            why.append("latency histogram: recovered %d samples of %d"
                       % (w["raw_n"], w["requests"] - w["timeout"]))
        if w["exhausted"]:
            valid = False
            why.append("ran out of requests, stopped early")
        if rows and stored != w["sent"]:
            valid = False
            why.append("rows stored %d != sent %d" % (stored, w["sent"]))
        if probe_bad:
            valid = False
            why.append("the probe before it had %d non-2xx or socket errors"
                       % probe_bad)
        if workers0 != workers1:
            valid = False
            why.append("workers changed during the run (%s -> %s)"
                       % (workers0, workers1))
        if extra:
            valid = False
            why.extend(extra)
        if logs:
            why.append("%d server log lines during the run" % len(logs))
        self.say("%s: %.0f req/s, p50 %dus, p99 %dus (wrk-corrected %dus), "
                 "non-2xx %d, rows %s/%d (completed %d), valid %s%s"
                 % (label, w["rps"], w["raw_p50_us"], w["raw_p99_us"],
                    w["p99_us"], w["non2xx"],
                    "-" if stored is None else stored, w["sent"],
                    w["requests"], "yes" if valid else "no",
                    " (%s)" % "; ".join(why) if why else ""))
        self.commands.append(
            "BENCH_REQUESTS=$TMP/req BENCH_CONNECTIONS=%d wrk -t%d -c%d -d%ds --timeout 30s "
            "--latency -s bench/requests.lua %s   # %s"
            % (conns, threads, conns, self.secs, server.url(path), label))
        return {"label": label, "server": server.name, "conns": conns,
                "threads": threads, "rps": w["rps"],
                "p50": w["raw_p50_us"], "p99": w["raw_p99_us"],
                "p999": w["raw_p999_us"], "max": w["raw_max_us"],
                "p99_wrk": w["p99_us"], "p999_wrk": w["p999_us"],
                # The whole machine's CPU per completed request, as
                # bench/run's column.
                "cpu_us": ((busy1 - busy0) / os.sysconf("SC_CLK_TCK") * 1e6
                           / w["requests"] if w["requests"] else 0), "non2xx": w["non2xx"], "stored": stored,
                "sent": w["sent"], "completed": w["requests"], "valid": valid,
                "why": why, "logs": logs[:5], "load": "%s→%s" % (load_before,
                                                                 load_after)}


def row_notes(rows):
    """Markdown notes for rows that have any."""
    out = []
    for r in rows:
        if not r["why"]:
            continue
        out.append("- %s: %s" % (r["label"], "; ".join(r["why"])))
        if r["logs"]:
            out.append("")
            out.append("  ```")
            out.extend("  " + line for line in r["logs"])
            out.append("  ```")
    return out


def finish(session, results, lines, rows):
    """Close a section: notes on the rows that have any, then append it to
    the results file and say where it went."""
    notes = row_notes(rows)
    if notes:
        lines += ["", "Notes on rows:", ""] + notes
    lines.append("")
    append_results(results, "\n".join(lines) + "\n")
    session.say("results appended to %s; logs in %s" % (results, session.logdir))


class Postgres:
    """The PostgreSQL a bench writes to, a new database per row.

    spec "postgresql": a server started here as the tests start theirs
    (tests/pgserver.py: initdb in a temporary directory as the unprivileged
    user webhook-pg, a Unix socket in that directory only, fsync = on,
    synchronous_commit = on), stopped at the session's cleanup.  A
    postgresql:// URI: a server the user runs, whose role may CREATE
    DATABASE; the databases made here are dropped at cleanup.
    """

    def __init__(self, session, spec):
        sys.path.insert(0, TESTS)
        import pgserver
        self.pg = pgserver
        self.server = None
        self.made = []
        self.session = session
        if spec in ("postgresql", "postgres"):
            if not pgserver.available():
                raise Die("no PostgreSQL server binaries in %s (Debian's "
                          "postgresql; scripts/install-deps)" % pgserver.PG_BIN)
            self.server = pgserver.PgServer(prefix="webhook-bench-pg-")
            session.finalizers.append(self.server.cleanup)
            self.base = self.server.uri("postgres")
            self.where = ("started by this bench (tests/pgserver.py: a Unix "
                          "socket in a temporary directory, on %s)"
                          % fs_of(self.server.dir))
        elif spec.startswith(("postgresql://", "postgres://")):
            self.base = spec
            self.where = "the server --database names"
            session.finalizers.append(self.drop_all)
        else:
            raise Die("--database: sqlite, postgresql (a server started "
                      "here) or a postgresql:// URI")
        self.version = self.value("SHOW server_version")
        self.settings = ", ".join(
            "%s = %s" % (k, self.value("SHOW " + k))
            for k in ("fsync", "synchronous_commit", "wal_sync_method",
                      "shared_buffers"))

    def value(self, sql, uri=None):
        return self.pg.execute(uri or self.base, sql).strip()

    def new_database(self, label):
        """The URI of a new, empty database for one row."""
        name = "bench_%d_%d_%s" % (os.getpid(), len(self.made),
                                   re.sub(r"\W", "_", label))[:63]
        self.pg.execute(self.base, "CREATE DATABASE %s" % name)
        self.made.append(name)
        return self.uri(name)

    def uri(self, name):
        from urllib.parse import urlsplit
        u = urlsplit(self.base)     # (urlunsplit drops an empty host's //)
        return "%s://%s/%s%s" % (u.scheme, u.netloc, name,
                                 "?" + u.query if u.query else "")

    def count(self, uri, sql):
        """The single number sql returns."""
        return int(self.value(sql, uri) or 0)

    def drop_all(self):
        for name in self.made:
            self.pg.execute(self.base, "DROP DATABASE IF EXISTS %s" % name)
        self.made = []


def goal(what, now, met):
    """Note one goal against this run's figure in the file BENCH_GOALS
    names (bench/run sets it; bench/goals.py turns the notes into the
    results' "Goals against now" table); nothing when it is not set."""
    path = os.environ.get("BENCH_GOALS")
    if not path:
        return
    with open(path, "a") as f:
        f.write("%s\t%s\t%s\n" % (what, now, met))


def run(main, prog):
    """The entry point of a bench script: a Die is one line on stderr."""
    try:
        sys.exit(main())
    except Die as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        sys.exit(1)


def append_results(path, text):
    fresh = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a") as f:
        if fresh:
            f.write("# Benchmarks\n\n")
        f.write(text)
