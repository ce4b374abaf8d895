"""HealthCheck: real TCP probes on loopback, caching checked with an injected clock."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator

import pytest

from memrouter.core.errors import ConfigError
from memrouter.external.backends.health import HealthCheck, host_port
from memrouter.testing.servers import free_port, hanging_listener


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock
    sock.close()


def test_listening_port_is_up(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    check = HealthCheck.for_url(f"http://127.0.0.1:{port}/mcp")
    assert check.check() is True
    report = check.report()
    assert report.ok is True and report.error is None and report.target == f"127.0.0.1:{port}"


def test_nothing_listening_is_down_with_the_reason() -> None:
    check = HealthCheck.for_url(f"http://127.0.0.1:{free_port()}/mcp")
    assert check.check() is False
    assert check.last_error
    assert check.report().ok is False


def test_answer_is_cached_until_the_ttl_passes(listener: socket.socket) -> None:
    clock = FakeClock()
    port = listener.getsockname()[1]
    check = HealthCheck.for_url(f"http://127.0.0.1:{port}/", ttl=30.0, clock=clock)
    assert check.check() is True
    listener.close()
    clock.now += 29.0
    assert check.check() is True  # cached
    assert check.probes == 1
    assert check.report().age_s == pytest.approx(29.0)
    clock.now += 2.0
    assert check.check() is False  # expired: probed again
    assert check.probes == 2


def test_failure_is_cached_too_and_force_bypasses() -> None:
    clock = FakeClock()
    check = HealthCheck.for_url(f"http://127.0.0.1:{free_port()}/", clock=clock)
    assert check.check() is False
    for _ in range(5):
        assert check.check() is False
    assert check.probes == 1
    assert check.check(force=True) is False
    assert check.probes == 2


def test_recorded_outcomes_replace_the_cache(listener: socket.socket) -> None:
    clock = FakeClock()
    port = listener.getsockname()[1]
    check = HealthCheck.for_url(f"http://127.0.0.1:{port}/", clock=clock)
    assert check.check() is True
    clock.now += 5
    check.record_failure("call timed out")
    assert check.check() is False
    assert check.report().error == "call timed out"
    assert check.report().age_s == 0.0
    check.record_success()
    assert check.check() is True
    assert check.probes == 1


def test_connect_to_a_port_that_never_answers_still_counts_as_up() -> None:
    # TCP health only says the port accepts; the call timeout catches a hung server.
    with hanging_listener() as port:
        assert HealthCheck.for_url(f"http://127.0.0.1:{port}/").check() is True


def test_nothing_checked_yet() -> None:
    report = HealthCheck.for_url("http://127.0.0.1:9/").report()
    assert report.ok is None and report.age_s is None
    assert report.to_dict()["ttl_s"] == 30.0


def test_command_probe() -> None:
    assert HealthCheck.for_command(sys.executable).check() is True
    assert HealthCheck.for_command("python3").check() is True
    missing = HealthCheck.for_command("memrouter-no-such-command")
    assert missing.check() is False
    assert "not found" in (missing.last_error or "")
    assert HealthCheck.for_command("/nonexistent/bin/server").check() is False


def test_host_port() -> None:
    assert host_port("http://localhost:8020/mcp") == ("localhost", 8020)
    assert host_port("http://example.test/mcp") == ("example.test", 80)
    assert host_port("https://example.test/mcp") == ("example.test", 443)
    with pytest.raises(ConfigError):
        host_port("ftp://example.test")
    with pytest.raises(ConfigError):
        host_port("http://example.test:notaport/")
