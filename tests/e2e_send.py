"""`webhook-drain send`, the hosting guide's test step (docs/HOSTING.md, 5): it
succeeds only when the receiver itself stored the event, tells a web
server's own answer apart (X-Webhook-Inbox), makes test events of a given
size, and never sends an empty body by accident."""
import http.server
import os
import subprocess
import threading
import unittest

from harness import DRAIN, SECRET_A, Lighttpd, Sandbox, write_conf


class TestSend(unittest.TestCase):

    def setUp(self):
        self.sb = Sandbox()
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A)
        self.srv = Lighttpd(self.sb, procs=1)
        self.url = "http://127.0.0.1:%d/hook" % self.srv.port

    def tearDown(self):
        self.srv.stop()
        self.sb.cleanup()

    def send(self, *args, stdin=subprocess.DEVNULL):
        return subprocess.run([DRAIN, "-c", self.sb.conf, "send"] + list(args),
                              stdin=stdin, capture_output=True, text=True,
                              timeout=60)

    def test_size_makes_a_test_event_of_that_many_bytes(self):
        for size in (1000, 250000):
            r = self.send("--size", str(size), self.url)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stdout, r"^200 webhook-id=msg_[0-9a-f]+ stored$")
        rows = self.sb.rows("SELECT type, length(body) AS n FROM events ORDER BY n")
        self.assertEqual([(x["type"], x["n"]) for x in rows],
                         [("webhook_inbox.test", 1000), ("webhook_inbox.test", 250000)])
        # A duplicate is the receiver's answer too.
        mid = self.sb.rows("SELECT webhook_id FROM events")[0]["webhook_id"]
        r = self.send("--size", "1000", "--id", mid, self.url)
        self.assertEqual((r.returncode, r.stdout.split()[-1]), (0, "duplicate"))

    def test_a_web_servers_own_200_is_not_success(self):
        # A host that serves the program as a file answers 200 itself.
        docroot = os.path.join(self.sb.dir, "static")
        os.mkdir(docroot)
        with open(os.path.join(docroot, "webhook.fcgi"), "w") as f:
            f.write("#!/bin/sh\n")

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=docroot, **kw)

            def do_POST(self):
                self.do_GET()

            def log_message(self, *a):
                pass
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        t = threading.Thread(target=httpd.serve_forever)
        t.start()
        try:
            r = self.send("--size", "500", "http://127.0.0.1:%d/webhook.fcgi"
                          % httpd.server_address[1])
        finally:
            httpd.shutdown()
            t.join()
            httpd.server_close()
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("not webhook.fcgi's answer", r.stdout)
        self.assertNotIn("#!/bin/sh", r.stdout)

    def test_an_empty_body_is_not_sent(self):
        r = self.send(self.url)          # stdin /dev/null, as under cron
        self.assertEqual(r.returncode, 1)
        self.assertIn("nothing sent", r.stderr)
        r = self.send(self.url, self.sb.dir)   # a directory reads as nothing
        self.assertEqual(r.returncode, 1)
        self.assertEqual(self.sb.count(), 0)

    def test_the_receivers_refusal_is_shown_as_its_own(self):
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A,
                   max_body="100")
        r = self.send("--size", "1000", self.url)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stdout, r"^413 webhook-id=\S+ body too large$")


SOURCES = """
[source stripe]
scheme = stripe
secret = whsec_5f0c3d9a7be4e1c2b8a6d4f0e9c7a5b3
[source gh]
scheme = github
secret = It's a Secret to Everybody
[source slack]
scheme = slack
secret = 8f742231b10e8888abcd99yyyzzz85a5
[source tw]
scheme = twilio
secret = 12345
url = https://hooks.example.net/webhook.fcgi/tw
[source generic]
scheme = hmac
secret = k
header = X-Sig
timestamp_header = X-Time
id = X-Request-Id
[source disc]
scheme = discord
secret = 197f6b23e16c8532c6abc838facd5ea789be0c76b2920334039bfa8b3d368d61
"""


class TestSendSource(unittest.TestCase):
    """send --source NAME and check --url against a real receiver that
    takes each [source NAME] at its URL + /NAME."""

    def setUp(self):
        self.sb = Sandbox()
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A)
        with open(self.sb.conf, "a") as f:
            f.write(SOURCES)
        self.srv = Lighttpd(self.sb, procs=1)
        self.url = "http://127.0.0.1:%d/hook" % self.srv.port

    def tearDown(self):
        self.srv.stop()
        self.sb.cleanup()

    def drain(self, *args, conf=None):
        return subprocess.run([DRAIN, "-c", conf or self.sb.conf] + list(args),
                              stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=60)

    def test_each_signable_source_is_stored_as_its_own(self):
        for name in ("stripe", "gh", "slack", "tw", "generic"):
            r = self.drain("send", "--source", name, "--size", "700",
                           self.url + "/" + name)
            self.assertEqual(r.returncode, 0, name + r.stdout + r.stderr)
            self.assertRegex(r.stdout, r"^200 source=%s id=\S+ stored$" % name)
            self.assertEqual(r.stderr, "")
        # --id is the provider's id; the receiver keeps it under NAME/.
        r = self.drain("send", "--source", "stripe", "--size", "700", "--id",
                       "evt_given", self.url + "/stripe")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("id=stripe/evt_given stored", r.stdout)
        r = self.drain("send", "--source", "stripe", "--size", "700", "--id",
                       "evt_given", self.url + "/stripe")
        self.assertEqual(r.stdout.split()[-1], "duplicate", r.stdout)
        ids = [x["webhook_id"] for x in
               self.sb.rows("SELECT webhook_id FROM events")]
        self.assertIn("stripe/evt_given", ids)
        # A FILE's own id is what is stored, and what send says.
        path = os.path.join(self.sb.dir, "ev.json")
        with open(path, "w") as f:
            f.write('{"id":"evt_file","object":"event","type":"t",'
                    '"created":1764496800,"data":{"object":{"id":"o"}}}')
        r = self.drain("send", "--source", "stripe", self.url + "/stripe",
                       path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"^200 source=stripe id=stripe/evt_file "
                         r"stored$")
        self.assertEqual(len(self.sb.rows(
            "SELECT 1 FROM events WHERE webhook_id = 'stripe/evt_file'")), 1)

        self.assertEqual(sorted(i.split("/")[0] for i in ids),
                         ["generic", "gh", "slack", "stripe", "stripe", "tw"])

    def test_unknown_and_unsignable_sources_are_refused_with_why(self):
        r = self.drain("send", "--source", "strpe", self.url + "/strpe")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no [source strpe]", r.stderr)
        self.assertIn("its sources: stripe, gh, slack, tw, generic, disc",
                      r.stderr)
        r = self.drain("send", "--source", "disc", self.url + "/disc")
        self.assertEqual(r.returncode, 2)
        self.assertIn("private key", r.stderr)
        # A URL that is not the source's: said, and the receiver's answer
        # (a Standard Webhooks endpoint refuses Stripe's headers) shown.
        r = self.drain("send", "--source", "stripe", "--size", "500", self.url)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("does not end in /stripe", r.stderr)
        self.assertRegex(r.stdout, r"^400 source=stripe ")
        self.assertEqual(self.sb.count(), 0)

    def test_check_url_sends_each_source_a_test(self):
        r = self.drain("check", "--url", self.url)
        out = r.stdout
        for name in ("stripe", "gh", "slack", "tw", "generic"):
            self.assertRegex(out, r"(?m)^ok   source %s: http://\S+/hook/%s "
                             r"signed as .*: 200 as expected$" % (name, name))
        self.assertRegex(out, r"(?m)^ok   source disc: Discord: not sent — "
                         r"Discord signs with its application's private key")
        self.assertRegex(out, r"(?m)^ok   source: stripe: Stripe \(scheme = "
                         r"stripe\), 1 secret, ")
        # A source the receiver's config lacks: 404 from the receiver; one
        # whose secret is not the receiver's: 401.
        other = self.sb.conf + ".drainer"
        with open(self.sb.conf) as f, open(other, "w") as g:
            g.write(f.read().replace("It's a Secret to Everybody", "another")
                    + "[source paddle]\nscheme = paddle\n"
                    "secret = pdl_ntfset_1\n")
        os.chmod(other, 0o600)
        r = self.drain("check", "--url", self.url, conf=other)
        self.assertRegex(r.stdout, r"(?m)^FAIL source paddle: \S+/hook/paddle: "
                         r"404 from the receiver: it has no \[source paddle\]")
        self.assertRegex(r.stdout, r"(?m)^FAIL source gh: \S+/hook/gh: 401: "
                         r"the receiver checks \[source gh\] with another "
                         r"secret")
        self.assertRegex(r.stdout, r"(?m)^ok   source stripe: .* 200 as "
                         r"expected$")
        self.assertEqual(r.returncode, 1)

    def test_sections_alone_are_probed_without_a_default_source(self):
        # docs/HOSTING.md step 3: a file may hold sections only.
        alone = self.sb.conf + ".alone"
        with open(alone, "w") as g:
            g.write("database = %s\n%s" % (self.sb.db, SOURCES))
        os.chmod(alone, 0o600)
        r = self.drain("check", "--url", self.url, conf=alone)
        self.assertRegex(r.stdout, r"(?m)^ok   url: no default source .*"
                         r"its sources are$")
        self.assertNotRegex(r.stdout, r"(?m)^FAIL url")
        self.assertRegex(r.stdout, r"(?m)^ok   source stripe: .* 200 as "
                         r"expected$")
        r = self.drain("send", "--size", "100", self.url, conf=alone)
        self.assertEqual(r.returncode, 2)
        self.assertIn("send --source NAME URL/NAME", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
