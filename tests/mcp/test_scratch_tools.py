"""The scratchpad tools over the real MCP SDK: notes belong to their session."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrouter import Router

pytestmark = pytest.mark.anyio


async def test_mcp_scratchpad_tools_are_per_session(project_root: Path, tmp_path: Path) -> None:
    from mcp import Client
    from mcp_types import Implementation

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService

    with Router.open(root=project_root, index_dir=tmp_path / "idx") as router:
        server = create_server(MemoryService(router), tools="all")
        first_info = Implementation(name="agent-one", version="1")
        second_info = Implementation(name="agent-two", version="1")
        async with Client(server, client_info=first_info) as first, Client(server, client_info=second_info) as second:
            written = await first.call_tool("scratchpad_write", {"name": "idea", "content": "cache the embedder"})
            assert not written.is_error
            mine = await first.call_tool("scratchpad_read", {})
            assert [n["name"] for n in mine.structured_content["notes"]] == ["idea"]
            theirs = await second.call_tool("scratchpad_read", {})
            assert theirs.structured_content["notes"] == []
            found = await first.call_tool("search_memory", {"query": "cache embedder", "mode": "lexical"})
            assert "scratch:idea" in [r["name"] for r in found.structured_content["results"]]
            cleared = await first.call_tool("scratchpad_clear", {})
            assert cleared.structured_content == {"cleared": 1}
