"""A TCP relay on 127.0.0.1 in front of a Unix socket (a PostgreSQL
server's), that can be made to stop forwarding without closing anything:
a network partition, or a relay that hangs.  Every test before it used a
Unix socket, where a dead server answers at once; over TCP a link that
goes quiet answers nothing, and only the client's own deadlines end its
wait.

    r = TcpRelay(sock_path)       # listening on 127.0.0.1:r.port
    r.freeze()                    # bytes stay where they are, both ways;
                                  # new connections are not accepted
    r.thaw()                      # forwarding again
    r.close()

One thread, one selector: while frozen it reads nothing from anyone, so
what was sent sits in the kernel's buffers (the sender's writes succeed,
as they do until a real link's window fills) and nobody sees a close.
"""
import os
import selectors
import socket
import threading


class TcpRelay:
    def __init__(self, sock_path):
        self.sock_path = sock_path
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.frozen = threading.Event()
        self.stopping = False
        self.peer = {}          # socket -> the socket its bytes go to
        self.wake_r, self.wake_w = os.pipe()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def uri(self, dbname, user="webhook"):
        return "postgresql://%s@127.0.0.1:%d/%s" % (user, self.port, dbname)

    def freeze(self):
        self.frozen.set()
        os.write(self.wake_w, b"x")

    def thaw(self):
        self.frozen.clear()
        os.write(self.wake_w, b"x")

    def close(self):
        self.stopping = True
        os.write(self.wake_w, b"x")
        self.thread.join(10)
        for s in list(self.peer):
            s.close()
        self.listener.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def _drop(self, sel, s):
        for x in (s, self.peer.get(s)):
            if x is None or x not in self.peer:
                continue
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            del self.peer[x]
            x.close()

    def _loop(self):
        sel = selectors.DefaultSelector()
        sel.register(self.wake_r, selectors.EVENT_READ)
        watching = False
        while not self.stopping:
            # Frozen: nothing is read (no accept, no recv).
            want = not self.frozen.is_set()
            if want != watching:
                for s in list(self.peer) + [self.listener]:
                    if want:
                        sel.register(s, selectors.EVENT_READ)
                    else:
                        sel.unregister(s)
                watching = want
            for key, _ in sel.select():
                s = key.fileobj
                if s == self.wake_r:
                    os.read(self.wake_r, 64)
                elif s is self.listener:
                    c, _ = self.listener.accept()
                    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        u.connect(self.sock_path)
                    except OSError:
                        c.close()
                        continue
                    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self.peer[c], self.peer[u] = u, c
                    sel.register(c, selectors.EVENT_READ)
                    sel.register(u, selectors.EVENT_READ)
                elif s in self.peer and not self.frozen.is_set():
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        self._drop(sel, s)
                        continue
                    try:
                        self.peer[s].sendall(data)
                    except OSError:
                        self._drop(sel, s)
        sel.close()
