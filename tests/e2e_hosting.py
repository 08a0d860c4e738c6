"""The static binaries on a host that is not this machine (docs/HOSTING.md).

`make static` builds build-static/webhook.fcgi and build-static/webhook-drain
fully static, for shared hosts (AlmaLinux, CloudLinux) that lack libcjson,
libinih or a recent SQLite.  Here both run in an empty root (chroot), as an
account with no passwd entry, with nothing of this machine's: no libc, no
NSS module, no /proc, no /dev, no /etc/passwd.  The root holds only what
docs/HOSTING.md has an operator upload, where it says:

  /home/you/webhook/webhook.fcgi         the receiver, run as plain CGI
  /home/you/webhook/webhook-drain        the drainer, as cron runs it
  /home/you/webhook/webhook.conf, api-token, handler.sh, handled/
  /home/you/public_html/webhook/webhook.fcgi
                                         conf/webhook.fcgi-wrapper, as it is
  /bin/sh                                Debian's busybox (static): the
                                         handler's shell, builtins only
  /etc/hosts                             api.provider.test is 127.0.0.1
  /etc/resolv.conf
  /etc/pki/tls/certs/ca-bundle.crt       RHEL's path, not Debian's: a CA
                                         this test makes with `openssl`

TestEmptyRoot: a signed webhook received as CGI (200; the receiver run
with WEBHOOK_CONF in its environment, and through the wrapper), handed to the
handler by `webhook-drain run`, a truncated event refetched over HTTPS from
the provider's simulated API (tests/provider_sim.py, TLS with a server
certificate for api.provider.test signed by the test's CA; the chroot
shares this machine's network, and c-ares reads the root's /etc/hosts),
and without the CA, or with another CA, the refetch refused for the
certificate and the event kept.  strace shows that no shared object is
ever opened (a static glibc's getaddrinfo would dlopen the host's NSS
modules).

TestDist: the tarball of `make dist` (build-static/dist): its files, its
sums (inside, and beside it), its binaries static and the ones tested here.

Missing binaries: `make test` builds them first (test-all: static-bins,
and dist-tarball once docs/HOSTING.md exists) and runs tests/run with
WEBHOOK_STATIC_BUILT=1: there a missing binary or tarball is a failure.
Run alone (python3 tests/e2e_hosting.py, tests/run e2e_hosting) without
them, the tests skip, saying which `make` target builds what they need.

Needs root (chroot).  Everything started here is stopped by the test
that started it.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
import time
import unittest

from harness import ROOT, SECRET_A, parse_cgi, sign
from provider_sim import World, ApiServer

SB = os.path.join(ROOT, "build-static")
STATIC_FCGI = os.path.join(SB, "webhook.fcgi")
STATIC_DRAIN = os.path.join(SB, "webhook-drain")
with open(os.path.join(ROOT, "VERSION")) as _f:
    VERSION = _f.read().strip()
DIST_NAME = "webhook-inbox-%s" % VERSION
DIST_DIR = os.path.join(SB, "dist")
DIST_TGZ = os.path.join(DIST_DIR, DIST_NAME + "-linux-x86_64.tar.gz")
HOSTING_MD = os.path.join(ROOT, "docs", "HOSTING.md")
BUSYBOX = "/bin/busybox"
# Found in this machine's PATH: the commands run with the root's PATH.
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
STRACE = shutil.which("strace") or "/usr/bin/strace"

# Set by `make test-all`, which has just built what these tests need.
BUILT = os.environ.get("WEBHOOK_STATIC_BUILT") == "1"

# The hosting account: a uid with no passwd entry anywhere.
UID = 64123
HOME = "/home/you"       # as in docs/HOSTING.md and conf/webhook.fcgi-wrapper
DOCROOT = HOME + "/public_html"
WRAPPER = DOCROOT + "/webhook/webhook.fcgi"
APP = HOME + "/webhook"
CONF = APP + "/webhook.conf"
RHEL_CA = "/etc/pki/tls/certs/ca-bundle.crt"
API_HOST = "api.provider.test"
TOKEN = "tok_" + "h0st3d" * 6

# busybox as /bin/sh finds no other program (no cat, no base64): the
# handler uses builtins only.  It keeps each event's stdin and variables
# under handled/, and the order of the ids.
HANDLER = r"""#!/bin/sh
body=
while IFS= read -r line; do
	body="$body$line
"
done
body="$body$line"
out=%(app)s/handled/$WEBHOOK_ID
printf '%%s' "$body" >"$out.body"
printf 'WEBHOOK_ID=%%s\nWEBHOOK_REFETCHED=%%s\nWEBHOOK_TRUNCATED=%%s\n' \
    "$WEBHOOK_ID" "${WEBHOOK_REFETCHED:-0}" "${WEBHOOK_TRUNCATED:-0}" >"$out.env"
echo "$WEBHOOK_ID" >>%(app)s/handled/order
""" % {"app": APP}


def setUpModule():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root: the binaries run in a chroot")


def need(path, target):
    """Fail (under make test-all) or skip (run alone) without path."""
    if os.path.exists(path):
        return
    msg = "%s is not built (make %s)" % (os.path.relpath(path, ROOT), target)
    if BUILT:
        raise AssertionError(msg + ", though make test-all built it first")
    raise unittest.SkipTest(msg)


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   capture_output=True, timeout=60)


def make_ca(d, name):
    """A CA (name.crt, name.key) in d."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", name + ".key", "-out", name + ".crt", "-days", "2",
            "-subj", "/CN=webhook-inbox e2e_hosting %s" % name,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    return os.path.join(d, name + ".crt")


def make_server_cert(d, ca, host):
    """A certificate for host signed by the CA `ca`: (cert, key) paths."""
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n" % host)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=" + host, cwd=d)
    openssl("x509", "-req", "-in", "server.csr", "-CA", ca + ".crt",
            "-CAkey", ca + ".key", "-CAcreateserial", "-days", "2",
            "-extfile", "server.ext", "-out", "server.crt", cwd=d)
    return os.path.join(d, "server.crt"), os.path.join(d, "server.key")


class Root:
    """An empty root holding the two static binaries and what a hosting
    account has; commands run in it with chroot(1) as UID."""

    def __init__(self, ca=None):
        self.dir = tempfile.mkdtemp(prefix="webhook-chroot-")
        os.chmod(self.dir, 0o755)
        for d in ("/bin", "/etc", "/home", HOME, DOCROOT, DOCROOT + "/webhook",
                  APP, APP + "/handled"):
            os.makedirs(self.path(d), exist_ok=True)
        for d in (HOME, DOCROOT, DOCROOT + "/webhook", APP, APP + "/handled"):
            os.chown(self.path(d), UID, UID)
        os.chmod(self.path(APP), 0o700)
        self.install(BUSYBOX, "/bin/sh", 0o755, owner=0)
        # Permissions as docs/HOSTING.md's upload table gives them.
        self.install(STATIC_FCGI, APP + "/webhook.fcgi", 0o700)
        self.install(STATIC_DRAIN, APP + "/webhook-drain", 0o700)
        self.install(os.path.join(ROOT, "conf", "webhook.fcgi-wrapper"), WRAPPER, 0o700)
        self.write("/etc/hosts", "127.0.0.1 localhost\n127.0.0.1 %s\n" % API_HOST, owner=0)
        # Nothing answers on 127.0.0.1:53: a name that is not in
        # /etc/hosts fails at once, and no query leaves this machine.
        self.write("/etc/resolv.conf", "nameserver 127.0.0.1\n", owner=0)
        self.write(APP + "/handler.sh", HANDLER, mode=0o755)
        self.write(APP + "/api-token", TOKEN + "\n", mode=0o600)
        self.set_ca(ca)

    def path(self, p):
        return os.path.join(self.dir, p.lstrip("/"))

    def install(self, src, dst, mode, owner=UID):
        shutil.copyfile(src, self.path(dst))
        os.chmod(self.path(dst), mode)
        os.chown(self.path(dst), owner, owner)

    def write(self, p, text, mode=0o644, owner=UID):
        with open(self.path(p), "w") as f:
            f.write(text)
        os.chmod(self.path(p), mode)
        os.chown(self.path(p), owner, owner)

    def set_ca(self, ca):
        """The CA bundle at RHEL's path: ca's file, or none at all."""
        if ca is None:
            if os.path.exists(self.path(RHEL_CA)):
                os.unlink(self.path(RHEL_CA))
            return
        os.makedirs(os.path.dirname(self.path(RHEL_CA)), exist_ok=True)
        self.install(ca, RHEL_CA, 0o644, owner=0)

    def conf(self, **keys):
        lines = ["database = %s/inbox.db" % APP, "secret = %s" % SECRET_A,
                 "handler = /bin/sh %s/handler.sh" % APP, "settle = 0s",
                 "retry_base = 1s", "retry_max = 1s",
                 "api_token_file = %s/api-token" % APP, "api_timeout = 5s"]
        lines += ["%s = %s" % kv for kv in keys.items()]
        self.write(CONF, "\n".join(lines) + "\n", mode=0o600)

    def run(self, argv, env=None, stdin=b"", trace=None):
        """argv in the root as UID, with only env; trace: a file for
        strace's record of every file the programs open."""
        cmd = [CHROOT, "--userspec=%d:%d" % (UID, UID), self.dir] + list(argv)
        if trace:
            cmd = [STRACE, "-f", "-qq", "-e", "trace=open,openat,execve",
                   "-o", trace] + cmd
        e = {"PATH": "/bin"}
        e.update(env or {})
        return subprocess.run(cmd, env=e, input=stdin, capture_output=True,
                              timeout=120)

    def drain(self, *args, trace=None):
        return self.run([APP + "/webhook-drain", "-c", CONF] + list(args),
                        trace=trace)

    def cgi(self, msg_id, body, secret=SECRET_A, trace=None, wrapper=False):
        """A signed POST, as Apache runs a CGI program: (status, body, the
        process).  The receiver itself, with WEBHOOK_CONF as a SetEnv
        gives it; or (wrapper) the wrapper in the document root, as
        Apache runs it under suEXEC, with no WEBHOOK_CONF."""
        ts = int(time.time())
        env = {"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
               "REQUEST_METHOD": "POST", "CONTENT_LENGTH": str(len(body)),
               "CONTENT_TYPE": "application/json",
               "HTTP_WEBHOOK_ID": msg_id, "HTTP_WEBHOOK_TIMESTAMP": str(ts),
               "HTTP_WEBHOOK_SIGNATURE": sign(secret, msg_id, ts, body),
               "DOCUMENT_ROOT": DOCROOT, "SCRIPT_FILENAME": WRAPPER}
        if wrapper:
            argv = [WRAPPER]
        else:
            argv = [APP + "/webhook.fcgi"]
            env["WEBHOOK_CONF"] = CONF
        p = self.run(argv, env=env, stdin=body, trace=trace)
        status, _, answer = parse_cgi(p.stdout)
        return status, answer.strip(), p

    def rows(self):
        db = self.path(APP + "/inbox.db")
        if not os.path.exists(db):
            return {}
        con = sqlite3.connect(db, timeout=10)
        con.row_factory = sqlite3.Row
        try:
            return {r["webhook_id"]: dict(r) for r in con.execute("SELECT * FROM events")}
        finally:
            con.close()

    def handled(self):
        """[(id, {variable: value}, stdin bytes)] in the order handled."""
        out = []
        try:
            with open(self.path(APP + "/handled/order")) as f:
                ids = f.read().split()
        except FileNotFoundError:
            return out
        for mid in ids:
            base = self.path(APP + "/handled/" + mid)
            with open(base + ".env") as f:
                env = dict(line.rstrip("\n").split("=", 1) for line in f)
            with open(base + ".body", "rb") as f:
                out.append((mid, env, f.read()))
        return out

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def opened_after_exec(trace, program):
    """From an strace record: the calls made once `program` was exec'd
    (chroot(1) itself is a dynamic program of this machine), as
    (call, path, result) tuples."""
    out, started = [], False
    call = re.compile(r'^\d+\s+(open|openat|execve)\((?:AT_FDCWD, )?"([^"]*)".*\)\s+=\s+(.*)$')
    with open(trace) as f:
        for line in f:
            m = call.match(line)
            if not m:
                continue
            if m.group(1) == "execve" and m.group(2) == program:
                started = True
            if started:
                out.append(m.groups())
    return out


class TestEmptyRoot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need(STATIC_FCGI, "static")
        need(STATIC_DRAIN, "static")
        cls.pki = tempfile.mkdtemp(prefix="webhook-chroot-pki-")
        cls.ca = make_ca(cls.pki, "ca")
        cls.other_ca = make_ca(cls.pki, "other-ca")
        cls.cert, cls.key = make_server_cert(cls.pki, os.path.join(cls.pki, "ca"), API_HOST)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pki, ignore_errors=True)

    def setUp(self):
        self.root = Root(ca=self.ca)
        self.world = World(seed=16)
        self.api = ApiServer(self.world, TOKEN, certfile=self.cert,
                             keyfile=self.key, name=API_HOST).start()
        self.root.conf(api_url=self.api.url)
        self.trace = os.path.join(self.root.dir + ".strace")

    def tearDown(self):
        self.api.stop()
        self.root.cleanup()
        if os.path.exists(self.trace):
            os.unlink(self.trace)

    def receive(self, ev):
        status, answer, p = self.root.cgi(ev.id, ev.body)
        self.assertEqual((status, answer), (200, b"stored"),
                         "stdout %r stderr %r" % (p.stdout, p.stderr))

    def truncated_event(self):
        ev = self.world.change(action="create", key=("client", None), truncated=False)[0]
        ev = self.world.change(key=ev.key, action="update", truncated=True, pair=False)[0]
        self.assertIn(b'"object_truncated":true', ev.body)
        return ev

    def assertNoSharedObject(self, program):
        """Nothing the program (and its children) opened was a shared
        object: no NSS module, no libc of the host."""
        calls = opened_after_exec(self.trace, program)
        self.assertTrue(calls, "strace recorded no exec of %s" % program)
        sos = [c for c in calls if re.search(r"\.so(\.|$)", c[1])]
        self.assertEqual(sos, [])
        return calls

    def test_version_in_the_root(self):
        p = self.root.run([APP + "/webhook-drain", "--version"])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode()
        self.assertIn("webhook-drain %s" % VERSION, out)
        line = [x for x in out.splitlines() if x.startswith("libcurl:")]
        self.assertEqual(len(line), 1, out)
        self.assertRegex(line[0], r"libcurl/7\.88\.1 OpenSSL/3\.\S+ zlib/\S+ c-ares/\S+$")
        p = self.root.run([APP + "/webhook.fcgi", "--version"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("webhook.fcgi %s" % VERSION, p.stdout.decode())

    def test_receive_as_cgi_then_drain_to_the_handler(self):
        ev = self.world.change(action="create", key=("client", None), truncated=False)[0]
        status, answer, p = self.root.cgi(ev.id, ev.body, trace=self.trace)
        self.assertEqual((status, answer), (200, b"stored"),
                         "stdout %r stderr %r" % (p.stdout, p.stderr))
        self.assertNoSharedObject(APP + "/webhook.fcgi")
        self.assertEqual(self.root.rows()[ev.id]["state"], "pending")
        # The same id again: a duplicate, answered 200; a body signed with
        # another secret: 401, nothing stored.
        self.assertEqual(self.root.cgi(ev.id, ev.body)[:2], (200, b"duplicate"))
        forged = self.world.change(action="create", key=("client", None))[0]
        self.assertEqual(self.root.cgi(forged.id, forged.body,
                                       secret="whsec_" + "A" * 32)[0], 401)
        self.assertNotIn(forged.id, self.root.rows())

        p = self.root.drain("run")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, b"", b""))
        h = self.root.handled()
        self.assertEqual([(x[0], x[1]["WEBHOOK_REFETCHED"]) for x in h], [(ev.id, "0")])
        self.assertEqual(h[0][2], ev.body)              # stdin: the body as stored
        self.assertEqual(self.root.rows()[ev.id]["state"], "done")

    def test_receive_through_the_wrapper(self):
        """docs/HOSTING.md's layout: Apache runs the wrapper in the
        document root (busybox runs it here), which starts the receiver
        outside it with its config."""
        ev = self.world.change(action="create", key=("client", None))[0]
        status, answer, p = self.root.cgi(ev.id, ev.body, wrapper=True)
        self.assertEqual((status, answer), (200, b"stored"),
                         "stdout %r stderr %r" % (p.stdout, p.stderr))
        self.assertIn(ev.id, self.root.rows())

    def test_truncated_event_refetched_over_https(self):
        ev = self.truncated_event()
        self.receive(ev)
        p = self.root.drain("run", trace=self.trace)
        self.assertEqual((p.returncode, p.stderr), (0, b""), p.stdout)
        h = self.root.handled()
        self.assertEqual([x[0] for x in h], [ev.id])
        mid, env, body = h[0]
        self.assertEqual(env["WEBHOOK_REFETCHED"], "1")
        got = json.loads(body)
        self.assertEqual(got["data"], self.world.get(ev.kind, ev.obj_id))
        self.assertEqual((got["id"], got["type"]), (ev.id, ev.type))
        reqs = [(r["method"], r["path"], r["status"]) for r in self.api.requests]
        self.assertEqual(reqs, [("GET", "/public/v1/clients/%s" % ev.obj_id, 200)])
        # What the drainer opened: the root's /etc/hosts (c-ares), the CA
        # at RHEL's path (lib/drain/api.c's search), and no shared object.
        calls = self.assertNoSharedObject(APP + "/webhook-drain")
        opened = {path for call, path, result in calls
                  if call != "execve" and not result.startswith("-1")}
        self.assertIn("/etc/hosts", opened)
        self.assertIn(RHEL_CA, opened)

    def drain_until(self, done, what, timeout=15):
        """`webhook-drain -v run` every 0.3 s (retry_max is 1 s) until
        done(); the last run's stdout and stderr, together."""
        deadline = time.monotonic() + timeout
        while True:
            p = self.root.drain("-v", "run")
            if done():
                return (p.stdout + p.stderr).decode()
            if time.monotonic() > deadline:
                self.fail("%s: not within %d s; last run: %r" % (what, timeout, p))
            time.sleep(0.3)

    def test_without_the_ca_the_refetch_fails_and_the_event_is_kept(self):
        ev = self.truncated_event()
        self.receive(ev)
        # No CA bundle anywhere, then another CA's at RHEL's path.
        for ca, failures in ((None, 1), (self.other_ca, 2)):
            self.root.set_ca(ca)
            out = self.drain_until(
                lambda: self.root.rows()[ev.id]["failures"] == failures,
                "refetch refused with %s" % ca)
            # The first failure is said on stderr (cron mails it), the
            # next ones with -v on stdout.
            self.assertRegex(out, r"refetch: GET clients/\S+: SSL peer certificate")
            self.assertNotIn(TOKEN, out)
            self.assertEqual(self.root.handled(), [])
            self.assertEqual(self.root.rows()[ev.id]["state"], "pending")
        # No request ever reached the API: TLS stopped before it.
        self.assertEqual(self.api.requests, [])
        # The right CA back: the event, kept, is handed out refetched.
        self.root.set_ca(self.ca)
        self.drain_until(lambda: self.root.handled(), "refetch with the CA")
        h = self.root.handled()
        self.assertEqual([(x[0], x[1]["WEBHOOK_REFETCHED"]) for x in h], [(ev.id, "1")])
        self.assertEqual(self.root.rows()[ev.id]["state"], "done")


LINK = re.compile(r"\]\(([^)#\s]*)")


def relative_links(path):
    """The relative link targets of a Markdown file (no URL, no bare
    #anchor), as paths relative to the file's directory."""
    with open(path) as f:
        targets = LINK.findall(f.read())
    return [t for t in targets if t and not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def shipped_docs():
    """scripts/dist-docs's list: what `make dist` ships beside conf/."""
    p = subprocess.run([os.path.join(ROOT, "scripts", "dist-docs"),
                        "README.md", "docs/HOSTING.md"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


class TestReleaseDocs(unittest.TestCase):
    """The release's documents link only to what the release holds: every
    relative link of README.md and docs/HOSTING.md, and of every document
    they lead to, names a file of scripts/dist-docs's list (which `make
    dist` ships) or of conf/ (shipped whole).  Read here with a parser of
    its own, not the script's."""

    def test_every_link_stays_inside(self):
        docs = set(shipped_docs())
        self.assertIn("README.md", docs)
        self.assertIn("docs/HOSTING.md", docs)
        conf = {"conf/" + n for n in os.listdir(os.path.join(ROOT, "conf"))}
        todo, seen = ["README.md", "docs/HOSTING.md"], set()
        while todo:
            f = todo.pop()
            if f in seen or not f.endswith(".md"):
                continue
            seen.add(f)
            for t in relative_links(os.path.join(ROOT, f)):
                target = os.path.normpath(os.path.join(os.path.dirname(f), t))
                self.assertTrue(os.path.exists(os.path.join(ROOT, target)),
                                "%s links %s: no such file" % (f, t))
                self.assertTrue(target in docs | conf or target == "conf",
                                "%s links %s, which the release does not "
                                "ship" % (f, t))
                todo.append(target)
        self.assertEqual(seen, {d for d in docs if d.endswith(".md")})


class TestDist(unittest.TestCase):
    """build-static/dist, from `make dist`."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(HOSTING_MD):
            raise unittest.SkipTest("docs/HOSTING.md is not written yet: make dist "
                                    "refuses without it (and make test-all skips dist)")
        need(DIST_TGZ, "dist")
        need(STATIC_FCGI, "static")
        need(STATIC_DRAIN, "static")
        cls.tmp = tempfile.mkdtemp(prefix="webhook-dist-")
        with tarfile.open(DIST_TGZ) as t:
            cls.members = t.getmembers()
            if hasattr(tarfile, "data_filter"):     # Python 3.12, and 3.11.4 on
                t.extractall(cls.tmp, filter="data")
            else:
                t.extractall(cls.tmp)
        cls.top = os.path.join(cls.tmp, DIST_NAME)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_lists_exactly_the_files(self):
        # conf/'s files; not conf/systemd/, the VPS package's units.
        conf = ["conf/" + n for n in os.listdir(os.path.join(ROOT, "conf"))
                if os.path.isfile(os.path.join(ROOT, "conf", n))]
        docs = shipped_docs()
        files = set(conf + docs + ["VERSION"])
        dirs = {os.path.dirname(f) for f in files} - {""}
        want = {DIST_NAME} | {DIST_NAME + "/" + n for n in (
            "webhook.fcgi", "webhook-drain", "SHA256SUMS")} | {
            DIST_NAME + "/" + n for n in files | dirs}
        self.assertEqual({m.name.rstrip("/") for m in self.members}, want)
        for m in self.members:
            self.assertEqual((m.uid, m.gid), (0, 0), m.name)
        for n in files:
            with open(os.path.join(ROOT, n), "rb") as a, \
                    open(os.path.join(self.top, n), "rb") as b:
                self.assertEqual(a.read(), b.read(), n)

    def test_every_link_resolves_inside(self):
        for d, _, fs in os.walk(self.top):
            for f in fs:
                if f.endswith(".md"):
                    for t in relative_links(os.path.join(d, f)):
                        self.assertTrue(os.path.exists(os.path.join(d, t)),
                                        "%s: %s" % (os.path.relpath(
                                            os.path.join(d, f), self.top), t))

    def test_sha256sums_pass(self):
        p = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=self.top,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(self.top, "SHA256SUMS")) as f:
            listed = {line.split(None, 1)[1].lstrip("*") for line in f}
        listed = {n.rstrip("\n") for n in listed}
        files = {os.path.relpath(os.path.join(d, f), self.top)
                 for d, _, fs in os.walk(self.top) for f in fs}
        self.assertEqual(listed, files - {"SHA256SUMS"})
        # Beside the tarball: TARBALL.sha256 (docs/HOSTING.md's step 1)
        # and SHA256SUMS.
        for sums in (os.path.basename(DIST_TGZ) + ".sha256", "SHA256SUMS"):
            p = subprocess.run(["sha256sum", "-c", "--strict", sums], cwd=DIST_DIR,
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(p.stdout, os.path.basename(DIST_TGZ) + ": OK\n")

    def test_binaries_are_static_and_the_built_ones(self):
        for name, built in (("webhook.fcgi", STATIC_FCGI), ("webhook-drain", STATIC_DRAIN)):
            b = os.path.join(self.top, name)
            self.assertTrue(os.access(b, os.X_OK), name)
            out = subprocess.run(["ldd", b], capture_output=True, text=True)
            self.assertIn("not a dynamic executable", out.stdout + out.stderr)
            v = subprocess.run([b, "--version"], capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
            self.assertEqual(v.returncode, 0, v.stderr)
            self.assertIn("%s %s" % (name, VERSION), v.stdout)
            if name == "webhook-drain":
                self.assertRegex(v.stdout, r"OpenSSL/3\.\S+ zlib/\S+ c-ares/")
            with open(b, "rb") as x, open(built, "rb") as y:
                self.assertEqual(x.read(), y.read(), name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
