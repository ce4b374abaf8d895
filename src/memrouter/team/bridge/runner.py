"""A pass every ``[team.claude_flow] interval`` seconds on a daemon thread (``memrouter serve``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from memrouter.core.errors import MemoryRouterError

if TYPE_CHECKING:
    from memrouter.team.bridge.bridge import ClaudeFlowBridge

__all__ = ["BridgeRunner"]

log = logging.getLogger(__name__)


class BridgeRunner:
    """Runs ``bridge.sync()`` until ``stop()``; a failed pass is logged and the next one tries again."""

    def __init__(self, bridge: ClaudeFlowBridge, interval: float, *, on_stop: Callable[[], None] | None = None) -> None:
        self.bridge = bridge
        self._on_stop = on_stop
        self.interval = interval
        self.passes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memrouter-claude-flow", daemon=True)

    def start(self) -> BridgeRunner:
        self._thread.start()
        return self

    def stop(self, *, close: bool = True) -> None:
        """Stop after the pass in flight; ``close`` also closes the bridge (and calls ``on_stop``)."""
        self._stop.set()
        self._thread.join(timeout=self.interval + self.bridge.client.session.timeout + 5.0)
        if close:
            self.bridge.close()
            if self._on_stop is not None:
                self._on_stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                report = self.bridge.sync()
                for text in report.conflicts:
                    log.warning("claude-flow: %s", text)
            except (MemoryRouterError, OSError) as exc:
                log.warning("claude-flow: the pass failed: %s", exc)
            self.passes += 1
            self._stop.wait(self.interval)
