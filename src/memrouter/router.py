"""The Router: the library's one entry point, a facade over the use cases in ``memrouter.ops``.

It holds no logic: it opens a ``Workspace`` (the files, the index, what searches read, the clock) and
passes each call to the use case that does it, which never sees the Router. Every use case but search is
imported on its first call (the measured fast path of a cold ``memrouter search``; docs/architecture.md).
"""

from __future__ import annotations

import builtins

from memrouter.config.settings import Config
from memrouter.index.search import CANONICAL
from memrouter.ops import search as searching
from memrouter.ops.workspace import Workspace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import Any

    from memrouter.anchors.records import VerifyReport
    from memrouter.core import model
    from memrouter.core.model import Entity, GraphPath, Hit, Memory, MemorySummary, Provenance, Related, Relation
    from memrouter.external.sync.validate import FreshnessReport
    from memrouter.guard import Verdict
    from memrouter.index.postgres.shared import SharedDatabases
    from memrouter.index.sqlite.refresh import Progress, RefreshReport
    from memrouter.ops.audit import AuditEntry
    from memrouter.ops.context import Context
    from memrouter.ops.history import Version
    from memrouter.ops.janitor.records import JanitorReport
    from memrouter.ops.lifecycle import Lifecycle, Promotion
    from memrouter.ops.scratch import Scratchpad
    from memrouter.store.files import MemoryStore
    from memrouter.team import Team

__all__ = ["CANONICAL", "Router"]


class Router:
    """Search and manage memories for one memories root.

    Open one with ``Router.open(root=..., index_dir=...)``; it is safe to share
    between threads, and any number of processes may open the same root at once.
    """

    def __init__(
        self, config: Config, *, watch: bool = True, clock: Callable[[], float] | None = None,
        databases: SharedDatabases | None = None,
    ) -> None:  # fmt: skip
        """``databases``: PostgreSQL pools shared with other routers of this process
        (``memrouter.index.postgres.shared``)."""
        self.workspace = Workspace(config, watch=watch, clock=clock, databases=databases)

    @classmethod
    def open(
        cls, root: str | Path | None = None, index_dir: str | Path | None = None, *, config: Config | None = None,
        watch: bool = True, clock: Callable[[], float] | None = None,
    ) -> Router:  # fmt: skip
        """Open the router for ``root`` (or the project found from the working directory).

        ``watch``: a long-lived router notices file changes through the OS instead of scanning.
        """
        return cls(config or Config.load(root=root, index_dir=index_dir), watch=watch, clock=clock)

    @property
    def config(self) -> Config:
        """The configuration this router was opened with."""
        return self.workspace.config

    @property
    def store(self) -> MemoryStore:
        """The canonical memory files."""
        return self.workspace.store

    @property
    def clock(self) -> Callable[[], float]:
        """What "now" is for validity and sprints (seconds since the epoch)."""
        return self.workspace.clock

    def team(self) -> Team:
        """The team channel of this project (``team.sqlite``, or PostgreSQL with ``[index] url``), opened on first use."""
        return self.workspace.team()

    def scratchpad(self) -> Scratchpad:
        """The short-term channel: per-owner notes in ``<index_dir>/scratch.sqlite``, opened on first use."""
        return self.workspace.scratchpad()

    def embed_in_background(self) -> None:
        """Embed memories lacking vectors in a low-priority background thread from now on: searches use
        the vectors there are and never wait (``memrouter.index.sqlite.background``); ``status`` shows progress."""
        self.workspace.index.start_background_embedding()

    def close(self) -> None:
        """Stop background work and close the index and everything opened since."""
        self.workspace.close()

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def warnings(self) -> builtins.list[str]:
        """What went wrong with the index in this process (repairs, fallbacks)."""
        return builtins.list(self.workspace.index.file.warnings)

    def refresh(
        self,
        *,
        full: bool = False,
        progress: Progress | None = None,
        embed: bool | None = False,
        embed_progress: Progress | None = None,
        reembed: bool = False,
    ) -> RefreshReport:
        """Bring the index up to date with the files (incremental unless ``full``, which also re-reads every
        file, checks the database and rebuilds the postings). ``embed=True`` also embeds every memory that lacks
        current vectors; ``None`` only if vectors are in use; ``reembed`` drops other models' vectors first."""
        return self.workspace.index.refresh(
            full=full, progress=progress, embed=embed, embed_progress=embed_progress, reembed=reembed
        )

    # -- reading -----------------------------------------------------------
    def effective_mode(self, mode: str | None = None) -> str:
        """The mode a search would run in now (``search_mode`` without embedding anything)."""
        return searching.effective_mode(self.workspace, mode)

    def search_mode(self, mode: str | None = None, *, progress: Progress | None = None) -> model.ModeChoice:
        """Get ready to search in ``mode`` and say what it will run in: missing vectors of a small text embedded
        first (``progress(done, total)``), else keyword-only with a ``notice`` (``ops.search.choose_mode``)."""
        return searching.choose_mode(self.workspace, mode, progress=progress)

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
        branches: str | None = None,
    ) -> builtins.list[Hit]:
        """The best memories for ``query``, best first, each saying why it matched.

        ``limit`` and ``mode`` default to ``[search]``. ``origin``: ``None`` (the default) is the canonical results,
        then what healthy external backends add (never failing when one is down); ``"canonical"`` only the files;
        a backend's name only that backend (``BackendUnavailable`` if it is down). Each hit's ``source`` says where. Without ``channels``: long-term and sprint;
        ``include_history`` / ``include_archived`` bring back, marked, what is not in effect
        (``memrouter.core.effect``). ``owner`` adds that owner's short-term scratchpad notes that match
        (``memrouter.ops.scratch``), after the rest. ``as_of`` (a date or commit) searches the memories as
        committed then (``memrouter.ops.asof``). ``branches``: "local" adds the memories only other local branches
        and worktrees hold, lowered and marked (``memrouter.ops.branch_search``); default ``[branches] include``."""
        return searching.search(
            self.workspace, query, limit, mode, channels=channels, kinds=kinds, scopes=scopes, statuses=statuses,
            tags=tags, prefix=prefix, content=content, origin=origin, include_history=include_history,
            include_archived=include_archived, owner=owner, as_of=as_of, branches=branches,
        )  # fmt: skip

    def measure_recall(self, *, k: int = 10, samples: int = 200) -> dict[str, Any]:
        """HNSW recall@k against exact search over this index's vectors (``doctor --recall``)."""
        return self.workspace.index.measure_recall(k=k, samples=samples)

    def get(self, name: str, as_of: str | None = None) -> Memory:
        """The memory ``name`` from its file, or as committed at ``as_of`` (a date or commit; ``get_as_of``).

        ``created``/``updated`` the file does not state come from git (``memrouter.index.sqlite.activity``).
        """
        from memrouter.ops.reading import get

        return get(self.workspace, name, as_of)

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
        from memrouter.ops.reading import list_memories

        return list_memories(
            self.workspace, prefix, channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags
        )

    def names(self, prefix: str | None = None) -> builtins.list[str]:
        """The names ``list`` gives (pending review left out), from the files while the index was never built."""
        from memrouter.ops.reading import memory_names

        return memory_names(self.workspace, prefix)

    def pinned(self) -> builtins.list[str]:
        """Names of the memories whose front matter says ``pinned: true``, in effect now."""
        from memrouter.ops.reading import pinned

        return pinned(self.workspace)

    def publish(self, url: str | None = None) -> dict[str, Any]:
        """Bring this project's rows in the PostgreSQL index (``url``, default ``[index] url``) in step."""
        from memrouter.index.postgres.reader import publish

        ws = self.workspace
        ws.index.ensure_fresh()  # the local index follows the files; the push below is the whole copy
        return ws.index.indexed(lambda: publish(ws.conn, url or ws.config.index.url, ws.config.project_key))

    def assemble_context(
        self, query: str | None = None, task: str | None = None, max_tokens: int = 2000, *,
        channels: Iterable[str] | str | None = None, as_of: str | None = None, format: str = "xml",
    ) -> Context:  # fmt: skip
        """The memories an agent needs for ``query``/``task`` in at most ``max_tokens`` (``memrouter.ops.context``)."""
        from memrouter.ops.context import assemble_context

        return assemble_context(self.workspace, query, task, max_tokens, channels=channels, as_of=as_of, format=format)

    def history(self, name: str, limit: int = 20) -> builtins.list[Version]:
        """The commits that changed memory ``name`` (renames followed), newest first."""
        from memrouter.ops.reading import history

        return history(self.workspace, name, limit)

    def get_as_of(self, name: str, as_of: str) -> tuple[Memory, Version]:
        """Memory ``name`` as committed at ``as_of``: a date (the last commit that day or before) or a commit."""
        from memrouter.ops.reading import get_as_of

        return get_as_of(self.workspace, name, as_of)

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
        but nothing is held for review or flagged (``memrouter.ops.write_guard.VERBATIM``).
        """
        from memrouter.ops.writes import save

        fields = {
            "title": title, "tags": tags, "kind": kind, "channel": channel, "scope": scope, "status": status,
            "source": source, "author": author, "confidence": confidence, "valid_from": valid_from,
            "valid_until": valid_until,
        }  # fmt: skip
        return save(
            self.workspace, content, name, expected_hash=expected_hash, actor=actor, fields=fields, verbatim=verbatim
        )

    def check(self, content: str, name: str | None = None, *, actor: str | None = None) -> Verdict:
        """What the write guard would decide about saving ``content`` as ``name``; nothing is written."""
        from memrouter.ops.writes import check

        return check(self.workspace, content, name, actor=actor)

    def delete(self, name: str, reason: str | None = None, *, expected_hash: str | None = None) -> Memory:
        """Remove the memory file and its index rows; returns what was deleted."""
        from memrouter.ops.writes import delete

        return delete(self.workspace, name, reason, expected_hash=expected_hash)

    def edit(
        self, name: str, needle: str, repl: str, *, mode: str = "literal", allow_multiple_occurrences: bool = False,
        actor: str | None = None, verbatim: bool = False,
    ) -> tuple[Memory, int]:  # fmt: skip
        """Replace ``needle`` with ``repl`` (``mode``: ``literal`` or ``regex``) in a memory file through the write
        guard; the new memory and the count (``memrouter.store.edit``)."""
        from memrouter.ops.writes import edit

        return edit(
            self.workspace, name, needle, repl, mode=mode, allow_multiple=allow_multiple_occurrences, actor=actor,
            verbatim=verbatim,
        )  # fmt: skip

    def rename(self, old: str, new: str, *, actor: str | None = None) -> tuple[Memory, tuple[str, ...]]:
        """Move memory ``old`` to ``new`` and rewrite ``mem:<old>`` references everywhere (``memrouter.ops.renaming``)."""
        from memrouter.ops.renaming import rename

        return rename(self.workspace, old, new, actor=actor)

    # -- channels and time (memrouter.ops.lifecycle) ------------------------------
    @property
    def lifecycle(self) -> Lifecycle:
        """Sprints (start, status, close), routing, promotion and invalidation over this root."""
        from memrouter.ops.lifecycle import Lifecycle

        ws = self.workspace
        return Lifecycle(ws.store, ws.index, ws.lock, ws.clock)

    def promote(
        self, name: str, to: str = "long_term", reason: str = "", *, target: str | None = None, merge: bool = False,
        expected_hash: str | None = None,
    ) -> Promotion:  # fmt: skip
        """Make sprint memory ``name`` long-term (``Lifecycle.promote``)."""
        return self.lifecycle.promote(
            name, to=to, reason=reason, target=target, merge=merge, expected_hash=expected_hash
        )

    def archive(self, name: str, *, expected_hash: str | None = None) -> Memory:
        """Archive one sprint memory in place (``status: archived``); see ``Lifecycle.archive``."""
        return self.lifecycle.archive(name, expected_hash=expected_hash)

    def invalidate(self, name: str, reason: str, superseded_by: str | None = None) -> Memory:
        """Mark a memory obsolete (and superseded by another) with the reason; nothing is deleted."""
        return self.lifecycle.invalidate(name, reason, superseded_by)

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

    def janitor(self, *, apply: bool = False) -> JanitorReport:
        """Propose (with ``apply``, make) consolidations, never deleting: see ``memrouter.ops.janitor``."""
        from memrouter.ops.janitor.run import run_janitor

        return run_janitor(self.workspace, apply=apply)

    # -- code anchors (memrouter.ops.verify) ----------------------------------------
    def verify(
        self, names: Iterable[str] | None = None, *, since: str | None = None, staged: bool = False, diff: bool = True
    ) -> VerifyReport:
        """The anchored memories (those named, else all) and whether the code they name changed since they were
        written or verified: fresh, stale, moved or broken (``memrouter.ops.verify``)."""
        from memrouter.ops.verify import verify

        return verify(self.workspace, names, since=since, staged=staged, diff=diff)

    def accept(self, name: str, *, actor: str | None = None) -> Memory:
        """Stamp ``verified: <commit>`` on memory ``name``, through the write guard: it is fresh again."""
        from memrouter.ops.verify import accept

        return accept(self.workspace, name, actor=actor)

    # -- the review queue, provenance and the audit log (memrouter.ops.review) ----
    def pending(self) -> builtins.list[MemorySummary]:
        """The memories waiting for review, by name."""
        from memrouter.ops.review import pending

        return pending(self.workspace)

    def approve(self, name: str, *, actor: str, reason: str | None = None, expected_hash: str | None = None) -> Memory:
        """Make pending memory ``name`` active, verified by ``actor`` (never its own author)."""
        from memrouter.ops.review import approve

        return approve(self.workspace, name, actor=actor, reason=reason, expected_hash=expected_hash)

    def reject(self, name: str, *, actor: str, reason: str, expected_hash: str | None = None) -> Memory:
        """Delete pending memory ``name``; the audit log keeps ``actor``, the hash and ``reason``."""
        from memrouter.ops.review import reject

        return reject(self.workspace, name, actor=actor, reason=reason, expected_hash=expected_hash)

    def provenance(self, name: str) -> Provenance:
        """Who wrote memory ``name``, from what and when (git history for what its front matter does not say)."""
        from memrouter.ops.review import provenance

        return provenance(self.workspace, name)

    def audit(
        self, *, since: str | None = None, name: str | None = None, actor: str | None = None, limit: int = 200
    ) -> builtins.list[AuditEntry]:
        """The audit log's last ``limit`` lines passing the filters, oldest first (``memrouter.ops.audit``)."""
        from memrouter.ops.review import audit

        return audit(self.workspace, since=since, name=name, actor=actor, limit=limit)

    # -- the knowledge graph (memrouter.ops.graph) ---------------------------------
    def get_entity(self, name: str, include_relations: bool = True, *, as_of: str | None = None) -> Entity:
        """The memory or entity ``name``, with its relations in and out when ``include_relations``."""
        from memrouter.ops.graph import get_entity

        return get_entity(self.workspace, name, include_relations, as_of=as_of)

    def neighbors(
        self, name: str, *, types: Iterable[str] | None = None, as_of: str | None = None
    ) -> builtins.list[Relation]:
        """The edges into and out of ``name`` (only ``types`` when given)."""
        from memrouter.ops.graph import neighbors

        return neighbors(self.workspace, name, types=types, as_of=as_of)

    def related(
        self, name: str, depth: int = 2, types: Iterable[str] | None = None, *, as_of: str | None = None
    ) -> builtins.list[Related]:
        """Every memory and entity within ``depth`` hops of ``name`` (1 to 4), nearest first."""
        from memrouter.ops.graph import related

        return related(self.workspace, name, depth, types, as_of=as_of)

    def path(self, source: str, target: str) -> GraphPath:
        """The shortest typed path from ``source`` to ``target`` (edges followed both ways)."""
        from memrouter.ops.graph import path

        return path(self.workspace, source, target)

    def graph_stats(self) -> dict[str, Any]:
        """Counts by edge type and entity kind, dangling references and orphan memories, JSON-ready."""
        from memrouter.ops.graph import graph_stats

        return graph_stats(self.workspace)

    def graph_export(self, fmt: str = "json") -> str:
        """The whole graph as ``json``, ``graphml`` or ``dot`` text."""
        from memrouter.ops.graph import graph_export

        return graph_export(self.workspace, fmt)

    # -- external memory services (memrouter.ops.external) -------------------------
    def backends(self) -> dict[str, Any]:
        """The configured external backends that could be built, by name (``memrouter.ops.external``)."""
        from memrouter.ops.external import backends

        return backends(self.workspace)

    def backend(self, name: str) -> Any:
        """The backend ``name``; ``ConfigError`` (or the reason it could not be built) otherwise."""
        from memrouter.ops.external import backend

        return backend(self.workspace, name)

    def backend_status(self) -> builtins.list[dict[str, Any]]:
        """Each configured backend: name, availability, endpoint, health-cache age, last error, sync count."""
        from memrouter.ops.external import backend_status

        return backend_status(self.workspace)

    def sync(
        self, *, backend: str | None = None, changes: str = "all", dry_run: bool = False, force: bool = False
    ) -> builtins.list[Any]:
        """Sync the memories one way to the backends (``changes``: ``all``, ``staged`` or ``queue``); one report
        per backend (``memrouter.external.sync.engine``)."""
        from memrouter.ops.external import sync

        return sync(self.workspace, backend=backend, changes=changes, dry_run=dry_run, force=force)

    def sync_states(self, name: str, content_hash: str) -> builtins.list[tuple[str, str, str]]:
        """(backend, state, why) of one memory on each backend that syncs (``validate``'s rule, no remote call)."""
        from memrouter.ops.external import sync_states

        return sync_states(self.workspace, name, content_hash)

    def validate(self, *, backend: str | None = None, check_remote: bool = False) -> builtins.list[FreshnessReport]:
        """The freshness report per backend (``memrouter.external.sync.validate``)."""
        from memrouter.ops.external import validate

        return validate(self.workspace, backend=backend, check_remote=check_remote)

    # -- reporting ---------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, index freshness and health, problems and configuration, JSON-ready."""
        from memrouter.ops.status import status

        return status(self.workspace)
