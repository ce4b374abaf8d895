"""Search and list filters as SQLite conditions over the ``memories`` table.

The in-effect rules come from ``memrouter.core.effect`` and are rendered
here in SQLite's dialect; ``memrouter.index.postgres.filters`` renders the
same rules in PostgreSQL's. Times are compared as UTC ISO text (a date is
its midnight).
"""

from __future__ import annotations

from memrouter.core.effect import RECORD_PATTERN, Rule, applying

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.core.model import Filters

__all__ = ["TIMED_CONDITION", "TIMED_FIELDS", "filter_sql"]

# The fields of the time rules (``TIMED_RULES``) and the condition of a memory that sets one of them. The
# partial index ``memories_timed`` (migration 0503) is built on this very condition, so a query with it reads
# that small index instead of every row.
TIMED_FIELDS = ("valid_until", "expires", "valid_from")
TIMED_CONDITION = " OR ".join(f"{field} IS NOT NULL" for field in TIMED_FIELDS)


def filter_sql(filters: Filters, alias: str = "m", *, timed: bool = True) -> tuple[str, list[object]]:
    """SQL conditions (each starting with `` AND``) and their parameters.

    ``timed=False`` leaves out the comparisons with ``filters.now`` (valid
    from, until, expires) but keeps every other condition, for callers that
    apply those times themselves (``LexicalIndex`` caches per generation).
    """
    clauses: list[str] = []
    params: list[object] = []

    def one_of(column: str, values: tuple[str, ...]) -> None:
        if values:
            clauses.append(f"{alias}.{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)

    one_of("channel", filters.channels)
    one_of("kind", filters.kinds)
    one_of("scope", filters.scopes)
    one_of("status", filters.statuses)
    for tag in filters.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = {alias}.id AND t.tag = ?)")
        params.append(tag)
    if filters.prefix:
        clauses.append(f"substr({alias}.name, 1, ?) = ?")
        params.extend([len(filters.prefix), filters.prefix])
    for rule in applying(filters, timed=timed):
        clauses.append(_condition(rule, alias, params, filters.now))
    return "".join(f" AND {clause}" for clause in clauses), params


def _condition(rule: Rule, alias: str, params: list[object], now: str | None) -> str:
    """One in-effect rule as the SQLite condition a memory in effect meets."""
    column = f"{alias}.{rule.field}"
    if rule.test == "status":
        return f"{column} != '{rule.value}'"  # a constant of RULES, never input
    if rule.test == "set":
        return f"{column} IS NULL"
    if rule.test == "named":  # retired even when its own file does not say so
        return f"{column} NOT IN (SELECT s.supersedes FROM memories s WHERE s.supersedes IS NOT NULL)"
    if rule.test == "until":
        params.append(now)
        return f"({column} IS NULL OR {column} > ?)"
    if rule.test == "from":
        params.append(now)
        return f"({column} IS NULL OR {column} <= ?)"
    return f"{column} NOT GLOB '{RECORD_PATTERN}'"
