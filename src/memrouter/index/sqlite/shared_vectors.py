"""Vectors shared by the worktrees of one repository, keyed by what was embedded.

Worktrees of one repository hold mostly the same memories. A chunk's vector
depends only on the model and the text embedded, so ``SharedVectors`` keeps
them in one SQLite file keyed by (model, SHA-256 of the text): a chunk another
worktree already embedded is read, not embedded again. Each worktree keeps its
own index (which files it has); only derived vectors are shared.

The file follows the index's multi-process rules: WAL, every write one
``BEGIN IMMEDIATE`` with bounded retries (``connection.transaction``), and
``INSERT OR IGNORE``, so writers racing on the same chunk keep one vector and
lose nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

from memrouter.index.sqlite.connection import connect, enable_wal, transaction

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors ("
    " model TEXT NOT NULL, text_hash TEXT NOT NULL, dimension INTEGER NOT NULL, vector BLOB NOT NULL,"
    " PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
)


def text_hash(text: str) -> str:
    """The key of an embedded text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SharedVectors:
    """One repository's shared vector file (``path``), opened on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect(path)
        enable_wal(self._conn)
        with transaction(self._conn):
            self._conn.execute(SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def lookup(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors (float32 bytes) of ``hashes`` under ``model``; missing ones are absent."""
        found: dict[str, bytes] = {}
        wanted = list(dict.fromkeys(hashes))
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            rows = self._conn.execute(
                f"SELECT text_hash, vector FROM vectors WHERE model = ? AND text_hash IN ({', '.join('?' * len(part))})",
                [model, *part],
            )
            found.update((row[0], bytes(row[1])) for row in rows)
        return found

    def put(self, model: str, dimension: int, vectors: dict[str, bytes]) -> None:
        """Store ``vectors`` (text hash -> float32 bytes); a vector already stored is kept."""
        if not vectors:
            return
        with transaction(self._conn):
            self._conn.executemany(
                "INSERT OR IGNORE INTO vectors (model, text_hash, dimension, vector) VALUES (?, ?, ?, ?)",
                [(model, digest, dimension, blob) for digest, blob in vectors.items()],
            )

    def embed(
        self, model: str, dimension: int, texts: Sequence[str], embed_missing: Callable[[list[str]], list[bytes]]
    ) -> list[bytes]:
        """The vectors of ``texts`` in order: stored ones read, the others made by ``embed_missing`` (one call
        with each missing text once) and stored."""
        hashes = [text_hash(text) for text in texts]
        found = self.lookup(model, hashes)
        missing = {digest: text for digest, text in zip(hashes, texts, strict=True) if digest not in found}
        if missing:
            made = embed_missing(list(missing.values()))
            fresh = dict(zip(missing, made, strict=True))
            self.put(model, dimension, fresh)
            found.update(fresh)
        return [found[digest] for digest in hashes]
