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


if __name__ == "__main__":
    unittest.main(verbosity=2)
