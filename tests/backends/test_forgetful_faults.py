"""Faults at the boundary: each becomes the right error class, and the backend recovers.

One fake server (with run-time fault control) serves the whole module; each
test switches the fault it needs and heals the server afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memrouter.core.errors import BackendContractError, BackendUnavailable
from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.backend_conformance import unique_word
from memrouter.testing.servers import FakeServer, free_port, hanging_listener, start_http, stdio_command

TIMEOUT = 1.5


@pytest.fixture
def faulty(fake_http: FakeServer) -> Iterator[FakeServer]:
    """The module's server, healed after each test."""
    yield fake_http
    fake_http.set_fault("none")


@pytest.fixture
def backend(fake_http: FakeServer) -> Iterator[ForgetfulBackend]:
    backend = ForgetfulBackend(ForgetfulConfig(url=fake_http.url, timeout=TIMEOUT))
    yield backend
    backend.close()


def _works(backend: ForgetfulBackend) -> None:
    word = unique_word()
    remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} after the fault"))
    assert backend.search(word, 1)[0].remote_id == remote_id


def test_nothing_listening_is_unavailable() -> None:
    config = ForgetfulConfig(url=f"http://127.0.0.1:{free_port()}/mcp", timeout=TIMEOUT, connect_timeout=TIMEOUT)
    with ForgetfulBackend(config) as backend:
        assert backend.available() is False
        with pytest.raises(BackendUnavailable):
            backend.search("query", 3)
        with pytest.raises(BackendUnavailable):
            backend.upsert(MemoryDraft(title="t", content="c"))


def test_port_that_never_answers_times_out_as_unavailable() -> None:
    with hanging_listener() as port:
        config = ForgetfulConfig(url=f"http://127.0.0.1:{port}/mcp", timeout=0.5, connect_timeout=0.5)
        with ForgetfulBackend(config) as backend:
            assert backend.available() is True  # the port accepts...
            with pytest.raises(BackendUnavailable, match="no answer within 0.5 s"):
                backend.search("query", 3)  # ...but nothing answers
            assert backend.available() is False  # the failure is now cached


def test_http_500_is_unavailable(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    _works(backend)
    faulty.set_fault("http500")
    with pytest.raises(BackendUnavailable, match="error response"):
        backend.search("query", 3)
    faulty.set_fault("none")
    _works(backend)


def test_garbage_json_is_a_contract_error(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    faulty.set_fault("garbage")
    with pytest.raises(BackendContractError, match="(?i)parse"):
        backend.search("query", 3)
    faulty.set_fault("none")
    _works(backend)


def test_protocol_violation_is_a_contract_error(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    faulty.set_fault("protocol-error")
    with pytest.raises(BackendContractError):
        backend.search("query", 3)
    faulty.set_fault("none")
    _works(backend)


def test_reply_breaking_forgetfuls_contract(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    faulty.set_fault("bad-shape")
    with pytest.raises(BackendContractError, match="primary_memories"):
        backend.search("query", 3)
    with pytest.raises(BackendContractError, match=r"create_memory reply .*schema: id: .*integer \(got None\)"):
        backend.upsert(MemoryDraft(title="t", content="c"))
    with pytest.raises(BackendContractError):
        backend.get("1")
    with pytest.raises(BackendContractError):
        backend.mark_obsolete("1", "reason")


def test_reply_without_ids_is_a_contract_error(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    word = unique_word()
    remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} without ids"))
    faulty.set_fault("missing-id")
    with pytest.raises(BackendContractError, match=r"query_memory reply .*primary_memories\.0\.id: Field required"):
        backend.search(word, 3)
    with pytest.raises(BackendContractError, match=r"create_memory reply .*: id: Field required"):
        backend.upsert(MemoryDraft(title=word, content=f"{word} again"))
    with pytest.raises(BackendContractError, match=r"get_memory reply .*: id: Field required"):
        backend.get(remote_id)
    faulty.set_fault("none")
    _works(backend)


def test_reply_with_wrong_types_is_a_contract_error(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    word = unique_word()
    remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} with wrong types"))
    faulty.set_fault("wrong-types")
    with pytest.raises(BackendContractError, match=r"primary_memories\.0\.id: .*integer \(got '\d+'\)"):
        backend.search(word, 3)
    with pytest.raises(BackendContractError, match=r"create_memory reply .*: id: "):
        backend.upsert(MemoryDraft(title=word, content=f"{word} again"))
    with pytest.raises(BackendContractError, match=r"get_memory reply .*title: .*string \(got \d+\)"):
        backend.get(remote_id)
    with pytest.raises(BackendContractError, match=r"mark_memory_obsolete reply .*success: .*boolean \(got 'true'\)"):
        backend.mark_obsolete(remote_id, "reason")
    faulty.set_fault("none")
    assert backend.get(remote_id).is_obsolete is True  # the server did it; only the reply was broken
    _works(backend)


def test_reply_that_is_not_json_is_a_contract_error(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    faulty.set_fault("not-json")
    with pytest.raises(BackendContractError, match="returned no JSON object"):
        backend.search("query", 3)
    with pytest.raises(BackendContractError, match="returned no JSON object"):
        backend.upsert(MemoryDraft(title="t", content="c"))
    faulty.set_fault("none")
    _works(backend)


def test_slow_server_times_out_then_recovers(faulty: FakeServer, backend: ForgetfulBackend) -> None:
    _works(backend)
    faulty.set_fault("slow", slow_seconds=30.0)
    with pytest.raises(BackendUnavailable, match="no answer within"):
        backend.search("query", 3)
    faulty.set_fault("none")
    _works(backend)
    assert backend.connects == 2  # the timed-out session was dropped and a new one opened


def test_server_killed_mid_use_then_restarted() -> None:
    server = start_http()
    port = server.port
    try:
        with ForgetfulBackend(ForgetfulConfig(url=server.url, timeout=TIMEOUT)) as backend:
            _works(backend)
            server.kill()
            with pytest.raises(BackendUnavailable):
                backend.search("query", 3)
            assert backend.available() is False
            server = start_http(port=port)
            assert backend.available() is False  # still the cached failure...
            assert backend.available(force=True) is True  # ...until checked again
            _works(backend)
    finally:
        server.stop()


def test_slow_stdio_server_times_out() -> None:
    config = ForgetfulConfig(command=tuple(stdio_command(fail_mode="slow")), timeout=3.0)
    with ForgetfulBackend(config) as backend:
        with pytest.raises(BackendUnavailable, match="no answer within 3 s"):
            backend.search("query", 3)
