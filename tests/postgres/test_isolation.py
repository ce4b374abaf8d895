"""Ten projects in one database: no operation for one project returns or changes another's rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from helpers import write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres.support import assert_no_fallback

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.errors import Conflict, NotFound
from memrouter.core.model import Filters
from memrouter.core.records import replace
from memrouter.index.postgres.connect import Database
from memrouter.index.postgres.scope import ProjectScope
from memrouter.index.postgres.store import PgIndex
from memrouter.team import Team

PROJECTS = 10
WORDS = ("deploy", "database", "flaky", "cache", "review", "incident", "common", "rollback")

# psycopg_pool's worker threads draw jitter from the global ``random`` while hypothesis draws an example,
# which hypothesis takes for a strategy using ``random``: not this test's strategies.
POOL_THREADS_USE_RANDOM = pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies:hypothesis.errors.HypothesisDeprecationWarning"
)


def project_files(number: int) -> dict[str, str]:
    """Distinct content per project, with names every project shares (``notes/common``)."""
    return {
        "notes/common": f"# Common notes\n\ncommon deploy database notes of project {number} marker{number}\n"
        f"see [[adr/decision]] and ADR-{100 + number}\n",
        f"only/p{number}": f"# Only in {number}\n\nflaky cache marker{number}\n",
        "adr/decision": f"---\ntags: [review]\n---\n# Decision {number}\n\nrollback incident database marker{number}\n",
        "notes/overview": f"# Overview\n\nproject {number}: the deploy notes marker{number}\n",  # lends to notes/
    }


@pytest.fixture
def projects(tmp_path: Path, database_url: str) -> Iterator[list[Router]]:
    """Ten routers, each its own repository and project key, all on one database (hashing embedder)."""
    routers = []
    for number in range(PROJECTS):
        root = tmp_path / f"repo{number}" / ".serena" / "memories"
        for name, text in project_files(number).items():
            write(root, name, text)
        (root.parent.parent / "memrouter.toml").write_text(
            f'[index]\nurl = "{database_url}"\nproject = "p{number}"\n', encoding="utf-8"
        )
        config = replace(Config.load(root=root, index_dir=tmp_path / f"idx{number}"), embedder="hash")
        router = Router(config)
        router.refresh(embed=True)
        router.publish()
        routers.append(router)
    yield routers
    for router in routers:
        assert_no_fallback(router)
        router.close()


def file_hashes(router: Router) -> dict[str, str]:
    """What this project's files hold: name -> content hash (read from the files, not the index)."""
    return {name: router.store.read(name).hash for name, *_ in router.store.stat_files()}


operation = st.one_of(
    st.tuples(st.just("search"), st.sampled_from(("lexical", "semantic", "hybrid")), st.sampled_from(WORDS)),
    st.tuples(st.just("list"), st.sampled_from((None, "notes/", "only/", "adr/")), st.sampled_from((None, "review"))),
    st.tuples(st.just("save"), st.integers(0, 3), st.sampled_from(WORDS)),
    st.tuples(st.just("delete"), st.integers(0, 3), st.just("")),
)


@POOL_THREADS_USE_RANDOM
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, PROJECTS - 1), operation), min_size=1, max_size=6))
def test_random_operations_never_cross_projects(projects: list[Router], steps: list[tuple[int, tuple]]) -> None:  # type: ignore[type-arg]
    for number, (kind, first, second) in steps:
        router = projects[number]
        if kind == "save":
            router.save(f"# Extra {first}\n\n{second} marker{number} extra", name=f"extra/e{first}")
        elif kind == "delete" and router.store.exists(f"extra/e{first}"):
            router.delete(f"extra/e{first}")
        own = file_hashes(router)
        if kind == "search":
            hits = router.search(f"{second} marker{number}", mode=first, limit=20)
            assert hits
            assert all(own.get(hit.name) == hit.hash for hit in hits), (number, hits)
        listed = router.list(first if kind == "list" else None, tags=second if kind == "list" else None)
        assert all(own.get(summary.name) == summary.hash for summary in listed)
        if kind != "list":
            assert {summary.name: summary.hash for summary in listed} == own


def test_every_store_operation_is_scoped(projects: list[Router], database_url: str) -> None:
    """Each public read of ``PgIndex`` over one project sees only that project's rows."""
    database = Database(database_url)
    try:
        for number in range(PROJECTS):
            store = PgIndex(database, f"p{number}")
            everything = Filters()
            names = {summary.name for summary in store.summaries(everything)}
            assert names == set(project_files(number))
            assert store.count() == 4
            markers = ["marker" + str(other) for other in range(PROJECTS)]
            vector = projects[number].workspace.index.dense.embed_query("common deploy database").tolist()
            for share in (0.0, 0.9):  # folders lend within the project only
                lexical = store.lexical(markers, everything, 50, share=share)
                assert {name for name, _ in lexical} == names  # only its own marker matches
                dense = store.dense(
                    vector, projects[number].workspace.index.dense.model_id, everything, 50, share=share
                )
                assert {hit.name for hit in dense} <= names and dense
            hashes = {s.hash for s in store.summaries(everything)}
            assert hashes == set(file_hashes(projects[number]).values())
        assert PgIndex(database, "no-such-project").summaries(Filters()) == []
    finally:
        database.close()


def test_a_statement_naming_a_table_directly_is_refused(database_url: str) -> None:
    database = Database(database_url)
    try:
        scope = ProjectScope(database, "p0")
        for sql in (
            "SELECT * FROM memories",
            "select name from  postings",
            "SELECT 1 FROM {memories} m JOIN chunks c ON true",
        ):
            with pytest.raises(ValueError, match="unscoped"):
                scope.rows(sql)
    finally:
        database.close()


AGENTS = ("alice", "bob", "carol")  # the same agent ids and keys in every project
KEYS = ("plan", "owner/state")

team_operation = st.tuples(
    st.sampled_from(("register", "add", "claim", "complete", "set", "reserve", "handoff", "accept", "graph")),
    st.sampled_from(AGENTS),
    st.sampled_from(KEYS),
)


def _team_step(team: Team, number: int, kind: str, agent: str, key: str, router: Router) -> None:
    """One operation of project ``number``; everything it writes carries the project's number."""
    other = AGENTS[(AGENTS.index(agent) + 1) % len(AGENTS)]
    try:
        if kind == "register":
            team.register(agent, [f"p{number}"])
        elif kind == "add":
            team.task_add(f"p{number} task", {"project": number}, agent_id=agent)
        elif kind == "claim":
            team.task_claim(agent)
        elif kind == "complete":
            for task in team.task_list(["claimed"]):
                team.task_complete(task.id, {"project": number})
        elif kind == "set":
            team.team_set(key, {"project": number})
        elif kind == "reserve":
            team.reserve(agent, [f"p{number}/**"])
        elif kind == "handoff":
            team.handoff(agent, other, {"project": number})
        elif kind == "accept":
            for handoff in team.pending_handoffs(agent):
                team.handoff_accept(handoff.id, agent)
        else:
            related = router.related("notes/common", depth=2)
            own = set(project_files(number))
            assert {r.name for r in related if r.kind == "memory"} <= own and related
            entity = router.get_entity(f"ADR-{100 + number}")
            assert entity.relations and {relation.memory for relation in entity.relations} == {"notes/common"}
            with pytest.raises(NotFound):
                router.get_entity(f"ADR-{100 + (number + 1) % PROJECTS}")
    except (NotFound, Conflict):
        pass  # an agent not registered yet, a handoff to itself's neighbour not live: refused, nothing written


def _team_rows(url: str) -> dict[str, dict[str, int]]:
    """Per project, how many rows each team table holds, counted in the base tables."""
    counts: dict[str, dict[str, int]] = {}
    with psycopg.connect(url) as conn:
        for table in ("agents", "tasks", "variables", "reservations", "handoffs"):
            for project, count in conn.execute(f"SELECT project, count(*) FROM team_{table} GROUP BY project".encode()):
                counts.setdefault(project, {})[table] = count
    return counts


def _assert_own(team: Team, number: int, rows: dict[str, int]) -> None:
    """Every record the project's channel shows is the project's own, and it shows all of them."""
    state = team.get_team_state()
    assert all(a.agent.capabilities == (f"p{number}",) for a in state.agents)
    tasks = team.task_list()
    assert all(t.title == f"p{number} task" and t.payload == {"project": number} for t in tasks)
    assert all(t.result in (None, {"project": number}) for t in tasks)
    variables = team.team_list()
    assert all(v.value == {"project": number} for v in variables)
    reservations = team.reservations()
    assert all(r.paths == (f"p{number}/**",) for r in reservations)
    handoffs = [h for agent in AGENTS for h in team.pending_handoffs(agent)]
    assert all(h.context == {"project": number} for h in handoffs)
    assert (len(state.agents), len(tasks), len(variables), len(reservations)) == (
        rows.get("agents", 0), rows.get("tasks", 0), rows.get("variables", 0), rows.get("reservations", 0),
    )  # fmt: skip


@pytest.fixture
def teams(projects: list[Router], database_url: str, tmp_path: Path) -> Iterator[list[Team]]:
    """Each project's team channel in the one database (``Router.team``: ``[index] url`` and ``project``)."""
    opened = [router.team() for router in projects]
    assert all(f"(project 'p{number}')" in team.location for number, team in enumerate(opened))
    yield opened


@POOL_THREADS_USE_RANDOM
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, PROJECTS - 1), team_operation), min_size=1, max_size=12))
def test_random_team_and_graph_operations_never_cross_projects(
    projects: list[Router], teams: list[Team], database_url: str, steps: list[tuple[int, tuple[str, str, str]]]
) -> None:
    for number, (kind, agent, key) in steps:
        _team_step(teams[number], number, kind, agent, key, projects[number])
        rows = _team_rows(database_url)
        assert set(rows) <= {f"p{n}" for n in range(PROJECTS)}
        for shown in {number, (number + 3) % PROJECTS}:
            _assert_own(teams[shown], shown, rows.get(f"p{shown}", {}))
