"""The status report: counts, index freshness and health, the sprint, the database, problems, configuration."""

from __future__ import annotations

from memrouter.index.sqlite.anchor_marks import state_counts
from memrouter.ops.branches import diverged, explain
from memrouter.ops.external import backend_status
from memrouter.ops.lifecycle import Lifecycle
from memrouter.ops.search import FIX, memories

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.ops.workspace import Workspace

__all__ = ["status"]


def status(ws: Workspace) -> dict[str, Any]:
    """See ``Router.status``: JSON-ready."""
    ws.ensure_fresh()  # a copy in PostgreSQL is brought in step before it is counted
    database = ws.index.indexed(ws.reader.status)  # before the index's part: a fallback adds a warning
    index = ws.index.status()
    sprint, sprint_warnings = Lifecycle(ws.store, ws.index, ws.lock, ws.clock).status()
    warnings = index.pop("warnings") + sprint_warnings + _vector_warnings(ws, index["dense"])
    reranker = ws.pipeline.reranker()
    rerank = reranker.health() if reranker is not None else None  # [rerank] url, asked now
    if rerank is not None and not rerank["ok"]:
        warnings.append(f"reranking endpoint unavailable, the second stage is skipped: {rerank['error']}")
    warnings += [f"unknown configuration key {key!r} (ignored)" for key in ws.config.unknown_keys]
    divergences = diverged(ws.config)
    warnings += [f"{explain(d)}: `memrouter branches` shows the versions" for d in divergences]
    return {
        "root": str(ws.config.root),
        "project": str(ws.config.project_dir) if ws.config.project_dir else None,
        "readonly": ws.store.readonly,
        **index,
        "sprint": sprint,
        "anchors": _anchors(ws),
        "rerank_endpoint": rerank,
        "database": database,
        "warnings": warnings,
        "config": ws.config.summary(),
        "backends": backend_status(ws),
        "diverged": [d.to_dict() for d in divergences],
    }


def _anchors(ws: Workspace) -> dict[str, Any]:
    """The anchored memories by state, as the last ``verify`` found them (``memrouter.ops.verify``): stored
    counts, no git and no parser; ``head`` is the commit they were checked at (None: never checked)."""
    found = ws.index.indexed(lambda: state_counts(ws.conn))
    counts = dict(found["counts"])  # type: ignore[call-overload]
    return {
        "fresh": counts.get("fresh", 0), "stale": counts.get("stale", 0), "broken": counts.get("broken", 0),
        "unknown": counts.get("unknown", 0), "checked_at": found["head"],
    }  # fmt: skip


def _vector_warnings(ws: Workspace, dense: dict[str, Any]) -> list[str]:
    """What keeps searches from using meaning, when the configured mode wants it: memories without vectors
    (and what the next search does about them), the model missing (also in ``dense.problem``)."""
    problem = ws.index.embedder_problem()
    dense["problem"] = problem
    if ws.config.search.mode == "lexical":
        return []
    if problem is not None:
        return [f"{problem}: hybrid search runs keyword-only"]
    pending = dense["pending_memories"]
    if not pending:
        return []
    missing = memories(pending, "has", "have")
    if ws.index.embedding_in_background:
        return [f"{missing} no vectors yet: the background embedder is embedding them"]
    _, chars = ws.index.indexed(ws.index.pending_vectors)
    limit = ws.config.embed_on_search
    if chars <= limit:
        return [f"{missing} no vectors yet: the next hybrid search embeds them first ({chars:,} characters)"]
    return [f"{missing} no vectors yet ({chars:,} characters, more than a search embeds: "
            f"[embed] on_search = {limit:,}): hybrid search runs keyword-only; {FIX}"]  # fmt: skip
