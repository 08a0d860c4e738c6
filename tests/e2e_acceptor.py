"""One process serves every sibling's connections (lib/acceptor.h, issue 5).

Real lighttpd with 4 webhook.fcgi processes, and processes started the way
spawn-fcgi does: the acceptor is elected, the standbys pass it their
connections and never open the inbox; killing or stopping any of them
loses nothing and leaves every socket served — including a dead standby's
socket, which lighttpd must find gone so that it spawns a new process (a
socket that still accepted would make lighttpd give up on that slot for
good).  A name held by another user, or a stranger connecting to ours,
leaves each process serving its own socket.
"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

from harness import (SECRET_A, FCGI_BEGIN_REQUEST, FCGI_PARAMS, FcgiProcess,
                     Lighttpd, Sandbox, _nv, _record, event_body, signed_params,
                     write_conf, SANITIZED)

THREADS = 3            # WEBHOOK_THREADS here: small numbers, easy counts
NOBODY = 65534
# Another user's python: Debian's (a python under /root is not theirs to run).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def threads_of(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return -1


def opens_inbox(pid, db):
    """Does the process hold the inbox (or its WAL) open?"""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith(db):
                return True
        except OSError:
            pass
    return False


def socket_request(path, sb, msg_id, timeout=10):
    """One signed delivery straight to a FastCGI socket (no web server)."""
    c = FcgiProcess.__new__(FcgiProcess)
    c.path = path
    body = event_body(msg_id)
    s = c.open(signed_params(SECRET_A, msg_id, body, conf=sb.conf), [body])
    return c.finish(s, timeout=timeout)[0]


def group_sockets(pid):
    """(name, state) of the sockets `pid` holds that carry a group's
    abstract name: the acceptor's listening one (state 01) and one
    connection (03) per standby it took.  A standby's own end of its
    connection carries no name."""
    inodes = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return []
    for fd in fds:
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    out = []
    with open("/proc/net/unix") as f:
        for line in f.readlines()[1:]:
            p = line.split()
            if len(p) >= 8 and p[6] in inodes and p[7].startswith("@webhook.fcgi-"):
                out.append((p[7][1:], p[5]))
    return out


def group_names_of(pid):
    """The group names `pid` listens on (it is their acceptor)."""
    return [n for n, state in group_sockets(pid) if state == "01"]


def standbys_taken(pid):
    return sum(1 for _, state in group_sockets(pid) if state == "03")


def wait_for(pred, timeout=10, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class TestBehindLighttpd(unittest.TestCase):
    def setUp(self):
        self.sb = Sandbox()
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A)
        self.srv = Lighttpd(self.sb, procs=4,
                            extra_env={"WEBHOOK_THREADS": str(THREADS)})
        for i in range(8):
            mid = "warm%d" % i
            self.assertEqual(self.srv.deliver(SECRET_A, mid, event_body(mid))[0], 200)
        self.sockets = ["%s/fcgi.sock-%d" % (self.sb.dir, i) for i in range(4)]

    def tearDown(self):
        self.srv.stop()
        reports = self.sb.sanitizer_reports()
        self.sb.cleanup()
        self.assertEqual(reports, [])

    def roles(self):
        """(acceptor pid or None, the other workers): the acceptor is the
        one listening on the group's name."""
        pids = self.srv.workers()
        lead = [p for p in pids if group_names_of(p)]
        return (lead[0] if len(lead) == 1 else None,
                [p for p in pids if p not in lead])

    def settled(self):
        lead, standbys = self.roles()
        ok = lead and len(standbys) == 3 and standbys_taken(lead) == 3
        return (lead, standbys) if ok else None

    def every_socket_answers(self, tag):
        for i, path in enumerate(self.sockets):
            st = wait_for(lambda: self.try_socket(path, "%s-%d" % (tag, i)), 10)
            self.assertEqual(st, 200, "%s gave %r" % (path, st))

    def try_socket(self, path, mid):
        try:
            return socket_request(path, self.sb, mid)
        except OSError:
            return None

    def test_one_process_serves_every_socket_and_alone_opens_the_inbox(self):
        lead, standbys = wait_for(self.settled)
        self.assertEqual(len(self.roles()[1]), 3)
        self.every_socket_answers("direct")
        # Through lighttpd too, concurrently.
        codes = []

        def client(k):
            for i in range(25):
                mid = "c%d-%d" % (k, i)
                codes.append(self.srv.deliver(SECRET_A, mid, event_body(mid))[0])
        ts = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(codes, [200] * 200)
        self.assertEqual(self.sb.count(), 8 + 4 + 200)
        self.assertTrue(opens_inbox(lead, self.sb.db))
        for p in standbys:
            self.assertFalse(opens_inbox(p, self.sb.db),
                             "standby %d opened the inbox" % p)

    def test_dead_standbys_sockets_go_with_them_and_lighttpd_respawns(self):
        # lighttpd probes a dead process's socket before it spawns a new
        # one: if the socket still accepted, it would stop spawning for
        # that slot for good and answer 503 for it.  Five times over.
        lead, _ = wait_for(self.settled)
        for round_ in range(5):
            _, standbys = wait_for(self.settled)
            victim = standbys[round_ % len(standbys)]
            os.kill(victim, signal.SIGKILL)
            wait_for(lambda: victim not in self.srv.workers())
            self.every_socket_answers("r%d" % round_)
            self.assertTrue(wait_for(self.settled), "no 4 processes again")
            self.assertEqual(self.roles()[0], lead, "the acceptor changed")
        with open(os.path.join(self.sb.dir, "lighttpd.error.log")) as f:
            self.assertNotIn("all handlers for /hook", f.read())

    def test_killed_acceptor_is_replaced_by_a_standby(self):
        lead, standbys = wait_for(self.settled)
        os.kill(lead, signal.SIGKILL)
        new = wait_for(lambda: self.roles()[0] not in (None, lead) and self.roles()[0])
        # An old standby, or the process lighttpd spawned in the dead
        # one's place if it was quicker to bind the name.
        self.assertTrue(new)
        self.every_socket_answers("after")
        self.assertTrue(wait_for(self.settled))
        self.assertTrue(opens_inbox(self.roles()[0], self.sb.db))

    def test_stopped_acceptor_hands_over_and_acknowledged_events_stay(self):
        lead, standbys = wait_for(self.settled)
        acked, codes, stop = [], [], threading.Event()

        def client(k):
            i = 0
            while not stop.is_set():
                i += 1
                mid = "t%d-%d" % (k, i)
                try:
                    st = self.srv.deliver(SECRET_A, mid, event_body(mid), timeout=10)[0]
                except OSError:
                    continue
                codes.append(st)
                if st == 200:
                    acked.append(mid)
        ts = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        time.sleep(0.5)
        os.kill(lead, signal.SIGTERM)
        new = wait_for(lambda: self.roles()[0] not in (None, lead) and self.roles()[0])
        time.sleep(1.0)
        n_before = len(acked)
        time.sleep(1.0)
        stop.set()
        for t in ts:
            t.join()
        self.assertTrue(new)
        self.assertGreater(len(acked), n_before, "no 200s after the hand-over")
        stored = {r["webhook_id"] for r in self.sb.rows("SELECT webhook_id FROM events")}
        self.assertEqual(sorted(set(acked) - stored), [])
        for p in standbys:
            self.assertTrue(os.path.exists("/proc/%d" % p), "standby %d died" % p)


class TestSpawned(unittest.TestCase):
    """Processes started the way spawn-fcgi does, each on its own socket."""

    def setUp(self):
        self.sb = Sandbox()
        write_conf(self.sb.conf, database=self.sb.db, secret=SECRET_A)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.stop()
        reports = self.sb.sanitizer_reports()
        self.sb.cleanup()
        self.assertEqual(reports, [])

    def start(self, **env):
        e = {"WEBHOOK_THREADS": str(THREADS)}
        e.update(env)
        p = FcgiProcess(self.sb, env=e)
        self.procs.append(p)
        # Up: its main thread and at least one more.
        self.assertTrue(wait_for(lambda: threads_of(p.proc.pid) >= 2))
        time.sleep(0.1)     # and past its election
        return p

    def deliver(self, p, mid):
        body = event_body(mid)
        return p.request(signed_params(SECRET_A, mid, body, conf=self.sb.conf), body)[0]

    def log(self):
        with open(os.path.join(self.sb.dir, "direct.stderr"), errors="replace") as f:
            return f.read()

    def test_standby_passes_and_acceptor_drops_its_threads_when_it_leaves(self):
        a = self.start()
        b = self.start()
        self.assertTrue(wait_for(lambda: standbys_taken(a.proc.pid) == 1))
        self.assertEqual(group_names_of(b.proc.pid), [])
        self.assertEqual(self.deliver(b, "via-b"), 200)
        self.assertEqual(self.deliver(a, "via-a"), 200)
        self.assertFalse(opens_inbox(b.proc.pid, self.sb.db))
        self.assertTrue(opens_inbox(a.proc.pid, self.sb.db))
        # SIGTERM: the standby ends by itself, promptly.
        t0 = time.time()
        b.proc.send_signal(signal.SIGTERM)
        self.assertEqual(b.proc.wait(5), 0)
        self.assertLess(time.time() - t0, 2)
        # The acceptor closes its side once every thread serving the
        # standby has ended.
        self.assertTrue(wait_for(lambda: standbys_taken(a.proc.pid) == 0))
        if "tsan" not in os.environ.get("BUILD", ""):    # TSan adds a thread
            # main, THREADS on its own socket, the checkpointer
            self.assertTrue(wait_for(lambda: threads_of(a.proc.pid) == 2 + THREADS),
                            "acceptor has %d threads" % threads_of(a.proc.pid))
        self.assertEqual(self.deliver(a, "via-a2"), 200)
        self.assertEqual(self.sb.count(), 3)

    def test_silent_connections_are_dropped_and_do_not_hold_threads(self):
        # libfcgi drops a connection that sends nothing for 2 s after its
        # accept; a passed connection gets the same treatment, or THREADS
        # idle connections to a standby would hold every relay thread.
        a = self.start()
        b = self.start()
        self.assertTrue(wait_for(lambda: standbys_taken(a.proc.pid) == 1))
        idle = []
        for _ in range(THREADS):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(b.path)
            c.settimeout(6)
            idle.append(c)
        t0 = time.time()
        self.assertEqual(self.deliver(b, "behind-idle"), 200)
        for c in idle:
            self.assertEqual(c.recv(1), b"")     # closed by the acceptor
            c.close()
        self.assertLess(time.time() - t0, 6)

    def test_a_stopped_acceptor_leaves_the_standbys_serving_alone(self):
        a = self.start()
        b = self.start()
        self.assertTrue(wait_for(lambda: standbys_taken(a.proc.pid) == 1))
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            self.assertTrue(wait_for(lambda: "the acceptor has not answered"
                                     in self.log(), timeout=15))
            self.assertEqual(self.deliver(b, "while-a-stopped"), 200)
            self.assertTrue(opens_inbox(b.proc.pid, self.sb.db))
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        self.assertEqual(self.deliver(a, "a-again"), 200)
        # The stall is over: B joins again (it tries every 10 s) — under
        # more load than it has threads, with clients slow to send their
        # request: its own threads must end without cutting one.
        stop, codes, acked = threading.Event(), [], []

        def client(k):
            i = 0
            while not stop.is_set():
                i += 1
                mid = "r%d-%d" % (k, i)
                body = event_body(mid)
                params = signed_params(SECRET_A, mid, body, conf=self.sb.conf)
                if k == 0:
                    # Connected, then silent for a while before the
                    # request: still being read when threads are told
                    # to end.
                    s_ = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s_.connect(b.path)
                    time.sleep(0.05)
                    s_.sendall(_record(FCGI_BEGIN_REQUEST, struct.pack(">HB5x", 1, 0)))
                    time.sleep(0.05)
                    s_.sendall(_record(FCGI_PARAMS, b"".join(
                        _nv(n.encode(), v.encode()) for n, v in params)))
                    s_.sendall(_record(FCGI_PARAMS, b""))
                    FcgiProcess.send_stdin(s_, body)
                    st = FcgiProcess.finish(s_)[0]
                else:
                    c = FcgiProcess.__new__(FcgiProcess)
                    c.path = b.path
                    st = c.request(params, body)[0]
                codes.append(st)
                if st == 200:
                    acked.append(mid)
        ts = [threading.Thread(target=client, args=(k,)) for k in range(THREADS + 2)]
        for t in ts:
            t.start()
        try:
            self.assertTrue(wait_for(lambda: "a standby again" in self.log(), timeout=25))
            time.sleep(1)
        finally:
            stop.set()
            for t in ts:
                t.join()
        self.assertEqual(set(codes), {200})
        self.assertTrue(wait_for(lambda: standbys_taken(a.proc.pid) >= 1))
        self.assertEqual(self.deliver(b, "via-a-again"), 200)
        stored = {r["webhook_id"] for r in self.sb.rows("SELECT webhook_id FROM events")}
        self.assertEqual(sorted(set(acked) - stored), [])
        t0 = time.time()
        b.proc.send_signal(signal.SIGTERM)
        self.assertEqual(b.proc.wait(5), 0)
        self.assertLess(time.time() - t0, 2)

    def test_different_environments_are_different_groups(self):
        a = self.start(SOMETHING="1")
        b = self.start(SOMETHING="2")
        self.assertEqual(self.deliver(a, "a"), 200)
        self.assertEqual(self.deliver(b, "b"), 200)
        self.assertTrue(opens_inbox(a.proc.pid, self.sb.db))
        self.assertTrue(opens_inbox(b.proc.pid, self.sb.db))

    def test_webhook_acceptor_own_keeps_every_process_on_its_socket(self):
        a = self.start(WEBHOOK_ACCEPTOR="own")
        b = self.start(WEBHOOK_ACCEPTOR="own")
        self.assertEqual(self.deliver(b, "b"), 200)
        self.assertEqual(self.deliver(a, "a"), 200)
        self.assertTrue(opens_inbox(a.proc.pid, self.sb.db))
        self.assertTrue(opens_inbox(b.proc.pid, self.sb.db))
        self.assertEqual(group_names_of(a.proc.pid) + group_names_of(b.proc.pid), [])

    def squatter(self, name, full=False):
        """A process of another user holding the abstract name; `full`:
        one that never accepts, its queue filled by itself."""
        code = ("import socket,sys,time\n"
                "s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
                "s.bind(b'\\0'+sys.argv[1].encode())\n"
                "if sys.argv[2] == 'full':\n"
                "    s.listen(0)\n"
                "    c=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
                "    c.connect(b'\\0'+sys.argv[1].encode())\n"
                "    print('ready',flush=True); time.sleep(300)\n"
                "s.listen(8)\n"
                "print('ready',flush=True)\n"
                "while True:\n"
                "    c,_=s.accept(); time.sleep(30)\n")
        p = subprocess.Popen([PYTHON, "-c", code, name, "full" if full else "open"],
                             user=NOBODY,
                             stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        return p

    @unittest.skipIf(os.geteuid() != 0, "needs root to run as another user")
    def test_a_name_held_by_another_user_leaves_us_alone(self):
        a = self.start()
        names = wait_for(lambda: group_names_of(a.proc.pid))
        self.assertEqual(len(names), 1)
        a.stop()
        sq = self.squatter(names[0])
        try:
            b = self.start()      # same environment and parent: same name
            self.assertEqual(self.deliver(b, "b"), 200)
            self.assertTrue(opens_inbox(b.proc.pid, self.sb.db))
            self.assertIn("serving alone: the other end is uid %d" % NOBODY,
                          self.log())
        finally:
            sq.kill()
            sq.wait()
            sq.stdout.close()

    @unittest.skipIf(os.geteuid() != 0, "needs root to run as another user")
    def test_a_name_whose_queue_is_full_does_not_hang_us(self):
        # connect(2) to a listener whose queue is full waits for ever
        # unless bounded: a process of anyone's could hold the name so.
        a = self.start()
        names = wait_for(lambda: group_names_of(a.proc.pid))
        a.stop()
        sq = self.squatter(names[0], full=True)
        try:
            b = self.start()
            self.assertTrue(wait_for(lambda: "no room in the acceptor's queue"
                                     in self.log(), timeout=10))
            self.assertEqual(self.deliver(b, "b"), 200)
            t0 = time.time()
            b.proc.send_signal(signal.SIGTERM)
            self.assertEqual(b.proc.wait(5), 0)
            self.assertLess(time.time() - t0, 2)
        finally:
            sq.kill()
            sq.wait()
            sq.stdout.close()

    @unittest.skipIf(os.geteuid() != 0 or not shutil.which("unshare"),
                     "needs root and unshare(1)")
    def test_another_mount_namespace_is_another_group(self):
        # Same paths, same environment, another mount namespace (a
        # container on the host's network): the files behind the paths
        # may differ, so the processes must not pass each other work.
        a = self.start()
        self.assertTrue(wait_for(lambda: group_names_of(a.proc.pid)))
        b = FcgiProcess(self.sb, env={"WEBHOOK_THREADS": str(THREADS)},
                        argv=["unshare", "--mount", "--propagation", "private"])
        self.procs.append(b)
        self.assertTrue(wait_for(lambda: any(group_names_of(p) for p in
                                             self.pids_of(b))))
        self.assertEqual(standbys_taken(a.proc.pid), 0)
        self.assertEqual(self.deliver(b, "b"), 200)
        self.assertEqual(self.deliver(a, "a"), 200)
        self.assertEqual(self.sb.count(), 2)

    def pids_of(self, p):
        """The process and its children (unshare execs, so usually one)."""
        out = subprocess.run(["pgrep", "-P", str(p.proc.pid)],
                             capture_output=True, text=True).stdout
        return [p.proc.pid] + [int(x) for x in out.split()]

    @unittest.skipIf(os.geteuid() != 0, "needs root to run as another user")
    def test_a_stranger_cannot_join_our_group(self):
        a = self.start()
        names = wait_for(lambda: group_names_of(a.proc.pid))
        code = ("import socket,sys\n"
                "s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
                "s.settimeout(5)\n"
                "s.connect(b'\\0'+sys.argv[1].encode())\n"
                "try:\n    s.send(b'H'); print(repr(s.recv(1)))\n"
                "except OSError as e:\n    print('error', e)\n")
        out = subprocess.run([PYTHON, "-c", code, names[0]], user=NOBODY,
                             capture_output=True, text=True, timeout=20).stdout
        self.assertNotIn("b'Y'", out)
        # Hung up on: an end of file, or a reset or broken pipe (our
        # hello unread, or sent after the hang-up).
        self.assertRegex(out, r"^(b''|error .*(Connection reset|Broken pipe))")
        self.assertTrue(wait_for(lambda: "acceptor: the other end is uid %d" % NOBODY
                                 in self.log()))
        self.assertEqual(standbys_taken(a.proc.pid), 0)
        self.assertEqual(self.deliver(a, "a"), 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)
