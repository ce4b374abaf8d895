"""Searching: validate a request, pick the mode, run it over the index, then add what else answers.

The pipeline itself (candidates, fusion, time words, recency, hits) is
``memrouter.index.search``'s; this module decides what it runs on: the
memories as committed at a past date or commit (``as_of``), the validity
marks of a search that asks for history, the owner's short-term notes, and
the healthy external services (canonical first, ``memrouter.external.merge``).
"""

from __future__ import annotations

import builtins

from memrouter.core.effect import HISTORY_RULES, out_of_effect
from memrouter.core.errors import InvalidInput
from memrouter.core.model import MODES, Hit
from memrouter.core.query import check_limit, check_query, iso_time, make_filters, search_filters
from memrouter.core.records import replace
from memrouter.index.search import CANONICAL
from memrouter.index.sqlite.queries import validity_rows
from memrouter.ops.workspace import Workspace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable


__all__ = ["effective_mode", "past", "search"]


def _marked(ws: Workspace, hits: builtins.list[Hit], now: float) -> builtins.list[Hit]:
    """Hits marked with why a default search would leave them out (``memrouter.core.effect``); those in
    effect first, each group in score order."""
    at = iso_time(now)
    rows = validity_rows(ws.conn, [hit.name for hit in hits])
    marked = []
    for hit in hits:
        row = rows.get(hit.name)
        why = None if row is None else out_of_effect(dict(row), at, named=bool(row["linked"]), rules=HISTORY_RULES)
        marked.append(replace(hit, validity=why))
    return sorted(marked, key=lambda hit: hit.validity is not None)


def effective_mode(ws: Workspace, mode: str | None = None) -> str:
    """See ``Router.effective_mode``: ``hybrid`` is lexical alone until the index holds vectors."""
    mode = mode or ws.config.search.mode
    if mode not in MODES:
        raise InvalidInput(f"unknown search mode {mode!r}; use {', '.join(MODES)}")
    if mode == "hybrid":
        has_vectors = ws.index.indexed(lambda: ws.index.dense.has_vectors(ws.conn))
        return mode if has_vectors else "lexical"
    return mode


def past(ws: Workspace, as_of: str) -> Workspace:
    """The workspace over the memories as committed at ``as_of`` (``memrouter.ops.asof``), opened once."""
    from memrouter.ops.asof import PastIndexes  # only a search as of a date or commit needs git snapshots

    def open_past(config: object, clock: object, record_times: object) -> Workspace:
        return Workspace(config, watch=False, clock=clock, record_times=record_times)  # type: ignore[arg-type]

    with ws.lock:
        if ws.past is None:
            ws.past = PastIndexes(ws.config, ws.lend_record_times, open_past)
        return ws.past.at(as_of)


def search(
    ws: Workspace,
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
    """See ``Router.search``."""
    if as_of is not None:
        return search(
            past(ws, as_of), query, limit, mode, channels=channels, kinds=kinds, scopes=scopes, statuses=statuses,
            tags=tags, prefix=prefix, content=content, include_history=include_history,
            include_archived=include_archived,
        )  # fmt: skip
    query = check_query(query)
    limit = check_limit(ws.config.search.limit if limit is None else limit)
    asked = make_filters(channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags, prefix=prefix)
    now = ws.clock()
    filters = search_filters(asked, now, history=include_history, archived=include_archived)
    mode = effective_mode(ws, mode)
    if origin is not None and origin != CANONICAL:
        return ws.external().search_one(origin, query, limit, content)

    def canonical() -> builtins.list[Hit]:
        ws.ensure_fresh(embedded=mode != "lexical")
        found = ws.pipeline.run(query, limit, mode, filters, content, now)
        return _marked(ws, found, now) if filters.now is None or filters.archived else found

    hits = ws.index.indexed(canonical)
    if owner is not None and (not asked.channels or "short_term" in asked.channels) and len(hits) < limit:
        hits += ws.scratchpad().search(owner, query, limit - len(hits))
    if origin == CANONICAL or not ws.config.backends or not asked.empty:
        return hits
    return ws.external().augment(query, limit, hits, content)
