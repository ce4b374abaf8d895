"""Requests the transport cannot decode still get an answer: lone surrogates over stdio and HTTP.

The SDK's client refuses to send a lone surrogate, so the client here sends a
marker word and its wire (a stdio pipe, or an HTTP transport) swaps the marker
for the JSON escape ``\\udcff`` on the way out: everything else is the real
SDK client against the real server. Every call runs under a timeout, so a
request left unanswered fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

MARK = "LONE-SURROGATE-HERE"
ESCAPE = "\\udcff"  # what the marker becomes on the wire: six characters of JSON
PATIENCE = 30  # seconds: a bound on "is answered at all", never a speed check

BAD_CALLS = [
    ("search_memory", {"query": MARK, "mode": "lexical"}),
    ("search_memory", {"query": f"flaky {MARK}"}),
    ("write_memory", {"memory_name": "notes/bad", "content": MARK}),
    ("save_memory", {"content": f"# Title\n\n{MARK}\n"}),
    ("get_memory", {"memory_name": MARK}),
    (MARK, {}),
]


@asynccontextmanager
async def stdio_with_surrogates(project: Path) -> AsyncIterator[Any]:
    """A stdio transport to ``memrouter serve`` that writes ``MARK`` as a lone surrogate escape."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    process = await anyio.open_process(
        [sys.executable, "-m", "memrouter", "serve", "--tools", "core,serena"],
        cwd=project,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    to_client, from_server = anyio.create_memory_object_stream[Any](16)
    to_server, from_client = anyio.create_memory_object_stream[Any](16)

    async def read() -> None:
        assert process.stdout is not None
        pending = b""
        async with to_client:
            async for chunk in process.stdout:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    await to_client.send(SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line)))

    async def write() -> None:
        assert process.stdin is not None
        async with from_client:
            async for message in from_client:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((line.replace(MARK, ESCAPE) + "\n").encode())

    async with process, anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield from_server, to_server
        finally:
            group.cancel_scope.cancel()
            process.terminate()


class SurrogateWire(httpx2.AsyncBaseTransport):
    """An httpx2 transport that swaps ``MARK`` for the lone surrogate escape in request bodies."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        if MARK.encode() in body:
            headers = [(key, value) for key, value in request.headers.items() if key.lower() != "content-length"]
            body = body.replace(MARK.encode(), ESCAPE.encode())
            request = httpx2.Request(request.method, request.url, headers=headers, content=body)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def check_every_request_is_answered(client: Any, calls: list[tuple[str, dict[str, Any]]]) -> None:
    for tool, arguments in calls:
        with anyio.fail_after(PATIENCE):
            try:
                result = await client.call_tool(tool, arguments)
            except MCPError as exc:  # a JSON-RPC error
                message = str(exc)
            else:
                assert result.is_error, (tool, result)
                message = result.content[0].text
        assert "lone surrogate (U+DCFF)" in message, (tool, message)
        assert "\udcff" not in message
    with anyio.fail_after(PATIENCE):  # the session goes on
        hits = await client.call_tool("search_memory", {"query": "flaky tests", "mode": "lexical"})
    assert hits.structured_content["results"]


async def test_stdio_answers_a_lone_surrogate(project_root: Path) -> None:
    from mcp import Client

    async with Client(stdio_with_surrogates(project_root.parent.parent)) as client:
        await check_every_request_is_answered(client, BAD_CALLS)
        with anyio.fail_after(PATIENCE), pytest.raises(MCPError, match="surrogate"):
            await client.read_resource(f"memory://{MARK}")
    assert not (project_root / "notes" / "bad.md").exists()


async def test_http_answers_a_lone_surrogate(http_server: Any) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(transport=SurrogateWire(), timeout=PATIENCE) as http:
        async with Client(streamable_http_client(http_server.url, http_client=http)) as client:
            # Not the bad tool name (nor a resource): the client also sends those in a header, which the
            # wire leaves alone, and the server refuses a header that disagrees with the body.
            await check_every_request_is_answered(client, BAD_CALLS[:-1])
    args = http_server.process.args
    assert not (Path(args[args.index("--root") + 1]) / "notes" / "bad.md").exists()


async def test_in_process_requests_are_refused_the_same_way(project_root: Path, tmp_path: Path, connect: Any) -> None:
    async with connect(project_root, tmp_path / "index") as client:
        for tool, arguments in BAD_CALLS[:-1]:  # the client itself cannot send a bad tool name (nor URI)
            arguments = {key: value.replace(MARK, "\udcff") for key, value in arguments.items()}
            with anyio.fail_after(PATIENCE), pytest.raises(MCPError, match=r"lone surrogate \(U\+DCFF\)"):
                await client.call_tool(tool, arguments)
    assert not (project_root / "notes" / "bad.md").exists()


def test_the_reply_names_the_place_and_keeps_the_id() -> None:
    import mcp_types
    from pydantic import ValidationError

    from memrouter.mcp.wire import reply_to_undecodable

    def reply(line: str) -> Any:
        try:
            mcp_types.jsonrpc_message_adapter.validate_json(line)
        except ValidationError as exc:
            return reply_to_undecodable(exc)
        raise AssertionError(f"{line} decoded")

    bad_query = reply('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"q":["a","\\ud800"]}}}')
    assert bad_query.id == 7 and bad_query.error.code == mcp_types.INVALID_PARAMS
    assert "params.arguments.q[1] holds a lone surrogate (U+D800)" in bad_query.error.message
    bad_id = reply('{"jsonrpc":"2.0","id":"\\udcff","method":"ping"}')
    assert bad_id.id is None and "id holds a lone surrogate" in bad_id.error.message
    assert reply('{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\udcff"}}') is None
    not_json = reply("{nope")
    assert not_json.id is None and not_json.error.code == mcp_types.PARSE_ERROR
    wrong_shape = reply('{"jsonrpc":"2.0","id":9,"method":3}')
    assert wrong_shape.id == 9 and wrong_shape.error.code == mcp_types.INVALID_REQUEST
