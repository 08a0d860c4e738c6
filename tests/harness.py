"""Shared pieces of the end-to-end tests: a real lighttpd on 127.0.0.1 with
webhook.fcgi behind it, a Standard Webhooks signer written independently of
ours (Python's hmac), a minimal FastCGI client for what no web server sends
on demand (repeated parameters, no CONTENT_LENGTH), and inbox readers.

Everything started here listens on 127.0.0.1 and is stopped by the test
that started it.
"""
import base64
import contextlib
import fcntl
import glob
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import tempfile
import termios
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
FCGI = os.path.join(BUILD, "webhook.fcgi")
DRAIN = os.path.join(BUILD, "webhook-drain")
SANITIZED = "san" in os.path.basename(BUILD)

# WEBHOOK_TEST_BACKEND=postgresql: each Sandbox's inbox is a database on a
# real PostgreSQL (tests/pgserver.py, one server per test process) instead
# of a SQLite file; tests that are about files (moved, read-only, locked
# by sqlite3) are skipped there with @sqlite_only (tests/run says so).
# WEBHOOK_TEST_BACKEND=pgbouncer: the same, the programs reaching the
# server through a PgBouncer in transaction mode (tests/pgbouncer.py); the
# tests' own queries go to the server directly (Sandbox.direct).
BACKEND = os.environ.get("WEBHOOK_TEST_BACKEND", "sqlite")
PG = BACKEND in ("postgresql", "pgbouncer")


def sqlite_only(why):
    """Skip a test on the PostgreSQL backend: it is about SQLite files."""
    import unittest
    return unittest.skipIf(PG, "SQLite only: " + why)


SECRET_A = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SECRET_B = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"


def key_bytes(secret):
    s = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    return base64.b64decode(s + "=" * (-len(s) % 4))


def fingerprint(secret):
    """The receiver's fingerprint: BLAKE2b-64 of the key bytes, hex."""
    return hashlib.blake2b(key_bytes(secret), digest_size=8).hexdigest()


def sign(secret, msg_id, ts, body):
    """Standard Webhooks v1 over id.timestamp.body (bytes)."""
    content = msg_id.encode() + b"." + str(ts).encode() + b"." + body
    mac = hmac.new(key_bytes(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def event_body(msg_id, obj_id=1, kind="client", etype="client.updated",
               created_at="2026-11-30T10:00:00Z", updated_at=None, **extra):
    data = {"object": kind, "id": obj_id}
    if updated_at:
        data["updated_at"] = updated_at
    data.update(extra)
    return json.dumps({"id": msg_id, "type": etype, "createdAt": created_at,
                       "data": data}).encode()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_conf(path, **keys):
    """keys: name -> value or list of values (repeatable keys)."""
    lines = []
    for k, v in keys.items():
        for one in (v if isinstance(v, list) else [v]):
            lines.append("%s = %s" % (k, one))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)   # an edit the receiver sees atomically


class Sandbox:
    """A temporary directory holding a config, a database and logs."""

    def __init__(self, prefix="webhook-e2e-"):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.conf = os.path.join(self.dir, "webhook.conf")
        if PG:
            import pgserver
            self.pg = pgserver.shared()
            self.db = self.direct = self.pg.new_database()
            if BACKEND == "pgbouncer":
                import pgbouncer
                self.db = pgbouncer.shared().uri(
                    self.direct.split("/")[3].split("?")[0])
        else:
            self.pg = None
            self.db = self.direct = os.path.join(self.dir, "inbox.db")
        self.san_dir = os.path.join(self.dir, "san")
        os.mkdir(self.san_dir)

    def env(self):
        """Environment for our binaries: sanitizer reports land in files
        that sanitizer_reports() collects."""
        return {
            # verify_asan_link_order=0: libfaketime is LD_PRELOADed in
            # the clock tests, ahead of the ASan runtime.
            "ASAN_OPTIONS": "log_path=%s/asan:detect_leaks=1:verify_asan_link_order=0" % self.san_dir,
            "UBSAN_OPTIONS": "log_path=%s/ubsan:print_stacktrace=1:halt_on_error=1" % self.san_dir,
            "TSAN_OPTIONS": "log_path=%s/tsan" % self.san_dir,
        }

    def sanitizer_reports(self):
        out = []
        for p in glob.glob(os.path.join(self.san_dir, "*")):
            with open(p, errors="replace") as f:
                out.append(f.read())
        return out

    def rows(self, sql="SELECT * FROM events", args=()):
        if PG:
            import pgserver
            for a in args:   # sqlite3's ?, with the tests' own values
                sql = sql.replace("?", "'%s'" % str(a).replace("'", "''"), 1)
            return pgserver.query(self.direct, sql.replace("rowid", "seq"))
        if not os.path.exists(self.db):
            return []
        con = sqlite3.connect(self.db, timeout=10)
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute(sql, args)]
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return []
            raise
        finally:
            con.close()

    def count(self):
        return len(self.rows("SELECT webhook_id FROM events"))

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def drain_env(sandbox, record=None, offset=None):
    """The environment webhook-drain runs with in a test: the sandbox's
    sanitizer settings; offset: seconds to move its clock forward with
    libfaketime (no sleeping in tests); record: the file tests' handlers
    append to ($RECORD)."""
    env = dict(os.environ, **sandbox.env())
    if record:
        env["RECORD"] = record
    if offset:
        # NO_FAKE_STAT: a clock step moves the clock, not the times of
        # files already written; libfaketime would shift every mtime the
        # process stats, and the inbox's stamps compare mtimes across
        # processes (docs/durability.md).
        env.update(LD_PRELOAD=FAKETIME, FAKETIME="+%ds" % offset,
                   FAKETIME_DONT_RESET="1", NO_FAKE_STAT="1")
    return env


def run_drain(sandbox, *args, record=None, offset=None, timeout=120):
    """webhook-drain -c CONF ARGS as cron would run it (drain_env)."""
    return subprocess.run([DRAIN, "-c", sandbox.conf] + list(args),
                          env=drain_env(sandbox, record, offset),
                          capture_output=True, text=True, timeout=timeout)


def start_drain(sandbox, *args, record=None):
    """webhook-drain -c CONF ARGS started and left running, its output
    piped (text) for communicate(); wrap it in `with reaped(...)`."""
    return subprocess.Popen([DRAIN, "-c", sandbox.conf] + list(args),
                            env=drain_env(sandbox, record),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@contextlib.contextmanager
def reaped(p):
    """with reaped(Popen(...)) as p: a process the block leaves running
    (an assertion failed mid-way) is killed and waited for on the way out,
    so no test leaves one of its processes behind."""
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def proc_stat(pid):
    """The fields of /proc/PID/stat after the command's name (state, ppid,
    pgrp, ...), or None when there is no such process."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def proc_stats():
    """(pid, proc_stat fields) of every process there is."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = proc_stat(name)
            if fields:
                yield int(name), fields


def gone(pid):
    """True when process pid has ended: no such process, or a zombie
    (an orphan's zombie waits for whoever reaps for init here)."""
    fields = proc_stat(pid)
    return fields is None or fields[0] == "Z"


def group_gone(pgid):
    """True when no live process (zombies aside) is in process group
    pgid: a handler's shell and whatever it started."""
    return not any(f[0] != "Z" and int(f[2]) == pgid for _, f in proc_stats())


def children(pid):
    """The pids of process pid's children, with their command names."""
    kids = {}
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                for k in f.read().split():
                    try:
                        with open("/proc/%s/comm" % k) as c:
                            kids[int(k)] = c.read().strip()
                    except OSError:
                        pass
    except OSError:
        pass
    return kids


def handler_children(pid, timeout=10):
    """The drainer pid's handler processes: its children but its guard.
    The guard is forked under the drainer's name and renames itself
    webhook-guard a moment later (lib/drain/guard.c): a child still named
    webhook-drain is that guard mid-rename (callers ask once the handlers
    have started, so none of them is between fork and exec).  Waits, up
    to timeout seconds, until no child carries the drainer's name, so a
    loaded machine's slow rename is not counted as a second handler."""
    deadline = time.monotonic() + timeout
    while True:
        kids = children(pid)
        if all(c != "webhook-drain" for c in kids.values()) or \
                time.monotonic() > deadline:
            return [k for k, c in kids.items()
                    if c not in ("webhook-guard", "webhook-drain")]
        time.sleep(0.02)


def record_lines(path):
    """What a test's handler appended to path, one hand-out a line: each
    line's tab-separated fields, in order; [] while nothing was."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f]


def end_sandbox(test, sb, *servers):
    """A test's tearDown: stop its servers (None: never started), remove
    the sandbox, and fail on any sanitizer report of what ran in it."""
    for srv in servers:
        if srv is not None:
            srv.stop()
    reports = sb.sanitizer_reports()
    sb.cleanup()
    test.assertEqual(reports, [], "sanitizer reports:\n" + "\n".join(reports))


class Lighttpd:
    """lighttpd -D on 127.0.0.1 with webhook.fcgi behind mod_fastcgi."""

    def __init__(self, sandbox, procs=2, docroot=None, fcgi=FCGI,
                 extra_env=None, conf_param=True, extra_conf=""):
        """extra_conf: more lines for lighttpd.conf (e2e_faults streams
        request bodies with server.stream-request-body)."""
        self.sb = sandbox
        self.port = free_port()
        self.docroot = docroot or os.path.join(sandbox.dir, "htdocs")
        os.makedirs(self.docroot, exist_ok=True)
        self.stderr_path = os.path.join(sandbox.dir, "lighttpd.stderr")
        env = dict(sandbox.env())
        if conf_param:
            env["WEBHOOK_CONF"] = sandbox.conf
        env.update(extra_env or {})
        envs = ", ".join('"%s" => "%s"' % kv for kv in env.items())
        self.conf = os.path.join(sandbox.dir, "lighttpd.conf")
        with open(self.conf, "w") as f:
            f.write("""
server.modules = ("mod_fastcgi")
server.bind = "127.0.0.1"
server.port = %d
server.document-root = "%s"
server.errorlog = "%s/lighttpd.error.log"
server.max-request-size = 4096
fastcgi.server = ("/hook" => ((
    "bin-path" => "%s",
    "socket" => "%s/fcgi.sock",
    "max-procs" => %d,
    "check-local" => "disable",
    "bin-environment" => (%s),
)))
%s
""" % (self.port, self.docroot, sandbox.dir, fcgi, sandbox.dir, procs, envs,
       extra_conf))
        self.err = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(["lighttpd", "-D", "-f", self.conf],
                                     stdout=self.err, stderr=self.err)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError("lighttpd did not start: " + self.log())

    def log(self):
        self.err.flush()
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def workers(self):
        """PIDs of the webhook.fcgi processes lighttpd spawned."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)],
                             capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def post(self, headers, body=b"", method="POST", path="/hook",
             timeout=30, chunked=False):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if chunked:
                c.putrequest(method, path)
                for k, v in headers.items():
                    c.putheader(k, v)
                c.putheader("Transfer-Encoding", "chunked")
                c.endheaders()
                for i in range(0, len(body), 65536):
                    part = body[i:i + 65536]
                    c.send(b"%x\r\n%s\r\n" % (len(part), part))
                c.send(b"0\r\n\r\n")
            else:
                c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def deliver(self, secret, msg_id, body, ts=None, **kw):
        ts = int(time.time()) if ts is None else ts
        h = {"webhook-id": msg_id, "webhook-timestamp": str(ts),
             "webhook-signature": sign(secret, msg_id, ts, body),
             "content-type": "application/json"}
        return self.post(h, body, **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


# --- a minimal FastCGI client (FastCGI 1.0 spec, section 3 and 5) ---------

FCGI_BEGIN_REQUEST, FCGI_END_REQUEST, FCGI_PARAMS, FCGI_STDIN, FCGI_STDOUT = 1, 3, 4, 5, 6


def _record(rtype, content, req_id=1):
    return struct.pack(">BBHHBx", 1, rtype, req_id, len(content), 0) + content


def _nv(name, value):
    def ln(n):
        return struct.pack(">B", n) if n < 128 else struct.pack(">I", n | 0x80000000)
    return ln(len(name)) + ln(len(value)) + name + value


def read_answer(s, req_id=1):
    """One request's answer on a connection that stays open (FCGI_KEEP_CONN):
    its records up to its END_REQUEST; return the stdout bytes."""
    out, buf = b"", b""

    def at_least(n):
        nonlocal buf
        while len(buf) < n:
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError("connection closed before request %d's end"
                                     % req_id)
            buf += chunk

    while True:
        at_least(8)
        _, rtype, rid, clen, plen = struct.unpack(">BBHHB", buf[:7])
        at_least(8 + clen + plen)
        content, buf = buf[8:8 + clen], buf[8 + clen + plen:]
        if rid != req_id:
            raise AssertionError("record for request %d, not %d" % (rid, req_id))
        if rtype == FCGI_STDOUT:
            out += content
        elif rtype == FCGI_END_REQUEST:
            return out


class FcgiProcess:
    """webhook.fcgi started the way spawn-fcgi does: a listening Unix socket
    on fd 0 (argv: a command that execs it, e.g. unshare)."""

    def __init__(self, sandbox, fcgi=FCGI, env=None, argv=()):
        self.path = os.path.join(sandbox.dir, "direct-%d.sock" % free_port())
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(16)
        e = dict(sandbox.env())
        e.update(env or {})
        self.stderr_path = os.path.join(sandbox.dir, "direct.stderr")
        self.err = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(list(argv) + [fcgi], stdin=self.listener.fileno(),
                                     stdout=subprocess.DEVNULL,
                                     stderr=self.err, env=e)

    def open(self, params, stdin_parts=(), keep=False):
        """Send the begin record (FCGI_KEEP_CONN when keep) and params;
        return the socket."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        s.sendall(_record(FCGI_BEGIN_REQUEST, struct.pack(">HB5x", 1, int(keep))))
        blob = b"".join(_nv(k.encode(), v.encode() if isinstance(v, str) else v)
                        for k, v in params)
        for i in range(0, len(blob), 65535):
            s.sendall(_record(FCGI_PARAMS, blob[i:i + 65535]))
        s.sendall(_record(FCGI_PARAMS, b""))
        for part in stdin_parts:
            self.send_stdin(s, part)
        return s

    @staticmethod
    def send_stdin(s, data):
        for i in range(0, len(data), 65535):
            s.sendall(_record(FCGI_STDIN, data[i:i + 65535]))

    @staticmethod
    def wait_read(s, timeout=60):
        """Wait until the responder has read every byte sent on s (Linux's
        SIOCOUTQ on a Unix socket: bytes the peer has not consumed), i.e.
        it holds the request: a fixed sleep cannot know that on a busy
        machine."""
        deadline = time.monotonic() + timeout
        while True:
            left = struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ,
                                                  b"\0\0\0\0"))[0]
            if left == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError("responder never read the request "
                                     "(%d bytes unread)" % left)
            time.sleep(0.02)

    @staticmethod
    def finish(s, timeout=10, end_stdin=True):
        """End stdin (unless end_stdin is False: the answer came without
        it), read the answer: (status, headers text, body)."""
        if end_stdin:
            s.sendall(_record(FCGI_STDIN, b""))
        s.settimeout(timeout)
        out, buf = b"", b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            while len(buf) >= 8:
                _, rtype, _, clen, plen = struct.unpack(">BBHHB", buf[:7])
                if len(buf) < 8 + clen + plen:
                    break
                content = buf[8:8 + clen]
                buf = buf[8 + clen + plen:]
                if rtype == FCGI_STDOUT:
                    out += content
                elif rtype == FCGI_END_REQUEST:
                    s.close()
                    return parse_cgi(out)
        s.close()
        return parse_cgi(out)

    def request(self, params, body=b""):
        return self.finish(self.open(params, [body] if body else []))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.listener.close()
        self.err.close()


def parse_cgi(out):
    """(status, headers, body) of a responder's CGI output.  webhook.fcgi
    always sends a Status line: without one (an empty answer from a worker
    that died, say) the status is None, never CGI's default 200."""
    head, _, body = out.partition(b"\r\n\r\n")
    status = None
    headers = {}
    for line in head.decode(errors="replace").split("\r\n"):
        k, _, v = line.partition(":")
        if k.lower() == "status":
            status = int(v.split()[0])
        elif k:
            headers[k.strip()] = v.strip()
    return status, headers, body


def signed_params(secret, msg_id, body, ts=None, conf=None, extra=()):
    ts = int(time.time()) if ts is None else ts
    p = [("REQUEST_METHOD", "POST"), ("CONTENT_LENGTH", str(len(body))),
         ("HTTP_WEBHOOK_ID", msg_id), ("HTTP_WEBHOOK_TIMESTAMP", str(ts)),
         ("HTTP_WEBHOOK_SIGNATURE", sign(secret, msg_id, ts, body))]
    if conf:
        p.append(("WEBHOOK_CONF", conf))
    return p + list(extra)
