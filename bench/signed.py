#!/usr/bin/env python3
"""Signed Standard Webhooks deliveries for bench/run.

  signed.py gen  --conf FILE --host H:P --path /webhook --count N --threads T
                 --out PREFIX [--tag TAG] [--body-size BYTES]
      Write T files PREFIX.0 .. PREFIX.T-1 holding N raw HTTP/1.1 requests
      between them (each "LENGTH\\n" then the request's bytes), every one a
      distinct delivery: webhook-id unique, webhook-timestamp = now,
      webhook-signature v1 over "id.timestamp.body".  bench/requests.lua
      loads thread i's file and hands each request out once.

  signed.py post --conf FILE --host H:P --path /webhook --body-size BYTES
                 [--count N] [--tag TAG]
      POST N distinct signed deliveries with bodies of BYTES bytes; print
      one line per answer ("200 stored") and exit 1 unless all were 2xx.

The secret is read from the webhook.conf (`secret = whsec_...`, the first
one), never taken from the command line.
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import random
import secrets
import string
import sys
import time


def conf_secret(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            k, sep, v = line.partition("=")
            if sep and k.strip() == "secret" and v.strip().startswith("whsec_"):
                return base64.b64decode(v.strip()[len("whsec_"):])
    sys.exit(f"{path}: no whsec_ secret")


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + \
        ".%03dZ" % int((t % 1) * 1000)


# The event shape of PROVIDER.md (client.updated), with realistic filler
# in data so the body is the size asked for.
HEAD = ('{"id":"%s","type":"client.updated","createdAt":"%s","data":'
        '{"object":"client","id":"%s","updated_at":"%s","name":"Client %s",'
        '"email":"client%s@example.com","phone":"+44 20 7946 %04d",'
        '"address":{"line1":"%d High Street","city":"London",'
        '"postcode":"EC1A 1BB","country":"GB"},"tags":["bench","vip"],'
        '"notes":"')
TAIL = '"}}'


def body(evt, now, size, rnd):
    cli = "cli_%08d" % rnd.randrange(100000)
    head = HEAD % (evt, iso(now), cli, iso(now - rnd.randrange(86400)),
                   cli, cli, rnd.randrange(10000), rnd.randrange(1, 200))
    pad = size - len(head) - len(TAIL)
    if pad < 0:
        pad = 0
    return (head + ("lorem ipsum dolor sit amet " * (pad // 27 + 1))[:pad]
            + TAIL).encode()


def delivery(key, host, path, msg_id, ts, data, keepalive=True):
    mac = hmac.digest(key, b"%s.%d.%s" % (msg_id.encode(), ts, data), "sha256")
    sig = "v1," + base64.b64encode(mac).decode()
    headers = {
        "Host": host,
        "User-Agent": "webhook-bench",
        "Content-Type": "application/json",
        "Content-Length": str(len(data)),
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sig,
    }
    if not keepalive:
        headers["Connection"] = "close"
    return headers


def raw_request(path, headers, data):
    head = "POST %s HTTP/1.1\r\n" % path + "".join(
        "%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
    return head.encode() + data


def new_tag():
    return "".join(secrets.choice(string.ascii_letters + string.digits)
                   for _ in range(14))


def gen(a):
    key = conf_secret(a.conf)
    tag = a.tag or new_tag()
    now = time.time()
    ts = int(now)
    rnd = random.Random(tag)
    per = [a.count // a.threads + (1 if t < a.count % a.threads else 0)
           for t in range(a.threads)]
    for t in range(a.threads):
        with open("%s.%d" % (a.out, t), "wb", buffering=1 << 20) as f:
            for i in range(per[t]):
                suffix = "%s%02d%09d" % (tag, t, i)
                data = body("evt_" + suffix, now, a.body_size, rnd)
                req = raw_request(a.path, delivery(key, a.host, a.path,
                                  "msg_" + suffix, ts, data), data)
                f.write(b"%d\n" % len(req))
                f.write(req)
    print("generated %d requests (%s) tag=%s timestamp=%d"
          % (a.count, "+".join(map(str, per)), tag, ts))


def post(a):
    key = conf_secret(a.conf)
    tag = a.tag or new_tag()
    rnd = random.Random(tag)
    bad = 0
    for i in range(a.count):
        now = time.time()
        suffix = "%s%09d" % (tag, i)
        data = body("evt_" + suffix, now, a.body_size, rnd)
        hdr = delivery(key, a.host, a.path, "msg_" + suffix, int(now), data,
                       keepalive=False)
        hostname, port = a.host.rsplit(":", 1)
        c = http.client.HTTPConnection(hostname, int(port), timeout=60)
        c.request("POST", a.path, body=data, headers=hdr)
        r = c.getresponse()
        text = r.read().decode(errors="replace").strip()
        c.close()
        print("%d %s (%d-byte body)" % (r.status, text, len(data)))
        if not 200 <= r.status < 300:
            bad += 1
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=("gen", "post"))
    p.add_argument("--conf", required=True)
    p.add_argument("--host", required=True)
    p.add_argument("--path", default="/webhook")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out")
    p.add_argument("--tag")
    p.add_argument("--body-size", type=int, default=1024)
    a = p.parse_args()
    if a.mode == "gen":
        if not a.out:
            p.error("gen needs --out")
        gen(a)
        return 0
    return post(a)


if __name__ == "__main__":
    sys.exit(main())
