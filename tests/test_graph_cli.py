"""``memrouter graph`` through the real command line: entity, related, path, stats, export, exit codes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import write

from memrouter.cli import main

MEMORIES = {
    "adr/adr-007-queues": "# ADR-007 Queues\n\nWe use a broker.\n",
    "adr/adr-012-streams": "# ADR-012 Streams\n\n- supersedes [[adr-007-queues]] (ordering)\n",
    "billing": "# Billing\n\n- depends_on [[adr-012-streams]]\n\nSee src/billing/charge.py and [[Missing Page]].\n",
    "notes/alone": "# Alone\n\nNothing links here.\n",
}


@pytest.fixture
def graph_cli(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "memories"
    for name, text in MEMORIES.items():
        write(root, name, text)
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        base = ["--root", str(root), "--index-dir", str(tmp_path / "idx"), "graph"]
        return runner.invoke(main, [*base, *args], catch_exceptions=False)

    return invoke


def test_entity_text_and_json(graph_cli) -> None:  # type: ignore[no-untyped-def]
    result = graph_cli("entity", "ADR-007")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "adr/adr-007-queues  (memory)"
    assert "adr/adr-012-streams -supersedes-> adr/adr-007-queues (ordering)  [adr/adr-012-streams:3]" in result.output
    data = json.loads(graph_cli("entity", "src/billing/charge.py", "--format", "json").output)
    assert data["kind"] == "path" and data["memories"] == []
    assert [(r["source"], r["type"]) for r in data["relations"]] == [("billing", "about_code")]
    bare = json.loads(graph_cli("entity", "billing", "--no-relations", "--format", "json").output)
    assert bare["relations"] == []


def test_related_with_depth_and_types(graph_cli) -> None:  # type: ignore[no-untyped-def]
    result = graph_cli("related", "ADR-007", "--depth", "2", "--type", "supersedes", "--type", "depends_on")
    assert result.exit_code == 0, result.output
    data = json.loads(
        graph_cli("related", "ADR-007", "--type", "supersedes", "--type", "depends_on", "--format", "json").output
    )
    assert [(r["name"], r["depth"]) for r in data["related"]] == [("adr/adr-012-streams", 1), ("billing", 2)]
    near = json.loads(graph_cli("related", "ADR-007", "--depth", "1", "--format", "json").output)
    assert [r["name"] for r in near["related"]] == ["adr/adr-012-streams"]
    assert "1  adr/adr-012-streams  (memory)" in result.output and "2  billing  (memory)" in result.output


def test_path_found_and_not_found(graph_cli) -> None:  # type: ignore[no-untyped-def]
    result = graph_cli("path", "billing", "adr/adr-007-queues", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["found"] and [r["type"] for r in data["relations"]] == ["depends_on", "supersedes"]
    none = graph_cli("path", "billing", "notes/alone")
    assert none.exit_code == 0 and none.output.strip() == "no path from billing to notes/alone"


def test_stats_lists_dangling_references_and_orphans(graph_cli) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(graph_cli("stats", "--format", "json").output)
    assert data["memories"] == 4
    assert data["dangling"] == [{"memory": "billing", "line": 5, "target": "Missing Page"}]
    assert data["orphans"] == ["notes/alone"]
    text = graph_cli("stats").output
    assert "dangling references: 1" in text and "  billing:5 -> Missing Page" in text and "  notes/alone" in text


def test_export_formats_parse(graph_cli) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(graph_cli("export").output)
    assert {"nodes", "edges"} <= set(data) and data["edges"]
    graphml = graph_cli("export", "--format", "graphml").output
    assert ET.fromstring(graphml).tag.endswith("graphml")
    dot = graph_cli("export", "--format", "dot").output
    assert dot.startswith("digraph memories {") and dot.endswith("}\n")
    assert graph_cli("export", "--format", "svg").exit_code == 2


@pytest.mark.parametrize(
    ("args", "code"),
    [(("entity", "no such thing"), 1), (("related", "ADR-007", "--depth", "9"), 2), (("entity", "x" * 1001), 2)],
)
def test_exit_codes(graph_cli, args: tuple[str, ...], code: int) -> None:  # type: ignore[no-untyped-def]
    result = graph_cli(*args)
    assert result.exit_code == code, result.output


def test_every_graph_command_has_help(graph_cli) -> None:  # type: ignore[no-untyped-def]
    for command in ("entity", "related", "path", "stats", "export"):
        result = graph_cli(command, "--help")
        assert result.exit_code == 0 and result.output.startswith("Usage:")
