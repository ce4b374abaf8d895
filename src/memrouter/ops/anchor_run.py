"""One verification's reads of git and the index (``memrouter.ops.verify``): what is kept, what is checked again.

A memory checked at this ``HEAD`` whose text and anchored files have no uncommitted change is answered from
its stored state; one whose anchored files no new commit touched keeps its state too (its "commits ago"
counted again); the rest are checked (``memrouter.anchors.freshness``), reading their baselines' blobs in
one exchange. The path history, the defined names, each blob's definitions and each text's inferred anchors
are read from the index and stored back when they changed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from memrouter.anchors.freshness import Baseline, Checker
from memrouter.anchors.known import RepositoryKnown
from memrouter.anchors.names import NameIndex
from memrouter.anchors.records import MemoryCheck, worst
from memrouter.anchors.spec import Anchor, parse_anchor
from memrouter.anchors.symbols import Parsers
from memrouter.core.errors import MemoryRouterError
from memrouter.core.lazylog import LazyLogger
from memrouter.index.sqlite import anchors as stored
from memrouter.index.sqlite.connection import transaction
from memrouter.repo.git import GitError, GitSession
from memrouter.repo.history import PathHistory, RunningLog, UnreadHistory, finish_log, start_log
from memrouter.repo.tree import BlobReader, WorkTree, collect, parse_work_tree, start
from memrouter.store.parse import parse_memory

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from memrouter.ops.workspace import Workspace

    T = TypeVar("T")

__all__ = ["ANCHORED_PATHS", "Run", "front_matter_anchors", "json_list"]

log = LazyLogger(__name__)

# The anchored paths, one a line, in the index folder: what the git hook checks a commit's files against.
ANCHORED_PATHS = "anchored-paths"
_HISTORY, _HISTORY_HEAD, _NAMES = "history", "history.head", "names"
INFERENCE = "v3"  # the inference rules' version: a change re-infers every memory
HISTORY_LAG = 50  # new commits read each run before the cached history is stored again
NO_ANCHORS = "none"  # a stored state: the memory has no anchor (its inferred paths were gone before it)


class Run:
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
        self._by_commit: dict[int, list[str]] | None = None
        self._early_names: RunningLog | None = None  # the names' git grep, started before it is needed
        memories = ws.config.root.resolve()
        try:
            self.prefix = memories.relative_to(top).as_posix()
        except ValueError:
            self.prefix = ""
        self.prefix = "" if self.prefix == "." else self.prefix

    def close(self) -> None:
        self.blobs.close()
        if self._early_names is not None:  # started for a first run, and not needed after all
            self._early_names.stop()

    def preview(self, text: str, name: str) -> list[Anchor]:
        """The anchors ``text``, saved as memory ``name``, would have: its front matter's and what it infers now
        (from the cached history brought up to HEAD, the tracked files and the defined names)."""
        conn = self.ws.conn
        history = self.ws.index.indexed(lambda: _loaded(PathHistory.from_data, stored.cached(conn, _HISTORY)))
        if self.head is not None and (history is None or history.head != self.head):
            ancestor = history is not None and history.head is not None and self._ancestor(history.head)
            history = history if ancestor else None
            process = start_log(self.top, history.head if history else None, self.head)
            history = history or PathHistory()
            history.extend(finish_log(process))
        self.history = history or PathHistory()
        status = collect(
            start(self.top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"), "status"
        )
        listing = collect(start(self.top, "ls-files", "-z"), "ls-files")
        self.tree = parse_work_tree(listing, status)
        checker = Checker(self.top, self.history, self.tree, self.blobs, self.parsers, staged=False)
        written = [parse_anchor(entry) for entry in front_matter_anchors(text)]
        if not self.ws.config.anchors.infer:
            return written
        self._read_names([("", "", "", "", "")])
        known = RepositoryKnown(checker, self.names, self.prefix)
        keys = {anchor.key for anchor in written}
        return [*written, *(a for a in known.anchors_of_text(text, self._memory_path(name)) if a.key not in keys)]

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
        whole = False  # the history read whole (none cached, or rewritten): stored for the next run
        if moved:
            history = ws.index.indexed(lambda: _loaded(PathHistory.from_data, stored.cached(conn, _HISTORY)))
            if history is not None and (history.head is None or not self._ancestor(history.head)):
                history = None
            whole = history is None
            log_process = start_log(self.top, history.head if history else None, str(self.head))
        if moved and ws.config.anchors.infer and not ws.index.indexed(lambda: stored.has_cached(conn, _NAMES)):
            self._early_names = NameIndex.start_drained(self.top)  # a first run: inference will read every name
        status = start(self.top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
        self.tree = parse_work_tree(b"", collect(status, "status"))
        dirty = set(self.tree.changed) | set(self.tree.untracked)
        results: list[MemoryCheck] = []
        pending: list[tuple[str, str, str, str, str]] = []
        for row in rows:
            kept = self._unchanged(previous.get(row[0]), row[2], dirty)
            if kept is None:
                pending.append(row)
            elif kept.status != NO_ANCHORS:
                results.append(kept)
        old_head = history.head if history is not None else None
        # Checked against the history once git has read it; until then, inference runs beside git (see below).
        checker = Checker(
            self.top, UnreadHistory(), self.tree, self.blobs, self.parsers,
            lookup=lambda blob: ws.index.indexed(lambda: stored.definitions(conn, blob)), staged=self.staged,
        )  # fmt: skip
        reread: NameIndex | None = None
        early: dict[str, tuple[list[Anchor], set[str]]] = {}
        if log_process is not None and pending and ws.config.anchors.infer:
            reread, early = self._infer_beside_log(pending, checker)
        if log_process is not None:  # while git still reads the history: the files of the inferred symbols, parsed
            going = lambda: log_process.process.poll() is None  # noqa: E731
            checker.parse_ahead((a.path for found, _ in early.values() for a in found if a.symbol and a.path), going)
            self.history = history or PathHistory()
            self.history.extend(finish_log(log_process))
        elif pending or self.need_history:
            self.history = (
                ws.index.indexed(lambda: _loaded(PathHistory.from_data, stored.cached(conn, _HISTORY))) or PathHistory()
            )
            old_head = self.history.head
        # An inference made beside git stands unless a path it asked about turns out to be in the history.
        new_inferred = {
            text: anchors for text, (anchors, asked) in early.items() if not any(map(self.history.known, asked))
        }
        # Checked at an earlier commit, and no commit since touched the memory or what it anchors: kept.
        carried: list[tuple[str, MemoryCheck]] = []
        still: list[tuple[str, str, str, str, str]] = []
        for row in pending:
            kept = self._carried(previous.get(row[0]), row[2], dirty)
            if kept is None:
                still.append(row)
            else:
                carried.append((row[0], kept))
                if kept.status != NO_ANCHORS:
                    results.append(kept)
        pending = still
        inferred: dict[str, list[Anchor]] = {}
        if pending and ws.config.anchors.infer:
            inferred = ws.index.indexed(lambda: stored.inferred(conn, [row[2] for row in pending], INFERENCE))
        # A memory with no anchors (none written, none inferred from this text before) needs nothing more.
        pending = [row for row in pending if json_list(row[3]) or row[2] not in inferred or inferred[row[2]]]
        checker.history = self.history
        inferred.update(new_inferred)
        need_inference = [row for row in pending if ws.config.anchors.infer and row[2] not in inferred]
        if need_inference and not self.tree.files:  # inference checks names against the tracked files
            self._list_files(checker)
        names = self._read_names(need_inference)
        reread = names if names is not None else reread
        later = {row[2]: self._infer(row, checker) for row in need_inference}
        new_inferred.update(later)
        inferred.update(later)
        saved, watched_all = self._check_pending(pending, previous, inferred, checker, dirty, results)
        results.sort(key=lambda check: check.name)
        kinds: dict[str, int] = {}
        for check in results:
            for item in check.anchors:
                kinds[f"{item.origin} {item.kind}"] = kinds.get(f"{item.origin} {item.kind}", 0) + 1
        self.notes += [f"{why}" for why in self.parsers.missing.values()]
        # The cached history is stored again when it was read whole or lags far behind: reading a few new commits
        # each run costs less than writing it all.
        behind = self.history.last - (self.history.seq_of(old_head) or 0) if old_head else self.history.last
        keep_history = moved and (whole or behind >= HISTORY_LAG)
        if saved or carried or keep_history or reread is not None or new_inferred or checker.learned:
            self._save(keep_history, reread, new_inferred, checker, saved, carried)
            self._write_anchored_paths(watched_all)
        return results, kinds

    def _list_files(self, checker: Checker) -> None:
        """The tracked files (and the untracked ones), which inference checks the names it finds against."""
        listing = collect(start(self.top, "ls-files", "-z"), "ls-files")
        self.tree = replace(self.tree, files=parse_work_tree(listing, b"").files | self.tree.untracked)
        checker.tree = self.tree

    def _infer_beside_log(
        self, rows: list[tuple[str, str, str, str, str]], checker: Checker
    ) -> tuple[NameIndex | None, dict[str, tuple[list[Anchor], set[str]]]]:
        """While git reads the history in a process of its own, infer the anchors of the memories whose text has
        none stored: (the names when read, text -> (anchors, the paths asked of the history)).

        Inference needs the tracked files and the defined names; of the history it asks only whether a path was
        ever committed, and is told no. Each inference comes with the paths it asked about: once the history is
        read, one that asked about a path the history knows is made again. None is made here when bringing the
        stored names up to date would need the history.
        """
        ws, conn = self.ws, self.ws.conn
        names = ws.index.indexed(lambda: _loaded(NameIndex.from_data, stored.cached(conn, _NAMES)))
        if names is not None and names.head != self.head:
            return None, {}
        known = ws.index.indexed(lambda: stored.inferred(conn, [row[2] for row in rows], INFERENCE))
        todo = [row for row in rows if row[2] not in known]
        if not todo:
            return None, {}
        self._list_files(checker)
        reread = self._read_names(todo)
        unread = checker.history
        assert isinstance(unread, UnreadHistory)
        found: dict[str, tuple[list[Anchor], set[str]]] = {}
        for row in todo:
            unread.asked = set()
            found[row[2]] = (self._infer(row, checker), unread.asked)
        return reread, found

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

    def _carried(
        self, previous: tuple[str, MemoryCheck, list[str], str | None, str | None] | None, value: str, dirty: set[str]
    ) -> MemoryCheck | None:
        """The memory's last check, made at an earlier commit of this history, when no commit since touched the
        memory or what it anchors (nor a missing symbol's name turned up) and nothing of it is uncommitted: its
        "commits ago" counted again."""
        if previous is None or self.staged:
            return None
        old_value, check, watched, head, _ = previous
        at = self.history.seq_of(head) if head else None
        if old_value != value or at is None or set(watched) & dirty or any(a.uncommitted for a in check.anchors):
            return None
        if any(self.history.changed_after(path, at) for path in watched):
            return None
        missing = [a.symbol for a in check.anchors if a.symbol and a.status in ("moved", "broken")]
        if missing and at < self.history.last and self._turned_up(missing, at):
            return None
        return replace(check, ago=_ago(check, self.history, self.history.last))

    def _read_names(self, need_inference: list[tuple[str, str, str, str, str]]) -> NameIndex | None:
        """The defined names, when inference needs them: cached, brought up to HEAD by reading the files the new
        commits touched, or read whole; returns the index when it was read (to be stored)."""
        if not need_inference or (self.names is not None and self.names.head == self.head):
            return None  # none needed, or read already
        names = self.ws.index.indexed(lambda: _loaded(NameIndex.from_data, stored.cached(self.ws.conn, _NAMES)))
        self.names = names
        if names is not None and names.head == self.head:
            return None
        paths: list[str] | None = None
        at = self.history.seq_of(names.head) if names is not None and names.head else None
        if names is not None and at is not None:  # read again only the files touched since
            paths = sorted(path for path, events in self.history.events.items() if events and abs(events[-1]) > at)
        else:
            names = NameIndex()
        if paths is None and self._early_names is not None:
            names.read_drained(self._early_names, self.head, self.top)
            self._early_names = None
        elif paths != []:
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
        wanted_ids: list[str] = []  # a file anchor's: whether the file is the same needs only its id
        for name, _, value, anchors_json, extra_json in pending:
            memory_path = self._memory_path(name)
            anchors = [parse_anchor(entry) for entry in json_list(anchors_json)]
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
                for anchor in anchors:
                    if anchor.path and self.history.changed_after(anchor.path, base.seq):
                        (wanted_ids if anchor.kind == "file" else wanted).append(f"{baseline}:{anchor.path}")
        self.blobs.read_many(wanted)
        self.blobs.read_ids(wanted_ids)
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
        missing = [a.symbol for a in check.anchors if a.symbol and a.status in ("moved", "broken")]
        if missing and at < self.history.last and self._turned_up(missing, at):
            return None  # a missing symbol may have turned up in a file a new commit touched
        return check

    def _turned_up(self, symbols: list[str], since: int) -> bool:
        """Whether a file the commits after ``since`` touched holds one of these symbols' names."""
        leaves = [symbol.rsplit(".", 1)[-1].encode() for symbol in symbols]
        touched = {path for seq in range(since + 1, self.history.last + 1) for path in self._commit_paths(seq)}
        for path in touched:
            try:
                data = (self.top / path).read_bytes()
            except OSError:
                continue
            if any(leaf in data for leaf in leaves):
                return True
        return False

    def _commit_paths(self, seq: int) -> list[str]:
        if self._by_commit is None:
            since = self.history.last - 200  # the paths of the newest commits, by commit
            found: dict[int, list[str]] = {}
            for path, events in self.history.events.items():
                for event in reversed(events):
                    if abs(event) <= since:
                        break
                    found.setdefault(abs(event), []).append(path)
            self._by_commit = found
        return self._by_commit.get(seq, [])

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
        saved: list[tuple[str, MemoryCheck, list[str], str | None]], carried: list[tuple[str, MemoryCheck]],
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
                stored.carry_states(conn, carried, self.head)

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


def _loaded(read: Callable[[dict[str, object]], T], data: dict[str, object] | None) -> T | None:
    """What ``read`` makes of cached data; None when there is none or it is not readable (it is rebuilt)."""
    try:
        return None if data is None else read(data)
    except ValueError:
        return None


def json_list(text: str) -> list[object]:
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


def front_matter_anchors(text: str) -> list[object]:
    """The entries of ``anchors:`` in ``text``'s front matter (none when it has no readable front matter)."""
    return list(parse_memory("preview", "preview", text).anchors)
