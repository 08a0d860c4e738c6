"""webhook-drain check (docs/DESIGN.md "The operator's tools"): each
misconfiguration it claims to catch, one test each, on real files and, where
a second user matters, as `nobody`."""
import hashlib
import os
import re
import shutil
import subprocess
import unittest

from harness import DRAIN, ROOT, SECRET_A, Sandbox, write_conf


class TestCheck(unittest.TestCase):
    def setUp(self):
        self.sb = Sandbox()
        self.data = os.path.join(self.sb.dir, "data")
        os.mkdir(self.data)
        os.chmod(self.data, 0o2770)
        self.handler = os.path.join(self.sb.dir, "handler.sh")
        with open(self.handler, "w") as f:
            f.write("#!/bin/sh\ncat >/dev/null\n")
        os.chmod(self.handler, 0o755)
        self.keys = {"database": os.path.join(self.data, "inbox.db"),
                     "secret": SECRET_A, "handler": self.handler}
        self.conf()

    def tearDown(self):
        self.sb.cleanup()

    def conf(self, **changes):
        keys = dict(self.keys)
        keys.update(changes)
        keys = {k: v for k, v in keys.items() if v is not None}
        write_conf(self.sb.conf, **keys)
        os.chmod(self.sb.conf, 0o640)

    def check(self, *args, user=None):
        cmd = [DRAIN, "-c", self.sb.conf, "check"] + list(args)
        if user:
            cmd = ["runuser", "-u", user, "--"] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **self.sb.env()))
        return p.returncode, p.stdout + p.stderr

    def assertFinding(self, out, level, what, text):
        lines = [l for l in out.splitlines() if l.startswith(level) and
                 (" %s:" % what) in l and text in l]
        self.assertTrue(lines, "no %s %s finding with %r in:\n%s" % (level, what, text, out))

    def test_good_setup_passes(self):
        rc, out = self.check("--document-root", os.path.join(self.sb.dir, "htdocs"))
        self.assertEqual(rc, 0, out)
        self.assertIn("0 failed, 0 warnings", out)
        self.assertFinding(out, "ok", "database", "opens in WAL mode")

    def test_config_that_does_not_load_exits_2_with_its_line(self):
        with open(self.sb.conf, "a") as f:
            f.write("tolerence = 300\n")
        rc, out = self.check()
        self.assertEqual(rc, 2)
        self.assertRegex(out, r"webhook.conf:\d+: tolerence: unknown key")

    def test_bad_secret_named_never_shown(self):
        self.conf(secret="whsec_C2FVsBQIhrscChlQIMV-b5sSYspob7oD")
        rc, out = self.check()
        self.assertEqual(rc, 2)
        self.assertIn("secret: not standard base64", out)
        self.assertNotIn("C2FVsBQ", out)

    def test_config_messages_name_what_is_wrong(self):
        # An unknown key is named (with the key it was meant to be), and a
        # typo in a secret's prefix is said as such, not as base64.
        with open(self.sb.conf, "a") as f:
            f.write("logfile = /tmp/x.log\n"
                    "secret = whsek_C2FVsBQIhrscChlQIMV+b5sSYspob7oD\n")
        rc, out = self.check()
        self.assertEqual(rc, 2)
        self.assertRegex(out, r"webhook.conf:\d+: logfile: unknown key "
                         r"\(did you mean log\?\)")
        self.assertRegex(out, r"webhook.conf:\d+: secret: its prefix is not "
                         r"whsec_ \(nor whpk_ for a public key\)")
        self.assertNotIn("C2FVsBQ", out)

    def test_steps_named_as_the_guide_numbers_them(self):
        # One numbering: the steps the programs name (lib/operator/probe.h,
        # the only place they are written) are the guide's, and README's
        # quickstart numbers its steps as the guide does.
        with open(os.path.join(ROOT, "docs", "HOSTING.md")) as f:
            guide = dict(re.findall(r"^## (\d+)\. (\w+)", f.read(), re.M))
        with open(os.path.join(ROOT, "lib", "operator", "probe.h")) as f:
            named = re.findall(r'"HOSTING.md step (\d+) \((\w+)"', f.read())
        self.assertEqual(len(named), 3, named)
        for n, title in named:
            self.assertEqual(guide.get(n), title, (n, title, guide))
        for d, _, fs in os.walk(os.path.join(ROOT, "lib")):
            for fn in fs:
                with open(os.path.join(d, fn)) as f:
                    text = f.read()
                if fn != "probe.h":
                    self.assertNotRegex(text, r'"[^"\n]*\bstep \d', fn)
        with open(os.path.join(ROOT, "webhook-drain.c")) as f:
            self.assertNotRegex(f.read(), r'"[^"\n]*\bstep \d')
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        quick = readme[readme.index("## Shared hosting quickstart"):]
        quick = quick[:quick.index("\n## ")]
        steps = dict(re.findall(r"^(\d+)\. \*\*(\w+)", quick, re.M))
        self.assertEqual(steps, {n: t for n, t in guide.items() if int(n) <= 7})

    def test_field_limits_documented_as_the_code_has_them(self):
        # The limits on reading an event's fields (lib/store/event.h),
        # where README describes the fields and in docs/caps.md.
        with open(os.path.join(ROOT, "lib", "store", "event.h")) as f:
            h = f.read()
        extract = eval(re.search(r"#define EVENT_EXTRACT_MAX\s+\(([\d *]+)\)",
                                 h).group(1))
        field = int(re.search(r"#define EVENT_FIELD_MAX\s+(\d+)", h).group(1))
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        para = readme[readme.index("are stored byte for byte; `type`"):]
        para = para[:para.index("\n\n")]
        self.assertIn("at most %d KiB" % (extract // 1024), para)
        self.assertIn("longer than %d bytes" % field, para)
        with open(os.path.join(ROOT, "docs", "caps.md")) as f:
            caps = f.read()
        self.assertIn("| `EVENT_EXTRACT_MAX` | %d KiB |" % (extract // 1024), caps)
        self.assertIn("| `EVENT_FIELD_MAX` | %d bytes |" % field, caps)

    def test_bad_secret_beside_a_good_one_fails_by_its_line(self):
        # The config loads (the receiver goes on with the good secret),
        # and check names the line that did not, never its value.
        self.conf(secret=["whsec_C2FVsBQIhrscChlQIMV-b5sSYspob7oD", SECRET_A])
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        self.assertFinding(out, "ok", "config", "loads")
        self.assertFinding(out, "FAIL", "secret", "secret: not standard base64")
        self.assertFinding(out, "FAIL", "secret", "this line is not used")
        self.assertRegex(out, r"FAIL secret: \S*webhook\.conf:2: secret: ")
        self.assertNotIn("C2FVsBQ", out)

    def test_secret_with_spare_bits_warned(self):
        self.conf(secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr")
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        self.assertFinding(out, "WARN", "secret", "bits beyond the key's last "
                           "byte, which are ignored")

    def test_quoted_secret_loads_byte_for_byte(self):
        # A WooCommerce secret with a space at each end, '#' and ';' and
        # quotes (wp_generate_password's alphabet), written in double
        # quotes: check lists the source under the fingerprint of exactly
        # those bytes (BLAKE2b-64 of the key), so nothing was cut.
        woo = b' Kx7#p2; "q" '
        with open(self.sb.conf, "a") as f:
            f.write('[source woo]\nscheme = woocommerce\n'
                    'secret = " Kx7#p2; \\"q\\" "\n')
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        fp = hashlib.blake2b(woo, digest_size=8).hexdigest()
        self.assertFinding(out, "ok", "source", "woo: WooCommerce (scheme = "
                           "woocommerce), 1 secret, first fingerprint " + fp)
        # 13 bytes: shorter than 16, warned by source and fingerprint.
        self.assertFinding(out, "WARN", "secret", "source woo: fingerprint "
                           "%s: the key is 13 bytes, shorter than 16" % fp)
        self.assertNotIn("Kx7", out)

    def test_short_or_v1_pasted_secret(self):
        self.conf(secret="whsec_AAAA")
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        self.assertFinding(out, "WARN", "secret", "source default: "
                           "fingerprint ")
        self.assertFinding(out, "WARN", "secret", "the key is 3 bytes, "
                           "shorter than 16")
        self.conf(secret="v1," + SECRET_A)
        rc, out = self.check()
        self.assertEqual(rc, 2, out)
        self.assertRegex(out, r"webhook\.conf:2: secret: starts with v1, .*"
                         r"drop the v1,")
        self.assertNotIn(SECRET_A[6:], out)

    def test_world_readable_config(self):
        os.chmod(self.sb.conf, 0o644)
        rc, out = self.check()
        self.assertEqual(rc, 0)
        self.assertFinding(out, "WARN", "config", "readable by every user")

    def test_small_max_body(self):
        self.conf(max_body="131072")
        rc, out = self.check()
        self.assertFinding(out, "WARN", "max_body", "260 KB")

    def test_config_and_database_inside_document_root(self):
        rc, out = self.check("--document-root", self.sb.dir)
        self.assertEqual(rc, 1)
        self.assertFinding(out, "FAIL", "config", "inside the document root")
        self.assertFinding(out, "FAIL", "database", "inside the document root")

    def test_database_directory_missing(self):
        self.conf(database=os.path.join(self.sb.dir, "nowhere", "inbox.db"))
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertFinding(out, "FAIL", "database", "No such file or directory")

    def test_database_directory_not_setgid_group_writable(self):
        os.chmod(self.data, 0o755)
        rc, out = self.check()
        self.assertFinding(out, "WARN", "database", "setgid")

    def open_to_others(self, dirs, database):
        """Let other users read the config and run the handler, with these
        modes for the directories and for the database and its -wal and
        -shm files."""
        for p in (self.sb.dir, self.data):
            os.chmod(p, dirs)
        os.chmod(self.sb.conf, 0o644)
        os.chmod(self.handler, 0o755)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.keys["database"] + suffix):
                os.chmod(self.keys["database"] + suffix, database)

    @unittest.skipUnless(os.geteuid() == 0, "needs root to act as nobody")
    def test_database_not_writable_by_this_user(self):
        # The inbox exists (created by "the web server": root here) and
        # nobody may read but not write it or its directory.
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        self.open_to_others(0o755, 0o644)
        rc, out = self.check(user="nobody")
        self.assertEqual(rc, 1, out)
        self.assertFinding(out, "FAIL", "database", "cannot")

    @unittest.skipUnless(os.geteuid() == 0, "needs root to act as nobody")
    def test_wal_sync_not_writable_by_this_user(self):
        # The database is writable for everyone, the receivers' shared
        # counter page (made by "the web server": root here) is not.
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        self.assertFinding(out, "ok", "wal-sync", "is shared")
        self.open_to_others(0o777, 0o666)
        os.chmod(self.keys["database"] + ".wal-sync", 0o644)
        rc, out = self.check(user="nobody")
        self.assertEqual(rc, 1, out)
        self.assertFinding(out, "ok", "database", "writable by this user")
        self.assertFinding(out, "FAIL", "wal-sync", "Permission denied")

    def test_handler_missing_or_not_executable(self):
        self.conf(handler=None)
        rc, out = self.check()
        self.assertFinding(out, "FAIL", "handler", "not set")
        os.chmod(self.handler, 0o644)
        self.conf()
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertFinding(out, "FAIL", "handler", "not an executable")

    def test_handler_by_name_in_path_and_after_assignments(self):
        self.conf(handler="WEBHOOK_OUT=/tmp/x php /srv/handler.php")
        rc, out = self.check()
        php = shutil.which("php")
        if php:
            self.assertFinding(out, "ok", "handler", php)
        else:
            self.assertFinding(out, "FAIL", "handler", "php")

    def test_interpreter_script_missing(self):
        self.conf(handler="/bin/sh /nonexistent/handler.sh")
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertFinding(out, "FAIL", "handler", "/nonexistent/handler.sh")

    def test_api_token_unreadable_or_too_open(self):
        tok = os.path.join(self.sb.dir, "token")
        self.conf(api_url="http://127.0.0.1:9/public/v1", api_token_file=tok)
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertFinding(out, "FAIL", "api", "api_token_file")
        with open(tok, "w") as f:
            f.write("tok_abcdef\n")
        os.chmod(tok, 0o644)
        rc, out = self.check()
        self.assertFinding(out, "WARN", "api", "readable by others")
        self.assertNotIn("tok_abcdef", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
