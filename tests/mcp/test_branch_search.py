"""``search_memory(branches=...)`` through the SDK's own client, over a real repository with worktrees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import branchkit
import pytest

pytestmark = pytest.mark.anyio


async def test_search_memory_adds_other_branches_when_asked(tmp_path: Path, connect: Any) -> None:
    places = branchkit.build(tmp_path)
    root = places["project"] / branchkit.MEMORIES
    async with connect(root, places["project"] / ".memrouter") as client:
        plain = await client.call_tool("search_memory", {"query": "flamegraph profiler", "mode": "lexical"})
        assert plain.structured_content["results"] == []
        found = await client.call_tool(
            "search_memory", {"query": "flamegraph profiler", "mode": "lexical", "branches": "local"}
        )
        assert not found.is_error, found.content[0].text
        (hit,) = found.structured_content["results"]
        assert hit["name"] == "xray"
        assert hit["why"][-1] == {
            "retriever": "branch", "rank": 0, "score": 0.2,
            "detail": "branch feat-x, worktree ../wt-x, unmerged, 2 commits ahead of main",
        }  # fmt: skip
        refused = await client.call_tool("search_memory", {"query": "flamegraph", "branches": "--all"})
        assert refused.is_error
