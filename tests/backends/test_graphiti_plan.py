"""What a memory becomes in Graphiti (episode, entities, typed edges), and the backend without graphiti-core."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memrouter.core.errors import BackendNotInstalled, ConfigError, InvalidInput
from memrouter.external.backends.graphiti import GraphitiBackend, GraphitiConfig
from memrouter.external.backends.graphiti_plan import episode_uuid, parse_time, plan_memory
from memrouter.external.backends.registry import backend_names, get_backend
from memrouter.external.sync.engine import draft_for
from memrouter.store.parse import parse_memory

TEXT = """---
created: 2025-03-01T10:00:00Z
tags: [db]
---
# Database choice

We chose Postgres, see [[decisions/orm]] for the mapping layer.
- depends_on [[infra/backups]] (nightly dumps)
Ticket #42 tracked the migration.
"""


def draft(name: str, text: str = TEXT):  # type: ignore[no-untyped-def]
    return draft_for(parse_memory(name, f"/m/{name}.md", text))


def test_an_episode_entities_and_typed_edges_with_the_sentence_as_fact() -> None:
    plan = plan_memory(draft("decisions/db"), "proj")
    assert plan.source_description == "memrouter:decisions/db" and plan.content == TEXT
    assert plan.valid_at == datetime(2025, 3, 1, 10, tzinfo=UTC) and plan.invalid_at is None
    assert plan.episode_uuid == episode_uuid("proj", "decisions/db")
    facts = {edge.name: edge.fact for edge in plan.edges}
    assert facts["DEPENDS_ON"] == "depends_on [[infra/backups]] (nightly dumps)"
    assert facts["LINKS_TO"] == "We chose Postgres, see [[decisions/orm]] for the mapping layer."
    assert {entity.key for entity in plan.entities} >= {"mem:decisions/db", "mem:decisions/orm", "mem:infra/backups"}
    own = plan.entities[0]
    assert own.name == "Database choice" and all(edge.source == own.uuid for edge in plan.edges)
    assert all(edge.valid_at == plan.valid_at and edge.invalid_at is None for edge in plan.edges)


def test_ids_are_stable_per_group_and_name() -> None:
    one, two = plan_memory(draft("decisions/db"), "proj"), plan_memory(draft("decisions/db"), "proj")
    assert one == two
    other = plan_memory(draft("decisions/db"), "other")
    assert other.episode_uuid != one.episode_uuid and {e.uuid for e in other.edges}.isdisjoint(
        e.uuid for e in one.edges
    )
    # the same entity key from two memories is one entity
    again = plan_memory(draft("decisions/cache", TEXT.replace("Database", "Cache")), "proj")
    assert {e.uuid for e in again.entities} & {e.uuid for e in one.entities}


def test_an_invalidated_memory_ends_its_edges() -> None:
    text = TEXT.replace(
        "tags: [db]", "tags: [db]\nstatus: obsolete\ninvalidated_at: 2025-06-01T00:00:00Z\nvalid_until: 2025-05-31"
    )
    plan = plan_memory(draft("decisions/db", text), "proj")
    assert plan.invalid and plan.invalid_at == datetime(2025, 5, 31, tzinfo=UTC)
    assert plan.expired_at == datetime(2025, 6, 1, tzinfo=UTC)
    assert all(e.invalid_at == plan.invalid_at and e.expired_at == plan.expired_at for e in plan.edges)


def test_a_draft_without_the_memrouter_context_is_refused() -> None:
    from memrouter.core.records import replace

    with pytest.raises(InvalidInput):
        plan_memory(replace(draft("a"), context="somewhere"), "proj")


def test_parse_time_reads_dates_and_times_as_utc() -> None:
    assert parse_time("2025-01-02") == datetime(2025, 1, 2, tzinfo=UTC)
    assert parse_time("2025-01-02T03:04:05+02:00") == datetime(2025, 1, 2, 1, 4, 5, tzinfo=UTC)
    assert parse_time("soon") is None and parse_time(None) is None


def test_config_checks_its_keys() -> None:
    config = GraphitiConfig.from_mapping({"host": "db", "port": 7000, "group": "my_proj", "embedder": "hash"})
    assert (config.host, config.port, config.group, config.embedder) == ("db", 7000, "my_proj", "hash")
    for bad in ({"port": 0}, {"group": "a b"}, {"timeout": "x"}, {"colour": 1}):
        with pytest.raises(ConfigError):
            GraphitiConfig.from_mapping(bad)


@pytest.mark.skipif(importlib.util.find_spec("graphiti_core") is not None, reason="graphiti-core is installed")
def test_without_graphiti_core_the_backend_says_how_to_install_it() -> None:
    assert "graphiti" in backend_names()
    with pytest.raises(BackendNotInstalled, match=r"memrouter\[graphiti\]"):
        get_backend("graphiti", {"port": 6390})


def test_down_is_cached_and_costs_no_second_probe(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = GraphitiBackend(GraphitiConfig(port=port))
    assert backend.available() is False and backend.available() is False
    assert backend.health.probes == 1 and backend.health.last_error
    assert backend.endpoint == f"falkordb://127.0.0.1:{port}/memrouter"
    backend.close()


def test_a_call_that_cannot_reach_the_server_is_unavailable_and_noted() -> None:
    from memrouter.core.errors import BackendContractError, BackendUnavailable

    backend = GraphitiBackend(GraphitiConfig(port=6390, timeout=5))

    async def refused() -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    async def broken() -> None:
        raise ValueError("a reply memrouter cannot read")

    async def fine() -> int:
        return 7

    try:
        with pytest.raises(BackendUnavailable, match="Connection refused"):
            backend.call(refused())
        assert backend.health.report().ok is False and backend.available() is False
        assert backend.health.probes == 0  # the failure seen first-hand is cached: no probe
        with pytest.raises(BackendContractError, match="cannot read"):
            backend.call(broken())
        assert backend.call(fine()) == 7 and backend.health.report().ok is True
    finally:
        backend.close()


def test_the_router_gives_a_graphiti_section_without_group_the_project_folder_name(tmp_path: Path) -> None:
    import subprocess

    from memrouter.config.settings import Config
    from memrouter.external.services import project_defaults

    folder = tmp_path / "My Project"
    (folder / ".serena" / "memories").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "memrouter.toml").write_text(
        '[backends.graphiti]\nport = 6390\n[backends.shared]\ntype = "graphiti"\ngroup = "team"\n'
        '[backends.forgetful]\nurl = "http://127.0.0.1:8020/mcp"\n',
        encoding="utf-8",
    )
    sections = project_defaults(Config.load(cwd=folder, env={}))
    assert sections["graphiti"]["group"] == "My-Project" and sections["shared"]["group"] == "team"
    assert "group" not in sections["forgetful"]
    assert GraphitiConfig.from_mapping(sections["graphiti"]).group == "My-Project"  # a valid group
