"""Search and list filters as PostgreSQL conditions: the in-effect rules of ``memrouter.core.effect``,
rendered in PostgreSQL's dialect as ``memrouter.index.sqlite.filters`` renders them in SQLite's.

The conditions are written against the scoped ``{memories}`` (``scope.ProjectScope.sql``),
so the subquery for superseded memories stays inside the project too.
"""

from __future__ import annotations

from typing import Any

from memrouter.core.effect import RECORD_PATTERN, Rule, applying
from memrouter.core.model import Filters

__all__ = ["filter_sql"]

# RECORD_PATTERN as a POSIX regular expression (its only special character is the glob's *; a LIKE pattern's %
# would read as a placeholder in psycopg's statements).
_RECORD_REGEX = "^" + RECORD_PATTERN.replace("*", ".*") + "$"


def filter_sql(filters: Filters, within: list[str] | None = None, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """Conditions (each starting with `` AND``) and their named parameters.

    ``within``: the names a time window allows (``filters.within`` holds local row ids; the caller maps them).
    """
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for column, values in (("channel", filters.channels), ("kind", filters.kinds), ("scope", filters.scopes),
                           ("status", filters.statuses)):  # fmt: skip
        if values:
            clauses.append(f"{alias}.{column} = ANY(%(f_{column})s)")
            params[f"f_{column}"] = list(values)
    for number, tag in enumerate(filters.tags):
        clauses.append(f"%(f_tag{number})s = ANY({alias}.tags)")
        params[f"f_tag{number}"] = tag
    if filters.prefix:
        clauses.append(f"starts_with({alias}.name, %(f_prefix)s)")
        params["f_prefix"] = filters.prefix
    rules = applying(filters)
    if any(rule.timed for rule in rules):
        params["f_now"] = filters.now
    clauses += [_condition(rule, alias) for rule in rules]
    if within is not None:
        clauses.append(f"{alias}.name = ANY(%(f_within)s)")
        params["f_within"] = within
    return "".join(f" AND {clause}" for clause in clauses), params


def _condition(rule: Rule, alias: str) -> str:
    """One in-effect rule as the PostgreSQL condition a memory in effect meets."""
    column = f"{alias}.{rule.field}"
    if rule.test == "status":
        return f"{column} != '{rule.value}'"  # a constant of RULES, never input
    if rule.test == "set":
        return f"{column} IS NULL"
    if rule.test == "named":  # retired even when its own file does not say so
        return f"{column} NOT IN (SELECT s.supersedes FROM {{memories}} s WHERE s.supersedes IS NOT NULL)"
    if rule.test == "until":
        return f"({column} IS NULL OR {column} > %(f_now)s)"
    if rule.test == "from":
        return f"({column} IS NULL OR {column} <= %(f_now)s)"
    return f"{column} !~ '{_RECORD_REGEX}'"
