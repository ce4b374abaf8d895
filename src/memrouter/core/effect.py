"""When a memory is in effect: the one definition every store, every search and every check uses.

A memory leaves default reads only when its file says so, or another's does:

- ``superseded``: its ``superseded_by`` is set, or another memory's ``supersedes`` names it;
- ``obsolete`` / ``archived``: its ``status`` says so (``archived`` comes back on request);
- ``expired``: its ``valid_until`` or ``expires`` is not after now;
- ``not_yet_valid``: its ``valid_from`` is after now;
- ``pending``: it awaits review (``status: pending_review``), shown only on request;
- ``record``: a sprint's own record (``sprints/<id>/_sprint``), not a memory to recall.

``RULES`` holds them as data: each store renders them in its own SQL dialect
(``memrouter.index.sqlite.filters``, ``memrouter.index.postgres.filters``) and
``out_of_effect`` judges one memory's fields in Python (validity marks, the
janitor), so the three can never disagree; ``tests/index/test_effect.py``
checks every dialect against ``out_of_effect`` on random memories.
Times are UTC ISO 8601 text (a date is its midnight), compared as text.
"""

from __future__ import annotations

from memrouter.core.model import PENDING
from memrouter.core.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from memrouter.core.model import Filters

__all__ = ["HISTORY_RULES", "PENDING", "RECORD_PATTERN", "RULES", "TIMED_RULES", "Rule", "applying", "out_of_effect"]

# A sprint's own record: ``sprints/<id>/_sprint`` (a glob, as SQLite's GLOB reads it).
RECORD_PATTERN = "sprints/*/_sprint"


@record
class Rule:
    """One reason a memory is out of effect, as a condition on its fields that a store renders.

    ``test`` is what the condition checks: ``status`` (``field`` equals ``value``), ``set`` (``field`` has a
    value), ``named`` (another memory's ``supersedes`` names this one), ``until`` (``field`` is set and not
    after now), ``from`` (``field`` is after now), ``record`` (the name matches ``RECORD_PATTERN``).
    ``timed``: the condition compares with now. ``unless``: the ``Filters`` flag that lets it through.
    """

    reason: str
    test: str
    field: str = ""
    value: str = ""
    timed: bool = False
    unless: str = ""


RULES: tuple[Rule, ...] = (
    Rule("superseded", "set", "superseded_by", unless="history"),
    Rule("superseded", "named", "name", unless="history"),
    Rule("obsolete", "status", "status", "obsolete", unless="history"),
    Rule("archived", "status", "status", "archived", unless="archived"),
    Rule("expired", "until", "valid_until", timed=True, unless="history"),
    Rule("expired", "until", "expires", timed=True, unless="history"),
    Rule("not_yet_valid", "from", "valid_from", timed=True, unless="history"),
    Rule(PENDING, "status", "status", PENDING, unless="pending"),
    Rule("record", "record", "name", unless="records"),
)
# What a search with history (or archived memories) brings back, marked with why a default search would not.
HISTORY_RULES = tuple(rule for rule in RULES if rule.unless in ("history", "archived"))
# The rules that compare with now (a cache of who passes the rest holds for every now).
TIMED_RULES = tuple(rule for rule in RULES if rule.timed)


def applying(filters: Filters, *, timed: bool = True) -> tuple[Rule, ...]:
    """The rules a read with ``filters`` keeps memories out by, in ``RULES`` order; ``timed=False`` leaves out
    those that compare with now. ``filters.now`` None (a search with history) lets superseded, obsolete,
    expired and not-yet-valid memories through; ``archived``, ``pending`` and ``records`` let theirs."""
    through = {"history": filters.now is None, "archived": filters.archived, "pending": filters.pending,
               "records": filters.records}  # fmt: skip
    return tuple(rule for rule in RULES if not through[rule.unless] and (timed or not rule.timed))


def out_of_effect(
    fields: Mapping[str, object], at: str, *, named: bool = False, rules: Iterable[Rule] = RULES
) -> str | None:
    """Why a memory with these front-matter ``fields`` is out of effect at ``at`` (ISO text), or None.

    ``named``: another memory's ``supersedes`` names it; ``rules``: the rules to judge by (all by default).
    The first rule that holds gives the reason.
    """
    from fnmatch import fnmatchcase  # lazy: only marks and the janitor judge in Python

    for rule in rules:
        value = fields.get(rule.field)
        if rule.test == "status":
            holds = value == rule.value
        elif rule.test == "set":
            holds = value is not None
        elif rule.test == "named":
            holds = named
        elif rule.test == "until":
            holds = value is not None and str(value) <= at
        elif rule.test == "from":
            holds = value is not None and str(value) > at
        else:  # record
            holds = isinstance(value, str) and fnmatchcase(value, RECORD_PATTERN)
        if holds:
            return rule.reason
    return None
