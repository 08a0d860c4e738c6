"""The VPS path (README, "VPS quickstart"; docs/vps.md): make install and
uninstall, the man pages (mandoc's lint, and no drift from --help and the
config table), the Debian package (lintian, its contents, an install into
a throwaway root), the systemd units (systemd-analyze verify, and their
command lines run as systemd would run them, behind a real nginx), the
log rotated by a real logrotate while the receiver and the drainer write,
and a package upgrade under the running receiver.

There is no systemd as PID 1 on a test machine.  What runs here, and
what is only verified:

  run       the package's own binaries, config example, nginx snippet,
            logrotate snippet and units, from the .deb (dpkg -x): each
            unit's ExecStart= with its User=, Group=, UMask=,
            Environment= (and nothing else of ours), NoNewPrivileges=;
            ProtectSystem=strict + ReadWritePaths= as systemd makes them
            (a mount namespace: / read-only, the listed paths bound
            writable); the .socket's ListenStream=, SocketUser=,
            SocketGroup=, SocketMode= and Backlog=, its socket passed on
            fd 3 with LISTEN_FDS=1 and LISTEN_PID.  nginx runs as
            www-data, as Debian's does.  The package installed by dpkg
            into a throwaway root (--root, maintainer scripts run with
            DPKG_ROOT): users, directories, nothing enabled or started;
            then again (an upgrade), then purged.
  verified  systemd-analyze verify on the units (syntax, the programs and
            man pages they name).  Not emulated: the timer's schedule
            (the drain service is started by the test instead), PrivateTmp=
            (here /tmp is read-only instead: stricter), ProtectHome=,
            PrivateDevices=, ProtectKernelTunables=,
            ProtectControlGroups=, RestrictAddressFamilies=, and `apt
            install` itself onto this machine (it would add users and
            files to the system the other tests run on).

Paths: the units and the config name /usr, /etc/webhook-inbox,
/var/lib/webhook-inbox, /var/log/webhook-inbox and /run/webhook-inbox;
here each lives under a temporary root R, and the test rewrites those
prefixes to R (only those: the rest is the host's).
"""
import glob
import grp
import gzip
import http.client
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
import unittest

from harness import ROOT, SECRET_A, event_body, free_port, sign

WEB, CRON, GROUP = "webhook-web", "webhook-cron", "webhook"
NGINX_USER = "www-data"
VERSION = open(os.path.join(ROOT, "VERSION")).read().strip()
DEB_DIR = os.path.join(ROOT, "build", "deb")
TOOLS = ("mandoc", "lintian", "logrotate", "nginx", "systemd-analyze",
         "dpkg-buildpackage", "dh", "setpriv", "unshare")
# The paths the package's files name, rewritten under a test's root.
PREFIXES = ("/usr/", "/etc/webhook-inbox", "/var/lib/webhook-inbox",
            "/var/log/webhook-inbox", "/run/webhook-inbox")
MANS = {"webhook-drain": "man/webhook-drain.1",
        "webhook.conf": "man/webhook.conf.5",
        "webhook.fcgi": "man/webhook.fcgi.8"}
# systemd's PATH for services (systemd.exec(5), "Environment").
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(argv, **kw)


def arch():
    return run(["dpkg", "--print-architecture"]).stdout.strip()


DEB = os.path.join(DEB_DIR, "webhook-inbox_%s_%s.deb" % (VERSION, arch()))


def newest_source():
    """The newest mtime of what goes into the package."""
    t = 0
    for top in ("Makefile", "VERSION", "README.md", "schema.sql",
                "schema-pg.sql", "webhook.fcgi.c", "webhook-drain.c",
                "lib", "conf", "man", "debian", "docs"):
        p = os.path.join(ROOT, top)
        for d, _, fs in os.walk(p) if os.path.isdir(p) else [("", [], [p])]:
            for f in fs:
                t = max(t, os.stat(os.path.join(d, f)).st_mtime)
    return t


def setUpModule():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root: users, mount namespaces, dpkg")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise RuntimeError("missing %s: run scripts/install-deps" %
                           " ".join(missing))
    try:
        grp.getgrnam(GROUP)
    except KeyError:
        subprocess.run(["groupadd", "--system", GROUP], check=True)
    for user in (WEB, CRON):
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--system", "--gid", GROUP,
                            "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", user], check=True)
    # make test-all builds the package first (make deb); alone, this
    # suite builds it when it is missing or older than its sources.
    if not os.path.exists(DEB) or os.stat(DEB).st_mtime < newest_source():
        if os.environ.get("WEBHOOK_DEB_BUILT"):
            raise RuntimeError("%s missing or stale after make deb" % DEB)
        p = run(["make", "-s", "deb"], cwd=ROOT)
        if p.returncode != 0:
            raise RuntimeError("make deb failed:\n" + p.stdout + p.stderr)


def under(root, text):
    """`text` with the package's paths moved under `root`."""
    return re.sub(r"(?<![\w./-])(%s)" % "|".join(re.escape(p) for p in PREFIXES),
                  lambda m: root + m.group(1), text)


def unit(path):
    """A unit file as {section: [(key, value)]}, in order (keys repeat)."""
    out, sec = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                sec = out.setdefault(line.strip("[]"), [])
            else:
                k, v = line.split("=", 1)
                sec.append((k.strip(), v.strip()))
    return out


def one(sec, key, default=None):
    vals = [v for k, v in sec if k == key]
    return vals[-1] if vals else default


def every(sec, key):
    return [w for k, v in sec if k == key for w in v.split()]


def extract(deb, root):
    os.makedirs(root, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", deb, root], check=True)


# --------------------------------------------------------------------------


class TestInstall(unittest.TestCase):
    """make install DESTDIR PREFIX, then make uninstall."""

    def setUp(self):
        self.dest = tempfile.mkdtemp(prefix="webhook-vps-install-")

    def tearDown(self):
        shutil.rmtree(self.dest, ignore_errors=True)

    def files(self):
        return {os.path.relpath(os.path.join(d, f), self.dest)
                for d, _, fs in os.walk(self.dest) for f in fs}

    def test_install_then_uninstall_exactly(self):
        p = run(["make", "-s", "install", "DESTDIR=" + self.dest,
                 "PREFIX=/usr/local"], cwd=ROOT)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        conf = sorted(n for n in os.listdir(os.path.join(ROOT, "conf"))
                      if os.path.isfile(os.path.join(ROOT, "conf", n)))
        units = sorted(os.listdir(os.path.join(ROOT, "conf", "systemd")))
        docs = sorted(n for n in os.listdir(os.path.join(ROOT, "docs"))
                      if n.endswith((".md", ".json")))
        want = {"usr/local/bin/webhook-drain", "usr/local/sbin/webhook.fcgi",
                "usr/local/share/man/man1/webhook-drain.1",
                "usr/local/share/man/man5/webhook.conf.5",
                "usr/local/share/man/man8/webhook.fcgi.8",
                "usr/local/share/doc/webhook-inbox/README.md"}
        want |= {"usr/local/share/webhook-inbox/" + n for n in conf}
        want |= {"usr/local/lib/systemd/system/" + n for n in units}
        want |= {"usr/local/share/doc/webhook-inbox/docs/" + n for n in docs}
        self.assertEqual(self.files(), want)
        for f in want:
            mode = stat.S_IMODE(os.stat(os.path.join(self.dest, f)).st_mode)
            src = os.path.join(ROOT, "conf", os.path.basename(f))
            exe = "/bin/" in f or "/sbin/" in f or (
                "/share/webhook-inbox/" in f and os.access(src, os.X_OK))
            self.assertEqual(mode, 0o755 if exe else 0o644, f)
        # The units name the programs where they were installed.
        for u in units:
            with open(os.path.join(self.dest, "usr/local/lib/systemd/system",
                                   u)) as f:
                text = f.read()
            for m in re.findall(r"^ExecStart=(\S+)", text, re.M):
                self.assertIn(m, ("/usr/local/sbin/webhook.fcgi",
                                  "/usr/local/bin/webhook-drain"), u)
            self.assertNotIn("/usr/bin/", text, u)
            self.assertNotIn("/usr/sbin/", text, u)
        for prog in ("bin/webhook-drain", "sbin/webhook.fcgi"):
            out = run([os.path.join(self.dest, "usr/local", prog),
                       "--version"]).stdout
            self.assertIn(VERSION, out, prog)
        p = run(["make", "-s", "uninstall", "DESTDIR=" + self.dest,
                 "PREFIX=/usr/local"], cwd=ROOT)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.files(), set())
        # The package's own directories are gone; shared ones (bin/) stay.
        for d in ("usr/local/share/webhook-inbox",
                  "usr/local/share/doc/webhook-inbox"):
            self.assertFalse(os.path.exists(os.path.join(self.dest, d)), d)


# --------------------------------------------------------------------------


class TestManPages(unittest.TestCase):

    def source(self, name):
        with open(os.path.join(ROOT, MANS[name])) as f:
            return f.read()

    def test_mandoc_lint_clean(self):
        # mandoc looks up .Xr targets in /usr/share/man's database only:
        # the three pages' references to each other are found once they
        # are installed, not from the tree.  Anything else is a finding.
        ours = r"Xr (webhook-drain 1|webhook\.conf 5|webhook\.fcgi 8)"
        for name, path in MANS.items():
            p = run(["mandoc", "-Tlint", os.path.join(ROOT, path)])
            left = [ln for ln in (p.stdout + p.stderr).splitlines()
                    if not re.search(r"STYLE: referenced manual not found: "
                                     + ours, ln)
                    and "outdated mandoc.db" not in ln]
            self.assertEqual(left, [], name)
        for name in MANS:
            src = self.source(name)
            for sh in ("NAME", "DESCRIPTION", "FILES", "EXAMPLES", "SEE ALSO"):
                self.assertIn(".Sh " + sh, src, name)
        for name in ("webhook-drain", "webhook.fcgi"):
            self.assertIn(".Sh SYNOPSIS", self.source(name))
            self.assertIn(".Sh EXIT STATUS", self.source(name))

    def test_drain_page_has_every_command_and_option_of_help(self):
        helptext = run([os.path.join(ROOT, "build", "webhook-drain"),
                        "--help"]).stderr
        commands = re.findall(r"^  ([a-z]+) ", helptext, re.M)
        self.assertGreaterEqual(len(commands), 14, helptext)
        src = self.source("webhook-drain")
        for c in commands:
            self.assertRegex(src, r"(?m)^\.(It )?Cm %s(\s|$)" % c, c)
        options = set(re.findall(r"--([a-z][a-z-]*)", helptext))
        in_page = set(re.findall(r"\bFl -([a-z][a-z-]*)", src))
        self.assertEqual(options - in_page, set(), "missing from the page")
        self.assertEqual(in_page - options, set(), "not in --help")
        for short in ("c", "v"):
            self.assertIn("-" + short, helptext)
            self.assertIn("Fl %s" % short, src)

    def test_conf_page_has_every_key_of_the_table(self):
        # The config table: lib/*/config.c, whichever folder holds it.
        path, = glob.glob(os.path.join(ROOT, "lib", "*", "config.c"))
        with open(path) as f:
            c = f.read()
        table = c[c.index("static const struct key keys[] = {"):]
        table = table[:table.index("\n};")]
        keys = set(re.findall(r'^\t\{ "([a-z_]+)",', table, re.M))
        self.assertGreaterEqual(len(keys), 20)
        # A [source NAME] section's keys are on the page too: their
        # table is lib/*/source.c's.
        spath, = glob.glob(os.path.join(ROOT, "lib", "*", "source.c"))
        with open(spath) as f:
            sc = f.read()
        sources = sc[sc.index("source_keys[] = {"):]
        sources = sources[:sources.index("\n};")]
        skeys = set(re.findall(r'\{ "([a-z_]+)", (?:NULL|"[a-z]+") \}', sources))
        self.assertGreaterEqual(len(skeys), 10)
        keys |= skeys
        src = self.source("webhook.conf")
        # ".It Cm a | b No = Ar …": every name of the Cm run.
        documented = {k for line in re.findall(r"(?m)^\.It .*", src)
                      for run in re.findall(
                          r"\bCm ([a-z_]+(?: \| [a-z_]+)*)\b", line)
                      for k in run.split(" | ")}
        self.assertEqual(keys - documented, set(), "missing from the page")
        self.assertEqual(documented - keys, set(), "not in the table")

    def test_receiver_page_has_every_variable_it_reads(self):
        names = set()
        for p in ["webhook.fcgi.c"] + glob.glob(os.path.join(ROOT, "lib",
                                                           "receive", "*.c")):
            with open(os.path.join(ROOT, p)) as f:
                names |= set(re.findall(r'getenv\("([A-Z_]+)"\)', f.read()))
        # The CGI request's own variables, not the operator's.
        names -= {"CONTENT_LENGTH", "GATEWAY_INTERFACE"}
        self.assertIn("LISTEN_FDS", names)
        src = self.source("webhook.fcgi")
        for n in names:
            self.assertRegex(src, r"\bEv %s\b" % n, n)


# --------------------------------------------------------------------------


class TestPackage(unittest.TestCase):

    def test_changelog_is_this_version(self):
        p = run(["dpkg-parsechangelog", "-S", "Version"], cwd=ROOT)
        self.assertEqual(p.stdout.strip(), VERSION)

    def test_lintian_clean(self):
        p = run(["lintian", "--fail-on", "error,warning", DEB])
        found = [ln for ln in p.stdout.splitlines()
                 if re.match(r"[EW]: ", ln)]
        self.assertEqual(found, [], p.stdout + p.stderr)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_contents(self):
        names = {ln.split()[-1].lstrip(".") for ln in
                 run(["dpkg-deb", "-c", DEB]).stdout.splitlines()}
        for f in ("/usr/bin/webhook-drain", "/usr/sbin/webhook.fcgi",
                  "/usr/share/man/man1/webhook-drain.1.gz",
                  "/usr/share/man/man5/webhook.conf.5.gz",
                  "/usr/share/man/man8/webhook.fcgi.8.gz",
                  "/lib/systemd/system/webhook-drain.service",
                  "/lib/systemd/system/webhook-drain.timer",
                  "/lib/systemd/system/webhook-fcgi.service",
                  "/lib/systemd/system/webhook-fcgi.socket",
                  "/etc/logrotate.d/webhook-inbox",
                  "/usr/share/webhook-inbox/webhook.conf.vps",
                  "/usr/share/webhook-inbox/nginx-spawn-fcgi.conf",
                  "/usr/share/webhook-inbox/handler.sh",
                  "/usr/share/doc/webhook-inbox/copyright"):
            self.assertIn(f, names)
        # No config: the operator writes it, and the units wait for it.
        self.assertFalse([n for n in names if n.startswith("/etc/webhook")])
        ctl = tempfile.mkdtemp(prefix="webhook-vps-ctl-")
        try:
            subprocess.run(["dpkg-deb", "-e", DEB, ctl], check=True)
            with open(os.path.join(ctl, "conffiles")) as f:
                self.assertEqual(f.read().split(),
                                 ["/etc/logrotate.d/webhook-inbox"])
            # Nothing started, now or at an upgrade; nothing stopped at an
            # upgrade (the receiver replaces itself) -- but everything at a
            # removal: prerm's one stop is under `remove` alone.
            for s in ("preinst", "postinst", "prerm", "postrm"):
                p = os.path.join(ctl, s)
                if not os.path.exists(p):
                    continue
                with open(p) as f:
                    text = f.read()
                if s == "prerm":
                    stop = re.search(r'if \[ "\$1" = remove \][^\n]*\n'
                                     r'\tdeb-systemd-invoke stop webhook-fcgi'
                                     r'\.socket webhook-fcgi\.service \\\n'
                                     r'\s*webhook-drain\.timer '
                                     r'webhook-drain\.service', text)
                    self.assertIsNotNone(stop, "prerm stops nothing on remove")
                    text = text[:stop.start()] + text[stop.end():]
                self.assertNotRegex(
                    text, r"deb-systemd-invoke (start|restart|stop)"
                    r"|systemctl [^\n]*(start|restart|enable)", s)
                self.assertNotIn("deb-systemd-helper enable 'webhook-"
                                 "drain.service'", text)
        finally:
            shutil.rmtree(ctl)

    def test_install_upgrade_purge_in_a_throwaway_root(self):
        r = tempfile.mkdtemp(prefix="webhook-vps-root-")
        try:
            self.dpkg_root(r)
        finally:
            shutil.rmtree(r)

    def dpkg_root(self, r):
        for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"):
            os.makedirs(os.path.join(r, d))
        for name, line in (("var/lib/dpkg/status", ""),
                           ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                           ("etc/group", "root:x:0:\n"),
                           ("etc/shadow", "root:*:19000:0:99999:7:::\n"),
                           ("etc/gshadow", "root:*::\n")):
            with open(os.path.join(r, name), "w") as f:
                f.write(line)
        dpkg = ["dpkg", "--root=" + r, "--force-script-chrootless",
                "--force-depends", "--log=/dev/null"]

        def install():
            p = run(dpkg + ["-i", DEB])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertNotRegex(p.stdout + p.stderr,
                                r"(?i)warning: [^d]|error|failed")

        def entries(name):
            with open(os.path.join(r, "etc", name)) as f:
                return [ln.rstrip("\n").split(":") for ln in f]

        install()
        groups = {e[0]: e for e in entries("group")}
        users = {e[0]: e for e in entries("passwd")}
        self.assertIn(GROUP, groups)
        gid = int(groups[GROUP][2])
        for u in (WEB, CRON):
            self.assertIn(u, users)
            self.assertEqual(int(users[u][3]), gid, u)
            self.assertEqual(users[u][6], "/usr/sbin/nologin", u)
            self.assertLess(int(users[u][2]), 1000, u)  # a system user
        for d, mode in (("var/lib/webhook-inbox", 0o2770),
                        ("var/log/webhook-inbox", 0o2770),
                        ("etc/webhook-inbox", 0o750)):
            st = os.stat(os.path.join(r, d))
            self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid),
                             (mode, 0, gid), d)
        # Nothing enabled: no unit linked into any target.
        self.assertEqual(glob.glob(os.path.join(r, "etc/systemd/system/*")), [])
        # An upgrade (the same package again) adds no second user and
        # leaves an operator's modes as they are.
        os.chmod(os.path.join(r, "var/lib/webhook-inbox"), 0o2750)
        install()
        self.assertEqual([e[0] for e in entries("passwd")].count(WEB), 1)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(
            r, "var/lib/webhook-inbox")).st_mode), 0o2750)
        self.assertEqual(glob.glob(os.path.join(r, "etc/systemd/system/*")), [])
        # Purge: the log goes; the inbox (events maybe not yet handled)
        # and the users stay.
        with open(os.path.join(r, "var/lib/webhook-inbox/inbox.db"), "w"):
            pass
        p = run(dpkg + ["--purge", "webhook-inbox"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(os.path.join(r, "var/log/webhook-inbox")))
        self.assertTrue(os.path.exists(os.path.join(
            r, "var/lib/webhook-inbox/inbox.db")))
        self.assertFalse(os.path.exists(os.path.join(r, "usr/bin/webhook-drain")))
        self.assertIn(WEB, [e[0] for e in entries("passwd")])

    def test_systemd_analyze_verify(self):
        """The units as the package installs them, with its programs and
        man pages where the units look for them: /usr/bin, /usr/sbin and
        /usr/share/man get the package's files laid over the host's
        (overlayfs, in a mount namespace of this command only)."""
        r = tempfile.mkdtemp(prefix="webhook-vps-verify-")
        try:
            extract(DEB, r)
            script = ("mount --make-rprivate / && "
                      "for d in usr/bin usr/sbin usr/share/man; do "
                      "mount -t overlay overlay -o lowerdir=\"$1/$d:/$d\" "
                      "\"/$d\" || exit 99; done; "
                      "systemd-analyze verify \"$1\"/lib/systemd/system/*")
            p = run(["unshare", "-m", "--", "sh", "-c", script, "sh", r])
            self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))
        finally:
            shutil.rmtree(r)


# --------------------------------------------------------------------------


class Stack:
    """The package's files under a root R (dpkg -x), with the state
    directories the package's postinst makes (for this host's users),
    the quickstart's config, the socket unit's socket, the receiver's
    service started on it, and nginx in front."""

    def __init__(self):
        self.procs = []
        self.r = tempfile.mkdtemp(prefix="webhook-vps-")
        os.chmod(self.r, 0o755)
        extract(DEB, self.r)
        gid = grp.getgrnam(GROUP).gr_gid
        for d, mode in (("var/lib/webhook-inbox", 0o2770),
                        ("var/log/webhook-inbox", 0o2770),
                        ("etc/webhook-inbox", 0o750)):
            p = os.path.join(self.r, d)
            os.makedirs(p)
            os.chown(p, 0, gid)
            os.chmod(p, mode)
        self.units = os.path.join(self.r, "lib/systemd/system")
        self.conf = self.path("/etc/webhook-inbox/webhook.conf")
        self.log = self.path("/var/log/webhook-inbox/webhook.log")
        self.write_conf()

    def path(self, p):
        return under(self.r, p)

    def write_conf(self, handler=None):
        """The quickstart's step: the package's webhook.conf.vps, mode 640
        group webhook, its secret set (and here its paths under R)."""
        with open(self.path("/usr/share/webhook-inbox/webhook.conf.vps")) as f:
            text = f.read()
        text = text.replace("whsec_REPLACE_WITH_YOUR_SECRET", SECRET_A)
        if handler is not None:
            text = re.sub(r"(?m)^handler = .*$", "handler = " + handler, text)
        tmp = self.conf + ".tmp"
        with open(tmp, "w") as f:
            f.write(under(self.r, text))
        os.chown(tmp, 0, grp.getgrnam(GROUP).gr_gid)
        os.chmod(tmp, 0o640)
        os.replace(tmp, self.conf)

    def service_argv(self, name, fd=None):
        """The unit's command line as systemd runs it: in a mount
        namespace with ProtectSystem=strict and ReadWritePaths=, as User=
        and Group= (and the user's groups), NoNewPrivileges=, UMask=, an
        environment of systemd's PATH, the user's USER/LOGNAME/HOME/SHELL
        and Environment=; with the socket `fd` on fd 3, LISTEN_FDS=1 and
        LISTEN_PID this very process (every step below exec()s)."""
        svc = unit(os.path.join(self.units, name))["Service"]
        user, group = one(svc, "User"), one(svc, "Group")
        pw = pwd.getpwnam(user)
        env = ["PATH=" + SYSTEMD_PATH, "USER=" + user, "LOGNAME=" + user,
               "HOME=" + pw.pw_dir, "SHELL=" + pw.pw_shell]
        env += [self.path(e) for e in every(svc, "Environment")]
        script = ["set -e", "mount --make-rprivate /"]
        if one(svc, "ProtectSystem") == "strict":
            for p in every(svc, "ReadWritePaths"):
                q = shlex.quote(self.path(p))
                script.append("mount --bind %s %s" % (q, q))
            script.append("mount -o remount,bind,ro /")
        if fd is not None:
            if fd != 3:
                script.append("exec 3<&%d %d<&-" % (fd, fd))
            env += ["LISTEN_FDS=1", "LISTEN_PID=$$",
                    "LISTEN_FDNAMES=" + name.replace(".service", ".socket")]
        setpriv = ["setpriv", "--reuid=%d" % pw.pw_uid,
                   "--regid=%d" % grp.getgrnam(group).gr_gid, "--init-groups"]
        if one(svc, "NoNewPrivileges") == "yes":
            setpriv.append("--no-new-privs")
        argv = [self.path(a) for a in shlex.split(one(svc, "ExecStart"))]
        umask = one(svc, "UMask", "0022")
        script.append(
            "exec %s -- env -i %s /bin/sh -c 'umask %s; exec \"$@\"' sh %s" % (
                " ".join(setpriv),
                " ".join(e if e.endswith("$$") else shlex.quote(e)
                         for e in env),
                umask, " ".join(shlex.quote(a) for a in argv)))
        return ["unshare", "-m", "--", "sh", "-c", "\n".join(script)]

    def listen(self):
        """webhook-fcgi.socket's socket, as systemd makes it."""
        sock = unit(os.path.join(self.units, "webhook-fcgi.socket"))["Socket"]
        self.sock_path = self.path(one(sock, "ListenStream"))
        os.makedirs(os.path.dirname(self.sock_path),
                    int(one(sock, "DirectoryMode", "0755"), 8), exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.sock_path)
        os.chown(self.sock_path, pwd.getpwnam(one(sock, "SocketUser")).pw_uid,
                 grp.getgrnam(one(sock, "SocketGroup")).gr_gid)
        os.chmod(self.sock_path, int(one(sock, "SocketMode"), 8))
        self.listener.listen(int(one(sock, "Backlog", "128")))

    def start_receiver(self):
        fd = self.listener.fileno()
        self.rlog = open(os.path.join(self.r, "receiver.out"), "wb")
        self.receiver = subprocess.Popen(
            self.service_argv("webhook-fcgi.service", fd), pass_fds=(fd,),
            stdin=subprocess.DEVNULL, stdout=self.rlog, stderr=self.rlog)
        self.procs.append(self.receiver)

    def start_nginx(self):
        self.port = free_port()
        prefix = os.path.join(self.r, "nginx")
        os.mkdir(prefix)
        os.symlink("/etc/nginx/fastcgi_params",
                   os.path.join(prefix, "fastcgi_params"))
        conf = os.path.join(prefix, "nginx.conf")
        self.nginx_log = os.path.join(prefix, "error.log")
        # The quickstart's two lines inside the server block.
        with open(conf, "w") as f:
            f.write("""
user {user};
daemon off;
master_process on;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {log};
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
        root {prefix}/html;
        set $webhook_socket {sock};
        include {snippet};
    }}
}}
""".format(user=NGINX_USER, prefix=prefix, log=self.nginx_log,
           port=self.port, sock=self.sock_path,
           snippet=self.path("/usr/share/webhook-inbox/nginx-spawn-fcgi.conf")))
        argv = ["nginx", "-p", prefix + "/", "-c", conf, "-e", self.nginx_log]
        p = run(argv + ["-t"])
        if p.returncode != 0:
            raise RuntimeError("nginx -t: " + p.stderr)
        self.nginx = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        self.procs.append(self.nginx)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                if self.nginx.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError("nginx did not start: " + self.read(self.nginx_log))

    def drain_once(self):
        """webhook-drain.service, started as the timer starts it."""
        return run(self.service_argv("webhook-drain.service"), timeout=120)

    def drain(self):
        return self.path("/usr/bin/webhook-drain")

    def read(self, p):
        try:
            with open(p, errors="replace") as f:
                return f.read()
        except OSError as e:
            return str(e)

    def stop(self):
        # nginx first (SIGQUIT: graceful), then the receiver (SIGTERM: it
        # answers what it accepted and exits 0).
        codes = {}
        for p, sig in ((getattr(self, "nginx", None), signal.SIGQUIT),
                       (getattr(self, "receiver", None), signal.SIGTERM)):
            if p is None or p.poll() is not None:
                continue
            p.send_signal(sig)
            try:
                codes[p.pid] = p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                codes[p.pid] = p.wait()
        if getattr(self, "listener", None):
            self.listener.close()
        if getattr(self, "rlog", None):
            self.rlog.close()
        return codes

    def cleanup(self):
        shutil.rmtree(self.r, ignore_errors=True)


class TestQuickstart(unittest.TestCase):
    """The README's VPS quickstart, from the package's files to the first
    handled event, then the log rotated under the running programs."""

    @classmethod
    def setUpClass(cls):
        cls.s = Stack()
        try:
            cls.s.listen()
            cls.s.start_receiver()
            cls.s.start_nginx()
        except Exception:
            cls.s.stop()
            cls.s.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        s = cls.s
        rc = s.stop()
        try:
            if hasattr(s, "receiver"):
                assert rc.get(s.receiver.pid, 0) == 0, (
                    "receiver exited %r:\n%s" % (rc, s.read(s.log)))
        finally:
            s.cleanup()

    def url(self):
        return "http://127.0.0.1:%d/webhook" % self.s.port

    def send(self, *args):
        return run([self.s.drain(), "-c", self.s.conf, "send"] + list(args)
                   + [self.url()], timeout=60)

    def drain_until(self, done, what):
        """Start the drain service (the timer's minute, sooner) until
        done() says so; a new event first waits `settle` (2 s)."""
        deadline = time.time() + 60
        while time.time() < deadline:
            p = self.s.drain_once()
            self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
            if done():
                return p
            time.sleep(0.2)
        self.fail("%s: not after 60 s of runs:\n%s" % (what, self.s.read(self.s.log)))

    def test_1_first_event_handled(self):
        s = self.s
        # The socket as the unit makes it: nginx's group may connect.
        st = os.stat(s.sock_path)
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid),
                         (0o660, pwd.getpwnam(WEB).pw_uid,
                          grp.getgrnam(NGINX_USER).gr_gid))
        # The quickstart's check, as the drainer's user (--handler: the
        # sample handler on a test event).
        p = run(["runuser", "-u", CRON, "--", s.drain(), "-c", s.conf,
                 "check", "--handler"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.send("--size", "1000")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr +
                         s.read(s.log) + s.read(s.nginx_log))
        m = re.match(r"200 webhook-id=(\S+) stored", p.stdout)
        self.assertTrue(m, p.stdout)
        mid = m.group(1)
        # The receiver took its socket from "systemd" and runs as its user.
        self.assertIsNone(s.receiver.poll())
        with open("/proc/%d/status" % s.receiver.pid) as f:
            status = f.read()
        self.assertRegex(status, r"Uid:\s+%d\s" % pwd.getpwnam(WEB).pw_uid)
        self.assertRegex(status, r"NoNewPrivs:\s+1")
        with open("/proc/%d/environ" % s.receiver.pid, "rb") as f:
            environ = f.read().split(b"\0")
        self.assertIn(("WEBHOOK_CONF=" + s.conf).encode(), environ)
        self.assertIn(b"LISTEN_FDS=1", environ)     # as exec'd
        # systemd's socket (fd 3) is its fd 0 now, and fd 3 is free.
        ino = os.fstat(s.listener.fileno()).st_ino
        self.assertEqual(os.readlink("/proc/%d/fd/0" % s.receiver.pid),
                         "socket:[%d]" % ino)
        # The drain service hands it to the sample handler, which writes it
        # where the quickstart's config says.
        out = s.path("/var/lib/webhook-inbox/events/%s.json" % mid)
        self.drain_until(lambda: os.path.exists(out), "the handled event")
        with open(out, "rb") as f:
            self.assertEqual(len(f.read()), 1000)
        p = run([s.drain(), "-c", s.conf, "show", mid, "--json"])
        self.assertIn('"state":"done"', p.stdout.replace(" ", ""))
        # Shared through the group, as the two users need.
        db = s.path("/var/lib/webhook-inbox/inbox.db")
        st = os.stat(db)
        self.assertEqual((stat.S_IMODE(st.st_mode) & 0o060, st.st_gid),
                         (0o060, grp.getgrnam(GROUP).gr_gid))

    def test_2_log_rotated_without_a_restart_or_a_lost_line(self):
        """logrotate (the package's snippet, forced) three times while
        nginx brings the receiver a stream of refused deliveries (each a
        log line with its id) and drain runs log failing events; then
        every line is in exactly one of the files, and the same receiver
        process wrote before and after."""
        s = self.s
        s.write_conf(handler="exit 3")      # every hand-out fails, logged
        pid = s.receiver.pid
        stop = threading.Event()
        refused = []

        def stream():
            n = 0
            while not stop.is_set():
                mid = "msg_bad%d" % n
                n += 1
                body = event_body(mid)
                c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
                try:
                    c.request("POST", "/webhook", body, {
                        "webhook-id": mid,
                        "webhook-timestamp": str(int(time.time())),
                        "webhook-signature": sign("whsec_AAAA", mid,
                                                  int(time.time()), body),
                        "Content-Type": "application/json"})
                    if c.getresponse().status == 401:
                        refused.append(mid)
                except OSError:
                    pass    # not counted: only a 401 must have its line
                finally:
                    c.close()
                # A steady trickle, not a flood: what matters is that
                # lines keep coming while logrotate renames.
                stop.wait(0.01)

        with open(os.path.join(s.r, "etc/logrotate.d/webhook-inbox")) as f:
            snippet = under(s.r, f.read())
        lr_conf = os.path.join(s.r, "logrotate.conf")
        with open(lr_conf, "w") as f:
            f.write(snippet)
        state = os.path.join(s.r, "logrotate.state")
        t = threading.Thread(target=stream)
        t.start()
        failed = []

        def more_refused(n):
            want = len(refused) + n
            deadline = time.time() + 30
            while len(refused) < want and time.time() < deadline:
                time.sleep(0.05)
            self.assertGreaterEqual(len(refused), want)

        try:
            for rnd in range(3):
                # The receiver's lines in this file, then the rotation
                # (notifempty: an empty file would not rotate).
                more_refused(5)
                p = run(["logrotate", "-f", "-s", state, lr_conf])
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                # Events whose hand-out fails: the drainer's log lines.
                for j in range(2):
                    mid = "msg_fail%d_%d" % (rnd, j)
                    p = self.send("--size", "300", "--id", mid)
                    self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                    failed.append(mid)
                self.drain_until(
                    lambda: all(m in s.read(s.log) for m in failed[-2:]),
                    "failures logged")
            more_refused(5)     # after the last rotation too
        finally:
            stop.set()
            t.join(60)
        self.assertEqual(s.receiver.pid, pid)
        self.assertIsNone(s.receiver.poll(), "the receiver restarted or died")
        files = sorted(glob.glob(s.log + "*"))
        names = [os.path.basename(f) for f in files]
        self.assertEqual(names, ["webhook.log", "webhook.log.1",
                                 "webhook.log.2.gz", "webhook.log.3.gz"])
        text = ""
        for f in files:
            opener = gzip.open if f.endswith(".gz") else open
            with opener(f, "rt", errors="replace") as h:
                text += h.read()
        lines = text.splitlines()
        self.assertEqual(len(lines), len(set(lines)), "a line twice")
        self.assertGreater(len(refused), 20)
        count = {}
        for ln in lines:
            m = re.search(r"webhook\.fcgi\[\d+\]: .*webhook-id=(msg_bad\d+)\b",
                          ln)
            if m:
                count[m.group(1)] = count.get(m.group(1), 0) + 1
        self.assertEqual({m: count.get(m, 0) for m in refused},
                         {m: 1 for m in refused})
        for mid in failed:
            self.assertTrue([ln for ln in lines if "webhook-drain[" in ln
                             and mid in ln], mid)
        # The newest file is logrotate's (`create`), and both users wrote
        # it: the drainer's last failures and the receiver's lines.
        st = os.stat(s.log)
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid),
                         (0o660, pwd.getpwnam(WEB).pw_uid,
                          grp.getgrnam(GROUP).gr_gid))
        newest = s.read(s.log)
        self.assertIn("webhook.fcgi[%d]" % pid, newest)
        for mid in failed[-2:]:
            self.assertIn(mid, newest)

    def test_3_package_upgrade_stops_nothing(self):
        """What dpkg does at an upgrade (the new file unpacked beside
        the old one, then renamed over it; nothing stopped: debian/rules):
        the socket-activated receiver, sandboxed, becomes the new program
        in the same process at its next request, on the same socket."""
        s = self.s
        nxt = os.path.join(ROOT, "build", "tests", "webhook.fcgi.next")
        if not os.path.exists(nxt):
            p = run(["make", "-s", "build/tests/webhook.fcgi.next"], cwd=ROOT)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        want = run([nxt, "--version"]).stdout.split("\n")[0]
        self.assertIn("+next", want)
        exe = s.path("/usr/sbin/webhook.fcgi")
        shutil.copy2(nxt, exe + ".dpkg-new")
        os.rename(exe + ".dpkg-new", exe)
        pid = s.receiver.pid
        deadline = time.time() + 60
        n = 0
        while time.time() < deadline:
            p = self.send("--size", "200", "--id", "msg_upgrade%d" % n)
            n += 1
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertRegex(p.stdout, r"^200 ")
            got = run(["/proc/%d/exe" % pid, "--version"]).stdout
            if got.split("\n")[0] == want:
                break
            time.sleep(0.05)
        else:
            self.fail("still %r after %d deliveries:\n%s" % (
                got, n, s.read(s.log)))
        self.assertIsNone(s.receiver.poll())
        self.assertEqual(s.receiver.pid, pid)
        p = self.send("--size", "200", "--id", "msg_after_upgrade")
        self.assertRegex(p.stdout, r"^200 webhook-id=msg_after_upgrade stored")


if __name__ == "__main__":
    unittest.main(verbosity=2)
