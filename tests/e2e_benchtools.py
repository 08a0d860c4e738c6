"""bench/requests.lua's latencies: wrk 4 corrects its histogram for
coordinated omission before the script sees it; requests.lua undoes that
exactly and reports each request's own latency (raw_*).  Checked against a
loopback HTTP server whose slow answers we choose, so the true
distribution is known."""
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUA = os.path.join(ROOT, "bench", "requests.lua")
CONNS = 4


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # wrk closes its connections mid-request when its time is up.
        if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            super().handle_error(request, client_address)


def make_handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with state["lock"]:
                state["n"] += 1
                slow = state["n"] % state["every"] == 0
            if slow:
                state["sleep"].wait(state["delay"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):      # wrk's request-counting call, never sent
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass
    return Handler


class TestRawLatency(unittest.TestCase):
    def run_wrk(self, every, delay_s, env_conns=True):
        state = {"lock": threading.Lock(), "n": 0, "every": every,
                 "delay": delay_s, "sleep": threading.Event()}
        srv = Server(("127.0.0.1", 0), make_handler(state))
        port = srv.server_address[1]
        t = threading.Thread(target=srv.serve_forever)
        t.start()
        d = tempfile.mkdtemp(prefix="webhook-benchtools-")
        try:
            req = ("POST /x HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Content-Length: 2\r\n\r\n{}" % port).encode()
            with open(os.path.join(d, "req.0"), "wb") as f:
                for _ in range(200000):
                    f.write(b"%d\n" % len(req) + req)
            env = dict(os.environ, BENCH_REQUESTS=os.path.join(d, "req"))
            if env_conns:
                env["BENCH_CONNECTIONS"] = str(CONNS)
            else:
                env.pop("BENCH_CONNECTIONS", None)
            out = subprocess.run(
                ["wrk", "-t1", "-c%d" % CONNS, "-d3s", "--latency", "-s", LUA,
                 "http://127.0.0.1:%d/x" % port],
                env=env, capture_output=True, text=True, timeout=60).stdout
        finally:
            srv.shutdown()
            srv.server_close()
            t.join()
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
            os.rmdir(d)
        line = next(x for x in out.splitlines() if x.startswith("BENCH "))
        return {k: int(float(v)) for k, v in
                (x.split("=", 1) for x in line.split()[1:])}

    # The stalls are long (0.3 s) and the bounds are half of them: a busy
    # machine slows every answer by tens of milliseconds, never by 150 ms
    # in the median or the 99th percentile of answers that did not stall.
    # Which answers stall is fixed (one in `every`), so the percentiles a
    # stall must or must not reach do not depend on the machine.
    STALL = 0.300
    BOUND_US = 150000

    def test_rare_stalls(self):
        # One answer in 400 stalls, the rest do not: each request's own
        # p99 is an answer that did not stall, while wrk's corrected p99
        # counts a stall once per mean interval it lasted.
        w = self.run_wrk(400, self.STALL)
        self.assertGreater(w["requests"], 800, "too little load to tell")
        self.assertEqual(w["non2xx"], 0)
        self.assertEqual(w["raw_n"], w["requests"] - w["timeout"])
        self.assertGreaterEqual(w["raw_max_us"], self.STALL * 1e6)
        self.assertEqual(w["raw_max_us"], w["max_us"])
        self.assertLess(w["raw_p99_us"], self.BOUND_US)
        self.assertGreater(w["p99_us"], self.BOUND_US)
        self.assertLessEqual(w["raw_p50_us"], w["p50_us"])

    def test_frequent_stalls(self):
        # One in 50 (2 %) stalls: p99 of the requests themselves must show
        # it.
        w = self.run_wrk(50, self.STALL)
        self.assertGreater(w["requests"], 200, "too little load to tell")
        self.assertEqual(w["raw_n"], w["requests"] - w["timeout"])
        self.assertGreaterEqual(w["raw_p99_us"], self.STALL * 1e6)
        self.assertLess(w["raw_p50_us"], self.BOUND_US)

    def test_without_connection_count(self):
        # Without wrk's -c the correction cannot be undone: said, not guessed.
        w = self.run_wrk(400, 0.010, env_conns=False)
        self.assertEqual(w["raw_n"], -1)
        self.assertNotIn("raw_p99_us", w)


if __name__ == "__main__":
    unittest.main()
