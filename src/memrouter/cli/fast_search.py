"""``memrouter search``: the one implementation, and a parser for the fast path that skips click.

Agents and hooks run ``memrouter search`` as a fresh process many times a
day, so its start-up time is the latency they feel. Importing click and
building the whole command group costs more than the search itself; the
console script (``memrouter.cli.console``) therefore recognises a plain
``search`` command line with :func:`parse_search_argv` and hands everything
else (other commands, ``--help``, anything unusual or invalid) to the click
group in ``cli.py``, which also calls :func:`run_search`. This module imports
neither of them. The recogniser only accepts what click
would accept and parse the same way; ``tests/test_search_command.py`` checks
the two paths give identical results.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memrouter.cli.argv import undecodable
from memrouter.core.model import MODES
from memrouter.core.query import MAX_LIMIT

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

FORMATS = ("text", "json")
# option -> field of SearchRequest; every one takes a value
_VALUE_OPTIONS = {
    "--limit": "limit",
    "-n": "limit",
    "--mode": "mode",
    "--prefix": "prefix",
    "--as-of": "as_of",
    "--origin": "origin",
    "--source": "origin",  # the earlier spelling of --origin
    "--format": "fmt",
}
_MULTIPLE_OPTIONS = {
    "--channel": "channels",
    "--kind": "kinds",
    "--scope": "scopes",
    "--status": "statuses",
    "--tag": "tags",
}
_FLAGS = {
    "--content": "content",
    "--history": "include_history",
    "--include-archived": "include_archived",
    "--rerank": "rerank",
}
_GROUP_OPTIONS = {"--root": "root", "--index-dir": "index_dir"}


@dataclass(frozen=True, slots=True)
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
                as_of=request.as_of,
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

        data = {"query": request.query, "mode": mode, "took_ms": took, "results": [hit.to_dict() for hit in hits]}
        if notice is not None:
            data["notice"] = notice
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        print(format_hits(hits))
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
    from dataclasses import replace

    from memrouter.config.settings import Config

    config = Config.load(root=root, index_dir=index_dir)
    return replace(config, search=replace(config.search, rerank=True)) if rerank else config


def format_hits(hits: Sequence[Any]) -> str:
    """The text form: rank, name, origin, score and title, then the snippet."""
    if not hits:
        return "no memories matched"
    lines = []
    for rank, hit in enumerate(hits, 1):
        origin = "" if hit.source == "canonical" else f" [{hit.source}]"
        marked = f" [{hit.validity}]" if getattr(hit, "validity", None) else ""
        lines.append(f"{rank:>2}. {hit.name}{origin}{marked}  ({hit.score:.3f})  {hit.title}")
        if hit.snippet:
            lines.append(f"    {hit.snippet}")
    return "\n".join(lines)


def parse_search_argv(argv: Sequence[str], env: Mapping[str, str] | None = None) -> SearchRequest | None:
    """``argv`` (without the program name) as a search request, or None.

    None means "let click decide": any other command, help, an option this
    parser does not know, a missing or invalid value, a second argument, or a
    command line that is not text (the group refuses it: ``memrouter.cli.argv``).
    """
    env = os.environ if env is None else env
    if undecodable(argv, env) is not None:
        return None
    fields: dict[str, Any] = {
        "root": env.get("MEMROUTER_ROOT") or None,
        "index_dir": env.get("MEMROUTER_INDEX_DIR") or None,
    }
    args = list(argv)
    position = 0
    while position < len(args) and args[position].startswith("-"):
        taken = _take_option(args, position)
        if taken is None or taken[0] not in _GROUP_OPTIONS:
            return None
        option, value, position = taken
        fields[_GROUP_OPTIONS[option]] = value
    if position >= len(args) or args[position] != "search":
        return None
    multiple: dict[str, list[str]] = {}
    queries: list[str] = []
    position += 1
    while position < len(args):
        arg = args[position]
        if arg in _FLAGS:
            fields[_FLAGS[arg]] = True
            position += 1
        elif arg.startswith("-") and arg != "-":
            taken = _take_option(args, position)
            if taken is None:
                return None
            option, value, position = taken
            if option in _VALUE_OPTIONS:
                fields[_VALUE_OPTIONS[option]] = value
            elif option in _MULTIPLE_OPTIONS:
                multiple.setdefault(_MULTIPLE_OPTIONS[option], []).append(value)
            else:
                return None
        else:
            queries.append(arg)
            position += 1
    if len(queries) != 1 or not _valid(fields):
        return None
    for option, values in multiple.items():
        fields[option] = tuple(values)
    limit = fields.pop("limit", None)
    return SearchRequest(query=queries[0], limit=None if limit is None else int(limit), **fields)


def _take_option(args: list[str], position: int) -> tuple[str, str, int] | None:
    """The option at ``position``, its value and the position after both; None if it has no value."""
    option, equals, value = args[position].partition("=")
    if equals:
        return (option, value, position + 1) if option.startswith("--") else None  # click reads "-n=5" as "=5"
    if position + 1 >= len(args):
        return None
    return option, args[position + 1], position + 2


def _valid(fields: Mapping[str, Any]) -> bool:
    """True when click would accept these values as they are."""
    limit = fields.get("limit", "10")
    if not (limit.isascii() and limit.isdigit() and 1 <= int(limit) <= MAX_LIMIT):
        return False
    if fields.get("mode") not in (None, *MODES) or fields.get("fmt", "text") not in FORMATS:
        return False
    for folder in (fields.get("root"), fields.get("index_dir")):
        if folder is not None and (folder == "" or os.path.isfile(folder)):
            return False  # click.Path(file_okay=False) has the message
    return True


__all__ = ["EmbedProgress", "SearchRequest", "format_hits", "parse_search_argv", "run_search"]
