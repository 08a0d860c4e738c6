"""Upgrades on a host nobody can restart (docs/HOSTING.md "Upgrading").

A shared-hosting user uploads the new receiver as webhook.fcgi.new and
renames it over webhook.fcgi (a running executable cannot be overwritten:
"Text file busy"), and cannot restart Apache, whose mod_fcgid keeps its
busy processes.  Each FastCGI process that finds another file at its path
finishes the requests in hand and becomes the new program in the same
process, its listening socket kept open (webhook.fcgi.c, leave_if_replaced).

Each test renames build/tests/webhook.fcgi.next (the same receiver saying
VERSION+next) over the running binary while clients keep delivering, then
asks every worker's executable for its --version: all of them must answer
the new one within a few requests, and every delivery sent before, during
and after must get its 200 and be stored once.
"""
import os
import re
import shutil
import subprocess
import threading
import time
import unittest

from harness import (DRAIN, FCGI, ROOT, SECRET_A, Lighttpd, Sandbox,
                     end_sandbox, event_body, sign, write_conf)

NEXT = os.path.join(os.path.dirname(FCGI), "tests", "webhook.fcgi.next")

# Deliveries per client thread before and after the rename, and the most
# requests the processes may take to notice it (each notices after its
# next request; a few processes, a few requests).
BEFORE, AFTER, CLIENTS = 15, 25, 3
NOTICE_WITHIN = 20


def version_of(pid):
    """What the executable a process runs says of itself, or None."""
    try:
        out = subprocess.run(["/proc/%d/exe" % pid, "--version"],
                             capture_output=True, text=True, timeout=10,
                             env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.splitlines()[0] if out.stdout else None


def new_version():
    return subprocess.run([NEXT, "--version"], capture_output=True, text=True,
                          check=True).stdout.splitlines()[0]


class UpgradeCase:
    """Mixed into a unittest.TestCase that sets self.exe (the path the
    server runs), self.deliver(msg_id) -> status, self.workers() -> pids,
    self.rows() -> stored webhook ids and self.diag()."""

    def run_clients(self, prefix, n, results):
        def client(c):
            for i in range(n):
                mid = "msg_%s_%d_%d" % (prefix, c, i)
                results.append((mid, self.deliver(mid)))
        threads = [threading.Thread(target=client, args=(c,))
                   for c in range(CLIENTS)]
        for t in threads:
            t.start()
        return threads

    def check_upgrade(self):
        if not os.path.exists(NEXT):
            self.fail("%s is not built (make test-build)" % NEXT)
        want = new_version()
        old = version_of(self.workers()[0]) if self.workers() else None
        self.assertNotEqual(old, want)
        results = []
        for t in self.run_clients("before", BEFORE, results):
            t.join()
        self.assertTrue(self.workers(), self.diag())
        # The upload and the rename, as the hosting guide says, while
        # deliveries keep coming.
        running = self.run_clients("during", AFTER, results)
        shutil.copy(NEXT, self.exe + ".new")
        os.chmod(self.exe + ".new", 0o755)
        os.rename(self.exe + ".new", self.exe)
        for t in running:
            t.join()
        # A few more requests, one at a time: every worker answers with the
        # new program within NOTICE_WITHIN of them.
        seen = None
        for i in range(NOTICE_WITHIN):
            mid = "msg_after_%d" % i
            results.append((mid, self.deliver(mid)))
            seen = {p: version_of(p) for p in self.workers()}
            if seen and all(v == want for v in seen.values()):
                break
        self.assertTrue(seen and all(v == want for v in seen.values()),
                        "workers still old after %d requests: %r (want %r)\n%s"
                        % (NOTICE_WITHIN, seen, want, self.diag()))
        bad = [(m, s) for m, s in results if s != 200]
        self.assertEqual(bad, [], self.diag())
        stored = self.rows()
        self.assertEqual(sorted(stored), sorted(m for m, _ in results))


class TestUpgradeLighttpd(UpgradeCase, unittest.TestCase):
    """lighttpd mod_fastcgi "bin-path", 2 processes of 8 threads."""

    def setUp(self):
        self.sb = Sandbox()
        bindir = os.path.join(self.sb.dir, "bin")
        os.mkdir(bindir)
        self.exe = os.path.join(bindir, "webhook.fcgi")
        shutil.copy(FCGI, self.exe)
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A,
                   log=os.path.join(self.sb.dir, "webhook.log"))
        self.srv = Lighttpd(self.sb, procs=2, fcgi=self.exe)

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def deliver(self, mid):
        return self.srv.deliver(SECRET_A, mid, event_body(mid))[0]

    def workers(self):
        return self.srv.workers()

    def rows(self):
        return [r["webhook_id"] for r in self.sb.rows()]

    def diag(self):
        try:
            with open(os.path.join(self.sb.dir, "webhook.log")) as f:
                log = f.read()[-3000:]
        except OSError:
            log = ""
        return log + self.srv.log()[-2000:]

    def log(self, want=None):
        """The log; with `want`, once it holds that text (the check runs
        after a request, beside the next ones), 20 s at most."""
        deadline = time.monotonic() + 20
        while True:
            with open(os.path.join(self.sb.dir, "webhook.log")) as f:
                text = f.read()
            if want is None or want in text or time.monotonic() > deadline:
                return text
            time.sleep(0.05)

    def test_rename_over_running_processes(self):
        old = subprocess.run([self.exe, "--version"], capture_output=True,
                             text=True, check=True).stdout.splitlines()[0]
        self.check_upgrade()
        with open(os.path.join(self.sb.dir, "webhook.log")) as f:
            log = f.read()
        self.assertIn("was replaced (an upgrade)", log)
        self.assertIn("starting the new", log)
        # Which program runs, in the log (once per process, at its first
        # request) and in each stored delivery's answer.
        new = new_version()
        for pid in self.workers():
            self.assertIn("%s running as FastCGI process %d" % (new, pid), log)
        self.assertIn(old + " running as FastCGI process", log)
        mid = "msg_version"
        body = event_body(mid)
        status, headers, _ = self.srv.deliver(SECRET_A, mid, body)
        self.assertEqual(status, 200)
        self.assertEqual("webhook.fcgi " + headers["X-Webhook-Inbox-Version"],
                         new)
        # check --url reads it back, and says that this (old) drainer is
        # not the receiver's version: an upgrade half done.
        p = subprocess.run([DRAIN, "-c", self.sb.conf, "check", "--url",
                            "http://127.0.0.1:%d/hook" % self.srv.port],
                           capture_output=True, text=True, timeout=120)
        out = p.stdout + p.stderr
        self.assertRegex(out, r"ok +url: signed small body: 200 as expected, "
                         r"from %s\n" % re.escape(new))
        self.assertRegex(out, r"WARN url: signed small body: the receiver is "
                         r"webhook.fcgi \S+\+next \(commit \S+\), this "
                         r"drainer .*: upgrade both together")

    def test_a_broken_upload_keeps_the_old_program_serving(self):
        # A truncated upload renamed into place: it does not start (its
        # --version fails), so each process says so and serves on with
        # the program it has.  (The processes run first: one that lighttpd
        # had not yet started would start from the broken file.)
        self.assertEqual(self.deliver("msg_broken_first"), 200, self.diag())
        with open(self.exe + ".new", "wb") as f:
            f.write(b"\x7fELF truncated")
        os.chmod(self.exe + ".new", 0o755)
        os.rename(self.exe + ".new", self.exe)
        for i in range(10):
            mid = "msg_broken_%d" % i
            self.assertEqual(self.deliver(mid), 200, self.diag())
        self.assertEqual(len(self.rows()), 11)
        want = "the new file is not used: it does not start"
        self.assertIn(want, self.log(want), self.diag())
        pids = self.workers()
        self.assertEqual(len(pids), 2)
        for p in pids:
            self.assertIn("(deleted)", os.readlink("/proc/%d/exe" % p))


class TestUpgradeRefusals(TestUpgradeLighttpd):
    """What is renamed in and must not end a working process, and a
    symlinked path that must upgrade when the link moves."""
    test_rename_over_running_processes = None
    test_a_broken_upload_keeps_the_old_program_serving = None

    def rename_in(self, make):
        new = self.exe + ".new"
        make(new)
        os.rename(new, self.exe)

    def deliver_some(self, n, tag):
        for i in range(n):
            mid = "msg_%s_%d" % (tag, i)
            self.assertEqual(self.deliver(mid), 200, self.diag())

    def test_a_script_claiming_to_be_a_receiver_is_refused(self):
        self.deliver_some(1, "first")

        def script(p):
            with open(p, "w") as f:
                f.write("#!/bin/sh\necho 'webhook.fcgi 9.9'\n"
                        "echo \"webhook.fcgi upgrade-probe $2 schema 9\"\nexit 0\n")
            os.chmod(p, 0o755)
        self.rename_in(script)
        self.deliver_some(10, "script")
        self.assertIn("it is not a program", self.log("it is not a program"))
        self.assertEqual(len(self.rows()), 11)

    def test_the_drainer_renamed_in_is_refused(self):
        self.deliver_some(1, "first")
        self.rename_in(lambda p: (shutil.copy(os.path.join(
            os.path.dirname(FCGI), "webhook-drain"), p), os.chmod(p, 0o755)))
        self.deliver_some(10, "drainer")
        want = "not a receiver that knows the upgrade probe"
        self.assertIn(want, self.log(want))

    def test_a_symlinked_path_upgrades_when_the_link_moves(self):
        # The web server starts bin/webhook.fcgi, a symlink to a release
        # directory; the upgrade points it at the next one.
        rel = os.path.join(self.sb.dir, "rel-1")
        os.mkdir(rel)
        os.rename(self.exe, os.path.join(rel, "webhook.fcgi"))
        os.symlink(os.path.join(rel, "webhook.fcgi"), self.exe)
        self.srv.stop()
        self.srv = Lighttpd(self.sb, procs=2, fcgi=self.exe)
        self.deliver_some(2, "before")
        rel2 = os.path.join(self.sb.dir, "rel-2")
        os.mkdir(rel2)
        shutil.copy(NEXT, os.path.join(rel2, "webhook.fcgi"))
        os.symlink(os.path.join(rel2, "webhook.fcgi"), self.exe + ".new")
        os.rename(self.exe + ".new", self.exe)
        want = new_version()
        results = []
        for t in self.run_clients("link", 5, results):
            t.join()    # several at once: every process takes some
        self.assertEqual([m for m, st in results if st != 200], [])
        for i in range(NOTICE_WITHIN):
            for t in self.run_clients("link%d" % i, 1, results):
                t.join()
            seen = {p: version_of(p) for p in self.workers()}
            if seen and all(v == want for v in seen.values()):
                break
        self.assertTrue(seen and all(v == want for v in seen.values()),
                        "%r\n%s" % (seen, self.diag()))


if os.geteuid() == 0:
    import e2e_servers
    from e2e_servers import HOST_DIRECTORY, Apache, Home, descendants, exe_of

    class TestUpgradeModFcgid(UpgradeCase, unittest.TestCase):
        """Apache + mod_fcgid from a user's .htaccess (conf/apache-htaccess)
        with the wrapper of the hosting guide in the document root and the
        receiver outside it, as the web user."""

        def setUp(self):
            e2e_servers.setUpModule()
            self.home = Home()
            self.exe = os.path.join(self.home.app, "webhook.fcgi")
            shutil.copy(FCGI, self.exe)
            os.chmod(self.exe, 0o755)
            endpoint = os.path.join(self.home.docroot, "webhook")
            os.mkdir(endpoint, 0o755)
            wrapper = os.path.join(endpoint, "webhook.fcgi")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nWEBHOOK_CONF=%s exec %s\n"
                        % (self.home.conf, self.exe))
            os.chmod(wrapper, 0o755)
            os.symlink(os.path.join(ROOT, "conf", "apache-htaccess"),
                       os.path.join(endpoint, ".htaccess"))
            self.srv = Apache(self.home, ["fcgid", "cgid"],
                              HOST_DIRECTORY.format(docroot=self.home.docroot))

        def tearDown(self):
            self.srv.stop()
            self.home.cleanup()

        def deliver(self, mid):
            body = event_body(mid)
            ts = int(time.time())
            return e2e_servers.post(self.srv.port, "/webhook/webhook.fcgi", {
                "webhook-id": mid, "webhook-timestamp": str(ts),
                "webhook-signature": sign(SECRET_A, mid, ts, body),
                "Content-Type": "application/json"}, body)[0]

        def workers(self):
            return [p for p in descendants(self.srv.proc.pid)
                    if exe_of(p).startswith(self.exe)]

        def rows(self):
            return [r["webhook_id"] for r in self.home.sb.rows()]

        def diag(self):
            return self.srv.logs()

        def test_rename_over_running_processes(self):
            self.check_upgrade()


if __name__ == "__main__":
    unittest.main(verbosity=2)
