"""Slow clients for the HTTP servers' tests: raw sockets that send a request part-way, or a byte at a time.

Importable as ``slowclients``. ``running(app, limits)`` serves an ASGI app on
a free loopback port in a thread, the way ``serve --http`` and ``embed-serve``
do (``memrouter.http.serve``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memrouter.http.serve import ConnectionLimits, HttpServer, bind_listeners

# How long a test waits for the server to close a connection: a bound on
# "does not hang forever", far above every timeout the tests configure.
PATIENCE = 30.0


@contextmanager
def running(app: Any, limits: ConnectionLimits) -> Iterator[int]:
    """Serve ``app`` with ``limits`` on 127.0.0.1 for the block; yields the port."""
    listeners = bind_listeners("127.0.0.1", 0)
    port: int = listeners[0].getsockname()[1]
    server = HttpServer(app, listeners, limits=limits)
    thread = threading.Thread(target=server.run, name="http-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.stop()
        thread.join(timeout=PATIENCE)
        assert not thread.is_alive(), "the server did not stop"


def connect(port: int, data: bytes = b"") -> socket.socket:
    """A connection that has sent ``data`` (perhaps part of a request) and then nothing."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
    if data:
        sock.sendall(data)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """All the server sends until it closes the connection; fails if it stays open past ``PATIENCE``."""
    received = bytearray()
    deadline = time.monotonic() + PATIENCE
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"the server kept the connection open (received {bytes(received)!r})"
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        except TimeoutError:
            continue
        if not chunk:
            break
        received += chunk
    sock.close()
    return bytes(received)


@contextmanager
def trickling(port: int, start: bytes, *, every: float = 0.05) -> Iterator[socket.socket]:
    """A connection sending ``start``, then one more header byte every ``every`` seconds until it is closed."""
    sock = connect(port, start)
    stop = threading.Event()

    def drip() -> None:
        while not stop.wait(every):
            try:
                sock.send(b"a")
            except OSError:
                return  # the server closed the connection: what the test waits for

    thread = threading.Thread(target=drip, name="trickle", daemon=True)
    thread.start()
    try:
        yield sock
    finally:
        stop.set()
        thread.join(timeout=PATIENCE)
        sock.close()


def status_of(response: bytes) -> int:
    """The status code of a raw HTTP/1.1 response."""
    return int(response.split(b" ", 2)[1])
