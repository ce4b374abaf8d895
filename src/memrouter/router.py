"""The Router: one entry point over the canonical files, the index and the backends.

It only composes: the files are ``memrouter.store``'s, the index (its SQL, its
locking and repair) ``memrouter.index``'s, the external services and their
sync ``memrouter.backends`` and ``memrouter.sync``'s. A write goes to the file
first (the truth), then to the index in the same call, both under the
memory's lock, so it is visible at once; if the index is busy past its wait
limit the write still stands and the next refresh indexes it.
See ``docs/architecture.md``.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import time
from _thread import RLock  # threading.RLock is this type; importing threading costs a cold start
from pathlib import Path

from memrouter.config import Config
from memrouter.errors import IndexBusy, IndexCorrupt, InvalidInput, NotFound, StorageError
from memrouter.index import db, queries
from memrouter.index.fusion import Ranked, reciprocal_rank_fusion
from memrouter.index.lexical import LexicalIndex, snippet
from memrouter.index.refresh import Progress, RefreshReport, delete_memory, refresh_index, upsert_memory, write_transaction
from memrouter.lazylog import LazyLogger
from memrouter.model import MODES, Filters, Hit, Memory, MemorySummary
from memrouter.query import check_limit, check_query, make_filters
from memrouter.store.files import MemoryStore, Written
from memrouter.store.names import validate_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, TypeVar

    from memrouter.backends.configured import ConfiguredBackends
    from memrouter.index.dense import DenseIndex
    from memrouter.index.fusion import Fused
    from memrouter.store.watch import ChangeWatcher

    T = TypeVar("T")

__all__ = ["Router", "CANONICAL"]

log = LazyLogger(__name__)

CANONICAL = "canonical"
# Each retriever returns this many candidates before fusion (docs/architecture.md "Search").
CANDIDATE_POOL = 50
# A refresh before a read waits at most this long for other writers (seconds),
# then the read is answered from the index as it is.
READ_REFRESH_WAIT = 2.0


class Router:
    """Search and manage memories for one memories root.

    Open one with ``Router.open(root=..., index_dir=...)``; it holds one index
    connection and is safe to share between threads, and any number of
    processes may open the same root at once.
    """

    def __init__(self, config: Config, *, watch: bool = True) -> None:
        self.config = config
        existing = next((p for p in (config.root, *config.root.parents) if p.exists()), config.root)
        readonly = not os.access(existing, os.W_OK)  # a root not made yet is made by the first write
        self.store = MemoryStore(config.root, readonly=readonly)
        self._lock = RLock()
        self._index = db.IndexFile(config.index_path, write_wait=config.index.write_wait)
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
        # Writes whose file stands but whose index update waited too long (picked up by the next refresh).
        self._unindexed: builtins.list[str] = []
        # Reads answered from the index as it was, because a refresh could not get the write lock.
        self._stale_reads = 0

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
            self._index.close()

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _conn(self) -> db.IndexConnection:
        return self._index.conn

    @property
    def warnings(self) -> builtins.list[str]:
        """What went wrong with the index in this process (repairs, fallbacks)."""
        return builtins.list(self._index.warnings)

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

                # An index in memory has its own generations: it must not share the file caches.
                cache = None if self._index.in_memory else self.config.index_dir
                self._dense_index = DenseIndex(cache, self.config.embedder)
            return self._dense_index

    # -- the index: every use goes through _indexed -------------------------
    def _indexed(self, work: Callable[[], T]) -> T:
        """Run ``work`` against the index, answering damage with a repair and one retry.

        A busy index is waited for inside ``work`` (``db.begin_immediate``);
        any other SQLite error becomes a ``StorageError`` with a clear message.
        """
        from memrouter.index.postings import PostingsDamaged

        with self._lock:
            try:
                return work()
            except PostingsDamaged as exc:
                log.warning("index %s: %s; rebuilding the postings", self.config.index_path, exc)
                self._repair_postings()
                return work()
            except (sqlite3.DatabaseError, IndexCorrupt) as exc:
                if not (db.is_damage(exc) or db.schema_damaged(self._conn)):
                    raise db.storage_error(exc, self.config.index_path) from exc
                self._recover(exc)
            try:
                return work()
            except sqlite3.Error as exc:
                raise db.storage_error(exc, self.config.index_path) from exc

    def _recover(self, exc: BaseException) -> None:
        """Damage found during use: repair the file (or fall back to memory) and forget every cache."""
        self._index.recover(exc)
        self._lexical = LexicalIndex()
        self._dense_index = None
        self._dense_checked = None
        self._last_check = float("-inf")

    def _repair_postings(self) -> None:
        from memrouter.index.refresh import rebuild_postings

        with db.transaction(self._conn):
            rebuild_postings(self._conn)
        self._lexical = LexicalIndex()

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

        ``full`` also re-reads every file, checks the database and rebuilds
        the postings from the memory rows. ``embed=True`` also embeds every
        memory that lacks current vectors (building the dense index on first
        use); ``None`` does so only if the dense index is already in use;
        ``reembed`` drops vectors made by another model first.
        """
        with self._lock:
            report = self._indexed(lambda: self._refresh_lexical(full, progress))
            if full:
                self._indexed(self._check_deeply)
            if embed or reembed or (embed is None and self._indexed(lambda: self._dense.has_vectors(self._conn))):
                self._indexed(lambda: self._dense.embed_pending(self._conn, progress=embed_progress, reembed=reembed))
                self._dense_checked = queries.generation(self._conn)
            return report

    def _check_deeply(self) -> None:
        problems = db.integrity_problems(self._conn)
        if problems:
            raise IndexCorrupt(f"integrity check failed: {'; '.join(problems[:3])}")
        self._repair_postings()

    def effective_mode(self, mode: str | None = None) -> str:
        """The mode a search will use.

        ``hybrid`` fuses the retrievers the index has: until it holds vectors
        (``memrouter index`` builds them) that is lexical alone, so a search
        never starts embedding a whole corpus by surprise. ``semantic`` asks
        for vectors explicitly and builds any that are missing.
        """
        mode = mode or self.config.search.mode
        if mode not in MODES:
            raise InvalidInput(f"unknown search mode {mode!r}; use {', '.join(MODES)}")
        if mode == "hybrid":
            return mode if self._indexed(lambda: self._dense.has_vectors(self._conn)) else "lexical"
        return mode

    def _refresh_lexical(self, full: bool, progress: Progress | None) -> RefreshReport:
        if self._watch and self._watcher is None:
            # Watch before scanning, so a change during the scan is seen next time.
            from memrouter.store.watch import ChangeWatcher

            self._watcher = ChangeWatcher(self.config.root)
        report = refresh_index(self._conn, self.store, full=full, progress=progress)
        self._last_check = time.monotonic()
        self._last_report = report
        self._unindexed.clear()
        if not self.store.readonly and self.store.stray_temps:
            from memrouter.store.files import remove_stale_temps

            remove_stale_temps(self.config.root / ".memrouter-write" / "tmp", self.store.stray_temps)
        unreadable = {n: p for n, p in report.problems.items() if "not indexed" in p or "unreadable" in p}
        unreadable.update({f: "the name ends in .md twice; rename the file to one .md" for f in self.store.misnamed})
        if unreadable or report.changed or report.removed:
            with db.transaction(self._conn):
                queries.record_file_problems(self._conn, unreadable)
        return report

    def _ensure_fresh(self) -> None:
        """Refresh when files may have changed: always the first time, then on
        file-system events (or every ``refresh_interval`` seconds without them).

        When other processes hold the index's write lock past the wait limit,
        reads go on from the index as it is (WAL readers never wait) and the
        refresh is tried again on the next read.
        """
        watcher = self._watcher
        if self._last_check != float("-inf"):
            if watcher is not None and watcher.available:
                if not watcher.changed():
                    return
                watcher.watch_tree()
            elif time.monotonic() - self._last_check < self.config.search.refresh_interval:
                return
        conn = self._conn
        saved, conn.write_wait = conn.write_wait, min(conn.write_wait, READ_REFRESH_WAIT)
        try:
            self.refresh()
        except IndexBusy as exc:
            log.warning("index refresh skipped: %s", exc)
            self._stale_reads += 1
            self._last_check = float("-inf")  # try again on the next read
        finally:
            self._conn.write_wait = saved

    # -- reading -----------------------------------------------------------
    def search(
        self,
        query: str,
        limit: int | None = None,
        mode: str | None = None,
        *,
        channels: Iterable[str] | str | None = None,
        kinds: Iterable[str] | str | None = None,
        scopes: Iterable[str] | str | None = None,
        statuses: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
        prefix: str | None = None,
        content: bool = False,
        origin: str | None = None,
    ) -> builtins.list[Hit]:
        """The best memories for ``query``, best first, each saying why it matched.

        ``limit`` and ``mode`` default to the configuration's ``[search]``.
        ``origin`` picks where results come from: ``None`` (the default) is
        the canonical results, then what healthy external backends add
        (never failing when one is down); ``"canonical"`` only the files; a
        backend's name only that backend (``BackendUnavailable`` if it is down).
        Each hit's ``source`` says where it came from.
        """
        query = check_query(query)
        limit = check_limit(self.config.search.limit if limit is None else limit)
        filters = make_filters(
            channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags, prefix=prefix
        )
        mode = self.effective_mode(mode)
        if origin is not None and origin != CANONICAL:
            return self._search_backend(origin, query, limit, content)

        def canonical() -> builtins.list[Hit]:
            self._ensure_fresh()
            if mode != "lexical":
                self._ensure_embedded()
            return self._search_canonical(query, limit, mode, filters, content)

        hits = self._indexed(canonical)
        if origin == CANONICAL or not self.config.backends or not filters.empty:
            return hits
        return self._augment(query, limit, hits, content)

    def _search_canonical(self, query: str, limit: int, mode: str, filters: Filters, content: bool) -> builtins.list[Hit]:
        """Candidates from each retriever the mode uses, fused, cut to ``limit``."""
        # Lexical scoring is exact and one list keeps its own order through
        # fusion, so lexical search alone needs only ``limit`` candidates.
        pool = limit if mode == "lexical" else max(limit, CANDIDATE_POOL)
        lists = self._candidates(query, mode, filters, pool)
        fused = reciprocal_rank_fusion(lists, self.config.search.weights, self.config.search.rrf_k, limit)
        rows = queries.hit_rows(self._conn, [item.memory_id for item in fused])
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

    def _candidates(self, query: str, mode: str, filters: Filters, pool: int) -> dict[str, builtins.list[Ranked]]:
        """Each retriever's top ``pool`` for the query, filters applied inside each."""
        lists: dict[str, builtins.list[Ranked]] = {}
        if mode in ("hybrid", "lexical"):
            lists["lexical"] = self._lexical.search(self._conn, query, filters, limit=pool)
        if mode in ("hybrid", "semantic"):
            lists["dense"] = self._dense.search(self._conn, query, filters, limit=pool)
        return lists

    def measure_recall(self, *, k: int = 10, samples: int = 200) -> dict[str, Any]:
        """HNSW recall@k against exact search over this index's vectors (``doctor --recall``)."""

        def measure() -> dict[str, Any]:
            self._ensure_fresh()
            return self._dense.measure_recall(self._conn, k=k, samples=samples)

        return self._indexed(measure)

    def _ensure_embedded(self) -> None:
        """Embed memories added or changed since the last check (cheap when none)."""
        generation = queries.generation(self._conn)
        if generation != self._dense_checked:
            self._dense.embed_pending(self._conn)
            self._dense_checked = generation

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
        *,
        channels: Iterable[str] | str | None = None,
        kinds: Iterable[str] | str | None = None,
        scopes: Iterable[str] | str | None = None,
        statuses: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
    ) -> builtins.list[MemorySummary]:
        """The indexed memories (optionally under ``prefix`` and passing the filters ``search`` takes), by name."""
        filters = make_filters(
            channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags, prefix=prefix
        )

        def listed() -> builtins.list[MemorySummary]:
            self._ensure_fresh()
            return queries.summaries(self._conn, filters)

        return self._indexed(listed)

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

        Fields given here are set in the front matter (``source`` is the
        provenance: an ADR, a commit, a URL); every other front-matter key in
        ``content`` is kept as written. Without ``name``, one is made from the
        title or the first heading. ``expected_hash`` (``""`` for "must not
        exist") refuses to overwrite a concurrent change: the check and the
        write are one step, however many processes write.
        """
        from memrouter.store.compose import compose

        name, text = compose(
            content, name, title=title, tags=tags, kind=kind, channel=channel, scope=scope, status=status,
            source=source, author=author, confidence=confidence, valid_from=valid_from, valid_until=valid_until,
        )  # fmt: skip
        if expected_hash is not None and not isinstance(expected_hash, str):
            raise InvalidInput("expected_hash must be text (a content hash, or '' for a new memory)")
        with self._lock, self.store.lock(name):
            written = self.store.write(name, text, expected_hash=expected_hash)
            self._index_written(written)
        return written.memory

    def delete(self, name: str, reason: str | None = None, *, expected_hash: str | None = None) -> Memory:
        """Remove the memory file and its index rows; returns what was deleted."""
        from memrouter.store.compose import check_reason

        reason = check_reason(reason)
        name = validate_name(name, strict=False)
        with self._lock, self.store.lock(name):
            memory = self.store.delete(name, expected_hash=expected_hash)
            self._unindex(memory.name)
        log.info("deleted memory %s%s", memory.name, f" ({reason})" if reason else "")
        return memory

    def _index_written(self, written: Written) -> None:
        """Index a memory just written; if the index cannot take it now, the file still stands."""

        def upsert() -> None:
            with write_transaction(self._conn) as writer:
                upsert_memory(self._conn, writer, written.memory, written.mtime_ns, written.size)

        self._index_or_defer(upsert, written.memory.name)

    def _unindex(self, name: str) -> None:
        def remove() -> None:
            with write_transaction(self._conn) as writer:
                delete_memory(self._conn, writer, name)

        self._index_or_defer(remove, name)

    def _index_or_defer(self, change: Callable[[], None], name: str) -> None:
        try:
            self._indexed(change)
        except StorageError as exc:
            log.warning("memory %s is written, but the index could not take it now (%s); the next refresh will", name, exc)
            self._unindexed.append(name)
            self._last_check = float("-inf")  # the next read refreshes first

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

        name = validate_name(name, strict=False)
        with self._lock, self.store.lock(name):
            memory = self.store.read(name)
            text, count = replace_text(
                memory.text, needle, repl, mode, allow_multiple_occurrences=allow_multiple_occurrences
            )
            written = self.store.write(memory.name, text, expected_hash=memory.hash)
            self._index_written(written)
        return written.memory, count

    def rename(self, old: str, new: str) -> tuple[Memory, tuple[str, ...]]:
        """Move memory ``old`` to ``new`` and rewrite ``mem:<old>`` references in every memory.

        Returns the moved memory and the names of the memories whose
        references were rewritten. ``Conflict`` if ``new`` already exists.
        """
        from memrouter.errors import Conflict
        from memrouter.store.edit import rewrite_references

        source = validate_name(old, strict=False)
        target = validate_name(new, strict=True)
        if target == source:
            raise InvalidInput(f"memory {source!r} already has that name")
        with self._lock:
            with self.store.lock(source, target):
                memory = self.store.read(source)
                moved = self.store.write(target, memory.text, expected_hash="")
                try:
                    self.store.delete(memory.name, expected_hash=memory.hash)
                except (Conflict, NotFound):
                    self.store.delete(moved.memory.name, expected_hash=moved.memory.hash)
                    raise
                self._unindex(memory.name)
                self._index_written(moved)
            rewritten: builtins.list[str] = []
            for stat in builtins.list(self.store.scan()):
                with self.store.lock(stat.name):
                    try:
                        other = self.store.read(stat.name)
                    except (NotFound, InvalidInput):
                        continue
                    text, count = rewrite_references(other.text, memory.name, moved.memory.name)
                    if count:
                        self._index_written(self.store.write(other.name, text, expected_hash=other.hash))
                        rewritten.append(other.name)
            result = self.store.read(moved.memory.name) if moved.memory.name in rewritten else moved.memory
        return result, tuple(rewritten)

    # -- reporting ---------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, index freshness and health, problems and configuration, JSON-ready."""

        def gather() -> dict[str, Any]:
            self._ensure_fresh()
            conn = self._conn
            return {
                "memories": queries.counts(conn),
                "problems": queries.problems(conn),
                "schema": queries.migrations(conn),
                "last_repair": self._index.last_repair(),
                "dense": self._dense.status(conn).to_dict() | {"embedder": self.config.embedder},
            }

        found = self._indexed(gather)
        index_path = self.config.index_path
        report = self._last_report
        index_mode = "file" if not self._index.in_memory else ("read-only copy in memory" if self._index.read_only else "memory")
        warnings = self.warnings
        if self._unindexed:
            warnings.append(
                f"{len(self._unindexed)} write(s) are saved as files but not yet indexed (the index was busy); "
                "the next refresh indexes them"
            )
        warnings += [f"unknown configuration key {key!r} (ignored)" for key in self.config.unknown_keys]
        return {
            "root": str(self.config.root),
            "project": str(self.config.project_dir) if self.config.project_dir else None,
            "readonly": self.store.readonly,
            "index": {
                "path": str(index_path),
                "mode": index_mode,
                "size_bytes": index_path.stat().st_size if index_path.exists() and not self._index.in_memory else 0,
                "schema": found["schema"],
                "last_refresh": report.to_dict() if report else None,
                "busy_waits": self._conn.busy_waits,
                "unindexed_writes": builtins.list(self._unindexed),
                "stale_reads": self._stale_reads,
                "last_repair": found["last_repair"],
                "kept_damaged_files": self._index.kept_corrupt(),
            },
            "memories": found["memories"],
            "problems": found["problems"],
            "warnings": warnings,
            "dense": found["dense"],
            "config": self.config.summary(),
            "backends": self.backend_status(),
        }

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
        synced = self._indexed(
            lambda: {
                name: mapped_remote_ids(self._conn, name, [hit.remote_id for hit in found])
                for name, found in external.items()
            }
        )
        return merge_hits(hits, external, limit, synced, content=content)

    def backend_status(self) -> builtins.list[dict[str, Any]]:
        """Each configured backend: name, availability, endpoint, health-cache age, last error, sync count."""
        if not self.config.backends:
            return []
        return self._external.status(lambda backend: self._indexed(lambda: queries.synced_count(self._conn, backend)))

    def _current_hashes(self) -> dict[str, str]:
        """Every memory name and content hash, after an incremental refresh (sync must see every change)."""
        with self._lock:
            self.refresh()
            return self._indexed(lambda: queries.current_hashes(self._conn))

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
        from memrouter.sync.run import run_sync

        return run_sync(
            self._external.for_sync(backend), self._conn, self.config, self.store.read, self._current_hashes,
            self._lock, changes=changes, dry_run=dry_run, force=force,
        )  # fmt: skip

    def validate(self, *, backend: str | None = None, check_remote: bool = False) -> builtins.list[dict[str, Any]]:
        """The freshness report per backend (``memrouter.sync.validate``): local state only unless ``check_remote``."""
        from memrouter.sync.run import run_validate

        current = self._current_hashes()
        targets = self._external.for_sync(backend)
        return run_validate(targets, self._conn, current, self._lock, check_remote=check_remote)


def _dense_only_offset(item: Fused) -> int | None:
    """Where a hit found by meaning alone matched (its best chunk), for its snippet."""
    if item.offset is None or any(match.retriever == "lexical" for match in item.why):
        return None
    return item.offset
