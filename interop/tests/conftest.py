"""Fixtures for the interop suite: the real peers as subprocesses on free loopback ports.

``interop/setup.sh`` builds the peers' virtual environments under
``interop/.work`` (``INTEROP_WORK``); the fixtures start the servers and stop
them by PID in finalizers, whatever the tests do.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hindsight_peer import Pg0, RealHindsight, missing_reason, start_hindsight
from interop_peers import (
    FORGETFUL_PYTHON,
    TIKTOKEN,
    TIKTOKEN_FILE,
    EmbedServer,
    RealForgetful,
    skip_reason,
    start_forgetful,
)

from memrouter.testing.fake_llm import FakeLLM


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests marked ``long`` first: parallel workers take tests in this order (one at a time, see
    ``interop/run.sh``), so the full corpus sync starts at once rather than last, when one worker would run
    it alone while the others are done."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: otherwise in collection order


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep caches and configuration out of the real home; no MEMROUTER_* from outside."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in list(os.environ):
        if name.startswith("MEMROUTER_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def forgetful_available() -> None:
    reason = skip_reason("forgetful", FORGETFUL_PYTHON)
    if reason is None and not TIKTOKEN_FILE.exists():
        reason = f"forgetful SKIPPED: the tiktoken file is missing under {TIKTOKEN}; run interop/setup.sh"
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def embed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbedServer]:
    """One ``memrouter embed-serve`` for the session."""
    server = EmbedServer(tmp_path_factory.mktemp("embed-serve"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def real_forgetful(
    forgetful_available: None, embed_server: EmbedServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealForgetful]:
    """The real Forgetful shared by the session (tests tell their data apart by unique names)."""
    server = start_forgetful(tmp_path_factory.mktemp("forgetful"), embed_server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_forgetful(forgetful_available: None, embed_server: EmbedServer, tmp_path: Path) -> Iterator[RealForgetful]:
    """A real Forgetful of the test's own (for faults: kill, restart)."""
    server = start_forgetful(tmp_path / "forgetful", embed_server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def hindsight_available() -> None:
    """The Hindsight server must be there: a missing one fails the tests that need it (never a skip)."""
    reason = missing_reason()
    if reason:
        pytest.fail(reason)


@pytest.fixture(scope="session")
def hindsight_postgres(hindsight_available: None) -> Iterator[Pg0]:
    """One PostgreSQL (pg0) for the session's Hindsight servers, a database each."""
    server = Pg0()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeLLM]:
    """The session's deterministic LLM (OpenAI chat API) for Hindsight's retain."""
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="session")
def real_hindsight(
    hindsight_postgres: Pg0, embed_server: EmbedServer, fake_llm: FakeLLM, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealHindsight]:
    """The real Hindsight server shared by the session (tests keep to banks of their own)."""
    server = start_hindsight(
        tmp_path_factory.mktemp("hindsight"), hindsight_postgres.new_database(), embed_server.url, fake_llm.url
    )
    try:
        yield server
    finally:
        server.stop()
