"""ForgetfulBackend starting the fake Forgetful over stdio (a real subprocess)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from memrouter.core.errors import BackendUnavailable
from memrouter.external.backends.base import Backend, MemoryDraft
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.backend_conformance import BackendConformance, unique_word
from memrouter.testing.servers import stdio_command


class TestForgetfulOverStdio(BackendConformance):
    """The shared conformance suite."""

    @pytest.fixture
    def backend(self, stdio_backend: ForgetfulBackend) -> Backend:
        return stdio_backend


def test_endpoint_is_the_command_line(stdio_backend: ForgetfulBackend) -> None:
    assert stdio_backend.endpoint.startswith(sys.executable)
    assert "--transport stdio" in stdio_backend.endpoint


def test_missing_command_is_unavailable() -> None:
    config = ForgetfulConfig(command=("memrouter-no-such-server",), timeout=5.0)
    with ForgetfulBackend(config) as backend:
        assert backend.available() is False
        with pytest.raises(BackendUnavailable):
            backend.search("anything", 3)


def test_server_killed_mid_use_then_restarted_on_next_call(tmp_path: object) -> None:
    db = f"kept-{unique_word()}.sqlite"  # relative: it lands in cwd, which shows cwd was applied
    config = ForgetfulConfig(
        command=tuple(stdio_command(db=db)), env={"MEMROUTER_TEST": "1"}, cwd=str(tmp_path), timeout=10.0
    )
    with ForgetfulBackend(config) as backend:
        word = unique_word()
        remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} survives"))
        assert os.path.exists(f"{tmp_path}/{db}")
        os.kill(_server_pid(db), signal.SIGKILL)
        with pytest.raises(BackendUnavailable):
            backend.search(word, 3)
        assert backend.available() is False  # the failure was recorded in the health cache
        # The next call starts a fresh process, which finds the data in its database file.
        assert backend.get(remote_id).content == f"{word} survives"
        assert backend.connects == 2
        assert backend.available() is True


def _server_pid(db: str) -> int:
    """The pid of the stdio server started with ``--db db`` (read from /proc)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                args = handle.read().split(b"\0")
        except OSError:
            continue
        if b"memrouter.testing.forgetful_server" in args and db.encode() in args:
            return int(entry)
    raise AssertionError("stdio server process not found")
