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
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrouter.core.lazylog import LazyLogger
from memrouter.embed import embed_many
from memrouter.index.sqlite.connection import connect, enable_wal, transaction

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memrouter.embed import Embedder

log = LazyLogger(__name__)

# The file's name in the repository's shared folder (``memrouter.repo.common.shared_folder``).
SHARED_FILE = "vectors.sqlite"
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


class RepositoryVectors:
    """The shared vector file of the git repository holding ``top`` (found on first use: one git call), for
    the dense index: each batch opens it, reads what is there and adds what it embedded. With ``top`` None
    (or outside a repository, or an unusable file) every text is embedded."""

    def __init__(self, top: Path | None) -> None:
        self.top = top
        self._path: Path | None | bool = False  # False: not looked up yet; None: no repository

    def _open(self) -> SharedVectors | None:
        if self._path is False:
            from memrouter.repo.common import shared_folder  # git, only once something is embedded

            folder = shared_folder(self.top) if self.top is not None else None
            self._path = folder / SHARED_FILE if folder is not None else None
        if not isinstance(self._path, Path):
            return None
        try:
            return SharedVectors(self._path)
        except (OSError, sqlite3.Error) as exc:  # sharing saves time; without it this index embeds its own
            log.info("shared vectors %s unusable (%s); embedding without them", self._path, exc)
            return None

    def embed(
        self, model: str, embedder: Embedder, texts: list[str], progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        """The vectors of ``texts`` under ``model`` (one row each): those in the file read, the others embedded
        by ``embedder`` (``progress`` counts those) and added."""
        import numpy as np

        def made(some: list[str]) -> NDArray[np.float32]:
            return embed_many(embedder, some, batch_size=32, progress=progress)

        shared = self._open()
        if shared is None:
            return made(texts)
        dimension = embedder.dimension
        try:
            blobs = shared.embed(model, dimension, texts, lambda some: [row.tobytes() for row in made(some)])
        except sqlite3.Error as exc:  # a damaged shared file costs this batch its reuse, never its vectors
            log.warning("shared vectors %s: %s; embedding without them", self._path, exc)
            return made(texts)
        finally:
            shared.close()
        return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(texts), dimension)
