"""Validation of search requests: what a query and its filters may be."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Iterable

from memrouter.core.errors import InvalidInput
from memrouter.core.model import CHANNELS, PENDING, SEARCHED_CHANNELS, STATUSES, Filters
from memrouter.core.names import MAX_NAME_LENGTH
from memrouter.core.records import replace

__all__ = [
    "MAX_FILTER_CHARS",
    "MAX_FILTER_VALUES",
    "MAX_LIMIT",
    "MAX_QUERY_LENGTH",
    "check_limit",
    "check_query",
    "check_filter",
    "iso_time",
    "make_filters",
    "search_filters",
]

MAX_QUERY_LENGTH = 1000
MAX_LIMIT = 200
# Filters (channel, kind, scope, status, tag): the same limits in the library, the CLI and MCP.
MAX_FILTER_VALUES = 20
MAX_FILTER_CHARS = 100
# Line breaks and tabs in a pasted query count as spaces.
_ALLOWED_CONTROLS = frozenset("\t\n\r")


def check_query(query: object) -> str:
    """Return the query with outer whitespace removed, or raise ``InvalidInput``.

    Any printable text up to ``MAX_QUERY_LENGTH`` characters is valid; the
    query is data, so quotes and operators carry no meaning.
    """
    if not isinstance(query, str):
        raise InvalidInput(f"the query must be text, not {type(query).__name__}")
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidInput(f"the query is {len(query)} characters long; the limit is {MAX_QUERY_LENGTH}")
    for char in query:
        if char not in _ALLOWED_CONTROLS and unicodedata.category(char) in ("Cc", "Cs"):
            raise InvalidInput(f"the query contains a control character (U+{ord(char):04X})")
    stripped = query.strip()
    if not stripped:
        raise InvalidInput("the query is empty")
    return stripped


def check_limit(limit: object) -> int:
    """A result count between 1 and ``MAX_LIMIT``."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput(f"limit must be a whole number, not {limit!r}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT} (got {limit})")
    return limit


def check_filter(label: str, value: object, max_chars: int = MAX_FILTER_CHARS) -> str:
    """One filter value: printable text of at most ``max_chars`` characters, outer spaces removed."""
    if not isinstance(value, str):
        raise InvalidInput(f"{label} must be text, not {type(value).__name__}")
    stripped = value.strip()
    if not stripped:
        raise InvalidInput(f"{label} must be non-empty text")
    if len(stripped) > max_chars:
        raise InvalidInput(f"{label} {stripped[:20]!r}... is longer than {max_chars} characters")
    for char in stripped:
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise InvalidInput(f"{label} {stripped[:20]!r} holds a control character or a lone surrogate")
    return stripped


def _values(label: str, values: Iterable[str] | str | None, allowed: tuple[str, ...] | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    elif not isinstance(values, (list, tuple, set, frozenset)):
        raise InvalidInput(f"{label} must be text or a list of text, not {type(values).__name__}")
    values = list(values)
    if len(values) > MAX_FILTER_VALUES:
        raise InvalidInput(f"at most {MAX_FILTER_VALUES} {label} values at once (got {len(values)})")
    out: list[str] = []
    for value in values:
        value = check_filter(label, value)
        if allowed is not None and value not in allowed:
            raise InvalidInput(f"unknown {label} {value!r}; expected one of {', '.join(allowed)}")
        out.append(value)
    return tuple(dict.fromkeys(out))


def make_filters(
    *,
    channels: Iterable[str] | str | None = None,
    kinds: Iterable[str] | str | None = None,
    scopes: Iterable[str] | str | None = None,
    statuses: Iterable[str] | str | None = None,
    tags: Iterable[str] | str | None = None,
    prefix: str | None = None,
) -> Filters:
    """Validated ``Filters`` from loose arguments (a single string or a list each).

    Memories pending review are left out unless ``statuses`` asks for them.
    """
    if prefix is not None:
        prefix = (
            check_filter("prefix", prefix, MAX_NAME_LENGTH) if not isinstance(prefix, str) or prefix.strip() else None
        )
    wanted = _values("status", statuses, STATUSES)
    return Filters(
        channels=_values("channel", channels, CHANNELS),
        kinds=_values("kind", kinds, None),
        scopes=_values("scope", scopes, None),
        statuses=wanted,
        tags=_values("tag", tags, None),
        prefix=prefix,
        pending=PENDING in wanted,
    )


def iso_time(seconds: float) -> str:
    """UTC ISO text to the second (``2026-01-05T09:30:00Z``): how validity times are compared."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def search_filters(asked: Filters, now: float, *, history: bool = False, archived: bool = False) -> Filters:
    """What a search applies: the caller's filters, the searched channels, and validity at ``now``.

    Without ``history`` only what is in effect at ``now`` is searched; without
    ``archived`` archived memories are left out (asking for those statuses
    asks for them too); sprint records are never results.
    """
    return replace(
        asked,
        channels=asked.channels or SEARCHED_CHANNELS,
        now=None if history or "obsolete" in asked.statuses else iso_time(now),
        archived=archived or "archived" in asked.statuses,
        records=False,
    )
