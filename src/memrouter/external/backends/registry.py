"""The backend registry: names to import paths, imported only when asked for.

Backends are found through the ``memrouter.external.backends`` entry-point group, the
way third-party plugins register; memrouter's own are built-ins of the same
registry (``memrouter.core.registry``, shared with the embedders), and a plugin
may not take a built-in's name.

An entry point names a class (or any callable) that builds a backend from a
configuration mapping: ``Cls.from_config(config)`` when it has that method,
else ``Cls(config)``. Nothing is imported until a backend is requested. An
unknown name is a ``ConfigError``; an import that fails becomes
``BackendNotInstalled`` (a ``NotInstalled``) with the install hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from memrouter.core.errors import BackendNotInstalled
from memrouter.core.registry import Builtin, Registry
from memrouter.external.backends.base import Backend

__all__ = [
    "ENTRY_POINT_GROUP",
    "BACKENDS",
    "backend_names",
    "get_backend",
    "load_backend",
]

ENTRY_POINT_GROUP = "memrouter.backends"  # the plugins' group: unchanged since the first release

BACKENDS = Registry(
    "backend",
    ENTRY_POINT_GROUP,
    {
        "forgetful": Builtin(
            "memrouter.external.backends.forgetful:ForgetfulBackend", "pip install 'mcp>=2.3,<3' (the MCP client SDK)"
        ),
        "graphiti": Builtin(
            "memrouter.external.backends.graphiti:GraphitiBackend", "pip install 'memrouter[graphiti]' (Python >= 3.12)"
        ),
        "pixeltable": Builtin(
            "memrouter.external.backends.pixeltable:PixeltableBackend", "pip install 'memrouter[pixeltable]'"
        ),
        "hindsight": Builtin(
            "memrouter.external.backends.hindsight:HindsightBackend",
            "nothing to install for memrouter (the server: pip install hindsight-api)",
        ),
    },
    BackendNotInstalled,
)


def backend_names() -> list[str]:
    """Every backend name that can be requested (built-ins and installed plugins), sorted."""
    return sorted(BACKENDS.names())


def load_backend(name: str) -> Any:
    """Import and return the factory registered under ``name`` (a class, usually).

    Raises ``ConfigError`` for an unknown name and ``BackendNotInstalled``
    when its module (or a dependency of it) cannot be imported.
    """
    return BACKENDS.load(name)


def get_backend(name: str, config: Mapping[str, Any] | None = None) -> Backend:
    """Build the backend ``name`` from ``config`` (its section of the configuration).

    Building never connects: a backend contacts its service on first use.
    """
    factory = load_backend(name)
    settings: Mapping[str, Any] = config if config is not None else {}
    from_config = getattr(factory, "from_config", None)
    backend = from_config(settings) if callable(from_config) else factory(settings)
    return cast(Backend, backend)
