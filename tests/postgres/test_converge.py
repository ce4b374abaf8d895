"""Two machines indexing the same repository converge to the same rows (the files are the truth)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import SAMPLE, write

from memrouter import Router

MEMORY_COLUMNS = "name, path, hash, size, title, tags, channel, kind, scope, status, source, author, confidence, " \
    "verified_by, created, updated, valid_from, valid_until, supersedes, superseded_by, expires, anchors, extra, " \
    "problems, body, length, vectors, graph_keys, graph_edges"  # fmt: skip


def rows(url: str, project: str) -> dict[str, Any]:
    """Everything the database holds for ``project``, keyed by memory name (row ids aside)."""
    with psycopg.connect(url) as conn:
        memories = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE project = %s ORDER BY name", (project,)
        ).fetchall()
        postings = conn.execute(
            "SELECT m.name, p.term, p.tf FROM postings p JOIN memories m ON m.id = p.memory_id "
            "WHERE p.project = %s ORDER BY 1, 2",
            (project,),
        ).fetchall()
        chunks = conn.execute(
            "SELECT m.name, c.model, c.ordinal, c.start, c.heading, c.embedding::text FROM chunks c "
            "JOIN memories m ON m.id = c.memory_id WHERE c.project = %s ORDER BY 1, 2, 3",
            (project,),
        ).fetchall()
    return {"memories": memories, "postings": postings, "chunks": chunks}


KEY = "example.com/org/repo"


def index(repo: Path, url: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "index", "--database", url, "--format", "json"],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout)["database"])


def make_repo(base: Path) -> Path:
    repo = base / "repo"
    for name, text in SAMPLE.items():
        write(repo / ".serena" / "memories", name, text)
    (repo / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n', encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    # Every clone has the same remote, so the same key (``memrouter.config.projectkey``): two machines share rows.
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@example.com:org/repo.git"], check=True)
    return repo


def test_two_copies_indexing_the_same_files_leave_the_same_rows(tmp_path: Path, database_url: str) -> None:
    first = make_repo(tmp_path / "machine-a")
    second = tmp_path / "machine-b" / "repo"
    shutil.copytree(first, second)
    pushed = index(first, database_url)
    assert pushed == {"project": KEY, "added": len(SAMPLE), "updated": 0, "removed": 0, "unchanged": 0}
    after_first = rows(database_url, KEY)
    assert len(after_first["memories"]) == len(SAMPLE) and after_first["postings"] and after_first["chunks"]
    assert index(second, database_url)["unchanged"] == len(SAMPLE)  # nothing to change: same files, same rows
    assert rows(database_url, KEY) == after_first

    # One machine edits, removes and adds; the other pulls the same change later.
    for repo in (first, second):
        memories = repo / ".serena" / "memories"
        write(memories, "ci/flaky-tests", "# Flaky tests in CI\n\nRetry twice now.\n")
        (memories / "plain-no-heading.md").unlink()
        write(memories, "new/runbook", "# Runbook\n\nRestart the worker.\n")
        pushed = index(repo, database_url)
        if repo == first:
            assert (pushed["added"], pushed["updated"], pushed["removed"]) == (1, 1, 1)
            changed = rows(database_url, KEY)
        else:
            assert (pushed["added"], pushed["updated"], pushed["removed"]) == (0, 0, 0)
            assert rows(database_url, KEY) == changed
    assert changed != after_first


def test_pushes_racing_from_two_machines_converge(tmp_path: Path, database_url: str) -> None:
    first = make_repo(tmp_path / "a")
    second = tmp_path / "b" / "repo"
    shutil.copytree(first, second)
    routers = [
        Router.open(root=repo / ".serena" / "memories", index_dir=repo / ".memrouter") for repo in (first, second)
    ]
    try:
        for router in routers:
            router.refresh(embed=True)
        results: list[dict[str, Any]] = []
        threads = [
            threading.Thread(target=lambda r=router: results.append(r.publish(database_url))) for router in routers
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(result["added"] for result in results) == [0, len(SAMPLE)]  # one wrote, the other found it done
        assert len(rows(database_url, KEY)["memories"]) == len(SAMPLE)
    finally:
        for router in routers:
            router.close()


def test_ten_projects_pushing_at_once_all_land(tmp_path: Path, database_url: str) -> None:
    """Different projects' first pushes (each making tables' rows and the vectors' index) do not collide."""
    routers = []
    for number in range(10):
        memories = make_repo(tmp_path / f"r{number}") / ".serena" / "memories"
        write(memories, "own/note", f"# Own note\n\nproject {number}\n")
        (memories.parent.parent / "memrouter.toml").write_text(
            f'[embed]\nmodel = "hash"\n[index]\nproject = "p{number}"\n', encoding="utf-8"
        )
        router = Router.open(root=memories, index_dir=tmp_path / f"idx{number}")
        router.refresh(embed=True)
        routers.append(router)
    errors: list[BaseException] = []

    def publish(router: Router) -> None:
        try:
            router.publish(database_url)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=publish, args=(router,)) for router in routers]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for router in routers:
            router.close()
    assert errors == []
    for number in range(10):
        assert len(rows(database_url, f"p{number}")["memories"]) == len(SAMPLE) + 1


def test_a_push_copies_one_state_of_a_local_index_another_process_writes_meanwhile(
    memories: Path, tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memrouter.index.postgres import mirror

    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "project")
    write(memories, "notes/doomed", "# Doomed\n\nwombat ledger\n")
    index_dir = tmp_path / "idx"
    with Router.open(root=memories, index_dir=index_dir, watch=False) as other:
        other.refresh()  # the local index holds every memory; nothing is pushed yet
    original = mirror._memory_rows

    def read_after_a_delete(*args: Any) -> Any:
        # Another writer of the same local index deletes a memory the push is about to copy.
        with Router.open(root=memories, index_dir=index_dir, watch=False) as other:
            other.delete("notes/doomed")
        return original(*args)

    monkeypatch.setattr(mirror, "_memory_rows", read_after_a_delete)
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
        router.search("wombat ledger", mode="lexical")  # the push copies the state it began with, whole
        assert "notes/doomed" in {row[0] for row in rows(database_url, "project")["memories"]}
        monkeypatch.setattr(mirror, "_memory_rows", original)
        assert router.search("wombat ledger", mode="lexical") == []  # the delete, copied by the next push
        assert not router.warnings
        assert "notes/doomed" not in {row[0] for row in rows(database_url, "project")["memories"]}


def test_a_push_that_waited_never_takes_the_rows_back_to_an_older_state(
    memories: Path, tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memrouter.index.postgres.scope import ProjectScope

    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "project")
    index_dir = tmp_path / "idx"
    with Router.open(root=memories, index_dir=index_dir, watch=False) as other:
        other.refresh()
    original = ProjectScope.vector_indexes
    overtaken: list[str] = []

    def overtaken_by_a_later_push(self: ProjectScope, dimensions: Any) -> None:
        if not overtaken:  # the first push has read its state; another process saves and pushes first
            overtaken.append("saved")
            with Router.open(root=memories, index_dir=index_dir, watch=False) as later:
                later.save("# Late note\n\nnumbat ledger\n", "notes/late")
                assert [hit.name for hit in later.search("numbat ledger", mode="lexical")] == ["notes/late"]
        original(self, dimensions)

    monkeypatch.setattr(ProjectScope, "vector_indexes", overtaken_by_a_later_push)
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
        router.search("flaky", mode="lexical")  # its push read the state before the save
        assert overtaken
        assert "notes/late" in {row[0] for row in rows(database_url, "project")["memories"]}
        assert [hit.name for hit in router.search("numbat ledger", mode="lexical")] == ["notes/late"]
        assert not router.warnings
