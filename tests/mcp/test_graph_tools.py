"""The graph tools and the graph://{name} resource, through the SDK's own client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import write

pytestmark = pytest.mark.anyio

MEMORIES = {
    "adr/adr-007-queues": "# ADR-007 Queues\n\nWe use a broker.\n",
    "adr/adr-012-streams": "# ADR-012 Streams\n\n- supersedes [[adr-007-queues]] (ordering)\n",
    "billing": "# Billing\n\n- depends_on [[adr-012-streams]]\n",
    "charts": "# Charts\n\nDrawn as in [[graph/layout]].\n",
    "graph/layout": "# Layout\n\nA memory whose name starts with graph/.\n",
}


@pytest.fixture
def graph_root(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    for name, text in MEMORIES.items():
        write(root, name, text)
    return root


async def test_get_entity_related_and_path(graph_root: Path, tmp_path: Path, connect: Any) -> None:
    async with connect(graph_root, tmp_path / "index") as client:
        entity = await client.call_tool("get_entity", {"name": "adr-7"})
        assert not entity.is_error
        data = entity.structured_content
        assert json.loads(entity.content[0].text) == data
        assert data["name"] == "adr/adr-007-queues" and data["kind"] == "memory"
        assert [(r["source"], r["type"], r["line"]) for r in data["relations"]] == [
            ("adr/adr-012-streams", "supersedes", 3)
        ]
        related = await client.call_tool("related_memories", {"name": "ADR-007", "types": ["supersedes"]})
        assert [r["name"] for r in related.structured_content["related"]] == ["adr/adr-012-streams"]
        deeper = await client.call_tool("related_memories", {"name": "ADR-007", "depth": 2})
        assert [(r["name"], r["depth"]) for r in deeper.structured_content["related"]] == [
            ("adr/adr-012-streams", 1),
            ("billing", 2),
        ]
        path = (await client.call_tool("graph_path", {"source": "billing", "target": "ADR-007"})).structured_content
        assert path["found"] and [r["type"] for r in path["relations"]] == ["depends_on", "supersedes"]
        none = await client.call_tool("graph_path", {"source": "billing", "target": "graph/layout"})
        assert none.structured_content["found"] is False


async def test_graph_tool_errors(graph_root: Path, tmp_path: Path, connect: Any) -> None:
    async with connect(graph_root, tmp_path / "index") as client:
        missing = await client.call_tool("get_entity", {"name": "no such thing"})
        assert missing.is_error and "knows no memory or entity" in missing.content[0].text
        deep = await client.call_tool("related_memories", {"name": "billing", "depth": 9})
        assert deep.is_error and "depth" in deep.content[0].text
        many = await client.call_tool("related_memories", {"name": "billing", "types": ["x"] * 21})
        assert many.is_error


async def test_graph_resource(graph_root: Path, tmp_path: Path, connect: Any) -> None:
    async with connect(graph_root, tmp_path / "index") as client:
        content = (await client.read_resource("graph://ADR-012")).contents[0]
        assert content.mime_type == "application/json"
        data = json.loads(content.text)
        assert data["name"] == "adr/adr-012-streams"
        assert {(r["source"], r["type"]) for r in data["relations"]} == {
            ("adr/adr-012-streams", "supersedes"),
            ("billing", "depends_on"),
        }
        with pytest.raises(Exception, match="knows no memory"):
            await client.read_resource("graph://nothing-here")
        assert (await client.read_resource("memory://billing")).contents[0].text == MEMORIES["billing"]


async def test_a_memory_named_graph_slash_is_read_at_its_own_uri(
    graph_root: Path, tmp_path: Path, connect: Any
) -> None:
    async with connect(graph_root, tmp_path / "index") as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        text = (await client.read_resource("memory://graph/layout")).contents[0]
        assert text.mime_type == "text/markdown" and text.text == MEMORIES["graph/layout"]
        edges = (await client.read_resource("graph://graph/layout")).contents[0]
        assert edges.mime_type == "application/json"
        data = json.loads(edges.text)
        assert data["name"] == "graph/layout" and data["kind"] == "memory"
        assert {(r["source"], r["type"]) for r in data["relations"]} == {("charts", "links_to")}
    # Every memory's URI is the text template filled with its name, so no memory is hidden.
    assert templates == {"memory://{+name}", "graph://{+name}"}


async def test_a_memory_named_like_a_fixed_resource_is_read_with_its_file_suffix(tmp_path: Path, connect: Any) -> None:
    root = tmp_path / "memories"
    for name in ("recent", "conventions", "decisions", "context"):
        write(root, name, f"# The {name} memory\n\nIts own text.\n")
    async with connect(root, tmp_path / "index") as client:
        for name in ("recent", "conventions", "decisions", "context"):
            fixed = (await client.read_resource(f"memory://{name}")).contents[0].text
            assert fixed != f"# The {name} memory\n\nIts own text.\n"  # the fixed resource answers the bare name
            own = (await client.read_resource(f"memory://{name}.md")).contents[0]
            assert own.mime_type == "text/markdown" and own.text == f"# The {name} memory\n\nIts own text.\n"
