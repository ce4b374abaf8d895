"""Searching: validate a request, pick the mode, run it over the index, then add what else answers.

The pipeline itself (candidates, fusion, time words, recency, hits) is
``memrouter.index.search``'s; this module decides what it runs on: the
memories as committed at a past date or commit (``as_of``), the validity
marks of a search that asks for history, the owner's short-term notes, and
the healthy external services (canonical first, ``memrouter.external.merge``).
"""

from __future__ import annotations

import builtins

from memrouter.config.sections import BRANCH_CHOICES
from memrouter.core.effect import HISTORY_RULES, out_of_effect
from memrouter.core.errors import EndpointError, InvalidInput, NotInstalled
from memrouter.core.model import MODES, Filters, Hit, Match, ModeChoice
from memrouter.core.query import check_limit, check_query, iso_time, make_filters, search_filters
from memrouter.core.records import replace
from memrouter.index.search import CANONICAL
from memrouter.index.sqlite.queries import validity_rows
from memrouter.ops.relevance import FLOOR, judged
from memrouter.ops.workspace import Workspace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable

    from memrouter.index.sqlite.refresh import Progress


__all__ = ["FIX", "check_branches", "choose_mode", "effective_mode", "memories", "past", "search"]


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


FIX = "run `memrouter index` to embed them now, or `memrouter serve`, which embeds in the background"


def memories(count: int, verb_one: str, verb_many: str) -> str:
    """``1 memory has`` or ``4 memories have``: a count of memories with its verb agreeing."""
    return f"1 memory {verb_one}" if count == 1 else f"{count} memories {verb_many}"


def choose_mode(
    ws: Workspace, mode: str | None = None, *, embed: bool = True, progress: Progress | None = None
) -> ModeChoice:
    """See ``Router.search_mode``: the mode a search runs in, having embedded what is missing when that is cheap.

    ``lexical`` is lexical. ``semantic`` embeds every memory lacking vectors (``NotInstalled`` without the
    model). ``hybrid`` uses the vectors when every memory has them; otherwise it embeds the missing ones first
    when their text is at most ``[embed] on_search`` characters (``progress(done, total)`` over their chunks),
    and else runs keyword-only, with a notice saying so and how to fix it. With a background embedder running
    (``memrouter serve``) it never waits: it uses the vectors there are, and says what is still missing.
    ``embed=False`` decides without embedding (what the search would do).
    """
    asked = mode or ws.config.search.mode
    if asked not in MODES:
        raise InvalidInput(f"unknown search mode {asked!r}; use {', '.join(MODES)}")
    if asked == "lexical":
        return ModeChoice(asked, asked)
    index = ws.index
    ws.ensure_fresh()  # the files first: a memory written by hand since is pending too
    pending, chars = index.indexed(index.pending_vectors)
    if pending == 0:
        return ModeChoice(asked, asked)
    if index.embedding_in_background:
        if asked == "semantic" or index.indexed(lambda: index.dense.has_vectors(ws.conn)):
            note = f"{memories(pending, 'is', 'are')} still being embedded in the background; meaning covers the others"
            return ModeChoice(asked, asked, pending, notice=note)
        every = "the memory is" if pending == 1 else f"the {pending} memories are"
        note = f"keyword-only: {every} being embedded in the background; meaning joins as they land"
        return ModeChoice(asked, "lexical", pending, notice=note)
    if asked == "semantic":  # asks for vectors explicitly: every missing one is embedded, however many
        done = index.indexed(lambda: index.embed_pending(progress)) if embed else 0
        return ModeChoice(asked, asked, pending, done)
    problem = index.embedder_problem()
    if problem is not None:
        return ModeChoice(asked, "lexical", pending, notice=f"keyword-only: {problem}")
    limit = ws.config.embed_on_search
    if chars > limit:
        missing = memories(pending, "has", "have")
        note = (
            f"keyword-only: {missing} no vectors yet ({chars:,} characters; a search embeds at most {limit:,}); {FIX}"
        )
        return ModeChoice(asked, "lexical", pending, notice=note)
    if not embed:
        return ModeChoice(asked, asked, pending)
    try:
        done = index.indexed(lambda: index.embed_pending(progress))
    except NotInstalled as exc:
        return ModeChoice(asked, "lexical", pending, notice=f"keyword-only: {exc}")
    except EndpointError as exc:  # an embedding endpoint down: the vectors there are serve; these wait for it
        return ModeChoice(
            asked, asked, pending, notice=f"{memories(pending, 'waits for its', 'wait for their')} vectors: {exc}"
        )
    return ModeChoice(asked, asked, pending, done)


def check_branches(branches: object) -> str:
    """``branches`` checked: "none" (this checkout's memories) or "local" (also other local branches')."""
    if branches not in BRANCH_CHOICES:
        raise InvalidInput(f"branches must be one of {', '.join(BRANCH_CHOICES)}, got {branches!r}")
    return str(branches)


def _with_branches(
    ws: Workspace, hits: builtins.list[Hit], query: str, limit: int, mode: str, filters: Filters, content: bool,
    now: float,
) -> builtins.list[Hit]:  # fmt: skip
    """``hits`` (of a search that ran in ``mode``) with the memories only other local branches and worktrees hold
    (``memrouter.ops.branch_search``)."""
    from memrouter.ops.branch_search import BranchMemories, mark_removed, merge  # only across branches: git here

    with ws.lock:
        if ws.others is None:
            ws.others = BranchMemories(ws.config, lambda config: Workspace(config, watch=False))
        others = ws.others
        extra = others.workspace()
        changed, others.changed = others.changed, False
    hits = mark_removed(hits, others.removed)
    if extra is None:
        return hits
    if changed:
        extra.index.indexed(extra.index.refresh)

    def found() -> builtins.list[Hit]:
        # The mode the checkout's search ran in; the copies of its memories take their vectors from the shared
        # file, so only the other places' own texts meet the model.
        run = mode
        try:
            extra.ensure_fresh(embedded=run != "lexical")
        except (NotInstalled, EndpointError):
            run = "lexical"
        deep = 2 * limit  # deep enough to reach most of the checkout's own hits there too
        return judged(extra, query, extra.pipeline.run(query, deep, run, filters, content, now), run)

    return merge(hits, extra.index.indexed(found), others.entries, ws.config.branches.share, limit, FLOOR)


def effective_mode(ws: Workspace, mode: str | None = None) -> str:
    """See ``Router.effective_mode``: the mode a search would run in now (nothing is embedded to tell)."""
    return choose_mode(ws, mode, embed=False).mode


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
    branches: str | None = None,
) -> builtins.list[Hit]:
    """See ``Router.search``."""
    if as_of is not None:
        if branches is not None and check_branches(branches) == "local":
            raise InvalidInput("a search as of a date or commit reads that commit alone: leave out branches")
        return search(
            past(ws, as_of), query, limit, mode, channels=channels, kinds=kinds, scopes=scopes, statuses=statuses,
            tags=tags, prefix=prefix, content=content, include_history=include_history,
            include_archived=include_archived, branches="none",
        )  # fmt: skip
    branches = check_branches(ws.config.branches.include if branches is None else branches)
    query = check_query(query)
    limit = check_limit(ws.config.search.limit if limit is None else limit)
    asked = make_filters(channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags, prefix=prefix)
    now = ws.clock()
    filters = search_filters(asked, now, history=include_history, archived=include_archived)
    if origin is not None and origin != CANONICAL:
        if mode is not None and mode not in MODES:
            raise InvalidInput(f"unknown search mode {mode!r}; use {', '.join(MODES)}")
        return ws.external().search_one(origin, query, limit, content)
    choice = choose_mode(ws, mode)

    def canonical() -> builtins.list[Hit]:
        ws.ensure_fresh(embedded=choice.mode != "lexical")
        found = judged(ws, query, ws.pipeline.run(query, limit, choice.mode, filters, content, now), choice.mode)
        if choice.notice is not None:  # the mode is never changed silently: each hit says so
            note = Match("mode", 0, float(choice.pending), choice.notice)
            found = [replace(hit, why=(*hit.why, note)) for hit in found]
        return _marked(ws, found, now) if filters.now is None or filters.archived else found

    hits = ws.index.indexed(canonical)
    if branches == "local":
        hits = _with_branches(ws, hits, query, limit, choice.mode, filters, content, now)
    if owner is not None and (not asked.channels or "short_term" in asked.channels) and len(hits) < limit:
        hits += ws.scratchpad().search(owner, query, limit - len(hits))
    if origin == CANONICAL or not ws.config.backends or not asked.empty:
        return hits
    return ws.external().augment(query, limit, hits, content)
