"""Verifying memories against the code they describe: ``verify`` and ``accept``.

``verify`` reads everything from git, so every clone agrees and a fresh
clone knows at once: the path history (one ``git log`` pass, then only the
new commits), the work tree (``git ls-files`` and ``git status``), blobs
(one ``git cat-file --batch``, and ``--batch-check`` for the blob ids a file
anchor needs) and, for inference, the lines that define names (``git grep``,
started at once on a first run). These run side by side; what they give is cached in
the local index (``memrouter.index.sqlite.anchors``), so a later run reads
only what changed: the new commits, the memories whose text changed, the
memories whose anchored files a new commit or an uncommitted edit touched.
The result of each memory is stored for search, context, status and the
janitor, which read it without git or a parser.

``accept`` stamps ``verified: <HEAD commit>`` in a memory's front matter
(a reviewable change, through the write guard), which makes its anchors
fresh again: whoever checked the memory against the code says so.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from memrouter.anchors.records import AnchorCheck, MemoryCheck, VerifyReport, worst
from memrouter.anchors.spec import Anchor, parse_anchor
from memrouter.core.errors import InvalidInput, NotFound
from memrouter.core.names import validate_name
from memrouter.index.sqlite.recordtime import git_head, git_top
from memrouter.ops.anchor_run import ANCHORED_PATHS, Run, front_matter_anchors, json_list
from memrouter.ops.audit import audited
from memrouter.ops.write_guard import CONTENT, guarded
from memrouter.repo.git import GitError, GitSession
from memrouter.repo.history import PathHistory
from memrouter.store import frontmatter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable

    from memrouter.core.model import Memory
    from memrouter.ops.workspace import Workspace

__all__ = ["ANCHORED_PATHS", "accept", "preview", "verify"]


def verify(
    ws: Workspace, names: Iterable[str] | None = None, *, since: str | None = None, staged: bool = False,
    diff: bool = True, refresh: bool = True,
) -> VerifyReport:  # fmt: skip
    """The anchored memories (those named, else all) and their state; see the module docstring.

    ``since`` (a commit) keeps the memories with an anchor changed by a commit after it; ``staged`` checks
    against the staging area instead of the work tree and keeps the memories the staged changes make stale
    or broken (the git hook's report). ``refresh=False`` reads the index as it stands (a write just updated it).
    """
    started = time.perf_counter()
    wanted = None if names is None else [validate_name(name, strict=False) for name in names]
    if refresh:
        ws.ensure_fresh()
    rows = ws.index.indexed(lambda: _rows(ws.conn, wanted))
    if wanted is not None:
        missing = sorted(set(wanted) - {row[0] for row in rows})
        if missing:
            raise NotFound(f"no memory {', '.join(repr(name) for name in missing)}")
    top = git_top((ws.config.project_dir or ws.config.root).resolve())
    if top is None:
        return _without_git(rows, started)
    head = git_head(top)
    run = Run(ws, top.resolve(), head, staged=staged)
    run.need_history = since is not None
    try:
        checks, counts = run.check(rows)
    finally:
        run.close()
    notes = list(run.notes)
    if since is not None:
        seq = run.history.seq_of(since) if run.history else None
        if seq is None:
            seq = _resolve(top, since, run.history)
        checks = [check for check in checks if _changed_since(check, seq, run.history)]
    if staged:
        checks = [check for check in checks if any(a.uncommitted for a in check.anchors if a.status != "fresh")]
    shown = [check if diff else _without_diffs(check) for check in checks]
    return VerifyReport(
        tuple(shown), head, len(rows), tuple(notes), since, (time.perf_counter() - started) * 1000, counts
    )


def preview(ws: Workspace, text: str, name: str | None = None) -> tuple[list[Anchor], str | None]:
    """The anchors ``text`` would have, saved as ``name`` (``memrouter check``): its front matter's and those it
    infers from the repository now; and a note when there is no git repository to infer from."""
    top = git_top((ws.config.project_dir or ws.config.root).resolve())
    if top is None:
        return [
            parse_anchor(entry) for entry in front_matter_anchors(text)
        ], "not in a git repository: nothing inferred"
    run = Run(ws, top.resolve(), git_head(top), staged=False)
    try:
        return run.preview(text, name or "new-memory"), None
    finally:
        run.close()


@audited("verify")
def accept(ws: Workspace, name: str, *, actor: str | None = None) -> Memory:
    """Stamp ``verified: <HEAD commit>`` in memory ``name`` (through the write guard): see the module docstring."""
    name = validate_name(name, strict=False)
    top = git_top((ws.config.project_dir or ws.config.root).resolve())
    head = git_head(top) if top is not None else None
    with ws.lock, ws.store.lock(name):
        memory = ws.store.read(name)
        guarded(ws.index, memory.name, memory.text, actor=actor, purpose=CONTENT)  # refused text is refused first
        if head is None:
            raise InvalidInput("verify --accept needs a git repository with a commit: the stamp is a commit id")
        text = frontmatter.update(memory.text, {"verified": head})
        text, _ = guarded(ws.index, memory.name, text, actor=actor, purpose=CONTENT)
        written = ws.store.write(memory.name, text, expected_hash=memory.hash)
        ws.index.index_written(written)
    return written.memory


# -- helpers --------------------------------------------------------------------------


def _rows(conn: sqlite3.Connection, names: list[str] | None) -> list[tuple[str, str, str, str, str]]:
    query = "SELECT name, path, hash, anchors, extra FROM memories"
    rows: list[tuple[str, str, str, str, str]] = [
        (str(a), str(b), str(c), str(d), str(e)) for a, b, c, d, e in conn.execute(query + " ORDER BY name")
    ]
    if names is not None:
        wanted = set(names)
        rows = [row for row in rows if row[0] in wanted]
    return rows


def _changed_since(check: MemoryCheck, seq: int | None, history: PathHistory | None) -> bool:
    if seq is None or history is None:
        return check.status != "fresh"
    for anchor in check.anchors:
        if anchor.status == "fresh":
            continue
        if anchor.uncommitted:
            return True
        if any((at := history.seq_of(commit)) is not None and at > seq for commit in anchor.changed_in):
            return True
    return False


def _resolve(top: Path, rev: str, history: PathHistory | None) -> int | None:
    try:
        full = GitSession(top).run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False).stdout.strip()
    except GitError:
        full = ""
    if not full:
        raise InvalidInput(f"--since {rev!r} names no commit of this repository")
    return history.seq_of(full) if history else None


def _without_diffs(check: MemoryCheck) -> MemoryCheck:
    return replace(check, anchors=tuple(replace(anchor, diff=None) for anchor in check.anchors))


def _without_git(rows: list[tuple[str, str, str, str, str]], started: float) -> VerifyReport:
    """Outside a git repository: each explicit anchor says it cannot be checked; nothing fails."""
    checks: list[MemoryCheck] = []
    for name, _, _, anchors_json, _ in rows:
        anchors = [parse_anchor(entry) for entry in json_list(anchors_json)]
        if not anchors:
            continue
        items = tuple(
            AnchorCheck(
                written=a.written, kind=a.kind, origin=a.origin, path=a.path, symbol=a.symbol, commit=a.commit,
                lines=f"L{a.lines[0]}-L{a.lines[1]}" if a.lines else None,
                status="broken" if a.problem else "unknown",
                note=a.problem or "not in a git repository: freshness comes from git history",
            )
            for a in anchors
        )  # fmt: skip
        checks.append(MemoryCheck(name, worst([a.status for a in items]), items))
    note = "not in a git repository: anchors cannot be checked (inferred anchors need one too)"
    return VerifyReport(tuple(checks), None, len(rows), (note,), None, (time.perf_counter() - started) * 1000)
