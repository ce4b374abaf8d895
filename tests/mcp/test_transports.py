"""The real server as a subprocess: over stdio, over streamable HTTP, with and without a token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import initialize_status

pytestmark = pytest.mark.anyio


async def roundtrip(client: Any, root: Path, marker: str) -> None:
    """A short session touching memrouter's, Serena's and the session tools."""
    written = await client.call_tool(
        "write_memory", {"memory_name": f"notes/{marker}", "content": f"# {marker}\n\nabout {marker} (ADR-001)\n"}
    )
    assert written.content[0].text == f"Memory notes/{marker} written."
    found = await client.call_tool("search_memory", {"query": marker, "mode": "lexical"})
    assert found.structured_content["results"][0]["name"] == f"notes/{marker}"
    read = await client.call_tool("read_memory", {"memory_name": f"notes/{marker}"})
    assert read.content[0].text == (root / f"notes/{marker}.md").read_text()
    error = await client.call_tool("get_memory", {"memory_name": "../escape"})
    assert error.is_error and "invalid memory name" in error.content[0].text


async def test_stdio_subprocess(project_root: Path, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    project = project_root.parent.parent
    # No --root: the server finds the project from its working directory (a subfolder here).
    (project / "src").mkdir()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memrouter", "serve", "--tools", "all"], env=env, cwd=str(project / "src")
    )
    async with Client(params) as client:
        await roundtrip(client, project_root, "stdio")
        branch = await client.call_tool("get_current_branch", {})
        assert branch.structured_content["branch"] == "main"
        commits = await client.call_tool("get_recent_commits", {"limit": 5})
        assert commits.structured_content["commits"][0]["subject"] == "Add project memories"
        await client.call_tool("set_task_context", {"task": "ship the MCP server", "details": "stdio first"})
        # a hand edit is seen by the long-lived server (inotify or the stat scan)
        (project_root / "hand-edit.md").write_text("# Hand edit\n\nwritten by a person: quokka\n")
        for _ in range(50):
            hits = await client.call_tool("search_memory", {"query": "quokka"})
            if hits.structured_content["results"]:
                break
            await anyio.sleep(0.1)
        assert hits.structured_content["results"][0]["name"] == "hand-edit"
    # the task context survives the server, in the project's state folder
    assert (project / ".memrouter" / "task-context.json").is_file()
    async with Client(params) as client:
        task = await client.call_tool("get_task_context", {})
        assert task.structured_content["task"] == "ship the MCP server"
        assert task.structured_content["details"] == "stdio first"


async def test_http_subprocess_and_concurrent_clients(http_server: Any) -> None:
    from mcp import Client

    root = Path(_root_of(http_server))

    async def one_client(index: int) -> None:
        async with Client(http_server.url) as client:
            await roundtrip(client, root, f"client{index}")
            for _ in range(5):
                hits = await client.call_tool("search_memory", {"query": "flaky tests", "limit": 3})
                assert not hits.is_error

    async with anyio.create_task_group() as group:
        for index in range(4):
            group.start_soon(one_client, index)
    async with Client(http_server.url) as client:
        listing = json.loads((await client.call_tool("list_memories", {"topic": "notes"})).content[0].text)
    assert listing == {"memories": [f"notes/client{i}" for i in range(4)]}


def _root_of(server: Any) -> str:
    args = server.process.args
    return str(args[args.index("--root") + 1])


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
async def test_bearer_token_is_required_when_configured(
    host: str, project_root: Path, tmp_path: Path, server_process: Any
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    token = "s3cret-token"
    server = server_process(project_root, tmp_path / "index", host=host, token=token)
    try:
        assert initialize_status(server.url) == 401
        assert initialize_status(server.url, {"Authorization": "Bearer wrong"}) == 401
        assert initialize_status(server.url, {"Authorization": token}) == 401
        assert initialize_status(server.url, {"Authorization": f"Basic {token}"}) == 401
        assert initialize_status(server.url, {"Authorization": f"Bearer {token}"}) == 200
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(server.url, http_client=http)) as client:
                await roundtrip(client, project_root, f"token-{host.replace('.', '-')}")
    finally:
        server.stop()


def test_off_loopback_without_token_is_refused(project_root: Path, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    result = subprocess.run(
        [sys.executable, "-m", "memrouter", "--root", str(project_root), "--index-dir", str(tmp_path / "i"),
         "serve", "--http", "--host", "0.0.0.0", "--port", "1"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "needs a bearer token" in result.stderr and "MEMROUTER_TOKEN" in result.stderr


def test_loopback_detection() -> None:
    from memrouter.http.serve import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.5", "example.com", "127.0.0.1.evil"]))


async def test_the_server_embeds_in_the_background_and_lexical_answers_first(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    root = tmp_path / "project" / ".serena" / "memories"
    root.mkdir(parents=True)
    for n in range(12):
        (root / f"note-{n}.md").write_text(f"# Note {n}\n\nThe worker {n} drains the queue.\n", encoding="utf-8")
    (tmp_path / "project" / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n', encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memrouter", "--root", str(root), "serve", "--tools", "all"], env=env
    )
    async with Client(params) as client:
        found = await client.call_tool("search_memory", {"query": "worker drains queue"})
        assert not found.is_error and found.structured_content["results"]
        with anyio.fail_after(60):  # a liveness bound, not a speed test
            while True:
                dense = json.loads((await client.call_tool("memory_status", {})).content[0].text)["dense"]
                if dense["pending_memories"] == 0 and dense["background"] is not None:
                    break
                await anyio.sleep(0.1)
        assert dense["background"]["running"] and dense["background"]["embedded_memories"] == 12
        hybrid = await client.call_tool("search_memory", {"query": "worker drains queue", "mode": "hybrid"})
        assert any(m["retriever"] == "dense" for hit in hybrid.structured_content["results"] for m in hit["why"])
