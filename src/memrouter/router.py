"""The Router: one entry point over the canonical files, the index and the backends.

It only composes: the files are ``memrouter.store``'s, the index (its SQL, its
locking and repair) ``memrouter.index``'s, the external services and their
sync ``memrouter.external.backends`` and ``memrouter.external.sync``'s. A write goes to the file
first (the truth), then to the index in the same call, both under the
memory's lock, so it is visible at once; if the index is busy past its wait
limit the write still stands and the next refresh indexes it.
See ``docs/architecture.md``.
"""

from __future__ import annotations

import builtins
import os
import time
from _thread import RLock  # threading.RLock is this type; importing threading costs a cold start
from pathlib import Path

from memrouter.config.settings import Config
from memrouter.core.errors import InvalidInput, NotFound
from memrouter.core.lazylog import LazyLogger
from memrouter.core.model import MODES, Hit, Memory, MemorySummary
from memrouter.core.names import validate_name
from memrouter.core.query import check_limit, check_query, make_filters, search_filters
from memrouter.index.search import CANONICAL, make_search
from memrouter.index.sqlite import queries
from memrouter.index.sqlite.keeper import IndexKeeper
from memrouter.index.sqlite.refresh import Progress, RefreshReport
from memrouter.ops.audit import audited
from memrouter.ops.external import ExternalQueries
from memrouter.ops.graph import GraphQueries
from memrouter.ops.history import HistoryQueries
from memrouter.ops.review import ReviewQueries, attach_audit
from memrouter.store.files import MemoryStore

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from memrouter.external.services import ExternalServices
    from memrouter.guard import Verdict
    from memrouter.index.activity import ActivityTimes, Lent
    from memrouter.index.postgres.shared import SharedDatabases
    from memrouter.index.sqlite.connection import IndexConnection
    from memrouter.ops.context import Context
    from memrouter.ops.janitor.records import JanitorReport
    from memrouter.ops.lifecycle import Lifecycle, Promotion
    from memrouter.ops.scratch import Scratchpad
    from memrouter.team import Team

__all__ = ["Router", "CANONICAL"]

log = LazyLogger(__name__)


class Router(GraphQueries, HistoryQueries, ExternalQueries, ReviewQueries):
    """Search and manage memories for one memories root.

    Open one with ``Router.open(root=..., index_dir=...)``; it is safe to share
    between threads, and any number of processes may open the same root at once.
    """

    def __init__(
        self, config: Config, *, watch: bool = True, clock: Callable[[], float] | None = None,
        record_times: Lent | None = None, databases: SharedDatabases | None = None,
    ) -> None:  # fmt: skip
        """``record_times``: commit times lent by the live router to one over a past commit (``memrouter.ops.asof``);
        ``databases``: PostgreSQL pools shared with other routers of this process (``memrouter.index.postgres.shared``)."""
        self.config = config
        self.clock = clock or time.time  # "now" for validity and sprints (seconds since the epoch)
        existing = next((p for p in (config.root, *config.root.parents) if p.exists()), config.root)
        readonly = not os.access(existing, os.W_OK)  # a root not made yet is made by the first write
        self.store = MemoryStore(config.root, readonly=readonly)
        attach_audit(self.store, config)  # every change the store makes is a line of audit.jsonl
        self._lock = RLock()
        self._index = IndexKeeper(
            self.store, config.index_path, self._lock, embedder=config.embedder, write_wait=config.index.write_wait,
            refresh_interval=config.search.refresh_interval, watch=watch, folder_share=config.search.folder_context,
            tokens=config.search.rerank,
        )  # fmt: skip
        # External services, built from config.backends on first need (see _external).
        self._services: ExternalServices | None = None
        self._team: Team | None = None
        self._scratch: Scratchpad | None = None
        self._past = None  # memrouter.ops.asof.PastIndexes, made by the first search as_of a date or commit
        self._activity: ActivityTimes | None = None
        self._lent_times = record_times
        self._searcher = make_search(self._index, config, self._activity_times, self._content_of, databases)

    @classmethod
    def open(
        cls,
        root: str | Path | None = None,
        index_dir: str | Path | None = None,
        *,
        config: Config | None = None,
        watch: bool = True,
        clock: Callable[[], float] | None = None,
    ) -> Router:
        """Open the router for ``root`` (or the project found from the working directory).

        ``watch``: a long-lived router notices file changes through the OS instead of scanning.
        """
        return cls(config or Config.load(root=root, index_dir=index_dir), watch=watch, clock=clock)

    def team(self) -> Team:
        """The team channel of this project (``team.sqlite``, or PostgreSQL with ``[index] url``), opened on first use."""
        with self._lock:
            if self._team is None:
                from memrouter.team import Team

                self._team = Team.for_config(self.config)
            return self._team

    def scratchpad(self) -> Scratchpad:
        """The short-term channel: per-owner notes in ``<index_dir>/scratch.sqlite``, opened on first use."""
        with self._lock:
            if self._scratch is None:
                from memrouter.ops.scratch import open_scratchpad

                self._scratch = open_scratchpad(self.config.index_dir, self.config.scratch_ttl, self.clock)
            return self._scratch

    def embed_in_background(self) -> None:
        """Embed memories lacking vectors in a low-priority background thread from now on: searches use
        the vectors there are and never wait (``memrouter.index.sqlite.background``); ``status`` shows progress."""
        self._index.start_background_embedding()

    def close(self) -> None:
        self._index.stop_background_embedding(for_good=True)  # before the lock: the thread may wait for it
        with self._lock:
            if self._scratch is not None:
                self._scratch.close()
            if self._past is not None:
                self._past.close()
            if self._team is not None:
                self._team.close()
            if self._services is not None:
                self._services.close()
            self._searcher.close()
            self._index.close()

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _conn(self) -> IndexConnection:
        return self._index.conn

    @property
    def warnings(self) -> builtins.list[str]:
        """What went wrong with the index in this process (repairs, fallbacks)."""
        return builtins.list(self._index.file.warnings)

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

        ``full`` also re-reads every file, checks the database and rebuilds the postings from the
        memory rows. ``embed=True`` also embeds every memory that lacks current vectors (building the
        dense index on first use); ``None`` only if it is in use; ``reembed`` drops other models' vectors first.
        """
        return self._index.refresh(
            full=full, progress=progress, embed=embed, embed_progress=embed_progress, reembed=reembed
        )

    def effective_mode(self, mode: str | None = None) -> str:
        """The mode a search will use: ``hybrid`` is lexical alone until the index holds vectors
        (``memrouter index`` builds them), so a search never embeds a corpus by surprise;
        ``semantic`` asks for vectors explicitly and builds any that are missing."""
        mode = mode or self.config.search.mode
        if mode not in MODES:
            raise InvalidInput(f"unknown search mode {mode!r}; use {', '.join(MODES)}")
        if mode == "hybrid":
            has_vectors = self._index.indexed(lambda: self._index.dense.has_vectors(self._conn))
            return mode if has_vectors else "lexical"
        return mode

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
        include_history: bool = False,
        include_archived: bool = False,
        owner: str | None = None,
        as_of: str | None = None,
    ) -> builtins.list[Hit]:
        """The best memories for ``query``, best first, each saying why it matched.

        ``limit`` and ``mode`` default to the configuration's ``[search]``.
        ``origin`` picks where results come from: ``None`` (the default) is
        the canonical results, then what healthy external backends add
        (never failing when one is down); ``"canonical"`` only the files; a
        backend's name only that backend (``BackendUnavailable`` if it is down).
        Each hit's ``source`` says where it came from. Without ``channels``: long-term and sprint;
        ``include_history`` / ``include_archived`` bring back, marked, what is not in effect (``memrouter.ops.lifecycle``).
        ``owner`` adds that owner's short-term scratchpad notes that match (``memrouter.ops.scratch``), after the rest.
        ``as_of`` (a date or commit) searches the memories as committed then (``memrouter.ops.asof``).
        """
        if as_of is not None:
            return self._past_router(as_of).search(
                query, limit, mode, channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags,
                prefix=prefix, content=content, include_history=include_history, include_archived=include_archived,
            )  # fmt: skip
        query = check_query(query)
        limit = check_limit(self.config.search.limit if limit is None else limit)
        asked = make_filters(channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags, prefix=prefix)
        now = self.clock()
        filters = search_filters(asked, now, history=include_history, archived=include_archived)
        mode = self.effective_mode(mode)
        if origin is not None and origin != CANONICAL:
            return self._external.search_one(origin, query, limit, content)

        def canonical() -> builtins.list[Hit]:
            self._index.ensure_fresh()
            if mode != "lexical":
                self._index.ensure_embedded()
            found = self._searcher.run(query, limit, mode, filters, content, now)
            return self.lifecycle.mark(self._conn, found, now) if filters.now is None or filters.archived else found

        hits = self._index.indexed(canonical)
        if owner is not None and (not asked.channels or "short_term" in asked.channels) and len(hits) < limit:
            hits += self.scratchpad().search(owner, query, limit - len(hits))
        if origin == CANONICAL or not self.config.backends or not asked.empty:
            return hits
        return self._external.augment(query, limit, hits, content)

    def _activity_times(self) -> ActivityTimes:
        """When each memory was written or changed (git and front matter), made on first need."""
        with self._lock:
            if self._activity is None:
                from memrouter.index.activity import ActivityTimes

                self._activity = ActivityTimes(self.config.root, self._lent_times)
            return self._activity

    def _lend_record_times(self, moment: float) -> tuple[str | None, dict[str, list[int]]]:
        """Commit times up to ``moment`` for a past router's time words (it has no git of its own)."""
        return self._index.indexed(lambda: self._activity_times().commits_until(self._conn, moment))

    def measure_recall(self, *, k: int = 10, samples: int = 200) -> dict[str, Any]:
        """HNSW recall@k against exact search over this index's vectors (``doctor --recall``)."""
        return self._index.measure_recall(k=k, samples=samples)

    def _content_of(self, name: str) -> str | None:
        try:
            return self.store.read(name).text
        except (NotFound, InvalidInput):
            return None

    def get(self, name: str, as_of: str | None = None) -> Memory:
        """The memory ``name`` from its file, or as committed at ``as_of`` (a date or commit; ``get_as_of``).

        ``created``/``updated`` the file does not state come from git (``memrouter.index.activity.dated``).
        """
        if as_of is not None:
            return self.get_as_of(name, as_of)[0]
        memory = self.store.read(name)
        self._index.note_access([memory.name], self.clock())  # for the janitor and the usage decay
        if memory.created is not None and memory.updated is not None:
            return memory
        return self._index.indexed(lambda: self._activity_times().dated(memory, self._conn))

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
            self._index.ensure_fresh()
            return self._searcher.summaries(filters)

        return self._index.indexed(listed)

    def publish(self, url: str | None = None) -> dict[str, Any]:
        """Bring this project's rows in the PostgreSQL index (``url``, default ``[index] url``) in step: ``memrouter.index.postgres.reader``."""
        from memrouter.index.postgres.reader import publish

        self._index.ensure_fresh()
        return self._index.indexed(lambda: publish(self._conn, url or self.config.index.url, self.config.project_key))

    def pinned(self) -> builtins.list[str]:
        """Names of the memories whose front matter says ``pinned: true``, in effect now."""
        self._index.ensure_fresh()
        return self._index.indexed(lambda: queries.pinned_names(self._conn))

    def assemble_context(
        self, query: str | None = None, task: str | None = None, max_tokens: int = 2000, *,
        channels: Iterable[str] | str | None = None, as_of: str | None = None, format: str = "xml",
    ) -> Context:  # fmt: skip
        """The memories an agent needs for ``query``/``task`` in at most ``max_tokens`` (``memrouter.ops.context``)."""
        from memrouter.ops.context import assemble_context

        return assemble_context(self, query, task, max_tokens, channels=channels, as_of=as_of, format=format)

    # -- writing -----------------------------------------------------------
    @audited("save")
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
        actor: str | None = None,
        verbatim: bool = False,
    ) -> Memory:
        """Write a memory file (atomically) and index it, if the write guard lets it (``memrouter.guard``).

        Fields given here are set in the front matter (``source`` is the
        provenance: an ADR, a commit, a URL); every other front-matter key in
        ``content`` is kept as written. Without ``name``, one is made from the
        title or the first heading. ``expected_hash`` (``""`` for "must not
        exist") refuses to overwrite a concurrent change: the check and the
        write are one step, however many processes write. ``channel`` or ``kind`` may move an
        unqualified name into the open sprint (``memrouter.ops.lifecycle.Lifecycle.place``).
        ``actor``: ``person`` (the default; ``user:<name>``) or ``agent`` (``agent:<id>``), whose
        hedged or ungrounded text is stored as ``pending_review``. A secret or a near-duplicate raises ``Refused``.
        ``verbatim`` (Serena's tools) writes exactly ``content``: secrets and near-duplicates are still refused,
        but nothing is held for review or flagged (``memrouter.ops.writes.VERBATIM``).
        """
        from memrouter.ops import writes as writing

        fields = {
            "title": title, "tags": tags, "kind": kind, "channel": channel, "scope": scope, "status": status,
            "source": source, "author": author, "confidence": confidence, "valid_from": valid_from,
            "valid_until": valid_until,
        }  # fmt: skip
        purpose = writing.VERBATIM if verbatim else writing.FULL
        return writing.save(
            self, content, name, expected_hash=expected_hash, actor=actor, fields=fields, purpose=purpose
        )

    def check(self, content: str, name: str | None = None, *, actor: str | None = None) -> Verdict:
        """What the write guard would decide about saving ``content`` as ``name``; nothing is written."""
        from memrouter.ops import writes as writing

        return writing.verdict_for(self._index, name or "(new memory)", content, actor=actor)[1]

    @audited("delete")
    def delete(self, name: str, reason: str | None = None, *, expected_hash: str | None = None) -> Memory:
        """Remove the memory file and its index rows; returns what was deleted."""
        from memrouter.store.compose import check_reason

        reason = check_reason(reason)
        name = validate_name(name, strict=False)
        with self._lock, self.store.lock(name):
            memory = self.store.delete(name, expected_hash=expected_hash)
            self._index.unindex(memory.name)
        log.info("deleted memory %s%s", memory.name, f" ({reason})" if reason else "")
        return memory

    # -- editing in place (Serena's edit_memory and rename_memory) -----------
    @audited("edit")
    def edit(
        self, name: str, needle: str, repl: str, *, mode: str = "literal", allow_multiple_occurrences: bool = False,
        actor: str | None = None, verbatim: bool = False,
    ) -> tuple[Memory, int]:  # fmt: skip
        """Replace ``needle`` with ``repl`` in a memory file; returns the new memory and the count.

        ``mode`` is ``literal`` or ``regex`` (MULTILINE and DOTALL); no match,
        or several without ``allow_multiple_occurrences``, changes nothing
        and raises ``InvalidInput`` (see ``memrouter.store.edit``). The result passes the write guard (``save``).
        """
        from memrouter.ops import writes as writing

        purpose = writing.VERBATIM if verbatim else writing.CLAIMS  # verbatim: as in ``save``
        return writing.edit(
            self, name, needle, repl, mode=mode, allow_multiple=allow_multiple_occurrences, actor=actor, purpose=purpose
        )

    @audited("rename")
    def rename(self, old: str, new: str, *, actor: str | None = None) -> tuple[Memory, tuple[str, ...]]:
        """Move memory ``old`` to ``new`` and rewrite ``mem:<old>`` references in every memory.

        Returns the moved memory and the names of the memories whose
        references were rewritten. ``Conflict`` if ``new`` already exists.
        """
        from memrouter.ops.renaming import rename_memory

        with self._lock:
            return rename_memory(self.store, self._index, old, new, actor=actor)

    # -- channels and time (memrouter.ops.lifecycle) -------------------------------
    @property
    def lifecycle(self) -> Lifecycle:
        """Sprints (start, status, close), routing, promotion and invalidation over this root."""
        from memrouter.ops.lifecycle import Lifecycle  # lazy: a search never needs it

        return Lifecycle(self.store, self._index, self._lock, self.clock)

    def promote(
        self, name: str, to: str = "long_term", reason: str = "", *, target: str | None = None, merge: bool = False,
        expected_hash: str | None = None,
    ) -> Promotion:  # fmt: skip
        """Make sprint memory ``name`` long-term (with provenance); a duplicate is a ``Conflict`` unless ``merge``,
        and so is a memory no longer at ``expected_hash``."""
        return self.lifecycle.promote(
            name, to=to, reason=reason, target=target, merge=merge, expected_hash=expected_hash
        )

    def archive(self, name: str, *, expected_hash: str | None = None) -> Memory:
        """Archive one sprint memory in place (``status: archived``); see ``Lifecycle.archive``."""
        return self.lifecycle.archive(name, expected_hash=expected_hash)

    def escalate(
        self, summary: str, team_context: dict[str, Any] | None = None, *, title: str | None = None,
        author: str | None = None,
    ) -> Memory:  # fmt: skip
        """Keep a team finding as an investigation note in the open sprint (``memrouter.ops.escalation``)."""
        from memrouter.ops.escalation import escalation_text

        title, text = escalation_text(summary, team_context, title)
        actor = author if author is not None and author.startswith("agent:") else None  # the guard judges agents
        return self.save(text, title=title, kind="investigation", channel="sprint", source="team_escalation",
                         author=author, actor=actor)  # fmt: skip

    def invalidate(self, name: str, reason: str, superseded_by: str | None = None) -> Memory:
        """Mark a memory obsolete (and superseded by another) with the reason; nothing is deleted."""
        return self.lifecycle.invalidate(name, reason, superseded_by)

    def janitor(self, *, apply: bool = False) -> JanitorReport:
        """Propose (with ``apply``, make) consolidations, never deleting: see ``memrouter.ops.janitor``."""
        from memrouter.ops.janitor.run import run_janitor

        return run_janitor(self, apply=apply)

    # -- reporting ---------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, index freshness and health, problems and configuration, JSON-ready."""
        database = self._index.indexed(self._searcher.database_status)  # first: a fallback adds a warning
        index = self._index.status()
        sprint, sprint_warnings = self.lifecycle.status()
        warnings = index.pop("warnings") + sprint_warnings
        warnings += [f"unknown configuration key {key!r} (ignored)" for key in self.config.unknown_keys]
        return {
            "root": str(self.config.root),
            "project": str(self.config.project_dir) if self.config.project_dir else None,
            "readonly": self.store.readonly,
            **index,
            "sprint": sprint,
            "database": database,
            "warnings": warnings,
            "config": self.config.summary(),
            "backends": self.backend_status(),
        }
