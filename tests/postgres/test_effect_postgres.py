"""PostgreSQL renders the in-effect rules as SQLite and ``out_of_effect`` do (``tests/index/test_effect.py``)."""

from __future__ import annotations

from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from index.test_effect import filters, in_effect_by_python, memories

from memrouter.core.model import Filters
from memrouter.index.postgres.filters import filter_sql


def in_effect_by_postgres(conn: psycopg.Connection[Any], rows: list[dict[str, Any]], asked: Filters) -> set[str]:
    conn.execute("DELETE FROM effect_memories")
    for row in rows:
        conn.execute(
            "INSERT INTO effect_memories (name, status, superseded_by, supersedes, valid_from, valid_until, expires)"
            " VALUES (%(name)s, %(status)s, %(superseded_by)s, %(supersedes)s, %(valid_from)s, %(valid_until)s,"
            " %(expires)s)",
            row,
        )
    where, params = filter_sql(asked)
    sql = f"SELECT m.name FROM effect_memories m WHERE true{where}".replace("{memories}", "effect_memories")
    return {name for (name,) in conn.execute(sql, params)}


def test_postgres_and_python_agree_on_what_is_in_effect(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE effect_memories (name text, status text, superseded_by text, supersedes text,"
            " valid_from text, valid_until text, expires text, channel text, kind text, scope text, tags text[])"
        )

        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(memories(), filters())
        def agree(rows: list[dict[str, Any]], asked: Filters) -> None:
            assert in_effect_by_postgres(conn, rows, asked) == in_effect_by_python(rows, asked)

        agree()
