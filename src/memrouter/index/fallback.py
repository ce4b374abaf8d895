"""A reader that answers from the local index while its primary store (PostgreSQL) is down.

Every call goes to the primary; when it raises ``BackendUnavailable`` the
same call is answered by the fallback (the local index, which always follows
the files), with a warning in ``status`` and the log, and for the next
``retry_after`` seconds the primary is not tried again (a try against a
server that is down costs up to its connect timeout; the wait must not grow
with every search). Once it answers again, its copy catches up in the next
freshness step (``sync``).
"""

from __future__ import annotations

import time

from memrouter.core.errors import BackendUnavailable
from memrouter.core.lazylog import LazyLogger

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from memrouter.core.model import Filters, MemorySummary
    from memrouter.index.fusion import Ranked
    from memrouter.index.graph.view import GraphView
    from memrouter.index.protocol import IndexReader

    T = TypeVar("T")

__all__ = ["RETRY_AFTER", "FallbackReader"]

log = LazyLogger(__name__)

# After the primary failed, reads use the fallback for this many seconds before trying it again.
RETRY_AFTER = 30.0
WAITING = "PostgreSQL failed moments ago"


class FallbackReader:
    """``primary`` while it answers, else ``fallback`` (see the module docstring).

    ``primary`` may offer ``reset`` (drop its connections after a failure), ``sync`` (bring its copy in step)
    and ``describe`` (what to show in ``status`` when it is down). ``warnings``: the list ``status`` shows.
    """

    def __init__(
        self, primary: IndexReader, fallback: IndexReader, warnings: list[str], *, retry_after: float | None = None
    ) -> None:
        """``retry_after``: seconds before the primary is tried again after a failure (``RETRY_AFTER``)."""
        self.primary = primary
        self.fallback = fallback
        self.warnings = warnings
        self.retry_after = retry_after
        self._retry_at = 0.0

    @property
    def down(self) -> bool:
        """Whether the primary failed less than ``retry_after`` seconds ago."""
        return time.monotonic() < self._retry_at

    def _fell_back(self, exc: BackendUnavailable) -> None:
        message = f"PostgreSQL index unavailable, searching the local index: {exc}"
        log.warning("%s", message)
        if message not in self.warnings:
            self.warnings.append(message)
        self._retry_at = time.monotonic() + (RETRY_AFTER if self.retry_after is None else self.retry_after)
        reset = getattr(self.primary, "reset", None)
        if reset is not None:
            reset()

    def _either(self, primary: Callable[[], T], fallback: Callable[[], T]) -> T:
        if self.down:
            return fallback()
        try:
            return primary()
        except BackendUnavailable as exc:
            self._fell_back(exc)
            return fallback()

    def sync(self) -> None:
        """The primary's copy brought in step; nothing while it is down (it catches up when back)."""
        sync = getattr(self.primary, "sync", None)
        if sync is not None:
            self._either(sync, lambda: None)

    def lexical(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        return self._either(
            lambda: self.primary.lexical(query, filters, limit), lambda: self.fallback.lexical(query, filters, limit)
        )

    def dense(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        return self._either(
            lambda: self.primary.dense(query, filters, limit), lambda: self.fallback.dense(query, filters, limit)
        )

    def graph_view(self) -> GraphView:
        return self._either(self.primary.graph_view, self.fallback.graph_view)

    def summaries(self, filters: Filters) -> list[MemorySummary]:
        return self._either(lambda: self.primary.summaries(filters), lambda: self.fallback.summaries(filters))

    def status(self) -> dict[str, object] | None:
        describe = getattr(self.primary, "describe", dict)
        if self.down:
            return {**describe(), "available": False, "error": WAITING}
        try:
            found: dict[str, object] | None = self.primary.status()
            return found
        except BackendUnavailable as exc:
            self._fell_back(exc)
            return {**describe(), "available": False, "error": str(exc)}

    def close(self) -> None:
        self.primary.close()
        self.fallback.close()
