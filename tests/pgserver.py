"""A real PostgreSQL for the tests (Debian's `postgresql` package), and
the SQL the tests read an inbox with.

PgServer initdb's a cluster in a temporary directory as an unprivileged
system user (root cannot run postgres: WEBHOOK_PG_USER, default
webhook-pg, created here when missing), listening only on a Unix socket in
that directory (listen_addresses = ''), fsync on, and stops it with
`pg_ctl stop -m fast` when the test is done (stop(), or at exit).  Each
call to new_database() creates a database and returns its libpq URI.

Run as a program, it wraps a command with a server and one database:
    python3 tests/pgserver.py -- build/tests/test_inbox
runs the command with WEBHOOK_TEST_DATABASE set to the URI (tests/run).

psql is the client (no Python driver needed): rows come back as JSON,
bytea columns as bytes.
"""
import atexit
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

PG_BIN = os.environ.get("WEBHOOK_PG_BIN", "/usr/lib/postgresql/15/bin")
PG_USER = os.environ.get("WEBHOOK_PG_USER", "webhook-pg")
PSQL = "/usr/bin/psql"
SUPERUSER = "webhook"
BYTEA_COLUMNS = ("body", "last_output")


def available():
    return os.path.exists(os.path.join(PG_BIN, "postgres"))


def _system_user():
    """The unprivileged user the server runs as (created when missing and
    we are root); None when we are not root (then we run it ourselves)."""
    if os.getuid() != 0:
        return None
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home",
                        "--shell", "/usr/sbin/nologin", PG_USER], check=True,
                       capture_output=True)
        return pwd.getpwnam(PG_USER)


class PgServer:
    def __init__(self, prefix="webhook-pg-", extra_conf=""):
        """extra_conf: more lines for postgresql.conf."""
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        self.log = os.path.join(self.dir, "server.log")
        self.user = _system_user()
        os.mkdir(self.sock)
        os.chmod(self.dir, 0o755)
        os.chmod(self.sock, 0o755)
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
            os.chown(self.sock, self.user.pw_uid, self.user.pw_gid)
        self.running = False
        self.dbs = 0
        self._as_user([os.path.join(PG_BIN, "initdb"), "-D", self.data,
                       "-U", SUPERUSER, "--auth=trust", "--no-sync",
                       "--locale=C.UTF-8", "-E", "UTF8"], timeout=300)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\nlisten_addresses = ''\n"
                    "unix_socket_directories = '%s'\n"
                    "fsync = on\n"
                    "synchronous_commit = on\n"
                    "max_connections = 100\n"
                    "shared_buffers = 32MB\n" % self.sock + extra_conf)
        self.start()
        atexit.register(self.stop)

    def _as_user(self, argv, timeout=120, check=True):
        def demote():
            if self.user is not None:
                os.setgid(self.user.pw_gid)
                os.setuid(self.user.pw_uid)
        env = dict(os.environ, LC_ALL="C.UTF-8")
        env.pop("PGDATA", None)
        return subprocess.run(argv, preexec_fn=demote, env=env,
                              capture_output=True, text=True,
                              timeout=timeout, check=check, cwd="/")

    def start(self):
        """pg_ctl start, waiting (generously: the machine may be busy)."""
        self._as_user([os.path.join(PG_BIN, "pg_ctl"), "start", "-w",
                       "-t", "180", "-D", self.data, "-l", self.log],
                      timeout=200)
        self.running = True

    def stop(self, mode="fast"):
        if not self.running:
            return
        self.running = False
        self._as_user([os.path.join(PG_BIN, "pg_ctl"), "stop", "-w", "-t",
                       "180", "-m", mode, "-D", self.data], timeout=200,
                      check=False)

    def kill(self):
        """The postmaster SIGKILLed (a crash), children going with it."""
        pidfile = os.path.join(self.data, "postmaster.pid")
        with open(pidfile) as f:
            pid = int(f.readline())
        os.kill(pid, 9)
        self.running = False
        deadline = time.time() + 60
        while time.time() < deadline:
            r = subprocess.run(["pgrep", "-u", str(self.user.pw_uid
                                if self.user else os.getuid()), "-f",
                                self.data], capture_output=True)
            if r.returncode != 0:
                break
            time.sleep(0.1)

    @classmethod
    def attach(cls, directory):
        """The server in a directory a PgServer of another process made."""
        self = cls.__new__(cls)
        self.dir = directory
        self.data = os.path.join(directory, "data")
        self.sock = os.path.join(directory, "sock")
        self.log = os.path.join(directory, "server.log")
        self.user = _system_user()
        self.running = True
        self.dbs = 0
        return self

    def crash_restart(self):
        """Stopped as in a crash (-m immediate: no shutdown checkpoint, and
        WAL not yet written out of the server's memory is lost), then
        started again (recovery)."""
        self.stop("immediate")
        self.start()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def uri(self, db):
        return "postgresql:///%s?host=%s&user=%s" % (db, self.sock, SUPERUSER)

    def new_database(self, prefix="inbox"):
        self.dbs += 1
        name = "%s_%d_%d" % (prefix, os.getpid(), self.dbs)
        self.psql("postgres", "CREATE DATABASE %s" % name)
        return self.uri(name)

    def psql(self, db_or_uri, sql, timeout=120):
        """Run sql; returns psql's stdout (unaligned, tuples only)."""
        uri = db_or_uri if "://" in db_or_uri else self.uri(db_or_uri)
        r = subprocess.run([PSQL, "-X", "-q", "-A", "-t", "-v",
                            "ON_ERROR_STOP=1", "-d", uri, "-c", sql],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("psql: %s: %s" % (sql, r.stderr.strip()))
        return r.stdout


def query(uri, sql):
    """Rows of sql as dicts (bytea columns as bytes); [] when the inbox has
    no tables yet."""
    wrapped = "SELECT coalesce(json_agg(t), '[]') FROM (%s) t" % sql
    r = subprocess.run([PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                        "-d", uri, "-c", wrapped], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        if "does not exist" in r.stderr and "relation" in r.stderr:
            return []
        raise RuntimeError("psql: %s: %s" % (sql, r.stderr.strip()))
    rows = json.loads(r.stdout)
    for row in rows:
        for k in BYTEA_COLUMNS:
            v = row.get(k)
            if isinstance(v, str) and v.startswith("\\x"):
                row[k] = bytes.fromhex(v[2:])
    return rows


def execute(uri, sql):
    r = subprocess.run([PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                        "-d", uri, "-c", sql], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError("psql: %s: %s" % (sql, r.stderr.strip()))
    return r.stdout


_shared = None


def shared():
    """One server per test process, started on first use."""
    global _shared
    if _shared is None:
        _shared = PgServer()
        atexit.register(_shared.cleanup)
    return _shared


def main(argv):
    """pgserver.py -- COMMAND: COMMAND with a new server's database in
    WEBHOOK_TEST_DATABASE, and in WEBHOOK_TEST_PG_CRASH a command that
    crashes that server and starts it again (pgserver.py --crash-restart
    DIR)."""
    if argv[1:2] == ["--crash-restart"] and len(argv) == 3:
        PgServer.attach(argv[2]).crash_restart()
        return 0
    if "--" not in argv:
        print("usage: pgserver.py -- COMMAND...", file=sys.stderr)
        return 2
    cmd = argv[argv.index("--") + 1:]
    srv = PgServer()
    try:
        env = dict(os.environ, WEBHOOK_TEST_DATABASE=srv.new_database(),
                   WEBHOOK_TEST_PG_CRASH="%s %s --crash-restart %s" % (
                       sys.executable, os.path.abspath(__file__), srv.dir))
        return subprocess.run(cmd, env=env).returncode
    finally:
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
