"""Every path that writes memory text passes the write guard: a secret is refused everywhere.

``WRITES`` is the table of write paths, each with a call that tries to store
a fake secret through it; ``NOT_WRITING`` names every other public method and
why it needs no guard. A public method of the Router, the Lifecycle, the
Scratchpad or the MCP service in neither fails the test, so a new write path
cannot skip the guard unnoticed.
"""

from __future__ import annotations

import inspect
import random
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memrouter.core.errors import InvalidInput, MemoryRouterError, NotFound, Refused
from memrouter.mcp.service import MemoryService
from memrouter.ops import memory_files
from memrouter.ops.lifecycle import Lifecycle
from memrouter.ops.scratch import Scratchpad
from memrouter.router import Router
from memrouter.testing.guard_sets import fake

SECRET = fake("ghp", random.Random(16))
GROUNDED = "# Pool size\n\nThe pool holds 8 connections (ADR-004, src/db/pool.py).\n"


def _hand_written(root: Path, name: str, text: str) -> None:
    """A file changed outside memrouter (an editor, a merge): the guard never saw it."""
    path = root / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _sprint_with(router: Router, root: Path, text: str) -> str:
    router.lifecycle.start("s1", weeks=2, goal=None)
    _hand_written(root, "sprints/s1/leaked", text)
    return "sprints/s1/leaked"


def _service(router: Router) -> MemoryService:
    return MemoryService(router)


# path -> a call storing SECRET through it (router, memories root)
WRITES: dict[str, Callable[[Router, Path], Any]] = {
    "Router.save": lambda r, root: r.save(f"# Keys\n\nThe bot token is {SECRET}\n", "keys"),
    "Router.edit": lambda r, root: r.edit("pool", "8 connections", f"8 connections, token {SECRET}"),
    "Router.rename": lambda r, root: (_hand_written(root, "leak", f"token {SECRET}\n"), r.rename("leak", "moved")),
    "Router.promote": lambda r, root: r.promote(_sprint_with(r, root, f"# Leak\n\n{SECRET}\n"), reason="kept"),
    "Router.invalidate": lambda r, root: r.invalidate("pool", reason=f"rotated {SECRET}"),
    "Lifecycle.start": lambda r, root: r.lifecycle.start("s2", weeks=1, goal=f"ship with {SECRET}"),
    "Lifecycle.close": lambda r, root: (
        _sprint_with(r, root, "# Fine\n\nnothing secret\n"),
        r.lifecycle.close(promote=["leaked"], reason=f"token {SECRET}"),
    ),
    "Lifecycle.promote": lambda r, root: r.lifecycle.promote(_sprint_with(r, root, f"{SECRET}\n"), reason="kept"),
    "Lifecycle.invalidate": lambda r, root: r.lifecycle.invalidate("pool", reason=f"{SECRET}"),
    "Scratchpad.write": lambda r, root: r.scratchpad().write("agent-1", "note", f"use {SECRET}"),
    "MemoryService.save": lambda r, root: _service(r).save(f"# Bot\n\n{SECRET}\n"),
    "MemoryService.write_memory": lambda r, root: _service(r).write_memory("bot", f"token: {SECRET}\n"),
    "MemoryService.edit_memory": lambda r, root: _service(r).edit_memory("pool", "8", SECRET, "literal"),
    "MemoryService.rename_memory": lambda r, root: (
        _hand_written(root, "leak", f"{SECRET}\n"),
        _service(r).rename_memory("leak", "moved"),
    ),
    "MemoryService.promote": lambda r, root: _service(r).promote(_sprint_with(r, root, SECRET), reason="kept"),
    "MemoryService.invalidate": lambda r, root: _service(r).invalidate("pool", reason=SECRET),
    "Router.escalate": lambda r, root: (r.lifecycle.start("s1", weeks=1, goal=None), r.escalate(f"found {SECRET}")),
    "MemoryService.verify_memory": lambda r, root: (
        _hand_written(root, "leak", f"token {SECRET}\n"),
        _service(r).verify_memory("leak", accept=True),
    ),
    "Lifecycle.retire": lambda r, root: r.lifecycle.retire("pool", reason=f"unused, see {SECRET}"),
    "Router.accept": lambda r, root: (_hand_written(root, "leak", f"token {SECRET}\n"), r.accept("leak")),
    # The file-speaking face (Anthropic's memory tool, memrouter.anthropic_memory) writes through these.
    "memory_files.write_text": lambda r, root: memory_files.write_text(
        r.workspace, "notes/bot", f"token {SECRET}\n", expected_hash="", actor="agent:claude"
    ),
    "memory_files.move_file": lambda r, root: (
        _hand_written(root, "leak", f"{SECRET}\n"),
        memory_files.move_file(r.workspace, "leak", "moved", actor="agent:claude"),
    ),
    "memory_files.move_folder": lambda r, root: (
        _hand_written(root, "box/leak", f"{SECRET}\n"),
        memory_files.move_folder(r.workspace, "box", "moved", actor="agent:claude"),
    ),
}

# Public methods that store no new memory text, and why.
_READS = "reads only"
NOT_WRITING: dict[str, str] = {
    **{
        f"Router.{name}": _READS
        for name in (
            "open",
            "config",
            "store",
            "clock",
            "team",
            "scratchpad",
            "close",
            "warnings",
            "refresh",
            "effective_mode",
            "search",
            "measure_recall",
            "get",
            "list",
            "names",
            "verify",
            "status",
            "backends",
            "backend",
            "backend_status",
            "validate",
            "sync_states",
            "lifecycle",
            "get_entity",
            "related",
            "path",
            "neighbors",
            "graph_export",
            "graph_stats",
            "history",
            "get_as_of",
            "assemble_context",
            "audit",
            "pending",
            "pinned",
            "provenance",
        )
    },  # fmt: skip
    "Router.approve": "sets status and verified_by on a pending memory; stores no new text",
    "Router.reject": "removes a pending memory; stores no text",
    "Router.janitor": "--apply retires memories through Router.invalidate, a guarded path",
    "Router.archive": "sets status: archived on a sprint memory; stores no new text",
    "MemoryService.stale_memories": "memrouter.ops.verify.verify: reads the files and git, writes derived state only",
    "Lifecycle.archive": "sets status: archived on a sprint memory; stores no new text",
    "Router.embed_in_background": "writes vectors of indexed memories; stores no memory text",
    "Router.search_mode": "may write vectors of indexed memories; stores no memory text",
    "Scratchpad.expired": _READS,
    "Scratchpad.collect": "removes expired notes; stores no text",
    "Router.delete": "removes a file; stores no text",
    "Router.check": "the guard's verdict only; writes nothing",
    "Router.sync": "copies stored memories to external services; writes no memory file",
    "Router.publish": "copies the index's rows to a PostgreSQL database; writes no memory file",
    **{f"Lifecycle.{name}": _READS for name in ("holding", "place", "current", "sprint", "status")},
    **{f"Scratchpad.{name}": _READS for name in ("read", "search", "close")},
    "Scratchpad.clear": "removes notes; stores no text",
    **{
        f"MemoryService.{name}": _READS
        for name in (
            "search",
            "get",
            "history",
            "status",
            "sprint_status",
            "read_memory",
            "list_memories",
            "recent",
            "by_kind",
            "memory_text",
        )
    },  # fmt: skip
    "MemoryService.delete_memory": "removes a file; stores no text",
    "memory_files.entries": _READS,
    "memory_files.read_text": _READS,
    "memory_files.delete_file": "removes a file; stores no text",
    "memory_files.delete_folder": "removes files; stores no text",
}


def _public(cls: type) -> set[str]:
    return {
        f"{cls.__name__}.{name}"
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and (inspect.isfunction(member) or inspect.ismethod(member) or isinstance(member, property))
    }  # fmt: skip


def test_every_public_method_is_a_guarded_write_or_named_as_not_writing() -> None:
    public = set().union(*(_public(cls) for cls in (Router, Lifecycle, Scratchpad, MemoryService)))
    public |= {
        f"memory_files.{name}" for name in memory_files.__all__ if inspect.isfunction(getattr(memory_files, name))
    }
    unclassified = public - WRITES.keys() - NOT_WRITING.keys()
    assert not unclassified, f"classify these (a write path needs a case in WRITES): {sorted(unclassified)}"
    assert not (WRITES.keys() & NOT_WRITING.keys())
    assert (WRITES.keys() | NOT_WRITING.keys()) <= public, "the tables name methods that no longer exist"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Router, Path]]:
    root = tmp_path / "project" / ".serena" / "memories"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root.parent.parent)], check=True)
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.save(GROUNDED, "pool")
        yield router, root


def _state(router: Router, root: Path) -> tuple[dict[str, bytes], list[tuple[str, str]], list[tuple[Any, ...]]]:
    files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))}
    indexed = [(item.name, router.get(item.name).hash) for item in router.list()]
    scratch = router.config.index_dir / "scratch.sqlite"
    notes = (
        sqlite3.connect(scratch).execute("SELECT owner, name, text FROM notes").fetchall() if scratch.exists() else []
    )
    return files, indexed, notes


# What a case's setup writes by hand before the guarded call (a file the guard never saw, a sprint record).
SETUP_FILES = {"leak.md", "box/leak.md", "sprints/s1/leaked.md", "sprints/s1/_sprint.md"}
SETUP_NAMES = {name.removesuffix(".md") for name in SETUP_FILES}


@pytest.mark.parametrize("path", sorted(WRITES))
def test_each_write_path_refuses_a_secret(project: tuple[Router, Path], path: str) -> None:
    router, root = project
    files, indexed, notes = _state(router, root)
    with pytest.raises(Refused) as refused:
        WRITES[path](router, root)
    message = str(refused.value)
    assert SECRET not in message and SECRET[4:16] not in message  # never echoed back
    assert "github_token" in message and "line" in message  # the kind and where
    after_files, after_indexed, after_notes = _state(router, root)
    assert {name: data for name, data in after_files.items() if name not in SETUP_FILES} == files  # nothing written
    assert after_notes == notes
    assert [item for item in after_indexed if item[0] not in SETUP_NAMES] == indexed
    router.refresh()
    assert {hit.name for hit in router.search(SECRET, mode="lexical")} <= SETUP_NAMES


# path -> a call that tries to change the read-only source section SECTION (a part of the repository's CLAUDE.md)
SECTION = "CLAUDE.md#build"
ON_SOURCES: dict[str, Callable[[Router], Any]] = {
    "Router.save": lambda r: r.save("# Build\n\nchanged\n", SECTION),
    "Router.edit": lambda r: r.edit(SECTION, "make test", "make check"),
    "Router.delete": lambda r: r.delete(SECTION),
    "Router.rename": lambda r: r.rename(SECTION, "build"),
    "Router.promote": lambda r: r.promote(SECTION, reason="kept"),
    "Router.archive": lambda r: r.archive(SECTION),
    "Router.invalidate": lambda r: r.invalidate(SECTION, reason="old"),
    "Router.approve": lambda r: r.approve(SECTION, actor="user:bo"),
    "Router.reject": lambda r: r.reject(SECTION, actor="user:bo", reason="no"),
    "MemoryService.write_memory": lambda r: _service(r).write_memory(SECTION, "changed\n"),
    "MemoryService.edit_memory": lambda r: _service(r).edit_memory(SECTION, "make", "run", "literal"),
    "MemoryService.rename_memory": lambda r: _service(r).rename_memory(SECTION, "build"),
    "MemoryService.delete_memory": lambda r: _service(r).delete_memory(SECTION),
}


@pytest.mark.parametrize("path", sorted(ON_SOURCES))
def test_no_write_path_changes_a_read_only_source_section(project: tuple[Router, Path], path: str) -> None:
    router, root = project
    claude = root.parent.parent / "CLAUDE.md"
    claude.write_text("# App\n\n## Build\n\nRun make test before you push.\n")
    router.refresh()
    assert router.get(SECTION).source == "CLAUDE.md#Build"
    files, indexed, _ = _state(router, root)
    try:
        result = ON_SOURCES[path](router)
    except MemoryRouterError as exc:
        assert isinstance(exc, (InvalidInput, NotFound)), exc
    else:  # Serena's tools answer with an error text instead of raising
        assert isinstance(result, str) and "read-only" in result, result
    assert claude.read_text() == "# App\n\n## Build\n\nRun make test before you push.\n"
    assert _state(router, root)[:2] == (files, indexed)
    assert router.get(SECTION).text == "## Build\n\nRun make test before you push.\n"
