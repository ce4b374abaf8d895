"""PostgreSQL down: search and list use the local index with a warning, writes land in the files, rows catch up."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from helpers import commit, git_project, write

from memrouter import Router
from memrouter.testing.postgres_server import running_postgres, start_again, stop


def names_in_database(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM memories WHERE project = 'project'")}


def test_searches_fall_back_while_postgres_is_down(
    memories: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memrouter.index.fallback.RETRY_AFTER", 0.0)  # try the database again on every search
    with running_postgres() as server:
        monkeypatch.setenv("MEMROUTER_DATABASE_URL", server.url)
        monkeypatch.setenv("MEMROUTER_PROJECT", "project")
        with Router.open(root=memories, index_dir=tmp_path / "idx") as router:
            before = [hit.name for hit in router.search("flaky tests", mode="lexical")]
            assert before and not router.warnings
            assert router.status()["database"] == {
                "url": server.url,
                "project": "project",
                "available": True,
                "memories": len(router.list()),
            }
            assert names_in_database(server.url) == {summary.name for summary in router.list()}

            stop(server)
            down = router.status()
            assert down["database"]["available"] is False and "PostgreSQL" in down["database"]["error"]
            assert any("PostgreSQL index unavailable" in warning for warning in down["warnings"])
            assert [hit.name for hit in router.search("flaky tests", mode="lexical")] == before
            assert any("PostgreSQL index unavailable" in warning for warning in router.warnings)
            router.save("# Flaky runbook\n\nflaky tests: rerun once", name="ci/flaky-runbook")  # lands in the file
            assert (memories / "ci" / "flaky-runbook.md").is_file()
            assert "ci/flaky-runbook" in {hit.name for hit in router.search("flaky runbook", mode="lexical")}
            assert "ci/flaky-runbook" in {summary.name for summary in router.list("ci/")}

            back = start_again(server)
            try:
                router.workspace.index.file.warnings.clear()
                assert "ci/flaky-runbook" in {hit.name for hit in router.search("flaky runbook", mode="lexical")}
                assert not router.warnings  # answered by PostgreSQL again
                assert "ci/flaky-runbook" in names_in_database(back.url)
            finally:
                stop(back)


def test_a_search_as_of_a_past_commit_leaves_the_shared_rows_alone(tmp_path: Path, database_url: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "project")
    project, root = git_project(tmp_path)
    write(root, "decisions/datastore", "# Datastore\n\nWe use MySQL.\n")
    commit(project, "mysql", "2026-01-10T10:00:00Z")
    write(root, "decisions/datastore", "# Datastore\n\nWe use PostgreSQL 16.\n")
    write(root, "decisions/queue", "# Queue\n\nWe use Kafka.\n")
    commit(project, "postgres", "2026-03-10T10:00:00Z")
    with Router.open(root=root, index_dir=tmp_path / "idx") as router:
        assert [hit.name for hit in router.search("datastore", mode="lexical")] == ["decisions/datastore"]
        now = names_in_database(database_url)
        past = router.search("datastore mysql", mode="lexical", as_of="2026-02-01")
        assert "MySQL" in past[0].snippet
        assert names_in_database(database_url) == now == {"decisions/datastore", "decisions/queue"}
        assert "PostgreSQL 16" in router.search("datastore", mode="lexical")[0].snippet


def test_the_wait_after_a_failure_does_not_grow_with_each_search(
    memories: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", f"postgresql://postgres@127.0.0.1:{port}/postgres")
    monkeypatch.setenv("MEMROUTER_PROJECT", "project")
    with Router.open(root=memories, index_dir=tmp_path / "idx") as router:
        assert router.search("flaky tests", mode="lexical")  # the local index answers
        search = router.workspace.reader
        retry_at = search._retry_at
        assert retry_at > 0
        for _ in range(3):
            assert router.search("flaky tests", mode="lexical")
        assert search._retry_at == retry_at  # tried again once the first wait ends, not pushed back
