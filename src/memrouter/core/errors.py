"""The one error tree of memrouter.

Everything the library raises on purpose descends from ``MemoryRouterError``::

    MemoryRouterError
     +-- ConfigError            bad or contradictory configuration          exit 2
     +-- InvalidInput           bad name, query, front matter or argument   exit 2
     |    +-- Refused               the write guard refused the text (a secret,
     |                              a near-duplicate); ``verdict`` says why
     +-- NotFound               no memory (or key) by that name             exit 1
     +-- Conflict               the file changed since it was read          exit 1
     |    +-- VersionConflict       a team variable's version is not the
     |                              expected one (``current_version``)
     +-- NotInstalled           an optional dependency or the model's files
     |                          are missing (``hint`` says what to install)  exit 1
     +-- StorageError           a local database (the index) could not be
     |    |                     used: busy past the wait limit, read-only,
     |    |                     an I/O error                                exit 4
     |    +-- IndexBusy             transient: other processes held the
     |    |                         write lock past the wait limit
     |    +-- IndexCorrupt          the file is damaged or not ours (it is
     |                              moved aside and rebuilt when that is safe)
     +-- BackendError           an external service failed                  exit 3
          +-- BackendUnavailable     transient: down, refusing, timing out
          +-- BackendContractError   permanent: the reply broke the protocol
          +-- BackendNotInstalled    a backend's optional extra is missing
          |                          (also a ``NotInstalled``)
          +-- EndpointError          an embedding or reranking endpoint failed
               +-- EndpointUnavailable   transient: down, refusing, timing out,
               |                         busy (429, 5xx)
               +-- EndpointContractError permanent: a 4xx, or an answer that
                                         breaks the protocol (a vector of the
                                         wrong length)

Dependencies' exceptions are translated at the boundary with ``raise ... from``.
Only the CLI and the MCP server turn these into exit codes or tool errors; see
``exit_code_for``.
"""

from __future__ import annotations

__all__ = [
    "MemoryRouterError",
    "ConfigError",
    "InvalidInput",
    "Refused",
    "NotFound",
    "Conflict",
    "VersionConflict",
    "NotInstalled",
    "StorageError",
    "IndexBusy",
    "IndexCorrupt",
    "BackendError",
    "BackendUnavailable",
    "BackendContractError",
    "BackendNotInstalled",
    "EndpointError",
    "EndpointUnavailable",
    "EndpointContractError",
    "exit_code_for",
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "EXIT_BACKEND",
    "EXIT_STORAGE",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BACKEND = 3
EXIT_STORAGE = 4


class MemoryRouterError(Exception):
    """Base of every error memrouter raises on purpose."""


class ConfigError(MemoryRouterError):
    """The configuration is missing, malformed or contradictory."""


class InvalidInput(MemoryRouterError):
    """An argument (name, query, content, filter) is not acceptable."""


class Refused(InvalidInput):
    """The write guard refused a write (``memrouter.guard``): nothing was written or indexed.

    ``verdict`` (a ``memrouter.guard.Verdict``) holds the reasons; the message
    names each reason's kind and line, never a secret's value.
    """

    def __init__(self, message: str, verdict: object) -> None:
        super().__init__(message)
        self.verdict = verdict


class NotFound(MemoryRouterError):
    """The named memory or key does not exist."""


class Conflict(MemoryRouterError):
    """A write was refused because the stored version changed meanwhile."""


class VersionConflict(Conflict):
    """A compare-and-set was refused: ``current_version`` is what is stored now (0: nothing)."""

    def __init__(self, message: str, current_version: int) -> None:
        super().__init__(message)
        self.current_version = current_version


class NotInstalled(MemoryRouterError):
    """An optional dependency (or the embedding model's files) is not installed.

    ``hint`` says what to install.
    """

    def __init__(self, component: str, hint: str) -> None:
        super().__init__(f"{component!r} is not installed: {hint}")
        self.component = component
        self.hint = hint


class StorageError(MemoryRouterError):
    """A local database memrouter keeps (the index) could not be read or written."""


class IndexBusy(StorageError):
    """Other processes held the index's write lock past the wait limit; retrying may work."""


class IndexCorrupt(StorageError):
    """The index file is damaged or was written by something else."""


class BackendError(MemoryRouterError):
    """An external memory service failed."""


class BackendUnavailable(BackendError):
    """The service cannot be reached right now; retrying later may work."""


class BackendContractError(BackendError):
    """The service answered, but not as its protocol says; retrying will not help."""


class BackendNotInstalled(BackendError, NotInstalled):
    """The backend needs an optional dependency that is not installed."""

    def __init__(self, backend: str, hint: str) -> None:
        NotInstalled.__init__(self, backend, hint)
        self.args = (f"backend {backend!r} is not installed: {hint}",)
        self.backend = backend


class EndpointError(BackendError):
    """A model served over HTTP (``[embed] url``, ``[rerank] url``) failed; search goes on without it."""


class EndpointUnavailable(EndpointError):
    """The endpoint cannot be reached or is busy right now; retrying later may work."""


class EndpointContractError(EndpointError):
    """The endpoint refused the request or answered outside its protocol; retrying will not help."""


def exit_code_for(error: BaseException) -> int:
    """Map an error to the CLI exit code contract.

    0 ok, 1 the operation failed, 2 bad usage or input, 3 an external
    backend or protocol error, 4 the local index could not be used.
    """
    if isinstance(error, (InvalidInput, ConfigError)):
        return EXIT_USAGE
    if isinstance(error, BackendError):
        return EXIT_BACKEND
    if isinstance(error, StorageError):
        return EXIT_STORAGE
    return EXIT_FAILED
