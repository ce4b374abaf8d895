"""Vectors shared by the worktrees of one repository, keyed by what was embedded, each embedded once.

Worktrees of one repository hold mostly the same memories. A chunk's vector
depends only on the model and the text embedded, so ``SharedVectors`` keeps
them in one SQLite file keyed by (model, SHA-256 of the text): a chunk another
worktree already embedded is read, not embedded again. Each worktree keeps its
own index (which files it has); only derived vectors are shared.

Two processes that miss the same text at once would both embed it, so a text
is claimed first: in one ``BEGIN IMMEDIATE`` a process reads which of its
missing texts gained a vector meanwhile, and takes a claim row (its host, pid,
a token of its own and the time) on a batch of the others that nobody holds.
It embeds that batch, stores its vectors and drops its claims in one
transaction, then claims the next batch, so processes missing the same texts
share the work. When every text it still lacks is held by others it waits,
polling with a growing pause, and takes over a claim that went stale: its
owner's process is gone (same host), or it is older than ``claim_stale``
seconds. A process whose embedding fails drops its claims.
After ``wait_limit`` seconds of waiting a process embeds what is still
missing itself: sharing saves time, it never holds an index back for long.

The file follows the index's multi-process rules: WAL, every write one
``BEGIN IMMEDIATE`` with bounded retries (``connection.transaction``), and
``INSERT OR IGNORE``, so writers racing on the same chunk keep one vector and
lose nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrouter.core.lazylog import LazyLogger
from memrouter.core.processes import process_alive
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
# A text being embedded by one process: the others wait for its vector instead of embedding it too.
CLAIMS = (
    "CREATE TABLE IF NOT EXISTS claims ("
    " model TEXT NOT NULL, text_hash TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, token TEXT NOT NULL,"
    " claimed_at REAL NOT NULL, PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
)
CLAIM_STALE = 600.0  # seconds after which a claim is taken over even if its process still runs
WAIT_LIMIT = 600.0  # seconds a process waits for vectors others embed before it embeds them itself
KEPT_OPEN = 2  # connections to the file kept between batches (a foreground and a background batch)
CLAIM_BATCH = 256  # texts a process claims, embeds and stores at a time
FIRST_PAUSE, LONGEST_PAUSE = 0.02, 0.5  # the poll's pause, growing by half each time


def text_hash(text: str) -> str:
    """The key of an embedded text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _parts(items: Sequence[str]) -> list[list[str]]:
    keys = list(items)
    return [keys[start : start + 500] for start in range(0, len(keys), 500)]


class SharedVectors:
    """One repository's shared vector file (``path``), opened on first use. ``claim_stale`` and ``wait_limit``:
    see the module docstring."""

    def __init__(self, path: Path, *, claim_stale: float = CLAIM_STALE, wait_limit: float = WAIT_LIMIT) -> None:
        self.path = path
        self.claim_stale = claim_stale
        self.wait_limit = wait_limit
        self.host = os.uname().nodename
        self.token = os.urandom(8).hex()
        self.waits = 0  # how many times this object paused for texts another process was embedding
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect(path)
        enable_wal(self._conn)
        with transaction(self._conn):
            self._conn.execute(SCHEMA)
            self._conn.execute(CLAIMS)

    def close(self) -> None:
        self._conn.close()

    def lookup(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors (float32 bytes) of ``hashes`` under ``model``; missing ones are absent."""
        found: dict[str, bytes] = {}
        for part in _parts(list(dict.fromkeys(hashes))):
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
            self._store(model, dimension, vectors)

    def _store(self, model: str, dimension: int, vectors: dict[str, bytes]) -> None:
        self._conn.executemany(
            "INSERT OR IGNORE INTO vectors (model, text_hash, dimension, vector) VALUES (?, ?, ?, ?)",
            [(model, digest, dimension, blob) for digest, blob in vectors.items()],
        )

    def embed(
        self, model: str, dimension: int, texts: Sequence[str], embed_missing: Callable[[list[str]], list[bytes]]
    ) -> list[bytes]:
        """The vectors of ``texts`` in order: stored ones read, the others made by ``embed_missing`` (each missing
        text once, in batches) and stored, unless another process is embedding them: then its vectors are waited
        for (see the module docstring)."""
        hashes = [text_hash(text) for text in texts]
        found = self.lookup(model, hashes)
        missing = {digest: text for digest, text in zip(hashes, texts, strict=True) if digest not in found}
        deadline = time.monotonic() + self.wait_limit
        pause = FIRST_PAUSE
        while missing:
            arrived, mine = self._claim(model, missing)
            found.update(arrived)
            if mine:
                found.update(self._embed_claimed(model, dimension, {d: missing[d] for d in mine}, embed_missing))
            for digest in (*arrived, *mine):
                del missing[digest]
            if not missing or mine:
                continue  # what others hold may be stored already: look again before pausing
            if time.monotonic() >= deadline:
                log.warning("waited %.0f s for %d vectors others are embedding; embedding them here",
                            self.wait_limit, len(missing))  # fmt: skip
                made = dict(zip(missing, embed_missing(list(missing.values())), strict=True))
                self.put(model, dimension, made)
                found.update(made)
                break
            self.waits += 1
            time.sleep(pause)
            pause = min(pause * 1.5, LONGEST_PAUSE)
        return [found[digest] for digest in hashes]

    def _claim(self, model: str, missing: dict[str, str]) -> tuple[dict[str, bytes], list[str]]:
        """In one transaction: the vectors of ``missing`` stored meanwhile, and up to ``CLAIM_BATCH`` others this
        object now claims (none held them, or their claim was stale); the rest another process is embedding or
        this one claims next."""
        now = time.time()
        arrived: dict[str, bytes] = {}
        held: dict[str, tuple[str, int, float]] = {}
        with transaction(self._conn):
            for part in _parts(list(missing)):
                marks = ", ".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_hash, vector FROM vectors WHERE model = ? AND text_hash IN ({marks})", [model, *part]
                )
                arrived.update((row[0], bytes(row[1])) for row in rows)
                rows = self._conn.execute(
                    f"SELECT text_hash, host, pid, claimed_at, token FROM claims WHERE model = ? AND text_hash IN ({marks})",
                    [model, *part],
                )
                held.update((row[0], (row[1], row[2], row[3])) for row in rows if row[4] != self.token)
            free = (digest for digest in missing if digest not in arrived and not self._live(held.get(digest), now))
            mine = list(itertools.islice(free, CLAIM_BATCH))  # a batch at a time: processes share the work
            self._conn.executemany(
                "INSERT OR REPLACE INTO claims (model, text_hash, host, pid, token, claimed_at) VALUES (?, ?, ?, ?, ?, ?)",
                [(model, digest, self.host, os.getpid(), self.token, now) for digest in mine],
            )
        return arrived, mine

    def _live(self, claim: tuple[str, int, float] | None, now: float) -> bool:
        """Whether a claim (host, pid, time) holds: younger than ``claim_stale``, by a process that runs if it is
        on this host."""
        if claim is None:
            return False
        host, pid, claimed_at = claim
        return now - claimed_at < self.claim_stale and (host != self.host or process_alive(pid))

    def _embed_claimed(
        self, model: str, dimension: int, claimed: dict[str, str], embed_missing: Callable[[list[str]], list[bytes]]
    ) -> dict[str, bytes]:
        """Embed the texts this object claimed, store their vectors and drop their claims in one transaction; on a
        failure the claims are dropped, so nobody waits for them."""
        try:
            made = dict(zip(claimed, embed_missing(list(claimed.values())), strict=True))
            with transaction(self._conn):
                self._store(model, dimension, made)
                self._release(model, list(claimed))
        except BaseException:
            try:
                with transaction(self._conn):
                    self._release(model, list(claimed))
            except sqlite3.Error as exc:  # the claims go stale instead; the error being raised says more
                log.info("could not drop the claims of %s: %s", self.path, exc)
            raise
        return made

    def _release(self, model: str, digests: list[str]) -> None:
        for part in _parts(digests):
            self._conn.execute(
                f"DELETE FROM claims WHERE model = ? AND token = ? AND text_hash IN ({', '.join('?' * len(part))})",
                [model, self.token, *part],
            )


class RepositoryVectors:
    """The shared vector file of the git repository holding ``top`` (found on first use: one git call), for
    the dense index: each batch reads what is there and adds what it embedded. The file stays open between
    batches (opening it takes a write transaction); a batch running while another holds it opens its own, and
    ``close`` (with the index) closes them. With ``top`` None (or outside a repository, or an unusable file)
    every text is embedded."""

    def __init__(self, top: Path | None) -> None:
        self.top = top
        self._path: Path | None | bool = False  # False: not looked up yet; None: no repository
        self._lock = threading.Lock()
        self._idle: list[SharedVectors] = []
        self._pid = os.getpid()

    def _open(self) -> SharedVectors | None:
        with self._lock:
            if self._pid != os.getpid():  # a forked child never uses its parent's connections
                self._idle, self._pid = [], os.getpid()
            if self._idle:
                return self._idle.pop()
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

    def _done(self, shared: SharedVectors, usable: bool) -> None:
        with self._lock:
            if usable and self._pid == os.getpid() and len(self._idle) < KEPT_OPEN:
                self._idle.append(shared)
                return
        shared.close()

    def close(self) -> None:
        """Close the file's connections kept between batches."""
        with self._lock:
            idle, self._idle = self._idle, []
        for shared in idle:
            shared.close()

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
        usable = False
        try:
            blobs = shared.embed(model, dimension, texts, lambda some: [row.tobytes() for row in made(some)])
            usable = True
        except sqlite3.Error as exc:  # a damaged shared file costs this batch its reuse, never its vectors
            log.warning("shared vectors %s: %s; embedding without them", self._path, exc)
            return made(texts)
        finally:
            self._done(shared, usable)
        return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(texts), dimension)
