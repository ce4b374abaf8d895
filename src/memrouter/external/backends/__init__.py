"""External memory backends: the protocol, health checks, the registry, and built-ins.

Importing this package is cheap: the MCP SDK is imported only when a backend
that needs it is first used.
"""

from __future__ import annotations

from memrouter.external.backends.base import (
    Backend,
    ExternalHit,
    MemoryDraft,
    RemoteMemory,
    SupportsInventory,
    SupportsLinks,
    backend_status,
    upsert_parts,
)
from memrouter.external.backends.health import HealthCheck, HealthReport
from memrouter.external.backends.registry import backend_names, get_backend, load_backend
from memrouter.external.backends.split import split_content

__all__ = [
    "Backend",
    "ExternalHit",
    "HealthCheck",
    "HealthReport",
    "MemoryDraft",
    "RemoteMemory",
    "SupportsInventory",
    "SupportsLinks",
    "backend_names",
    "backend_status",
    "get_backend",
    "load_backend",
    "split_content",
    "upsert_parts",
]
