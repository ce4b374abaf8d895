"""Ten projects in one database: no operation for one project returns or changes another's rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres.support import assert_no_fallback

from memrouter import Router
from memrouter.config import Config
from memrouter.model import Filters
from memrouter.pgindex.connect import Database
from memrouter.pgindex.scope import ProjectScope
from memrouter.pgindex.store import PgIndex

PROJECTS = 10
WORDS = ("deploy", "database", "flaky", "cache", "review", "incident", "common", "rollback")


def project_files(number: int) -> dict[str, str]:
    """Distinct content per project, with names every project shares (``notes/common``)."""
    return {
        "notes/common": f"# Common notes\n\ncommon deploy database notes of project {number} marker{number}\n",
        f"only/p{number}": f"# Only in {number}\n\nflaky cache marker{number}\n",
        "adr/decision": f"---\ntags: [review]\n---\n# Decision {number}\n\nrollback incident database marker{number}\n",
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
        config = dataclasses.replace(Config.load(root=root, index_dir=tmp_path / f"idx{number}"), embedder="hash")
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
            assert store.count() == 3
            lexical = store.lexical(["marker" + str(other) for other in range(PROJECTS)], everything, 50)
            assert {name for name, _ in lexical} == names  # only its own marker matches
            vector = projects[number]._index.dense.embed_query("common deploy database").tolist()
            dense = store.dense(vector, projects[number]._index.dense.model_id, everything, 50)
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
