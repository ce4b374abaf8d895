"""The team channel on both stores: the same behaviour tests, claims racing across processes and threads,
PostgreSQL down, and the router's channel following ``[index] url``.

The behaviour tests are the team channel's own (``tests/team/test_state_machines.py``), imported as they
are: each runs once on ``team.sqlite`` and once on PostgreSQL (``conftest.STORES``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from team.test_state_machines import (
    test_an_agent_says_where_it_works_and_its_handoffs_carry_that,
    test_an_expired_lease_returns_the_task_and_counts_an_attempt,
    test_bad_input_is_refused_and_changes_nothing,
    test_claim_a_named_task,
    test_claims_follow_priority_dependencies_and_capabilities,
    test_compare_and_set_and_ttl,
    test_failures_retry_then_park_and_stale_agents_lose_their_leases,
    test_handoff_get_shows_any_state,
    test_handoff_state_machine,
    test_ids_are_random_128_bit,
    test_renewing_a_lease_keeps_the_claim,
    test_reservations_conflict_expire_and_release,
    test_workflow_completion_clears_exactly_its_own_records,
)

from memrouter import Router
from memrouter.core.errors import BackendUnavailable, MemoryRouterError
from memrouter.team import ManualClock, Team
from memrouter.testing.postgres_server import running_postgres, stop
from memrouter.testing.servers import free_port
from memrouter.testing.team_workload import claim_until_empty, increment_counter, run_processes

__all__ = [
    "test_an_agent_says_where_it_works_and_its_handoffs_carry_that",
    "test_an_expired_lease_returns_the_task_and_counts_an_attempt", "test_bad_input_is_refused_and_changes_nothing",
    "test_claims_follow_priority_dependencies_and_capabilities", "test_compare_and_set_and_ttl",
    "test_failures_retry_then_park_and_stale_agents_lose_their_leases", "test_handoff_state_machine",
    "test_ids_are_random_128_bit", "test_renewing_a_lease_keeps_the_claim",
    "test_reservations_conflict_expire_and_release", "test_workflow_completion_clears_exactly_its_own_records",
    "test_claim_a_named_task", "test_handoff_get_shows_any_state",
]  # fmt: skip


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=("sqlite", "postgres"))
def team(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[Team]:
    """The imported tests' ``team``, once over each store (the audit log stays in the folder either way)."""
    database = request.getfixturevalue("database_url") if request.param == "postgres" else None
    with Team.open(tmp_path / ".memrouter", clock=clock, database=database, project="project") as opened:
        assert ("postgresql://" in opened.location) == (database is not None)
        yield opened


def test_eight_processes_drain_a_queue_exactly_once(tmp_path: Path, database_url: str) -> None:
    options = {"database": database_url, "project": "queue"}
    with Team.open(tmp_path, **options) as team:
        added = {team.task_add(f"task {n}", {"n": n}).id for n in range(400)}
    reports = run_processes(claim_until_empty, [(str(tmp_path), f"agent-{n}") for n in range(8)], tmp_path,
                            options=options)  # fmt: skip
    completed = [task for report in reports for task in report["completed"]]
    assert [error for report in reports for error in report["errors"]] == []
    assert len(completed) == len(set(completed)) == 400 and set(completed) == added
    assert sum(1 for report in reports if report["completed"]) > 1  # the claims really raced
    with Team.open(tmp_path, **options) as team:
        assert team.get_team_state().tasks["done"] == 400
        assert all(task.attempts == 1 for task in team.task_list(["done"]))
    assert not (tmp_path / "team.sqlite").exists()


def _claim(team: Team, agent: str, barrier: threading.Barrier, won: list[str], errors: list[Exception]) -> None:
    barrier.wait()
    try:
        got = team.task_claim(agent)
    except MemoryRouterError as exc:
        errors.append(exc)
        return
    if got is not None:
        won.append(agent)


def test_threads_racing_for_one_task_exactly_one_wins(tmp_path: Path, database_url: str) -> None:
    """Sixteen threads, each its own connection, claim at once: one task each round, one winner each round."""
    teams = [Team.open(tmp_path, database=database_url, project="race") for _ in range(4)]
    try:
        for n in range(16):
            teams[0].register(f"agent-{n}", ttl=3600)
        for _round in range(10):
            task = teams[0].task_add("the one task")
            barrier = threading.Barrier(16)
            won: list[str] = []
            errors: list[Exception] = []
            threads = [
                threading.Thread(target=_claim, args=(teams[n % 4], f"agent-{n}", barrier, won, errors))
                for n in range(16)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert errors == [] and len(won) == 1
            claimed = teams[1].task_get(task.id)
            assert claimed.state == "claimed" and claimed.agent == won[0] and claimed.attempts == 1
            teams[2].task_complete(task.id, agent_id=won[0])
    finally:
        for team in teams:
            team.close()


def test_compare_and_set_never_loses_an_increment(tmp_path: Path, database_url: str) -> None:
    options = {"database": database_url, "project": "counter"}
    with Team.open(tmp_path, **options) as team:
        team.team_set("counter", 0)
    reports = run_processes(increment_counter, [(str(tmp_path), "counter", 100)] * 4, tmp_path, options=options)
    assert [error for report in reports for error in report["errors"]] == []
    with Team.open(tmp_path, **options) as team:
        final = team.team_get("counter")
    assert final.value == 400 and final.version == 401


def test_postgres_down_is_a_clear_error_and_nothing_local(tmp_path: Path) -> None:
    with running_postgres() as server:
        team = Team.open(tmp_path, database=server.url, project="p")
        team.register("alice")
        stop(server)
        for call in (lambda: team.register("bob"), lambda: team.task_claim("alice"), lambda: team.team_get("k")):
            with pytest.raises(BackendUnavailable, match="team channel is in PostgreSQL.*no local team.sqlite"):
                call()
        team.close()
        with pytest.raises(BackendUnavailable, match="team channel is in PostgreSQL"):
            Team.open(tmp_path, database=server.url, project="p")
    assert not (tmp_path / "team.sqlite").exists()


def test_the_cli_says_the_database_is_down_and_exits_3(memories: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMROUTER_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/x",
           "MEMROUTER_PROJECT": "p"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(tmp_path / "idx"),
                           "team", "register", "alice"], capture_output=True, text=True, env=env)  # fmt: skip
    assert done.returncode == 3 and "team channel is in PostgreSQL" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "idx" / "team.sqlite").exists()


def test_the_router_team_follows_the_index_url(memories: Path, tmp_path: Path, database_url: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Two machines (two index folders) of one repository share one channel; the key is the project's."""
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "shared")
    with Router.open(root=memories, index_dir=tmp_path / "one") as one, \
            Router.open(root=memories, index_dir=tmp_path / "two") as two:  # fmt: skip
        one.team().register("alice")
        task = one.team().task_add("shared work")
        claimed = two.team().task_claim("alice")
        assert claimed is not None and claimed.id == task.id
        assert "postgresql://" in two.team().location
    assert not (tmp_path / "one" / "team.sqlite").exists() and not (tmp_path / "two" / "team.sqlite").exists()
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT project, count(*) FROM team_tasks GROUP BY project").fetchall() == [("shared", 1)]


@pytest.mark.anyio
async def test_the_mcp_team_tools_use_the_database(memories: Path, tmp_path: Path, database_url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from mcp import Client
    from mcp_types import Implementation

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService

    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "mcp")
    with Router.open(root=memories, index_dir=tmp_path / "index", watch=False) as router:
        server = create_server(MemoryService(router), tools="all")
        async with Client(server, client_info=Implementation(name="alice", version="1")) as alice:
            registered = await alice.call_tool("team_register", {"capabilities": ["python"]})
            assert not registered.is_error, registered.content[0].text
            added = await alice.call_tool("task_add", {"title": "port the parser"})
            assert not added.is_error, added.content[0].text
        assert router.team().task_list()[0].title == "port the parser"
    assert not (tmp_path / "index" / "team.sqlite").exists()
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT project, id FROM team_agents").fetchall() == [("mcp", "alice")]


def test_a_database_made_before_the_team_tables_is_migrated_on_open(tmp_path: Path, database_url: str) -> None:
    """A database an older memrouter made (index migrations only) gets ``0003_team_channel`` when a team opens it."""
    from memrouter.index.postgres.schema import MIGRATIONS

    older = [(name, sql) for name, sql in MIGRATIONS if name < "0003"]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            b"CREATE TABLE memrouter_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for name, sql in older:
            conn.execute(sql.encode())
            conn.execute("INSERT INTO memrouter_migrations (name) VALUES (%s)", (name,))
    with Team.open(tmp_path, database=database_url, project="old") as team:
        team.register("alice")
        assert team.team_set("k", 1).version == 1
    with psycopg.connect(database_url) as conn:
        applied = [row[0] for row in conn.execute("SELECT name FROM memrouter_migrations ORDER BY name")]
    assert applied == [name for name, _ in MIGRATIONS] and "0003_team_channel" in applied


def test_the_janitor_goes_on_when_the_team_database_is_down(memories: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMROUTER_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/x",
           "MEMROUTER_PROJECT": "p"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(tmp_path / "idx"),
                           "janitor", "--format", "json"], capture_output=True, text=True, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["memories"] > 0  # the rest of the run went on
    assert "team channel is in PostgreSQL" in report["team"]["unavailable"]
    assert any(notice.startswith("idle team workflows not checked") for notice in report["notices"])
