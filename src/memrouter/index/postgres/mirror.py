"""Bringing a project's PostgreSQL rows in step with its local index (which is in step with its files).

The local SQLite index already parses, hashes, embeds and links the files
(``memrouter.index.sqlite.refresh``, ``memrouter.index.sqlite.dense``, ``memrouter.index.sqlite.graph``);
``push`` copies what changed: a memory whose content hash or set of embedded
models differs is replaced (row with its graph keys and edges, postings,
chunks), one the files no longer hold is dropped. The
comparison runs inside the project's write transaction, under its lock, so two
machines pushing the same repository at once converge to the same rows.
Nothing machine-specific (row ids, file times) is compared or copied.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from memrouter.core.model import Memory
from memrouter.core.names import SUFFIX
from memrouter.index.postgres.scope import MEMORY_COLUMNS, ProjectScope
from memrouter.index.postgres.store import vector_text
from memrouter.index.sqlite.connection import snapshot
from memrouter.index.sqlite.lexical import document_terms

__all__ = ["Pushed", "local_mark", "push"]

# A push changing at least this many memories (or a tenth of the project) refreshes the tables' statistics.
ANALYZE_FROM = 50
_LOCAL_COLUMNS = [c for c in MEMORY_COLUMNS if c not in ("vectors", "graph_keys", "graph_edges")]
# A memory without a graph row in the local index: no keys, no edges.
_NO_GRAPH = ("{}", "[]")
_LENGTH = MEMORY_COLUMNS.index("length")


@dataclass(frozen=True, slots=True)
class Pushed:
    """What one push changed in the database."""

    project: str
    added: int
    updated: int
    removed: int
    unchanged: int

    def to_dict(self) -> dict[str, Any]:
        return {"project": self.project, "added": self.added, "updated": self.updated, "removed": self.removed,
                "unchanged": self.unchanged}  # fmt: skip


def local_mark(conn: sqlite3.Connection) -> str:
    """Changes whenever the local index's memories or vectors change (its epoch and generations)."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('epoch', 'generation', 'dense_generation')"))
    return f"{rows.get('epoch', '')}:{rows.get('generation', '0')}:{rows.get('dense_generation', '0')}"


def _local_states(conn: sqlite3.Connection) -> dict[str, tuple[int, str, str]]:
    """name -> (local row id, content hash, models with current vectors, sorted and comma-joined)."""
    models: dict[int, set[str]] = {}
    for memory_id, model in conn.execute(
        "SELECT DISTINCT c.memory_id, c.model FROM chunks c JOIN memories m ON m.id = c.memory_id AND m.hash = c.memory_hash"
    ):
        models.setdefault(memory_id, set()).add(model)
    return {
        name: (mid, digest, ",".join(sorted(models.get(mid, ()))))
        for mid, name, digest in conn.execute("SELECT id, name, hash FROM memories")
    }


def push(conn: sqlite3.Connection, scope: ProjectScope) -> Pushed:
    """Make the project's rows in PostgreSQL match the local index ``conn`` (one transaction), as one
    state of it: other processes writing the local index meanwhile change neither what is copied nor the
    mark recorded with it."""
    with snapshot(conn):
        return _push(conn, scope)


def _push(conn: sqlite3.Connection, scope: ProjectScope) -> Pushed:
    local = _local_states(conn)
    mark = local_mark(conn)
    # The vectors' index first, in its own transaction: made inside the copy, it would wait for other
    # projects' copies into the same table while they wait for it.
    scope.vector_indexes({row[0] for row in conn.execute("SELECT DISTINCT dimension FROM chunks")})
    with scope.writing() as writer:
        if _covers(writer.recorded_mark(), mark):
            # Another process of this local index pushed a later state while this push waited for the
            # lock: copying this one would take the rows back.
            return Pushed(scope.project, 0, 0, 0, len(local))
        remote = writer.states()
        changed = [name for name, (_, digest, models) in local.items() if remote.get(name) != (digest, models)]
        removed = [name for name in remote if name not in local]
        touched = writer.delete(changed + removed)
        if changed:
            local_ids = {name: local[name][0] for name in changed}
            rows = _memory_rows(conn, local_ids, {name: local[name][2] for name in changed})
            ids = writer.insert([row for row, _ in rows])
            touched |= writer.postings(
                ((term, ids[row[0]], tf, row[_LENGTH]) for row, terms in rows for term, tf in terms.items()),
                [row[_LENGTH] for row, _ in rows],
            )
            by_local = {local_ids[name]: ids[name] for name in changed}
            writer.chunks(_chunk_rows(conn, by_local))
        if changed or removed or not writer.overviews_known():
            writer.overviews()
        graphless = writer.graphless()  # rows pushed before the database held the graph
        if graphless:
            writer.graph(_graph_rows(conn, {name: local[name][0] for name in graphless if name in local}))
        if changed or removed or graphless:
            writer.statistics(touched)
            writer.bump()
        writer.mark(mark)
    if len(changed) + len(removed) >= max(ANALYZE_FROM, len(remote) // 10):
        scope.analyze()  # a bulk change: fresh planner statistics, or a join plan fit for one row runs for seconds
    added = sum(1 for name in changed if name not in remote)
    return Pushed(scope.project, added, len(changed) - added, len(removed), len(local) - len(changed))


def _covers(recorded: str, mark: str) -> bool:
    """Whether rows recorded at local mark ``recorded`` hold a later state of the local index than ``mark``
    (the same index's epoch, generations no lower). At the same mark a push compares the rows all the same,
    so ``memrouter index --database`` repairs rows changed by hand."""
    before, now = recorded.split(":"), mark.split(":")
    if recorded == mark or len(before) != 3 or len(now) != 3 or before[0] != now[0]:
        return False
    try:
        return int(before[1]) >= int(now[1]) and int(before[2]) >= int(now[2])
    except ValueError:
        return False


def _memory_rows(
    conn: sqlite3.Connection, local_ids: dict[str, int], models: dict[str, str]
) -> list[tuple[tuple[Any, ...], dict[str, float]]]:
    """Each changed memory's row (``MEMORY_COLUMNS`` order) and its weighted term frequencies."""
    conn_rows: list[sqlite3.Row] = []
    ids = list(local_ids.values())
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        conn_rows += conn.execute(
            f"SELECT {', '.join(_LOCAL_COLUMNS)} FROM memories WHERE id IN ({', '.join('?' * len(batch))})", batch
        ).fetchall()
    graph = _graph_rows(conn, local_ids)
    result: list[tuple[tuple[Any, ...], dict[str, float]]] = []
    for row in conn_rows:
        values = dict(zip(_LOCAL_COLUMNS, tuple(row), strict=True))
        tags = tuple(json.loads(values["tags"]))
        memory = Memory(name=values["name"], path="", text="", hash="", body=values["body"], title=values["title"],
                        tags=tags)  # fmt: skip
        terms, _ = document_terms(memory)
        values["tags"] = list(tags)
        values["path"] = values["name"] + SUFFIX  # relative: the root differs from machine to machine
        values["vectors"] = models[values["name"]]
        values["graph_keys"], values["graph_edges"] = graph[values["name"]]
        result.append((tuple(_text(values[c]) for c in MEMORY_COLUMNS), terms))
    return result


def _text(value: Any) -> Any:
    """``value`` with each NUL character of its text replaced by U+FFFD, which PostgreSQL's text cannot hold
    (a memory file may; the file itself keeps it, and the rows are derived)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_text(item) for item in value]
    return value


def _graph_rows(conn: sqlite3.Connection, local_ids: dict[str, int]) -> dict[str, tuple[str, str]]:
    """name -> (keys, edges) of these memories (``local_ids``: name -> local row id), as the local index holds them."""
    names = {mid: name for name, mid in local_ids.items()}
    found = dict.fromkeys(local_ids, _NO_GRAPH)
    ids = list(names)
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        for memory_id, keys, edges in conn.execute(
            f"SELECT memory_id, keys, edges FROM graph_rows WHERE memory_id IN ({', '.join('?' * len(batch))})", batch
        ):
            found[names[memory_id]] = (keys, edges)
    return found


def _chunk_rows(conn: sqlite3.Connection, by_local: dict[int, int]) -> list[tuple[int, str, int, int, str, int, str]]:
    """The current chunks of the changed memories, their vectors in pgvector's text form."""
    from array import array

    rows: list[tuple[int, str, int, int, str, int, str]] = []
    ids = list(by_local)
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        for memory_id, model, ordinal, offset, heading, dimension, blob in conn.execute(
            "SELECT c.memory_id, c.model, c.ordinal, c.start, c.heading, c.dimension, c.vector FROM chunks c "
            "JOIN memories m ON m.id = c.memory_id AND m.hash = c.memory_hash "
            f"WHERE c.memory_id IN ({', '.join('?' * len(batch))}) ORDER BY c.memory_id, c.model, c.ordinal",
            batch,
        ):
            values = array("f")
            values.frombytes(blob)
            rows.append((by_local[memory_id], model, ordinal, offset, _text(heading), dimension, vector_text(values)))
    return rows
