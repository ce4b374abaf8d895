"""Fixtures for the MCP server tests: a real project (git + memories) and real servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import SAMPLE, wait_listening, write

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def make_project(base: Path) -> Path:
    """A git repository with the sample memories committed; returns the memories root."""
    project = base / "project"
    root = project / ".serena" / "memories"
    for name, text in SAMPLE.items():
        write(root, name, text)
    (project / ".gitignore").write_text(".memrouter/\n")
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "Add project memories"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)
    return root


@pytest.fixture
def project_root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@asynccontextmanager
async def in_memory_client(
    root: Path, index_dir: Path, global_root: Path | None = None, tools: str = "all"
) -> AsyncIterator[Any]:
    """The real server object offering ``tools`` (every tool by default), through the SDK's in-memory transport."""
    from mcp import Client

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService
    from memrouter.router import Router

    with Router.open(root=root, index_dir=index_dir, watch=True) as router:
        server = create_server(MemoryService(router, global_root=global_root), tools=tools)
        async with Client(server) as client:
            yield client


@pytest.fixture
def connect() -> Any:
    """``connect(root, index_dir, global_root=None, tools="all")``: an in-memory client context."""
    return in_memory_client


@pytest.fixture(scope="session")
def server_process() -> type[ServerProcess]:
    """The ``ServerProcess`` class, for tests that start their own HTTP server."""
    return ServerProcess


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServerProcess:
    """``memrouter serve --http`` as a real subprocess on a free loopback port."""

    def __init__(
        self, root: Path, index_dir: Path, *, host: str = "127.0.0.1", token: str | None = None, tools: str = "all"
    ) -> None:
        self.host = host
        self.port = free_port() if host == "127.0.0.1" else _free_port_on(host)
        self.url = f"http://{host}:{self.port}/mcp"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("MEMROUTER_TOKEN", None)
        args = [sys.executable, "-m", "memrouter", "--root", str(root), "--index-dir", str(index_dir), "serve",
                "--http", "--host", host, "--port", str(self.port), "--tools", tools]  # fmt: skip
        if token:
            env["MEMROUTER_TOKEN"] = token
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_ready()

    def _wait_ready(self) -> None:
        try:
            wait_listening(self.process, self.host, self.port)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()


def _free_port_on(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One HTTP server (no token, loopback) shared by a test module."""
    base = tmp_path_factory.mktemp("http")
    server = ServerProcess(make_project(base), base / "index")
    yield server
    server.stop()
