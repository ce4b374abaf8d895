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

import re

__all__ = ["may_hold_time_words"]

_HINT = re.compile(
    r"\d|mem:|yesterday|today|weekend|day|week|month|quarter|year"
    r"|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec",
    re.IGNORECASE,
)


def may_hold_time_words(query: str) -> bool:
    """False only when ``query`` holds no time phrase ``memrouter.core.timewords`` could read."""
    return _HINT.search(query) is not None
