"""Keep the index in step with the files, doing as little work as possible.

A stat scan (mtime, size) picks candidates; the content hash confirms a
change; only changed files are parsed and written to the index; rows whose
file is gone are dropped. The whole refresh is one transaction, so a reader
never sees half of it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memrouter.core.model import Memory
from memrouter.core.records import field, record
from memrouter.index.sqlite.connection import transaction
from memrouter.index.sqlite.lexical import document_terms
from memrouter.index.sqlite.postings import PostingsWriter
from memrouter.store.files import MAX_FILE_BYTES, FileStat, MemoryStore, decode, read_regular
from memrouter.store.sources import SourceFile, SourceFiles, is_source_name, source_file_of

__all__ = [
    "Progress",
    "RefreshReport",
    "delete_memory",
    "rebuild_postings",
    "refresh_index",
    "upsert_memory",
    "write_transaction",
]

Progress = Callable[[int, int], None]


@record(frozen=False)
class RefreshReport:
    """What one refresh did; ``changed`` lists names added or updated. ``took_ms`` is the files' part (reading,
    parsing, the full text and the graph), ``scan_ms`` the part of it that found what changed (the stat scan
    and its comparison with the index, what a refresh that finds nothing costs); ``embedded`` memories got
    vectors in ``embed_ms`` more."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    problems: dict[str, str] = field(default_factory=dict)
    took_ms: float = 0.0
    scan_ms: float = 0.0
    embedded: int = 0
    embed_ms: float = 0.0

    @property
    def changed(self) -> list[str]:
        return self.added + self.updated

    def to_dict(self) -> dict[str, object]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "removed": len(self.removed),
            "unchanged": self.unchanged,
            "problems": self.problems,
            "took_ms": round(self.took_ms, 2),
            "embedded": self.embedded,
            "embed_ms": round(self.embed_ms, 2),
        }


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[PostingsWriter]:
    """One write transaction: yields the postings writer, then flushes it,
    bumps the index generation (which readers' caches key on) and commits.

    Waiting for other processes' writes is ``memrouter.index.sqlite.db.begin_immediate``'s job.
    """
    with transaction(conn):
        writer = PostingsWriter()
        yield writer
        writer.flush(conn)
        bump_generation(conn)


def bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'generation'")


def rebuild_postings(conn: sqlite3.Connection) -> int:
    """Recompute every memory's terms and the whole postings table from the memory rows.

    Runs inside the caller's transaction; returns the number of memories.
    The files are not read: the rows hold every field the terms come from.
    """
    import json

    conn.execute("DELETE FROM terms")
    writer = PostingsWriter()
    count = 0
    for row in conn.execute("SELECT id, name, title, tags, body FROM memories ORDER BY id"):
        memory = Memory(
            name=row["name"], path="", text="", hash="", body=row["body"], title=row["title"],
            tags=tuple(json.loads(row["tags"])),
        )  # fmt: skip
        terms, length = document_terms(memory)
        conn.execute("UPDATE memories SET terms = ?, length = ? WHERE id = ?", (" ".join(terms), length, row["id"]))
        writer.add(row["id"], terms)
        count += 1
    writer.flush(conn)
    bump_generation(conn)
    return count


def upsert_memory(conn: sqlite3.Connection, writer: PostingsWriter, memory: Memory, mtime_ns: int, size: int) -> int:
    """Write one memory's row, tags, postings and graph edges (inside ``write_transaction``); returns its row id."""
    import json  # only writes need it; a search with nothing changed does not

    tags = json.dumps(list(memory.tags))
    terms, length = document_terms(memory)
    values = (
        memory.path,
        memory.hash,
        size,
        mtime_ns,
        memory.title,
        tags,
        memory.channel,
        memory.kind,
        memory.scope,
        memory.status,
        memory.source,
        memory.author,
        memory.confidence,
        memory.verified_by,
        memory.created,
        memory.updated,
        memory.valid_from,
        memory.valid_until,
        memory.supersedes,
        memory.superseded_by,
        memory.expires,
        json.dumps(list(memory.anchors)),
        json.dumps(memory.extra, default=str),
        json.dumps(list(memory.problems)),
        memory.body,
        length,
        " ".join(terms),
        time.time(),
    )
    row = conn.execute("SELECT id, terms FROM memories WHERE name = ?", (memory.name,)).fetchone()
    columns = (
        "path, hash, size, mtime_ns, title, tags, channel, kind, scope, status, source, author, "
        "confidence, verified_by, created, updated, valid_from, valid_until, supersedes, "
        "superseded_by, expires, anchors, extra, problems, body, length, terms, indexed_at"
    )
    if row is None:
        marks = ", ".join("?" * (len(values) + 1))
        cursor = conn.execute(f"INSERT INTO memories (name, {columns}) VALUES ({marks})", (memory.name, *values))
        memory_id = int(cursor.lastrowid or 0)
    else:
        memory_id = int(row[0])
        assignments = ", ".join(f"{c.strip()} = ?" for c in columns.split(","))
        conn.execute(f"UPDATE memories SET {assignments} WHERE id = ?", (*values, memory_id))
        writer.remove(memory_id, row[1].split())
        conn.execute("DELETE FROM memory_tags WHERE memory_id = ?", (memory_id,))
    conn.executemany(
        "INSERT OR IGNORE INTO memory_tags (memory_id, tag) VALUES (?, ?)",
        [(memory_id, tag) for tag in memory.tags],
    )
    writer.add(memory_id, terms)
    from memrouter.index.sqlite.graph import write_graph  # only a changed memory needs it

    write_graph(writer, memory_id, memory)
    return memory_id


def delete_memory(conn: sqlite3.Connection, writer: PostingsWriter, name: str) -> bool:
    """Drop one memory's rows (inside ``write_transaction``); True if it was indexed."""
    row = conn.execute("SELECT id, terms FROM memories WHERE name = ?", (name,)).fetchone()
    if row is None:
        return False
    writer.remove(row[0], row[1].split())
    writer.discard(row[0])
    conn.execute("DELETE FROM memories WHERE id = ?", (row[0],))
    return True


def refresh_index(
    conn: sqlite3.Connection,
    store: MemoryStore,
    *,
    full: bool = False,
    progress: Progress | None = None,
) -> RefreshReport:
    """Bring the index up to date with the files under ``store.root`` and the source files (``store.sources``).

    ``full`` re-reads every file (hash check) even when its stat is unchanged.
    """
    started = time.perf_counter()
    report = RefreshReport()
    known = {
        row[0]: (row[1], row[2], row[3]) for row in conn.execute("SELECT name, hash, mtime_ns, size FROM memories")
    }
    sections = {name: known.pop(name) for name in [name for name in known if "#" in name and is_source_name(name)]}
    files = store.stat_files()
    candidates: list[FileStat] = []
    for name, path, mtime_ns, size in files:
        seen = known.get(name)
        if full or seen is None or seen[1] != mtime_ns or seen[2] != size:
            candidates.append(FileStat(name, path, mtime_ns, size))
    report.unchanged = len(files) - len(candidates)
    present = {stat[0] for stat in files}
    gone = [name for name in known if name not in present]
    sources, dropped = _source_candidates(store, sections, full, report)
    report.scan_ms = (time.perf_counter() - started) * 1000
    if not candidates and not gone and not sources and not dropped:
        report.took_ms = (time.perf_counter() - started) * 1000
        return report

    with write_transaction(conn) as writer:
        for done, stat in enumerate(candidates, 1):
            _refresh_one(conn, writer, store, stat, known.get(stat.name), report)
            if progress is not None:
                progress(done, len(candidates))
        for name in gone:
            # Another process may have written it since the scan: its file wins.
            if not store.exists(name) and delete_memory(conn, writer, name):
                report.removed.append(name)
        for planned in sources:
            _refresh_source(conn, writer, planned, sections, report)
        for name in dropped:
            if delete_memory(conn, writer, name):
                report.removed.append(name)
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _source_candidates(
    store: MemoryStore, sections: dict[str, tuple[str, int, int]], full: bool, report: RefreshReport
) -> tuple[list[tuple[SourceFile, list[Memory]]], list[str]]:
    """The source files whose stat differs from their sections' rows, split (read outside the write), and the
    rows whose file is gone."""
    found = store.sources.scan() if store.sources is not None else []
    by_file: dict[str, list[tuple[int, int]]] = {}
    for name, (_, mtime_ns, size) in sections.items():
        by_file.setdefault(source_file_of(name), []).append((mtime_ns, size))
    changed = []
    for source in found:
        stats = by_file.get(source.relative)
        if not full and stats and all(stat == (source.mtime_ns, source.size) for stat in stats):
            report.unchanged += len(stats)
            continue
        try:
            raw = read_regular(source.path)
        except OSError as exc:
            report.problems[source.relative] = f"unreadable: {exc.strerror or exc}"
            continue
        text, problem = decode(raw)
        if problem:
            report.problems[source.relative] = problem
        fresh = SourceFiles.sections(source.relative, source.path, text)
        if fresh or stats:  # a file with no text and no rows needs no write
            changed.append((source, fresh))
    listed = {source.relative for source in found}
    return changed, [name for name in sections if source_file_of(name) not in listed]


def _refresh_source(
    conn: sqlite3.Connection, writer: PostingsWriter, planned: tuple[SourceFile, list[Memory]],
    sections: dict[str, tuple[str, int, int]], report: RefreshReport,
) -> None:  # fmt: skip
    """One changed source file split again: its sections' rows follow what it holds now."""
    source, fresh = planned
    for memory in fresh:
        seen = sections.get(memory.name)
        if seen is not None and seen[0] == memory.hash:
            conn.execute(
                "UPDATE memories SET mtime_ns = ?, size = ? WHERE name = ?", (source.mtime_ns, source.size, memory.name)
            )
            report.unchanged += 1
            continue
        upsert_memory(conn, writer, memory, source.mtime_ns, source.size)
        (report.added if seen is None else report.updated).append(memory.name)
    kept = {memory.name for memory in fresh}
    for name in sections:
        if source_file_of(name) == source.relative and name not in kept and delete_memory(conn, writer, name):
            report.removed.append(name)


def _refresh_one(
    conn: sqlite3.Connection,
    writer: PostingsWriter,
    store: MemoryStore,
    stat: FileStat,
    seen: tuple[str, int, int] | None,
    report: RefreshReport,
) -> None:
    if stat.size > MAX_FILE_BYTES:
        report.problems[stat.name] = f"file is larger than {MAX_FILE_BYTES} bytes; not indexed"
        return
    try:
        raw = read_regular(stat.path)  # never blocks: a FIFO swapped in since the scan is refused
    except OSError as exc:
        report.problems[stat.name] = f"unreadable: {exc.strerror or exc}"
        return
    from memrouter.store.parse import sha256_hex

    digest = sha256_hex(raw)
    if seen is not None and seen[0] == digest:
        conn.execute("UPDATE memories SET mtime_ns = ?, size = ? WHERE name = ?", (stat.mtime_ns, stat.size, stat.name))
        report.unchanged += 1
        return
    if _stat_of(stat.path) != (stat.mtime_ns, stat.size):
        # Changed again since the scan (another process is writing it): the
        # writer indexes its own version, or the next refresh sees the new stat.
        return
    memory = store.parse_bytes(stat.name, stat.path, raw)
    if memory.problems:
        report.problems[stat.name] = "; ".join(memory.problems)
    upsert_memory(conn, writer, memory, stat.mtime_ns, stat.size)
    (report.added if seen is None else report.updated).append(stat.name)


def _stat_of(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
