"""The web UI's git history, read once per HEAD (``memrouter.ui.gitview``), in a real git repository."""

from __future__ import annotations

from pathlib import Path

from helpers import commit, git, git_project, write
from starlette.testclient import TestClient
from uiproject import ui_project

from memrouter import Router
from memrouter.ui.app import create_app
from memrouter.ui.gitview import GitView


def test_git_runs_again_only_when_head_moves(tmp_path: Path) -> None:
    project, root, first = ui_project(tmp_path)
    view = GitView(root)
    slider, commits = view.slider_commits(), view.memory_commits()
    assert [c["commit"] for c in slider][0] == first[:7] and len(slider) == 2
    assert [c["subject"] for c in commits] == ["move to PostgreSQL", "first decisions"]
    assert ("created", "adr/adr-001") in commits[0]["changed"]
    assert view.reads == 2
    for _ in range(3):
        assert view.slider_commits() == slider and view.memory_commits() == commits
    assert view.reads == 2  # HEAD did not move: no git run
    write(root, "notes/later", "# Later\n\nAdded after the UI started.\n")
    commit(project, "a later note", "2026-03-01T10:00:00+00:00")
    assert view.slider_commits()[-1]["label"].endswith("a later note")
    assert view.memory_commits()[0]["changed"] == [("created", "notes/later")]
    assert view.reads == 4
    git(project, "checkout", "-q", first)  # a detached HEAD moves too
    assert len(view.slider_commits()) == 1 and view.reads == 5


def test_outside_git_and_before_the_first_commit_there_is_no_history(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert GitView(plain).slider_commits() == [] and GitView(plain).memory_commits() == []
    project, root = git_project(tmp_path / "fresh")
    view = GitView(root)
    assert view.slider_commits() == [] and view.reads == 0
    write(root, "a", "# A\n\nFirst.\n")
    commit(project, "first", "2026-01-01T10:00:00+00:00")
    assert [c["changed"] for c in view.memory_commits()] == [[("created", "a")]]


def test_the_search_page_shows_a_commit_made_after_it_was_first_read(tmp_path: Path) -> None:
    project, root, _ = ui_project(tmp_path)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        client = TestClient(create_app(router), base_url="http://127.0.0.1:8766")
        assert "a later note" not in client.get("/").text
        write(root, "notes/later", "# Later\n\nAdded after the UI started.\n")
        commit(project, "a later note", "2026-03-01T10:00:00+00:00")
        assert "a later note" in client.get("/").text
        assert "a later note" in client.get("/timeline").text
