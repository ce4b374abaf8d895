"""The backend registry: names to import paths, imported only when asked for.

Backends are found through the ``memrouter.backends`` entry-point group, the
way third-party plugins register. memrouter's own backends are declared as
entry points of that group too, in ``BUILTIN_BACKENDS``, so they resolve
through exactly the same path even when the installed package metadata is
stale; an installed plugin may not take a built-in's name.

An entry point names a class (or any callable) that builds a backend from a
configuration mapping: ``Cls.from_config(config)`` when it has that method,
else ``Cls(config)``. Nothing is imported until a backend is requested; an
import that fails becomes ``BackendNotInstalled`` with the install hint.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, cast

from memrouter.backends.base import Backend
from memrouter.errors import BackendNotInstalled, ConfigError

__all__ = [
    "ENTRY_POINT_GROUP",
    "BUILTIN_BACKENDS",
    "INSTALL_HINTS",
    "backend_names",
    "get_backend",
    "load_backend",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "memrouter.backends"

BUILTIN_BACKENDS: dict[str, str] = {
    "forgetful": "memrouter.backends.forgetful:ForgetfulBackend",
}

INSTALL_HINTS: dict[str, str] = {
    "forgetful": "pip install 'mcp>=2.3,<3' (the MCP client SDK)",
}


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {
        name: EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)
        for name, value in BUILTIN_BACKENDS.items()
    }
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in BUILTIN_BACKENDS:
            if ep.value != BUILTIN_BACKENDS[ep.name]:
                logger.warning("ignoring plugin %r: %r is a built-in backend name", ep.value, ep.name)
            continue
        found.setdefault(ep.name, ep)
    return found


def backend_names() -> list[str]:
    """Every backend name that can be requested (built-ins and installed plugins), sorted."""
    return sorted(_entry_points())


def load_backend(name: str) -> Any:
    """Import and return the factory registered under ``name`` (a class, usually).

    Raises ``ConfigError`` for an unknown name and ``BackendNotInstalled``
    when its module (or a dependency of it) cannot be imported.
    """
    eps = _entry_points()
    ep = eps.get(name)
    if ep is None:
        known = ", ".join(sorted(eps)) or "none"
        raise ConfigError(f"unknown backend {name!r} (known: {known})")
    try:
        return ep.load()
    except ImportError as exc:
        hint = INSTALL_HINTS.get(name, f"install the package that provides {ep.value!r}")
        raise BackendNotInstalled(name, f"{hint}; import failed: {exc}") from exc
    except AttributeError as exc:
        raise BackendNotInstalled(name, f"{ep.value!r} does not exist: {exc}") from exc


def get_backend(name: str, config: Mapping[str, Any] | None = None) -> Backend:
    """Build the backend ``name`` from ``config`` (its section of the configuration).

    Building never connects: a backend contacts its service on first use.
    """
    factory = load_backend(name)
    settings: Mapping[str, Any] = config if config is not None else {}
    from_config = getattr(factory, "from_config", None)
    backend = from_config(settings) if callable(from_config) else factory(settings)
    return cast(Backend, backend)
