"""The peers as subprocesses: ``memrouter embed-serve`` and the real Forgetful, stopped by PID.

Every process started here is recorded in ``<work>/pids/`` while it runs, so
``interop/run.sh`` can stop leftovers by PID even when pytest itself dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

from memrouter.testing.real_forgetful import LAUNCHER, forgetful_env
from memrouter.testing.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
WORK = Path(os.environ.get("INTEROP_WORK", ROOT / "interop" / ".work"))
PIDS = WORK / "pids"
TIKTOKEN = WORK / "tiktoken"
TIKTOKEN_FILE = TIKTOKEN / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
FORGETFUL_PYTHON = WORK / "forgetful-venv" / "bin" / "python"
SERENA = WORK / "serena-venv" / "bin" / "serena"
READY_TIMEOUT = float(os.environ.get("INTEROP_READY_TIMEOUT", "180"))


def skip_reason(peer: str, executable: Path) -> str | None:
    """Why ``peer`` cannot run here (setup.sh's note or a missing venv), or None."""
    note = WORK / f"skipped-{peer}"
    if note.exists():
        return f"{peer} SKIPPED: {note.read_text().strip()}"
    if not executable.exists():
        return f"{peer} SKIPPED: {executable} is missing; run interop/setup.sh (make interop)"
    return None


class Process:
    """A server subprocess in its own session, recorded in the pid folder while alive."""

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    def start(self) -> None:
        """Start it (appending to its log)."""
        PIDS.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log, "ab")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            self.argv, env=self.env, cwd=self.cwd, stdout=self._log_file, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        (PIDS / str(self.popen.pid)).write_text(self.name)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop it by PID (its process group: the PID it was started with); SIGKILL after 15 s."""
        popen = self.popen
        if popen is None:
            return
        if popen.poll() is None:
            try:
                os.killpg(popen.pid, sig)
            except ProcessLookupError:
                pass
            try:
                popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(popen.pid, signal.SIGKILL)
                popen.wait(timeout=15)
        (PIDS / str(popen.pid)).unlink(missing_ok=True)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self.popen = None

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self.stop(signal.SIGKILL)

    def wait_healthy(self, url: str, timeout: float = READY_TIMEOUT) -> dict[str, Any]:
        """Poll ``url`` until it answers ``{"status": "healthy"}``; fail with the log tail otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited early:\n{self.tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    body: dict[str, Any] = json.load(response)
                    if body.get("status") == "healthy":
                        return body
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not healthy at {url} after {timeout:g} s:\n{self.tail()}")
            time.sleep(0.2)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class EmbedServer:
    """``memrouter embed-serve`` on a free loopback port."""

    def __init__(self, folder: Path, embedder: str = "minilm") -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/v1"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMROUTER_")}
        self.process = Process(
            "embed-serve", [sys.executable, "-m", "memrouter", "embed-serve", "--port", str(self.port),
                            "--embedder", embedder, *(["--dimension", "384"] if embedder == "hash" else [])],
            env=env, cwd=folder, log=folder / "embed-serve.log",
        )  # fmt: skip

    def start(self) -> None:
        self.process.start()
        self.process.wait_healthy(f"{self.base}/health")

    def stop(self) -> None:
        self.process.stop()


class RealForgetful:
    """The real Forgetful 0.6.0 over streamable HTTP, its data in ``folder`` (kept across restarts)."""

    def __init__(self, folder: Path, embeddings_url: str) -> None:
        self.folder = folder
        self.home = folder / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = forgetful_env(str(self.home), embeddings_url, str(TIKTOKEN), str(folder / "forgetful.sqlite"))
        self.process = Process(
            "forgetful",
            [str(FORGETFUL_PYTHON), "-c", LAUNCHER, "--transport", "http", "--host", "127.0.0.1",
             "--port", str(self.port)],
            env=env, cwd=self.home, log=folder / "forgetful.log",
        )  # fmt: skip

    def start(self) -> None:
        self.process.start()
        self.process.wait_healthy(f"http://127.0.0.1:{self.port}/health")

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def restart(self) -> None:
        self.stop()
        self.start()


def start_forgetful(folder: Path, embeddings_url: str) -> RealForgetful:
    """A started real Forgetful (stopped again if it does not become ready)."""
    server = RealForgetful(folder, embeddings_url)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server
