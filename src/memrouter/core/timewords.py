"""Time words in a query ("last month", "in Q4 2025", "since 2026-01-10", "before ADR-012").

``find_time_words(query, now)`` finds the first time phrase in a query and
returns it as a half-open UTC window ``[start, end)`` (either bound may be
open), the query with the phrase removed, and, for "before ADR-012"-style
phrases, the memory reference whose date bounds the window (the router
resolves it). No LLM and no dependency: a handful of patterns, relative to
``now`` (the search's moment, or its ``as_of``).

A month name alone counts only after a word like "in" or "since" ("in
March"; never "may" the verb); a bare year only after such a word too.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from memrouter.core.records import record, replace

__all__ = ["TimeWords", "find_time_words"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        1,
    )
    for name in names
}  # fmt: skip
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_UNITS = {"day": 1, "week": 7, "month": 30, "quarter": 91, "year": 365}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "twelve": 12}  # fmt: skip
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(_NUMBERS) + r")"

# Words that say how the date bounds the search; "in" and the like mean "within".
_LEAD = r"(?P<lead>in|during|on|of|from|since|after|before|until|till|by|as\s+of|prior\s+to)\s+"
_OPENING = {"since": "since", "from": "since", "after": "after", "before": "before", "prior to": "before",
            "until": "until", "till": "until", "by": "until", "as of": "until"}  # fmt: skip

# Date expressions, most specific first. Each names the groups ``_span`` reads.
_EXPRESSIONS = [
    (
        "week_of",
        r"(?:the\s+)?(?P<nth>first|second|third|fourth|last)\s+week\s+of\s+" + _MONTH + r",?(?:\s+(?P<y>\d{4}))?",
    ),
    ("iso_day", r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})"),
    ("iso_month", r"(?P<y>\d{4})-(?P<m>\d{2})(?![\d-])"),
    ("day_month", r"(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s*(?P<y>\d{4})?"),
    ("month_day", _MONTH + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s*(?P<y>\d{4}))?"),
    ("month_year", _MONTH + r",?\s+(?P<y>\d{4})"),
    ("quarter", r"q(?P<q>[1-4])\s*(?P<y>\d{4})|(?P<y2>\d{4})\s*q(?P<q2>[1-4])"),
    ("relative", r"(?P<which>this|last|past|previous)\s+(?P<unit>week|month|quarter|year)"),
    ("span", r"(?:the\s+)?(?:last|past)\s+" + _COUNT + r"\s+(?P<unit>day|week|month|year)s?"),
    ("ago", _COUNT + r"\s+(?P<unit>day|week|month|year)s?\s+ago"),
    ("word", r"(?P<word>yesterday|today|last\s+weekend|this\s+weekend)"),
]
# Only after a lead word: a month alone ("in March") or a year alone ("in 2025").
_LED_ONLY = [("month", _MONTH), ("year", r"(?P<y>(?:19|20|21)\d{2})")]
_REFERENCE = r"(?P<ref>adr[-_ ]?\d{1,5}|mem:[\w./-]+|#\d{1,7})"


def _compile() -> list[tuple[str, re.Pattern[str]]]:
    """One pattern per expression kind, each with its optional (or, for some, required) lead word."""
    flags = re.IGNORECASE
    compiled = [(kind, re.compile(rf"\b(?:{_LEAD})?(?:{body})(?:'s)?(?![\w-])", flags)) for kind, body in _EXPRESSIONS]
    compiled += [(kind, re.compile(rf"\b{_LEAD}(?:{body})(?![\w-])", flags)) for kind, body in _LED_ONLY]
    compiled.append(("reference", re.compile(rf"\b{_LEAD}{_REFERENCE}(?![\w-])", flags)))
    return compiled


_PATTERNS: list[tuple[str, re.Pattern[str]]] = []
_SPACES = re.compile(r"\s{2,}")


@record
class TimeWords:
    """A time phrase found in a query.

    ``start``/``end`` are UTC ISO text (``2026-10-01T00:00:00Z``), the window
    ``[start, end)``; ``None`` leaves that side open. ``reference`` is a
    memory reference ("ADR-012", "mem:name", "#12") whose date bounds the
    window instead, once the router has resolved it (``relation`` says how).
    """

    phrase: str
    text: str
    start: str | None = None
    end: str | None = None
    relation: str = "in"  # in, since, after, before, until
    reference: str | None = None

    def describe(self) -> str:
        """``"last month" -> 2026-10-01..2026-11-01`` for ``why``."""
        window = f"{(self.start or '')[:10]}..{(self.end or '')[:10]}"
        return f"{self.phrase!r} -> {window}" if self.reference is None else f"{self.phrase!r} -> {self.reference}"

    def bounded_by(self, moment: str) -> TimeWords:
        """This phrase with its reference resolved to ``moment`` (UTC ISO text)."""
        if self.relation in ("before", "until"):
            return replace(self, end=moment)
        return replace(self, start=moment)


def find_time_words(query: str, now: datetime) -> TimeWords | None:
    """The first time phrase in ``query`` relative to ``now`` (aware, or naive UTC), or ``None``.

    Of phrases starting at the same place the longest wins ("in March 2025"
    over "in March"); a phrase naming a date wins over one relative to now
    ("last week, as mentioned on 6 November 2023"); a phrase naming no real
    date ("30 February") is skipped.
    """
    if not any(char.isdigit() for char in query) and not _WORDS.search(query):
        return None  # the common case, without the patterns
    if not _PATTERNS:
        _PATTERNS.extend(_compile())
    today = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC).date()
    found: list[tuple[int, int, int, str, re.Match[str]]] = []
    for order, (kind, pattern) in enumerate(_PATTERNS):
        found += [(m.start(), -len(m.group(0)), order, kind, m) for m in pattern.finditer(query)]
    readings = [(kind, words) for _, _, _, kind, match in sorted(found, key=lambda item: item[:3])
                if (words := _read(kind, match, query, today)) is not None]  # fmt: skip
    # A date the question names ("last week, as mentioned on 6 November 2023") says more than one relative to now.
    absolute = [words for kind, words in readings if kind not in _RELATIVE]
    return absolute[0] if absolute else readings[0][1] if readings else None


_RELATIVE = frozenset({"relative", "span", "ago", "word"})


def _read(kind: str, match: re.Match[str], query: str, today: date) -> TimeWords | None:
    groups = {key: value for key, value in match.groupdict().items() if value is not None}
    relation = _OPENING.get(re.sub(r"\s+", " ", groups.get("lead", "")).lower(), "in")
    text = _SPACES.sub(" ", query[: match.start()] + " " + query[match.end() :]).strip(" ,;")
    phrase = match.group(0)
    if kind == "reference":
        if relation == "in":
            return None  # "in ADR-012" is a topic, not a time
        return TimeWords(phrase, text, relation=relation, reference=_reference(groups["ref"]))
    span = _span(kind, groups, today)
    if span is None:
        return None
    start: date | None
    end: date | None
    start, end = span
    if relation == "since":
        end = None
    elif relation == "after":
        start, end = end, None
    elif relation == "before":
        start, end = None, start
    elif relation == "until":
        start = None
    return TimeWords(phrase, text, _iso(start), _iso(end), relation)


_WORDS = re.compile(
    r"\b(?:yesterday|today|weekend|week|month|quarter|year|ago|" + "|".join(_MONTHS) + r")\b", re.IGNORECASE
)


def _reference(text: str) -> str:
    digits = re.match(r"adr[-_ ]?(\d+)", text, re.IGNORECASE)
    return f"ADR-{digits.group(1)}" if digits else text


def _iso(day: date | None) -> str | None:
    return None if day is None else f"{day.isoformat()}T00:00:00Z"


def _month_start(year: int, month: int) -> date:
    return date(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


def _span(kind: str, g: dict[str, str], today: date) -> tuple[date, date] | None:
    """The days ``[start, end)`` a date expression covers, or ``None`` if it names no real date."""
    try:
        if kind in ("iso_day", "day_month", "month_day"):
            month = int(g["m"]) if "m" in g else _MONTHS[g["month"].lower()]
            year = int(g["y"]) if "y" in g else _latest_year(month, int(g["d"]), today)
            day = date(year, month, int(g["d"]))
            return day, day + timedelta(days=1)
        if kind == "week_of":
            month = _MONTHS[g["month"].lower()]
            year = int(g["y"]) if "y" in g else _latest_year(month, 1, today)
            end_of_month = _month_start(year, month + 1)
            nth = ("first", "second", "third", "fourth", "last").index(g["nth"].lower())
            start = date(year, month, 1) + timedelta(days=7 * nth) if nth < 4 else end_of_month - timedelta(days=7)
            return start, start + timedelta(days=7)
        if kind in ("iso_month", "month_year", "month"):
            month = int(g["m"]) if "m" in g else _MONTHS[g["month"].lower()]
            if not 1 <= month <= 12:
                return None
            year = int(g["y"]) if "y" in g else _latest_year(month, 1, today)
            return _month_start(year, month), _month_start(year, month + 1)
        if kind == "quarter":
            quarter, year = int(g.get("q") or g["q2"]), int(g.get("y") or g["y2"])
            return _month_start(year, 3 * quarter - 2), _month_start(year, 3 * quarter + 1)
        if kind == "year":
            return date(int(g["y"]), 1, 1), date(int(g["y"]) + 1, 1, 1)
        if kind == "relative":
            return _relative(g["which"].lower(), g["unit"].lower(), today)
        if kind in ("span", "ago"):
            count = g["count"].lower()
            days = (int(count) if count.isdigit() else _NUMBERS[count]) * _UNITS[g["unit"].lower()]
            if kind == "span":
                return today - timedelta(days=days), today + timedelta(days=1)
            day = today - timedelta(days=days)
            return day, day + timedelta(days=1)
        return _word(re.sub(r"\s+", " ", g["word"].lower()), today)
    except (ValueError, KeyError, OverflowError):
        return None


def _latest_year(month: int, day: int, today: date) -> int:
    """The year of the latest ``month``/``day`` not after ``today`` ("in March" in January means last March)."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def _relative(which: str, unit: str, today: date) -> tuple[date, date]:
    if unit == "week":
        start = today - timedelta(days=today.weekday())
        return (start, start + timedelta(days=7)) if which == "this" else (start - timedelta(days=7), start)
    if unit == "year":
        year = today.year if which == "this" else today.year - 1
        return date(year, 1, 1), date(year + 1, 1, 1)
    months = 3 if unit == "quarter" else 1
    first = today.month - (today.month - 1) % months  # the first month of this month or quarter
    start = _month_start(today.year, first if which == "this" else first - months)
    return start, _month_start(start.year, start.month + months)


def _word(word: str, today: date) -> tuple[date, date]:
    if word == "today":
        return today, today + timedelta(days=1)
    if word == "yesterday":
        return today - timedelta(days=1), today
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    if word == "last weekend" and saturday >= today - timedelta(days=1):
        saturday -= timedelta(days=7)  # on a weekend, "last weekend" is the one before
    return saturday, saturday + timedelta(days=2)
