"""The options of ``memrouter search`` and of the ``memrouter`` group, defined once.

The click command (``memrouter.cli.memories.search``) and the group
(``memrouter.cli.app``) are built from these tables, and the click-free fast
path (``memrouter.cli.fast_search``) parses a command line with the same
tables, so the two can never disagree on what an option is called, whether
it takes a value, repeats, or which values it accepts. This module imports
neither click nor anything a search does not need.
"""

from __future__ import annotations

from memrouter.config.sections import BRANCH_CHOICES
from memrouter.core.model import MODES
from memrouter.core.query import MAX_LIMIT
from memrouter.core.records import record

__all__ = ["FORMATS", "GROUP_OPTIONS", "SEARCH_OPTIONS", "Option"]

FORMATS = ("text", "json")


@record
class Option:
    """One option: its spellings (the first is the name), the field of ``SearchRequest`` it sets, and what it takes.

    ``takes``: ``value`` (one value, the last one wins), ``values`` (repeatable, each value kept) or ``flag``.
    ``choices`` / ``limits`` bound a value (``limits``: a whole number from, to); ``folder``: a folder that must
    not be a file (click's ``Path(file_okay=False)``); ``default``: the value when absent (a flag: False).
    """

    spellings: tuple[str, ...]
    field: str
    takes: str
    help: str
    choices: tuple[str, ...] = ()
    limits: tuple[int, int] | None = None
    folder: bool = False
    default: str | None = None
    hidden: bool = False


SEARCH_OPTIONS: tuple[Option, ...] = (
    Option(("--limit", "-n"), "limit", "value", "How many results (default from configuration: 10).",
           limits=(1, MAX_LIMIT)),
    Option(("--mode",), "mode", "value", "Retrieval mode (default from configuration: hybrid).", choices=MODES),
    Option(("--channel",), "channels", "values", "Only these channels (repeatable)."),
    Option(("--kind",), "kinds", "values", "Only these kinds (repeatable)."),
    Option(("--scope",), "scopes", "values", "Only these scopes (repeatable)."),
    Option(("--status",), "statuses", "values", "Only these statuses (repeatable)."),
    Option(("--tag",), "tags", "values", "Only memories with every one of these tags."),
    Option(("--prefix",), "prefix", "value", "Only names starting with this (a folder: 'ci/')."),
    Option(("--content",), "content", "flag", "Include each memory's full text (JSON)."),
    Option(("--weak",), "weak", "flag", "Also the matches below the relevance floor, marked weak."),
    Option(("--history",), "include_history", "flag", "Also superseded, obsolete and expired memories, marked."),
    Option(("--include-archived",), "include_archived", "flag",
           "Also archived sprint memories, marked, after the others."),
    Option(("--as-of",), "as_of", "value", "Search the memories as committed at this date (2026-01-05) or commit."),
    Option(("--branches",), "branches", "value",
           "'local': also the memories only other local branches and worktrees hold, lowered and marked "
           "(default from configuration: none).", choices=BRANCH_CHOICES),
    Option(("--rerank",), "rerank", "flag", "Read the best candidates again, word by word (see [search] rerank)."),
    Option(("--origin",), "origin", "value",
           "Only 'canonical', or only one external backend by name (fails with exit 3 if it is down)."),
    Option(("--source",), "source", "value", "The earlier spelling of --origin.", hidden=True),
    Option(("--format",), "fmt", "value", "Output format.", choices=FORMATS, default="text"),
)  # fmt: skip

GROUP_OPTIONS: tuple[Option, ...] = (
    Option(("--root",), "root", "value",
           "Memories folder (default: $MEMROUTER_ROOT, else .serena/memories of the project found from here).",
           folder=True),
    Option(("--index-dir",), "index_dir", "value",
           "Where the index lives (default: $MEMROUTER_INDEX_DIR, else <project>/.memrouter, or the user cache).",
           folder=True),
)  # fmt: skip
