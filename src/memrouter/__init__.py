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
    "Config": "memrouter.config",
    "BackendContractError": "memrouter.errors",
    "BackendError": "memrouter.errors",
    "BackendNotInstalled": "memrouter.errors",
    "BackendUnavailable": "memrouter.errors",
    "ConfigError": "memrouter.errors",
    "Conflict": "memrouter.errors",
    "IndexCorrupt": "memrouter.errors",
    "InvalidInput": "memrouter.errors",
    "MemoryRouterError": "memrouter.errors",
    "NotFound": "memrouter.errors",
    "Filters": "memrouter.model",
    "Hit": "memrouter.model",
    "Match": "memrouter.model",
    "Memory": "memrouter.model",
    "Router": "memrouter.router",
}

if TYPE_CHECKING:
    from typing import Any

    from memrouter.config import Config
    from memrouter.errors import (
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
    from memrouter.model import Filters, Hit, Match, Memory
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
