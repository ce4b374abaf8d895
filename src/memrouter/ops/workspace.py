"""The workspace: what every use case in ``memrouter.ops`` works on.

One memories root's files (``store``), its local index (``index``, always
SQLite, which follows the files), what searches read (``reader``: the local
index, or the project's rows in PostgreSQL with ``[index] url``, the local
index answering while the database is down) and the search pipeline over it
(``pipeline``), the clock
that says "now", and the lock that orders this process's changes. The Router
opens one and hands it to the use cases; they never see the Router, and the
workspace knows no use case. What costs something to open (the team channel,
the scratchpad, git's record times, snapshots of past commits, the external
services) opens on first use.
"""

from __future__ import annotations

import os
import time
from _thread import RLock  # threading.RLock is this type; importing threading costs a cold start
from pathlib import Path

from memrouter.config.settings import Config
from memrouter.core.errors import InvalidInput, NotFound
from memrouter.index.search import SearchPipeline
from memrouter.index.sqlite.keeper import IndexKeeper
from memrouter.index.sqlite.reader import SqliteReader
from memrouter.store.files import MemoryStore
from memrouter.store.sources import SourceFiles

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable

    from memrouter.core.model import Memory
    from memrouter.external.services import ExternalServices
    from memrouter.index.postgres.shared import SharedDatabases
    from memrouter.index.protocol import IndexReader, Mirrored
    from memrouter.index.sqlite.activity import ActivityTimes, Lent
    from memrouter.index.sqlite.connection import IndexConnection
    from memrouter.ops.asof import PastIndexes
    from memrouter.ops.audit import MemoryAudit
    from memrouter.ops.branch_search import BranchMemories
    from memrouter.ops.scratch import Scratchpad
    from memrouter.team import Team

__all__ = ["Workspace"]


class Workspace:
    """One memories root as the use cases see it (see the module docstring)."""

    def __init__(
        self, config: Config, *, watch: bool = True, clock: Callable[[], float] | None = None,
        record_times: Lent | None = None, databases: SharedDatabases | None = None,
    ) -> None:  # fmt: skip
        """``record_times``: commit times lent by the live workspace to one over a past commit
        (``memrouter.ops.asof``); ``databases``: PostgreSQL pools shared with the other workspaces of
        this process (``memrouter.index.postgres.shared``)."""
        self.config = config
        self.clock = clock or time.time  # "now" for validity and sprints (seconds since the epoch)
        existing = next((p for p in (config.root, *config.root.parents) if p.exists()), config.root)
        readonly = not os.access(existing, os.W_OK)  # a root not made yet is made by the first write
        sources = None
        if config.project_dir is not None and config.sources:
            sources = SourceFiles(config.project_dir, config.sources, exclude=(config.root, config.index_dir))
        self.store = MemoryStore(config.root, readonly=readonly, sources=sources)
        self._audit: MemoryAudit | None = None
        self.store.observer = self._audited  # every change the store makes is logged (``memrouter.ops.audit``)
        self.lock = RLock()
        self.index = IndexKeeper(
            self.store, config.index_path, self.lock, embedder=config.embedder, write_wait=config.index.write_wait,
            refresh_interval=config.search.refresh_interval, watch=watch, folder_share=config.search.folder_context,
            tokens=config.search.rerank and config.rerank_endpoint is None, embedder_options=config.embedder_options,
            shared_from=config.project_dir if config.index.shared_vectors else None,
        )  # fmt: skip
        local = SqliteReader(self.index)
        self.reader: IndexReader = local
        self.mirror: Mirrored | None = None  # a copy of the local index that the freshness step keeps in step
        if config.index.url:
            from memrouter.index.fallback import FallbackReader
            from memrouter.index.postgres.reader import PostgresReader  # the driver loads only when configured

            primary = PostgresReader(
                config.index.url, config.project_key, self.index, config.root, ef_search=config.index.ef_search,
                shared=databases,
            )  # fmt: skip
            self.reader = self.mirror = FallbackReader(primary, local, self.index.file.warnings)
        self.pipeline = SearchPipeline(self.index, self.reader, config, self.activity, self.content_of)
        # Opened on first use.
        self.past: PastIndexes[Workspace] | None = None  # made by the first search as of a date or commit
        self.others: BranchMemories[Workspace] | None = None  # made by the first search with other branches' memories
        self._services: ExternalServices | None = None
        self._team: Team | None = None
        self._scratch: Scratchpad | None = None
        self._activity: ActivityTimes | None = None
        self._lent_times = record_times

    def ensure_fresh(self, *, embedded: bool = False) -> None:
        """The freshness step before a read: the local index follows the files (``IndexKeeper.ensure_fresh``;
        ``embedded``: its vectors too, ``IndexKeeper.ensure_embedded``), then a copy of it (PostgreSQL)
        follows the local index. Reads themselves never write."""
        self.index.indexed(lambda: self._fresh(embedded))

    def _fresh(self, embedded: bool) -> None:
        # One unit of work for ``indexed``: when the push finds the local index damaged, the repair's retry
        # rebuilds it from the files before anything is pushed, never pushing an empty index.
        self.index.ensure_fresh()
        if embedded:
            self.index.ensure_embedded()
        if self.mirror is not None:
            self.mirror.sync()

    @property
    def conn(self) -> IndexConnection:
        """The local index's connection (use it inside ``index.indexed``)."""
        return self.index.conn

    def _audited(self, name: str, before: str | None, after: Memory | None) -> None:
        """Log one change the store made; the audit log opens with the first (a search makes none)."""
        if self._audit is None:
            from memrouter.ops.audit import MemoryAudit  # a process that only reads never loads it

            self._audit = MemoryAudit(Path(self.config.index_dir), self.config.project_dir)
        self._audit.observe(name, before, after)

    def team(self) -> Team:
        """The team channel (``team.sqlite``, or PostgreSQL with ``[index] url``), opened on first use."""
        with self.lock:
            if self._team is None:
                from memrouter.team import Team  # a search never needs it

                self._team = Team.for_config(self.config)
            return self._team

    def scratchpad(self) -> Scratchpad:
        """The short-term channel: per-owner notes in ``<index_dir>/scratch.sqlite``, opened on first use."""
        with self.lock:
            if self._scratch is None:
                from memrouter.ops.scratch import open_scratchpad  # a search never needs it

                self._scratch = open_scratchpad(self.config.index_dir, self.config.scratch_ttl, self.clock)
            return self._scratch

    def external(self) -> ExternalServices:
        """The configured external services (none is built or connected until used)."""
        with self.lock:  # one set per workspace, however many threads ask first
            if self._services is None:
                from memrouter.external.services import ExternalServices  # only when a service is asked

                self._services = ExternalServices(self.config, lambda: self.index.conn, self.index.indexed, self.lock)
            return self._services

    def activity(self) -> ActivityTimes:
        """When each memory was written or changed (git and front matter), made on first need."""
        with self.lock:
            if self._activity is None:
                from memrouter.index.sqlite.activity import ActivityTimes  # only time words, recency and dates need it

                self._activity = ActivityTimes(self.config.root, self._lent_times)
            return self._activity

    def lend_record_times(self, moment: float) -> tuple[str | None, dict[str, list[int]]]:
        """Commit times up to ``moment`` for a past workspace's time words (it has no git of its own)."""
        return self.index.indexed(lambda: self.activity().commits_until(self.conn, moment))

    def content_of(self, name: str) -> str | None:
        """The text of memory ``name``, or None when it cannot be read."""
        try:
            return self.store.read(name).text
        except (NotFound, InvalidInput):
            return None

    def close(self) -> None:
        """Stop the background work and close everything this workspace opened."""
        self.index.stop_background_embedding(for_good=True)  # before the lock: the thread may wait for it
        with self.lock:
            if self._scratch is not None:
                self._scratch.close()
            if self.past is not None:
                self.past.close()
            if self.others is not None:
                self.others.close()
            if self._team is not None:
                self._team.close()
            if self._services is not None:
                self._services.close()
            self.reader.close()
            self.pipeline.close()
            self.index.close()
