"""The audit log: one JSON line per change in ``.memrouter/audit.jsonl`` (who, what, when, ids).

Payloads, values, contexts and messages never go in: only ids, names and
states. Appends hold an exclusive ``flock`` on the file, so lines from many
processes never interleave.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from memrouter.lazylog import LazyLogger

__all__ = ["AuditLog"]

log = LazyLogger(__name__)


class AuditLog:
    """Appends records to one JSON-lines file; a failed append is logged and counted, never raised.

    The change it records has already been committed when the line is
    written, so failing the caller then would report a change as not made.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failures = 0
        self._fd: int | None = None  # opened on the first append, kept open (O_APPEND) after

    def append(self, at: float, who: str | None, op: str, **ids: Any) -> None:
        record = {"at": round(at, 6), "who": who, "op": op, **{k: v for k, v in ids.items() if v is not None}}
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                os.write(self._fd, line)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        except OSError as exc:
            self.failures += 1
            log.warning("cannot append to the audit log %s: %s", self.path, exc)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
