"""Every web-server snippet in conf/, for real (README, "Web servers").

Each test starts a real server on 127.0.0.1 (a free port) as the
unprivileged web user, from the snippet in conf/ itself (included or, for a
.htaccess, linked in place: never a copy), and runs the same acceptance set
through it: a valid webhook stored, a duplicate answered 200, a bad
signature 401, a body over the limit refused with nothing stored, header
names in any letter case, and a signed 250 KB body stored byte for byte.

  Apache + mod_fcgid from a user's .htaccess    conf/apache-htaccess with
                                                conf/webhook.fcgi-wrapper
  Apache + plain CGI from a user's .htaccess    conf/apache-cgi.htaccess
  Apache + mod_fcgid, server config             conf/apache-fcgid.conf
  Apache + mod_proxy_fcgi + webhook-spawn       conf/apache-proxy-fcgi.conf
  nginx + webhook-spawn (spawn-fcgi)            conf/nginx-spawn-fcgi.conf
  lighttpd mod_fastcgi                          conf/lighttpd-webhook.conf
  lighttpd with the static build                build-static/webhook.fcgi

Layout, as on a cPanel-style account: HOME/public_html is the document root,
HOME/webhook (group `webhook`, setgid, 2770) holds webhook.conf and the
inbox, outside it.  Users (created here when missing): `webhook-web` runs
the servers' workers, `webhook-cron` runs webhook-drain, both in group
`webhook`.  TestTwoUsers runs the two for real against one inbox.

Needs root (to start servers that drop to the web user, and to create the
users).  Everything started here is stopped by the test that started it,
by process id.
"""
import grp
import http.client
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import time
import unittest

from harness import (ROOT, FCGI, DRAIN, SECRET_A, SECRET_B, Sandbox,
                     event_body, free_port, proc_stats, sign, write_conf)

CONF_DIR = os.path.join(ROOT, "conf")
STATIC_FCGI = os.path.join(ROOT, "build-static", "webhook.fcgi")
RECORD_HANDLER = os.path.join(ROOT, "tests", "record-handler.sh")
APACHE_MODULES = "/usr/lib/apache2/modules"
WEB_USER, CRON_USER, GROUP = "webhook-web", "webhook-cron", "webhook"

# The acceptance set's bodies: the largest real provider bodies (~260 KB),
# and one over the default max_body (1 MiB).
BIG = 250 * 1000
OVER = 1536 * 1024


def setUpModule():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root: servers start as root and drop "
                                "to %s; users are created" % WEB_USER)
    try:
        grp.getgrnam(GROUP)
    except KeyError:
        subprocess.run(["groupadd", "--system", GROUP], check=True)
    for user in (WEB_USER, CRON_USER):
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--system", "--gid", GROUP,
                            "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", user], check=True)


def uid(user):
    return pwd.getpwnam(user).pw_uid


def gid():
    return grp.getgrnam(GROUP).gr_gid


def descendants(pid):
    """Every process below pid, from /proc (children of children too)."""
    parent = {p: int(f[1]) for p, f in proc_stats()}
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for child, ppid in parent.items():
            if ppid == p:
                out.append(child)
                todo.append(child)
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def exe_of(pid):
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return ""


class Home:
    """A cPanel-style account in a temporary directory:
    public_html/ (document root), webhook/ (config and inbox, group
    `webhook`, setgid), run/ (the servers' logs, sockets, pids)."""

    def __init__(self, **conf_keys):
        self.sb = Sandbox(prefix="webhook-servers-")
        self.dir = self.sb.dir
        os.chmod(self.dir, 0o755)
        self.docroot = os.path.join(self.dir, "public_html")
        os.mkdir(self.docroot, 0o755)
        self.app = os.path.join(self.dir, "webhook")
        os.mkdir(self.app)
        os.chown(self.app, uid(CRON_USER), gid())
        os.chmod(self.app, 0o2770)
        self.run = os.path.join(self.dir, "run")
        os.mkdir(self.run)
        os.chown(self.run, uid(WEB_USER), gid())
        os.chmod(self.run, 0o770)
        self.sb.conf = self.conf = os.path.join(self.app, "webhook.conf")
        self.sb.db = self.db = os.path.join(self.app, "inbox.db")
        self.write_conf(**conf_keys)

    def write_conf(self, **extra):
        keys = {"database": self.db, "secret": SECRET_A, "busy_timeout": "5s"}
        keys.update(extra)
        write_conf(self.conf, **keys)
        os.chown(self.conf, uid(CRON_USER), gid())
        os.chmod(self.conf, 0o640)

    def install_binary(self, src=FCGI, name="webhook.fcgi"):
        """The receiver uploaded into the document root (what the hosting
        guide no longer does: TestModFcgidDefaultBodyLimit's fact)."""
        dst = os.path.join(self.docroot, name)
        shutil.copy(src, dst)
        os.chmod(dst, 0o755)
        return dst

    def install_endpoint(self, snippet, src=FCGI, mode=0o755):
        """The hosting guide's layout: the receiver in ~/webhook (outside
        the document root), public_html/webhook/ holding the snippet as
        .htaccess (linked: the file itself, never a copy) and
        conf/webhook.fcgi-wrapper with /home/you made this home.  Mode 755:
        the web user runs it here (no suEXEC)."""
        exe = os.path.join(self.app, "webhook.fcgi")
        shutil.copy(src, exe)
        os.chmod(exe, 0o755)
        endpoint = os.path.join(self.docroot, "webhook")
        os.mkdir(endpoint, 0o755)
        with open(os.path.join(CONF_DIR, "webhook.fcgi-wrapper")) as f:
            text = f.read().replace("/home/you", self.dir)
        wrapper = os.path.join(endpoint, "webhook.fcgi")
        with open(wrapper, "w") as f:
            f.write(text)
        os.chmod(wrapper, mode)
        os.symlink(os.path.join(CONF_DIR, snippet),
                   os.path.join(endpoint, ".htaccess"))
        return exe

    def cleanup(self):
        self.sb.cleanup()


class Server:
    """A process tree we started: the server and what it spawned."""
    name = "server"

    def start(self, argv, log, umask=0o022, env=None):
        self.log_path = log
        self.out = open(log + ".stdout", "ab")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=self.out,
                                     stdin=subprocess.DEVNULL, umask=umask,
                                     env=env)
        self.seen = set()

    def wait_tcp(self, port, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError("%s did not start:\n%s" % (self.name, self.logs()))

    def remember(self):
        self.seen.update(descendants(self.proc.pid))

    def logs(self, tail=4000):
        out = []
        for p in (self.log_path, self.log_path + ".stdout"):
            try:
                with open(p, errors="replace") as f:
                    out.append("== %s\n%s" % (p, f.read()[-tail:]))
            except OSError:
                pass
        return "\n".join(out)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if getattr(self, "proc", None) is None:
            return
        self.remember()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # What it spawned and left behind (by pid, only our processes).
        deadline = time.time() + 10
        left = [p for p in self.seen if alive(p)]
        while left and time.time() < deadline:
            time.sleep(0.1)
            left = [p for p in left if alive(p)]
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.out.close()
        self.proc = None


class Apache(Server):
    """apache2 -DFOREGROUND with our own minimal httpd.conf: Debian's
    modules, User/Group the web user (or `user`, `group`: e2e_suexec runs
    it as www-data, the one user Debian's suEXEC obeys), the test's own
    lines (a snippet's Include, the host's <Directory>) in `body`."""
    name = "apache2"

    def __init__(self, home, modules, body, defines=None, umask=0o022,
                 user=WEB_USER, group=GROUP):
        self.port = free_port()
        run = home.run
        mods = ["mpm_event", "authz_core", "mime", "env", "alias", "dir"] + modules
        lines = ["LoadModule %s_module %s/mod_%s.so" % (m, APACHE_MODULES, m)
                 for m in mods]
        for k, v in (defines or {}).items():
            lines.append('Define %s "%s"' % (k, v))
        self.conf = os.path.join(run, "httpd.conf")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + """
ServerRoot "{run}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
User {user}
Group {group}
PidFile "{run}/httpd.pid"
ErrorLog "{run}/apache-error.log"
LogLevel warn
TypesConfig /etc/mime.types
DocumentRoot "{docroot}"
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<IfModule cgid_module>
    ScriptSock "{run}/cgid.sock"
</IfModule>
<IfModule fcgid_module>
    FcgidIPCDir "{run}/fcgid"
    FcgidProcessTableFile "{run}/fcgid_shm"
</IfModule>
{body}
""".format(run=run, port=self.port, user=user, group=group,
           docroot=home.docroot, body=body))
        check = subprocess.run(["apache2", "-t", "-f", self.conf],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError("apache2 -t: " + check.stderr)
        self.start(["apache2", "-f", self.conf, "-DFOREGROUND"],
                   os.path.join(run, "apache-error.log"), umask=umask)
        self.wait_tcp(self.port)


# What a host's server config gives a user's public_html: .htaccess files
# may set handlers, SetEnv and ExecCGI; ExecCGI itself is off until the
# user's .htaccess turns it on.
HOST_DIRECTORY = """
<Directory "{docroot}">
    AllowOverride AuthConfig FileInfo Indexes Limit Options=ExecCGI,Indexes,SymLinksIfOwnerMatch
    Options SymLinksIfOwnerMatch
    Require all granted
</Directory>
"""


class Spawner(Server):
    """conf/webhook-spawn: spawn-fcgi (+ multiwatch) on a Unix socket."""
    name = "webhook-spawn"

    def __init__(self, home, binary=FCGI, procs=4):
        self.socket = os.path.join(home.run, "webhook.sock")
        env = dict(os.environ, WEBHOOK_PROCS=str(procs))
        self.start([os.path.join(CONF_DIR, "webhook-spawn"), self.socket,
                    binary, home.conf, WEB_USER, GROUP],
                   os.path.join(home.run, "spawn.log"), env=env)
        deadline = time.time() + 10
        while time.time() < deadline:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(self.socket)
                s.close()
                break
            except OSError:
                s.close()
                time.sleep(0.05)
        else:
            raise RuntimeError("webhook-spawn: no socket:\n" + self.logs())
        # Without multiwatch spawn-fcgi forks the workers and exits.
        self.pidfile = self.socket + ".pid"

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if os.path.exists(self.pidfile):
            with open(self.pidfile) as f:
                self.seen.update(int(p) for p in f.read().split())
            for p in self.seen:
                if alive(p):
                    os.kill(p, signal.SIGTERM)
        super().stop(sig, timeout)


class Nginx(Server):
    """nginx in front of a socket, with a server block that includes
    `snippet` (default conf/nginx-spawn-fcgi.conf; e2e_sources gives the
    one of docs/providers.md)."""
    name = "nginx"

    def __init__(self, home, socket_path, snippet=None):
        self.port = free_port()
        prefix = os.path.join(home.run, "nginx")
        os.mkdir(prefix)
        # `include fastcgi_params;` resolves beside the main config, as it
        # does in /etc/nginx.
        os.symlink("/etc/nginx/fastcgi_params",
                   os.path.join(prefix, "fastcgi_params"))
        self.conf = os.path.join(prefix, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write("""
user {user} {group};
daemon off;
master_process on;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {run}/nginx-error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    fastcgi_temp_path {prefix}/fastcgi;
    proxy_temp_path {prefix}/proxy;
    scgi_temp_path {prefix}/scgi;
    uwsgi_temp_path {prefix}/uwsgi;
    server {{
        listen 127.0.0.1:{port};
        root {docroot};
        set $webhook_socket {sock};
        include {snippet};
    }}
}}
""".format(user=WEB_USER, group=GROUP, prefix=prefix, run=home.run,
           port=self.port, docroot=home.docroot, sock=socket_path,
           snippet=snippet or os.path.join(CONF_DIR, "nginx-spawn-fcgi.conf")))
        argv = ["nginx", "-p", prefix + "/", "-c", self.conf,
                "-e", os.path.join(home.run, "nginx-error.log")]
        check = subprocess.run(argv + ["-t"], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError("nginx -t: " + check.stderr)
        self.start(argv, os.path.join(home.run, "nginx-error.log"))
        self.wait_tcp(self.port)

    def stop(self, sig=signal.SIGQUIT, timeout=20):
        super().stop(sig, timeout)


class Lighttpd(Server):
    """lighttpd -D as root dropping to the web user, including
    conf/lighttpd-webhook.conf with its three variables set."""
    name = "lighttpd"

    def __init__(self, home, binary=FCGI, umask=0o022):
        self.port = free_port()
        self.conf = os.path.join(home.run, "lighttpd.conf")
        with open(self.conf, "w") as f:
            f.write("""
server.bind = "127.0.0.1"
server.port = {port}
server.document-root = "{docroot}"
server.errorlog = "{run}/lighttpd-error.log"
server.username = "{user}"
server.groupname = "{group}"
var.webhook_bin = "{bin}"
var.webhook_conf = "{conf}"
var.webhook_run = "{run}"
include "{snippet}"
""".format(port=self.port, docroot=home.docroot, run=home.run,
           user=WEB_USER, group=GROUP, bin=binary, conf=home.conf,
           snippet=os.path.join(CONF_DIR, "lighttpd-webhook.conf")))
        self.start(["lighttpd", "-D", "-f", self.conf],
                   os.path.join(home.run, "lighttpd-error.log"), umask=umask)
        self.wait_tcp(self.port)


def post(port, path, headers, body, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class AcceptanceCase(unittest.TestCase):
    """The acceptance set, through self.port + self.path; subclasses start
    their server in start()."""
    path = "/webhook"

    def setUp(self):
        self.home = Home()
        self.servers = []
        self.n = 0
        try:
            self.start()
        except Exception:
            self.tearDown()
            raise

    def tearDown(self):
        for s in reversed(self.servers):
            s.stop()
        self.servers = []
        self.home.cleanup()

    def diag(self):
        return "\n".join(s.logs() for s in self.servers)

    def new_id(self, what):
        self.n += 1
        return "msg_%s_%s_%d" % (type(self).__name__, what, self.n)

    def deliver(self, msg_id, body, secret=SECRET_A, names=None):
        ts = int(time.time())
        names = names or ("webhook-id", "webhook-timestamp", "webhook-signature")
        h = {names[0]: msg_id, names[1]: str(ts),
             names[2]: sign(secret, msg_id, ts, body),
             "Content-Type": "application/json"}
        return post(self.port, self.path, h, body)

    def stored(self, msg_id):
        return self.home.sb.rows("SELECT * FROM events WHERE webhook_id = ?",
                                 (msg_id,))

    def assertStored(self, msg_id, body):
        rows = self.stored(msg_id)
        self.assertEqual(len(rows), 1, self.diag())
        self.assertEqual(bytes(rows[0]["body"]), body)

    def acceptance(self):
        # A valid webhook is stored.
        mid = self.new_id("valid")
        body = event_body(mid)
        status, text = self.deliver(mid, body)
        self.assertEqual(status, 200, "%r\n%s" % (text, self.diag()))
        self.assertStored(mid, body)

        # The provider's retry of it: 200, still one row.
        status, text = self.deliver(mid, body)
        self.assertEqual(status, 200, self.diag())
        self.assertIn(b"duplicate", text)
        self.assertEqual(len(self.stored(mid)), 1)

        # A bad signature: 401, nothing stored.
        bad = self.new_id("badsig")
        status, _ = self.deliver(bad, event_body(bad), secret=SECRET_B)
        self.assertEqual(status, 401, self.diag())
        self.assertEqual(self.stored(bad), [])

        # Over max_body (1 MiB by default): refused (by the server or by
        # us), nothing stored.
        big = self.new_id("over")
        status, _ = self.deliver(big, event_body(big, blob="x" * OVER))
        self.assertEqual(status, 413, self.diag())
        self.assertEqual(self.stored(big), [])

        # Header names in any letter case.
        mixed = self.new_id("case")
        body = event_body(mixed)
        status, _ = self.deliver(mixed, body, names=(
            "WEBHOOK-ID", "Webhook-Timestamp", "wEbHoOk-SiGnAtUrE"))
        self.assertEqual(status, 200, self.diag())
        self.assertStored(mixed, body)

        # A signed 250 KB body, as the provider's largest, stored exactly.
        large = self.new_id("250k")
        body = event_body(large, blob="")
        body = event_body(large, blob="y" * (BIG - len(body)))
        self.assertEqual(len(body), BIG)
        status, text = self.deliver(large, body)
        self.assertEqual(status, 200, "%r\n%s" % (text, self.diag()))
        self.assertStored(large, body)

        self.assertEqual(self.home.sb.count(), 3)


class TestApacheHtaccess(AcceptanceCase):
    """conf/apache-htaccess in public_html/webhook/ with the wrapper beside
    it (the hosting guide's layout): mod_fcgid for bodies it takes, the
    same receiver as plain CGI above 128 KiB, both through the wrapper."""
    path = "/webhook/webhook.fcgi"
    modules = ["fcgid", "cgid"]

    def start(self):
        self.exe = self.home.install_endpoint("apache-htaccess")
        with open(os.path.join(self.home.docroot, "index.html"), "w") as f:
            f.write("the shop\n")
        self.srv = Apache(self.home, self.modules,
                          HOST_DIRECTORY.format(docroot=self.home.docroot))
        self.servers.append(self.srv)
        self.port = self.srv.port

    def fcgid_workers(self):
        return [p for p in descendants(self.srv.proc.pid)
                if exe_of(p) == self.exe]

    def test_acceptance(self):
        self.acceptance()

    def test_small_bodies_go_to_a_fastcgi_process(self):
        mid = self.new_id("small")
        self.assertEqual(self.deliver(mid, event_body(mid))[0], 200, self.diag())
        self.assertTrue(self.fcgid_workers(), "no mod_fcgid process")


class TestApacheHtaccessWithoutFcgid(TestApacheHtaccess):
    """The same snippet on a host without mod_fcgid: every delivery goes
    to plain CGI (<IfModule>), none is refused."""
    modules = ["cgid"]
    test_small_bodies_go_to_a_fastcgi_process = None   # not inherited

    def test_small_bodies_go_to_plain_cgi(self):
        mid = self.new_id("small")
        self.assertEqual(self.deliver(mid, event_body(mid))[0], 200, self.diag())
        self.assertEqual(self.fcgid_workers(), [])


class TestHtaccessNotAllowed(unittest.TestCase):
    """A host whose AllowOverride lacks Options (ExecCGI): the snippet in
    its own directory makes that directory answer 500, and the site (its
    index.html) keeps answering 200."""

    def setUp(self):
        self.home = Home()
        self.home.install_endpoint("apache-htaccess")
        with open(os.path.join(self.home.docroot, "index.html"), "w") as f:
            f.write("the shop\n")
        directory = HOST_DIRECTORY.replace(
            "Options=ExecCGI,Indexes,SymLinksIfOwnerMatch", "").format(
            docroot=self.home.docroot)
        self.srv = Apache(self.home, ["fcgid", "cgid"], directory)

    def tearDown(self):
        self.srv.stop()
        self.home.cleanup()

    def test_only_the_endpoint_fails(self):
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
        c.request("GET", "/index.html")
        r = c.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"the shop\n"))
        c.close()
        mid = "msg_not_allowed"
        body = event_body(mid)
        ts = int(time.time())
        status, _ = post(self.srv.port, "/webhook/webhook.fcgi", {
            "webhook-id": mid, "webhook-timestamp": str(ts),
            "webhook-signature": sign(SECRET_A, mid, ts, body)}, body)
        self.assertEqual(status, 500, self.srv.logs())
        self.assertEqual(self.home.sb.count(), 0)


class TestModFcgidDefaultBodyLimit(AcceptanceCase):
    """Why conf/apache-htaccess sends large bodies to plain CGI: with the
    host's default FcgidMaxRequestLen (128 KiB), which no .htaccess can
    raise, mod_fcgid alone answers a 250 KB body with 500 before we see it.
    (A test-written .htaccess, not a snippet: the fact the snippet avoids.)"""
    path = "/webhook.fcgi"

    def start(self):
        self.home.install_binary()
        with open(os.path.join(self.home.docroot, ".htaccess"), "w") as f:
            f.write('<Files "webhook.fcgi">\n    Options +ExecCGI\n'
                    '    SetHandler fcgid-script\n'
                    '    SetEnv WEBHOOK_CONF ${WEBHOOK_CONF}\n</Files>\n')
        srv = Apache(self.home, ["fcgid"],
                     HOST_DIRECTORY.format(docroot=self.home.docroot),
                     defines={"WEBHOOK_CONF": self.home.conf})
        self.servers.append(srv)
        self.port = srv.port

    def test_250k_refused_with_500(self):
        mid = self.new_id("small")
        self.assertEqual(self.deliver(mid, event_body(mid))[0], 200, self.diag())
        large = self.new_id("250k")
        status, _ = self.deliver(large, event_body(large, blob="y" * BIG))
        self.assertEqual(status, 500)
        self.assertEqual(self.stored(large), [])


class TestApacheCgiHtaccess(AcceptanceCase):
    """conf/apache-cgi.htaccess: plain CGI, one process per request, in
    the hosting guide's layout."""
    path = "/webhook/webhook.fcgi"

    def start(self):
        self.home.install_endpoint("apache-cgi.htaccess")
        srv = Apache(self.home, ["cgid"],
                     HOST_DIRECTORY.format(docroot=self.home.docroot))
        self.servers.append(srv)
        self.port = srv.port

    def test_acceptance(self):
        self.acceptance()

    def test_refusal_before_reading_the_body_reaches_the_client(self):
        # Our own limit, below Apache's LimitRequestBody: webhook.fcgi
        # refuses by CONTENT_LENGTH before reading.  Under mod_cgid a CGI
        # program that answers without reading its input gets the client's
        # connection reset; the receiver reads and discards it first.
        self.home.write_conf(max_body="1000")
        for size in (5000, 300000):
            mid = self.new_id("small_limit")
            status, text = self.deliver(mid, event_body(mid, blob="z" * size))
            self.assertEqual(status, 413, "%r\n%s" % (text, self.diag()))
            self.assertEqual(self.stored(mid), [])


class TestApacheFcgidServerConfig(AcceptanceCase):
    """conf/apache-fcgid.conf included from the server config; the binary
    stays outside the document root."""

    def start(self):
        srv = Apache(self.home, ["fcgid"],
                     'Include "%s"' % os.path.join(CONF_DIR, "apache-fcgid.conf"),
                     defines={"WEBHOOK_BIN": FCGI, "WEBHOOK_CONF": self.home.conf,
                              "WEBHOOK_URL": "/webhook"})
        self.servers.append(srv)
        self.port = srv.port

    def test_acceptance(self):
        self.acceptance()


class TestApacheProxyFcgi(AcceptanceCase):
    """conf/apache-proxy-fcgi.conf + conf/webhook-spawn."""

    def start(self):
        spawn = Spawner(self.home)
        self.servers.append(spawn)
        srv = Apache(self.home, ["proxy", "proxy_fcgi"],
                     'Include "%s"' % os.path.join(CONF_DIR, "apache-proxy-fcgi.conf"),
                     defines={"WEBHOOK_SOCKET": spawn.socket,
                              "WEBHOOK_URL": "/webhook"})
        self.servers.append(srv)
        self.port = srv.port

    def test_acceptance(self):
        self.acceptance()


class TestNginxSpawnFcgi(AcceptanceCase):
    """conf/nginx-spawn-fcgi.conf + conf/webhook-spawn."""

    def start(self):
        spawn = Spawner(self.home)
        self.servers.append(spawn)
        srv = Nginx(self.home, spawn.socket)
        self.servers.append(srv)
        self.port = srv.port

    def test_acceptance(self):
        self.acceptance()

    def test_workers_run_as_the_web_user(self):
        mid = self.new_id("owner")
        self.assertEqual(self.deliver(mid, event_body(mid))[0], 200, self.diag())
        st = os.stat(self.home.db)
        self.assertEqual((st.st_uid, st.st_gid), (uid(WEB_USER), gid()))


class TestLighttpd(AcceptanceCase):
    """conf/lighttpd-webhook.conf."""
    binary = FCGI

    def start(self):
        srv = Lighttpd(self.home, binary=self.binary)
        self.servers.append(srv)
        self.port = srv.port

    def test_acceptance(self):
        self.acceptance()


class TestStaticLighttpd(TestLighttpd):
    """build-static/webhook.fcgi (make static) behind the same snippet."""
    binary = STATIC_FCGI

    def setUp(self):
        if not os.path.exists(STATIC_FCGI):
            self.skipTest("%s is not built (make static)" % STATIC_FCGI)
        super().setUp()

    def test_fully_static(self):
        out = subprocess.run(["ldd", STATIC_FCGI], capture_output=True, text=True)
        self.assertIn("not a dynamic executable", out.stdout + out.stderr)
        # No program interpreter: nothing of the host's libc is loaded.
        with open(STATIC_FCGI, "rb") as f:
            self.assertNotIn(b"/lib64/ld-linux", f.read())


class TestTwoUsers(unittest.TestCase):
    """The web server's user writes the inbox, the cron user drains it, as
    the README's "Two users" sets it up: both in group `webhook`, the
    directory setgid (2770), and the database (and the log) created
    group-writable before the first delivery.  Both users keep the usual
    umask 022."""

    def setUp(self):
        self.home = Home()
        self.record = os.path.join(self.home.app, "handled.tsv")
        self.log = os.path.join(self.home.app, "webhook.log")
        self.srv = None
        self.n = 0

    def tearDown(self):
        if self.srv:
            self.srv.stop()
        self.home.cleanup()

    def configure(self, log=True):
        keys = {"settle": "0s", "handler": "RECORD=%s sh %s" % (
            self.record, RECORD_HANDLER)}
        if log:
            keys["log"] = self.log
        self.home.write_conf(**keys)

    def precreate(self, path):
        """What the README asks of the operator (the cron user here)."""
        r = self.as_cron_cmd(["sh", "-c", 'touch "$1" && chmod 660 "$1"',
                              "sh", path])
        self.assertEqual(r.returncode, 0, r.stderr)

    def serve(self):
        if self.srv:
            self.srv.stop()
        self.srv = Lighttpd(self.home)

    def deliver(self):
        self.n += 1
        mid = "msg_two_users_%d" % self.n
        body = event_body(mid)
        ts = int(time.time())
        status, text = post(self.srv.port, "/webhook", {
            "webhook-id": mid, "webhook-timestamp": str(ts),
            "webhook-signature": sign(SECRET_A, mid, ts, body)}, body)
        self.assertEqual(status, 200, "%r\n%s\nfiles: %s" % (
            text, self.srv.logs(), self.owners()))
        return mid

    def as_cron_cmd(self, argv):
        return subprocess.run(argv, user=CRON_USER, group=GROUP,
                              extra_groups=[], umask=0o022,
                              capture_output=True, text=True, timeout=60,
                              cwd="/", env={"PATH": "/usr/bin:/bin"})

    def as_cron(self, *args):
        return self.as_cron_cmd([DRAIN, "-c", self.home.conf] + list(args))

    def handled(self):
        try:
            with open(self.record) as f:
                return [line.split("\t")[0] for line in f]
        except FileNotFoundError:
            return []

    def owners(self):
        out = {}
        for name in ("inbox.db", "inbox.db-wal", "inbox.db-shm",
                     "inbox.db.drain-lock", "webhook.log"):
            try:
                st = os.stat(os.path.join(self.home.app, name))
            except FileNotFoundError:
                continue
            out[name] = (pwd.getpwuid(st.st_uid).pw_name,
                         grp.getgrgid(st.st_gid).gr_name,
                         oct(stat.S_IMODE(st.st_mode)))
        return out

    def assertDrained(self, r, ids):
        self.assertEqual((r.returncode, r.stderr), (0, ""),
                         "drain as %s: %s\nfiles: %s" % (CRON_USER, r.stdout,
                                                          self.owners()))
        self.assertEqual(self.handled(), ids)

    def test_web_writes_cron_drains_web_writes_again(self):
        self.configure()
        self.precreate(self.home.db)
        self.precreate(self.log)
        self.serve()
        first = self.deliver()
        files = self.owners()
        # The receiver keeps the inbox open: -wal and -shm are the web
        # user's, with the database's mode, while the cron user drains.
        self.assertEqual(files["inbox.db-wal"], (WEB_USER, GROUP, "0o660"), files)
        self.assertEqual(files["inbox.db-shm"], (WEB_USER, GROUP, "0o660"), files)
        self.assertDrained(self.as_cron("run"), [first])

        second = self.deliver()
        r = self.as_cron("status")
        self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)
        self.assertDrained(self.as_cron("run"), [first, second])

        # The other way round: the cron user opens the inbox first (a long
        # drain), so -wal and -shm are created as webhook-cron; the web
        # server, restarted meanwhile, must still write.
        self.srv.stop()
        self.srv = None
        hold = subprocess.Popen(
            ["sqlite3", "-cmd", "SELECT 'open', count(*) FROM events;",
             self.home.db],
            user=CRON_USER, group=GROUP, extra_groups=[], umask=0o022,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd="/", env={"PATH": "/usr/bin:/bin"})
        try:
            self.assertEqual(hold.stdout.readline().strip(), "open|2")
            files = self.owners()
            self.assertEqual(files["inbox.db-shm"][0], CRON_USER, files)
            self.serve()
            third = self.deliver()
        finally:
            hold.stdin.close()
            hold.wait(10)
            hold.stdout.close()
        self.assertDrained(self.as_cron("run"), [first, second, third])
        with open(self.log) as f:
            self.assertNotIn("cannot open", f.read())

    # The two tests below show what still needs a change in C.  Each
    # asserts today's failure, so that it turns red the day the C is
    # fixed: then replace it by the success it describes.  (Not
    # @expectedFailure: tests/run counts "expected failures=N" as failures.)

    def test_inbox_created_by_the_receiver_is_shared(self):
        """The receiver creates a new inbox 0660 whatever the umask (SQLite
        alone would make it 0644, and its -wal and -shm copy that mode), so
        the cron user's drainer can write it."""
        self.configure(log=False)
        self.serve()
        first = self.deliver()
        self.assertEqual(self.owners()["inbox.db"][2], "0o660")
        r = self.as_cron("run")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.handled(), [first])

    def test_log_created_by_the_receiver_is_shared(self):
        """The `log` file is created 0660 whatever the umask: the drainer
        (another user) appends to the file the receiver created, and stays
        silent, so cron mails nothing."""
        self.configure()
        self.precreate(self.home.db)
        self.serve()
        first = self.deliver()
        self.assertEqual(self.owners()["webhook.log"][2], "0o660")
        r = self.as_cron("run")
        self.assertEqual(self.handled(), [first])
        self.assertEqual((r.returncode, r.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main(verbosity=2)
