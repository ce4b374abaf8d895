"""A memory's committed versions, and a memory as it was at a date or commit (git record time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import commit

from memrouter import Router
from memrouter.core.errors import InvalidInput, NotFound


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A decision that changed three times, then was renamed, with controlled commit dates."""
    project = tmp_path / "project"
    root = project / ".serena" / "memories"
    (root / "decisions").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    (project / ".gitignore").write_text(".memrouter/\n")
    for version, (text, date) in enumerate(
        [
            ("# Database\n\nWe use MySQL.\n", "2026-01-05T10:00:00+00:00"),
            ("# Database\n\nWe use PostgreSQL 15.\n", "2026-02-10T10:00:00+00:00"),
            ("# Database\n\nWe use PostgreSQL 16.\n", "2026-03-20T10:00:00+00:00"),
        ],
        1,
    ):
        (root / "decisions" / "database.md").write_text(text)
        commit(project, f"database decision v{version}", date)
    (root / "decisions" / "database.md").rename(root / "decisions" / "datastore.md")
    commit(project, "rename the decision", "2026-04-01T10:00:00+00:00")
    return project


def test_history_lists_every_version_across_a_rename(project: Path) -> None:
    with Router.open(root=project / ".serena" / "memories", watch=False) as router:
        found = router.history("decisions/datastore")
    assert [v.subject for v in found] == [
        "rename the decision", "database decision v3", "database decision v2", "database decision v1",
    ]  # fmt: skip
    assert [v.change for v in found] == ["R", "M", "M", "A"]
    assert found[1].path == ".serena/memories/decisions/database.md" and found[0].date.startswith("2026-04-01")


def test_get_as_of_a_date_or_a_commit(project: Path) -> None:
    with Router.open(root=project / ".serena" / "memories", watch=False) as router:
        assert "MySQL" in router.get("decisions/datastore", as_of="2026-01-31").text
        assert "PostgreSQL 15" in router.get("decisions/datastore", as_of="2026-02-10").text
        assert "PostgreSQL 16" in router.get("decisions/datastore", as_of="2026-03-25T12:00").text
        v2 = router.history("decisions/datastore")[2]
        memory, version = router.get_as_of("decisions/datastore", v2.short)
        assert "PostgreSQL 15" in memory.text and version.commit == v2.commit
        with pytest.raises(NotFound):
            router.get("decisions/datastore", as_of="2025-12-31")
        for bad in ("--output=/tmp/x", "yesterday; rm -rf /", "not-a-commit-or-date", ""):
            with pytest.raises(InvalidInput):
                router.get("decisions/datastore", as_of=bad)


def test_cli_history_and_get_as_of(project: Path) -> None:
    memrouter = [sys.executable, "-m", "memrouter"]
    done = subprocess.run([*memrouter, "history", "decisions/datastore", "--format", "json"], cwd=project,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert len(json.loads(done.stdout)["versions"]) == 4
    old = subprocess.run([*memrouter, "get", "decisions/datastore", "--as-of", "2026-01-06"], cwd=project,
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert old.stdout == "# Database\n\nWe use MySQL.\n"
    bad = subprocess.run([*memrouter, "get", "decisions/datastore", "--as-of", "-v"], cwd=project,
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_search_as_of_a_date_sees_the_memories_then(project: Path) -> None:
    root = project / ".serena" / "memories"
    (root / "later.md").write_text("# Later\n\nPostgreSQL tuning notes, not committed\n")
    with Router.open(root=root, watch=False) as router:
        now = [hit.name for hit in router.search("postgresql", mode="lexical")]
        assert set(now) == {"decisions/datastore", "later"}
        january = router.search("mysql", mode="lexical", as_of="2026-01-31")
        assert [hit.name for hit in january] == ["decisions/database"]  # its name then
        assert router.search("postgresql", mode="lexical", as_of="2026-01-31") == []
        march = router.search("postgresql 16", mode="lexical", as_of="2026-03-25")
        assert [hit.name for hit in march] == ["decisions/database"]
        again = router.search("postgresql 16", mode="lexical", as_of="2026-03-25")  # the snapshot is reused
        assert [hit.name for hit in again] == ["decisions/database"]
        with pytest.raises(NotFound):
            router.search("mysql", as_of="2025-06-01")
    assert (root / "later.md").exists() and "PostgreSQL 16" in (root / "decisions" / "datastore.md").read_text()


def test_cli_search_as_of(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "search", "mysql", "--as-of", "2026-01-31", "--format", "json"],
        cwd=project, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert [hit["name"] for hit in json.loads(done.stdout)["results"]] == ["decisions/database"]


def test_get_as_of_a_branch_finds_a_memory_only_that_branch_has(project: Path) -> None:
    """``get --as-of feature/x`` and ``search --as-of feature/x`` agree: the branch's history is read, not HEAD's."""
    root = project / ".serena" / "memories"
    subprocess.run(["git", "checkout", "-q", "-b", "feature/refunds"], cwd=project, check=True)
    (root / "decisions" / "refunds.md").write_text("# Refunds\n\nRefunds go back to the original card.\n")
    commit(project, "refund decision", "2026-04-10T10:00:00+00:00")
    subprocess.run(["git", "checkout", "-q", "main"], cwd=project, check=True)
    with Router.open(root=root, watch=False) as router:
        assert [hit.name for hit in router.search("refunds card", as_of="feature/refunds", mode="lexical")] == [
            "decisions/refunds"
        ]
        memory, version = router.get_as_of("decisions/refunds", "feature/refunds")
        assert "original card" in memory.text and version.subject == "refund decision"
        assert "original card" in router.get("decisions/refunds", as_of="feature/refunds").text
        with pytest.raises(NotFound, match="did not exist"):
            router.get("decisions/refunds", as_of="main")
        assert "PostgreSQL 16" in router.get("decisions/datastore", as_of="feature/refunds").text
