"""The review queue over MCP, the client agent as author and actor, and no pending memory on any MCP read path."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def as_agent(root: Path, index_dir: Path, agent: str) -> AsyncIterator[Any]:
    """A real server over ``root``, reached by a client that says its name is ``agent``."""
    from mcp import Client
    from mcp_types import Implementation

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService
    from memrouter.router import Router

    with Router.open(root=root, index_dir=index_dir, watch=False) as router:
        server = create_server(MemoryService(router), tools="all")
        async with Client(server, client_info=Implementation(name=agent, version="1")) as client:
            yield client


async def call(client: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content)


async def test_an_agent_saves_and_cannot_approve_its_own_memory(project_root: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    async with as_agent(project_root, index, "writer-bot") as writer:
        saved = await call(writer, "save_memory", content="# Cache TTL\n\nThe cache TTL is 5 minutes.", source="#42")
        name = saved["name"]
        assert saved["author"] == "agent:writer-bot" and saved["created"]
        # Held for review (the guard decides when; here the file says so) and the author tries to approve it.
        path = project_root / f"{name}.md"
        path.write_text(path.read_text().replace("---\n", "---\nstatus: pending_review\n", 1))
        pending = await call(writer, "get_pending_memories")
        assert [m["name"] for m in pending["memories"]] == [name]
        refused = await writer.call_tool("approve_pending_memory", {"memory_name": name})
        assert refused.is_error and "cannot approve" in refused.content[0].text
    async with as_agent(project_root, index, "reviewer-bot") as reviewer:
        approved = await call(reviewer, "approve_pending_memory", memory_name=name, reason="matches #42")
        assert approved["status"] == "active" and approved["author"] == "agent:writer-bot"
        assert approved["verified_by"] == "agent:reviewer-bot"
        assert (await call(reviewer, "get_pending_memories"))["memories"] == []
        [hit] = (await call(reviewer, "search_memory", query="cache ttl minutes", limit=1))["results"]
        assert hit["name"] == name and set(hit["provenance"]) == {"author", "source", "created", "verified_by"}
        assert (hit["provenance"]["author"], hit["provenance"]["verified_by"]) == (
            "agent:writer-bot",
            approved["verified_by"],
        )
    lines = [json.loads(line) for line in (index / "audit.jsonl").read_text().splitlines()]
    assert [(line["who"], line["op"], line["verdict"]) for line in lines if line.get("name") == name] == [
        ("agent:writer-bot", "save", "ok"),
        ("agent:reviewer-bot", "approve", "approved"),
    ]


async def test_no_mcp_read_path_shows_a_pending_memory(project_root: Path, tmp_path: Path) -> None:
    name = "conventions/unverified"
    (project_root / "conventions" / "unverified.md").write_text(
        "---\nstatus: pending_review\nkind: adr\nauthor: agent:x\n---\n"
        "# Flaky tests commit messages\n\nProbably retry flaky tests and use commit messages and PostgreSQL.\n"
    )
    async with as_agent(project_root, tmp_path / "index", "reader") as client:
        for query in ("flaky tests", "commit messages", "postgresql"):
            found = await call(client, "search_memory", query=query, limit=50, include_history=True)
            assert name not in [hit["name"] for hit in found["results"]], query
        listed = (await client.call_tool("list_memories", {})).content[0].text
        assert name not in json.loads(listed)["memories"] and "conventions/commit-messages" in listed
        topic = (await client.call_tool("list_memories", {"topic": "conventions"})).content[0].text
        assert name not in topic
        for uri in ("memory://recent", "memory://conventions", "memory://decisions"):
            text = (await client.read_resource(uri)).contents[0].text
            assert name not in text, uri
        assert "adr/adr-001-postgres" in (await client.read_resource("memory://decisions")).contents[0].text
        rejected = await call(client, "reject_pending_memory", memory_name=name, reason="a guess")
        assert rejected == {"rejected": name}
        assert not (project_root / "conventions" / "unverified.md").exists()


async def test_the_janitor_report_is_read_only_over_mcp(project_root: Path, tmp_path: Path) -> None:
    text = "# Deploy windows\n\nDeploys happen on Tuesdays and Thursdays before noon, never on Fridays.\n"
    for name, updated in (("deploy-a", "2026-01-01"), ("deploy-b", "2026-02-01")):
        (project_root / f"{name}.md").write_text(f"---\nupdated: '{updated}T00:00:00Z'\n---\n{text}", encoding="utf-8")
    before = {path: path.read_bytes() for path in project_root.rglob("*.md")}
    async with as_agent(project_root, tmp_path / "index", "tidy-bot") as client:
        report = await call(client, "janitor_report", limit=1)
        assert report["counts"]["duplicate"] == 1
        assert [(p["name"], p["superseded_by"]) for p in report["proposals"]] == [("deploy-a", "deploy-b")]
        assert report["more_proposals"] == 0 and "memrouter janitor --apply" in report["apply"]
        bad = await client.call_tool("janitor_report", {"limit": 0})
        assert bad.is_error and "limit" in bad.content[0].text
    assert {path: path.read_bytes() for path in project_root.rglob("*.md")} == before
