"""The live index of one router: kept fresh, repaired when damaged, written after each memory write.

``IndexKeeper`` owns the index file (``memrouter.index.sqlite.db``), the lexical and
dense retrievers' caches and the file watcher. Every use of the index goes
through ``indexed``, which answers damage with a repair and one retry and
turns any other SQLite error into ``StorageError``. A refresh before a read
waits only briefly for other writers; a write's index update that waits past
``write_wait`` is deferred to the next refresh (the file already stands).
"""

from __future__ import annotations

import sqlite3
import time
from _thread import allocate_lock  # threading's own lock, without importing threading on a cold search
from pathlib import Path

from memrouter.core.errors import EndpointError, IndexBusy, IndexCorrupt, StorageError
from memrouter.core.lazylog import LazyLogger
from memrouter.index.folders import FOLDER_SHARE
from memrouter.index.sqlite import db, queries
from memrouter.index.sqlite.access import USAGE_FILE, AccessLog, UsageFile
from memrouter.index.sqlite.connection import DEFAULT_WRITE_WAIT
from memrouter.index.sqlite.lexical import LexicalIndex
from memrouter.index.sqlite.refresh import (
    Progress,
    RefreshReport,
    delete_memory,
    refresh_index,
    upsert_memory,
    write_transaction,
)
from memrouter.store.files import WRITE_AREA, MemoryStore, Written

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from memrouter.index.graph.view import GraphView
    from memrouter.index.sqlite.background import BackgroundEmbedder
    from memrouter.index.sqlite.dense import DenseIndex
    from memrouter.index.sqlite.graph import GraphCache
    from memrouter.store.watch import ChangeWatcher

    T = TypeVar("T")

__all__ = ["READ_REFRESH_WAIT", "RESCAN_SHARE", "IndexKeeper"]

log = LazyLogger(__name__)

# A refresh before a read waits at most this long for other writers (seconds),
# then the read is answered from the index as it is.
READ_REFRESH_WAIT = 2.0
# Without file-system events, the share of a long-running process's time its stat scans may take at most: a
# scan that took 50 ms waits at least a second before the next, one that took 0.8 s (100,000 files) 16 s.
RESCAN_SHARE = 0.05


class IndexKeeper:
    """The index of ``store``'s memories, as one router uses it (see the module docstring).

    ``lock`` is the router's re-entrant lock: the keeper's state changes only
    under it.
    """

    def __init__(
        self,
        store: MemoryStore,
        index_path: Path,
        lock: Any,
        *,
        embedder: str = "minilm",
        write_wait: float = DEFAULT_WRITE_WAIT,
        refresh_interval: float = 1.0,
        watch: bool = True,
        folder_share: float = FOLDER_SHARE,
        tokens: bool = False,
        embedder_options: dict[str, Any] | None = None,
        shared_from: Path | None = None,
    ) -> None:
        """``embedder_options``: what the embedder registered as ``embedder`` is made with (an endpoint's
        url and model, ``memrouter.embed.endpoint``); ``shared_from``: a folder of the git repository whose
        worktrees share vectors (``DenseIndex``; None: this index embeds alone)."""
        self.shared_from = shared_from
        self.store = store
        self.embedder_options = dict(embedder_options or {})
        self.folder_share = folder_share
        self.tokens = tokens  # keep token vectors for the reranker ([search] rerank)
        self.index_path = index_path
        self.embedder_name = embedder
        self.refresh_interval = refresh_interval
        self._lock = lock
        self.file = db.IndexFile(index_path, write_wait=write_wait)
        self.lexical = LexicalIndex(folder_share=self.folder_share)
        # How often each memory was returned, written in batches to usage.sqlite (memrouter.index.sqlite.access).
        usage = None if self.file.in_memory else index_path.parent / USAGE_FILE
        self.access = AccessLog(UsageFile(usage))
        self.last_report: RefreshReport | None = None
        # Writes whose file stands but whose index update waited too long (the next refresh indexes them).
        self.unindexed: list[str] = []
        # Reads answered from the index as it was, because a refresh could not get the write lock.
        self.stale_reads = 0
        self._last_check = float("-inf")
        self._scan_seconds = 0.0  # what the last refresh's scan took (finding the changes, not indexing them)
        # Dense retrieval loads on first use (see ``dense``), never for lexical search.
        self._dense: DenseIndex | None = None
        self._dense_checked: str | None = None
        # (index and dense generations, (memories lacking vectors, characters of their text)): counted once per change
        self._pending: tuple[tuple[str, str, str], tuple[int, int]] | None = None
        self._graph: GraphCache | None = None
        self._background: BackgroundEmbedder | None = None
        # A background embedder will start (``memrouter serve`` once idle): searches leave embedding to it.
        self.background_expected = False
        self._closed = False
        # Guards starting and stopping the background thread; ``_closing``: a close began (none may start).
        self._background_lock = allocate_lock()
        self._closing = False
        self._watch = watch
        self._watcher: ChangeWatcher | None = None

    @property
    def conn(self) -> db.IndexConnection:
        return self.file.conn

    @property
    def dense(self) -> DenseIndex:
        """The dense retriever, imported and built on first use (the model loads later still)."""
        with self._lock:
            if self._dense is None:
                from memrouter.index.sqlite.dense import DenseIndex

                # An index in memory has its own generations: it must not share the file caches.
                cache = None if self.file.in_memory else self.index_path.parent
                shared = None if self.file.in_memory else self.shared_from
                self._dense = DenseIndex(
                    cache, self.embedder_name, tokens=self.tokens, options=self.embedder_options, shared_from=shared
                )
            return self._dense

    def graph_view(self) -> GraphView:
        """The knowledge graph of this index generation (read once per generation; lexical search never
        loads the graph modules)."""
        with self._lock:
            if self._graph is None:
                from memrouter.index.sqlite.graph import GraphCache

                self._graph = GraphCache()
            return self._graph.view(self.conn)

    def start_background_embedding(self) -> None:
        """Embed pending memories in a background thread from now on (``memrouter.index.sqlite.background``)."""
        from memrouter.index.sqlite.background import BackgroundEmbedder

        with self._lock:
            if self._closed or (self._background is not None and self._background.running):
                return
            # The model loads here, in the caller's thread (NotInstalled is the caller's to see), so the
            # runtime's own worker threads keep their priority; only the embedding thread runs low.
            self.dense.embedder  # noqa: B018
            with self._background_lock:  # a close that began meanwhile wins: no thread it cannot stop
                if self._closing:
                    return
                self._background = BackgroundEmbedder(self.dense, self.indexed, lambda: self.conn)
                self._background.start()

    def stop_background_embedding(self, *, for_good: bool = False) -> None:
        """End the background thread, if any; ``for_good`` (closing): and start none again. Call it
        without holding the router's lock first: the thread may be waiting for that lock."""
        with self._background_lock:
            self._closing = self._closing or for_good
            background = self._background
        if background is not None:
            background.stop()

    def close(self) -> None:
        self.stop_background_embedding(for_good=True)
        with self._lock:
            self._closed = True
            if self._watcher is not None:
                self._watcher.close()
            closing = getattr(self._dense.embedder if self._dense and self._dense.loaded else None, "close", None)
            if callable(closing):  # an endpoint's connections
                closing()
            if self._dense is not None:  # the shared vector file's connections
                self._dense.shared.close()
            if self.access.pending:
                try:
                    self.access.flush()
                except sqlite3.Error as exc:  # the counts are usage, not knowledge: closing goes on
                    log.warning("access counts not written at close: %s", exc)
            self.access.usage.close()
            self.file.close()

    # -- every use of the index ------------------------------------------------
    def indexed(self, work: Callable[[], T]) -> T:
        """Run ``work`` against the index, answering damage with a repair and one retry."""
        from memrouter.index.sqlite.postings import PostingsDamaged

        with self._lock:
            try:
                return work()
            except PostingsDamaged as exc:
                log.warning("index %s: %s; rebuilding the postings", self.index_path, exc)
                self.rebuild_postings()
                return work()
            except (sqlite3.DatabaseError, IndexCorrupt) as exc:
                if not (db.is_damage(exc) or db.schema_damaged(self.conn)):
                    raise db.storage_error(exc, self.index_path) from exc
                self._recover(exc)
            except sqlite3.Error as exc:
                raise db.storage_error(exc, self.index_path) from exc
            try:
                return work()
            except sqlite3.Error as exc:
                raise db.storage_error(exc, self.index_path) from exc

    def translated(self, work: Callable[[], T]) -> T:
        """Run ``work`` (which takes the lock itself where it touches the index) with SQLite's
        errors as ``StorageError``: for long calls, such as a sync, that must not hold the lock."""
        try:
            return work()
        except sqlite3.Error as exc:
            raise db.storage_error(exc, self.index_path) from exc

    def _recover(self, exc: BaseException) -> None:
        """Damage found during use: repair the file (or fall back to memory) and forget every cache."""
        self.file.recover(exc)
        self.lexical = LexicalIndex(folder_share=self.folder_share)
        self._dense = None
        self._dense_checked = None
        self._graph = None
        self._last_check = float("-inf")

    def rebuild_postings(self) -> None:
        from memrouter.index.sqlite.refresh import rebuild_postings

        with db.transaction(self.conn):
            rebuild_postings(self.conn)
        self.lexical = LexicalIndex(folder_share=self.folder_share)

    # -- freshness -------------------------------------------------------------
    def refresh(
        self,
        *,
        full: bool = False,
        progress: Progress | None = None,
        embed: bool | None = False,
        embed_progress: Progress | None = None,
        reembed: bool = False,
    ) -> RefreshReport:
        """See ``Router.refresh``."""
        with self._lock:
            report = self.indexed(lambda: self._refresh_lexical(full, progress))
            if full:
                self.indexed(self._check_deeply)
            if embed or reembed or (embed is None and self.indexed(lambda: self.dense.has_vectors(self.conn))):
                started = time.perf_counter()
                report.embedded = self.indexed(
                    lambda: self.dense.embed_pending(self.conn, progress=embed_progress, reembed=reembed)
                )
                report.embed_ms = (time.perf_counter() - started) * 1000
                self._dense_checked = queries.generation(self.conn)
            return report

    def _check_deeply(self) -> None:
        problems = db.integrity_problems(self.conn)
        if problems:
            raise IndexCorrupt(f"integrity check failed: {'; '.join(problems[:3])}")
        self.rebuild_postings()

    def _refresh_lexical(self, full: bool, progress: Progress | None) -> RefreshReport:
        if self._watch and self._watcher is None:
            # Watch before scanning, so a change during the scan is seen next time.
            from memrouter.store.watch import ChangeWatcher

            sources = self.store.sources
            self._watcher = ChangeWatcher(self.store.root, sources.folders() if sources is not None else ())
        report = refresh_index(self.conn, self.store, full=full, progress=progress)
        self._last_check = time.monotonic()
        self._scan_seconds = report.scan_ms / 1000
        self.last_report = report
        self.unindexed.clear()
        if not self.store.readonly and self.store.stray_temps:
            from memrouter.store.atomic import remove_stale_temps

            remove_stale_temps(self.store.root / WRITE_AREA / "tmp", self.store.stray_temps)
        unreadable = {n: p for n, p in report.problems.items() if "not indexed" in p or "unreadable" in p}
        unreadable.update(
            {
                f: "the name holds .md# (a source section's name); rename the file" if "#" in f
                else "the name ends in .md twice; rename the file to one .md"
                for f in self.store.misnamed
            }
        )  # fmt: skip
        if unreadable or report.changed or report.removed:
            with db.transaction(self.conn):
                queries.record_file_problems(self.conn, unreadable)
        return report

    def ensure_fresh(self) -> None:
        """Refresh when files may have changed: always the first time, then on
        file-system events (or, without them, every ``refresh_interval`` seconds
        and never more often than keeps the scans to ``RESCAN_SHARE`` of the
        time: a scan of 100,000 files takes most of a second, and a search must
        not pay that every second; ``refresh_interval`` 0 scans before every read).

        When other processes hold the write lock past ``READ_REFRESH_WAIT``,
        reads go on from the index as it is (WAL readers never wait) and the
        refresh is tried again on the next read.
        """
        watcher = self._watcher
        if self._last_check != float("-inf"):
            if watcher is not None and watcher.available:
                if not watcher.changed():
                    return
                watcher.watch_tree()
            elif self.refresh_interval > 0 and time.monotonic() - self._last_check < max(
                self.refresh_interval, self._scan_seconds / RESCAN_SHARE
            ):
                return
        conn = self.conn
        saved, conn.write_wait = conn.write_wait, min(conn.write_wait, READ_REFRESH_WAIT)
        try:
            self.refresh()
        except IndexBusy as exc:
            log.warning("index refresh skipped: %s", exc)
            self.stale_reads += 1
            self._last_check = float("-inf")  # try again on the next read
        finally:
            self.conn.write_wait = saved

    @property
    def embedding_in_background(self) -> bool:
        """A background thread embeds pending memories, or will (``memrouter serve``): searches never wait for it."""
        return self.background_expected or (self._background is not None and self._background.running)

    @property
    def warm(self) -> bool:
        """The embedding model is loaded in this process, so embedding one memory costs only its own text."""
        return self._dense is not None and self._dense.loaded

    def pending_vectors(self) -> tuple[int, int]:
        """How many memories lack vectors for the current model, and the characters of their text (counted
        again only after the index or its vectors changed)."""
        dense = self.dense
        generations = dense.generations(self.conn)
        if self._pending is None or self._pending[0] != generations:
            self._pending = (generations, dense.pending_size(self.conn))
        return self._pending[1]

    def embedder_problem(self) -> str | None:
        """Why the configured embedder cannot load (its model is not installed...), found without loading it."""
        return self.dense.problem()

    def embed_pending(self, progress: Progress | None = None) -> int:
        """Embed every memory lacking vectors now (``NotInstalled`` without the model); how many."""
        done = self.dense.embed_pending(self.conn, progress=progress)
        self._dense_checked = queries.generation(self.conn)
        return done

    def ensure_embedded(self) -> None:
        """Embed memories added or changed since the last check (cheap when none); with a background
        thread embedding, nothing: a search uses the vectors there are and never waits."""
        if self._background is not None and self._background.running:
            return
        generation = queries.generation(self.conn)
        if generation != self._dense_checked:
            try:
                self.dense.embed_pending(self.conn)
            except EndpointError as exc:  # the embedding endpoint is down: search with the vectors there are
                log.warning("memories not embedded now: %s", exc)
                return
            self._dense_checked = generation

    def measure_recall(self, *, k: int, samples: int) -> dict[str, Any]:
        """HNSW recall@k against exact search over this index's vectors."""

        def measure() -> dict[str, Any]:
            self.ensure_fresh()
            return self.dense.measure_recall(self.conn, k=k, samples=samples)

        return self.indexed(measure)

    def note_access(self, names: list[str], now: float) -> None:
        """Count that ``names`` were returned (``memrouter.index.sqlite.access``): written in batches, never per read."""
        with self._lock:
            if self.access.note(names, now):
                self.access.flush()

    # -- after a write -----------------------------------------------------------
    def index_written(self, written: Written) -> None:
        """Index a memory just written; if the index cannot take it now, the file still stands."""

        def upsert() -> None:
            with write_transaction(self.conn) as writer:
                upsert_memory(self.conn, writer, written.memory, written.mtime_ns, written.size)

        self._index_or_defer(upsert, written.memory.name)
        if self._background is not None:
            self._background.wake()
        elif self.warm:
            self._embed_written(written.memory.name)

    def _embed_written(self, name: str) -> None:
        """Embed a memory just written, the model being loaded already (cheap: its own text); should that fail,
        the memory waits for the next search or ``memrouter index``, as ``status`` says."""
        from memrouter.core.errors import MemoryRouterError

        dense = self.dense

        def embed() -> None:
            work = dense.plan(self.conn, names=[name])
            if work is not None:
                dense.store(self.conn, work, dense.compute(work))

        try:
            self.indexed(embed)
        except (MemoryRouterError, RuntimeError, ValueError) as exc:  # RuntimeError/ValueError: the model runtime's
            log.warning("memory %s is saved and indexed, but not embedded now: %s", name, exc)

    def unindex(self, name: str) -> None:
        """Drop a deleted memory's rows (deferred like ``index_written`` when the index is busy)."""

        def remove() -> None:
            with write_transaction(self.conn) as writer:
                delete_memory(self.conn, writer, name)

        self._index_or_defer(remove, name)

    def _index_or_defer(self, change: Callable[[], None], name: str) -> None:
        try:
            self.indexed(change)
        except StorageError as exc:
            log.warning(
                "memory %s is written, but the index could not take it now (%s); the next refresh will", name, exc
            )
            self.unindexed.append(name)
            self._last_check = float("-inf")  # the next read refreshes first

    # -- reporting ---------------------------------------------------------------
    def _background_status(self) -> dict[str, Any] | None:
        return self._background.status() if self._background is not None else None

    def endpoint_health(self) -> dict[str, Any] | None:
        """The embedding endpoint asked now (``[embed] url``, ``EndpointEmbedder.health``); None without one."""
        if not self.embedder_options:
            return None
        health = getattr(self.dense.embedder, "health", None)
        return health() if callable(health) else None

    def status(self) -> dict[str, Any]:
        """The index's part of ``Router.status``: counts, problems, health, the dense index."""

        def gather() -> dict[str, Any]:
            self.ensure_fresh()
            conn = self.conn
            return {
                "memories": queries.counts(conn),
                "problems": queries.problems(conn),
                "schema": queries.migrations(conn),
                "last_repair": self.file.last_repair(),
                "dense": self.dense.status(conn).to_dict()
                | {"embedder": self.embedder_name, "background": self._background_status()},
            }

        found = self.indexed(gather)
        endpoint = self.endpoint_health()  # outside the lock: a network call
        if endpoint is not None:
            found["dense"]["endpoint"] = endpoint
        file = self.file
        mode = "file" if not file.in_memory else ("read-only copy in memory" if file.read_only else "memory")
        warnings = list(file.warnings)
        if endpoint is not None and not endpoint["ok"]:
            warnings.append(f"embedding endpoint unavailable, hybrid search is lexical alone: {endpoint['error']}")
        if self.unindexed:
            warnings.append(
                f"{len(self.unindexed)} write(s) are saved as files but not yet indexed (the index was busy); "
                "the next refresh indexes them"
            )
        path = self.index_path
        return {
            "index": {
                "path": str(path),
                "mode": mode,
                "size_bytes": path.stat().st_size if path.exists() and not file.in_memory else 0,
                "schema": found["schema"],
                "last_refresh": self.last_report.to_dict() if self.last_report else None,
                "busy_waits": self.conn.busy_waits,
                "unindexed_writes": list(self.unindexed),
                "stale_reads": self.stale_reads,
                "last_repair": found["last_repair"],
                "kept_damaged_files": file.kept_corrupt(),
            },
            "memories": found["memories"],
            "problems": found["problems"],
            "dense": found["dense"],
            "warnings": warnings,
        }
