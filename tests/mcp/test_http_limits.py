"""``memrouter serve --http`` under hostile clients: slow heads and bodies, huge bodies; "serving" means ready."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slowclients import (
    PATIENCE,
    connect,
    read_until_closed,
    running,
    status_of,
    trickling,
)

from memrouter.http.serve import ConnectionLimits
from memrouter.testing.servers import free_port

pytestmark = pytest.mark.anyio

HEAD = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\n"
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture
def mcp_port(project_root: Path, tmp_path: Path) -> Iterator[int]:
    """The MCP server's HTTP app with a 1 s head deadline and a 1.5 s body deadline."""
    from memrouter.mcp.http import http_app
    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService
    from memrouter.router import Router

    with Router.open(root=project_root, index_dir=tmp_path / "index", watch=False) as router:
        app = http_app(create_server(MemoryService(router), tools="all"), "127.0.0.1", None)
        with running(app, ConnectionLimits(header_timeout=1, body_timeout=1.5)) as port:
            yield port


async def list_memories(port: int) -> Any:
    from mcp import Client

    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        return json.loads((await client.call_tool("list_memories", {"topic": "ci"})).content[0].text)


async def test_a_slow_head_is_cut_off_while_others_are_served(mcp_port: int) -> None:
    with trickling(mcp_port, HEAD + b"X-Padding: ") as slow:
        assert await list_memories(mcp_port) == {"memories": ["ci/flaky-tests"]}
        response = read_until_closed(slow)
    assert status_of(response) == 408 and b"the request head did not arrive within 1 s" in response


async def test_a_slow_body_is_cut_off_while_others_are_served(mcp_port: int) -> None:
    slow = connect(mcp_port, HEAD + b"Content-Length: 500\r\n\r\n" + json.dumps(INITIALIZE).encode()[:40])
    assert await list_memories(mcp_port) == {"memories": ["ci/flaky-tests"]}
    response = read_until_closed(slow)
    assert status_of(response) == 408 and b"the request body did not arrive within 1.5 s" in response


def test_a_fifty_megabyte_body_is_refused_with_413(mcp_port: int) -> None:
    response = read_until_closed(connect(mcp_port, HEAD + b"Content-Length: 52428800\r\n\r\n" + b"{" * 65536))
    assert status_of(response) == 413


def test_the_serving_line_comes_once_requests_are_answered(project_root: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "memrouter", "--root", str(project_root), "--index-dir", str(tmp_path / "index"),
         "serve", "--http", "--port", str(port), "--tools", "all"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(process.stderr.readline() if process.stderr else ""))
        reader.start()
        reader.join(timeout=PATIENCE)
        assert lines == [f"memrouter: serving MCP at http://127.0.0.1:{port}/mcp\n"]
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp",
            json.dumps(INITIALIZE).encode(),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        with urllib.request.urlopen(request, timeout=PATIENCE) as response:  # no retry: ready when it says so
            assert response.status == 200
    finally:
        process.terminate()
        process.wait(timeout=PATIENCE)
        if process.stderr:
            process.stderr.close()


@pytest.mark.long
async def test_two_hundred_concurrent_sessions_are_served(http_server: Any) -> None:
    import ssl

    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    served: list[int] = []
    # Each session has an HTTP client of its own, as 200 agents would. They share one TLS context, which an
    # http:// URL never uses but which httpx would otherwise build for every client from the CA store
    # (3.6 s of CPU for the 200, more than the server spends answering them).
    tls = ssl.create_default_context()

    async def one(index: int) -> None:
        http = httpx2.AsyncClient(verify=tls, timeout=httpx2.Timeout(30, read=300))  # the SDK's own timeouts
        async with http, Client(streamable_http_client(http_server.url, http_client=http)) as client:
            result = await client.call_tool("list_memories", {"topic": "ci"})
            assert not result.is_error
            served.append(index)

    with anyio.fail_after(PATIENCE * 4):  # a bound on "all are answered", not a speed check
        async with anyio.create_task_group() as group:
            for index in range(200):
                group.start_soon(one, index)
    assert sorted(served) == list(range(200))
