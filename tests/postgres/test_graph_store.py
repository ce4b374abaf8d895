"""The knowledge graph in PostgreSQL: the rows each push writes, graph calls reading them, rows from before
the graph, and the local index answering while PostgreSQL is down."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg
import pytest
from helpers import write

from memrouter import Router
from memrouter.testing.postgres_server import running_postgres, start_again, stop


@pytest.fixture(autouse=True)
def on_postgres(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Routers opened here read a fresh database as project ``project``."""
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "project")


def _database_graph(url: str) -> dict[str, tuple[dict[str, str], list[list[object]]]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT name, graph_keys, graph_edges FROM memories WHERE project = 'project'")
        return {name: (json.loads(keys), json.loads(edges)) for name, keys, edges in rows}


def _local_graph(index: Path) -> dict[str, tuple[dict[str, str], list[list[object]]]]:
    conn = sqlite3.connect(index / "index.sqlite")
    try:
        rows = conn.execute("SELECT m.name, g.keys, g.edges FROM graph_rows g JOIN memories m ON m.id = g.memory_id")
        return {name: (json.loads(keys), json.loads(edges)) for name, keys, edges in rows}
    finally:
        conn.close()


def _graph_memories(memories: Path) -> None:
    write(memories, "adr/adr-007-old", "# ADR-007 Old queues\n")
    write(memories, "adr/adr-012-new", "---\nsupersedes: '[[adr/adr-007-old]]'\n---\n# ADR-012 New queues\n")
    write(memories, "billing", "# Billing\n\n- depends_on [[adr/adr-012-new]] (queues)\n\nSee #42 and `deploy.sh`.\n")


def test_the_database_holds_each_memorys_keys_and_edges(memories: Path, tmp_path: Path) -> None:
    _graph_memories(memories)
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        assert router.related("billing", depth=1)
        url = router.config.index.url
        assert url is not None
        held = _database_graph(url)
        assert held == _local_graph(tmp_path / "idx") and held["billing"][1]
        router.delete("billing")
        router.save("# Billing\n\nNow [[adr/adr-007-old]] only.\n", name="billing")
        router.related("billing", depth=1)
        assert [edge[:2] for edge in _database_graph(url)["billing"][1]] == [["links_to", "mem:adr/adr-007-old"]]


def test_graph_calls_read_the_database_rows(memories: Path, tmp_path: Path) -> None:
    _graph_memories(memories)
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        assert [r.target for r in router.neighbors("billing") if r.source == "billing"][:1] == ["adr/adr-012-new"]
        url = router.config.index.url
        assert url is not None
        # Another writer changes the rows (as another machine's push would): the next call shows it.
        with psycopg.connect(url) as conn:
            conn.execute(
                "UPDATE memories SET graph_edges = %s WHERE project = 'project' AND name = 'billing'",
                (json.dumps([["depends_on", "mem:adr/adr-007-old", "adr/adr-007-old", 3, None]]),),
            )
            conn.execute("UPDATE projects SET generation = generation + 1 WHERE project = 'project'")
        assert [(r.type, r.target) for r in router.neighbors("billing") if r.source == "billing"] == [
            ("depends_on", "adr/adr-007-old")
        ]
        assert router.path("billing", "adr/adr-007-old").relations[0].type == "depends_on"


def test_rows_pushed_before_the_graph_get_it_on_the_next_call(memories: Path, tmp_path: Path) -> None:
    _graph_memories(memories)
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        router.search("queues", mode="lexical")
        url = router.config.index.url
        assert url is not None
    with psycopg.connect(url) as conn:  # as a database migrated from before 0008_knowledge_graph holds them
        conn.execute("UPDATE memories SET graph_keys = NULL, graph_edges = NULL")
        conn.execute("UPDATE projects SET mark = ''")
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        related = {r.name: r.depth for r in router.related("ADR-007", depth=2)}
        assert related == {"adr/adr-012-new": 1, "billing": 2}
        assert _database_graph(url) == _local_graph(tmp_path / "idx")


def test_graph_calls_use_the_local_index_while_postgres_is_down(
    memories: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memrouter.index.fallback.RETRY_AFTER", 0.0)
    _graph_memories(memories)
    with running_postgres() as server:  # a server of its own, to stop
        monkeypatch.setenv("MEMROUTER_DATABASE_URL", server.url)
        with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
            before = [(r.name, r.depth) for r in router.related("ADR-007", depth=2)]
            assert before and not router.warnings
            stop(server)
            assert [(r.name, r.depth) for r in router.related("ADR-007", depth=2)] == before
            assert any("PostgreSQL index unavailable" in warning for warning in router.warnings)
            write(memories, "payments", "# Payments\n\n- depends_on [[billing]]\n")  # a write while it is down
            assert "payments" in {r.name for r in router.related("billing", depth=1)}
            back = start_again(server)
            try:
                router.workspace.index.file.warnings.clear()
                assert "payments" in {r.name for r in router.related("billing", depth=1)}
                assert not router.warnings  # answered from the database again, which caught up
                assert "payments" in _database_graph(back.url)
            finally:
                stop(back)
