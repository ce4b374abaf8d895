"""The short-term channel: one owner's scratchpad, never a file in the repository.

Notes live in ``.memrouter/scratch.sqlite`` (git-ignored with the rest of the
state folder), keyed by owner (an agent, or one MCP session) and name, each
with an expiry (``[scratch] ttl``, 2 hours by default). Expired notes are
collected on every use. Only the owner reads, searches or clears its notes.
Every change is one ``BEGIN IMMEDIATE`` transaction, so any number of
processes may share the file.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrouter.core.errors import InvalidInput
from memrouter.core.model import Hit, Match
from memrouter.core.query import check_filter
from memrouter.index.sqlite.connection import connect, enable_wal, storage_error, transaction
from memrouter.index.text import query_terms, tokens
from memrouter.ops.write_guard import refuse_secrets

__all__ = ["MAX_NOTE_CHARS", "MAX_NOTES", "ScratchNote", "Scratchpad"]

MAX_NOTE_CHARS = 64 * 1024
MAX_NOTES = 500
DEFAULT_TTL = 7200.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (owner, name)
) WITHOUT ROWID
"""


@dataclass(frozen=True, slots=True)
class ScratchNote:
    """One scratchpad note: its owner, name, text, and when it was written and expires (epoch seconds)."""

    owner: str
    name: str
    text: str
    created: float
    expires: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "name": self.name,
            "text": self.text,
            "created": self.created,
            "expires": self.expires,
        }


class Scratchpad:
    """The scratchpads of one project (see the module docstring); ``clock`` gives epoch seconds."""

    def __init__(self, index_dir: Path, *, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.time) -> None:
        index_dir.mkdir(parents=True, exist_ok=True)
        self.path = index_dir / "scratch.sqlite"
        self.ttl = ttl
        self.clock = clock
        self.conn = connect(self.path)
        enable_wal(self.conn)
        with transaction(self.conn):
            self.conn.execute(_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def write(self, owner: str, name: str, text: str, *, ttl: float | None = None) -> ScratchNote:
        """Write (or replace) note ``name`` of ``owner``; it expires ``ttl`` seconds from now."""
        owner, name = _key(owner, "owner"), _key(name, "name")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a scratchpad note must be non-empty text")
        if len(text) > MAX_NOTE_CHARS:
            raise InvalidInput(f"a scratchpad note is at most {MAX_NOTE_CHARS:,} characters (got {len(text):,})")
        if any(0xD800 <= ord(char) <= 0xDFFF for char in text) or "\x00" in text:
            raise InvalidInput("a scratchpad note must be valid Unicode text without NUL characters")
        refuse_secrets(text, f"scratchpad note {name!r}")
        life = self.ttl if ttl is None else ttl
        if isinstance(life, bool) or not isinstance(life, (int, float)) or not 0 < life <= 7 * 86400:
            raise InvalidInput("ttl must be a number of seconds between 0 and 7 days")
        now = self.clock()
        with transaction(self.conn):
            self._collect(now)
            count = self.conn.execute("SELECT count(*) FROM notes WHERE owner = ? AND name != ?", (owner, name))
            if count.fetchone()[0] >= MAX_NOTES:
                raise InvalidInput(f"a scratchpad holds at most {MAX_NOTES} notes; clear some first")
            self.conn.execute(
                "INSERT OR REPLACE INTO notes (owner, name, text, created, expires) VALUES (?, ?, ?, ?, ?)",
                (owner, name, text, now, now + float(life)),
            )
        return ScratchNote(owner, name, text, now, now + float(life))

    def read(self, owner: str, name: str | None = None) -> list[ScratchNote]:
        """``owner``'s live notes (or the one named), oldest first."""
        owner = _key(owner, "owner")
        now = self.clock()
        sql = "SELECT owner, name, text, created, expires FROM notes WHERE owner = ? AND expires > ?"
        params: list[Any] = [owner, now]
        if name is not None:
            sql += " AND name = ?"
            params.append(_key(name, "name"))
        return [ScratchNote(*row) for row in self.conn.execute(sql + " ORDER BY created, name", params)]

    def clear(self, owner: str, name: str | None = None) -> int:
        """Remove ``owner``'s notes (or the one named); returns how many were live."""
        owner = _key(owner, "owner")
        now = self.clock()
        with transaction(self.conn):
            self._collect(now)
            if name is None:
                cursor = self.conn.execute("DELETE FROM notes WHERE owner = ?", (owner,))
            else:
                cursor = self.conn.execute(
                    "DELETE FROM notes WHERE owner = ? AND name = ?", (owner, _key(name, "name"))
                )
        return int(cursor.rowcount)

    def search(self, owner: str, query: str, limit: int) -> list[Hit]:
        """``owner``'s live notes that share a word with ``query``, most shared words first."""

        wanted = set(query_terms(query))
        scored = []
        for note in self.read(owner):
            shared = wanted & set(tokens(f"{note.name} {note.text}"))
            if shared:
                scored.append((len(shared), note))
        scored.sort(key=lambda item: (-item[0], item[1].name))
        return [
            Hit(
                name=f"scratch:{note.name}",
                title=note.name,
                score=float(score),
                source="scratch",
                channel="short_term",
                path=None,
                hash="",
                snippet=" ".join(note.text.split())[:200],
                why=(Match("scratch", rank, float(score)),),
            )  # fmt: skip
            for rank, (score, note) in enumerate(scored[:limit], 1)
        ]

    def expired(self) -> int:
        """How many notes are past their expiry and not yet collected (the janitor reports them)."""
        return int(self.conn.execute("SELECT count(*) FROM notes WHERE expires <= ?", (self.clock(),)).fetchone()[0])

    def collect(self) -> int:
        """Remove every expired note now (any use does it too); returns how many."""
        with transaction(self.conn):
            return int(self.conn.execute("DELETE FROM notes WHERE expires <= ?", (self.clock(),)).rowcount)

    def _collect(self, now: float) -> None:
        self.conn.execute("DELETE FROM notes WHERE expires <= ?", (now,))


def _key(value: object, label: str) -> str:
    return check_filter(label, value, 200)


def open_scratchpad(index_dir: Path, ttl: float, clock: Callable[[], float]) -> Scratchpad:
    """The project's scratchpads (``sqlite3`` errors become ``StorageError``)."""

    try:
        return Scratchpad(index_dir, ttl=ttl, clock=clock)
    except sqlite3.Error as exc:
        raise storage_error(exc, index_dir / "scratch.sqlite") from exc
