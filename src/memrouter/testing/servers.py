"""Run the fake Forgetful as a real subprocess, and other loopback peers for fault tests.

- ``serve_http()`` starts ``python -m memrouter.testing.forgetful_server``
  over streamable HTTP on a free 127.0.0.1 port, waits for ``GET /health``
  and stops it afterwards; ``FakeServer.set_fault`` switches its fault mode.
- ``stdio_command()`` is the command line of the same server over stdio.
- ``hanging_listener()`` is a port that accepts connections and never answers.
- ``free_port()`` finds an unused loopback port (nothing listening).

Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

__all__ = ["FakeServer", "free_port", "hanging_listener", "serve_http", "stdio_command"]

HOST = "127.0.0.1"
SERVER_MODULE = "memrouter.testing.forgetful_server"


def free_port() -> int:
    """A loopback TCP port that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def stdio_command(*, db: str | None = None, fail_mode: str = "none", slow_seconds: float = 30.0) -> list[str]:
    """The command that runs the fake Forgetful over stdio."""
    command = [sys.executable, "-m", SERVER_MODULE, "--transport", "stdio"]
    if db is not None:
        command += ["--db", db]
    return command + ["--fail-mode", fail_mode, "--slow-seconds", str(slow_seconds)]


@dataclass
class FakeServer:
    """A running fake Forgetful over HTTP."""

    process: subprocess.Popen[bytes]
    port: int
    stderr_path: str

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint, ``http://127.0.0.1:<port>/mcp``."""
        return f"{self.base_url}/mcp"

    def set_fault(self, mode: str, slow_seconds: float | None = None) -> None:
        """Switch the fault injected into every tool call (``none`` to heal)."""
        payload: dict[str, object] = {"mode": mode}
        if slow_seconds is not None:
            payload["slow_seconds"] = slow_seconds
        request = urllib.request.Request(
            f"{self.base_url}/_fault",
            data=json.dumps(payload).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()

    def kill(self) -> None:
        """Kill the process at once (a crash, as the client sees it), reap it and remove its stderr log."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self._remove_log()

    def stop(self) -> None:
        """Stop the process politely, then by force, and remove its stderr log (read it before)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._remove_log()

    def _remove_log(self) -> None:
        with suppress(FileNotFoundError):
            os.unlink(self.stderr_path)

    def stderr(self) -> str:
        """What the server wrote to stderr so far."""
        with open(self.stderr_path, encoding="utf-8", errors="replace") as handle:
            return handle.read()


def start_http(
    *,
    db: str | None = None,
    fail_mode: str = "none",
    slow_seconds: float = 30.0,
    port: int | None = None,
    startup_timeout: float = 30.0,
) -> FakeServer:
    """Start the fake over HTTP and wait until ``/health`` answers; the caller must ``stop`` it."""
    port = port if port is not None else free_port()
    command = [
        sys.executable, "-m", SERVER_MODULE, "--transport", "http", "--host", HOST,
        "--port", str(port), "--fail-mode", fail_mode, "--slow-seconds", str(slow_seconds),
        "--fault-control",
    ]  # fmt: skip
    if db is not None:
        command += ["--db", db]
    stderr = tempfile.NamedTemporaryFile("wb", prefix="fake-forgetful-", suffix=".log", delete=False)
    with stderr:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    server = FakeServer(process, port, stderr.name)
    deadline = time.monotonic() + startup_timeout
    while True:
        if process.poll() is not None:
            said = server.stderr()
            server.stop()  # removes its log
            raise RuntimeError(f"fake Forgetful exited with {process.returncode}:\n{said}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/health", timeout=1) as response:
                if json.load(response).get("status") == "healthy":
                    return server
        except (OSError, urllib.error.URLError, ValueError):
            pass  # not ready yet: poll again until the deadline
        if time.monotonic() > deadline:
            said = server.stderr()
            server.stop()
            raise RuntimeError(f"fake Forgetful not ready after {startup_timeout:g} s:\n{said}")
        time.sleep(0.05)


@contextmanager
def serve_http(
    *,
    db: str | None = None,
    fail_mode: str = "none",
    slow_seconds: float = 30.0,
    port: int | None = None,
) -> Iterator[FakeServer]:
    """The fake Forgetful over HTTP for the duration of the block."""
    server = start_http(db=db, fail_mode=fail_mode, slow_seconds=slow_seconds, port=port)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def hanging_listener() -> Iterator[int]:
    """A loopback port that accepts TCP connections and never sends a byte."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((HOST, 0))
    listener.listen(16)
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    stopping = threading.Event()

    def accept() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, name="hanging-listener", daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stopping.set()
        thread.join(timeout=5)
        listener.close()
        for conn in held:
            conn.close()
