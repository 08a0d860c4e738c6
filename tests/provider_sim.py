#!/usr/bin/env python3
"""A simulator of the provider (PROVIDER.md), for tests and for humans.

The sending side:
  World       objects (clients, orders, invoices, payments, subscriptions)
              with versions; every change bumps the object's updated_at and
              publishes an outbound event (`<kind>.created|updated|deleted`,
              sometimes two events of one write with equal createdAt,
              sometimes `data.object_truncated`), plus inbound relays
              (`in_…` ids, a third party's body).
  sign()      Standard Webhooks v1 with Python's hmac: independent of the
              project's C code, so a bug there cannot cancel itself out.
  Deliverer   delivers like the provider: up to 5 in flight, a response
              slower than the timeout is a failure, failures retried on a
              (compressed) schedule with the same webhook-id, random
              duplicate resends of successful deliveries, replays of old
              events, deliberate hold-backs (a newer event of an object
              arrives before an older one), secrets switched mid-run.
  Ledger      what was sent, every attempt (status or error, latency,
              which secret), what was acknowledged.

The API side (tests/PROVIDER-API.md is the contract):
  ApiServer   GET of a resource by id, the list with updated_after and
              pagination, the events of the last 30 days, a bearer token,
              and the test-only fault injection (/_sim/faults,
              /_sim/requests; a `hold` fault keeps a request waiting until
              the test releases it: /_sim/held, /_sim/release); over plain
              HTTP, or HTTPS with a certificate and key given
              (tests/e2e_hosting.py makes its own CA).

Standard library only.  Everything listens on 127.0.0.1.

CLI:
  provider_sim.py serve-api --port P --token T [--seed X] [--objects N]
                  [--events M] [--history-days D] [--live SECONDS]
                  [--cert PEM --key PEM [--name HOST]]
  provider_sim.py deliver --url U --secret S --events N --seed X
                  [--objects K] [--rate R] [--timeout T] [--rotate-to S2
                  --rotate-at I] [--ledger FILE]
The secret may also come from $PROVIDER_SIM_SECRET (keeps it out of argv).
"""
import argparse
import base64
import bisect
import calendar
import hashlib
import heapq
import hmac
import http.client
import json
import os
import random
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NS = 1_000_000_000
MS = 1_000_000
DAY_NS = 86400 * NS
EVENTS_WINDOW_NS = 30 * DAY_NS      # PROVIDER.md: events of the last 30 days
LIST_DEFAULT, LIST_MAX = 100, 500   # PROVIDER-API.md: limit default and cap


# ---- instants ------------------------------------------------------------

_INSTANT = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})"
    r"(?:[.,](\d{1,9}))?(Z|z|[+-]\d{2}:?\d{2})$")


def parse_instant(s):
    """ISO-8601 instant with an offset (Z or ±hh:mm), up to nanoseconds ->
    integer nanoseconds since the epoch.  ValueError when it is not one."""
    m = _INSTANT.match(s or "")
    if not m:
        raise ValueError("not an ISO-8601 instant: %r" % (s,))
    y, mo, d, h, mi, se = (int(x) for x in m.groups()[:6])
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h <= 23 and mi <= 59 and se <= 60):
        raise ValueError("not an ISO-8601 instant: %r" % (s,))
    frac = int(((m.group(7) or "") + "000000000")[:9])
    off = m.group(8)
    offset = 0
    if off not in ("Z", "z"):
        sign = -1 if off[0] == "-" else 1
        hh, mm = int(off[1:3]), int(off[-2:])
        offset = sign * (hh * 3600 + mm * 60)
    return (calendar.timegm((y, mo, d, h, mi, se, 0, 0, 0)) - offset) * NS + frac


def iso(ns, offset_minutes=0, digits=3):
    """Nanoseconds -> "2026-11-30T10:00:00.123Z" (or with an offset)."""
    secs, frac = divmod(ns, NS)
    t = time.gmtime(secs + offset_minutes * 60)
    out = time.strftime("%Y-%m-%dT%H:%M:%S", t)
    if digits:
        out += "." + ("%09d" % frac)[:digits]
    if offset_minutes == 0:
        return out + "Z"
    o = abs(offset_minutes)
    return out + "%s%02d:%02d" % ("+" if offset_minutes > 0 else "-", o // 60, o % 60)


# ---- Standard Webhooks signing (Python's hmac, not our C) -----------------

def key_bytes(secret):
    s = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    return base64.b64decode(s + "=" * (-len(s) % 4))


def sign(secret, msg_id, ts, body):
    """One `v1,<base64>` entry: HMAC-SHA256 over id.timestamp.body."""
    content = msg_id.encode() + b"." + str(ts).encode() + b"." + body
    mac = hmac.new(key_bytes(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def signature_header(secrets, msg_id, ts, body):
    """Space-separated entries, one per active secret (a rotation signs
    with both for a while)."""
    return " ".join(sign(s, msg_id, ts, body) for s in secrets)


def random_secret(rng):
    return "whsec_" + base64.b64encode(bytes(rng.randrange(256) for _ in range(24))).decode()


# ---- the world -----------------------------------------------------------

# kind -> (id style, the extra type a second event of one write carries)
KINDS = {
    "client": ("int", "client.merged"),
    "order": ("ord", "order.paid"),
    "invoice": ("bigint", "invoice.issued"),
    "payment": ("pay", "payment.confirmed"),
    "subscription": ("sub", "subscription.renewed"),
}
_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyz"
_STATUSES = ("open", "pending", "paid", "canceled", "overdue", "active")
_CITIES = ("São Paulo", "Recife", "Porto Alegre", "Belo Horizonte", "Curitiba")


def resource_of(kind):
    """The resource path of a kind: its plural (PROVIDER-API.md)."""
    return kind + "s"


def id_key(obj_id):
    """Sort key for ids of either type: ints before strings."""
    return (0, obj_id, "") if isinstance(obj_id, int) else (1, 0, obj_id)


class Event:
    """One published event, outbound or an inbound relay.  body: the exact
    bytes delivered (and signed); created_ns/updated_ns: its clocks (None
    when absent); write: events of one write share it."""
    __slots__ = ("id", "type", "created_at", "created_ns", "kind", "obj_id",
                 "updated_ns", "truncated", "relay", "body", "write", "seq")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def key(self):
        return None if self.relay else (self.kind, str(self.obj_id))

    def as_json(self):
        return json.loads(self.body)


class World:
    """Objects with versions and the events their changes publish.

    clock: a function returning nanoseconds since the epoch (real time by
    default; tests pass their own).  Publication times are strictly
    increasing (1 ms apart at least), except for the events of one write,
    which share createdAt; an object's updated_at is strictly increasing
    and strictly before the createdAt of the event that carries it (1-29
    ms: the write, then its event), so both clocks order an object's
    events the same way.  Thread-safe."""

    def __init__(self, seed=0, clock=time.time_ns):
        self.rng = random.Random(seed)
        self.clock = clock
        self.lock = threading.RLock()
        self.objects = {}       # (kind, id) -> dict (the object now)
        self.deleted = {}       # (kind, id) -> dict (as it was deleted)
        self.events = []        # outbound, in publication order
        self.relays = []        # inbound relays
        self.by_id = {}         # webhook-id -> Event
        self.last_pub = 0
        self.writes = 0
        self.counters = {k: 0 for k in KINDS}

    # -- ids and clocks
    def _rid(self, n=20):
        return "".join(self.rng.choice(_ALNUM) for _ in range(n))

    def new_msg_id(self, prefix="msg_"):
        while True:
            mid = prefix + self._rid(24)
            if mid not in self.by_id:
                return mid

    def _new_obj_id(self, kind):
        self.counters[kind] += 1
        n = self.counters[kind]
        style = KINDS[kind][0]
        if style == "int":
            return 1000 + n
        if style == "bigint":       # exact in a double, near 2^53
            return 9007199254000000 + n
        return "%s_%s%04d" % (style, self._rid(8), n)

    def _publish_time(self, at=None):
        t = self.clock() if at is None else at
        t = t - t % MS
        if t <= self.last_pub:
            t = self.last_pub + MS
        self.last_pub = t
        return t

    # -- objects
    def _fields(self, kind):
        r = self.rng
        if kind == "client":
            return {"name": "Cliente %s" % self._rid(5),
                    "email": "%s@example.com.br" % self._rid(7),
                    "city": r.choice(_CITIES), "tags": ["vip"] if r.random() < .2 else []}
        if kind == "order":
            return {"client_id": 1000 + r.randrange(1, 500), "status": r.choice(_STATUSES),
                    "total_cents": r.randrange(100, 10 ** 6), "items": r.randrange(1, 9)}
        if kind == "invoice":
            return {"order_id": "ord_%s" % self._rid(8), "status": r.choice(_STATUSES),
                    "amount_cents": r.randrange(100, 10 ** 6)}
        if kind == "payment":
            return {"method": r.choice(("pix", "boleto", "card")),
                    "status": r.choice(_STATUSES), "amount_cents": r.randrange(100, 10 ** 6)}
        return {"plan": r.choice(("basic", "pro", "enterprise")), "status": r.choice(_STATUSES)}

    def _mutate(self, kind, obj):
        f = self._fields(kind)
        k = self.rng.choice(sorted(f))
        obj[k] = f[k]
        obj["version"] = obj.get("version", 0) + 1

    def _emit(self, kind, obj, etypes, created_ns, truncated, offset):
        """Events of one write: same createdAt, same data."""
        self.writes += 1
        created_at = iso(created_ns, offset)
        if truncated:
            data = {"object": kind, "id": obj["id"], "object_truncated": True}
        else:
            data = dict(obj)
        out = []
        for et in etypes:
            mid = self.new_msg_id()
            body = json.dumps({"id": mid, "type": et, "createdAt": created_at,
                               "data": data}, separators=(",", ":"),
                              ensure_ascii=False).encode()
            ev = Event(id=mid, type=et, created_at=created_at, created_ns=created_ns,
                       kind=kind, obj_id=obj["id"],
                       updated_ns=None if truncated else parse_instant(obj["updated_at"]),
                       truncated=truncated, relay=False, body=body,
                       write=self.writes, seq=len(self.events))
            self.events.append(ev)
            self.by_id[mid] = ev
            out.append(ev)
        return out

    def change(self, key=None, action=None, at=None, truncated=None, pair=None,
               offset=None, p_truncated=0.06, p_pair=0.06, p_offset=0.15):
        """One change, publishing one event (or two of one write).
        key: (kind, id) of an existing object, or None to create one of a
        random kind (or of kind `action=("create", kind)`); action:
        "create", "update", "delete".  Returns the events."""
        with self.lock:
            r = self.rng
            pub = self._publish_time(at)
            if truncated is None:
                truncated = r.random() < p_truncated
            if offset is None:
                offset = -180 if r.random() < p_offset else 0   # Brasília
            if action is None:
                action = "update" if key else "create"
            if action == "create":
                kind = key[0] if key else r.choice(sorted(KINDS))
                obj = {"object": kind, "id": self._new_obj_id(kind)}
                obj.update(self._fields(kind))
                obj["version"] = 1
                obj["created_at"] = iso(pub)
                k = (kind, str(obj["id"]))
                self.objects[k] = obj
                etypes = [kind + ".created"]
            else:
                k = (key[0], str(key[1]))
                obj = self.objects[k]
                kind = k[0]
                if action == "delete":
                    del self.objects[k]
                    self.deleted[k] = obj
                    obj["deleted"] = True
                    etypes = [kind + ".deleted"]
                else:
                    self._mutate(kind, obj)
                    if pair is None:
                        pair = r.random() < p_pair
                    etypes = [kind + ".updated"] + ([KINDS[kind][1]] if pair else [])
            prev = parse_instant(obj["updated_at"]) if "updated_at" in obj else 0
            # updated_at: 1-29 ms before publication (the write, then its
            # event), after the object's last one.  By induction every
            # updated_at is strictly before its event's createdAt.
            obj["updated_at"] = iso(max(prev + MS, pub - r.randrange(1, 30) * MS))
            return self._emit(kind, obj, etypes, pub, truncated, offset)

    def random_change(self, target_objects=300, p_delete=0.02, **kw):
        """A change of a random object: creates while the world has fewer
        than target_objects live objects (and now and then anyway)."""
        with self.lock:
            r = self.rng
            live = len(self.objects)
            if live == 0 or (live < target_objects and r.random() < 0.5) or r.random() < 0.01:
                return self.change(**kw)
            key = r.choice(list(self.objects))
            return self.change(key, "delete" if r.random() < p_delete else "update", **kw)

    def relay(self, at=None):
        """An inbound relay: an `in_…` id, a third party's body (non-JSON,
        or foreign JSON that looks like one of our events: nothing in it
        may be read)."""
        with self.lock:
            r = self.rng
            mid = self.new_msg_id("in_")
            pick = r.randrange(3)
            if pick == 0:
                body = ("event=charge.succeeded&amount=%d&ref=%s&note=ol%%C3%%A1"
                        % (r.randrange(10 ** 5), self._rid(10))).encode()
            elif pick == 1:
                body = ("<?xml version=\"1.0\"?>\n<notificacao>\n  <id>%s</id>\n"
                        "  <valor>%d</valor>\n</notificacao>\n"
                        % (self._rid(12), r.randrange(10 ** 5))).encode()
            else:
                # Event-shaped, naming a real object, from the far future: if
                # a receiver read it, the object's clock would jump ahead.
                target = r.choice(list(self.objects)) if self.objects else ("client", "1001")
                obj_id = self.objects[target]["id"] if target in self.objects else 1001
                body = json.dumps({"id": "evt_" + self._rid(10), "type": target[0] + ".updated",
                                   "createdAt": "2099-01-01T00:00:00Z",
                                   "data": {"object": target[0], "id": obj_id,
                                            "updated_at": "2099-01-01T00:00:00Z"}}).encode()
            ev = Event(id=mid, type=None, created_at=None, created_ns=None, kind=None,
                       obj_id=None, updated_ns=None, truncated=False, relay=True,
                       body=body, write=None, seq=None)
            self.relays.append(ev)
            self.by_id[mid] = ev
            return ev

    # -- the API's reads
    def get(self, kind, obj_id):
        with self.lock:
            o = self.objects.get((kind, str(obj_id)))
            return json.loads(json.dumps(o)) if o is not None else None

    def changed_after(self, kind, after_ns, from_key=None, limit=LIST_DEFAULT):
        """Live objects of kind with updated_at > after_ns, ordered by
        (updated_at, id), starting strictly after from_key (the last key of
        the previous page).  Returns (objects, more)."""
        with self.lock:
            rows = []
            for (k, _), o in self.objects.items():
                if k != kind:
                    continue
                u = parse_instant(o["updated_at"])
                if u > after_ns:
                    rows.append(((u, id_key(o["id"])), o))
            rows.sort(key=lambda x: x[0])
            keys = [x[0] for x in rows]
            start = bisect.bisect_right(keys, from_key) if from_key else 0
            page = rows[start:start + limit]
            more = start + limit < len(rows)
            return [(key, json.loads(json.dumps(o))) for key, o in page], more

    def events_since(self, since_ns, after_seq=-1, limit=LIST_DEFAULT):
        """Outbound events published at or after since_ns, with seq >
        after_seq, oldest first.  Returns (events, more)."""
        with self.lock:
            evs = self.events
            lo = bisect.bisect_left([e.created_ns for e in evs], since_ns)
            lo = max(lo, after_seq + 1)
            page = evs[lo:lo + limit]
            return page, lo + limit < len(evs)

    def newest(self):
        """(kind, id) -> the newest outbound event (by createdAt, then
        publication order)."""
        with self.lock:
            out = {}
            for e in self.events:
                out[e.key] = e
            return out

    def history(self, n_events, days, target_objects=50, now_ns=None):
        """Publish n_events spread over the last `days` days (for the API's
        30-day window)."""
        now_ns = self.clock() if now_ns is None else now_ns
        start = now_ns - days * DAY_NS
        step = (now_ns - start) // max(n_events, 1)
        for i in range(n_events):
            self.random_change(target_objects, at=start + i * step)


# ---- the ledger ------------------------------------------------------------

class Attempt:
    """One delivery attempt: target is the host:port it went to,
    retry_after the answer's Retry-After header (None without one)."""
    __slots__ = ("id", "kind", "n", "t", "latency", "status", "error", "secrets", "ok",
                 "answer", "target", "retry_after")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


class Ledger:
    """What the simulator sent and what was acknowledged.

    sent: webhook-id -> Event; attempts: every attempt in the order they
    ended; acked: webhook-id -> monotonic time of its first 2xx;
    gave_up: ids whose retry schedule ran out; forged: id -> (how, status)
    of the deliberately bad deliveries (which must never be stored)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sent = {}
        self.attempts = []
        self.acked = {}
        self.gave_up = set()
        self.forged = {}

    def add_sent(self, ev):
        with self.lock:
            self.sent[ev.id] = ev

    def add_attempt(self, a):
        with self.lock:
            self.attempts.append(a)
            if a.ok and a.id not in self.acked and a.kind != "forged":
                self.acked[a.id] = a.t + a.latency
                self.gave_up.discard(a.id)

    def give_up(self, mid):
        with self.lock:
            if mid not in self.acked:
                self.gave_up.add(mid)

    def attempts_of(self, mid):
        with self.lock:
            return [a for a in self.attempts if a.id == mid]

    def maybe_stored(self, mid):
        """True when some attempt ended without a definite refusal: no
        answer (broken, timeout), a 5xx from the web server, or a 2xx — the
        receiver may have committed it."""
        for a in self.attempts_of(mid):
            if a.status is None or a.status >= 500 or 200 <= a.status < 300:
                return True
        return False

    def latencies(self, answered_only=True):
        with self.lock:
            return sorted(a.latency for a in self.attempts
                          if not answered_only or a.status is not None)

    def summary(self):
        with self.lock:
            by = {}
            for a in self.attempts:
                label = str(a.status) if a.status is not None else a.error
                by[label] = by.get(label, 0) + 1
            lat = sorted(a.latency for a in self.attempts)
            kinds = {}
            for a in self.attempts:
                kinds[a.kind] = kinds.get(a.kind, 0) + 1
            return {"events": len(self.sent), "acked": len(self.acked),
                    "gave_up": len(self.gave_up), "attempts": len(self.attempts),
                    "by_status": by, "by_kind": kinds,
                    "forged": len(self.forged),
                    "latency_p50": pct(lat, 50), "latency_p99": pct(lat, 99),
                    "latency_max": lat[-1] if lat else None}

    def to_json(self):
        with self.lock:
            return {"acked": sorted(self.acked), "gave_up": sorted(self.gave_up),
                    "forged": self.forged,
                    "attempts": [{k: getattr(a, k) for k in Attempt.__slots__}
                                 for a in self.attempts]}


def pct(sorted_values, p):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[i]


# ---- the deliverer --------------------------------------------------------

class _Job:
    __slots__ = ("ev", "kind", "n", "forged", "dups", "impatient")

    def __init__(self, ev, kind, n=1, forged=None, dups=(), impatient=False):
        self.ev, self.kind, self.n, self.forged, self.dups = ev, kind, n, forged, dups
        self.impatient = impatient


class Deliverer:
    """Delivers events to url like the provider does.

    secrets: the secrets signing now (a list; switch with set_secrets);
    in_flight: deliveries in flight at once (5, PROVIDER.md); timeout: a
    response later than this (seconds) is a failure even if it is a 2xx;
    schedule: seconds between a failed attempt and the next (the real
    schedule, ~45 h, compressed); after the last one the delivery is given
    up.  dup_rate: chance that a successful delivery is resent (same id,
    same body) dup_delay seconds later; hold_rate/hold_range: chance that
    an event's first attempt is held back that many seconds, so newer
    events of its object overtake it.  impatient_rate: chance that a first
    attempt gives up after IMPATIENT seconds, before the receiver could
    answer — "failed, even if our side finished the work" (PROVIDER.md);
    recorded as error "timeout(impatient)".  A worker that hits a broken
    connection (say the receiver was killed) counts a failure and retries.
    on_sent(webhook_id): called once a request is sent, before its answer
    is read (a test kills things there).  url may be a list: each attempt
    goes to one of them at random, as a load balancer in front of several
    web hosts would send it (retries of one event may land on another).
    """
    IMPATIENT = 0.002

    def __init__(self, url, secrets, ledger=None, seed=0, in_flight=5, timeout=5.0,
                 schedule=(0.2, 0.5, 1, 2, 4, 8, 16), dup_rate=0.03, dup_delay=(0.05, 2.0),
                 hold_rate=0.04, hold_range=(0.2, 3.0), impatient_rate=0.0,
                 on_sent=None):
        self.targets = []
        for one in (url if isinstance(url, (list, tuple)) else [url]):
            u = urllib.parse.urlsplit(one)
            self.targets.append((u.hostname, u.port or 80,
                                 (u.path or "/") + ("?" + u.query if u.query else "")))
        self.lb_rng = random.Random(seed + 7)      # under self.cv
        self.secrets = list(secrets)
        self.ledger = ledger or Ledger()
        self.rng = random.Random(seed)
        self.timeout = timeout
        self.schedule = tuple(schedule)
        self.dup_rate, self.dup_delay = dup_rate, dup_delay
        self.hold_rate, self.hold_range = hold_rate, hold_range
        self.impatient_rate = impatient_rate
        self.on_sent = on_sent
        self.local = threading.local()
        self.cv = threading.Condition()
        self.heap = []
        self.seq = 0
        self.active = 0
        self.stopping = False
        self.threads = [threading.Thread(target=self._worker, daemon=True,
                                         name="deliver-%d" % i) for i in range(in_flight)]
        for t in self.threads:
            t.start()

    def set_secrets(self, secrets):
        """A rotation on the provider's side: attempts from now on (first
        ones and retries alike) are signed with these."""
        with self.cv:
            self.secrets = list(secrets)

    def _push(self, delay, job):
        with self.cv:
            self.seq += 1
            heapq.heappush(self.heap, (time.monotonic() + delay, self.seq, job))
            self.cv.notify()

    def submit(self, ev, delay=0.0, hold=None):
        """Deliver ev (first attempt after delay seconds).  hold: True or
        False to force or forbid a hold-back; None: at hold_rate."""
        self.ledger.add_sent(ev)
        r = self.rng
        if hold is None:
            hold = r.random() < self.hold_rate
        if hold:
            delay += r.uniform(*self.hold_range)
        dups = []
        if r.random() < self.dup_rate:
            dups.append(r.uniform(*self.dup_delay))
        impatient = r.random() < self.impatient_rate
        self._push(delay, _Job(ev, "first", dups=dups, impatient=impatient))
        return delay

    def replay(self, ev, delay=0.0):
        """A replay of an old event (same webhook-id, same body)."""
        self._push(delay, _Job(ev, "replay"))

    def resend(self, ev, delay=0.0):
        """A manual resend of a delivered event."""
        self._push(delay, _Job(ev, "dup"))

    def forge(self, ev, how, secret=None, delay=0.0):
        """A delivery that must be refused (401) and never stored: how is
        "wrong_secret" (signed with `secret`, not configured), "tampered"
        (body changed after signing), "old_timestamp" or
        "future_timestamp" (6 min off)."""
        self._push(delay, _Job(ev, "forged", forged=(how, secret)))

    def pending(self):
        with self.cv:
            return len(self.heap) + self.active

    def wait_idle(self, timeout=None):
        """Until nothing is scheduled or in flight.  False on timeout."""
        end = None if timeout is None else time.monotonic() + timeout
        with self.cv:
            while self.heap or self.active:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.cv.wait(left if left is not None else 1.0)
            return True

    def stop(self):
        with self.cv:
            self.stopping = True
            self.cv.notify_all()
        for t in self.threads:
            t.join(10)

    def _worker(self):
        while True:
            with self.cv:
                while True:
                    if self.stopping:
                        return
                    if self.heap:
                        wait = self.heap[0][0] - time.monotonic()
                        if wait <= 0:
                            _, _, job = heapq.heappop(self.heap)
                            self.active += 1
                            secrets = list(self.secrets)
                            break
                        self.cv.wait(wait)
                    else:
                        self.cv.wait()
            try:
                self._attempt(job, secrets)
            finally:
                with self.cv:
                    self.active -= 1
                    self.cv.notify_all()

    def post(self, msg_id, ts, sig, body, content_type, timeout=None):
        """One POST; returns (status or None, error or None, latency); the
        answer's first 64 bytes are left in self.answer (per thread)."""
        timeout = self.timeout if timeout is None else timeout
        self.local.answer = b""
        self.local.retry_after = None
        with self.cv:
            host, port, path = self.lb_rng.choice(self.targets)
        self.local.target = "%s:%d" % (host, port)
        headers = {"webhook-id": msg_id, "webhook-timestamp": str(ts),
                   "webhook-signature": sig, "content-type": content_type,
                   "user-agent": "provider-sim/1"}
        t0 = time.monotonic()
        status = err = None
        c = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            c.request("POST", path, body=body, headers=headers)
            if self.on_sent:
                self.on_sent(msg_id)
            r = c.getresponse()
            self.local.answer = r.read(2048)[:64]   # the provider keeps 2 KB
            self.local.retry_after = r.getheader("Retry-After")
            status = r.status
        except socket.timeout:
            err = "timeout"
        except (OSError, http.client.HTTPException) as e:
            err = "broken:" + type(e).__name__
        finally:
            c.close()
        return status, err, time.monotonic() - t0

    def _attempt(self, job, secrets):
        ev = job.ev
        ts = int(time.time())
        body = ev.body
        ctype = "application/json" if not ev.relay or body[:1] in (b"{", b"[") else \
            "application/x-www-form-urlencoded"
        if job.forged:
            how, other = job.forged
            if how == "wrong_secret":
                sig = sign(other, ev.id, ts, body)
            elif how == "tampered":
                sig = signature_header(secrets, ev.id, ts, body)
                body = body.replace(b'"', b"'", 1) if b'"' in body else body + b" "
            else:
                ts += -360 if how == "old_timestamp" else 360
                sig = signature_header(secrets, ev.id, ts, body)
        else:
            sig = signature_header(secrets, ev.id, ts, body)
        t_start = time.monotonic()
        limit = self.IMPATIENT if job.impatient else self.timeout
        status, err, lat = self.post(ev.id, ts, sig, body, ctype, limit)
        ok = status is not None and 200 <= status < 300
        if ok and lat > limit:
            ok, err = False, "slow"     # past the timeout: failed, whatever it said
        if job.impatient and err:
            err += "(impatient)"
        labels = [hashlib.blake2b(key_bytes(s), digest_size=8).hexdigest() for s in secrets]
        self.ledger.add_attempt(Attempt(id=ev.id, kind=job.kind, n=job.n, t=t_start,
                                        latency=lat, status=status, error=err,
                                        secrets=labels, ok=ok,
                                        answer=self.local.answer.decode("utf-8", "replace"),
                                        target=self.local.target,
                                        retry_after=self.local.retry_after))
        if job.kind == "forged":
            with self.ledger.lock:
                self.ledger.forged[ev.id] = (job.forged[0], status)
            # No answer, or the web server's 5xx (a backend down): the
            # receiver never judged it; try again for a verdict.
            if (status is None or status >= 500) and job.n <= len(self.schedule):
                self._push(self.schedule[job.n - 1],
                           _Job(ev, "forged", job.n + 1, forged=job.forged))
            return
        if ok:
            for d in job.dups:
                self._push(d, _Job(ev, "dup"))
            return
        if job.n <= len(self.schedule):
            self._push(self.schedule[job.n - 1],
                       _Job(ev, "retry" if job.kind == "first" else job.kind, job.n + 1))
        else:
            self.ledger.give_up(ev.id)


# ---- the API server -------------------------------------------------------

def _b64(obj):
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _unb64(s):
    return json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


class _BadRequest(Exception):
    pass


class ApiServer:
    """The provider's API over a World, per tests/PROVIDER-API.md, on
    127.0.0.1 (port 0: a free one).  clock: nanoseconds now, for the 30-day
    window.  start() serves from a thread; stop() ends it.

    certfile and keyfile (PEM files): HTTPS instead of HTTP, with that
    certificate; name: the host name in self.base and self.url (the one
    the certificate is for, which the client maps to 127.0.0.1 itself)."""

    def __init__(self, world, token, port=0, clock=time.time_ns,
                 certfile=None, keyfile=None, name="127.0.0.1"):
        self.world = world
        self.token = token
        self.clock = clock
        self.lock = threading.Lock()
        self.faults = []        # [{"re": compiled, "left": int|None, ...}]
        self.requests = []
        # Requests held by a `hold` fault: how many ever were, how many
        # wait now; release() lets every one waiting go (hold_gen moves).
        self.hold_cv = threading.Condition()
        self.held = self.holding = self.hold_gen = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self.httpd.daemon_threads = True
        scheme = "http"
        if certfile:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            # The handshake runs in each connection's own thread, on its
            # first read: a client that connects and says nothing must not
            # stop the accepting loop.
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True,
                                                do_handshake_on_connect=False)
            scheme = "https"
        self.port = self.httpd.server_address[1]
        self.base = "%s://%s:%d" % (scheme, name, self.port)
        self.url = self.base + "/public/v1"
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.release()          # no handler thread left waiting
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread:
            self.thread.join(5)

    def set_faults(self, faults):
        compiled = []
        for f in faults:
            if not isinstance(f, dict) or not isinstance(f.get("path"), str):
                raise _BadRequest("each fault needs a path")
            after = f.get("after", 0)
            if not isinstance(after, int) or isinstance(after, bool) or after < 0:
                raise _BadRequest("after: not a count")
            c = dict(f)
            c["re"] = re.compile(f["path"])
            c["left"] = f.get("times")
            c["seen"] = 0
            compiled.append(c)
        with self.lock:
            self.faults = compiled

    def _take_fault(self, path):
        with self.lock:
            for f in self.faults:
                if f["re"].search(path) and (f["left"] is None or f["left"] > 0):
                    f["seen"] += 1
                    if f["seen"] <= f.get("after", 0):
                        continue        # let through, to the faults after it
                    if f["left"] is not None:
                        f["left"] -= 1
                    return f
        return None

    def _hold(self):
        """A request in a `hold` fault: wait until release()."""
        with self.hold_cv:
            gen = self.hold_gen
            self.held += 1
            self.holding += 1
            self.hold_cv.notify_all()
            while self.hold_gen == gen:
                self.hold_cv.wait()
            self.holding -= 1
            self.hold_cv.notify_all()

    def wait_held(self, n=1, timeout=30):
        """Until at least n requests have been held (since start); False
        when timeout seconds pass first.  An event to wait for, where a
        test would otherwise sleep and hope the client got that far."""
        with self.hold_cv:
            return self.hold_cv.wait_for(lambda: self.held >= n, timeout)

    def release(self):
        """Let every held request go on (its fault's answer, or the normal
        one; the client may be gone by then)."""
        with self.hold_cv:
            self.hold_gen += 1
            self.hold_cv.notify_all()

    def _handler_class(self):
        api = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "provider-sim/1"

            def log_message(self, *a):
                pass

            def handle(self):
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass        # the client gave up (a hang fault, a timeout)
                except ssl.SSLError:
                    pass        # a client that refused our certificate

            def _send(self, status, obj=None, raw=None, headers=()):
                data = raw if raw is not None else json.dumps(obj).encode()
                # Logged before the answer goes out: a client that has its
                # answer must find the request in /_sim/requests.
                self._log(status)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                return status

            def _body(self):
                """The request body, read once (at most 1 MiB)."""
                if getattr(self, "req_body", None) is None:
                    try:
                        n = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
                    except ValueError:
                        n = 0
                    self.req_body = self.rfile.read(n) if n > 0 else b""
                return self.req_body

            def _dispatch(self, method):
                u = urllib.parse.urlsplit(self.path)
                path, query = u.path, u.query
                if path.startswith("/_sim/"):
                    self._sim(method, path)
                    return
                self.pending_log = {"method": method, "path": path, "query": query}
                try:
                    api._public(self, method, path, query)
                except _BadRequest as e:
                    self._send(400, {"error": "bad_request", "detail": str(e)})
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self._log(None)             # no answer was sent

            def _log(self, status):
                """Record the public request being answered, once."""
                entry = getattr(self, "pending_log", None)
                if entry is None:
                    return
                self.pending_log = None
                entry["status"] = status
                with api.lock:
                    api.requests.append(entry)

            def _sim(self, method, path):
                if path == "/_sim/faults" and method == "POST":
                    try:
                        api.set_faults(json.loads(self._body() or b"[]"))
                    except (ValueError, re.error, _BadRequest) as e:
                        self._send(400, {"error": "bad_request", "detail": str(e)})
                        return
                    self._send(200, {"ok": True})
                elif path == "/_sim/faults" and method == "GET":
                    with api.lock:
                        out = [{k: v for k, v in f.items() if k != "re"} for f in api.faults]
                    self._send(200, out)
                elif path == "/_sim/requests" and method == "GET":
                    with api.lock:
                        out = list(api.requests)
                    self._send(200, out)
                elif path == "/_sim/held" and method == "GET":
                    with api.hold_cv:
                        out = {"held": api.held, "waiting": api.holding}
                    self._send(200, out)
                elif path == "/_sim/release" and method == "POST":
                    api.release()
                    self._send(200, {"ok": True})
                elif path == "/_sim/requests" and method == "DELETE":
                    with api.lock:
                        api.requests.clear()
                    self._send(200, {"ok": True})
                else:
                    self._send(404, {"error": "not_found"})

            def do_GET(self):
                self._dispatch("GET")

            def do_POST(self):
                self._body()
                self._dispatch("POST")

            def do_DELETE(self):
                self._dispatch("DELETE")

            def do_PUT(self):
                self._body()
                self._dispatch("PUT")

        return H

    def _public(self, h, method, path, query):
        """Serve one /public request; returns the status sent."""
        fault = self._take_fault(path)
        if fault:
            if fault.get("hold"):
                self._hold()
            if fault.get("hang"):
                time.sleep(float(fault["hang"]))
            if fault.get("status"):
                hdrs = []
                if fault.get("retry_after") is not None:
                    hdrs.append(("Retry-After", str(fault["retry_after"])))
                return h._send(int(fault["status"]), {"error": "injected"}, headers=hdrs)
            if fault.get("body") is not None:
                return h._send(200, raw=fault["body"].encode())
        auth = h.headers.get("Authorization", "")
        if not hmac.compare_digest(auth.encode(), ("Bearer " + self.token).encode()):
            return h._send(401, {"error": "unauthorized"},
                           headers=[("WWW-Authenticate", "Bearer")])
        parts = [urllib.parse.unquote(p) for p in path.split("/")]
        # "", "public", "v1", resource[, id]
        if len(parts) < 4 or parts[1:3] != ["public", "v1"] or not parts[3] or len(parts) > 5:
            return h._send(404, {"error": "not_found"})
        if method != "GET":
            return h._send(405, {"error": "method_not_allowed"}, headers=[("Allow", "GET")])
        q = urllib.parse.parse_qs(query, keep_blank_values=True)

        def one(name):
            v = q.get(name)
            if v is None:
                return None
            if len(v) != 1:
                raise _BadRequest("%s given twice" % name)
            return v[0]

        def instant(name):
            v = one(name)
            if v is None:
                return None
            try:
                return parse_instant(v)
            except ValueError:
                raise _BadRequest("%s: not an ISO-8601 instant" % name)

        def limit():
            v = one("limit")
            if v is None:
                return LIST_DEFAULT
            if not re.fullmatch(r"[0-9]{1,9}", v) or int(v) < 1:
                raise _BadRequest("limit: not a positive integer")
            return min(int(v), LIST_MAX)

        def cursor(kind):
            c = one("cursor")
            if c is None:
                return None
            try:
                d = _unb64(c)
                if d.get("q") != kind:
                    raise ValueError
                return d
            except (ValueError, TypeError, AttributeError):
                raise _BadRequest("cursor: not one of ours")

        resource = parts[3]
        if resource == "events" and len(parts) == 4:
            floor = self.clock() - EVENTS_WINDOW_NS
            c = cursor("events")
            if c:
                since, after = c["since"], c["seq"]
            else:
                since = instant("since")
                since = floor if since is None else since
                after = -1
            n = limit()
            evs, more = self.world.events_since(max(since, floor), after, n)
            nxt = _b64({"q": "events", "since": since, "seq": evs[-1].seq}) if more and evs else None
            return h._send(200, {"data": [e.as_json() for e in evs], "next_cursor": nxt})
        kind = resource[:-1] if resource.endswith("s") else None
        if kind not in KINDS:
            return h._send(404, {"error": "not_found"})
        if len(parts) == 5:
            obj = self.world.get(kind, parts[4])
            if obj is None:
                return h._send(404, {"error": "not_found"})
            return h._send(200, obj)
        c = cursor(resource)
        if c:
            after, from_key = c["after"], (c["u"], tuple(c["k"]))
        else:
            after = instant("updated_after")
            after = -1 << 62 if after is None else after
            from_key = None
        n = limit()
        rows, more = self.world.changed_after(kind, after, from_key, n)
        nxt = None
        if more and rows:
            last = rows[-1][0]
            nxt = _b64({"q": resource, "after": after, "u": last[0], "k": list(last[1])})
        return h._send(200, {"data": [o for _, o in rows], "next_cursor": nxt})


# ---- CLI --------------------------------------------------------------------

def cmd_serve_api(a):
    world = World(a.seed)
    world.history(a.events, a.history_days, target_objects=a.objects)
    srv = ApiServer(world, a.token, port=a.port, certfile=a.cert, keyfile=a.key,
                    name=a.name).start()
    print("serving %s (%d objects, %d events over %d days); Ctrl-C stops"
          % (srv.url, len(world.objects), len(world.events), a.history_days), flush=True)
    try:
        while True:
            if a.live:
                time.sleep(a.live)
                for ev in world.random_change(a.objects):
                    print("%s %s %s" % (ev.created_at, ev.type, ev.obj_id), flush=True)
            else:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


def cmd_deliver(a):
    secret = a.secret or os.environ.get("PROVIDER_SIM_SECRET")
    if not secret:
        sys.exit("deliver: --secret or $PROVIDER_SIM_SECRET required")
    world = World(a.seed)
    d = Deliverer(a.url, [secret], seed=a.seed, in_flight=a.in_flight, timeout=a.timeout,
                  schedule=[float(x) for x in a.schedule.split(",")],
                  dup_rate=a.dup_rate, hold_rate=a.hold_rate)
    rng = random.Random(a.seed + 1)
    t0 = time.monotonic()
    sent = []
    for i in range(a.events):
        if a.rotate_to and i == a.rotate_at:
            d.set_secrets([a.rotate_to])
            print("rotated to the new secret at event %d" % i, file=sys.stderr)
        wait = t0 + i / a.rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        evs = [world.relay()] if rng.random() < a.relay_rate else world.random_change(a.objects)
        for ev in evs:
            d.submit(ev)
            sent.append(ev)
        if sent and rng.random() < a.replay_rate:
            d.replay(rng.choice(sent), delay=rng.uniform(0, 1))
    d.wait_idle()
    d.stop()
    print(json.dumps(d.ledger.summary(), indent=1))
    if a.ledger:
        with open(a.ledger, "w") as f:
            json.dump(d.ledger.to_json(), f)
    return 0 if not d.ledger.gave_up else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve-api", help="serve the provider's API on 127.0.0.1")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--token", required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--objects", type=int, default=50)
    s.add_argument("--events", type=int, default=500)
    s.add_argument("--history-days", type=int, default=40)
    s.add_argument("--live", type=float, default=0,
                   help="change a random object every LIVE seconds")
    s.add_argument("--cert", help="serve HTTPS with this certificate (PEM)")
    s.add_argument("--key", help="the certificate's private key (PEM)")
    s.add_argument("--name", default="127.0.0.1",
                   help="the host name the certificate is for (in the URL shown)")
    d = sub.add_parser("deliver", help="deliver signed events to an endpoint")
    d.add_argument("--url", required=True)
    d.add_argument("--secret")
    d.add_argument("--events", type=int, default=100)
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--objects", type=int, default=30)
    d.add_argument("--rate", type=float, default=50.0, help="events per second")
    d.add_argument("--in-flight", type=int, default=5)
    d.add_argument("--timeout", type=float, default=15.0)
    d.add_argument("--schedule", default="0.2,0.5,1,2,4,8,16",
                   help="seconds between attempts (compressed)")
    d.add_argument("--dup-rate", type=float, default=0.03)
    d.add_argument("--hold-rate", type=float, default=0.04)
    d.add_argument("--replay-rate", type=float, default=0.01)
    d.add_argument("--relay-rate", type=float, default=0.03)
    d.add_argument("--rotate-to", help="second secret, switched to at --rotate-at")
    d.add_argument("--rotate-at", type=int, default=0)
    d.add_argument("--ledger", help="write the ledger (JSON) here")
    a = p.parse_args(argv)
    return cmd_serve_api(a) if a.cmd == "serve-api" else cmd_deliver(a)


if __name__ == "__main__":
    sys.exit(main())
