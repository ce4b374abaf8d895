"""``memrouter serve --projects FILE`` as a real subprocess, and the checks every store must pass through it.

Importable as ``multiproject`` by the MCP tests (local index) and the
PostgreSQL tests (shared database), so both run the same scenario.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from helpers import SAMPLE, initialize_status, wait_listening, write

from memrouter.testing.servers import free_port

TOKEN_A = "token-a-only-alpha"
TOKEN_B = "token-b-alpha-and-beta"
TOKEN_READER = "token-reads-alpha"


def make_repository(base: Path, name: str, marker: str) -> Path:
    """A git repository ``base/name`` holding the sample memories, each ending with ``marker``; the folder."""
    folder = base / name
    for memory, text in SAMPLE.items():
        write(folder / ".serena" / "memories", memory, f"{text}\nProject word: {marker}.\n")
    (folder / ".gitignore").write_text(".memrouter/\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
    return folder


def projects_file(base: Path, repositories: dict[str, Path], database: str | None = None) -> Path:
    """A projects file serving ``repositories``: TOKEN_A may use alpha, TOKEN_B alpha and beta (from the env),
    TOKEN_READER may read alpha."""
    lines = [f"database = {json.dumps(database)}"] if database else []
    for key, folder in repositories.items():
        lines += [f"[projects.{key}]", f"path = {json.dumps(str(folder))}"]
    lines += ["[tokens.a]", f'token = "{TOKEN_A}"', 'projects = ["alpha"]']
    lines += ["[tokens.b]", 'token_env = "MEMROUTER_TEST_TOKEN_B"', f"projects = {json.dumps(sorted(repositories))}"]
    lines += ["[tokens.reader]", f'token = "{TOKEN_READER}"', 'read_only = ["alpha"]']
    path = base / "projects.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class ProjectsServer:
    """``memrouter serve --http --projects FILE`` on a free loopback port; ``url(key)`` is a project's MCP URL."""

    def __init__(self, file: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        environment = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
        environment |= {"PYTHONUNBUFFERED": "1", "MEMROUTER_TEST_TOKEN_B": TOKEN_B, **(env or {})}
        args = [
            sys.executable,
            "-m",
            "memrouter",
            "serve",
            "--http",
            "--port",
            str(self.port),
            "--projects",
            str(file),
            "--tools",
            "all",
        ]
        self.process = subprocess.Popen(args, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_ready()

    def url(self, key: str) -> str:
        return f"http://127.0.0.1:{self.port}/mcp/{key}"

    def _wait_ready(self) -> None:
        try:
            wait_listening(self.process, "127.0.0.1", self.port)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> str:
        """Stop the server; what it wrote to stderr (read while it stops: a full pipe would hold it up)."""
        self.process.terminate()
        try:
            _, stderr = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return stderr.decode() if stderr else ""


@asynccontextmanager
async def client(url: str, token: str) -> Any:
    """A real MCP SDK streamable-HTTP client session sending ``token``."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as session:
            yield session


def status_of(url: str, token: str | None) -> int:
    """The HTTP status of an MCP initialize request to ``url`` with ``token`` (None: no Authorization)."""
    return initialize_status(url, None if token is None else {"Authorization": f"Bearer {token}"})


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


async def check_tokens_and_projects(server: ProjectsServer, alpha: Path, beta: Path) -> None:
    """Token A searches and saves in alpha and is refused on beta; wrong and missing tokens are refused;
    a save through alpha writes alpha's files only; token B reaches both, each seeing only its own memories
    and its own team channel."""
    import pytest
    from mcp.shared.exceptions import MCPError

    assert status_of(server.url("alpha"), None) == 401
    assert status_of(server.url("alpha"), "not-a-token") == 401
    assert status_of(server.url("beta"), TOKEN_A) == 403
    assert status_of(server.url("nowhere"), TOKEN_A) == 403  # the same answer: no probing for names
    assert status_of(server.url("alpha"), TOKEN_A) == 200

    beta_files = sorted(p.relative_to(beta) for p in beta.rglob("*.md") if ".memrouter" not in p.parts)
    async with client(server.url("alpha"), TOKEN_A) as alpha_client:
        found = await alpha_client.call_tool("search_memory", {"query": "alphaword flaky tests", "mode": "lexical"})
        assert not found.is_error and found.structured_content["results"]
        other = await alpha_client.call_tool("search_memory", {"query": "betaword", "mode": "lexical"})
        assert other.structured_content["results"] == []
        saved = await alpha_client.call_tool(
            "save_memory", {"content": "# Alpha release\n\nThe alpha train leaves on Tuesdays.", "memory_name": "ops/release-train", "source": "ADR-007"}
        )  # fmt: skip
        assert not saved.is_error, saved.content[0].text
        again = await alpha_client.call_tool("search_memory", {"query": "release train tuesdays", "mode": "lexical"})
        assert again.structured_content["results"][0]["name"] == "ops/release-train"
    assert "alpha train" in (alpha / ".serena" / "memories" / "ops" / "release-train.md").read_text()
    assert not (beta / ".serena" / "memories" / "ops").exists()
    assert sorted(p.relative_to(beta) for p in beta.rglob("*.md") if ".memrouter" not in p.parts) == beta_files

    for url, token, message in (
        (server.url("beta"), TOKEN_A, "forbidden: this token may not use the project 'beta'"),
        (
            server.url("alpha"),
            "wrong-token",
            "unauthorized: send Authorization: Bearer <token> with a token of this server",
        ),
    ):
        with pytest.raises(BaseException) as caught:  # the client's task groups wrap the MCPError
            async with client(url, token) as never:
                await never.call_tool("search_memory", {"query": "flaky tests"})
        assert {str(exc) for exc in leaves(caught.value) if isinstance(exc, MCPError)} == {message}

    async with client(server.url("beta"), TOKEN_B) as beta_client:
        hits = await beta_client.call_tool("search_memory", {"query": "release train tuesdays", "mode": "lexical"})
        assert hits.structured_content["results"] == []  # alpha's new memory is not beta's
        own = await beta_client.call_tool("search_memory", {"query": "betaword", "mode": "lexical"})
        assert own.structured_content["results"]
    async with client(server.url("alpha"), TOKEN_B) as alpha_again:
        mixed = await alpha_again.call_tool("search_memory", {"query": "betaword", "mode": "lexical"})
        assert mixed.structured_content["results"] == []
        await alpha_again.call_tool("team_register", {"agent_id": "ada"})
        shared = await alpha_again.call_tool("team_set", {"key": "release", "value": "alpha", "agent_id": "ada"})
        assert not shared.is_error, shared.content[0].text
    async with client(server.url("beta"), TOKEN_B) as beta_again:  # each project has its own team channel
        unseen = await beta_again.call_tool("team_get", {"key": "release"})
        assert unseen.is_error and "no team variable" in unseen.content[0].text

    assert status_of(server.url("beta"), TOKEN_READER) == 403
    async with client(server.url("alpha"), TOKEN_READER) as reader:
        read = await reader.call_tool("search_memory", {"query": "release train tuesdays", "mode": "lexical"})
        assert read.structured_content["results"][0]["name"] == "ops/release-train"
        assert not (await reader.call_tool("get_memory", {"memory_name": "ops/release-train"})).is_error
        for tool, arguments in (
            ("save_memory", {"content": "# Reader note\n\nSee ADR-001.", "memory_name": "ops/reader"}),
            ("delete_memory", {"memory_name": "ops/release-train"}),
            ("team_set", {"key": "release", "value": "reader", "agent_id": "ada"}),
        ):
            with pytest.raises(MCPError) as refused:
                await reader.call_tool(tool, arguments)
            assert (
                str(refused.value)
                == f"forbidden: this token may only read the project 'alpha': {tool!r} is not read-only"
            )
        still = await reader.call_tool("list_memories", {"topic": "ops"})  # the session goes on
        assert "ops/release-train" in still.content[0].text and "ops/reader" not in still.content[0].text
    assert (alpha / ".serena" / "memories" / "ops" / "release-train.md").is_file()
    assert not (alpha / ".serena" / "memories" / "ops" / "reader.md").exists()
