"""Dense retrieval: chunk embeddings in the index, searched by cosine similarity.

Each memory is cut into chunks along its markdown structure; each chunk's embedding is stored as a float32 blob
tagged with the embedder's model id and dimension and the hash of the memory it was cut from. A memory needs
embedding when it has no chunks for its current hash and model, so refresh embeds only what changed; vectors of
another model wait for ``memrouter index --reembed``. With ``tokens`` (``[search] rerank``) each chunk's word-piece
vectors are stored too (``token_vectors``). A repository's worktrees share chunk vectors (``shared_vectors``).

For search, the current vectors are gathered once per index generation into one matrix, kept as a memory-mapped
``.npy`` file beside the index, and searched exactly or, above a size threshold, through an HNSW graph. A
memory's dense score is its best chunk; the hit says which chunk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrouter import embed as embedding
from memrouter.core.errors import ConfigError, MemoryRouterError
from memrouter.core.lazylog import LazyLogger
from memrouter.core.model import Filters
from memrouter.embed import batches_by_length, embed
from memrouter.embed.weights import unavailable
from memrouter.index.chunking import chunk_markdown
from memrouter.index.fusion import Ranked
from memrouter.index.sqlite import vectors as vector_search
from memrouter.index.sqlite.connection import transaction
from memrouter.index.sqlite.dense_status import (
    KNOWN_MODEL_IDS,
    DenseStatus,
    Embedded,
    PendingWork,
    chunk_details,
    dense_status,
    file_stem,
    lacking_sql,
    pending_size,
)
from memrouter.index.sqlite.filters import filter_sql
from memrouter.index.sqlite.lexical import Allowed
from memrouter.index.sqlite.shared_vectors import RepositoryVectors
from memrouter.index.sqlite.token_vectors import TokenFilter, pack

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memrouter.embed import Embedder
    from memrouter.index.folders import FolderContext
    from memrouter.index.sqlite.token_vectors import TokenFilter

__all__ = ["DenseIndex", "DenseStatus", "Embedded", "PendingWork"]

log = LazyLogger(__name__)

# Chunks fetched per memory wanted: a memory often has several good chunks.
CHUNKS_PER_MEMORY = 4
Progress = Callable[[int, int], None]


class DenseIndex:
    """Embeds memories into the ``chunks`` table and searches them.

    The embedder is created on first use (loading the model costs time and
    memory); ``model_id`` is known before that, so freshness checks and
    status never load the model.
    """

    def __init__(
        self,
        index_dir: Path | None,
        embedder_name: str = "minilm",
        *,
        model_id: str | None = None,
        hnsw_threshold: int | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
        tokens: bool = False,
        options: dict[str, Any] | None = None,
        shared_from: Path | None = None,
    ) -> None:
        """``tokens``: also keep each chunk's word-piece vectors, for the reranker (``memrouter.index.sqlite.rerank``);
        ``options``: what ``get_embedder(embedder_name, **options)`` is given (an endpoint's url and model);
        ``shared_from``: a folder of a git repository whose worktrees share vectors (None: no sharing)."""
        self.options = dict(options or {})
        self.shared = RepositoryVectors(shared_from)
        # Where the gathered matrix (and HNSW graph) are cached between processes; None: not at all.
        self.index_dir = index_dir
        self.embedder_name = embedder_name
        self._factory = embedder_factory
        self._embedder: Embedder | None = None
        self._model_id = model_id
        self._hnsw_threshold = hnsw_threshold
        self._generation: tuple[str, str, str] | None = None
        self._searcher: Any = None
        self._matrix: Any = None
        self._chunk_ids: Any = None
        self._chunk_memory: Any = None
        self.tokens = tokens
        self._token_filter: TokenFilter | None = None
        # the last query with tokens on: (query, its vector, its kept word pieces' vectors)
        self._query_tokens: tuple[str, NDArray[np.float32], NDArray[np.float32]] | None = None
        self._memory_rows: Any = None  # (chunk rows ordered by memory, their memory ids), per generation
        # (the passing ids' set, the ids out of effect, the mask of the rows they allow), per generation: the
        # filters' cache (``LexicalIndex.allowed``) hands the same set to every search until the index changes
        self._allowed: tuple[set[int], set[int], Any] | None = None
        self._last_query: tuple[str, NDArray[np.float32]] | None = None  # the last query embedded, and its vector

    # -- the model ---------------------------------------------------------
    @property
    def loaded(self) -> bool:  # the embedder was made already (``embedder`` makes it)
        return self._embedder is not None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            if self._factory is not None:
                self._embedder = self._factory()
            else:
                self._embedder = embedding.get_embedder(self.embedder_name, **self.options)  # a plugin may come late
            self._model_id = self._embedder.model_id
        return self._embedder

    def problem(self) -> str | None:
        """Why the embedder cannot load, found without loading it (``embed.weights.unavailable``); None once made."""
        if self._embedder is not None or self._factory is not None:
            return None
        return unavailable(self.embedder_name)

    @property
    def model_id(self) -> str:
        """The id vectors are tagged with (known without loading the model when possible)."""
        if self._model_id is None:
            self._model_id = KNOWN_MODEL_IDS.get(self.embedder_name) or self.embedder.model_id
        return self._model_id

    # -- token vectors (the reranker) --------------------------------------
    def _token_embedder(self) -> Any:
        """The embedder, when it can give token vectors (the MiniLM runtimes); else ``ConfigError``."""
        embedder = self.embedder
        if not callable(getattr(embedder, "embed_with_tokens", None)):
            raise ConfigError(
                f"[search] rerank needs token vectors, which the {self.embedder_name!r} embedder does not give; "
                "use a minilm model or turn rerank off"
            )
        return embedder

    @property
    def token_filter(self) -> TokenFilter:
        """Which word pieces count in late interaction (built from the model's vocabulary once)."""
        if self._token_filter is None:
            self._token_filter = TokenFilter.of(self._token_embedder().vocabulary())
        return self._token_filter

    def query_tokens(self, query: str) -> NDArray[np.float32]:
        """The query's kept word-piece vectors (from the pass that embedded it for search, when it did)."""
        if not self.tokens:
            raise ConfigError("token vectors are off: turn [search] rerank on to rerank")
        if self._query_tokens is None or self._query_tokens[0] != query:
            self.embed_query(query)
        assert self._query_tokens is not None  # embed_query keeps them while tokens are on
        return self._query_tokens[2]

    def best_chunks(
        self, conn: sqlite3.Connection, query: str, memory_ids: list[int], per_memory: int
    ) -> dict[int, list[int]]:
        """Each memory's ``per_memory`` chunks most similar to ``query`` (chunk ids; exact, from the matrix)."""
        import numpy as np

        self._load(conn)
        if self._matrix is None or not len(self._matrix):
            return {}
        vector = self._query_vector(query)
        result: dict[int, list[int]] = {}
        for memory_id, rows in zip(memory_ids, self._rows_of(memory_ids), strict=True):
            if len(rows) > per_memory:
                rows = rows[np.argsort(-(self._matrix[rows] @ vector), kind="stable")[:per_memory]]
            if len(rows):
                result[memory_id] = [int(chunk) for chunk in self._chunk_ids[rows]]
        return result

    def similarities(
        self, conn: sqlite3.Connection, query: str, memory_ids: list[int], folders: FolderContext | None = None
    ) -> dict[int, float]:
        """Each memory's best-chunk similarity to ``query``, exact, with what ``folders`` lend as in ``search``
        (memories without chunks are left out)."""
        self._load(conn)
        if self._matrix is None or not len(self._matrix):
            return {}
        vector = self._query_vector(query)
        best = {
            memory_id: float((self._matrix[rows] @ vector).max())
            for memory_id, rows in zip(memory_ids, self._rows_of(memory_ids), strict=True)
            if len(rows)
        }
        return folders.lend_similarity(best, lambda m: self._similarity(vector, m)) if folders else best

    def _query_vector(self, query: str) -> NDArray[np.float32]:
        """``query``'s vector: the one the last search embedded when it was this query, else a new one."""
        known = self._query_tokens or self._last_query
        return known[1] if known is not None and known[0] == query else self.embed_query(query)

    # -- state -------------------------------------------------------------
    def has_vectors(self, conn: sqlite3.Connection) -> bool:
        """True once any memory has chunks for the current model."""
        row = conn.execute("SELECT 1 FROM chunks WHERE model = ? LIMIT 1", (self.model_id,)).fetchone()
        return row is not None

    def pending(
        self, conn: sqlite3.Connection, limit: int | None = None, *, names: list[str] | None = None
    ) -> list[sqlite3.Row]:
        """Memories with no chunks for their current hash and the current model (the first ``limit``; only
        ``names`` when given); with ``tokens`` on, also those with a chunk lacking token vectors."""
        only = f" AND m.name IN ({', '.join(f':n{i}' for i in range(len(names)))})" if names else ""
        wanted = {f"n{i}": name for i, name in enumerate(names or ())}
        return conn.execute(
            f"SELECT m.id, m.name, m.title, m.hash, m.body FROM memories m WHERE {lacking_sql(self.tokens)}{only} "
            "ORDER BY m.id LIMIT :limit",
            {"model": self.model_id, "limit": -1 if limit is None else limit, **wanted},
        ).fetchall()

    def pending_size(self, conn: sqlite3.Connection) -> tuple[int, int]:
        return pending_size(conn, self.model_id, self.tokens)  # how many ``pending`` returns, and their characters

    def status(self, conn: sqlite3.Connection) -> DenseStatus:
        return dense_status(conn, self.model_id, self.tokens)

    # -- writing -----------------------------------------------------------
    def embed_pending(
        self, conn: sqlite3.Connection, *, progress: Progress | None = None, reembed: bool = False
    ) -> int:
        """Embed every memory whose chunks are missing or stale; returns how many.

        ``reembed`` first drops vectors of other models (and, with the same
        model, nothing: unchanged memories are never embedded twice).
        """
        if reembed:
            with transaction(conn):
                conn.execute("DELETE FROM chunks WHERE model != ?", (self.model_id,))
        work = self.plan(conn)
        if work is None:
            return 0
        self.store(conn, work, self.compute(work, progress=progress))
        return len(work.memories)

    def plan(
        self, conn: sqlite3.Connection, limit: int | None = None, *, names: list[str] | None = None
    ) -> PendingWork | None:
        """The chunks of (at most ``limit``) memories lacking vectors (only ``names`` when given); ``None`` when
        none does.

        ``plan``, ``compute`` and ``store`` are ``embed_pending`` in three steps, so
        a caller may compute (the slow step, which needs no connection) without
        holding the index (``memrouter.index.sqlite.background``).
        """
        todo = self.pending(conn, limit, names=names)  # a batch reads only its own bodies
        if not todo:
            return None

        embedder = self.embedder
        pieces: list[tuple[int, str, int, Any]] = []  # (memory id, hash, ordinal, chunk)
        for row in todo:
            chunks = chunk_markdown(
                row["body"] or row["title"],
                embedder.count_tokens,
                max_tokens=embedder.max_tokens,
                context_prefix=row["title"],
            )
            pieces.extend((row["id"], row["hash"], ordinal, chunk) for ordinal, chunk in enumerate(chunks))
        return PendingWork(tuple((row["id"], row["hash"]) for row in todo), tuple(pieces))

    def compute(self, work: PendingWork, *, progress: Progress | None = None) -> Embedded | None:
        """The vectors of ``work``'s chunks, in order (``None`` when it has none), and their token
        vectors when ``tokens`` is on; no index access."""
        texts = [chunk.embed_text for _, _, _, chunk in work.pieces]
        if not texts:
            return None
        if not self.tokens:
            return Embedded(self.shared.embed(self.model_id, self.embedder, texts, progress))
        import numpy as np

        vectors = np.empty((len(texts), self.embedder.dimension), dtype=np.float32)
        packed = [b""] * len(texts)
        for batch in batches_by_length(texts, 32, progress):
            found, pieces = self._token_embedder().embed_with_tokens([texts[i] for i in batch])
            vectors[np.asarray(batch)] = found
            for i, (ids, rows) in zip(batch, pieces, strict=True):
                packed[i] = pack(rows[self.token_filter.kept(ids)])
        return Embedded(vectors, packed)

    def store(self, conn: sqlite3.Connection, work: PendingWork, embedded: Embedded | None) -> int:
        """Write ``work``'s vectors for the memories still at the hash they were chunked from; how many."""
        vectors = embedded.vectors if embedded is not None else None
        tokens = embedded.tokens if embedded is not None else None
        with transaction(conn):
            # Only memories whose row still has the hash that was embedded: another
            # process may have changed one meanwhile (it embeds its own version).
            ids = [memory_id for memory_id, _ in work.memories]
            current = (
                {row[0]: row[1] for row in conn.execute(f"SELECT id, hash FROM memories WHERE id IN ({', '.join('?' * len(ids))})", ids)}
                if len(ids) < 30000
                else {row[0]: row[1] for row in conn.execute("SELECT id, hash FROM memories")}
            )  # fmt: skip
            keep = {memory_id for memory_id, digest in work.memories if current.get(memory_id) == digest}
            conn.executemany(
                "DELETE FROM chunks WHERE memory_id = ? AND model = ?", [(mid, self.model_id) for mid in keep]
            )
            dimension = self.embedder.dimension
            kept = [(i, piece) for i, piece in enumerate(work.pieces) if piece[0] in keep]
            last = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
            conn.executemany(
                "INSERT INTO chunks (memory_id, memory_hash, ordinal, start, end, heading, model, dimension, vector) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (mid, digest, ordinal, chunk.start, chunk.end, chunk.heading, self.model_id,
                     dimension, vectors[i].tobytes())  # type: ignore[index]
                    for i, (mid, digest, ordinal, chunk) in kept
                ],
            )  # fmt: skip
            if tokens is not None and kept:  # the rows just inserted are those after the last one before
                inserted = {
                    (mid, ordinal): chunk_id
                    for chunk_id, mid, ordinal in conn.execute(
                        "SELECT id, memory_id, ordinal FROM chunks WHERE id > ?", (last,)
                    )
                }
                conn.executemany(
                    "INSERT INTO chunk_tokens (chunk_id, tokens) VALUES (?, ?)",
                    [(inserted[mid, ordinal], tokens[i]) for i, (mid, _, ordinal, _) in kept],
                )
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('dense_generation', '1') ON CONFLICT(key) DO UPDATE "
                "SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
            )
        return len(keep)

    # -- searching ---------------------------------------------------------
    def generations(self, conn: sqlite3.Connection) -> tuple[str, str, str]:
        """(epoch, index generation, dense generation): changes whenever a memory or its vectors do."""
        return self._generation_of(conn)

    def _generation_of(self, conn: sqlite3.Connection) -> tuple[str, str, str]:
        rows = dict(
            conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'dense_generation', 'epoch')")
        )
        return rows.get("epoch", "0"), rows.get("generation", "0"), rows.get("dense_generation", "0")

    def _load(self, conn: sqlite3.Connection) -> None:
        """Gather the current vectors into one searchable matrix (once per generation)."""
        generation = self._generation_of(conn)
        if generation == self._generation and self._searcher is not None:
            return
        import numpy as np

        stem = f"dense-{file_stem(self.model_id)}-{generation[0]}-{generation[1]}-{generation[2]}"
        cache = self.index_dir
        matrix_path = cache / f"{stem}.npy" if cache is not None else None
        ids_path = cache / f"{stem}.ids.npy" if cache is not None else None
        matrix = chunk_ids = None
        if matrix_path is not None and ids_path is not None and matrix_path.is_file() and ids_path.is_file():
            try:
                matrix = vector_search.load_matrix(matrix_path)
                chunk_ids = np.load(ids_path, allow_pickle=False)
            except (OSError, ValueError, MemoryRouterError) as exc:  # a bad cache file is rebuilt below
                log.info("dense cache %s unusable (%s); rebuilding", matrix_path.name, exc)
                matrix = chunk_ids = None
        if matrix is None or chunk_ids is None or len(chunk_ids) != len(matrix):
            rows = conn.execute(
                "SELECT c.id, c.vector FROM chunks c JOIN memories m ON m.id = c.memory_id AND m.hash = c.memory_hash "
                "WHERE c.model = ? ORDER BY c.id",
                (self.model_id,),
            ).fetchall()
            dimension = self.embedder.dimension if not rows else len(rows[0][1]) // 4
            matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), dimension)
            chunk_ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            if cache is not None and matrix_path is not None and ids_path is not None:
                try:
                    for old in cache.glob(f"dense-{file_stem(self.model_id)}-*.npy"):
                        old.unlink(missing_ok=True)
                    # The ids first: a reader that finds the matrix finds its ids too.
                    vector_search.save_array(ids_path, chunk_ids)
                    vector_search.save_matrix(matrix_path, matrix)
                except OSError as exc:  # a read-only cache folder only costs speed
                    log.info("cannot cache dense matrix in %s: %s", cache, exc)
        memory_of = dict(conn.execute("SELECT id, memory_id FROM chunks WHERE model = ?", (self.model_id,)))
        self._matrix = matrix
        self._chunk_ids = chunk_ids
        self._chunk_memory = np.fromiter(
            (memory_of.get(int(c), -1) for c in chunk_ids), dtype=np.int64, count=len(chunk_ids)
        )
        options = {} if self._hnsw_threshold is None else {"hnsw_threshold": self._hnsw_threshold}
        hnsw_path = cache / f"{stem}.hnsw" if cache is not None else None
        self._searcher = vector_search.open_searcher(matrix, hnsw_path=hnsw_path, **options)
        self._memory_rows = None
        self._allowed = None
        self._generation = generation

    def embed_query(self, query: str) -> NDArray[np.float32]:
        """The query's vector; with ``tokens`` on, its word-piece vectors too, from the same pass (``query_tokens``)."""
        if self.tokens:
            vectors, pieces = self._token_embedder().embed_with_tokens([query])
            ids, rows = pieces[0]
            kept = self.token_filter.kept(ids)
            vector: NDArray[np.float32] = vectors[0]
            self._query_tokens = (query, vector, rows[kept] if kept.any() else rows)
            return vector

        vector = embed(self.embedder, query)
        self._last_query = (query, vector)  # what relevance and the second stage ask next: the same query
        return vector

    def search(
        self,
        conn: sqlite3.Connection,
        query: str,
        filters: Filters,
        limit: int = 50,
        *,
        passing: Allowed | None = None,
        folders: FolderContext | None = None,
    ) -> list[Ranked]:
        """The ``limit`` memories whose best chunk is most similar to ``query``.

        ``passing`` (``LexicalIndex.allowed``) gives the ids passing the filters, from its cache;
        ``folders`` (``LexicalIndex.folders``) what folder overviews lend.
        """
        import numpy as np

        self._load(conn)
        if self._searcher is None or self._searcher.size == 0:
            return []
        vector = self.embed_query(query)
        allowed = None
        if filters.restricts:
            if passing is not None:
                allowed = self._allowed_rows(*passing(conn, filters))
            else:
                where, params = filter_sql(filters)
                ids = np.fromiter(
                    (r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE 1{where}", params)), dtype=np.int64
                )
                allowed = np.isin(self._chunk_memory, ids)
            if not allowed.any():
                return []
        rows, scores = self._searcher.top_k(vector, min(self._searcher.size, limit * CHUNKS_PER_MEMORY), allowed)
        best: dict[int, tuple[float, int]] = {}
        for row, score in zip(rows.tolist(), scores.tolist(), strict=False):
            memory_id = int(self._chunk_memory[row])
            if memory_id >= 0 and memory_id not in best:
                best[memory_id] = (score, int(self._chunk_ids[row]))
        if folders:  # folders are context (memrouter.index.folders): siblings borrow their overview's
            lent = folders.lend_similarity(
                {m: score for m, (score, _) in best.items()}, lambda m: self._similarity(vector, m)
            )
            best = {m: (lent[m], chunk) for m, (_, chunk) in best.items()}
        ranked = sorted(best.items(), key=lambda item: -item[1][0])[:limit]
        details = chunk_details(conn, [chunk for _, (_, chunk) in ranked])
        return [Ranked(mid, round(score, 6), *details.get(chunk, (None, None))) for mid, (score, chunk) in ranked]

    def _allowed_rows(self, passing: set[int], timed_out: set[int]) -> NDArray[np.bool_]:
        """The mask of the rows whose memory is in ``passing`` and not in ``timed_out``, kept while the same
        ``passing`` set comes back with the same ``timed_out``."""
        import numpy as np

        cached = self._allowed
        if cached is not None and cached[0] is passing and cached[1] == timed_out:
            mask: NDArray[np.bool_] = cached[2]
            return mask
        kept = passing - timed_out
        ids = np.fromiter(kept, dtype=np.int64, count=len(kept))
        mask = np.isin(self._chunk_memory, ids)
        self._allowed = (passing, set(timed_out), mask)
        return mask

    def _similarity(self, vector: NDArray[np.float32], memory_id: int) -> float:
        """The similarity of ``memory_id``'s best chunk to the query ``vector`` (exact; -1 without chunks)."""
        (rows,) = self._rows_of([memory_id])
        return float((self._matrix[rows] @ vector).max()) if len(rows) else -1.0

    def _rows_of(self, memory_ids: list[int]) -> list[NDArray[np.int64]]:
        """Each memory's rows in the loaded matrix (from an index by memory, made once per generation)."""
        import numpy as np

        if self._memory_rows is None:
            order = np.argsort(self._chunk_memory, kind="stable")
            self._memory_rows = (order, self._chunk_memory[order])
        order, owners = self._memory_rows
        wanted = np.asarray(memory_ids, dtype=np.int64)
        begins, ends = np.searchsorted(owners, wanted, "left"), np.searchsorted(owners, wanted, "right")
        return [order[begin:end] for begin, end in zip(begins.tolist(), ends.tolist(), strict=True)]

    def measure_recall(self, conn: sqlite3.Connection, *, k: int = 10, samples: int = 200) -> dict[str, Any]:
        """Recall@k of the HNSW graph against exact search over this index's vectors
        (``vectors.measure_graph_recall``)."""

        self._load(conn)
        return vector_search.measure_graph_recall(self._matrix, k=k, samples=samples, threshold=self._hnsw_threshold)
