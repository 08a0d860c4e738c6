"""Every provider scheme end to end (docs/DESIGN.md "Sources",
docs/providers.md): one config with a [source NAME] of every scheme, a
real lighttpd in front of webhook.fcgi, each delivery signed here in
Python as the provider's documentation says (hmac, hashlib, base64;
Discord's Ed25519 with the `cryptography` module), never with our C.

Behind lighttpd (/hook/NAME is PATH_INFO=/NAME there), for every scheme:
a valid delivery stored under NAME/<provider id> with its type, clock and
object, byte for byte; its redelivery a duplicate; a wrong secret, a
tampered body and (where the scheme signs a time) an expired timestamp
401; another provider's delivery 400 with the recognition line in the
log.  Slack's url_verification, Discord's PING and WooCommerce's ping
answered and not stored; an unknown /NAME 404; the bare URL still the
default source.  Then webhook-drain hands every stored event out with
WEBHOOK_SOURCE and WEBHOOK_PROVIDER_ID, and orders a Stripe object's
events on Stripe's own `created`, the late older one stale.

Through nginx, Apache and lighttpd as conf/ sets them up (root only, as
tests/e2e_servers.py): what docs/providers.md "Web server: the /NAME part
of the URL" says (its nginx block read from the page) takes
/webhook/NAME to its source.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import time
import unittest
import urllib.parse

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import harness
from harness import (ROOT, SECRET_A, SECRET_B, Sandbox, Lighttpd, end_sandbox,
                     event_body, record_lines, run_drain, sign)

PROVIDERS_MD = os.path.join(ROOT, "docs", "providers.md")


def instant(unix=None, iso=None):
    """The store's normalised instant (docs/DESIGN.md "The inbox") of Unix
    seconds, or of an ISO-8601 UTC text ending in Z with 0-9 fraction
    digits: what created_at must hold, computed here, not by our C."""
    if unix is not None:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(unix)) + \
            ".000000000Z"
    head, _, frac = iso.rstrip("Z").partition(".")
    return head + "." + (frac + "0" * 9)[:9] + "Z"


def b64(mac):
    return base64.b64encode(mac).decode()


def hmac_hex(key, msg, alg=hashlib.sha256):
    return hmac.new(key.encode() if isinstance(key, str) else key, msg,
                    alg).hexdigest()


def hmac_b64(key, msg, alg=hashlib.sha256):
    return b64(hmac.new(key.encode(), msg, alg).digest())


def num(tag, digits):
    """A number of `digits` digits from tag, the same every run: provider
    ids of the form each provider uses, different per tag."""
    return "%0*d" % (digits, int(hashlib.sha256(tag.encode()).hexdigest(), 16)
                     % 10 ** digits)


def tamper(body):
    """The body with one byte changed, as a proxy or an attacker might."""
    i = body.index(b"0")
    return body[:i] + b"1" + body[i + 1:]


# ---- the providers, each as its own documentation signs -----------------
#
# Each provider: name (the source's NAME and here its scheme too), the
# config lines of its section, a wrong secret of the same form, whether it
# signs a timestamp (a window), event(tag) -> (body, ctx, expected row),
# headers(body, ts, secret, ctx) -> the signed headers.

class Provider:
    window = False          # signs a timestamp checked against tolerance
    title = header = None   # as recognition names it (None: never)
    content_type = "application/json"

    def section(self):
        return ["scheme = %s" % self.scheme, "secret = %s" % self.secret]


class Standard(Provider):
    """standardwebhooks.com: v1, base64 HMAC-SHA256 of id.timestamp.body
    under the base64 decoding of whsec_...  At a named source its clock
    is webhook-timestamp (the scheme's time field)."""
    name = scheme = "std"
    scheme = "standard"
    secret, wrong = SECRET_B, SECRET_A
    window = True
    title, header = "Standard Webhooks", "webhook-signature"

    def event(self, tag, ts):
        mid = "msg_std_%s" % tag
        body = event_body(mid, obj_id=3)
        # Its clock is the body's createdAt, never the send time in
        # webhook-timestamp; its object data.object + data.id, typed
        # under the source's name (lib/store/event.c, as the default
        # source's).
        return body, {"id": mid}, {"id": "std/" + mid, "pid": mid,
                                   "type": "client.updated",
                                   "created_at": "2026-11-30T10:00:00.000000000Z",
                                   "object": "3", "object_type": "std/client"}

    def headers(self, body, ts, secret, ctx):
        return {"webhook-id": ctx["id"], "webhook-timestamp": str(ts),
                "webhook-signature": sign(secret, ctx["id"], ts, body)}


class Stripe(Provider):
    """docs.stripe.com/webhooks#verify-manually: Stripe-Signature
    t=TS,v1=hex HMAC-SHA256 of "TS.body", keyed with the whole whsec_
    text."""
    name = scheme = "stripe"
    secret = "whsec_5f0c3d9a7be4e1c2b8a6d4f0e9c7a5b3"
    wrong = "whsec_5f0c3d9a7be4e1c2b8a6d4f0e9c7a5b4"
    window = True
    title, header = "Stripe", "Stripe-Signature"

    def event(self, tag, ts, obj="cus_NffrFeUfNV2Hib", created=None):
        created = created or 1764496800     # 2025-11-30T10:00:00Z
        eid = "evt_1%s" % tag
        body = json.dumps({
            "id": eid, "object": "event", "api_version": "2024-06-20",
            "created": created, "type": "customer.updated",
            "livemode": False, "pending_webhooks": 1,
            "data": {"object": {"id": obj, "object": "customer",
                                "email": "jenny.rosen@example.com"}}}).encode()
        return body, {}, {"id": "stripe/" + eid, "pid": eid,
                          "type": "customer.updated",
                          "created_at": instant(unix=created),
                          "object": obj}

    def headers(self, body, ts, secret, ctx):
        mac = hmac_hex(secret, str(ts).encode() + b"." + body)
        return {"Stripe-Signature": "t=%d,v1=%s" % (ts, mac)}


class GitHub(Provider):
    """docs.github.com ... validating-webhook-deliveries:
    X-Hub-Signature-256 sha256=hex HMAC-SHA256 of the body."""
    name = scheme = "github"
    secret = "It's a Secret to Everybody"
    wrong = "It's a Secret to Nobody"
    title, header = "GitHub", "X-Hub-Signature-256"

    def event(self, tag, ts):
        guid = "72d3162e-cc78-11e3-81ab-4c9367dc" + num(tag, 4)
        body = json.dumps({"zen": "Keep it logically awesome.",
                           "hook_id": 30, "ref": "refs/heads/main",
                           "repository": {"id": 1296269,
                                          "full_name": "octocat/Hello-World"}
                           }).encode()
        return body, {"guid": guid}, {"id": "github/%s~%s" % (guid, content_tag(body)), "pid": guid,
                                      "type": "push", "created_at": None,
                                      "object": None}

    def headers(self, body, ts, secret, ctx):
        return {"X-GitHub-Delivery": ctx["guid"], "X-GitHub-Event": "push",
                "X-GitHub-Hook-ID": "30",
                "X-Hub-Signature": "sha1=" + hmac_hex(secret, body, hashlib.sha1),
                "X-Hub-Signature-256": "sha256=" + hmac_hex(secret, body)}


def content_tag(body, form=False):
    """The tag after a provider id the signature does not cover
    (docs/providers.md "Ids"): the first 8 bytes of the SHA-256 of the
    signed content, hex.  A Twilio form's content is its parameters as the
    signature takes them (decoded, distinct, sorted), each length-prefixed
    (8 bytes, little-endian), so that reordering them changes nothing."""
    if not form:
        return hashlib.sha256(body).hexdigest()[:16]
    pairs = sorted(set((k.encode(), v.encode()) for k, v in
                       urllib.parse.parse_qsl(body.decode(),
                                              keep_blank_values=True)))
    h = hashlib.sha256()
    for k, v in pairs:
        for x in (k, v):
            h.update(len(x).to_bytes(8, "little") + x)
    return h.hexdigest()[:16]


class Shopify(Provider):
    """shopify.dev ... verify the webhook: X-Shopify-Hmac-Sha256, base64
    HMAC-SHA256 of the body under the app's client secret."""
    name = scheme = "shopify"
    secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    wrong = "0f1e2d3c4b5a69788796a5b4c3d2e1f1"
    title, header = "Shopify", "X-Shopify-Hmac-Sha256"

    def event(self, tag, ts):
        wid = "b54557e4-bdd9-4b37-8a5f-bf7d70b" + num(tag, 5)
        eid = "98880550-7158-44d4-b7cd-2c97c8a" + num(tag, 5)
        at = "2026-11-30T10:00:27.877041743Z"
        body = json.dumps({"id": 820982911946154508,
                           "admin_graphql_api_id": "gid://shopify/Order/820982911946154508",
                           "updated_at": "2026-11-30T05:00:27-05:00",
                           "total_price": "10.00"}).encode()
        # The event's id, as Shopify's duplicates guide keys them; the
        # webhook's id names one delivery.
        return body, {"wid": wid, "eid": eid, "at": at}, {
            "id": "shopify/%s~%s" % (eid, content_tag(body)), "pid": eid,
            "type": "orders/updated",
            "created_at": instant(iso=at),
            "object": "gid://shopify/Order/820982911946154508"}

    def headers(self, body, ts, secret, ctx):
        return {"X-Shopify-Topic": "orders/updated",
                "X-Shopify-Shop-Domain": "example.myshopify.com",
                "X-Shopify-Webhook-Id": ctx["wid"],
                "X-Shopify-Event-Id": ctx["eid"],
                "X-Shopify-API-Version": "2025-10",
                "X-Shopify-Triggered-At": ctx["at"],
                "X-Shopify-Hmac-Sha256": hmac_b64(secret, body)}


class WooCommerce(Provider):
    """WooCommerce's WC_Webhook::generate_signature: base64 HMAC-SHA256 of
    the body under the webhook's secret, X-WC-Webhook-Signature."""
    name = scheme = "woocommerce"
    secret = "wc_secret: Kx7#p2!"
    wrong = "wc_secret: Kx7#p3!"
    title, header = "WooCommerce", "X-WC-Webhook-Signature"

    def event(self, tag, ts):
        did = hashlib.md5(tag.encode()).hexdigest()
        body = json.dumps({"id": 727, "status": "processing",
                           "date_modified": "2026-11-30T11:00:00",
                           "date_modified_gmt": "2026-11-30T10:00:00",
                           "total": "29.35"}).encode()
        return body, {"did": did}, {
            "id": "woocommerce/%s~%s" % (did, content_tag(body)), "pid": did,
            "type": "order.updated",
            # No offset in WooCommerce's _gmt field: read as UTC.
            "created_at": "2026-11-30T10:00:00.000000000Z", "object": "727",
            # Ids are per resource (X-WC-Webhook-Resource).
            "object_type": "woocommerce/order"}

    def headers(self, body, ts, secret, ctx):
        return {"X-WC-Webhook-Source": "https://shop.example/",
                "X-WC-Webhook-Topic": "order.updated",
                "X-WC-Webhook-Resource": "order",
                "X-WC-Webhook-Event": "updated",
                "X-WC-Webhook-ID": "12",
                "X-WC-Webhook-Delivery-ID": ctx["did"],
                "X-WC-Webhook-Signature": hmac_b64(secret, body)}


class Slack(Provider):
    """api.slack.com/authentication/verifying-requests-from-slack:
    X-Slack-Signature v0=hex HMAC-SHA256 of "v0:TS:body" under the signing
    secret's text, X-Slack-Request-Timestamp."""
    name = scheme = "slack"
    secret = "8f742231b10e8888abcd99yyyzzz85a5"   # Slack's own example
    wrong = "8f742231b10e8888abcd99yyyzzz85a6"
    window = True
    title, header = "Slack", "X-Slack-Signature"

    def event(self, tag, ts):
        eid = "Ev08MF%s" % tag
        body = json.dumps({"token": "XXYYZZ", "team_id": "T061EG9R6",
                           "api_app_id": "A0PNCHHK2", "type": "event_callback",
                           "event": {"type": "app_mention", "user": "U061F7AUR",
                                     "text": "<@U0LAN0Z89> hi", "ts": "1515449522.000016",
                                     "channel": "C0LAN2Q65"},
                           "event_id": eid, "event_time": 1764496830}).encode()
        return body, {}, {"id": "slack/" + eid, "pid": eid,
                          "type": "app_mention",
                          "created_at": instant(unix=1764496830),
                          "object": None}

    def headers(self, body, ts, secret, ctx):
        base = b"v0:" + str(ts).encode() + b":" + body
        return {"X-Slack-Request-Timestamp": str(ts),
                "X-Slack-Signature": "v0=" + hmac_hex(secret, base)}


class Paddle(Provider):
    """developer.paddle.com/webhooks/signature-verification:
    Paddle-Signature ts=TS;h1=hex HMAC-SHA256 of "TS:body" under the whole
    pdl_ntfset_ text."""
    name = scheme = "paddle"
    secret = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI"
    wrong = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEJ"
    window = True
    title, header = "Paddle Billing", "Paddle-Signature"

    def event(self, tag, ts):
        eid = "evt_01hv8x2a%s" % tag
        at = "2026-11-30T10:00:01.123456Z"
        body = json.dumps({"event_id": eid, "event_type": "subscription.updated",
                           "occurred_at": at, "notification_id": "ntf_01hv8x2b",
                           "data": {"id": "sub_01hv8x2c0zjdbxq9hm6n2kpf7a",
                                    "status": "active"}}).encode()
        return body, {}, {"id": "paddle/" + eid, "pid": eid,
                          "type": "subscription.updated",
                          "created_at": instant(iso=at),
                          "object": "sub_01hv8x2c0zjdbxq9hm6n2kpf7a"}

    def headers(self, body, ts, secret, ctx):
        mac = hmac_hex(secret, str(ts).encode() + b":" + body)
        return {"Paddle-Signature": "ts=%d;h1=%s" % (ts, mac)}


class Discord(Provider):
    """discord.com/developers/docs/interactions/overview: X-Signature-Ed25519,
    hex Ed25519 over timestamp + body, X-Signature-Timestamp; the secret is
    the application's public key, 64 hex digits.  The key pairs are made
    here."""
    name = scheme = "discord"
    title, header = "Discord", "X-Signature-Ed25519"
    key = Ed25519PrivateKey.generate()
    other_key = Ed25519PrivateKey.generate()

    @staticmethod
    def public_hex(key):
        return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    secret = property(lambda self: self.public_hex(self.key))
    wrong = property(lambda self: self.public_hex(self.other_key))

    def event(self, tag, ts):
        # A Webhook Event (discord.com/developers/docs/events/webhook-events):
        # type 1 with an `event`; it carries no id, so the body's digest is.
        body = json.dumps({"version": 1, "application_id": "1176", "type": 1,
                           "event": {"type": "APPLICATION_AUTHORIZED",
                                     "timestamp": "2025-11-30T10:00:00.123456",
                                     "data": {"tag": tag}}}).encode()
        digest = hashlib.sha256(body).hexdigest()
        return body, {}, {"id": "discord/sha256:" + digest,
                          "pid": "sha256:" + digest,
                          "type": "APPLICATION_AUTHORIZED",
                          "created_at": instant(
                              iso="2025-11-30T10:00:00.123456Z"),
                          "object": None}

    def headers(self, body, ts, secret, ctx):
        key = self.key if secret == self.secret else self.other_key
        return {"X-Signature-Timestamp": str(ts),
                "X-Signature-Ed25519": key.sign(str(ts).encode() + body).hex()}


class GitLab(Provider):
    """docs.gitlab.com ... webhooks: X-Gitlab-Token is the secret token
    itself (nothing signs the body)."""
    name = scheme = "gitlab"
    secret = "gl-token Example_123"
    wrong = "gl-token Example_124"
    title, header = "GitLab", "X-Gitlab-Token"

    def event(self, tag, ts):
        uuid = "13792a34-cac6-4fda-95a8-c58e0" + num(tag, 7)
        body = json.dumps({"object_kind": "push", "event_name": "push",
                           "ref": "refs/heads/main", "project_id": 15,
                           "total_commits_count": 0}).encode()
        return body, {"uuid": uuid}, {"id": "gitlab/%s~%s" % (uuid, content_tag(body)), "pid": uuid,
                                      "type": "Push Hook", "created_at": None,
                                      "object": None}

    def headers(self, body, ts, secret, ctx):
        return {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret,
                "X-Gitlab-Event-UUID": ctx["uuid"],
                "X-Gitlab-Instance": "https://gitlab.example.com"}


class Twilio(Provider):
    """twilio.com/docs/usage/security: X-Twilio-Signature, base64
    HMAC-SHA1 of the URL followed by every POST parameter's name and value,
    sorted by name, under the Auth Token.  The URL is the one the test
    posts to (set once the server's port is known)."""
    name = scheme = "twilio"
    secret = "12345"                        # Twilio's documented example
    wrong = "12346"
    title, header = "Twilio", "X-Twilio-Signature"
    content_type = "application/x-www-form-urlencoded"
    url = None

    def section(self):
        return super().section() + ["url = %s" % self.url]

    def event(self, tag, ts):
        token = "a2b0c6d9-%s" % tag
        body = urllib.parse.urlencode([
            ("ToCountry", "US"), ("SmsMessageSid", "SM0%s" % tag),
            ("Body", "Hello + world? 100%"), ("From", "+14158141829"),
            ("To", "+18005550100"), ("AccountSid", "ACXXXXXXXX")]).encode()
        return body, {"token": token}, {"id": "twilio/%s~%s" % (token, content_tag(body, form=True)), "pid": token,
                                        "type": None, "created_at": None,
                                        "object": None}

    def headers(self, body, ts, secret, ctx):
        data = self.url + "".join(
            k + v for k, v in sorted(urllib.parse.parse_qsl(
                body.decode(), keep_blank_values=True)))
        mac = hmac.new(secret.encode(), data.encode(), hashlib.sha1).digest()
        return {"X-Twilio-Signature": b64(mac),
                "I-Twilio-Idempotency-Token": ctx["token"]}


class Generic(Provider):
    """The generic `hmac` scheme as configured: X-Signature = "sha512=" +
    base64 HMAC-SHA512 of "TS.body", TS from X-Timestamp; the type from a
    header, the clock and object from the body; no id, so the body's
    SHA-256 is it."""
    name = "generic"
    scheme = "hmac"
    secret = "generic secret, with spaces"
    wrong = "generic secret, with spaces!"
    window = True

    def section(self):
        return super().section() + [
            "header = X-Signature", "prefix = sha512=", "algorithm = sha512",
            "encoding = base64", "timestamp_header = X-Timestamp",
            "type = X-Event-Type", "time = /at", "object = /item/id"]

    def event(self, tag, ts):
        body = json.dumps({"item": {"id": "item-%s" % tag, "qty": 10},
                           "at": "2026-11-30T10:00:00Z"}).encode()
        digest = hashlib.sha256(body).hexdigest()
        return body, {}, {"id": "generic/sha256:" + digest,
                          "pid": "sha256:" + digest, "type": "item.changed",
                          "created_at": "2026-11-30T10:00:00.000000000Z",
                          "object": "item-%s" % tag}

    def headers(self, body, ts, secret, ctx):
        mac = hmac.new(secret.encode(), str(ts).encode() + b"." + body,
                       hashlib.sha512).digest()
        return {"X-Timestamp": str(ts), "X-Event-Type": "item.changed",
                "X-Signature": "sha512=" + b64(mac)}


PROVIDERS = [Standard(), Stripe(), GitHub(), Shopify(), WooCommerce(), Slack(),
             Paddle(), Discord(), GitLab(), Twilio(), Generic()]
BY_NAME = {p.name: p for p in PROVIDERS}
RECOGNISED = [p for p in PROVIDERS if p.header is not None]


def other_than(p):
    """Another recognisable provider than p: the next one in the list."""
    i = RECOGNISED.index(p) if p in RECOGNISED else -1
    return RECOGNISED[(i + 1) % len(RECOGNISED)]


def endpoint_title(p):
    return p.title or "a generic HMAC"


def config_text(db, extra=()):
    """The default source (SECRET_A, Standard Webhooks) and a [source] of
    every scheme."""
    lines = ["database = %s" % db, "secret = %s" % SECRET_A,
             "busy_timeout = 5s"] + list(extra)
    for p in PROVIDERS:
        lines += ["", "[source %s]" % p.name] + p.section()
    return "\n".join(lines) + "\n"


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class SourcesBase(unittest.TestCase):
    conf_extra = ()

    def setUp(self):
        self.sb = Sandbox(prefix="webhook-sources-")
        self.srv = Lighttpd(self.sb, procs=2)
        # Twilio signs the very URL it posts to: known once the port is.
        BY_NAME["twilio"].url = "http://127.0.0.1:%d/hook/twilio" % self.srv.port
        write_text(self.sb.conf, config_text(self.sb.db, self.conf_extra))

    def tearDown(self):
        end_sandbox(self, self.sb, self.srv)

    def tag(self, p, what="a"):
        return "%s_%s_%s" % (self._testMethodName[5:20], p.name, what)

    def send(self, p, body, headers, path=None):
        h = {"Content-Type": p.content_type}
        h.update(headers)
        return self.srv.post(h, body, path=path or "/hook/" + p.name)

    def rows(self, inbox_id):
        return self.sb.rows("SELECT * FROM events WHERE webhook_id = ?",
                            (inbox_id,))

    def diag(self):
        return self.srv.log()[-3000:]


class TestEveryScheme(SourcesBase):
    def test_valid_delivery_stored_with_fields_then_redelivery_duplicate(self):
        for p in PROVIDERS:
            with self.subTest(scheme=p.scheme):
                now = int(time.time())
                body, ctx, want = p.event(self.tag(p), now)
                st, hd, text = self.send(p, body, p.headers(body, now, p.secret, ctx))
                self.assertEqual((st, text), (200, b"stored\n"), self.diag())
                rows = self.rows(want["id"])
                self.assertEqual(len(rows), 1, self.sb.rows(
                    "SELECT webhook_id FROM events"))
                r = rows[0]
                self.assertEqual(bytes(r["body"]), body)
                self.assertEqual(r["state"], "pending")
                self.assertEqual(r["type"], want["type"])
                self.assertEqual(r["created_at"], want["created_at"])
                if want["object"] is None:
                    self.assertEqual((r["object_type"], r["object_id"]),
                                     (None, None))
                else:
                    self.assertEqual((r["object_type"], r["object_id"]),
                                     (want.get("object_type", p.name),
                                      want["object"]))
                # The provider's retry, re-signed now where a time is signed.
                later = now + 3 if p.window else now
                st, _, text = self.send(p, body, p.headers(body, later, p.secret, ctx))
                self.assertEqual((st, text), (200, b"duplicate\n"), self.diag())
                self.assertEqual(len(self.rows(want["id"])), 1)
        self.assertEqual(self.sb.count(), len(PROVIDERS))

    def test_wrong_secret_401(self):
        for p in PROVIDERS:
            with self.subTest(scheme=p.scheme):
                now = int(time.time())
                body, ctx, want = p.event(self.tag(p), now)
                st, _, text = self.send(p, body, p.headers(body, now, p.wrong, ctx))
                self.assertEqual((st, text), (401, b"signature not accepted\n"),
                                 self.diag())
        self.assertEqual(self.sb.count(), 0)

    def test_tampered_body_401(self):
        for p in PROVIDERS:
            if p.scheme == "gitlab":
                continue        # below: GitLab's token signs nothing
            with self.subTest(scheme=p.scheme):
                now = int(time.time())
                body, ctx, want = p.event(self.tag(p), now)
                h = p.headers(body, now, p.secret, ctx)
                st, _, _ = self.send(p, tamper(body), h)
                self.assertEqual(st, 401, self.diag())
        self.assertEqual(self.sb.count(), 0)

    def test_twilio_json_body_signed_with_the_query_twilio_adds(self):
        # twilio.com/docs/usage/security: for a JSON body Twilio appends
        # bodySHA256=<hex of the body> to the URL it was given and signs
        # that URL alone.  The config holds the URL as given; the query
        # arrives with the request, through the real web server.
        p = BY_NAME["twilio"]
        body = json.dumps({"ParentAccountSid": "AC0", "Payload": "{}",
                           "Tag": self.tag(p, "json")}).encode()
        query = "bodySHA256=" + hashlib.sha256(body).hexdigest()
        mac = hmac.new(p.secret.encode(), ("%s?%s" % (p.url, query)).encode(),
                       hashlib.sha1).digest()
        h = {"Content-Type": "application/json", "X-Twilio-Signature": b64(mac),
             "I-Twilio-Idempotency-Token": "tok-json-1"}
        st, _, text = self.srv.post(h, body, path="/hook/twilio?" + query)
        self.assertEqual((st, text), (200, b"stored\n"), self.diag())
        self.assertEqual(len(self.rows("twilio/tok-json-1~%s"
                                       % content_tag(body))), 1)
        # Another body under that query: the hash pins the body.
        other = body.replace(b"AC0", b"AC1")
        st, _, _ = self.srv.post(h, other, path="/hook/twilio?" + query)
        self.assertEqual(st, 401, self.diag())
        self.assertEqual(self.sb.count(), 1)

    def test_gitlab_token_does_not_cover_the_body(self):
        # docs/providers.md: "GitLab sends the secret itself; use HTTPS".
        # What the token proves is the sender, not the bytes: a changed
        # body is stored.  Checked so the docs' warning stays true.
        p = BY_NAME["gitlab"]
        body, ctx, want = p.event(self.tag(p), 0)
        st, _, _ = self.send(p, tamper(body), p.headers(body, 0, p.secret, ctx))
        self.assertEqual(st, 200, self.diag())
        # Stored under the id and the tag of what arrived (the token
        # covers no bytes, so the content tells deliveries apart).
        self.assertEqual(bytes(self.rows("gitlab/%s~%s" % (
            want["pid"], content_tag(tamper(body))))[0]["body"]), tamper(body))

    def test_expired_timestamp_401_where_the_scheme_signs_one(self):
        windowed = [p for p in PROVIDERS if p.window]
        self.assertEqual(sorted(p.scheme for p in windowed),
                         ["hmac", "paddle", "slack", "standard", "stripe"])
        for p in windowed:
            with self.subTest(scheme=p.scheme):
                old = int(time.time()) - 400      # the window is 300 s
                body, ctx, want = p.event(self.tag(p), old)
                st, _, _ = self.send(p, body, p.headers(body, old, p.secret, ctx))
                self.assertEqual(st, 401, self.diag())
                # The same delivery signed now is taken: the time, not
                # the signature, was refused.
                now = int(time.time())
                st, _, _ = self.send(p, body, p.headers(body, now, p.secret, ctx))
                self.assertEqual(st, 200, self.diag())
        self.assertEqual(self.sb.count(), len(windowed))

    def test_another_providers_delivery_400_and_the_log_names_it(self):
        for p in PROVIDERS:
            q = other_than(p)
            with self.subTest(endpoint=p.scheme, delivery=q.scheme):
                now = int(time.time())
                body, ctx, want = q.event(self.tag(p, "other"), now)
                h = {"Content-Type": q.content_type}
                h.update(q.headers(body, now, q.secret, ctx))
                st, _, text = self.srv.post(h, body, path="/hook/" + p.name)
                self.assertEqual((st, text), (400, b"bad request\n"), self.diag())
                # The id the delivery claims, unverified: its own
                # provider's id header, where that provider has one.
                claimed = want["pid"] if q.scheme in (
                    "standard", "github", "shopify", "woocommerce", "gitlab",
                    "twilio") else "-"
                line = ("refused 400 [source %s] webhook-id=%s: this looks like "
                        "%s's %s; this endpoint is %s: add a [source …] with "
                        "scheme = %s" % (p.name, claimed, q.title,
                                         q.header, endpoint_title(p), q.scheme))
                self.assertIn(line, self.srv.log())
        self.assertEqual(self.sb.count(), 0)


class TestSynchronousAnswers(SourcesBase):
    def test_slack_url_verification_answers_the_challenge_stores_nothing(self):
        p = BY_NAME["slack"]
        challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
        body = json.dumps({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
                           "challenge": challenge,
                           "type": "url_verification"}).encode()
        now = int(time.time())
        st, hd, text = self.send(p, body, p.headers(body, now, p.secret, {}))
        self.assertEqual((st, text), (200, challenge.encode()), self.diag())
        self.assertTrue(hd["Content-Type"].startswith("text/plain"), hd)
        # Only once the signature verifies: unsigned, it is a 401.
        st, _, text = self.send(p, body, p.headers(body, now, p.wrong, {}))
        self.assertEqual(st, 401)
        self.assertNotIn(challenge.encode(), text)
        self.assertEqual(self.sb.count(), 0)

    def test_discord_ping_answered_type_1_json_stores_nothing(self):
        p = BY_NAME["discord"]
        body = json.dumps({"id": "1103", "application_id": "1176", "type": 1,
                           "token": "aW50", "version": 1}).encode()
        now = int(time.time())
        st, hd, text = self.send(p, body, p.headers(body, now, p.secret, {}))
        self.assertEqual((st, json.loads(text)), (200, {"type": 1}), self.diag())
        self.assertEqual(text, b'{"type":1}')
        self.assertEqual(hd["Content-Type"].split(";")[0].strip(), "application/json")
        # Discord's own check when the URL is saved: a bad signature must
        # be refused.
        st, _, _ = self.send(p, body, p.headers(body, now, p.wrong, {}))
        self.assertEqual(st, 401)
        # Webhook Events' PING is type 0 and wants 204, no body.
        body = json.dumps({"version": 1, "application_id": "1176",
                           "type": 0}).encode()
        st, hd, text = self.send(p, body, p.headers(body, now, p.secret, {}))
        self.assertEqual((st, text), (204, b""), self.diag())
        self.assertEqual(self.sb.count(), 0)

    def test_woocommerce_ping_200_stores_nothing(self):
        p = BY_NAME["woocommerce"]
        st, _, text = self.srv.post(
            {"Content-Type": "application/x-www-form-urlencoded"},
            b"webhook_id=12", path="/hook/woocommerce")
        self.assertEqual((st, text), (200, b"ping\n"), self.diag())
        self.assertEqual(self.sb.count(), 0)
        # Any other unsigned body is no ping.
        st, _, _ = self.srv.post(
            {"Content-Type": "application/x-www-form-urlencoded"},
            b"webhook_id=12&x=1", path="/hook/woocommerce")
        self.assertEqual(st, 400)
        self.assertEqual(self.sb.count(), 0)


class TestUrls(SourcesBase):
    def test_unknown_name_404_and_bare_url_is_the_default_source(self):
        p = BY_NAME["github"]
        body, ctx, want = p.event(self.tag(p), 0)
        h = p.headers(body, 0, p.secret, ctx)
        for path in ("/hook/gitHub", "/hook/nosuch", "/hook/github/x",
                     "/hook/default"):
            with self.subTest(path=path):
                st, _, text = self.srv.post(h, body, path=path)
                self.assertEqual((st, text), (404, b"no such source\n"), self.diag())
        # A trailing / names the same source.
        st, _, _ = self.srv.post(h, body, path="/hook/github/")
        self.assertEqual(st, 200, self.diag())
        self.assertEqual(len(self.rows(want["id"])), 1)
        # The bare URL: the top-level keys, Standard Webhooks, SECRET_A,
        # the id as sent.
        mid = "msg_bare_default"
        st, _, text = self.srv.deliver(SECRET_A, mid, event_body(mid), path="/hook")
        self.assertEqual((st, text), (200, b"stored\n"), self.diag())
        self.assertEqual(len(self.rows(mid)), 1)
        # The std source's secret is not the default's.
        mid = "msg_bare_other_secret"
        st, _, _ = self.srv.deliver(SECRET_B, mid, event_body(mid), path="/hook")
        self.assertEqual(st, 401)
        self.assertEqual(self.sb.count(), 2)


HANDLER = """#!/bin/sh
sum=$(sha256sum | cut -d' ' -f1)
printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$WEBHOOK_ID" "$WEBHOOK_SOURCE" \\
    "$WEBHOOK_PROVIDER_ID" "$WEBHOOK_TYPE" "$WEBHOOK_OBJECT" \\
    "$WEBHOOK_OBJECT_ID" "$WEBHOOK_CREATED_AT" "$sum" >> "$RECORD"
"""


class DrainBase(SourcesBase):
    """A handler that records what webhook-drain hands it."""
    settle = "0s"

    def setUp(self):
        self.handler_path = None
        super().setUp()
        self.record = os.path.join(self.sb.dir, "record.tsv")
        self.handler_path = os.path.join(self.sb.dir, "handler.sh")
        with open(self.handler_path, "w") as f:
            f.write(HANDLER)
        self.conf_extra = ("handler = sh %s" % self.handler_path,
                           "settle = %s" % self.settle, "handler_timeout = 60s")
        write_text(self.sb.conf, config_text(self.sb.db, self.conf_extra))

    def handed(self):
        return [dict(zip(("id", "source", "pid", "type", "object", "object_id",
                          "created_at", "sha"), c))
                for c in record_lines(self.record)]

    def drain(self, *args, offset=None):
        p = run_drain(self.sb, *args, record=self.record, offset=offset)
        self.assertEqual((p.returncode, p.stderr), (0, ""), p.stdout)
        return p


class TestDrain(DrainBase):
    def test_every_source_handed_out_with_its_source_and_provider_id(self):
        sent = {}
        for p in PROVIDERS:
            now = int(time.time())
            body, ctx, want = p.event(self.tag(p), now)
            st, _, _ = self.send(p, body, p.headers(body, now, p.secret, ctx))
            self.assertEqual(st, 200, self.diag())
            sent[want["id"]] = (p, body, want)
        mid = "msg_drain_default"
        body = event_body(mid, obj_id=5)
        self.assertEqual(self.srv.deliver(SECRET_A, mid, body)[0], 200)
        self.drain("run")
        got = {h["id"]: h for h in self.handed()}
        self.assertEqual(sorted(got), sorted(list(sent) + [mid]))
        for inbox_id, (p, sent_body, want) in sent.items():
            with self.subTest(scheme=p.scheme):
                h = got[inbox_id]
                self.assertEqual(
                    (h["source"], h["pid"], h["type"], h["object"],
                     h["object_id"], h["sha"]),
                    (p.name, want["pid"], want["type"] or "",
                     want.get("object_type", p.name) if want["object"] else "",
                     want["object"] or "",
                     hashlib.sha256(sent_body).hexdigest()))
        h = got[mid]
        self.assertEqual((h["source"], h["pid"], h["type"], h["object"],
                          h["object_id"], h["sha"]),
                         ("default", mid, "client.updated", "client", "5",
                          hashlib.sha256(body).hexdigest()))
        states = {r["webhook_id"]: r["state"] for r in self.sb.rows()}
        self.assertEqual(set(states.values()), {"done"}, states)
        # The operator's views by source (docs/DESIGN.md "Sources").
        p = run_drain(self.sb, "list", "--source", "stripe", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        listed = [json.loads(line) for line in p.stdout.splitlines()]
        stripe_ids = [i for i, v in sent.items() if v[0].name == "stripe"]
        self.assertEqual([e["webhook_id"] for e in listed], stripe_ids)
        self.assertEqual({e["source"] for e in listed}, {"stripe"})
        p = run_drain(self.sb, "list", "--source", "strpe")
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)
        self.assertIn("has no [source strpe]", p.stderr)
        p = run_drain(self.sb, "list", "--source", "default")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertIn(mid, p.stdout)
        self.assertNotIn("stripe/", p.stdout)
        p = run_drain(self.sb, "status", "--json")
        by = {s["source"]: s for s in json.loads(p.stdout)["sources"]}
        self.assertEqual(sorted(by), sorted(["default"] +
                                            [q.name for q in PROVIDERS]))
        self.assertEqual((by["stripe"]["done"], by["stripe"]["pending"]),
                         (len(stripe_ids), 0))
        p = run_drain(self.sb, "status")
        self.assertIn("by source:\n  default ", p.stdout)
        p = run_drain(self.sb, "show", stripe_ids[0])
        self.assertIn("source:        stripe\n", p.stdout)
        # try hands out exactly what a run gives.
        before = len(self.handed())
        p = run_drain(self.sb, "try", stripe_ids[0], record=self.record)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        h = self.handed()[before]
        self.assertEqual((h["id"], h["source"], h["pid"]),
                         (stripe_ids[0], "stripe",
                          stripe_ids[0].split("/", 1)[1]))


    def test_configured_source_without_events_shown(self):
        """A source that never received anything is what a wrong URL at
        the provider looks like: status, status --json, the report and
        its metrics show it (docs/DESIGN.md "Sources")."""
        p = BY_NAME["stripe"]
        now = int(time.time())
        body, ctx, _ = p.event(self.tag(p), now)
        st, _, _ = self.send(p, body, p.headers(body, now, p.secret, ctx))
        self.assertEqual(st, 200, self.diag())
        q = run_drain(self.sb, "status")
        self.assertIn("  stripe           pending 1, done 0, stale 0, "
                      "dead 0\n", q.stdout)
        for other in PROVIDERS:
            if other.name != "stripe":
                self.assertIn("\n  %-16s nothing received yet\n"
                              % other.name, q.stdout)
        q = run_drain(self.sb, "status", "--json")
        by = {s["source"]: s for s in json.loads(q.stdout)["sources"]}
        self.assertEqual(sorted(by), sorted(x.name for x in PROVIDERS))
        self.assertEqual(by["stripe"]["pending"], 1)
        self.assertEqual(by["github"], {"source": "github", "pending": 0,
                                        "waiting_retry": 0, "done": 0,
                                        "stale": 0, "dead": 0})
        out = os.path.join(self.sb.dir, "report")
        q = run_drain(self.sb, "report", "--out", out)
        self.assertEqual(q.returncode, 0, q.stderr)
        with open(os.path.join(out, "metrics.prom")) as f:
            prom = f.read()
        self.assertIn('webhook_source_events{source="github",state="pending"} 0\n',
                      prom)
        with open(os.path.join(out, "index.html")) as f:
            self.assertIn("<tr><td>github</td>", f.read())


class TestStripeOrder(DrainBase):
    """Order and the stale rule on Stripe's own clock (`created`), the
    object being data.object.id."""
    settle = "60s"

    def deliver(self, tag, created):
        p = BY_NAME["stripe"]
        now = int(time.time())
        body, ctx, want = p.event(tag, now, obj="cus_ORDER", created=created)
        st, _, text = self.send(p, body, p.headers(body, now, p.secret, ctx))
        self.assertEqual((st, text), (200, b"stored\n"), self.diag())
        return want["id"]

    def test_handed_out_in_created_order_and_a_late_older_one_is_stale(self):
        t = 1764496800
        third = self.deliver("third", t + 20)
        first = self.deliver("first", t)
        second = self.deliver("second", t + 10)
        # Within settle nothing is due.
        self.drain("run")
        self.assertEqual(self.handed(), [])
        self.drain("run", offset=61)
        self.assertEqual([h["id"] for h in self.handed()], [first, second, third])
        self.assertEqual([h["created_at"] for h in self.handed()],
                         [str(t), str(t + 10), str(t + 20)])
        self.assertEqual({h["object_id"] for h in self.handed()}, {"cus_ORDER"})
        # t+5 arrives after t+20 was done: stale, never handed out.
        late = self.deliver("late", t + 5)
        self.drain("run", offset=61)
        self.assertEqual(len(self.handed()), 3)
        self.assertEqual(self.rows(late)[0]["state"], "stale")
        p = run_drain(self.sb, "list", "--state", "stale", offset=61)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(late, p.stdout)
        self.assertNotIn(third, p.stdout)


# ---- through nginx and Apache: the /NAME part of the URL ----------------

WEB_HEADING = "## Web server: the /NAME part of the URL"


def docs_block(lang):
    """The ```LANG block under WEB_HEADING in docs/providers.md."""
    with open(PROVIDERS_MD, encoding="utf-8") as f:
        text = f.read()
    section = text.split(WEB_HEADING + "\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```%s\n(.*?)```" % lang, section, re.S)
    return m.group(1)


@harness.sqlite_only("the web servers' account layout is "
                     "tests/e2e_servers.py's, its inbox a SQLite file")
class WebServerCase:
    """A real web server as root dropping to the web user
    (tests/e2e_servers.py's Home, users and servers), the config of every
    source; one GitHub delivery at BASE/github is stored and BASE/nosuch
    is the receiver's 404."""
    base = "/webhook"

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root, as tests/e2e_servers.py")
        import e2e_servers
        e2e_servers.setUpModule()       # its users and group
        cls.es = e2e_servers

    def setUp(self):
        self.home = self.es.Home()
        self.servers = []
        try:
            self.start()
            BY_NAME["twilio"].url = "http://127.0.0.1:%d%s/twilio" % (
                self.port, self.base)
            write_text(self.home.conf, config_text(self.home.db))
            os.chown(self.home.conf, self.es.uid(self.es.CRON_USER),
                     self.es.gid())
            os.chmod(self.home.conf, 0o640)
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

    def test_name_reaches_its_source_unknown_is_404(self):
        p = BY_NAME["github"]
        body, ctx, want = p.event("web_" + type(self).__name__, 0)
        h = {"Content-Type": p.content_type}
        h.update(p.headers(body, 0, p.secret, ctx))
        st, text = self.es.post(self.port, self.base + "/github", h, body)
        self.assertEqual((st, text), (200, b"stored\n"), self.diag())
        rows = self.home.sb.rows("SELECT * FROM events WHERE webhook_id = ?",
                                 (want["id"],))
        self.assertEqual([bytes(r["body"]) for r in rows], [body])
        st, text = self.es.post(self.port, self.base + "/nosuch", h, body)
        self.assertEqual((st, text), (404, b"no such source\n"), self.diag())
        # The bare URL is still the default source.
        mid = "msg_web_default"
        body = event_body(mid)
        ts = int(time.time())
        st, text = self.es.post(self.port, self.base, {
            "webhook-id": mid, "webhook-timestamp": str(ts),
            "webhook-signature": sign(SECRET_A, mid, ts, body)}, body)
        self.assertEqual((st, text), (200, b"stored\n"), self.diag())
        self.assertEqual(self.home.sb.count(), 2)


class TestDocsQuoteConf(unittest.TestCase):
    """The Apache, lighttpd and nginx blocks of docs/providers.md are
    lines of the conf/ files the tests below run, so the page cannot
    drift."""

    def test_each_line_is_in_the_conf_file(self):
        for lang, conf in (("apache", "apache-fcgid.conf"),
                           ("lighttpd", "lighttpd-webhook.conf"),
                           ("nginx", "nginx-spawn-fcgi.conf")):
            with open(os.path.join(ROOT, "conf", conf)) as f:
                have = {line.strip() for line in f}
            block = [line.strip() for line in docs_block(lang).splitlines()]
            self.assertTrue(block)
            with self.subTest(conf=conf):
                self.assertEqual([line for line in block if line not in have], [])


class TestNginx(WebServerCase, unittest.TestCase):
    """conf/nginx-spawn-fcgi.conf as it is, in front of
    conf/webhook-spawn."""

    def start(self):
        spawn = self.es.Spawner(self.home, procs=2)
        self.servers.append(spawn)
        srv = self.es.Nginx(self.home, spawn.socket)
        self.servers.append(srv)
        self.port = srv.port


class TestApacheFcgid(WebServerCase, unittest.TestCase):
    """conf/apache-fcgid.conf as it is: the Alias passes /webhook/NAME."""

    def start(self):
        srv = self.es.Apache(
            self.home, ["fcgid"],
            'Include "%s"' % os.path.join(self.es.CONF_DIR, "apache-fcgid.conf"),
            defines={"WEBHOOK_BIN": harness.FCGI, "WEBHOOK_CONF": self.home.conf,
                     "WEBHOOK_URL": "/webhook"})
        self.servers.append(srv)
        self.port = srv.port


class TestApacheHtaccess(WebServerCase, unittest.TestCase):
    """Shared hosting (conf/apache-htaccess, docs/HOSTING.md): the
    wrapper's URL plus /NAME."""
    base = "/webhook/webhook.fcgi"

    def start(self):
        self.home.install_endpoint("apache-htaccess")
        srv = self.es.Apache(self.home, ["fcgid", "cgid"],
                             self.es.HOST_DIRECTORY.format(docroot=self.home.docroot))
        self.servers.append(srv)
        self.port = srv.port



class TestLighttpdConf(WebServerCase, unittest.TestCase):
    """conf/lighttpd-webhook.conf as it is: its "/webhook" prefix."""

    def start(self):
        srv = self.es.Lighttpd(self.home)
        self.servers.append(srv)
        self.port = srv.port


if __name__ == "__main__":
    unittest.main(verbosity=2)
