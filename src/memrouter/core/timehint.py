"""Whether a query may hold a time phrase: a test cheap enough to run before the parser loads.

Every phrase ``memrouter.core.timewords`` reads holds a digit (dates, years,
quarters, counts, "ADR-12", "#45"), a month's name (its first three letters
suffice), a unit of time ("last week", "two days ago"), "yesterday",
"today", "weekend", or a ``mem:`` reference. A query with none of them skips
the parser, its patterns and ``datetime``: most queries. The test may say yes
to a query holding no phrase (the parser then finds none); it never says no
to one that holds a phrase (``tests/test_time_words.py`` holds it to that).
"""

from __future__ import annotations

__all__ = ["may_hold_time_words"]

# Plain substrings, not a pattern: compiling one would cost a cold search more than every test it runs.
_HINTS = (
    "mem:",
    "day",
    "week",
    "month",
    "quarter",
    "year",
    "jan",
    "feb",
    "mar",
    "apr",
    "may",
    "jun",
    "jul",
    "aug",
    "sep",
    "oct",
    "nov",
    "dec",
)  # fmt: skip  ("day" covers yesterday and today; "week" covers weekend)


def may_hold_time_words(query: str) -> bool:
    """False only when ``query`` holds no time phrase ``memrouter.core.timewords`` could read."""
    if any(char.isdigit() for char in query):
        return True
    lowered = query.lower()
    return any(hint in lowered for hint in _HINTS)
