"""When the server is busy answering, and when it has gone quiet: the moment for work nobody waits on.

A server that starts embedding at once makes its first answers wait: loading
the model imports numpy and onnxruntime and holds the interpreter meanwhile.
``Activity`` is told of every request that arrives and of its answer (the
server middleware ``Activity.middleware``, over stdio and HTTP alike), and
``wait_for_quiet`` returns
once the first request has been answered and nothing has arrived for a while
(or, if no client asks anything, after a longer wait), so background work starts
when the server is idle. A server that never goes quiet (a client polling it)
starts its background work ``MOST_DEFERRED`` seconds after its first answer all
the same.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext

__all__ = ["FIRST_ANSWER_WAIT", "MOST_DEFERRED", "QUIET_SECONDS", "Activity"]

# Quiet this long (no request arriving, none in flight) after the first answer: idle.
QUIET_SECONDS = 0.5
# Background work waits at most this long after the first answer, however busy the server is.
MOST_DEFERRED = 5.0
# With no request at all, background work starts this long after the server did.
FIRST_ANSWER_WAIT = 10.0


class Activity:
    """Requests in flight and the time of the last one (thread-safe; see the module docstring)."""

    def __init__(self) -> None:
        self._clock = time.monotonic
        self._changed = threading.Condition()
        self._in_flight = 0
        self._answered = 0
        self._first_answer: float | None = None
        self._last = self._clock()

    def arrived(self) -> None:
        """A request arrived."""
        with self._changed:
            self._in_flight += 1
            self._last = self._clock()
            self._changed.notify_all()

    def answered(self) -> None:
        """A request was answered."""
        with self._changed:
            self._in_flight = max(0, self._in_flight - 1)
            self._answered += 1
            self._last = self._clock()
            if self._first_answer is None:
                self._first_answer = self._last
            self._changed.notify_all()

    def wait_for_quiet(
        self, quiet: float = QUIET_SECONDS, first_answer: float = FIRST_ANSWER_WAIT, stop: threading.Event | None = None,
        most: float = MOST_DEFERRED,
    ) -> bool:  # fmt: skip
        """Block until the server is idle (see the module docstring); False when ``stop`` was set meanwhile."""
        started = self._clock()
        with self._changed:
            while stop is None or not stop.is_set():
                now = self._clock()
                if self._answered == 0 and now - started < first_answer:
                    self._changed.wait(min(0.2, first_answer - (now - started)))
                    continue
                idle_for = now - self._last
                if self._in_flight == 0 and idle_for >= quiet:
                    return True
                if self._first_answer is not None and now - self._first_answer >= most:
                    return True  # never quiet: wait no longer
                self._changed.wait(max(0.05, quiet - idle_for) if self._in_flight == 0 else 0.2)
        return False

    def middleware(self) -> ServerMiddleware[Any]:
        """A server middleware that tells this ``Activity`` of each request (not notifications) and its answer."""

        async def track(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
            if ctx.request_id is None:
                return await call_next(ctx)
            self.arrived()
            try:
                return await call_next(ctx)
            finally:
                self.answered()

        return track
