"""Embedding in the background: lexical search answers at once, dense joins as vectors land.

A long-running router (``memrouter serve``, or a program that calls
``Router.embed_in_background``) starts one ``BackgroundEmbedder``: a daemon
thread that embeds the memories lacking vectors, ``BATCH`` memories at a
time. It holds the index only to plan a batch (read the pending rows, chunk
them) and to store its vectors; the embedding itself, the slow part, runs
without the index, so searches and writes go on meanwhile. Searches use the
vectors that exist and never wait for the rest. On Linux the thread runs at
the lowest CPU priority (``nice`` 19): embedding takes what foreground work
leaves.

When nothing is pending the thread sleeps until ``wake`` (a write through
this router) or ``POLL`` seconds pass (a write by another process). An error
(the model is not installed, the index is busy) is kept for ``status`` and
retried after ``RETRY`` seconds; the thread never dies of one. ``stop``
ends it within one batch.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from memrouter.core.errors import ConfigError, MemoryRouterError, NotInstalled
from memrouter.core.lazylog import LazyLogger

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from memrouter.index.sqlite.dense import DenseIndex, PendingWork

    T = TypeVar("T")

__all__ = ["BATCH", "BackgroundEmbedder"]

log = LazyLogger(__name__)

BATCH = 16  # memories per batch: about a second of embedding on two cores, so stop() is prompt
POLL = 2.0  # seconds between looks for other processes' writes when nothing is pending
RETRY = 5.0  # seconds before a failed batch is tried again
LOWEST_PRIORITY = 19


class BackgroundEmbedder:
    """One thread embedding ``dense``'s pending memories (see the module docstring).

    ``indexed`` runs a function against the index under its lock (``IndexKeeper.indexed``).
    """

    def __init__(self, dense: DenseIndex, indexed: Callable[[Callable[[], Any]], Any], conn: Callable[[], Any]) -> None:
        self._dense = dense
        self._indexed = indexed
        self._conn = conn
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self.embedded = 0  # memories this thread embedded
        self.batches = 0
        self.seconds = 0.0  # spent computing vectors
        self.chunks = 0
        self.idle = False  # true while nothing is pending
        self.last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="memrouter-embed", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wake(self) -> None:
        """Look for pending memories now (a write just landed)."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread (within one batch) and wait for it."""
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def status(self) -> dict[str, Any]:
        with self._lock:
            rate = self.chunks / self.seconds if self.seconds else None
            return {
                "running": self.running, "idle": self.idle, "embedded_memories": self.embedded,
                "batches": self.batches, "chunks_per_second": round(rate, 1) if rate else None,
                "last_error": self.last_error,
            }  # fmt: skip

    # -- the thread ----------------------------------------------------------------
    def _run(self) -> None:
        _lower_priority()
        while not self._stopping.is_set():
            try:
                done = self._one_batch()
            except (NotInstalled, ConfigError) as exc:  # no model to embed with: nothing to retry
                with self._lock:
                    self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("background embedding stopped: %s", exc)
                return
            except (MemoryRouterError, OSError, RuntimeError, ValueError) as exc:
                # RuntimeError/ValueError: what the model runtime raises on bad input or memory.
                with self._lock:
                    self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("background embedding paused: %s; retrying in %.0f s", exc, RETRY)
                self._stopping.wait(RETRY)
                continue
            if not done:
                self._wake.wait(POLL)
                self._wake.clear()

    def _one_batch(self) -> bool:
        """Embed one batch; False when nothing was pending."""
        dense = self._dense
        work: PendingWork | None = self._indexed(lambda: dense.plan(self._conn(), BATCH))
        with self._lock:
            self.idle = work is None
        if work is None:
            return False
        started = time.perf_counter()
        embedded = dense.compute(work)  # the index is free meanwhile
        took = time.perf_counter() - started
        if self._stopping.is_set():
            return True

        def store() -> None:
            stored = dense.store(self._conn(), work, embedded)
            # Counted under the index's lock with the vectors themselves: a status, read under that lock too,
            # never sees the vectors landed and the count still short of them.
            with self._lock:
                self.embedded += stored
                self.batches += 1
                self.seconds += took
                self.chunks += len(work.pieces)
                self.last_error = None

        self._indexed(store)
        return True


def _lower_priority() -> None:
    """Run this thread (and what it starts) at the lowest CPU priority, where the OS allows it."""
    if sys.platform != "linux":
        return  # elsewhere a thread id is no process id: setpriority would renice the wrong thing
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST_PRIORITY)  # Linux: this thread alone
    except OSError as exc:
        log.info("background embedding keeps its priority: %s", exc)
