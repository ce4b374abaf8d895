"""Who changed which memory, when, from what to what: ``<index_dir>/audit.jsonl``.

Every change a ``MemoryStore`` makes is reported to its ``observer``; the
router points that at ``MemoryAudit.observe``, so no write path (save, edit,
rename, delete, promotion, invalidation, sprints, review) can skip the log.
A line holds the time, the actor, the operation, the memory's name, its
content hash before and after, and the verdict (``ok``, ``pending`` when the
memory was written pending review, ``approved``, ``rejected``); a review adds
its reason. Never the content.

The operation and the actor come from context variables: ``audited`` (a
decorator on the router's write calls) names the operation, the outermost
one winning (a promotion's writes are the promotion's); the faces name the
actor with ``acting_as`` (``agent:<id>`` for an MCP client or ``--agent``,
``user:<git user.name>`` for the command line). A line with no actor named
is the git user's, resolved once per log, only when a line is written.
"""

from __future__ import annotations

import functools
import time
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from memrouter.core.errors import InvalidInput
from memrouter.core.model import PENDING, Memory
from memrouter.core.records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a search loads this module
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "AUDIT_FILE", "MAX_READ", "AuditEntry", "MemoryAudit", "Operation", "acting_as", "audited", "current_actor", "git_user",
    "read_audit",
]  # fmt: skip

AUDIT_FILE = "audit.jsonl"
MAX_READ = 10_000


@record(frozen=False)
class Operation:
    """The write call in progress: its name, and what a review adds to its lines."""

    op: str
    verdict: str | None = None
    reason: str | None = None


_OPERATION: ContextVar[Operation | None] = ContextVar("memrouter_operation", default=None)
_ACTOR: ContextVar[str | None] = ContextVar("memrouter_actor", default=None)


@contextmanager
def acting_as(actor: str | None) -> Iterator[None]:
    """Name who does the writes made inside the block (``agent:<id>`` or ``user:<name>``)."""
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def current_actor() -> str | None:
    """The actor ``acting_as`` named here, if any."""
    return _ACTOR.get()


@contextmanager
def operation(op: str) -> Iterator[Operation]:
    """The operation the writes inside the block belong to (an outer one wins)."""
    outer = _OPERATION.get()
    if outer is not None:
        yield outer
        return
    current = Operation(op)
    token = _OPERATION.set(current)
    try:
        yield current
    finally:
        _OPERATION.reset(token)


def audited(op: str) -> Callable[[F], F]:
    """Decorate a write call: the changes it makes are logged as ``op``."""

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with operation(op):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return wrap


def git_user(folder: Path | None) -> str | None:
    """``user:<git config user.name>`` for ``folder`` (None when git or the name is missing)."""
    import subprocess

    try:
        found = subprocess.run(
            ["git", "config", "user.name"], cwd=folder, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    name = found.stdout.strip()
    return f"user:{name}" if found.returncode == 0 and name else None


class MemoryAudit:
    """Appends one line per memory change to the project's audit log (see the module docstring)."""

    def __init__(self, index_dir: Path, project_dir: Path | None, max_bytes: int | None = None) -> None:
        self.path = index_dir / AUDIT_FILE
        self._project_dir = project_dir
        self._max_bytes = max_bytes
        self._default_actor: str | None = None

    def observe(self, name: str, before: str | None, after: Memory | None) -> None:
        """A ``MemoryStore`` observer: log the change just made to ``name``."""
        current = _OPERATION.get()
        op = current.op if current is not None else ("delete" if after is None else "write")
        verdict = current.verdict if current is not None and current.verdict else None
        if verdict is None:
            verdict = "pending" if after is not None and after.status == PENDING else "ok"
        self.record(op, name, before, after.hash if after is not None else None, verdict,
                    current.reason if current is not None else None)  # fmt: skip

    def record(
        self, op: str, name: str, before: str | None, after: str | None, verdict: str, reason: str | None = None
    ) -> None:
        """Append one line (a failure to append is logged and counted by ``AuditLog``, never raised)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass  # AuditLog reports the failed append
        from memrouter.team.audit import AuditLog  # lazy: a search never writes

        # Opened per line: a router may live long between writes. ``None``: the log's own size limit.
        log = AuditLog(self.path) if self._max_bytes is None else AuditLog(self.path, self._max_bytes)
        try:
            log.append(
                time.time(), self.actor(), op, name=name, before=before, after=after, verdict=verdict, reason=reason
            )
        finally:
            log.close()

    def actor(self) -> str | None:
        """Who acts now: the actor named by ``acting_as``, else the git user (looked up once)."""
        named = _ACTOR.get()
        if named is not None:
            return named
        if self._default_actor is None:
            self._default_actor = git_user(self._project_dir) or "user:unknown"
        return self._default_actor


@record
class AuditEntry:
    """One line of the audit log: a memory change or a team-channel operation (its ids in ``ids``)."""

    at: float
    actor: str | None
    op: str
    name: str | None = None
    before: str | None = None
    after: str | None = None
    verdict: str | None = None
    reason: str | None = None
    ids: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def time(self) -> str:
        """``at`` as UTC ISO text."""
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.at))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"time": self.time, "actor": self.actor, "op": self.op}
        for key in ("name", "before", "after", "verdict", "reason"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data | self.ids


def read_audit(
    index_dir: Path,
    *,
    since: str | None = None,
    name: str | None = None,
    actor: str | None = None,
    limit: int = 200,
) -> list[AuditEntry]:
    """The last ``limit`` lines (oldest first, the rotated file included) passing the filters.

    ``since`` is a UTC date or date-time (``2026-01-05``, ``2026-01-05T09:30``);
    ``name`` a memory name; ``actor`` an exact actor (``agent:claude-code``).
    Lines that are not JSON records are skipped.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_READ:
        raise InvalidInput(f"limit must be a whole number between 1 and {MAX_READ}")
    start = _since_seconds(since) if since is not None else None
    path = index_dir / AUDIT_FILE
    found: list[AuditEntry] = []
    for part in (path.with_name(AUDIT_FILE + ".1"), path):
        try:
            lines = part.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            entry = _entry(line)
            if entry is None or (start is not None and entry.at < start):
                continue
            if (name is not None and entry.name != name) or (actor is not None and entry.actor != actor):
                continue
            found.append(entry)
    return found[-limit:]


def _entry(line: str) -> AuditEntry | None:
    import json

    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("at"), (int, float)) or "op" not in record:
        return None
    known = ("at", "who", "op", "name", "before", "after", "verdict", "reason")
    return AuditEntry(
        at=float(record["at"]), actor=record.get("who"), op=str(record["op"]), name=record.get("name"),
        before=record.get("before"), after=record.get("after"), verdict=record.get("verdict"),
        reason=record.get("reason"), ids={k: v for k, v in record.items() if k not in known},
    )  # fmt: skip


def _since_seconds(since: str) -> float:
    import calendar

    text = since.strip().replace(" ", "T").removesuffix("Z")
    for pattern in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            return float(calendar.timegm(time.strptime(text, pattern)))
        except ValueError:
            continue
    raise InvalidInput(f"since {since!r} is not a date (2026-01-05) or a UTC date-time (2026-01-05T09:30)")
