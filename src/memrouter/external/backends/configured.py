"""The external backends a configuration names, built on first use.

Each ``[backends.<name>]`` section of ``memrouter.toml`` (see
``memrouter.config.settings``) holds the router's own keys, ``type`` (default: the
section name), ``enabled``, ``search`` and ``sync`` (each default true), and
the backend's options. A backend that cannot be built (not installed, bad
settings) is left out and its error kept for ``status``; one that fails during
a call is noted the same way and skipped for its health TTL. The Router owns
one :class:`ConfiguredBackends` and composes what they return with the files.
"""

from __future__ import annotations

from _thread import RLock

from memrouter.core.errors import BackendError, ConfigError
from memrouter.core.lazylog import LazyLogger
from memrouter.external.backends.base import backend_status
from memrouter.external.backends.registry import get_backend

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["ConfiguredBackends", "ROUTER_KEYS", "backend_settings"]

log = LazyLogger(__name__)

ROUTER_KEYS = ("type", "enabled", "search", "sync")


def backend_settings(name: str, settings: Mapping[str, Any]) -> tuple[str, dict[str, Any], dict[str, bool]]:
    """A ``[backends.<name>]`` section split into registry name, backend options and router flags.

    Everything that is not one of ``ROUTER_KEYS`` goes to the backend, with
    ``name`` set to the section name when the type differs.
    """
    kind = str(settings.get("type", name))
    options = {key: value for key, value in settings.items() if key not in ROUTER_KEYS}
    if kind != name:
        options.setdefault("name", name)
    flags = {key: bool(settings.get(key, True)) for key in ("enabled", "search", "sync")}
    return kind, options, flags


class ConfiguredBackends:
    """The backends of one configuration, by section name; nothing connects until a backend is used."""

    def __init__(self, sections: Mapping[str, Mapping[str, Any]]) -> None:
        self._sections = sections
        self._built: dict[str, Any] | None = None
        self._lock = RLock()
        # section name -> why it is not in use, or its last failure
        self.errors: dict[str, str] = {}
        # section name -> the error that kept it from being built, raised again by ``get``
        self._build_errors: dict[str, BackendError | ConfigError] = {}

    def built(self) -> dict[str, Any]:
        """Every enabled backend that could be built, by name (built on the first call)."""
        with self._lock:
            if self._built is None:
                built: dict[str, Any] = {}
                self._build_errors = {}
                for name, settings in self._sections.items():
                    kind, options, flags = backend_settings(name, settings)
                    if not flags["enabled"]:
                        continue
                    try:
                        built[name] = get_backend(kind, options)
                    except (BackendError, ConfigError) as exc:
                        log.warning("backend %s not used: %s", name, exc)
                        self.errors[name] = str(exc)
                        self._build_errors[name] = exc
                self._built = built
            return self._built

    def get(self, name: str) -> Any:
        """The backend ``name``; ``ConfigError`` (or the reason it could not be built) otherwise."""
        found = self.built().get(name)
        if found is not None:
            return found
        failure = self._build_errors.get(name)
        if failure is not None:
            raise failure  # the registry's own error: ConfigError, or BackendNotInstalled with its hint
        known = ", ".join(sorted(self._sections)) or "none configured"
        raise ConfigError(f"no backend {name!r} (configured: {known}); add [backends.{name}] to memrouter.toml")

    def flagged(self, flag: str) -> dict[str, Any]:
        """The built backends whose ``flag`` (``search`` or ``sync``) is on."""
        return {
            name: backend for name, backend in self.built().items()
            if backend_settings(name, self._sections.get(name, {}))[2][flag]
        }  # fmt: skip

    def for_sync(self, name: str | None) -> list[Any]:
        """The backend ``name``, or every backend that syncs; ``ConfigError`` when there is none."""
        if name is not None:
            return [self.get(name)]
        chosen = list(self.flagged("sync").values())
        if not chosen:
            raise ConfigError(
                'no external backend configured: add [backends.forgetful] url = "http://localhost:8020/mcp" '
                "to memrouter.toml, or set MEMROUTER_FORGETFUL_URL"
            )
        return chosen

    def note_error(self, backend: Any, exc: Exception) -> None:
        """A backend failed during a call: log it, show it in status, skip it for the health TTL."""
        log.warning("backend %s failed: %s", backend.name, exc)
        self.errors[backend.name] = str(exc)
        backend.health.record_failure(str(exc))

    def status(self, synced: Callable[[str], int]) -> list[dict[str, Any]]:
        """Each configured backend: name, availability, endpoint, health-cache age, last error, sync count.

        ``synced(name)`` counts the memories synced to that backend.
        """
        if not self._sections:
            return []

        result: list[dict[str, Any]] = []
        built = self.built()
        for name in sorted(self._sections):
            backend = built.get(name)
            if backend is None:
                reason = self.errors.get(name, "disabled")
                result.append({"name": name, "available": False, "endpoint": None, "age_s": None,
                               "error": reason, "last_error": reason, "synced": 0})  # fmt: skip
                continue
            available = backend.available()
            entry = backend_status(backend)
            entry["available"] = available
            entry["last_error"] = entry["error"] or self.errors.get(name)
            entry["synced"] = synced(name)
            result.append(entry)
        return result

    def close(self) -> None:
        """Close every backend built so far; a later use builds them again."""
        with self._lock:
            for backend in (self._built or {}).values():
                backend.close()
            self._built = None
