"""Search and list filters as PostgreSQL conditions: the same rules as ``memrouter.index.sqlite.lexical.filter_sql``.

The conditions are written against the scoped ``{memories}`` (``scope.ProjectScope.sql``),
so the subquery for superseded memories stays inside the project too.
"""

from __future__ import annotations

from typing import Any

from memrouter.core.model import PENDING, Filters

__all__ = ["filter_sql"]


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
    if filters.now is not None:
        clauses.append(
            f"{alias}.status != 'obsolete' AND {alias}.superseded_by IS NULL AND {alias}.name NOT IN "
            "(SELECT s.supersedes FROM {memories} s WHERE s.supersedes IS NOT NULL)"
            f" AND ({alias}.valid_until IS NULL OR {alias}.valid_until > %(f_now)s)"
            f" AND ({alias}.expires IS NULL OR {alias}.expires > %(f_now)s)"
            f" AND ({alias}.valid_from IS NULL OR {alias}.valid_from <= %(f_now)s)"
        )
        params["f_now"] = filters.now
    if not filters.archived:
        clauses.append(f"{alias}.status != 'archived'")
    if not filters.pending:
        clauses.append(f"{alias}.status != '{PENDING}'")
    if not filters.records:
        clauses.append(f"{alias}.name !~ '^sprints/.*/_sprint$'")
    if within is not None:
        clauses.append(f"{alias}.name = ANY(%(f_within)s)")
        params["f_within"] = within
    return "".join(f" AND {clause}" for clause in clauses), params
