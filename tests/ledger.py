"""The storms' verdicts: what the provider simulator's ledger
(tests/provider_sim.py), the inbox's rows and the handler's record say
about a storm, as lists of problems (empty when everything held).
Shared by tests/e2e_storm.py (SQLite, one drainer at a time) and
tests/e2e_pgstorm.py (PostgreSQL, two web hosts, three drainers).

A record line (Line) is one hand-out as the storms' handlers log it when
it ends: webhook-id, WEBHOOK_ATTEMPT, object, object id, createdAt as
sent, data.updated_at and the body's own "id" as the handler read them
from stdin, WEBHOOK_STALE.  The checks of hand-out order take the lines
in the record's order, object by object: they hold wherever an object's
hand-outs never overlap (the run lock on SQLite, the lease on
PostgreSQL), which the PostgreSQL storm checks on its own.
"""
import collections

import provider_sim as ps

Line = collections.namedtuple("Line", "id attempt object object_id created_at "
                              "updated_at body_id stale")


def attempts_text(ledger, mid):
    return ", ".join("%s#%d %s %.3fs" % (a.kind, a.n, a.status or a.error, a.latency)
                     for a in ledger.attempts_of(mid))


def check_deliveries(ledger, rows, latency_bound, allow_5xx):
    """Every acknowledged webhook-id in the inbox, once (rows: id -> row
    with its body), byte for byte; nothing stored that was never sent,
    forged or refused every time; forged ones answered 401; no schedule
    ran out; no answer slower than latency_bound seconds, no timeout but
    the simulator's own impatience; no 5xx unless allow_5xx (kills, a
    database restart)."""
    P = []
    L = ledger
    sent = dict(L.sent)
    acked = set(L.acked)
    for mid in sorted(acked):
        if mid not in rows:
            P.append("LOST: %s was acknowledged (200) but is not in the inbox; "
                     "attempts: %s" % (mid, attempts_text(L, mid)))
        elif bytes(rows[mid]["body"]) != sent[mid].body:
            P.append("%s stored with a body other than the one sent" % mid)
    # Nothing unacknowledged claimed stored: a stored id was sent, and if
    # never acknowledged, some attempt may have committed it.
    for mid in sorted(rows):
        if mid in L.forged:
            P.append("FORGED %s (%s) was stored" % (mid, L.forged[mid][0]))
        elif mid not in sent:
            P.append("the inbox holds %s, which the simulator never sent" % mid)
        elif mid not in acked and not L.maybe_stored(mid):
            P.append("%s is stored though every attempt was refused: %s"
                     % (mid, attempts_text(L, mid)))
    for mid, (how, status) in sorted(L.forged.items()):
        if status != 401:
            P.append("forged delivery %s (%s) answered %s, not 401" % (mid, how, status))
    for mid in sorted(L.gave_up):
        P.append("%s never acknowledged, schedule ran out: %s"
                 % (mid, attempts_text(L, mid)))
    for a in L.attempts:
        if a.error == "timeout" or (a.status is not None and a.latency > latency_bound):
            P.append("SLOW: %s attempt %d (%s): %s after %.3f s (bound %.1f s)"
                     % (a.id, a.n, a.kind, a.status or a.error, a.latency, latency_bound))
    if not allow_5xx:
        for a in L.attempts:
            if a.status is not None and a.status >= 500:
                P.append("%s attempt %d answered %d in a storm without kills"
                         % (a.id, a.n, a.status))
    return P


def check_handouts(lines, sent, rows, allowed=None, exact_attempts=True,
                   cut_short=frozenset()):
    """Hand-outs: each event handed out once (allowed: id -> how many
    times it may be, for those in hand when a drainer died), as it was
    sent, never stale (no handler fails in a storm), WEBHOOK_ATTEMPT
    counting its hand-outs (exact_attempts False, and for the ids in
    allowed: at least that, and growing — a claim whose commit went
    through as the database went down counts an attempt no handler saw,
    and a hand-out killed with its drainer, by the drainer's guard, wrote
    no line); final states done exactly for what was handed out, stale
    for the rest.  cut_short: indexes of lines whose drainer was killed
    while their handler ran: the body it was writing to the handler may
    end early (the handler reads end of file before its guard kills it),
    so only what the environment says is compared, and the event must be
    handed out again after."""
    P = []
    allowed = allowed or {}
    count = collections.Counter(l.id for l in lines)
    for mid, n in sorted(count.items()):
        if n > allowed.get(mid, 1):
            P.append("DOUBLE: %s handed out %d times (attempts %s)"
                     % (mid, n, [l.attempt for l in lines if l.id == mid]))
    for i, l in enumerate(lines):
        ev = sent.get(l.id)
        if l.id not in rows or ev is None:
            P.append("handed out %s, which is not in the inbox or was never sent" % l.id)
            continue
        if ev.relay:
            if l.object or l.object_id or l.created_at:
                P.append("relay %s handed out with an object or clock: %r" % (l.id, l))
            continue
        want = (ev.kind, str(ev.obj_id), ev.created_at,
                "-" if ev.updated_ns is None else ps.iso(ev.updated_ns), ev.id)
        got = (l.object, l.object_id, l.created_at, l.updated_at, l.body_id)
        if got != want and i in cut_short and got[:3] == want[:3]:
            if not any(m.id == l.id for m in lines[i + 1:]):
                P.append("%s: its body was cut short by its drainer's kill, and it "
                         "was never handed out again" % l.id)
        elif got != want:
            P.append("%s handed out as %r, sent as %r" % (l.id, got, want))
        if l.stale != "0":
            P.append("%s handed out with WEBHOOK_STALE=%s" % (l.id, l.stale))
    nth, last = collections.Counter(), {}
    for l in lines:
        nth[l.id] += 1
        n = int(l.attempt) if l.attempt.isdigit() else -1
        exact = exact_attempts and l.id not in allowed
        if (n != nth[l.id]) if exact else (n < nth[l.id] or n <= last.get(l.id, 0)):
            P.append("%s hand-out %d came with WEBHOOK_ATTEMPT=%s" % (l.id, nth[l.id],
                                                                      l.attempt))
        last[l.id] = n
    for mid, r in sorted(rows.items()):
        ev = sent.get(mid)
        if r["state"] == "done" and mid not in count:
            P.append("%s is done but the handler never got it" % mid)
        elif r["state"] == "stale":
            if mid in count:
                P.append("%s is stale but was handed out" % mid)
            if ev is not None and ev.relay:
                P.append("relay %s marked stale" % mid)
        elif r["state"] not in ("done", "stale"):
            P.append("%s left %s (attempts %d)" % (mid, r["state"], r["attempts"]))
    return P


def check_order(lines, sent, rows):
    """Never handed out while a newer event of the same object had been
    done, in the drainer's own terms (docs/DESIGN.md "Stale rule"): strictly
    older by createdAt than the newest createdAt done, or by updated_at
    than the newest updated_at done.  An id's last hand-out is the one
    marked done (an earlier one's drainer died).  A stale event is
    strictly older than something done for its object."""
    P = []
    last_at = {l.id: i for i, l in enumerate(lines)}
    done_c, done_u = {}, {}
    for i, l in enumerate(lines):
        ev = sent.get(l.id)
        if ev is None or ev.relay:
            continue
        k = ev.key
        if k in done_c and ev.created_ns < done_c[k][0]:
            P.append("ORDER: %s (createdAt %s) handed out after %s (createdAt %s) of %s:%s "
                     "was done" % (ev.id, ev.created_at, done_c[k][1],
                                   sent[done_c[k][1]].created_at, k[0], k[1]))
        if (ev.updated_ns is not None and k in done_u
                and ev.updated_ns < done_u[k][0]):
            P.append("ORDER: %s (updated_at %s) handed out after %s (updated_at %s) of "
                     "%s:%s was done" % (ev.id, ps.iso(ev.updated_ns), done_u[k][1],
                                         ps.iso(done_u[k][0]), k[0], k[1]))
        if last_at[l.id] == i:
            if k not in done_c or ev.created_ns > done_c[k][0]:
                done_c[k] = (ev.created_ns, ev.id)
            if ev.updated_ns is not None and (k not in done_u or ev.updated_ns > done_u[k][0]):
                done_u[k] = (ev.updated_ns, ev.id)
    for mid, r in sorted(rows.items()):
        ev = sent.get(mid)
        if r["state"] != "stale" or ev is None or ev.relay:
            continue
        k = ev.key
        if not ((k in done_c and ev.created_ns < done_c[k][0]) or
                (ev.updated_ns is not None and k in done_u and ev.updated_ns < done_u[k][0])):
            P.append("%s marked stale, but nothing newer of %s:%s was done" % (mid, k[0], k[1]))
    return P


def check_final(lines, sent):
    """For every object, the last state the handler applied is the
    simulator's newest event for it (compared by createdAt: events of one
    write share it; truncated events carry no updated_at)."""
    P = []
    newest = {}
    for ev in sent.values():
        if not ev.relay and (ev.key not in newest or ev.created_ns > newest[ev.key].created_ns):
            newest[ev.key] = ev
    applied = {}
    for l in lines:
        ev = sent.get(l.id)
        if ev is not None and not ev.relay:
            applied[ev.key] = ev
    for k, ev in sorted(newest.items()):
        a = applied.get(k)
        if a is None:
            P.append("FINAL: %s:%s: the handler never applied anything; newest is %s (%s)"
                     % (k[0], k[1], ev.id, ev.created_at))
        elif a.created_ns != ev.created_ns:
            P.append("FINAL: %s:%s: last applied %s (%s), newest sent %s (%s)"
                     % (k[0], k[1], a.id, a.created_at, ev.id, ev.created_at))
    return P


def check_all(ledger, rows, lines, latency_bound, allow_5xx, allowed=None,
              exact_attempts=True, cut_short=frozenset()):
    """Every check above, in order."""
    sent = dict(ledger.sent)
    return (check_deliveries(ledger, rows, latency_bound, allow_5xx) +
            check_handouts(lines, sent, rows, allowed, exact_attempts, cut_short) +
            check_order(lines, sent, rows) +
            check_final(lines, sent))
