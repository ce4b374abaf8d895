"""The in-effect rules, defined once (``memrouter.core.effect``), mean the same in SQLite as in Python.

Random memories go into a real SQLite table; for random filters, the memories the rendered SQL keeps are
exactly those ``out_of_effect`` finds in effect. ``tests/postgres/test_effect_postgres.py`` holds
PostgreSQL's rendering to the same rule.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter.core.effect import RULES, applying, out_of_effect
from memrouter.core.model import Filters
from memrouter.index.sqlite.filters import filter_sql

DAYS = ["2026-01-01", "2026-02-01T12:00:00Z", "2026-03-01", None]
STATUSES = ["active", "obsolete", "archived", "pending_review"]
NAMES = ["a", "b", "c/d", "sprints/s1/_sprint", "sprints/s1/notes", "e"]


def memories() -> st.SearchStrategy[list[dict[str, Any]]]:
    one = st.fixed_dictionaries(
        {
            "status": st.sampled_from(STATUSES),
            "superseded_by": st.sampled_from([None, None, "b"]),
            "supersedes": st.sampled_from([None, None, "a", "c/d"]),
            "valid_from": st.sampled_from(DAYS),
            "valid_until": st.sampled_from(DAYS),
            "expires": st.sampled_from(DAYS),
        }
    )
    return st.lists(one, min_size=1, max_size=len(NAMES)).map(
        lambda rows: [{**row, "name": name} for row, name in zip(rows, NAMES, strict=False)]
    )


def filters() -> st.SearchStrategy[Filters]:
    return st.builds(
        Filters,
        now=st.sampled_from([None, "2026-01-15T00:00:00Z", "2026-02-01T12:00:00Z", "2026-06-01T00:00:00Z"]),
        archived=st.booleans(),
        records=st.booleans(),
        pending=st.booleans(),
    )


def in_effect_by_sql(rows: list[dict[str, Any]], asked: Filters) -> set[str]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE memories (id INTEGER PRIMARY KEY, name TEXT, status TEXT, superseded_by TEXT, supersedes TEXT,"
        " valid_from TEXT, valid_until TEXT, expires TEXT, channel TEXT, kind TEXT, scope TEXT)"
    )
    for row in rows:
        conn.execute(
            "INSERT INTO memories (name, status, superseded_by, supersedes, valid_from, valid_until, expires)"
            " VALUES (:name, :status, :superseded_by, :supersedes, :valid_from, :valid_until, :expires)",
            row,
        )
    where, params = filter_sql(asked)
    return {name for (name,) in conn.execute(f"SELECT m.name FROM memories m WHERE 1{where}", params)}


def in_effect_by_python(rows: list[dict[str, Any]], asked: Filters) -> set[str]:
    named = {row["supersedes"] for row in rows if row["supersedes"]}
    rules = applying(asked)
    return {
        row["name"]
        for row in rows
        if out_of_effect(row, asked.now or "", named=row["name"] in named, rules=rules) is None
    }


@settings(max_examples=300, deadline=None)
@given(memories(), filters())
def test_sqlite_and_python_agree_on_what_is_in_effect(rows: list[dict[str, Any]], asked: Filters) -> None:
    assert in_effect_by_sql(rows, asked) == in_effect_by_python(rows, asked)


def test_a_default_search_applies_every_rule_and_history_lets_retired_memories_through() -> None:
    default = Filters(now="2026-01-15T00:00:00Z", archived=False, records=False, pending=False)
    assert applying(default) == RULES
    history = Filters(now=None, archived=True, records=True, pending=True)
    assert applying(history) == ()


def test_out_of_effect_names_the_first_rule_that_holds() -> None:
    at = "2026-01-15T00:00:00Z"
    assert out_of_effect({"name": "a", "status": "active"}, at) is None
    assert out_of_effect({"name": "a", "status": "obsolete", "superseded_by": "b"}, at) == "superseded"
    assert out_of_effect({"name": "a", "status": "archived", "valid_until": "2026-01-01"}, at) == "archived"
    assert out_of_effect({"name": "a", "valid_until": "2026-01-15T00:00:00Z"}, at) == "expired"
    assert out_of_effect({"name": "a", "valid_from": "2026-02-01"}, at) == "not_yet_valid"
    assert out_of_effect({"name": "a"}, at, named=True) == "superseded"
    assert out_of_effect({"name": "sprints/s1/_sprint"}, at) == "record"
