"""Both stores side by side: the ``store`` fixture runs a test over SQLite, then over PostgreSQL.

The server and a fresh database per test come from ``tests/conftest.py``
(``postgres_server``, ``database_url``): if the server cannot start, every
test here errors with the reason (nothing is skipped).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres.support import assert_no_fallback

from memrouter import Router

_numbers = itertools.count()
STORES = ("sqlite", "postgres")


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
