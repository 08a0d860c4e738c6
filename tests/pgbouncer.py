"""A real PgBouncer (Debian's `pgbouncer`) in transaction mode in front of
a tests/pgserver.py server: what Supabase's and Neon's poolers and most
PgBouncer setups are.  Each transaction may run on another server
session, so nothing may live in a session across transactions: no named
prepared statement, no SET (docs/postgresql.md, "Poolers").

PgBouncer(pg) runs `pgbouncer` as the server's unprivileged user (it
refuses root) in a temporary directory, listening only on a Unix socket
there, with a small pool (POOL_SIZE server sessions per database) so
that clients really do share sessions; every database of the server is
reachable through it (the `*` entry).  uri(db) is a database's URI
through it; stop() (or exit) ends it by its process id.
"""
import atexit
import os
import shutil
import subprocess
import tempfile
import time

import pgserver

PGBOUNCER = os.environ.get("WEBHOOK_PGBOUNCER", "/usr/sbin/pgbouncer")
PORT = 6432         # a Unix socket's name only: no TCP listener
POOL_SIZE = 3


def available():
    return os.path.exists(PGBOUNCER) and pgserver.available()


class PgBouncer:
    def __init__(self, pg):
        self.pg = pg
        self.dir = tempfile.mkdtemp(prefix="webhook-pgbouncer-")
        self.conf = os.path.join(self.dir, "pgbouncer.ini")
        self.log = os.path.join(self.dir, "pgbouncer.log")
        with open(self.conf, "w") as f:
            f.write("[databases]\n"
                    "* = host=%s port=5432 user=%s\n"
                    "[pgbouncer]\n"
                    "listen_addr =\n"
                    "listen_port = %d\n"
                    "unix_socket_dir = %s\n"
                    "auth_type = any\n"
                    "pool_mode = transaction\n"
                    "default_pool_size = %d\n"
                    "max_client_conn = 500\n"
                    "server_reset_query =\n"
                    "logfile = %s\n"
                    % (pg.sock, pgserver.SUPERUSER, PORT, self.dir,
                       POOL_SIZE, self.log))
        os.chmod(self.dir, 0o755)
        if pg.user is not None:
            for p in (self.dir, self.conf):
                os.chown(p, pg.user.pw_uid, pg.user.pw_gid)

        def demote():
            if pg.user is not None:
                os.setgid(pg.user.pw_gid)
                os.setuid(pg.user.pw_uid)
        self.proc = subprocess.Popen([PGBOUNCER, self.conf],
                                     preexec_fn=demote, cwd="/",
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        atexit.register(self.stop)
        # Up once it answers a query (a busy machine: generously).
        deadline = time.monotonic() + 120
        while True:
            r = subprocess.run([pgserver.PSQL, "-X", "-q", "-A", "-t", "-d",
                                self.uri("postgres"), "-c", "SELECT 1"],
                               capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("pgbouncer did not start: %s %s" % (
                    r.stderr.strip(), self.read_log()))
            time.sleep(0.1)

    def uri(self, db):
        return "postgresql:///%s?host=%s&port=%d&user=%s" % (
            db, self.dir, PORT, pgserver.SUPERUSER)

    def read_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


_shared = None


def shared():
    """One PgBouncer per test process, in front of pgserver.shared()."""
    global _shared
    if _shared is None:
        _shared = PgBouncer(pgserver.shared())
        atexit.register(_shared.stop)
    return _shared
