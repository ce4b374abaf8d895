"""A real PostgreSQL with pgvector for the whole session, a fresh database per test, both stores side by side.

The server comes from ``memrouter.testing.postgres_server``: if it cannot
start, every test here errors with the reason (nothing is skipped).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from postgres.support import assert_no_fallback

from memrouter import Router
from memrouter.testing.postgres_server import PostgresServer, running_postgres

_numbers = itertools.count()
STORES = ("sqlite", "postgres")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


@pytest.fixture
def database_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the session's server."""
    name = f"t{next(_numbers)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    return postgres_server.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which index the router reads: ``sqlite`` (the default) or ``postgres`` (``MEMROUTER_DATABASE_URL``)."""
    if request.param == "postgres":
        monkeypatch.setenv("MEMROUTER_DATABASE_URL", request.getfixturevalue("database_url"))
        monkeypatch.setenv("MEMROUTER_PROJECT", "project")
    return str(request.param)


@pytest.fixture
def router(store: str, memories: Path, tmp_path: Path) -> Iterator[Router]:
    """The shared tests' ``router``, once over each store."""
    with Router.open(root=memories, index_dir=tmp_path / "index") as opened:
        assert (opened.config.index.url is not None) == (store == "postgres")
        yield opened
        assert_no_fallback(opened)
