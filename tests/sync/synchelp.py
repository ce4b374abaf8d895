"""Helpers for the sync tests: real git projects and a look at what the fake Forgetful holds."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers import SAMPLE, write

from memrouter.external.backends.forgetful import ForgetfulBackend

if TYPE_CHECKING:
    from memrouter import Router
    from memrouter.external.sync.state import SyncState


def mapping(router: Router) -> SyncState:
    """The router's sync mapping, wherever it is kept (the local index, or PostgreSQL with ``[index] url``)."""
    return router.workspace.external().mapping()


def git(project: Path, *args: str) -> str:
    """Run git in ``project`` and return its output."""
    done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True)
    return done.stdout


def make_project(tmp_path: Path, backend_toml: str = "", *, memories: dict[str, str] | None = None) -> Path:
    """A git repository with ``.serena/memories`` (the sample memories) and a ``memrouter.toml``."""
    project = tmp_path / f"proj-{uuid.uuid4().hex[:10]}"
    root = project / ".serena" / "memories"
    for name, text in (SAMPLE if memories is None else memories).items():
        write(root, name, text)
    root.mkdir(parents=True, exist_ok=True)
    init_repository(project, backend_toml, "initial memories")
    return project


def init_repository(project: Path, backend_toml: str, message: str) -> None:
    """Write ``memrouter.toml`` and a ``.gitignore`` for the index, then commit everything in a new repository."""
    (project / "memrouter.toml").write_text(backend_toml, encoding="utf-8")
    (project / ".gitignore").write_text(".memrouter/\n", encoding="utf-8")
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.email", "test@example.com")
    git(project, "config", "user.name", "Test")
    git(project, "config", "commit.gpgsign", "false")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", message)


def http_toml(url: str, timeout: float = 5.0) -> str:
    """The ``[backends.forgetful]`` section for an HTTP server."""
    return f'[backends.forgetful]\nurl = "{url}"\ntimeout = {timeout}\nconnect_timeout = {timeout}\n'


def remote_memories(backend: ForgetfulBackend, project: Path) -> list[dict[str, Any]]:
    """Every memory (obsolete ones too) that sync wrote for ``project``, oldest first.

    Pages through ``get_recent_memories`` (Forgetful returns at most 100 a call).
    """
    found: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = backend.execute("get_recent_memories", {"limit": 100, "offset": offset, "include_obsolete": True})
        memories = page["memories"]
        found += [m for m in memories if m.get("source_repo") == project.name]
        if len(memories) < 100:
            return sorted(found, key=lambda m: int(m["id"]))
        offset += len(memories)


def live_by_context(backend: ForgetfulBackend, project: Path) -> dict[str, list[int]]:
    """Non-obsolete remote ids per ``memrouter:<name>`` context."""
    result: dict[str, list[int]] = {}
    for memory in remote_memories(backend, project):
        if not memory["is_obsolete"]:
            result.setdefault(memory["context"], []).append(int(memory["id"]))
    return result
