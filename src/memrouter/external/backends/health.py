"""Cached reachability checks for external backends.

A ``HealthCheck`` answers "is the service there?" cheaply: for a network
service, a TCP connect to its host and port with a 500 ms timeout; for a
service started as a stdio command, whether that command can be found on
``PATH`` (it is started, for real, on first use). The answer, a failure
included, is cached for 30 s so a router whose augmenter is down pays the
timeout at most once per window; ``force=True`` checks again now. Callers
that learn something first-hand (a call failed, a call succeeded) record it
with ``record_failure``/``record_success`` so the cache reflects it at once.

The clock is injectable (any ``() -> float`` in seconds, monotonic), so tests
check the caching without sleeping.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from memrouter.core.errors import ConfigError

__all__ = [
    "DEFAULT_TTL_S",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "HealthCheck",
    "HealthReport",
    "command_probe",
    "host_port",
    "tcp_probe",
]

DEFAULT_TTL_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 0.5

Probe = Callable[[], None]
"""A check that returns on success and raises ``OSError`` (with the reason) on failure."""


@dataclass(frozen=True, slots=True)
class HealthReport:
    """What ``status`` shows about one backend's reachability.

    ``ok`` is ``None`` and ``age_s`` is ``None`` when nothing was checked yet.
    """

    target: str
    ok: bool | None
    age_s: float | None
    error: str | None
    ttl_s: float

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view."""
        return {
            "target": self.target,
            "ok": self.ok,
            "age_s": self.age_s,
            "error": self.error,
            "ttl_s": self.ttl_s,
        }


def tcp_probe(host: str, port: int, timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> Probe:
    """A probe that opens (and closes) a TCP connection to ``host:port``."""

    def probe() -> None:
        with socket.create_connection((host, port), timeout=timeout):
            pass

    return probe


def command_probe(command: str, cwd: str | None = None) -> Probe:
    """A probe that the stdio command exists: an executable path or a name found on ``PATH``."""

    def probe() -> None:
        if os.sep in command or (os.altsep and os.altsep in command):
            path = command if os.path.isabs(command) or cwd is None else os.path.join(cwd, command)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise FileNotFoundError(f"command not executable: {command}")
        elif shutil.which(command) is None:
            raise FileNotFoundError(f"command not found on PATH: {command}")

    return probe


def host_port(url: str) -> tuple[str, int]:
    """The host and port a URL points at (the scheme's default port when none is given)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"not an http(s) URL: {url!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"bad port in URL {url!r}") from exc
    return parts.hostname, port if port is not None else (443 if parts.scheme == "https" else 80)


class HealthCheck:
    """A probe whose answer (success or failure) is cached for ``ttl`` seconds.

    Thread-safe: the router may ask from several threads; at most one probe
    runs at a time per check.
    """

    def __init__(
        self,
        probe: Probe,
        target: str,
        *,
        ttl: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe = probe
        self.target = target
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._ok: bool | None = None
        self._checked_at: float | None = None
        self._error: str | None = None
        self.probes = 0
        """How many times the probe really ran (for tests and benchmarks)."""

    @classmethod
    def for_url(
        cls,
        url: str,
        *,
        timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        ttl: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> HealthCheck:
        """A TCP-connect check of the host and port of an http(s) URL."""
        host, port = host_port(url)
        return cls(tcp_probe(host, port, timeout), f"{host}:{port}", ttl=ttl, clock=clock)

    @classmethod
    def for_command(
        cls,
        command: str,
        *,
        cwd: str | None = None,
        ttl: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> HealthCheck:
        """A check that a stdio server's command exists (it is started on first use)."""
        return cls(command_probe(command, cwd), command, ttl=ttl, clock=clock)

    def check(self, force: bool = False) -> bool:
        """Whether the target is reachable: the cached answer while fresh, else probe now."""
        with self._lock:
            now = self._clock()
            if not force and self._checked_at is not None and now - self._checked_at < self.ttl:
                return bool(self._ok)
            self.probes += 1
            try:
                self._probe()
            except OSError as exc:
                self._store(False, _describe(exc))
            else:
                self._store(True, None)
            return bool(self._ok)

    def record_failure(self, error: str) -> None:
        """Remember a failure seen first-hand (a call that could not reach the service)."""
        with self._lock:
            self._store(False, error)

    def record_success(self) -> None:
        """Remember that a call just reached the service."""
        with self._lock:
            self._store(True, None)

    def report(self) -> HealthReport:
        """The cached state for ``status``: answer, its age in seconds, last error."""
        with self._lock:
            age = None if self._checked_at is None else max(0.0, self._clock() - self._checked_at)
            return HealthReport(self.target, self._ok, age, self._error, self.ttl)

    @property
    def last_error(self) -> str | None:
        """The error text of the latest failure still cached, if any."""
        with self._lock:
            return self._error

    def _store(self, ok: bool, error: str | None) -> None:
        self._ok = ok
        self._error = error
        self._checked_at = self._clock()


def _describe(exc: OSError) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out connecting"
    text = exc.strerror or str(exc) or type(exc).__name__
    return text
