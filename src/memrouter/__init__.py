"""memrouter: one local-first memory layer for AI coding agents.

The canonical memories are markdown files (``.serena/memories/``); memrouter
indexes them for fast offline search and routes questions to external memory
services when they are configured. Start with ``Router.open()``.
"""

from __future__ import annotations

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

__version__ = "0.1.0"

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
