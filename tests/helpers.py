"""Helpers shared by the tests (importable as ``helpers``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def write(root: Path, name: str, text: str) -> Path:
    path = root / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


SAMPLE = {
    "conventions/commit-messages": "# Commit messages\n\nUse the imperative mood. Reference the issue number.\n",
    "adr/adr-001-postgres": (
        "---\ntitle: ADR-001 Use PostgreSQL\nkind: adr\ntags: [database, storage]\nsource: ADR-001\n"
        "reviewers: [bob]  # kept as written\n---\n\n# ADR-001 Use PostgreSQL\n\n"
        "We store orders in PostgreSQL because we need transactions. Staging runs on port 5433.\n"
    ),
    "incidents/flaky-tests": "# Flaky tests incident\n\nThe payment suite timed out under load on 2026-03-02.\n",
    "ci/flaky-tests": "# Flaky tests in CI\n\nRetry a failing job once; quarantine tests that fail twice.\n",
    "sprints/2026-w47/research-caching": (
        "---\nkind: research\n---\n# Caching research\n\nRedis versus in-process LRU for the search API.\n"
    ),
    "plain-no-heading": "Just a note without any heading about deployment windows on Fridays.\n",
}


def commit(project: Path, message: str, date: str) -> None:
    """Commit everything in ``project`` as Ada, authored and committed at ``date`` (ISO text)."""
    env = {
        **os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
    }  # fmt: skip
    subprocess.run(["git", "add", "-A"], cwd=project, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=project, check=True, env=env)


def git(project: Path, *args: str) -> str:
    """Run git in ``project``; its output."""
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True).stdout


def commit_all_as(project: Path, user: str, email: str) -> None:
    """Make ``project`` a git repository on ``main`` with everything in it committed by ``user``."""
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.email", email)
    git(project, "config", "user.name", user)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "memories")


def git_project(base: Path) -> tuple[Path, Path]:
    """An empty git project under ``base`` (on ``main``, its index git-ignored): the project and its memories root."""
    project = base / "project"
    root = project / ".serena" / "memories"
    root.mkdir(parents=True)
    git(project, "init", "-q", "-b", "main")
    (project / ".gitignore").write_text(".memrouter/\n")
    return project, root
