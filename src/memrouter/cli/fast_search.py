"""``memrouter search``: the one implementation, and the fast path that reads its command line without click.

Agents and hooks run ``memrouter search`` as a fresh process many times a
day, so its start-up time is the latency they feel. Importing click and
building the whole command group costs more than the search itself; the
console script (``memrouter.cli.console``) therefore recognises a plain
``search`` command line with :func:`parse_search_argv` and hands everything
else (other commands, ``--help``, anything unusual or invalid) to the click
group (``memrouter.cli.app``), which also calls :func:`run_search`. Both read
the options from one table (``memrouter.cli.search_options``); this module
imports neither click nor the group. ``tests/test_search_command.py`` checks
that the two give identical results on generated command lines.
"""

from __future__ import annotations

import os
import re  # loaded already on this path (query checks); the text form strips markup with it
import sys
from collections.abc import Sequence

from memrouter.cli.search_options import GROUP_OPTIONS, SEARCH_OPTIONS, Option
from memrouter.core.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

_SEARCH = {spelling: option for option in SEARCH_OPTIONS for spelling in option.spellings}
_GROUP = {spelling: option for option in GROUP_OPTIONS for spelling in option.spellings}


@record
class SearchRequest:
    """A ``memrouter search`` command line, parsed."""

    query: str
    root: str | None = None
    index_dir: str | None = None
    limit: int | None = None
    mode: str | None = None
    channels: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    prefix: str | None = None
    content: bool = False
    origin: str | None = None
    fmt: str = "text"
    include_history: bool = False
    include_archived: bool = False
    as_of: str | None = None
    rerank: bool = False
    weak: bool = False
    branches: str | None = None


def run_search(request: SearchRequest) -> int:
    """Run one search, print it (text or JSON) and return the exit code.

    Errors print one line on stderr; the code follows ``exit_code_for``.
    """
    import time

    from memrouter.core.errors import MemoryRouterError, exit_code_for

    try:
        from memrouter.core.query import check_query
        from memrouter.router import Router

        check_query(request.query)  # bad input fails before any index work
        with Router(configured(request.root, request.index_dir, rerank=request.rerank), watch=False) as router:
            started = time.perf_counter()
            choice = None
            if request.origin in (None, "canonical") and request.as_of is None:
                with EmbedProgress(sys.stderr.isatty()) as progress:
                    choice = router.search_mode(request.mode, progress=progress)
            hits = router.search(
                request.query, limit=request.limit, mode=request.mode, channels=request.channels,
                kinds=request.kinds, scopes=request.scopes, statuses=request.statuses, tags=request.tags,
                prefix=request.prefix, content=request.content, origin=request.origin,
                include_history=request.include_history, include_archived=request.include_archived,
                as_of=request.as_of, branches=request.branches,
            )  # fmt: skip
            took = round((time.perf_counter() - started) * 1000, 2)
            mode = choice.mode if choice is not None else router.effective_mode(request.mode)
            notice = _notice(hits) if choice is None else choice.notice
    except MemoryRouterError as exc:
        print(f"memrouter: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except OSError as exc:
        print(f"memrouter: {exc}", file=sys.stderr)
        return 1
    if notice is not None:  # never silent: a search that runs without meaning says so, and how to fix it
        print(f"memrouter: {notice}", file=sys.stderr)
    if request.fmt == "json":
        import json

        shown = shown_hits(hits, request.weak)
        data = {"query": request.query, "mode": mode, "took_ms": took, "results": [hit.to_dict() for hit in shown]}
        if len(shown) < len(hits):
            data["weak_left_out"] = len(hits) - len(shown)
        if notice is not None:
            data["notice"] = notice
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        print(format_hits(hits, query=request.query, mode=mode, weak=request.weak, emphasis=sys.stdout.isatty()))
    sys.stdout.flush()
    return 0


class EmbedProgress:
    """``progress(done, total)`` for embedding before a search: one line on stderr, rewritten, on a terminal
    (``show``); no output otherwise. Click-free, for the fast path."""

    def __init__(self, show: bool) -> None:
        self.show = show
        self.shown = False

    def __enter__(self) -> Any:
        return self if self.show else None

    def __call__(self, done: int, total: int) -> None:
        share = done * 100 // max(1, total)
        bar = "#" * (share // 5)
        sys.stderr.write(f"\rmemrouter: embedding for hybrid search [{bar:<20}] {done}/{total} chunks")
        sys.stderr.flush()
        self.shown = True

    def __exit__(self, *exc: object) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _notice(hits: Sequence[Any]) -> str | None:
    """The mode notice a search put in its hits' ``why`` (a search as of a date or commit decides there)."""
    for hit in hits:
        for match in hit.why:
            if match.retriever == "mode":
                return str(match.detail)
    return None


def configured(root: str | None, index_dir: str | None, *, rerank: bool = False) -> Any:
    """The project's configuration; ``rerank`` turns the second stage on for this command
    (``[search] rerank``)."""
    from memrouter.config.settings import Config
    from memrouter.core.records import replace

    config = Config.load(root=root, index_dir=index_dir)
    return replace(config, search=replace(config.search, rerank=True)) if rerank else config


def format_hits(
    hits: Sequence[Any], *, query: str = "", mode: str | None = None, weak: bool = False, emphasis: bool = False
) -> str:
    """The text form for people: rank, name, origin, relevance (0-1; the score for a hit the index does not
    hold) and title; the snippet without markdown markup (the words that matched in bold when ``emphasis``, on
    a terminal); and why it was found. Hits below the relevance floor are left out and counted (``shown_hits``)
    and marked when shown; "no good match" when none passes."""
    if not hits:
        return "no memories matched"
    good = [hit for hit in hits if not hit.weak]
    shown = shown_hits(hits, weak)
    lines = []
    if not good:
        lines.append(f"no good match for {query!r}; the closest, all below the relevance floor:")
    for rank, hit in enumerate(shown, 1):
        origin = "" if hit.source == "canonical" else f" [{hit.source}]"
        marked = f" [{hit.validity}]" if getattr(hit, "validity", None) else ""
        marked += " [weak]" if hit.weak else ""
        score = f"{hit.relevance:.2f}" if hit.relevance is not None else f"({hit.score:.3f})"
        lines.append(f"{rank:>2}. {hit.name}{origin}{marked}  {score}  {hit.title}")
        plain = plain_text(hit.snippet) if hit.snippet else ""
        if plain:
            lines.append(f"    {_emphasised(plain, query) if emphasis else plain}")
        if hit.why:
            lines.append(f"    why: {describe_why(hit, mode, plain, query)}")
    left_out = len(hits) - len(shown)
    if left_out:
        what = "match" if left_out == 1 else "matches"
        lines.append(f"({left_out} weak {what} below the relevance floor left out; --weak shows them)")
    return "\n".join(lines)


def shown_hits(hits: Sequence[Any], weak: bool) -> list[Any]:
    """The hits a person sees: those above the relevance floor, or every one with ``weak``, or, when none is
    above it, every one (marked weak under "no good match"): a right answer worded apart from the question is
    never hidden behind "nothing found"."""
    good = [hit for hit in hits if not hit.weak]
    return list(hits) if weak or not good else good


# What each retriever is called in the text form.
_FOUND_BY = {"lexical": "keywords", "dense": "meaning", "graph": "linked memories", "rerank": "second reading"}
# Notes (rank 0) worth a reader's while: a memory whose code changed, a time phrase understood, another branch
# (a hit from there, or a memory of this checkout removed there), each with how its detail is introduced.
_NOTES = {"anchors": "anchors: ", "time": "time: ", "branch": "from ", "removed": "removed on "}


def describe_why(hit: Any, mode: str | None, plain: str = "", query: str = "") -> str:
    """A hit's ``why`` in one line: each retriever that found it with its rank and what matched (the query's
    words in the snippet, the passage), the notes that matter, then the mode the search ran in."""
    parts: list[str] = []
    for match in hit.why:
        if match.rank:
            detail = match.detail
            if match.retriever == "lexical" and query and plain:
                from memrouter.index.sqlite.lexical import matched_words

                detail = ", ".join(matched_words(query, plain)[:6]) or detail
            found_by = _FOUND_BY.get(match.retriever, match.retriever)
            parts.append(f"{found_by} #{match.rank}" + (f" ({detail})" if detail else ""))
        elif match.retriever in _NOTES and match.detail:
            parts.append(_NOTES[match.retriever] + match.detail)
    keyword_only = any(m.retriever == "mode" or (m.retriever == "dense" and not m.rank) for m in hit.why)
    if mode:
        parts.append("keyword-only (see the note above)" if keyword_only and mode != "lexical" else f"{mode} search")
    return "; ".join(parts)


# Markdown markup a snippet may hold: heading marks, bold (and the highlight markers), backticks.
_MARKUP = re.compile(r"(?m)^\s{0,3}#{1,6}\s+|\*\*|__|`")


def plain_text(snippet: str) -> str:
    """A snippet without markdown markup, on one line."""
    return " ".join(_MARKUP.sub("", snippet).split())


def _emphasised(plain: str, query: str) -> str:
    """``plain`` with the words that matched ``query`` in bold (ANSI), for a terminal."""
    from memrouter.index.sqlite.lexical import matched_words

    words = matched_words(query, plain)
    if not words:
        return plain
    pattern = re.compile("|".join(re.escape(word) for word in sorted(words, key=len, reverse=True)), re.IGNORECASE)
    return pattern.sub(lambda found: f"\x1b[1m{found.group(0)}\x1b[0m", plain)


def parse_search_argv(argv: Sequence[str]) -> SearchRequest | None:
    """``argv`` (without the program name) as a search request, or None.

    None means "let click decide": any other command, help, an option the tables of
    ``memrouter.cli.search_options`` do not hold, a missing or invalid value, a second argument, or a command
    line that is not text (the group refuses it: ``memrouter.cli.argv``). What it accepts, click accepts and
    reads the same way (the same tables build the click command).
    """
    if not _text_only(argv):
        return None
    args = list(argv)
    position = 0
    while position < len(args) and args[position].startswith("-"):  # the group's options, before the command
        taken = _take(args, position, _GROUP)
        if taken is None:
            return None
        position = taken
    group = _read(args[:position], _GROUP)
    if group is None or position >= len(args) or args[position] != "search":
        return None
    queries: list[str] = []
    options: list[str] = []
    position += 1
    while position < len(args):
        arg = args[position]
        if arg.startswith("-") and arg != "-":
            taken = _take(args, position, _SEARCH)
            if taken is None:
                return None
            options += args[position:taken]
            position = taken
        else:
            queries.append(arg)
            position += 1
    found = _read(options, _SEARCH)
    if found is None or len(queries) != 1:
        return None
    fields = {**group, **found}
    source = fields.pop("source", None)
    fields["origin"] = fields.get("origin") or source
    return SearchRequest(query=queries[0], **fields)


def _text_only(argv: Sequence[str]) -> bool:
    """Whether the command line and the ``MEMROUTER_*`` variables are text (``memrouter.cli.argv``); a lone
    surrogate is never ASCII, so an ASCII command line needs no closer look (nor the module's import)."""
    env = os.environ
    if all(arg.isascii() for arg in argv) and all(
        key.isascii() and value.isascii() for key, value in env.items() if key.startswith("MEMROUTER_")
    ):
        return True
    from memrouter.cli.argv import undecodable

    return undecodable(argv, env) is None


def _take(args: list[str], position: int, table: dict[str, Option]) -> int | None:
    """The position after the option at ``position`` (and its value); None when ``table`` lacks it or it has no value."""
    spelling, equals, _ = args[position].partition("=")
    option = table.get(spelling)
    if option is None or (equals and option.takes == "flag"):
        return None
    if equals:
        return position + 1 if spelling.startswith("--") else None  # click reads "-n=5" as "=5"
    if option.takes == "flag":
        return position + 1
    return position + 2 if position + 1 < len(args) else None


def _read(args: list[str], table: dict[str, Option]) -> dict[str, Any] | None:
    """The fields of ``args`` (options as ``_take`` split them); None when a value is one click refuses."""
    fields: dict[str, Any] = {}
    position = 0
    while position < len(args):
        spelling, equals, value = args[position].partition("=")
        option = table[spelling]
        if option.takes == "flag":
            fields[option.field] = True
            position += 1
            continue
        if not equals:
            value = args[position + 1]
            position += 1
        position += 1
        if not _valid(option, value):
            return None
        if option.takes == "values":
            fields[option.field] = (*fields.get(option.field, ()), value)
        else:
            fields[option.field] = int(value) if option.limits else value
    return fields


def _valid(option: Option, value: str) -> bool:
    """True when click would accept ``value`` for ``option`` as it is."""
    if option.limits is not None:
        low, high = option.limits
        return value.isascii() and value.isdigit() and low <= int(value) <= high
    if option.choices and value not in option.choices:
        return False
    return not option.folder or (value != "" and not os.path.isfile(value))  # click.Path(file_okay=False)


__all__ = [
    "EmbedProgress",
    "SearchRequest",
    "describe_why",
    "format_hits",
    "parse_search_argv",
    "plain_text",
    "run_search",
]
