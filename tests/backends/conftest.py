"""Fixtures for backend tests: the fake Forgetful as a real subprocess, one per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.servers import FakeServer, serve_http, stdio_command


@pytest.fixture(scope="module")
def fake_http() -> Iterator[FakeServer]:
    """A fake Forgetful over streamable HTTP, shared by one test module."""
    with serve_http() as server:
        yield server


@pytest.fixture(scope="module")
def http_backend(fake_http: FakeServer) -> Iterator[ForgetfulBackend]:
    """A backend connected to ``fake_http`` (one MCP session for the module)."""
    backend = ForgetfulBackend(ForgetfulConfig(url=fake_http.url, timeout=10.0))
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def stdio_backend() -> Iterator[ForgetfulBackend]:
    """A backend that starts the fake Forgetful over stdio (one process for the module)."""
    backend = ForgetfulBackend(ForgetfulConfig(command=tuple(stdio_command()), timeout=15.0))
    yield backend
    backend.close()
