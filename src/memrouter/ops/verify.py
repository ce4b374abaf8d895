"""Verifying memories against the code they describe: ``verify`` and ``accept``.

``verify`` reads everything from git, so every clone agrees and a fresh
clone knows at once: the path history (one ``git log`` pass, then only the
new commits), the work tree (``git ls-files`` and ``git status``), blobs
(one ``git cat-file --batch``) and, for inference, the lines that define
names (``git grep``). These run side by side; what they give is cached in
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

import json
import time
from dataclasses import replace
from pathlib import Path

from memrouter.anchors.freshness import Baseline, Checker
from memrouter.anchors.known import RepositoryKnown
from memrouter.anchors.names import NameIndex
from memrouter.anchors.records import AnchorCheck, MemoryCheck, VerifyReport, worst
from memrouter.anchors.spec import Anchor, parse_anchor
from memrouter.anchors.symbols import Parsers
from memrouter.core.errors import InvalidInput, MemoryRouterError, NotFound
from memrouter.core.lazylog import LazyLogger
from memrouter.core.names import validate_name
from memrouter.index.sqlite import anchors as stored
from memrouter.index.sqlite.connection import transaction
from memrouter.index.sqlite.recordtime import git_head, git_top
from memrouter.ops.audit import audited
from memrouter.ops.write_guard import CONTENT, guarded
from memrouter.repo.git import GitError, GitSession
from memrouter.repo.history import PathHistory, finish_log, start_log
from memrouter.repo.tree import BlobReader, WorkTree, collect, start
from memrouter.store import frontmatter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable

    from memrouter.core.model import Memory
    from memrouter.ops.workspace import Workspace

__all__ = ["ANCHORED_PATHS", "accept", "verify"]

log = LazyLogger(__name__)

# The anchored paths, one a line, in the index folder: what the git hook checks a commit's files against.
ANCHORED_PATHS = "anchored-paths"
_HISTORY, _HISTORY_HEAD, _NAMES = "history", "history.head", "names"
INFERENCE = "v3"
NO_ANCHORS = "none"  # a stored state: the memory has no anchor (its inferred paths were gone before it)  # the inference rules' version: a change re-infers every memory


def verify(
    ws: Workspace, names: Iterable[str] | None = None, *, since: str | None = None, staged: bool = False,
    diff: bool = True,
) -> VerifyReport:  # fmt: skip
    """The anchored memories (those named, else all) and their state; see the module docstring.

    ``since`` (a commit) keeps the memories with an anchor changed by a commit after it; ``staged`` checks
    against the staging area instead of the work tree and keeps the memories the staged changes make stale
    or broken (the git hook's report).
    """
    started = time.perf_counter()
    wanted = None if names is None else [validate_name(name, strict=False) for name in names]
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
    run = _Run(ws, top.resolve(), head, staged=staged)
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


# -- one run ------------------------------------------------------------------------


class _Run:
    """One verification's reads of git and the index (see the module docstring)."""

    def __init__(self, ws: Workspace, top: Path, head: str | None, *, staged: bool) -> None:
        self.ws = ws
        self.top = top
        self.head = head
        self.staged = staged
        self.notes: list[str] = []
        self.history: PathHistory = PathHistory()
        self.tree = WorkTree(frozenset())
        self.names: NameIndex | None = None
        self.blobs = BlobReader(top)
        self.parsers = Parsers()
        self._inference: RepositoryKnown | None = None
        self.need_history = False  # read the history even when no memory needs it (``since``)
        memories = ws.config.root.resolve()
        try:
            self.prefix = memories.relative_to(top).as_posix()
        except ValueError:
            self.prefix = ""
        self.prefix = "" if self.prefix == "." else self.prefix

    def close(self) -> None:
        self.blobs.close()

    def check(self, rows: list[tuple[str, str, str, str, str]]) -> tuple[list[MemoryCheck], dict[str, int]]:
        ws, conn = self.ws, self.ws.conn
        previous, known_head = ws.index.indexed(
            lambda: (stored.states(conn, [row[0] for row in rows]), stored.cached(conn, _HISTORY_HEAD))
        )
        # git reads the history (when HEAD moved), the work tree and (when inference needs it) the defined names
        # side by side; a memory checked at this HEAD whose text and anchored files are as they were needs none.
        history: PathHistory | None = None
        log_process = None
        moved = self.head is not None and (known_head or {}).get("head") != self.head
        if moved:
            history = ws.index.indexed(lambda: _history(stored.cached(conn, _HISTORY)))
            if history is not None and (history.head is None or not self._ancestor(history.head)):
                history = None
            log_process = start_log(self.top, history.head if history else None, str(self.head))
        listing = start(self.top, "ls-files", "-z")
        status = start(self.top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
        self.tree = _work_tree(collect(listing, "ls-files"), collect(status, "status"))
        dirty = set(self.tree.changed) | set(self.tree.untracked)
        results: list[MemoryCheck] = []
        pending: list[tuple[str, str, str, str, str]] = []
        for row in rows:
            kept = self._unchanged(previous.get(row[0]), row[2], dirty)
            if kept is None:
                pending.append(row)
            elif kept.status != NO_ANCHORS:
                results.append(kept)
        inferred: dict[str, list[Anchor]] = {}
        if pending and ws.config.anchors.infer:
            inferred = ws.index.indexed(lambda: stored.inferred(conn, [row[2] for row in pending], INFERENCE))
        # A memory with no anchors (none written, none inferred from this text before) needs nothing more.
        pending = [row for row in pending if _json_list(row[3]) or row[2] not in inferred or inferred[row[2]]]
        old_head = history.head if history is not None else None
        touched: set[str] | None = set()
        if log_process is not None:
            self.history = history or PathHistory()
            read = self.history.extend(finish_log(log_process))
            touched = read if history is not None else None
        elif pending or self.need_history:
            self.history = ws.index.indexed(lambda: _history(stored.cached(conn, _HISTORY))) or PathHistory()
            old_head = self.history.head
        checker = Checker(
            self.top, self.history, self.tree, self.blobs, self.parsers,
            lookup=lambda blob: ws.index.indexed(lambda: stored.definitions(conn, blob)), staged=self.staged,
        )  # fmt: skip
        need_inference = [row for row in pending if ws.config.anchors.infer and row[2] not in inferred]
        reread = self._read_names(need_inference, touched, old_head)
        new_inferred = {row[2]: self._infer(row, checker) for row in need_inference}
        inferred.update(new_inferred)
        saved, watched_all = self._check_pending(pending, previous, inferred, checker, dirty, results)
        results.sort(key=lambda check: check.name)
        kinds: dict[str, int] = {}
        for check in results:
            for item in check.anchors:
                kinds[f"{item.origin} {item.kind}"] = kinds.get(f"{item.origin} {item.kind}", 0) + 1
        self.notes += [f"{why}" for why in self.parsers.missing.values()]
        if saved or moved or reread is not None or new_inferred or checker.learned:
            self._save(moved, reread, new_inferred, checker, saved)
            self._write_anchored_paths(watched_all)
        return results, kinds

    def _unchanged(
        self, previous: tuple[str, MemoryCheck, list[str], str | None, str | None] | None, value: str, dirty: set[str]
    ) -> MemoryCheck | None:
        """The memory's last check when it was made at this HEAD and neither the memory nor what it anchors has
        uncommitted changes now (nor had then): nothing it depends on can have changed."""
        if previous is None or self.staged or self.head is None:
            return None
        old_value, check, watched, head, _ = previous
        if old_value != value or head != self.head or set(watched) & dirty:
            return None
        return None if any(anchor.uncommitted for anchor in check.anchors) else check

    def _read_names(
        self, need_inference: list[tuple[str, str, str, str, str]], touched: set[str] | None, old_head: str | None
    ) -> NameIndex | None:
        """The defined names, when inference needs them: cached, brought up to HEAD by reading the files the new
        commits touched, or read whole; returns the index when it was read (to be stored)."""
        if not need_inference:
            return None
        names = self.ws.index.indexed(lambda: _names(stored.cached(self.ws.conn, _NAMES)))
        self.names = names
        if names is not None and names.head == self.head:
            return None
        paths: list[str] | None = None
        if names is not None and touched is not None and names.head == old_head:
            paths = sorted(touched)
        else:
            names = NameIndex()
        if paths != []:
            names.read(NameIndex.start(self.top, paths), self.head, paths, top=self.top)
        names.head = self.head
        self.names = names
        return names

    def _check_pending(
        self, pending: list[tuple[str, str, str, str, str]],
        previous: dict[str, tuple[str, MemoryCheck, list[str], str | None, str | None]],
        inferred: dict[str, list[Anchor]], checker: Checker, dirty: set[str], results: list[MemoryCheck],
    ) -> tuple[list[tuple[str, MemoryCheck, list[str], str | None]], set[str]]:  # fmt: skip
        """Check (or reuse, when no new commit touched what they anchor) the memories not kept at once."""
        saved: list[tuple[str, MemoryCheck, list[str], str | None]] = []
        watched_all: set[str] = set()
        head_seq = self.history.last
        planned: list[tuple[str, str, list[Anchor], Baseline, list[str], str | None, str | None, list[str]]] = []
        wanted: list[str] = []
        for name, _, value, anchors_json, extra_json in pending:
            memory_path = self._memory_path(name)
            anchors = [parse_anchor(entry) for entry in _json_list(anchors_json)]
            explicit = {anchor.key for anchor in anchors}
            anchors += [anchor for anchor in inferred.get(value, []) if anchor.key not in explicit]
            if not anchors:
                continue
            verified = _verified(extra_json)
            base, notes = checker.baseline(memory_path, verified)
            baseline = self.history.commit(base.seq) if base.seq else None
            watched = sorted({a.path for a in anchors if a.path} | {memory_path})
            reused = self._reuse(previous.get(name), value, baseline, watched, dirty)
            if reused is not None and reused.status == NO_ANCHORS:
                saved.append((value, reused, watched, baseline))
                continue
            if reused is not None:
                check = replace(reused, ago=_ago(reused, self.history, head_seq))
                results.append(check)
                saved.append((value, check, watched, baseline))
                watched_all.update(watched)
                continue
            planned.append((name, value, anchors, base, notes, baseline, verified, watched))
            if base.seq is not None:  # the anchored files as the memory saw them, read in one exchange below
                wanted += [
                    f"{baseline}:{anchor.path}" for anchor in anchors
                    if anchor.path and self.history.changed_after(anchor.path, base.seq)
                ]  # fmt: skip
        self.blobs.read_many(wanted)
        for name, value, anchors, base, notes, baseline, verified, watched in planned:
            checks = [item for item in (checker.check(anchor, base) for anchor in anchors) if item is not None]
            if not checks:  # every inferred path was gone before the memory: remembered as having no anchor
                saved.append((value, MemoryCheck(name, NO_ANCHORS, (), baseline), watched, baseline))
                continue
            check = MemoryCheck(
                name, worst([c.status for c in checks]), tuple(checks), baseline, verified, tuple(notes)
            )
            watched = sorted(set(watched) | {c.moved_to.split("#")[0].split(":L")[0] for c in checks if c.moved_to})
            check = replace(check, ago=_ago(check, self.history, head_seq))
            results.append(check)
            saved.append((value, check, watched, baseline))
            watched_all.update(watched)
        return saved, watched_all

    def _ancestor(self, old: str) -> bool:
        try:
            done = GitSession(self.top).run("merge-base", "--is-ancestor", old, self.head or "HEAD", check=False)
        except GitError:
            return False
        return done.returncode == 0

    def _reuse(
        self, previous: tuple[str, MemoryCheck, list[str], str | None, str | None] | None, value: str,
        baseline: str | None, watched: list[str], dirty: set[str],
    ) -> MemoryCheck | None:  # fmt: skip
        """The memory's last check, when nothing it depends on changed since."""
        if previous is None or self.staged:
            return None
        old_value, check, old_watched, old_head, old_baseline = previous
        if old_value != value or old_baseline != baseline or old_head is None:
            return None
        at = self.history.seq_of(old_head)
        if at is None:
            return None  # checked on another line of history
        paths = set(old_watched) | set(watched)
        if paths & dirty or any(anchor.uncommitted for anchor in check.anchors):
            return None  # an uncommitted edit touches what it anchors (or did)
        if any(self.history.changed_after(path, at) for path in paths):
            return None  # a new commit touched what it anchors
        if at < self.history.last and any(a.status in ("moved", "broken") for a in check.anchors):
            return None  # a missing symbol may have turned up elsewhere
        return check

    def _memory_path(self, name: str) -> str:
        """The memory's file, relative to the repository's top folder."""
        return f"{self.prefix}/{name}.md" if self.prefix else f"{name}.md"

    def _infer(self, row: tuple[str, str, str, str, str], checker: Checker) -> list[Anchor]:
        """The anchors a memory's text infers (its file read for the line numbers)."""
        if self._inference is None:
            self._inference = RepositoryKnown(checker, self.names, self.prefix)
        return self._inference.anchors(Path(row[1]), self._memory_path(row[0]))

    def _save(
        self, moved: bool, names: NameIndex | None, new_inferred: dict[str, list[Anchor]], checker: Checker,
        saved: list[tuple[str, MemoryCheck, list[str], str | None]],
    ) -> None:  # fmt: skip
        conn = self.ws.conn

        def write() -> None:
            with transaction(conn):
                if moved and self.history.head is not None:
                    stored.save_cached(conn, _HISTORY, self.history.to_data())
                    stored.save_cached(conn, _HISTORY_HEAD, {"head": self.history.head})
                if names is not None:
                    stored.save_cached(conn, _NAMES, names.to_data())
                if new_inferred:
                    stored.save_inferred(conn, INFERENCE, new_inferred)
                if checker.learned:
                    stored.save_definitions(conn, checker.learned)
                stored.save_states(conn, saved, self.head)

        try:
            self.ws.index.indexed(write)
        except MemoryRouterError as exc:  # the cache is derived: the result stands without it
            log.warning("anchor states not stored: %s", exc)
            self.notes.append(f"the results were not stored in the index ({exc})")

    def _write_anchored_paths(self, paths: set[str]) -> None:
        """The anchored paths of every memory checked so far (this run's and the stored ones), for the git hook."""
        try:
            paths |= self.ws.index.indexed(lambda: stored.watched(self.ws.conn))
        except MemoryRouterError as exc:
            log.warning("stored anchor states not read: %s", exc)
        target = self.ws.config.index_dir / ANCHORED_PATHS
        text = "".join(f"{path}\n" for path in sorted(paths) if "\n" not in path)
        try:
            if target.exists() and target.read_text(encoding="utf-8") == text:
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{ANCHORED_PATHS}.tmp")
            temporary.write_text(text, encoding="utf-8")
            temporary.replace(target)
        except OSError as exc:
            log.warning("the anchored paths for the git hook were not written: %s", exc)


# -- helpers --------------------------------------------------------------------------


def _rows(conn: sqlite3.Connection, names: list[str] | None) -> list[tuple[str, str, str, str, str]]:
    query = "SELECT name, path, hash, anchors, extra FROM memories WHERE status != 'pending_review'"
    rows: list[tuple[str, str, str, str, str]] = [
        (str(a), str(b), str(c), str(d), str(e)) for a, b, c, d, e in conn.execute(query + " ORDER BY name")
    ]
    if names is not None:
        wanted = set(names)
        rows = [row for row in rows if row[0] in wanted]
    return rows


def _history(data: dict[str, object] | None) -> PathHistory | None:
    if data is None:
        return None
    try:
        return PathHistory.from_data(data)
    except ValueError:
        return None


def _names(data: dict[str, object] | None) -> NameIndex | None:
    if data is None:
        return None
    try:
        return NameIndex.from_data(data)
    except ValueError:
        return None


def _work_tree(listing: bytes, status: bytes) -> WorkTree:
    files = {item.decode("utf-8", "surrogateescape") for item in listing.split(b"\0") if item}
    changed: dict[str, str] = {}
    untracked: set[str] = set()
    for entry in status.split(b"\0"):
        if len(entry) < 4:
            continue
        code, path = entry[:2].decode("ascii", "replace"), entry[3:].decode("utf-8", "surrogateescape")
        if code == "??":
            untracked.add(path)
        else:
            changed[path] = code
    return WorkTree(frozenset(files | untracked), changed, frozenset(untracked))


def _json_list(text: str) -> list[object]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _verified(extra: str) -> str | None:
    try:
        value = json.loads(extra or "{}").get("verified")
    except (ValueError, AttributeError):
        return None
    if isinstance(value, bool) or value is None:
        return None
    return str(value).strip() or None


def _ago(check: MemoryCheck, history: PathHistory, head_seq: int) -> int | None:
    if check.status == "fresh":
        return None
    newest = [
        seq for anchor in check.anchors if anchor.status != "fresh" for commit in anchor.changed_in[-1:]
        if (seq := history.seq_of(commit)) is not None
    ]  # fmt: skip
    return head_seq - max(newest) if newest else None


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
        anchors = [parse_anchor(entry) for entry in _json_list(anchors_json)]
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
