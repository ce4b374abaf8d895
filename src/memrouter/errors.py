"""The one error tree of memrouter.

Everything the library raises on purpose descends from ``MemoryRouterError``::

    MemoryRouterError
     +-- ConfigError            bad or contradictory configuration
     +-- InvalidInput           bad name, query, front matter or argument
     +-- NotFound               no memory (or key) by that name
     +-- Conflict               the file changed since it was read (expected hash)
     +-- IndexCorrupt           the index file is not ours or is damaged (rebuilt)
     +-- BackendError           an external service failed
          +-- BackendUnavailable     transient: down, refusing, timing out
          +-- BackendContractError   permanent: the reply broke the protocol
          +-- BackendNotInstalled    an optional extra is missing (with a hint)

Dependencies' exceptions are translated at the boundary with ``raise ... from``.
Only the CLI and the MCP server turn these into exit codes or tool errors; see
``exit_code_for``.
"""

from __future__ import annotations

__all__ = [
    "MemoryRouterError",
    "ConfigError",
    "InvalidInput",
    "NotFound",
    "Conflict",
    "IndexCorrupt",
    "BackendError",
    "BackendUnavailable",
    "BackendContractError",
    "BackendNotInstalled",
    "exit_code_for",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BACKEND = 3


class MemoryRouterError(Exception):
    """Base of every error memrouter raises on purpose."""


class ConfigError(MemoryRouterError):
    """The configuration is missing, malformed or contradictory."""


class InvalidInput(MemoryRouterError):
    """An argument (name, query, content, filter) is not acceptable."""


class NotFound(MemoryRouterError):
    """The named memory or key does not exist."""


class Conflict(MemoryRouterError):
    """A write was refused because the stored version changed meanwhile."""


class IndexCorrupt(MemoryRouterError):
    """The index file is damaged or was written by something else."""


class BackendError(MemoryRouterError):
    """An external memory service failed."""


class BackendUnavailable(BackendError):
    """The service cannot be reached right now; retrying later may work."""


class BackendContractError(BackendError):
    """The service answered, but not as its protocol says; retrying will not help."""


class BackendNotInstalled(BackendError):
    """The backend needs an optional dependency that is not installed."""

    def __init__(self, backend: str, hint: str) -> None:
        super().__init__(f"backend {backend!r} is not installed: {hint}")
        self.backend = backend
        self.hint = hint


def exit_code_for(error: BaseException) -> int:
    """Map an error to the CLI exit code contract (0 ok, 1 failed, 2 usage, 3 backend)."""
    if isinstance(error, (InvalidInput, ConfigError)):
        return EXIT_USAGE
    if isinstance(error, BackendError):
        return EXIT_BACKEND
    return EXIT_FAILED
