"""Helpers shared by the tests (importable as ``helpers``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest


def git_status(project: Path) -> str:
    """``git status --porcelain`` of ``project``, every untracked file listed: what git would offer to commit."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def isolated_home(home: Path, model_graph: Path | None, patch: pytest.MonkeyPatch) -> None:
    """Point this process's home and cache at ``home`` (through ``patch``), the cache holding the built
    model graph (``model_graph``'s files, hard linked, as a user's cache holds them after the first search)."""
    patch.setenv("HOME", str(home))
    patch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    if model_graph is None:
        return
    from platformdirs import user_cache_dir

    cache = Path(user_cache_dir("memrouter")) / "onnx"  # where the embedder looks, under this home
    cache.mkdir(parents=True)
    for built in model_graph.iterdir():
        try:
            os.link(built, cache / built.name)  # its writers replace files whole (os.replace): never shared
        except OSError:
            shutil.copy2(built, cache / built.name)


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


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def initialize_status(url: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status an MCP server at ``url`` answers an initialize request with (sending ``headers``)."""
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def wait_listening(process: subprocess.Popen[bytes], host: str, port: int, timeout: float = 30.0) -> None:
    """Wait until ``process`` accepts connections on ``host:port``; RuntimeError (with its stderr) if it exits
    or does not listen in time (the caller stops it)."""
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start listening in time")
