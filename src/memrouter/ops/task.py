"""The current task context of a project, persisted across server restarts.

One small JSON file in the project's state folder (``.memrouter/``), written
atomically, so a crash never leaves half a file and a restarted server picks
up where the last one stopped.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memrouter.core.errors import InvalidInput, MemoryRouterError

__all__ = ["TaskContextStore", "MAX_TASK_CHARS", "MAX_DETAILS_CHARS", "TASK_FILE"]

TASK_FILE = "task-context.json"
MAX_TASK_CHARS = 500
MAX_DETAILS_CHARS = 20_000


class TaskContextStore:
    """Read and write the task context file in ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / TASK_FILE
        self._lock = threading.Lock()

    def set(self, task: str, details: str = "") -> dict[str, Any]:
        """Record what the agent is working on now; returns the stored record."""
        if not isinstance(task, str) or not task.strip():
            raise InvalidInput("task must be non-empty text")
        if len(task) > MAX_TASK_CHARS:
            raise InvalidInput(f"task is {len(task)} characters; the limit is {MAX_TASK_CHARS}")
        if not isinstance(details, str):
            raise InvalidInput("details must be text")
        if len(details) > MAX_DETAILS_CHARS:
            raise InvalidInput(f"details are {len(details)} characters; the limit is {MAX_DETAILS_CHARS}")
        if "\x00" in task or "\x00" in details:
            raise InvalidInput("task and details must not contain NUL characters")
        record = {
            "task": task.strip(),
            "details": details,
            "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        data = json.dumps(record, ensure_ascii=False, indent=2).encode("utf-8")
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
                try:
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(data)
                        handle.flush()
                        os.fsync(handle.fileno())
                    os.replace(temp, self.path)
                except BaseException:
                    if os.path.exists(temp):
                        os.unlink(temp)
                    raise
            except OSError as exc:
                raise MemoryRouterError(f"cannot save the task context to {self.path}: {exc.strerror or exc}") from exc
        return record

    def get(self) -> dict[str, Any] | None:
        """The stored task context, or None when none was set (or the file is unreadable)."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise MemoryRouterError(f"cannot read the task context {self.path}: {exc.strerror or exc}") from exc
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise MemoryRouterError(f"the task context file {self.path} is damaged ({exc}); set it again") from exc
        if not isinstance(record, dict) or not isinstance(record.get("task"), str):
            raise MemoryRouterError(f"the task context file {self.path} is damaged; set it again")
        return record
