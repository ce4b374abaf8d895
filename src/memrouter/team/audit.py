"""The audit log: one JSON line per change in ``.memrouter/audit.jsonl`` (who, what, when, ids).

Payloads, values, contexts and messages never go in: only ids, names and
states. Appends hold an exclusive ``flock`` on the file, so lines from many
processes never interleave. The team channel and the memory files
(``memrouter.ops.audit``) share the file. Past ``max_bytes`` it is renamed to
``audit.jsonl.1`` (replacing the previous one) under that lock; a process
still holding the old file notices, under the lock, and reopens the new one.
Within a process a thread lock comes first: ``flock`` belongs to the open
file, which the process's threads share.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any

from memrouter.core.lazylog import LazyLogger

__all__ = ["AuditLog", "MAX_AUDIT_BYTES"]

log = LazyLogger(__name__)

MAX_AUDIT_BYTES = 10 * 1024 * 1024


class AuditLog:
    """Appends records to one JSON-lines file; a failed append is logged and counted, never raised.

    The change it records has already been committed when the line is
    written, so failing the caller then would report a change as not made.
    """

    def __init__(self, path: Path, max_bytes: int = MAX_AUDIT_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.failures = 0
        self._fd: int | None = None  # opened on the first append, kept open (O_APPEND) after
        self._lock = threading.Lock()

    def append(self, at: float, who: str | None, op: str, **ids: Any) -> None:
        record = {"at": round(at, 6), "who": who, "op": op, **{k: v for k, v in ids.items() if v is not None}}
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            with self._lock:
                fd = self._locked()
                try:
                    if os.fstat(fd).st_size + len(line) > self.max_bytes > 0 and os.fstat(fd).st_size > 0:
                        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
                        fd = self._locked()
                    os.write(fd, line)
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as exc:
            self.failures += 1
            log.warning("cannot append to the audit log %s: %s", self.path, exc)

    def _locked(self) -> int:
        """The open log file, locked; reopened when another process has rotated it away."""
        while True:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)  # the team channel may live in a database
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                if os.path.samestat(os.fstat(self._fd), os.stat(self.path)):
                    return self._fd
            except FileNotFoundError:
                pass  # the path was rotated away and not yet recreated: reopen below, which creates it
            self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
