"""GitSession against a real git repository in a temporary folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memrouter.core.errors import InvalidInput
from memrouter.repo.git import GitError, GitSession

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("print('v1')\n")
    (repo / "-dash.txt").write_text("a file whose name looks like an option\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Initial commit: app and docs")
    (repo / "app.py").write_text("print('v2')\n")
    git(repo, "commit", "-q", "-am", "Fix login timeout (issue #12)")
    git(repo, "mv", "app.py", "main.py")
    git(repo, "commit", "-q", "-m", "Rename app to main")
    return repo


def test_branch_commits_and_detached_head(repo: Path) -> None:
    session = GitSession(repo)
    branch = session.get_current_branch()
    assert branch["branch"] == "main" and branch["detached"] is False
    assert branch["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert branch["changed_files"] == 0
    commits = session.get_recent_commits(2)["commits"]
    assert [c["subject"] for c in commits] == ["Rename app to main", "Fix login timeout (issue #12)"]
    assert set(commits[0]) == {"commit", "short", "author", "date", "subject"} and commits[0]["author"] == "Ada"
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    detached = GitSession(repo).get_current_branch()
    assert detached["branch"] is None and detached["detached"] is True


def test_changed_files_and_diff(repo: Path) -> None:
    session = GitSession(repo)
    changed = session.get_changed_files(1)
    assert {"main.py", "app.py", "-dash.txt"} <= set(changed["committed"])
    assert changed["uncommitted"] == []
    (repo / "main.py").write_text("print('v3')\n")
    (repo / "new file.txt").write_text("untracked\n")
    changed = session.get_changed_files(0.5)
    assert {"path": "main.py", "status": "M"} in changed["uncommitted"]
    assert {"path": "new file.txt", "status": "??"} in changed["uncommitted"]
    diff = session.get_current_diff()
    assert "main.py" in diff["stat"] and "+print('v3')" in diff["diff"] and diff["truncated"] is False
    assert diff["untracked"] == ["new file.txt"]
    short = session.get_current_diff(max_chars=10)
    assert len(short["diff"]) == 10 and short["truncated"] is True
    assert session.get_current_branch()["changed_files"] == 2


def test_search_commits_is_plain_text_and_never_an_option(repo: Path) -> None:
    session = GitSession(repo)
    assert [c["subject"] for c in session.search_commits("LOGIN timeout")["commits"]] == [
        "Fix login timeout (issue #12)"
    ]
    assert session.search_commits("(issue #12)")["commits"]  # regex characters are literal
    assert session.search_commits(".*")["commits"] == []
    for hostile in ("--all", "-n1", "--output=/tmp/pwned", "--exec=touch pwned"):
        assert session.search_commits(hostile)["commits"] == []
    assert not Path("/tmp/pwned").exists() and not (repo / "pwned").exists()
    assert len(session.search_commits("i", limit=1)["commits"]) == 1


def test_file_history_follows_renames_and_refuses_escapes(repo: Path) -> None:
    session = GitSession(repo)
    history = session.get_file_history("main.py")
    assert [c["subject"] for c in history["commits"]] == [
        "Rename app to main", "Fix login timeout (issue #12)", "Initial commit: app and docs",
    ]  # fmt: skip
    assert session.get_file_history("-dash.txt")["commits"][0]["subject"] == "Initial commit: app and docs"
    assert session.get_file_history(":(glob)*")["commits"] == []  # pathspec magic is literal
    assert session.get_file_history("--output=x")["commits"] == []
    assert not (repo / "x").exists()
    for bad in ("../outside", "/etc/passwd", "a\\b", "", "bad\x00path", "sub/../../.."):
        with pytest.raises(InvalidInput):
            session.get_file_history(bad)


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("get_recent_commits", (0,)),
        ("get_recent_commits", (201,)),
        ("get_recent_commits", (True,)),
        ("get_changed_files", (0,)),
        ("get_changed_files", (10**9,)),
        ("get_changed_files", ("24",)),
        ("get_current_diff", (0,)),
        ("search_commits", ("",)),
        ("search_commits", ("q" * 501,)),
        ("search_commits", ("a\nb",)),
        ("get_file_history", ("main.py", 0)),
    ],
)
def test_arguments_are_validated(repo: Path, method: str, args: tuple[object, ...]) -> None:
    with pytest.raises(InvalidInput):
        getattr(GitSession(repo), method)(*args)


def test_outside_a_repository(tmp_path: Path) -> None:
    session = GitSession(tmp_path)
    for call in (
        session.get_current_branch,
        lambda: session.get_recent_commits(3),
        lambda: session.get_changed_files(1),
        session.get_current_diff,
        lambda: session.search_commits("x"),
        lambda: session.get_file_history("a.py"),
    ):
        with pytest.raises(GitError, match="not inside a git repository"):
            call()


def test_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.txt").write_text("a\n")
    git(tmp_path, "add", "a.txt")
    session = GitSession(tmp_path)
    assert session.get_current_branch() | {"repository": ""} == {
        "branch": "trunk", "detached": False, "commit": None, "changed_files": 1, "repository": "",
    }  # fmt: skip
    assert session.get_recent_commits()["commits"] == []
    assert session.get_current_diff()["stat"].strip().startswith("a.txt")
    assert session.get_changed_files()["committed"] == []


def test_git_missing_is_a_clear_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(GitError, match="git is not installed"):
        GitSession(repo).get_current_branch()
