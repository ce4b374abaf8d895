"""Validation of search requests: what a query and its filters may be."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from memrouter.errors import InvalidInput
from memrouter.model import CHANNELS, STATUSES, Filters

__all__ = ["MAX_QUERY_LENGTH", "MAX_LIMIT", "check_query", "check_limit", "make_filters"]

MAX_QUERY_LENGTH = 1000
MAX_LIMIT = 200
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


def _values(label: str, values: Iterable[str] | str | None, allowed: tuple[str, ...] | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{label} must be non-empty text")
        value = value.strip()
        if allowed is not None and value not in allowed:
            raise InvalidInput(f"unknown {label} {value!r}; expected one of {', '.join(allowed)}")
        if len(value) > 200:
            raise InvalidInput(f"{label} {value[:20]!r}... is longer than 200 characters")
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
    """Validated ``Filters`` from loose arguments (a single string or a list each)."""
    if prefix is not None:
        if not isinstance(prefix, str):
            raise InvalidInput("prefix must be text")
        prefix = prefix.strip() or None
        if prefix and (len(prefix) > 200 or any(unicodedata.category(c) == "Cc" for c in prefix)):
            raise InvalidInput("prefix must be at most 200 printable characters")
    return Filters(
        channels=_values("channel", channels, CHANNELS),
        kinds=_values("kind", kinds, None),
        scopes=_values("scope", scopes, None),
        statuses=_values("status", statuses, STATUSES),
        tags=_values("tag", tags, None),
        prefix=prefix,
    )
