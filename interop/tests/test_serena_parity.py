"""The Serena drop-in against the real Serena: the same calls, the same answers, the same files.

``interop/setup.sh`` installs ``serena-agent`` 2.1.0 in its own virtual
environment (``interop/.work/serena-venv``); ``make interop`` runs this file
with the rest of the interop suite. Without that installation the tests fail
with the reason: they are never skipped.

Serena runs over streamable HTTP on a free loopback port, on a project that
holds no source files (so no language server starts), with its home in a
temporary folder; memrouter runs in-process on a copy of the same project.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from interop_peers import SERENA, Process, skip_reason

pytestmark = pytest.mark.anyio

SERENA_SIX = ("write_memory", "read_memory", "list_memories", "edit_memory", "rename_memory", "delete_memory")

# (tool, arguments, compare): "text" compares the answer text exactly, "error" only that both fail.
SCENARIO: list[tuple[str, dict[str, Any], str]] = [
    ("list_memories", {}, "text"),
    (
        "write_memory",
        {"memory_name": "mem:arch/overview.md", "content": "# Overview\n\nSee `mem:auth` and mem:auth.\n"},
        "text",
    ),
    ("write_memory", {"memory_name": "auth", "content": "# Auth\n\nTokens expire hourly. Tokens rotate.\n"}, "text"),
    ("write_memory", {"memory_name": "auth-v2", "content": "---\nkind: adr\n---\nraw `mem:auth-v2`\n"}, "text"),
    ("write_memory", {"memory_name": "a/b/c/deep", "content": "deep ünïcode\n"}, "text"),
    ("read_memory", {"memory_name": "arch/overview"}, "text"),
    ("read_memory", {"memory_name": "mem:auth-v2.md"}, "text"),
    ("read_memory", {"memory_name": "nope"}, "text"),
    ("list_memories", {}, "text"),
    ("list_memories", {"topic": "arch"}, "text"),
    ("list_memories", {"topic": "a/b"}, "text"),
    ("list_memories", {"topic": "nothing"}, "text"),
    ("edit_memory", {"memory_name": "auth", "needle": "hourly", "repl": "daily", "mode": "literal"}, "text"),
    ("edit_memory", {"memory_name": "auth", "needle": "Tokens", "repl": "Keys", "mode": "literal"}, "text"),
    (
        "edit_memory",
        {
            "memory_name": "auth",
            "needle": "Tokens",
            "repl": "Keys",
            "mode": "literal",
            "allow_multiple_occurrences": True,
        },
        "text",
    ),
    (
        "edit_memory",
        {
            "memory_name": "auth",
            "needle": r"^# (\w+)$.*?daily",
            "repl": "# $!1 \\1\n\nKeys expire daily",
            "mode": "regex",
        },
        "text",
    ),
    ("edit_memory", {"memory_name": "auth", "needle": "absent", "repl": "x", "mode": "regex"}, "text"),
    ("write_memory", {"memory_name": "tags", "content": "<a>one\n<a>two\n</a>\n"}, "text"),
    ("edit_memory", {"memory_name": "tags", "needle": "<a>.*?</a>", "repl": "x", "mode": "regex"}, "text"),
    ("edit_memory", {"memory_name": "tags", "needle": "<a>two\n</a>", "repl": "<b/>", "mode": "regex"}, "text"),
    ("edit_memory", {"memory_name": "ghost", "needle": "a", "repl": "b", "mode": "literal"}, "text"),
    ("rename_memory", {"old_name": "auth", "new_name": "security/auth"}, "text"),
    ("rename_memory", {"old_name": "ghost", "new_name": "spirit"}, "text"),
    ("rename_memory", {"old_name": "security/auth", "new_name": "auth-v2"}, "text"),
    ("read_memory", {"memory_name": "arch/overview"}, "text"),
    ("delete_memory", {"memory_name": "auth-v2"}, "text"),
    ("delete_memory", {"memory_name": "auth-v2"}, "text"),
    ("write_memory", {"memory_name": "big", "content": "x" * 20, "max_chars": 10}, "text"),
    ("write_memory", {"memory_name": "../escape", "content": "x"}, "error"),
    ("write_memory", {"memory_name": "/abs/path", "content": "x"}, "error"),
    ("write_memory", {"memory_name": "a//b", "content": "x"}, "error"),
    ("read_memory", {"memory_name": "../../etc/passwd"}, "error"),
    ("list_memories", {}, "text"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def serena_url(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """The real Serena on a free port: its URL, its project's memories folder and its global memories folder."""
    reason = skip_reason("serena", SERENA)
    if reason is not None:
        pytest.fail(f"the real Serena is needed: {reason}", pytrace=False)
    project = tmp_path / "serena-project"
    (project / ".serena" / "memories").mkdir(parents=True)
    (project / "README.md").write_text("# A project without source files\n")
    home = tmp_path / "serena-home"
    home.mkdir()
    port = _free_port()
    env = {**os.environ, "SERENA_HOME": str(home), "HOME": str(home), "SERENA_USAGE_REPORTING": "false"}
    process = Process(
        "serena",
        [str(SERENA), "start-mcp-server", "--transport", "streamable-http", "--host", "127.0.0.1", "--port", str(port),
         "--project", str(project), "--agent-interface", "tools", "--context", "agent",
         "--enable-web-dashboard", "false", "--open-web-dashboard", "false", "--enable-gui-log-window", "false"],
        env=env, cwd=project, log=tmp_path / "serena.log",
    )  # fmt: skip
    process.start()
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.alive(), f"serena exited:\n{process.tail()}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, f"serena did not listen on {port}:\n{process.tail()}"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", project / ".serena" / "memories", home / "memories" / "global"
    finally:
        process.stop()


@asynccontextmanager
async def in_memory_client(
    root: Path, index_dir: Path, global_root: Path | None = None, tools: str = "all"
) -> AsyncIterator[Any]:
    """memrouter's server offering ``tools``, through the SDK's in-memory transport."""
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
    return in_memory_client


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.md"))}


async def run(client: Any) -> list[tuple[bool, str, Any]]:
    answers = []
    for tool, arguments, _ in SCENARIO:
        result = await client.call_tool(tool, arguments)
        answers.append((bool(result.is_error), result.content[0].text, result.structured_content))
    return answers


@pytest.mark.parametrize("tools", ["serena", "all"])
async def test_same_answers_and_files_as_real_serena(serena_url: Any, tmp_path: Path, connect: Any, tools: str) -> None:
    """The ``serena`` profile (Serena's six tools alone), and the six among every other tool."""
    from mcp import Client

    url, serena_root, serena_global = serena_url
    ours_root = tmp_path / "ours" / ".serena" / "memories"
    ours_root.mkdir(parents=True)
    async with Client(url) as client:
        theirs = await run(client)
        their_tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    async with connect(ours_root, tmp_path / "index", tools=tools) as client:
        ours = await run(client)
        our_tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    if tools == "serena":
        assert sorted(our_tools) == sorted(their_tools.keys() & our_tools.keys()) == sorted(SERENA_SIX)
    for name in SERENA_SIX:
        theirs_schema, ours_schema = their_tools[name], our_tools[name]
        assert set(theirs_schema["properties"]) <= set(ours_schema["properties"]), name  # extras only added
        assert sorted(theirs_schema.get("required", [])) == sorted(ours_schema.get("required", [])), name
        for argument, spec in theirs_schema["properties"].items():
            assert spec.get("default") == ours_schema["properties"][argument].get("default"), (name, argument)
    for (tool, arguments, compare), mine, real in zip(SCENARIO, ours, theirs, strict=True):
        assert mine[0] == real[0], (tool, arguments, mine, real)
        if compare == "text":
            assert mine[1] == real[1], (tool, arguments)
            if not real[0]:
                assert mine[2] == real[2], (tool, arguments)
    assert tree(ours_root) == tree(serena_root)
    shutil.rmtree(tmp_path / "ours")


async def test_global_memories_shared_with_serena(serena_url: Any, tmp_path: Path, connect: Any) -> None:
    from mcp import Client

    url, serena_root, serena_global = serena_url
    async with connect(serena_root, tmp_path / "index", global_root=serena_global, tools="serena") as ours:
        written = await ours.call_tool(
            "write_memory", {"memory_name": "global/style/python", "content": "Type hints.\n"}
        )
        assert written.content[0].text == "Memory global/style/python written."
        async with Client(url) as serena:
            read = await serena.call_tool("read_memory", {"memory_name": "global/style/python"})
            assert read.content[0].text == "Type hints.\n"
            await serena.call_tool("write_memory", {"memory_name": "global/from-serena", "content": "hello"})
            theirs = await serena.call_tool("list_memories", {"topic": "global"})
        mine = await ours.call_tool("list_memories", {"topic": "global"})
        assert mine.content[0].text == theirs.content[0].text
        assert (await ours.call_tool("read_memory", {"memory_name": "global/from-serena"})).content[0].text == "hello"
