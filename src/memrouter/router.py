"""The Router: one entry point over the canonical files, the index and the backends.

It is the only place that knows more than one layer. Reads go to the files
(the truth) or the index (derived from them); writes go to the files first,
then the index is updated in the same call, so a write is visible at once.
"""

from __future__ import annotations

import builtins
import os
import re
import sqlite3
import time
from _thread import RLock  # threading.RLock is this type; importing threading costs a cold start
from pathlib import Path

from memrouter.config import Config
from memrouter.errors import InvalidInput, NotFound
from memrouter.index import db
from memrouter.index.fusion import Ranked, reciprocal_rank_fusion
from memrouter.index.lexical import LexicalIndex, filter_sql, snippet
from memrouter.index.refresh import (
    Progress,
    RefreshReport,
    delete_memory,
    refresh_index,
    upsert_memory,
    write_transaction,
)
from memrouter.lazylog import LazyLogger
from memrouter.model import CHANNELS, STATUSES, Filters, Hit, Match, Memory
from memrouter.query import check_limit, check_query, make_filters
from memrouter.store.files import MemoryStore
from memrouter.store.names import validate_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from memrouter.backends.configured import ConfiguredBackends
    from memrouter.index.dense import DenseIndex
    from memrouter.index.fusion import Fused
    from memrouter.store.watch import ChangeWatcher

__all__ = ["Router"]

log = LazyLogger(__name__)

CANONICAL = "canonical"
# Each retriever returns this many candidates before fusion (DESIGN.md "Retrieval").
CANDIDATE_POOL = 50
MAX_CONTENT_CHARS = 1_000_000


class Router:
    """Search and manage memories for one memories root.

    Open one with ``Router.open(root=..., index_dir=...)``; it holds one index
    connection and is safe to share between threads.
    """

    def __init__(self, config: Config, *, watch: bool = True) -> None:
        self.config = config
        readonly = not os.access(config.root, os.W_OK)
        self.store = MemoryStore(config.root, readonly=readonly)
        self._lock = RLock()
        self._conn, warning = db.open_index(config.index_path)
        self.warnings: list[str] = [warning] if warning else []
        self._last_check = float("-inf")
        self._last_report: RefreshReport | None = None
        self._lexical = LexicalIndex()
        # Dense retrieval loads on first use (see ``_dense``), never for lexical search.
        self._dense_index: DenseIndex | None = None
        self._dense_checked: str | None = None
        self._watch = watch
        self._watcher: ChangeWatcher | None = None
        # External backends, built from config.backends on first need (see _external).
        self._configured: ConfiguredBackends | None = None

    @classmethod
    def open(
        cls,
        root: str | Path | None = None,
        index_dir: str | Path | None = None,
        *,
        config: Config | None = None,
        watch: bool = True,
    ) -> Router:
        """Open the router for ``root`` (or the project found from the working directory).

        ``watch`` lets a long-lived router notice file changes through the
        operating system instead of scanning (a one-shot command needs neither).
        """
        return cls(config or Config.load(root=root, index_dir=index_dir), watch=watch)

    def close(self) -> None:
        with self._lock:
            if self._watcher is not None:
                self._watcher.close()
            if self._configured is not None:
                self._configured.close()
            self._conn.close()

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _external(self) -> ConfiguredBackends:
        """The configured external backends (none is built or connected until used)."""
        with self._lock:  # one set per router, however many threads ask first
            if self._configured is None:
                from memrouter.backends.configured import ConfiguredBackends

                self._configured = ConfiguredBackends(self.config.backends)
            return self._configured

    @property
    def _dense(self) -> DenseIndex:
        """The dense retriever, imported and built on first use (the model loads later still)."""
        with self._lock:
            if self._dense_index is None:
                from memrouter.index.dense import DenseIndex

                self._dense_index = DenseIndex(self.config.index_dir, self.config.embedder)
            return self._dense_index

    # -- index maintenance -------------------------------------------------
    def refresh(
        self,
        *,
        full: bool = False,
        progress: Progress | None = None,
        embed: bool | None = False,
        embed_progress: Progress | None = None,
        reembed: bool = False,
    ) -> RefreshReport:
        """Bring the index up to date with the files (incremental unless ``full``).

        ``embed=True`` also embeds every memory that lacks current vectors
        (building the dense index on first use); ``None`` does so only if
        the dense index is already in use; ``reembed`` drops vectors made by
        another model first.
        """
        with self._lock:
            report = self._refresh_lexical(full, progress)
            if embed or reembed or (embed is None and self._dense.has_vectors(self._conn)):
                self._dense.embed_pending(self._conn, progress=embed_progress, reembed=reembed)
                self._dense_checked = self._generation()
            return report

    def _generation(self) -> str:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return str(row[0]) if row else "0"

    def effective_mode(self, mode: str | None = None) -> str:
        """The mode a search will use.

        ``hybrid`` fuses the retrievers the index has: until it holds vectors
        (``memrouter index`` builds them) that is lexical alone, so a search
        never starts embedding a whole corpus by surprise. ``semantic`` asks
        for vectors explicitly and builds any that are missing.
        """
        mode = mode or self.config.search.mode
        if mode not in ("hybrid", "lexical", "semantic"):
            raise InvalidInput(f"unknown search mode {mode!r}; use hybrid, lexical or semantic")
        if mode == "hybrid":
            with self._lock:
                return mode if self._dense.has_vectors(self._conn) else "lexical"
        return mode

    def _refresh_lexical(self, full: bool, progress: Progress | None) -> RefreshReport:
        with self._lock:
            if self._watch and self._watcher is None:
                # Watch before scanning, so a change during the scan is seen next time.
                from memrouter.store.watch import ChangeWatcher

                self._watcher = ChangeWatcher(self.config.root)
            try:
                report = refresh_index(self._conn, self.store, full=full, progress=progress)
            except sqlite3.DatabaseError as exc:
                self._recover(exc)
                report = refresh_index(self._conn, self.store, full=True, progress=progress)
            self._last_check = time.monotonic()
            self._last_report = report
            self._record_problems(report)
            return report

    def _recover(self, exc: sqlite3.DatabaseError) -> None:
        """The index failed mid-use: set it aside and start again from the files."""
        log.warning("index %s failed (%s); rebuilding from the memory files", self.config.index_path, exc)
        self._conn.close()
        path = self.config.index_path
        if path.exists():
            path.replace(path.with_name(f"{path.name}.corrupt-{int(time.time())}"))
        for suffix in ("-wal", "-shm"):
            side = path.with_name(path.name + suffix)
            if side.exists():
                side.unlink()
        self._conn, _ = db.open_index(path)
        self.warnings.append(f"index {path} failed ({exc}); rebuilt from the memory files")

    def _record_problems(self, report: RefreshReport) -> None:
        unreadable = {name: problem for name, problem in report.problems.items() if "not indexed" in problem or "unreadable" in problem}
        if unreadable or report.changed or report.removed:
            import json  # lazy, like every import a search with nothing changed does not need

            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES ('file_problems', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (json.dumps(unreadable),),
            )

    def _ensure_fresh(self) -> None:
        """Refresh when files may have changed: always the first time, then on
        file-system events (or every ``refresh_interval`` seconds without them)."""
        if self._last_check == float("-inf"):
            self.refresh()
            return
        watcher = self._watcher
        if watcher is not None and watcher.available:
            if watcher.changed():
                watcher.watch_tree()
                self.refresh()
        elif time.monotonic() - self._last_check >= self.config.search.refresh_interval:
            self.refresh()

    # -- reading -----------------------------------------------------------
    def search(
        self,
        query: str,
        limit: int = 10,
        mode: str | None = None,
        *,
        channels: Iterable[str] | str | None = None,
        kinds: Iterable[str] | str | None = None,
        scopes: Iterable[str] | str | None = None,
        statuses: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
        prefix: str | None = None,
        content: bool = False,
        source: str | None = None,
    ) -> list[Hit]:
        """The best memories for ``query``, best first, each saying why it matched.

        ``source`` picks where results come from: ``None`` (the default) is
        the canonical results, then what healthy external backends add
        (never failing when one is down); ``"canonical"`` only the files; a
        backend's name only that backend (``BackendUnavailable`` if it is down).
        """
        query = check_query(query)
        limit = check_limit(limit)
        mode = self.effective_mode(mode)
        filters = make_filters(
            channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags, prefix=prefix
        )
        if source is not None and source != CANONICAL:
            return self._search_backend(source, query, limit, content)
        with self._lock:
            self._ensure_fresh()
            if mode != "lexical":
                self._ensure_embedded()
            try:
                hits = self._search_canonical(query, limit, mode, filters, content)
            except sqlite3.DatabaseError as exc:
                self._recover(exc)
                self.refresh(full=True)
                hits = self._search_canonical(query, limit, mode, filters, content)
        if source == CANONICAL or not self.config.backends or not filters.empty:
            return hits
        return self._augment(query, limit, hits, content)

    def _search_canonical(self, query: str, limit: int, mode: str, filters: Filters, content: bool) -> list[Hit]:
        """Candidates from each retriever the mode uses, fused, cut to ``limit``."""
        # Lexical scoring is exact and one list keeps its own order through
        # fusion, so lexical search alone needs only ``limit`` candidates.
        pool = limit if mode == "lexical" else max(limit, CANDIDATE_POOL)
        lists = self._candidates(query, mode, filters, pool)
        fused = reciprocal_rank_fusion(lists, self.config.search.weights, self.config.search.rrf_k, limit)
        rows = self._rows([item.memory_id for item in fused])
        hits = []
        for item in fused:
            row = rows.get(item.memory_id)
            if row is None:
                continue
            hits.append(
                Hit(
                    name=row["name"],
                    title=row["title"],
                    score=item.score,
                    source=CANONICAL,
                    channel=row["channel"],
                    path=row["path"],
                    hash=row["hash"],
                    snippet=snippet(row["body"], query, at=_dense_only_offset(item)),
                    why=item.why,
                    kind=row["kind"],
                    content=self._content_of(row["name"]) if content else None,
                )
            )
        return hits

    def _candidates(self, query: str, mode: str, filters: Filters, pool: int) -> dict[str, list[Ranked]]:
        """Each retriever's top ``pool`` for the query, filters applied inside each."""
        lists: dict[str, list[Ranked]] = {}
        if mode in ("hybrid", "lexical"):
            lists["lexical"] = self._lexical.search(self._conn, query, filters, limit=pool)
        if mode in ("hybrid", "semantic"):
            lists["dense"] = self._dense.search(self._conn, query, filters, limit=pool)
        return lists

    def measure_recall(self, *, k: int = 10, samples: int = 200) -> dict[str, Any]:
        """HNSW recall@k against exact search over this index's vectors (``doctor --recall``)."""
        with self._lock:
            self._ensure_fresh()
            return self._dense.measure_recall(self._conn, k=k, samples=samples)

    def _ensure_embedded(self) -> None:
        """Embed memories added or changed since the last check (cheap when none)."""
        generation = self._generation()
        if generation != self._dense_checked:
            self._dense.embed_pending(self._conn)
            self._dense_checked = generation

    def _rows(self, ids: list[int]) -> dict[int, sqlite3.Row]:
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        cursor = self._conn.execute(
            f"SELECT id, name, title, channel, path, hash, kind, body FROM memories WHERE id IN ({marks})", ids
        )
        return {row["id"]: row for row in cursor}

    def _content_of(self, name: str) -> str | None:
        try:
            return self.store.read(name).text
        except (NotFound, InvalidInput):
            return None

    def get(self, name: str) -> Memory:
        """The memory ``name``, read from its file (``NotFound`` if there is none)."""
        return self.store.read(name)

    def list(
        self,
        prefix: str | None = None,
        channel: str | None = None,
        kind: str | None = None,
        *,
        tags: Iterable[str] | str | None = None,
        status: str | None = None,
    ) -> list[dict[str, Any]]:
        """Summaries (name, title, channel, kind, status, tags, hash) of the indexed memories, by name."""
        import json

        filters = make_filters(channels=channel, kinds=kind, tags=tags, statuses=status, prefix=prefix)
        with self._lock:
            self._ensure_fresh()
            where, params = filter_sql(filters)
            rows = self._conn.execute(
                "SELECT name, title, channel, kind, status, tags, hash, path, size FROM memories m "
                f"WHERE 1{where} ORDER BY name",
                params,
            ).fetchall()
        return [
            {
                "name": row["name"],
                "title": row["title"],
                "channel": row["channel"],
                "kind": row["kind"],
                "status": row["status"],
                "tags": json.loads(row["tags"]),
                "hash": row["hash"],
                "path": row["path"],
                "size": row["size"],
            }
            for row in rows
        ]

    # -- writing -----------------------------------------------------------
    def save(
        self,
        content: str,
        name: str | None = None,
        *,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        kind: str | None = None,
        channel: str | None = None,
        scope: str | None = None,
        status: str | None = None,
        source: str | None = None,
        author: str | None = None,
        confidence: float | None = None,
        valid_from: str | None = None,
        valid_until: str | None = None,
        expected_hash: str | None = None,
    ) -> Memory:
        """Write a memory file (atomically) and index it.

        Fields given here are set in the front matter; every other front-matter
        key in ``content`` is kept as written. Without ``name``, one is made
        from the title or the first heading. ``expected_hash`` (``""`` for
        "must not exist") refuses to overwrite a concurrent change.
        """
        if not isinstance(content, str):
            raise InvalidInput("content must be text")
        if not content.strip():
            raise InvalidInput("content must not be empty")
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(f"content is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}")
        from memrouter.store import frontmatter
        from memrouter.store.parse import first_heading

        body = frontmatter.split(content)[1]
        heading = first_heading(body)
        if title is not None and heading is None and isinstance(title, str) and title.strip():
            # Plain files are the norm: a title becomes the heading, not front matter.
            content = _with_heading(content, title.strip())
            heading = title = title.strip()
        if title is not None and title == heading:
            title = None
        changes = _field_changes(
            title=title, tags=tags, kind=kind, channel=channel, scope=scope, status=status,
            source=source, author=author, confidence=confidence, valid_from=valid_from, valid_until=valid_until,
        )
        text = frontmatter.update(content, changes) if changes else content
        if name is None:
            name = _name_from(title or first_heading(frontmatter.split(text)[1]) or "")
        name = validate_name(name, strict=False)
        with self._lock:
            memory = self.store.write(name, text, expected_hash=expected_hash)
            self._index_file(memory)
        return memory

    def delete(self, name: str, reason: str | None = None, *, expected_hash: str | None = None) -> Memory:
        """Remove the memory file and its index rows; returns what was deleted."""
        if reason is not None and (not isinstance(reason, str) or len(reason) > 2000):
            raise InvalidInput("reason must be text of at most 2,000 characters")
        with self._lock:
            memory = self.store.delete(name, expected_hash=expected_hash)
            with write_transaction(self._conn) as writer:
                delete_memory(self._conn, writer, memory.name)
        log.info("deleted memory %s%s", memory.name, f" ({reason})" if reason else "")
        return memory

    def _index_file(self, memory: Memory) -> None:
        stat = Path(memory.path).stat()
        with write_transaction(self._conn) as writer:
            upsert_memory(self._conn, writer, memory, stat.st_mtime_ns, stat.st_size)

    # -- reporting ---------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, index freshness, problems and configuration, JSON-ready."""
        import json

        with self._lock:
            self._ensure_fresh()
            conn = self._conn
            total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            by_channel = dict(conn.execute("SELECT channel, count(*) FROM memories GROUP BY channel").fetchall())
            by_status = dict(conn.execute("SELECT status, count(*) FROM memories GROUP BY status").fetchall())
            problems = {
                row[0]: "; ".join(json.loads(row[1]))
                for row in conn.execute("SELECT name, problems FROM memories WHERE problems != '[]' ORDER BY name")
            }
            stored = conn.execute("SELECT value FROM meta WHERE key = 'file_problems'").fetchone()
            if stored:
                problems.update(json.loads(stored[0]))
            migrations = [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
            dense = self._dense.status(conn).to_dict() | {"embedder": self.config.embedder}
        index_path = self.config.index_path
        report = self._last_report
        return {
            "root": str(self.config.root),
            "project": str(self.config.project_dir) if self.config.project_dir else None,
            "readonly": self.store.readonly,
            "index": {
                "path": str(index_path),
                "size_bytes": index_path.stat().st_size if index_path.exists() else 0,
                "schema": migrations,
                "last_refresh": report.to_dict() if report else None,
            },
            "memories": {
                "total": total,
                "by_channel": {c: by_channel.get(c, 0) for c in CHANNELS},
                "by_status": {s: by_status.get(s, 0) for s in STATUSES},
            },
            "problems": problems,
            "warnings": list(self.warnings),
            "dense": dense,
            "config": {
                "source": self.config.source,
                "mode": self.config.search.mode,
                "weights": dict(self.config.search.weights),
                "refresh_interval": self.config.search.refresh_interval,
            },
            "backends": self.backend_status(),
        }

    # -- editing in place (Serena's edit_memory and rename_memory) -----------
    def edit(
        self, name: str, needle: str, repl: str, *, mode: str = "literal", allow_multiple_occurrences: bool = False
    ) -> tuple[Memory, int]:
        """Replace ``needle`` with ``repl`` in a memory file; returns the new memory and the count.

        ``mode`` is ``literal`` or ``regex`` (MULTILINE and DOTALL); no match,
        or several without ``allow_multiple_occurrences``, changes nothing
        and raises ``InvalidInput`` (see ``memrouter.store.edit``).
        """
        from memrouter.store.edit import replace_text

        with self._lock:
            memory = self.store.read(name)
            text, count = replace_text(
                memory.text, needle, repl, mode, allow_multiple_occurrences=allow_multiple_occurrences
            )
            updated = self.store.write(memory.name, text, expected_hash=memory.hash)
            self._index_file(updated)
        return updated, count

    def rename(self, old: str, new: str) -> tuple[Memory, tuple[str, ...]]:
        """Move memory ``old`` to ``new`` and rewrite ``mem:<old>`` references in every memory.

        Returns the moved memory and the names of the memories whose
        references were rewritten. ``Conflict`` if ``new`` already exists.
        """
        from memrouter.errors import Conflict
        from memrouter.store.edit import rewrite_references

        with self._lock:
            memory = self.store.read(old)
            target = validate_name(new, strict=True)
            if target == memory.name:
                raise InvalidInput(f"memory {memory.name!r} already has that name")
            if self.store.current_hash(target) is not None:
                raise Conflict(f"memory {target!r} already exists")
            moved = self.store.write(target, memory.text, expected_hash="")
            try:
                self.store.delete(memory.name, expected_hash=memory.hash)
            except (Conflict, NotFound):
                self.store.delete(moved.name, expected_hash=moved.hash)
                raise
            with write_transaction(self._conn) as writer:
                delete_memory(self._conn, writer, memory.name)
            self._index_file(moved)
            rewritten: list[str] = []
            for stat in list(self.store.scan()):
                try:
                    other = self.store.read(stat.name)
                except (NotFound, InvalidInput):
                    continue
                text, count = rewrite_references(other.text, memory.name, moved.name)
                if count:
                    self._index_file(self.store.write(other.name, text, expected_hash=other.hash))
                    rewritten.append(other.name)
            if moved.name in rewritten:
                moved = self.store.read(moved.name)
        return moved, tuple(rewritten)


    # -- external backends (memrouter.backends, memrouter.sync) -------------
    def backends(self) -> dict[str, Any]:
        """The configured external backends that could be built, by name (built on first call).

        A backend that cannot be built (not installed, bad settings) is left
        out and its error shown by ``status``; nothing connects here.
        """
        return self._external.built()

    def backend(self, name: str) -> Any:
        """The backend ``name``; ``ConfigError`` (or the reason it could not be built) otherwise."""
        return self._external.get(name)

    def _search_backend(self, name: str, query: str, limit: int, content: bool) -> builtins.list[Hit]:
        """Results from one backend only: the caller asked for it, so being down is an error."""
        from memrouter.errors import BackendError, BackendUnavailable

        backend = self.backend(name)
        if not backend.available():
            reason = backend.health.last_error or "unreachable"
            raise BackendUnavailable(f"{name} is unavailable at {backend.endpoint}: {reason}")
        try:
            found = backend.search(query, limit)
        except BackendError as exc:
            self._external.note_error(backend, exc)
            raise
        return [hit.to_hit(content=content) for hit in found]

    def _augment(self, query: str, limit: int, hits: builtins.list[Hit], content: bool) -> builtins.list[Hit]:
        """Canonical ``hits`` plus what the healthy backends add (``memrouter.merge``)."""
        from memrouter.errors import BackendError
        from memrouter.merge import merge_hits
        from memrouter.sync.state import mapped_remote_ids

        if len(hits) >= limit:
            return hits
        external: dict[str, Any] = {}
        for name, backend in self._external.flagged("search").items():
            if not backend.available():
                continue
            try:
                external[name] = backend.search(query, limit)
            except BackendError as exc:
                self._external.note_error(backend, exc)
        if not external:
            return hits
        with self._lock:
            synced = {
                name: mapped_remote_ids(self._conn, name, [hit.remote_id for hit in found])
                for name, found in external.items()
            }
        return merge_hits(hits, external, limit, synced, content=content)

    def backend_status(self) -> builtins.list[dict[str, Any]]:
        """Each configured backend: name, availability, endpoint, health-cache age, last error, sync count."""
        if not self.config.backends:
            return []
        return self._external.status(self._synced_count)

    def _synced_count(self, backend: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT count(*) FROM sync_state WHERE backend = ? AND remote_ids != '[]'", (backend,)
            ).fetchone()
            return int(row[0])

    def _current_hashes(self) -> dict[str, str]:
        """Every memory name and content hash, after an incremental refresh (sync must see every change)."""
        with self._lock:
            self.refresh()
            return {row[0]: row[1] for row in self._conn.execute("SELECT name, hash FROM memories")}

    def sync(
        self,
        *,
        backend: str | None = None,
        changes: str = "all",
        dry_run: bool = False,
        force: bool = False,
    ) -> builtins.list[Any]:
        """Sync the canonical memories one way to the backends; one ``SyncReport`` per backend.

        ``changes`` is ``"all"`` (every memory and mapping), ``"staged"`` (what
        ``git diff --cached`` shows under the memories root) or ``"queue"``
        (the entries the pre-commit hook queued; removed once synced to every
        backend). See ``memrouter.sync.engine`` for the rules.
        """
        from memrouter.sync.engine import Syncer
        from memrouter.sync.queue import QUEUE_FILE, changes_from_entries, read_queue, remove_done, staged_changes

        if changes not in ("all", "staged", "queue"):
            raise InvalidInput(f"unknown change set {changes!r}; use all, staged or queue")
        targets = self._external.for_sync(backend)
        queue_path = self.config.index_dir / QUEUE_FILE
        entries: builtins.list[dict[str, Any]] = []
        listed: builtins.list[Any] = []
        if changes == "staged":
            listed = staged_changes(self.config.root)
        elif changes == "queue":
            entries = read_queue(queue_path)
            listed = changes_from_entries(entries)
        if changes != "all":
            self._current_hashes()  # the index must know the files before state is compared
        reports: builtins.list[Any] = []
        source_repo = self.config.project_dir.name if self.config.project_dir else None
        for target in targets:
            syncer = Syncer(
                target, self._conn, self.store.read, self._current_hashes, lock=self._lock,
                project_dir=self.config.project_dir, source_repo=source_repo,
            )  # fmt: skip
            if changes == "all":
                reports.append(syncer.sync_all(dry_run=dry_run, force=force))
            else:
                reports.append(syncer.run(listed, dry_run=dry_run, force=force))
        if changes == "queue" and entries and not dry_run:
            done = set.intersection(*(report.done for report in reports))
            remove_done(queue_path, entries, done)
        return reports

    def validate(self, *, backend: str | None = None, check_remote: bool = False) -> builtins.list[dict[str, Any]]:
        """The freshness report per backend (``memrouter.sync.validate``): local state only unless ``check_remote``."""
        from memrouter.errors import BackendUnavailable
        from memrouter.sync.validate import validate

        current = self._current_hashes()
        reports: builtins.list[Any] = []
        for target in self._external.for_sync(backend):
            remote = None
            if check_remote:
                if not target.available(force=True):
                    raise BackendUnavailable(f"{target.name} is unavailable at {target.endpoint}")
                remote = target
            with self._lock:
                reports.append(validate(self._conn, target.name, current, remote=remote))
        return reports


def _dense_only_offset(item: Fused) -> int | None:
    """Where a hit found by meaning alone matched (its best chunk), for its snippet."""
    if item.offset is None or any(match.retriever == "lexical" for match in item.why):
        return None
    return item.offset


def _with_heading(content: str, title: str) -> str:
    from memrouter.store import frontmatter

    raw, body = frontmatter.split(content)
    if "\n" in title or "\r" in title:
        raise InvalidInput("title must be a single line")
    head = content[: len(content) - len(body)]
    return f"{head}# {title}\n\n{body.lstrip()}"


def _name_from(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:120].strip("-")
    if not slug:
        raise InvalidInput("give the memory a name, or content with a '# Title' heading or a title")
    return slug


def _field_changes(**fields: Any) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key, value in fields.items():
        if value is None:
            continue
        if key == "tags":
            if isinstance(value, str):
                value = [value]
            value = [str(tag).strip() for tag in value if str(tag).strip()]
        elif key == "channel" and value not in CHANNELS:
            raise InvalidInput(f"unknown channel {value!r}; expected one of {', '.join(CHANNELS)}")
        elif key == "status" and value not in STATUSES:
            raise InvalidInput(f"unknown status {value!r}; expected one of {', '.join(STATUSES)}")
        elif key == "confidence":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise InvalidInput("confidence must be a number between 0 and 1")
            value = float(value)
        elif not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{key} must be non-empty text")
        elif len(value) > 500:
            raise InvalidInput(f"{key} is longer than 500 characters")
        changes[key] = value
    return changes

