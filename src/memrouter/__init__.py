"""memrouter: one local-first memory layer for AI coding agents.

The canonical memories are markdown files (``.serena/memories/``); memrouter
indexes them for fast offline search and routes questions to external memory
services when they are configured. Start with ``Router.open()``.

The public names load on first use, so ``import memrouter`` (and the
``memrouter`` command) start fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)

# The one place the version is written: pyproject.toml reads it from here (setuptools dynamic version),
# so `memrouter --version` and the MCP server need no package metadata lookup.
__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "Config": "memrouter.config.settings",
    "BackendContractError": "memrouter.core.errors",
    "BackendError": "memrouter.core.errors",
    "BackendNotInstalled": "memrouter.core.errors",
    "BackendUnavailable": "memrouter.core.errors",
    "ConfigError": "memrouter.core.errors",
    "Conflict": "memrouter.core.errors",
    "IndexCorrupt": "memrouter.core.errors",
    "InvalidInput": "memrouter.core.errors",
    "MemoryRouterError": "memrouter.core.errors",
    "NotFound": "memrouter.core.errors",
    "Filters": "memrouter.core.model",
    "Hit": "memrouter.core.model",
    "Match": "memrouter.core.model",
    "Memory": "memrouter.core.model",
    "Router": "memrouter.router",
}

if TYPE_CHECKING:
    from typing import Any

    from memrouter.config.settings import Config
    from memrouter.core.errors import (
        BackendContractError,
        BackendError,
        BackendNotInstalled,
        BackendUnavailable,
        ConfigError,
        Conflict,
        IndexCorrupt,
        InvalidInput,
        MemoryRouterError,
        NotFound,
    )
    from memrouter.core.model import Filters, Hit, Match, Memory
    from memrouter.router import Router


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memrouter' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "BackendContractError",
    "BackendError",
    "BackendNotInstalled",
    "BackendUnavailable",
    "Config",
    "ConfigError",
    "Conflict",
    "Filters",
    "Hit",
    "IndexCorrupt",
    "InvalidInput",
    "Match",
    "Memory",
    "MemoryRouterError",
    "NotFound",
    "Router",
    "__version__",
]
