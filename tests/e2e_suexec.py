"""The hosting guide on a shared host, literally (docs/HOSTING.md).

A cPanel-like host on this machine: Apache 2.4 with mod_fcgid, mod_cgid
and suEXEC (Debian's apache2-suexec-custom), Apache running as www-data
(the one user Debian's suexec, mode 4754 root:www-data, obeys) and every
program of the site running as the account `webhook-site` through
`SuexecUserGroup`; `AllowOverride All` for the account's public_html, as
cPanel sets it.  The account's home is a fresh temporary tree,
/tmp/webhook-hosting-XXXX/home/webhook-site.

The test then does what docs/HOSTING.md says, read from the guide itself
rather than restated here: the commands of "## 1. Download" on the
tarball of `make dist` and the files beside it (before `make dist`
exists, step 1 is left out and a directory made like the tarball's, with
the static programs of `make static` and conf/, stands for it), the two
directories and the upload table of "## 2. Upload", the key lines of "## 3. Edit" put into the
uploaded webhook.conf and the wrapper's /home/you replaced (text edits, as
a user would make them), the `check` of "## 4. Check" and the commands of
"## 5. Test" as the account user at a terminal, the line of "## 6. Cron" as
cron runs it, and "## 8. The report page" with its login (TestReportPage:
htpasswd and curl -u asked for the password at the account's terminal).  /home/you becomes the account's home, https://your.host the
address of a relay on 127.0.0.1 in front of Apache that keeps the bytes
`send` sent, so the stored rows are compared with what went over the wire.

Needs root (a user, suexec's config, Apache).  /etc/apache2/suexec/www-data
is rewritten for the module's run (its first line: the document-root
prefix under which suexec runs programs) and restored after it, whatever
happens; a lock file keeps two runs of this module from overlapping.
Everything started here listens on 127.0.0.1 and is stopped by pid.

The programs are build-static/webhook.fcgi and build-static/webhook-drain
(`make static`), or the tarball's, which must be the same: a missing one,
or a missing tarball once the Makefile has `dist-tarball`, fails the test.
For development only, WEBHOOK_SUEXEC_DYNAMIC=1 takes a missing program
from build/ instead (and goes on without a tarball).
"""
import atexit
import base64
import fcntl
import json
import os
import pty
import pwd
import grp
import http.client
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest

from harness import ROOT, SECRET_A, event_body, sign
from e2e_servers import Apache, HOST_DIRECTORY, descendants, exe_of, post

GUIDE = os.path.join(ROOT, "docs", "HOSTING.md")
CONF_DIR = os.path.join(ROOT, "conf")
STATIC = os.path.join(ROOT, "build-static")
DYNAMIC = os.path.join(ROOT, "build")
ACCOUNT = "webhook-site"                 # user and group of the account
APACHE_USER = "www-data"
SUEXEC_BIN = "/usr/lib/apache2/suexec"
SUEXEC_CONF = "/etc/apache2/suexec/" + APACHE_USER
SUEXEC_LOG = "/var/log/apache2/suexec.log"
LOCK = os.path.join("/run/lock" if os.path.isdir("/run/lock") else "/tmp",
                    "webhook-e2e-suexec.lock")
GUIDE_HOME = "/home/you"
GUIDE_SITE = "https://your.host"
# Debian's python3 (install-deps): the interpreter running the tests may
# live where the account cannot read it (a pyenv under /root).
SYSTEM_PYTHON = "/usr/bin/python3"

# Set by setUpModule: the temporary tree, the account's home.
HOSTING = None
HOME = None
_saved_suexec = None        # (bytes or None, mode) of SUEXEC_CONF before us
_lock_fd = None
_live_hosts = set()         # Hosts not stopped yet (stopped at exit too)
_sigterm = None             # SIGTERM's handler before ours


# ---- the guide, parsed --------------------------------------------------

def guide_sections():
    """'## N. Title' -> the section's text."""
    with open(GUIDE) as f:
        text = f.read()
    out = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, rest = part.partition("\n")
        out[title.strip()] = rest
    return out


def section(prefix):
    found = [t for s, t in guide_sections().items() if s.startswith(prefix)]
    if len(found) != 1:
        raise AssertionError("HOSTING.md: no single section '## %s'" % prefix)
    return found[0]


def code_blocks(text, lang):
    return re.findall(r"^```%s\n(.*?)^```" % re.escape(lang), text,
                      re.S | re.M)


def download_commands():
    """Step 1's commands, VERSION made this one."""
    block, = code_blocks(section("1. Download"), "sh")
    return [l.replace("VERSION", version())
            for l in block.splitlines() if l.strip()]


def upload_plan():
    """Step 2: ([(dir, mode)], [(from, to, mode)]), as the guide writes
    them (/home/you paths, octal modes)."""
    text = section("2. Upload")
    table_at = text.index("\n|")
    dirs = [(p, int(m, 8)) for p, m in re.findall(
        r"`(%s[^`]*)`\s*\((?:permissions\s*)?`([0-7]{3,4})`" % GUIDE_HOME,
        text[:table_at])]
    rows = [(a, b, int(m, 8)) for a, b, m in re.findall(
        r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|\s*`([0-7]{3,4})`\s*\|\s*$",
        text, re.M)]
    return dirs, rows


def edit_lines():
    """Step 3: the key = value lines of its ini block, in order."""
    block, = code_blocks(section("3. Edit"), "ini")
    out = []
    for line in block.splitlines():
        if line.strip():
            key, _, value = line.partition("=")
            out.append((key.strip(), value.strip()))
    return out


def check_command():
    block, = code_blocks(section("4. Check"), "sh")
    lines = [l for l in block.splitlines() if l.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def step5_commands():
    block, = code_blocks(section("5. Test"), "sh")
    return [l for l in block.splitlines() if l.strip()]


def cron_line():
    block, = code_blocks(section("6. Cron"), "cron")
    lines = [l for l in block.splitlines()
             if l.strip() and not l.startswith("#")]
    assert len(lines) == 1, lines
    return lines[0]


def step8_blocks():
    """Step 8: (its two sh blocks' lines, the .htaccess's path and text,
    the cron line)."""
    text = section("8. The report page")
    setup, check = [[l for l in b.splitlines() if l.strip()]
                    for b in code_blocks(text, "sh")]
    htaccess, = code_blocks(text, "apache")
    first, _, rest = htaccess.partition("\n")
    assert first.startswith("# " + GUIDE_HOME), first
    cron, = code_blocks(text, "cron")
    return setup, check, (first[2:].strip(), rest), cron.strip()


# ---- the host -----------------------------------------------------------

def account_ids():
    return pwd.getpwnam(ACCOUNT).pw_uid, grp.getgrnam(ACCOUNT).gr_gid


def write_suexec_conf(docroot_prefix):
    global _saved_suexec
    if _saved_suexec is None:
        try:
            with open(SUEXEC_CONF, "rb") as f:
                _saved_suexec = (f.read(), os.stat(SUEXEC_CONF).st_mode & 0o7777)
        except FileNotFoundError:
            _saved_suexec = (None, 0o644)
    tmp = SUEXEC_CONF + ".e2e-suexec"
    with open(tmp, "w") as f:
        # suexec-custom: line 1 the document root (a prefix: programs run
        # only below it), line 2 the userdir suffix.
        f.write("%s\npublic_html\n# written by tests/e2e_suexec.py; "
                "restored when it ends\n" % docroot_prefix)
    os.chmod(tmp, 0o644)
    os.replace(tmp, SUEXEC_CONF)


def restore_suexec_conf():
    global _saved_suexec
    if _saved_suexec is None:
        return
    content, mode = _saved_suexec
    if content is None:
        try:
            os.unlink(SUEXEC_CONF)
        except FileNotFoundError:
            pass
    else:
        tmp = SUEXEC_CONF + ".e2e-suexec"
        with open(tmp, "wb") as f:
            f.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, SUEXEC_CONF)
    _saved_suexec = None


def cleanup_module():
    """Everything setUpModule changed, undone; safe to call twice."""
    global HOSTING, _lock_fd, _sigterm
    if _sigterm is not None:
        signal.signal(signal.SIGTERM, _sigterm)
        _sigterm = None
    for host in list(_live_hosts):
        host.stop()
    restore_suexec_conf()
    try:
        pwd.getpwnam(ACCOUNT)
        subprocess.run(["usermod", "--home", "/nonexistent", ACCOUNT],
                       capture_output=True)
    except KeyError:
        pass
    if HOSTING:
        shutil.rmtree(HOSTING, ignore_errors=True)
        HOSTING = None
    if _lock_fd is not None:
        os.close(_lock_fd)
        _lock_fd = None


def setUpModule():
    global HOSTING, HOME, _lock_fd, _sigterm
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root: a user, suexec's config, Apache")
    if not os.path.exists(SUEXEC_BIN):
        raise AssertionError("%s missing: scripts/install-deps installs "
                             "apache2-suexec-custom" % SUEXEC_BIN)
    _lock_fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(_lock_fd, fcntl.LOCK_EX)
    # Killed (SIGTERM) or interrupted: still stop what we started and put
    # suexec's config back.
    atexit.register(cleanup_module)
    _sigterm = signal.signal(signal.SIGTERM, _interrupted)
    try:
        HOSTING = tempfile.mkdtemp(prefix="webhook-hosting-")
        os.chmod(HOSTING, 0o755)
        os.mkdir(os.path.join(HOSTING, "home"), 0o755)
        HOME = os.path.join(HOSTING, "home", ACCOUNT)
        try:
            grp.getgrnam(ACCOUNT)
        except KeyError:
            subprocess.run(["groupadd", "--system", ACCOUNT], check=True)
        try:
            pwd.getpwnam(ACCOUNT)
            subprocess.run(["usermod", "--home", HOME, "--shell", "/bin/bash",
                            ACCOUNT], check=True)
        except KeyError:
            subprocess.run(["useradd", "--system", "--gid", ACCOUNT,
                            "--no-create-home", "--home-dir", HOME,
                            "--shell", "/bin/bash", ACCOUNT], check=True)
        write_suexec_conf(os.path.join(HOSTING, "home"))
    except BaseException:
        cleanup_module()
        raise


def tearDownModule():
    cleanup_module()


def _interrupted(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


def uid_of(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Tap:
    """A TCP relay on 127.0.0.1 in front of Apache, keeping what each
    connection carried both ways: the test's "your.host"."""

    def __init__(self, target_port):
        self.target = target_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.conns = []          # [sent by the client, sent to it]
        self.socks = []
        self.stopping = False
        self.threads = [threading.Thread(target=self.accept, daemon=True)]
        self.threads[0].start()

    def accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(None)
            try:
                u = socket.create_connection(("127.0.0.1", self.target), 30)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            rec = [bytearray(), bytearray()]
            self.conns.append(rec)
            self.socks += [c, u]
            for a, b, buf in ((c, u, rec[0]), (u, c, rec[1])):
                t = threading.Thread(target=self.pump, args=(a, b, buf),
                                     daemon=True)
                t.start()
                self.threads.append(t)

    @staticmethod
    def pump(src, dst, buf):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                buf += data
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def request(self, webhook_id):
        """(headers dict with lower-case names, body, answer bytes) of the
        request that carried webhook_id."""
        for sent, got in list(self.conns):
            head, _, rest = bytes(sent).partition(b"\r\n\r\n")
            headers = {}
            for line in head.decode("latin-1").split("\r\n")[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            if headers.get("webhook-id") == webhook_id:
                n = int(headers.get("content-length", "0"))
                return headers, rest[:n], bytes(got)
        return None

    def stop(self):
        self.stopping = True
        self.sock.close()
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in self.threads:
            t.join(5)


class HostApache(Apache):
    """e2e_servers.Apache, stopped again when it does not come up."""

    def wait_tcp(self, port, timeout=60):
        try:
            super().wait_tcp(port, timeout)
        except Exception:
            self.stop()
            raise


# The host's part of the server config, cPanel-like: the account's virtual
# host, its programs run as the account, .htaccess files allowed
# everything (or, for a host that ignores them, nothing).  %R in the access
# log: the handler that answered (fcgid-script or cgi-script).
HOST_CONF = """
LogLevel info
LogFormat "%R %>s %{{webhook-id}}i %{{Content-Length}}i" handler
CustomLog "{run}/access.log" handler
<Files ".ht*">
    Require all denied
</Files>
<VirtualHost *:*>
    ServerName your.host
    DocumentRoot "{docroot}"
    SuexecUserGroup {account} {account}
</VirtualHost>
"""


class Host:
    """The account (a fresh home, public_html) and Apache serving it."""

    def __init__(self, override="All", modules=("suexec", "fcgid", "cgid")):
        self.apache = self.tap = None
        self.run = None
        self.modules = list(modules)
        _live_hosts.add(self)
        try:
            self.start(override)
        except BaseException:
            self.stop()
            raise

    def start(self, override):
        self.uid, self.gid = account_ids()
        shutil.rmtree(HOME, ignore_errors=True)
        os.mkdir(HOME)
        os.chown(HOME, self.uid, self.gid)
        os.chmod(HOME, 0o711)                # cPanel's homes
        self.dir = HOME
        self.docroot = os.path.join(HOME, "public_html")
        os.mkdir(self.docroot)
        os.chown(self.docroot, self.uid, self.gid)
        os.chmod(self.docroot, 0o755)
        with open(os.path.join(self.docroot, "index.html"), "w") as f:
            f.write("the shop\n")
        os.chown(os.path.join(self.docroot, "index.html"), self.uid, self.gid)
        # The host's own files (logs, sockets, pid): not the account's.
        self.run = tempfile.mkdtemp(prefix="run-", dir=HOSTING)
        os.chmod(self.run, 0o755)
        try:
            with open(SUEXEC_LOG, "rb") as f:
                self.suexec_log_at = len(f.read())
        except OSError:
            self.suexec_log_at = 0
        directory = re.sub(r"AllowOverride .*", "AllowOverride " + override,
                           HOST_DIRECTORY).format(docroot=self.docroot)
        body = HOST_CONF.format(run=self.run, docroot=self.docroot,
                                account=ACCOUNT) + directory
        self.apache = HostApache(self, self.modules, body,
                                 user=APACHE_USER, group=APACHE_USER)
        self.tap = Tap(self.apache.port)
        self.site = "http://127.0.0.1:%d" % self.tap.port

    def stop(self):
        _live_hosts.discard(self)
        if self.tap:
            self.tap.stop()
            self.tap = None
        if self.apache:
            self.apache.stop()
            self.apache = None
        if self.run:
            shutil.rmtree(self.run, ignore_errors=True)
            self.run = None
        shutil.rmtree(HOME, ignore_errors=True)

    def path(self, guide_path):
        return guide_path.replace(GUIDE_HOME, HOME)

    def text(self, guide_text):
        return guide_text.replace(GUIDE_HOME, HOME).replace(GUIDE_SITE,
                                                            self.site)

    def diag(self):
        out = [self.apache.logs()]
        for name in ("access.log",):
            try:
                with open(os.path.join(self.run, name),
                          errors="replace") as f:
                    out.append("== %s\n%s" % (name, f.read()[-3000:]))
            except OSError:
                pass
        try:
            with open(SUEXEC_LOG, "rb") as f:
                f.seek(self.suexec_log_at)
                out.append("== %s (this test's lines)\n%s" % (
                    SUEXEC_LOG, f.read()[-3000:].decode(errors="replace")))
        except OSError:
            pass
        log = os.path.join(HOME, "webhook", "webhook.log")
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                out.append("== %s\n%s" % (log, f.read()[-3000:]))
        return "\n".join(out)

    def handlers(self):
        """webhook-id -> the Apache handler that answered it (%R)."""
        out = {}
        try:
            with open(os.path.join(self.run, "access.log")) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 3:
                        out[parts[2]] = (parts[0], parts[1])
        except OSError:
            pass
        return out

    # -- the account user, at a terminal (SSH) and under cron --------------

    def login_env(self):
        return {"HOME": HOME, "USER": ACCOUNT, "LOGNAME": ACCOUNT,
                "SHELL": "/bin/bash", "TERM": "xterm", "LANG": "C.UTF-8",
                "PATH": "/usr/local/bin:/usr/bin:/bin"}

    def at_terminal(self, line, cwd=None, timeout=120):
        """One command line typed at the account's shell: stdin is a
        terminal (a pty), as over SSH; output captured."""
        master, slave = os.openpty()
        try:
            return subprocess.run(
                ["/bin/bash", "-c", line], stdin=slave, capture_output=True,
                text=True, timeout=timeout, cwd=cwd or HOME,
                env=self.login_env(), user=ACCOUNT, group=ACCOUNT,
                extra_groups=[], umask=0o022)
        finally:
            os.close(slave)
            os.close(master)

    def typing(self, line, typed=(), cwd=None, timeout=120):
        """One command line at the account's own terminal (a pty that is
        its controlling terminal, as over SSH, so `htpasswd` and `curl -u`
        prompt on it), each string of `typed` typed after the next
        password prompt.  (exit status, what the terminal showed)."""
        env = self.login_env()
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
                os.chdir(cwd or HOME)
                os.umask(0o022)
                os.execve("/bin/bash", ["/bin/bash", "-c", line], env)
            finally:
                os._exit(127)
        out, seen, left = b"", 0, list(typed)
        deadline = time.monotonic() + timeout
        try:
            while True:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                    os.kill(pid, signal.SIGKILL)
                    raise AssertionError("%s: no end after %d s: %r"
                                         % (line, timeout, out))
                try:
                    chunk = os.read(fd, 4096)
                except OSError:         # EIO: the terminal's last process ended
                    break
                if not chunk:
                    break
                out += chunk
                if left and re.search(rb"password[^\n]*: ?$", out[seen:], re.I):
                    os.write(fd, left.pop(0).encode() + b"\n")
                    seen = len(out)
        finally:
            _, status = os.waitpid(pid, 0)
            os.close(fd)
        return os.waitstatus_to_exitcode(status), out.decode(errors="replace")

    def session(self, lines, timeout=120):
        """Lines typed one after the other in one shell at a terminal,
        from the home directory: [(line, exit status, output)]."""
        script = "".join('%s\nprintf "\\n@@rc=%%d@@\\n" $?\n' % l
                         for l in lines)
        master, slave = os.openpty()
        try:
            r = subprocess.run(
                ["/bin/bash", "-c", script], stdin=slave,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                timeout=timeout, cwd=HOME, env=self.login_env(), user=ACCOUNT,
                group=ACCOUNT, extra_groups=[], umask=0o022)
        finally:
            os.close(slave)
            os.close(master)
        parts = re.split(r"\n@@rc=(\d+)@@\n", r.stdout)
        return [(line, int(parts[2 * i + 1]), parts[2 * i].strip("\n"))
                for i, line in enumerate(lines)]

    def as_cron(self, command, timeout=120):
        """The command part of a crontab line, as cron runs it."""
        env = {"HOME": HOME, "LOGNAME": ACCOUNT, "SHELL": "/bin/sh",
               "PATH": "/usr/bin:/bin"}
        return subprocess.run(
            ["/bin/sh", "-c", command], stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout, cwd=HOME,
            env=env, user=ACCOUNT, group=ACCOUNT, extra_groups=[],
            umask=0o022)

    def query(self, db, sql):
        """Rows of an SQLite file, read as the account (so that nothing
        the account needs, such as a -shm, is ever created as root)."""
        if not os.path.exists(db):
            return []
        script = ("import base64, json, sqlite3, sys\n"
                  "con = sqlite3.connect(sys.argv[1], timeout=10)\n"
                  "rows = [[base64.b64encode(v).decode() if isinstance(v, bytes)"
                  " else v for v in r] for r in con.execute(sys.argv[2])]\n"
                  "print(json.dumps(rows))\n")
        r = subprocess.run([SYSTEM_PYTHON, "-c", script, db, sql],
                           capture_output=True, text=True, timeout=60,
                           user=ACCOUNT, group=ACCOUNT, extra_groups=[],
                           cwd=HOME, env={"PATH": "/usr/bin:/bin"})
        if r.returncode != 0:
            if "no such table" in r.stderr:
                return []
            raise AssertionError("reading %s: %s" % (db, r.stderr))
        return json.loads(r.stdout)

    def events(self):
        """webhook_id -> (state, type, body bytes)."""
        rows = self.query(os.path.join(HOME, "webhook", "inbox.db"),
                          "SELECT webhook_id, state, type, body FROM events")
        return {r[0]: (r[1], r[2], base64.b64decode(r[3] or ""))
                for r in rows}

    def fcgid_processes(self):
        """pids below Apache running the uploaded receiver as the account,
        still there between requests: mod_fcgid's, not a CGI run."""
        exe = os.path.join(HOME, "webhook", "webhook.fcgi")
        return [p for p in descendants(self.apache.proc.pid)
                if exe_of(p) == exe and uid_of(p) == self.uid]

    def suexec_enabled(self, timeout=30):
        """Apache says so at start-up (possibly after its port opened)."""
        deadline = time.time() + timeout
        while True:
            with open(self.apache.log_path, errors="replace") as f:
                if "suEXEC mechanism enabled" in f.read():
                    return True
            if time.time() > deadline:
                return False
            time.sleep(0.1)

    def suexec_runs(self):
        """What suexec logged, since this host started, of the programs it
        ran as the account."""
        try:
            with open(SUEXEC_LOG, "rb") as f:
                f.seek(self.suexec_log_at)
                text = f.read().decode(errors="replace")
        except OSError:
            return []
        want = "uid: (%d/%s) gid: (%d/%s) cmd: " % (self.uid, ACCOUNT,
                                                    self.gid, ACCOUNT)
        return [l.split(want, 1)[1] for l in text.splitlines() if want in l]


# ---- the release --------------------------------------------------------

def version():
    with open(os.path.join(ROOT, "VERSION")) as f:
        return f.read().strip()


DIST_DIR = os.path.join(STATIC, "dist")
DIST_TGZ = os.path.join(DIST_DIR, "webhook-inbox-%s-linux-x86_64.tar.gz"
                        % version())


def makefile_has_dist():
    with open(os.path.join(ROOT, "Makefile")) as f:
        return re.search(r"^dist-tarball:", f.read(), re.M) is not None


def built_programs():
    """{name: path} of the programs the release must hold, and a problem
    (or None): build-static's, or (WEBHOOK_SUEXEC_DYNAMIC=1) build's for
    a missing one."""
    found, missing = {}, []
    for name in ("webhook.fcgi", "webhook-drain"):
        src = os.path.join(STATIC, name)
        if not os.path.exists(src):
            if os.environ.get("WEBHOOK_SUEXEC_DYNAMIC") != "1":
                missing.append(src)
                continue
            print("e2e_suexec: %s missing, using build/%s "
                  "(WEBHOOK_SUEXEC_DYNAMIC=1)" % (src, name), file=sys.stderr)
            src = os.path.join(DYNAMIC, name)
        found[name] = src
    if missing:
        return found, ("the release's programs are not built (make "
                       "static): " + ", ".join(missing))
    return found, None


def release_dir(parent):
    """What the tarball unpacks to, in `parent`: `make dist`'s tarball
    unpacked when there is one (its programs must be the built ones), else
    a directory made like it from the two programs and conf/.  Returns
    (directory, [where the programs came from], problem or None)."""
    programs, problem = built_programs()
    if problem:
        return None, [], problem
    if os.path.exists(DIST_TGZ):
        with tarfile.open(DIST_TGZ) as t:
            if hasattr(tarfile, "data_filter"):
                t.extractall(parent, filter="data")
            else:
                t.extractall(parent)
        rel = os.path.join(parent, "webhook-inbox-%s" % version())
        for name, src in programs.items():
            with open(src, "rb") as a, open(os.path.join(rel, name), "rb") as b:
                if a.read() != b.read():
                    return rel, [], ("%s holds another %s than %s: make "
                                     "dist-tarball" % (DIST_TGZ, name, src))
        return rel, [os.path.relpath(DIST_TGZ, ROOT)], None
    if makefile_has_dist() and os.environ.get("WEBHOOK_SUEXEC_DYNAMIC") != "1":
        return None, [], "%s is not built (make dist-tarball)" % DIST_TGZ
    rel = os.path.join(parent, "webhook-inbox-%s" % version())
    os.makedirs(rel)
    shutil.copytree(CONF_DIR, os.path.join(rel, "conf"))
    for name, src in programs.items():
        shutil.copy(src, os.path.join(rel, name))
    return rel, [os.path.relpath(p, ROOT) for p in programs.values()], None


class GuideCase(unittest.TestCase):
    override = "All"
    modules = ("suexec", "fcgid", "cgid")

    def setUp(self):
        self.host = Host(self.override, self.modules)
        self.addCleanup(self.host.stop)
        self.assertTrue(self.host.suexec_enabled(),
                        "Apache did not enable suEXEC\n" + self.host.diag())
        parent = tempfile.mkdtemp(prefix="release-", dir=HOSTING)
        self.addCleanup(shutil.rmtree, parent, True)
        self.release, self.programs, problem = release_dir(parent)
        if problem:
            self.fail(problem)
        self.times = []
        self.ends = []           # when each step-5 command returned

    def timed(self, what, start):
        self.times.append((what, time.monotonic() - start))

    # -- step 2 ---------------------------------------------------------

    def upload(self):
        dirs, rows = upload_plan()
        self.assertEqual([d for d, _ in dirs],
                         [GUIDE_HOME + "/webhook",
                          GUIDE_HOME + "/public_html/webhook"], dirs)
        for d, mode in dirs:
            p = self.host.path(d)
            os.mkdir(p)
            os.chown(p, self.host.uid, self.host.gid)
            os.chmod(p, mode)
        self.assertTrue(rows, "HOSTING.md: no upload table")
        for src, dst, mode in rows:
            self.assertTrue(dst.startswith(GUIDE_HOME + "/"), dst)
            dst = self.host.path(dst)
            shutil.copyfile(os.path.join(self.release, src), dst)
            os.chown(dst, self.host.uid, self.host.gid)
            os.chmod(dst, mode)
        return rows

    # -- step 3 ---------------------------------------------------------

    def edit(self, secret=SECRET_A):
        conf = os.path.join(HOME, "webhook", "webhook.conf")
        with open(conf) as f:
            lines = f.read().split("\n")
        for key, value in edit_lines():
            if key == "secret":
                # "whsec_…the secret from the provider's dashboard…"
                self.assertTrue(value.startswith("whsec_"), value)
                value = secret
            new = "%s = %s" % (key, self.host.path(value))
            # The example's line for the key, set or commented out, among
            # the top-level keys (a [source NAME] has its own `secret`).
            top = next((i for i, l in enumerate(lines)
                        if re.match(r"#?\s*\[source ", l)), len(lines))
            at = [i for i, l in enumerate(lines[:top])
                  if re.match(r"#?\s*%s\s*=" % re.escape(key), l)]
            self.assertEqual(len(at), 1, "webhook.conf.example: no single "
                             "line for %r to edit: %r" % (key, at))
            lines[at[0]] = new
        self.rewrite(conf, "\n".join(lines))
        wrapper = os.path.join(HOME, "public_html", "webhook", "webhook.fcgi")
        with open(wrapper) as f:
            text = f.read()
        self.assertIn(GUIDE_HOME, text)
        self.rewrite(wrapper, text.replace(GUIDE_HOME, HOME))
        return conf

    @staticmethod
    def rewrite(path, text):
        """An edit in place: the file keeps its owner and mode."""
        with open(path, "r+") as f:
            f.write(text)
            f.truncate()

    # -- step 4 ---------------------------------------------------------

    def check(self):
        r = self.host.at_terminal(self.host.text(check_command()))
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, "check failed:\n" + out)
        self.assertNotIn("FAIL ", out, "check failed:\n" + out)
        return out

    # -- step 5 ---------------------------------------------------------

    def run_step5(self, lines=None):
        """Each line of the guide's block at the account's shell; `cd`
        sets where the next ones run.  [(line, result)]."""
        cwd, out = HOME, []
        for line in lines or step5_commands():
            line = self.host.text(line)
            if line.startswith("cd "):
                cwd = line[3:].strip()
                self.assertTrue(os.path.isdir(cwd), line)
                continue
            out.append((line, self.host.at_terminal(line, cwd=cwd)))
            self.ends.append(time.monotonic())
        return out

    def assertWireStored(self, webhook_id, events):
        wire = self.host.tap.request(webhook_id)
        self.assertIsNotNone(wire, "no request with webhook-id %s went "
                             "through the relay" % webhook_id)
        headers, body, _ = wire
        # What send signed is what it sent (an independent HMAC) ...
        self.assertEqual(sign(SECRET_A, webhook_id,
                              int(headers["webhook-timestamp"]), body),
                         headers["webhook-signature"])
        # ... and what was stored, byte for byte.
        self.assertIn(webhook_id, events, self.host.diag())
        self.assertEqual(events[webhook_id][2], body)
        return body


class TestQuickstart(GuideCase):
    """Steps 1 (when `make dist` made the tarball) to 6 as written, timed."""

    def download(self):
        """Step 1 on the host, as the account: what the release page
        offers (the tarball and the checksums beside it) in the home
        directory, then the guide's commands.  Returns its transcript."""
        for name in sorted(os.listdir(DIST_DIR)):
            src = os.path.join(DIST_DIR, name)
            if os.path.isfile(src):
                dst = os.path.join(HOME, name)
                shutil.copyfile(src, dst)
                os.chown(dst, self.host.uid, self.host.gid)
                os.chmod(dst, 0o644)
        transcript = self.host.session(download_commands())
        for line, rc, out in transcript:
            with self.subTest(step=1, command=line):
                self.assertEqual(rc, 0, "%s\n%s\n(beside the tarball: %s)" % (
                    line, out, sorted(os.listdir(DIST_DIR))))
        unpacked = os.path.join(HOME, "webhook-inbox-%s" % version())
        if os.path.isdir(unpacked):
            self.release = unpacked
        return transcript

    def test_from_download_to_the_first_handled_event(self):
        t0 = t = time.monotonic()
        step1 = None
        if os.path.exists(DIST_TGZ):
            step1 = self.download()
            self.timed("1 download (check, unpack)", t)
        t = time.monotonic()
        rows = self.upload()
        self.timed("2 upload", t)

        t = time.monotonic()
        self.edit()
        self.timed("3 edit", t)

        t = time.monotonic()
        check_out = self.check()
        self.timed("4 check", t)

        t = time.monotonic()
        results = self.run_step5()
        self.timed("5 test (2 send, list)", t)
        sends = [(l, r) for l, r in results if " send " in l]
        self.assertEqual(len(sends), 2, [l for l, _ in results])
        ids = []
        for line, r in sends:
            self.assertEqual(r.returncode, 0, "%s\n%s%s\n%s" % (
                line, r.stdout, r.stderr, self.host.diag()))
            m = re.fullmatch(r"200 webhook-id=(msg_\w+) stored\n", r.stdout)
            self.assertTrue(m, "%s: %r %r" % (line, r.stdout, r.stderr))
            ids.append(m.group(1))
        sent_at = time.time()
        events = self.host.events()
        small = self.assertWireStored(ids[0], events)
        large = self.assertWireStored(ids[1], events)
        self.assertEqual(len(large), 250000)
        self.assertLess(len(small), 131072)
        self.assertEqual(sorted(events), sorted(ids))
        for i in ids:
            self.assertEqual(events[i][:2], ("pending", "webhook_inbox.test"))
        # The small one through mod_fcgid, the large one through plain CGI
        # (the .htaccess's <If>), both as the account through suEXEC.
        handlers = self.host.handlers()
        self.assertEqual(handlers.get(ids[0]), ("fcgid-script", "200"),
                         self.host.diag())
        self.assertEqual(handlers.get(ids[1]), ("cgi-script", "200"),
                         self.host.diag())
        self.assertTrue(self.host.fcgid_processes(),
                        "no mod_fcgid process running as %s\n%s"
                        % (ACCOUNT, self.host.diag()))
        # suexec started both: the FastCGI process, the CGI run.
        self.assertEqual(self.host.suexec_runs(), ["webhook.fcgi"] * 2,
                         self.host.diag())
        listed = [r for l, r in results if l.endswith(" list")]
        self.assertEqual(len(listed), 1)
        self.assertEqual(listed[0].returncode, 0, listed[0].stderr)
        for i in ids:
            self.assertIn(i, listed[0].stdout)

        # Step 6: the crontab line, at the next cron minute: by then the
        # events are older than `settle` (2 s by default).
        t = time.monotonic()
        line = cron_line()
        command = self.host.text(line.split(None, 5)[5])
        time.sleep(max(0.0, sent_at + 3 - time.time()))
        self.timed("6 (waiting for settle)", t)
        t = time.monotonic()
        r = self.host.as_cron(command)
        self.timed("6 cron run", t)
        total = time.monotonic() - t0
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""),
                         "%s\n%s" % (command, self.host.diag()))
        events = self.host.events()
        self.assertEqual({i: events[i][0] for i in ids},
                         {i: "done" for i in ids}, self.host.diag())
        # conf/handler.php ran, as the account, for each of them.
        app = self.host.query(os.path.join(HOME, "webhook", "app.db"),
                              "SELECT webhook_id FROM processed")
        self.assertEqual(sorted(r[0] for r in app), sorted(ids))

        print("\n--- HOSTING.md on a suEXEC host (%s; %d files uploaded)"
              % (", ".join(self.programs), len(rows)))
        if step1 is None:
            print("(step 1 not followed: no %s)" % os.path.relpath(DIST_TGZ, ROOT))
        for line, rc, out in step1 or ():
            print("$ %s\n%s%s" % (line, out + "\n" if out else "",
                                  "(exit %d)" % rc if rc else ""))
        print("$ " + self.host.text(check_command()))
        print(check_out.rstrip())
        for line, res in results:
            print("$ %s\n%s" % (line, (res.stdout + res.stderr).rstrip()))
        print("$ %s   # cron: exit %d, %d bytes of output" % (
            command, r.returncode, len(r.stdout + r.stderr)))
        for what, secs in self.times:
            print("  step %-24s %6.2f s" % (what, secs))
        first = "1" if step1 is not None else "2"
        print("  first event stored after %8.2f s (from the start of step %s)"
              % (self.ends[0] - t0, first))
        print("  both handled after %14.2f s (steps %s-6; the cron run "
              "waited for `settle`, not for the next cron minute)"
              % (total, first))


class TestReportPage(GuideCase):
    """Step 8 as written, the login included: the directory and the
    password file made with the guide's commands at the account's
    terminal (htpasswd asking for the password), the .htaccess where the
    guide puts it, then the guide's check (401 without the password, the
    metrics with it, curl asking for it) and the cron line with
    --report.  Apache checks the password as www-data: the file must be
    readable to it (in ~/webhook, 700, every login got 500)."""
    modules = GuideCase.modules + ("auth_basic", "authn_core", "authn_file",
                                   "authz_user")
    password = "correct horse battery 8"

    def get(self, path, auth=None):
        c = http.client.HTTPConnection("127.0.0.1", self.host.tap.port,
                                       timeout=30)
        headers = {}
        if auth:
            headers["Authorization"] = "Basic " + base64.b64encode(
                auth.encode()).decode()
        try:
            c.request("GET", path, headers=headers)
            g = c.getresponse()
            return g.status, g.read()
        finally:
            c.close()

    def test_login_as_the_guide_says(self):
        self.upload()
        self.edit()
        self.check()
        setup, check, (where, htaccess), cron = step8_blocks()
        for line in setup:
            line = self.host.text(line)
            rc, out = self.host.typing(line, [self.password] * 2)
            self.assertEqual(rc, 0, "%s\n%s" % (line, out))
        # The .htaccess, uploaded by the account where the guide says.
        path = self.host.path(where)
        with open(path, "w") as f:
            f.write(self.host.text(htaccess))
        os.chown(path, self.host.uid, self.host.gid)
        os.chmod(path, 0o644)
        # The check: the files written once, 401 without the password,
        # the metrics with it (curl asks for it at the terminal).
        self.assertEqual(len(check), 3, check)
        rc, out = self.host.typing(self.host.text(check[0]))
        self.assertEqual(rc, 0, out)
        rc, out = self.host.typing(self.host.text(check[1]))
        self.assertEqual((rc, out.strip()), (0, "401"), self.host.diag())
        rc, out = self.host.typing(self.host.text(check[2]), [self.password])
        self.assertEqual(rc, 0, out)
        self.assertIn("webhook_received_total 0", out, self.host.diag())
        # The page: 200 with the password, 401 with a wrong one or none.
        status, body = self.get("/webhook-report/", "you:" + self.password)
        self.assertEqual(status, 200, self.host.diag())
        self.assertIn(b"<h1>webhook inbox</h1>", body)
        self.assertEqual(self.get("/webhook-report/", "you:wrong")[0], 401)
        self.assertEqual(self.get("/webhook-report/")[0], 401)
        # The password file is not in the document root, and the web
        # cannot have the report's .htaccess either.
        self.assertEqual(self.get("/webhook-report/.htaccess",
                                  "you:" + self.password)[0], 403)
        # The cron line with --report: silent, and the page rewritten.
        page = os.path.join(os.path.dirname(self.host.path(where)),
                            "index.html")
        before = os.stat(page).st_mtime_ns
        r = self.host.as_cron(self.host.text(cron.split(None, 5)[5]))
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        status, body = self.get("/webhook-report/metrics.prom",
                                "you:" + self.password)
        self.assertEqual(status, 200)
        self.assertIn(b"webhook_drain_runs_total{result=\"ok\"} 1", body)
        self.assertGreaterEqual(os.stat(page).st_mtime_ns, before)


class TestTheLog(GuideCase):
    """Step 5's 503 row: "the reason is the last line of webhook.log" (the
    `log` of step 3): the reason in the site's own file, not only in
    Apache's error log, which a shared-hosting user often cannot read."""

    def setUp(self):
        super().setUp()
        self.upload()
        self.conf = self.edit()
        self.log = os.path.join(HOME, "webhook", "webhook.log")

    def edit_conf(self, old, new):
        with open(self.conf) as f:
            text = f.read()
        self.assertEqual(text.count(old), 1, old)
        self.rewrite(self.conf, text.replace(old, new))

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def test_a_database_path_typo(self):
        # Step 3 with a slip in the path: the config loads, the inbox does
        # not open.  Step 5's first send gets the 503.
        good = "database = %s/webhook/inbox.db" % HOME
        self.edit_conf(good, good.replace("/webhook/inbox", "/webhok/inbox"))
        (line, r), = self.run_step5(step5_commands()[:2])
        self.assertNotEqual(r.returncode, 0, r.stdout)
        m = re.match(r"503 webhook-id=(msg_\w+) ", r.stdout)
        self.assertTrue(m, "%s: %r %r" % (line, r.stdout, r.stderr))
        # The reason (an inbox: line, as the guide's 503 row says), and
        # the refusal pointing at it (a FastCGI process logs the reason
        # once, when it opens the inbox, not at each refusal).
        log = self.log_text()
        self.assertRegex(log, r"inbox: %s/webhok/inbox.db: cannot open"
                         % re.escape(HOME), self.host.diag())
        self.assertIn("refused 503 webhook-id=%s" % m.group(1), log)
        self.assertEqual(self.host.events(), {})

    def test_a_typo_in_a_key(self):
        # Step 3 with a slip in a key: the config does not load at all.
        # The user's own `send` says so at once (it reads the same file);
        # the provider's deliveries meanwhile get 503, and the reason must
        # be where the guide says.
        self.edit_conf("\ndatabase = ", "\ndatabse = ")
        (line, r), = self.run_step5(step5_commands()[:2])
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("databse", r.stderr)
        mid = "msg_typo_key"
        body = event_body(mid)
        ts = int(time.time())
        status, answer = post(self.host.tap.port, "/webhook/webhook.fcgi", {
            "webhook-id": mid, "webhook-timestamp": str(ts),
            "webhook-signature": sign(SECRET_A, mid, ts, body),
            "content-type": "application/json"}, body)
        self.assertEqual(status, 503, answer)
        self.assertIn("databse: unknown key", self.log_text(),
                      "the reason is not in %s (HOSTING.md, step 5, the 503 "
                      "row), only in Apache's error log\n%s"
                      % (self.log, self.host.diag()))


class TestHostIgnoringHtaccess(GuideCase):
    """Step 2's promise: on a host that ignores .htaccess files
    (AllowOverride None) the wrapper, chmod 700, is refused (403) rather
    than shown, and `send` fails."""
    override = "None"

    def test_fails_closed(self):
        self.upload()
        self.edit()
        self.check()
        (line, r), = self.run_step5(step5_commands()[:2])
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"^403 webhook-id=msg_\w+ \(not "
                         r"webhook.fcgi's answer", r.stderr)
        self.assertEqual(self.host.events(), {})
        wrapper = os.path.join(HOME, "public_html", "webhook", "webhook.fcgi")
        with open(wrapper, "rb") as f:
            secret_lines = [l for l in f.read().split(b"\n")
                            if l and not l.startswith(b"#")]
        mid = re.match(r"^403 webhook-id=(msg_\w+)", r.stdout).group(1)
        _, _, answer = self.host.tap.request(mid)
        c = http.client.HTTPConnection("127.0.0.1", self.host.apache.port,
                                       timeout=30)
        c.request("GET", "/webhook/webhook.fcgi")
        g = c.getresponse()
        got = (g.status, g.read())
        c.close()
        self.assertEqual(got[0], 403, got)
        for text in (answer, got[1]):
            for l in secret_lines + [HOME.encode(), b"WEBHOOK_CONF"]:
                self.assertNotIn(l, text)
        self.assertEqual(self.host.fcgid_processes(), [])


class TestHostWithoutHandlerModules(GuideCase):
    """conf/apache-htaccess fails closed: a host that reads the .htaccess
    but has neither mod_cgid/mod_cgi nor mod_fcgid.  The handler then names
    no module, and Apache would serve the wrapper as a file: the snippet's
    fail-closed block refuses it (403), also once the wrapper is made
    readable to the web server (chmod 755, the two-user setup), so `send`
    fails, nothing is stored and nothing of the setup can be downloaded."""
    modules = ("suexec",)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.host.apache.port,
                                       timeout=30)
        try:
            c.request("GET", path)
            g = c.getresponse()
            return g.status, g.read()
        finally:
            c.close()

    def test_fails_closed(self):
        self.upload()
        self.edit()
        self.check()
        wrapper = os.path.join(HOME, "public_html", "webhook", "webhook.fcgi")
        for mode in (0o700, 0o755):
            os.chmod(wrapper, mode)
            for line, r in self.run_step5(step5_commands()[:3]):
                self.assertNotEqual(r.returncode, 0, "%o %s: %s%s" % (
                    mode, line, r.stdout, r.stderr))
                self.assertRegex(r.stdout, r"^403 webhook-id=msg_\w+ \(not "
                                 r"webhook.fcgi's answer", r.stderr)
            self.assertEqual(self.host.events(), {})
            with open(wrapper, "rb") as f:
                text = f.read()
            for path in ("/webhook/webhook.fcgi", "/webhook/.htaccess",
                         "/webhook/", "/webhook.fcgi", "/webhook.conf"):
                status, body = self.get(path)
                self.assertNotEqual(status, 200, (mode, path, body))
                self.assertNotIn(b"WEBHOOK_CONF", body)
                self.assertNotIn(HOME.encode(), body)
            self.assertEqual(self.get("/webhook/webhook.fcgi")[0], 403)
        self.assertEqual(self.host.fcgid_processes(), [])


class TestHostWithFastCgiOnly(GuideCase):
    """conf/apache-htaccess, docs/HOSTING.md step 5 (the 500 row): mod_fcgid
    without mod_cgid/mod_cgi.  Small bodies are stored through mod_fcgid;
    the 250 KB one, which the snippet gives plain CGI elsewhere, gets
    mod_fcgid's error (no 2xx, the provider retries) instead of the wrapper
    served as a file, also when the wrapper is readable (chmod 755)."""
    modules = ("suexec", "fcgid")

    def test_large_bodies_fail_closed(self):
        self.upload()
        self.edit()
        self.check()
        wrapper = os.path.join(HOME, "public_html", "webhook", "webhook.fcgi")
        os.chmod(wrapper, 0o755)
        (l1, small), (l2, large) = self.run_step5(step5_commands()[:3])
        self.assertEqual(small.returncode, 0, small.stdout + small.stderr)
        self.assertRegex(small.stdout, r"^200 webhook-id=msg_\w+ stored")
        self.assertNotEqual(large.returncode, 0, large.stdout + large.stderr)
        self.assertNotRegex(large.stdout, r"^2\d\d ")
        self.assertEqual(len(self.host.events()), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
