"""Fixtures for sync tests: real git projects in temp folders and the fake Forgetful as a subprocess."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.servers import FakeServer, serve_http


@pytest.fixture(scope="module")
def fake_http() -> Iterator[FakeServer]:
    """A fake Forgetful over streamable HTTP, shared by one test module."""
    with serve_http() as server:
        yield server


@pytest.fixture(scope="module")
def inspector(fake_http: FakeServer) -> Iterator[ForgetfulBackend]:
    """A second client of the module's server, for looking at what sync wrote."""
    backend = ForgetfulBackend(ForgetfulConfig(url=fake_http.url, timeout=10.0))
    yield backend
    backend.close()
