"""Nearest-neighbour search over unit-length float32 vectors (cosine = dot product).

Two searchers share one method, ``top_k(query, k, allowed_rows=None) ->
(rows, scores)``, best first:

* ``ExactSearch``: one matrix-vector product over the whole matrix (an array
  or a read-only memory map of a ``.npy`` file). Exact, no build step; it
  reads the whole matrix per query, so its cost grows with it (about 12 ms
  p50 for 100k x 384 rows on two cores: benchmarks/bench_vectors.py).
* ``HnswSearch``: an approximate HNSW graph (``usearch``), for large sets.
  Build it once, save it next to the matrix, and check its quality with
  ``recall_at_k`` against the exact search.

``open_searcher(vectors, hnsw_threshold=...)`` picks: exact below the
threshold (default 100k rows, or when usearch is missing), HNSW at or above
it. Building the graph is the costly part (minutes for 100k rows on two
cores), so pass ``hnsw_path`` to keep it next to the matrix.

Rows are positions in the matrix; the caller maps them to chunk ids.
``to_blob``/``from_blobs`` convert vectors to and from the little-endian
float32 blobs the SQLite index stores, and ``save_matrix``/``load_matrix``
keep a matrix in a ``.npy`` file that is memory-mapped on open.
``allowed_rows`` restricts a search to some rows (a boolean mask of length
``n`` or an array of row numbers), e.g. the chunks of memories that pass the
filters, so a filter never empties the result while matches exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memrouter.core.errors import IndexCorrupt, InvalidInput, NotFound, NotInstalled

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "VectorSearcher",
    "ExactSearch",
    "HnswSearch",
    "open_searcher",
    "measure_graph_recall",
    "recall_at_k",
    "save_matrix",
    "load_matrix",
    "to_blob",
    "from_blobs",
    "DEFAULT_HNSW_THRESHOLD",
]

DEFAULT_HNSW_THRESHOLD = 100_000
USEARCH_HINT = "pip install usearch"


class VectorSearcher(Protocol):
    """What dense retrieval needs: the best rows for a query vector."""

    @property
    def size(self) -> int:
        """Number of rows searched."""
        ...

    def top_k(
        self, query: NDArray[np.float32], k: int, allowed_rows: NDArray[Any] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Return up to ``k`` (rows, scores), highest score first."""
        ...


def _as_float32_matrix(vectors: Any) -> NDArray[np.float32]:
    import numpy as np

    matrix = np.asarray(vectors)
    if matrix.ndim != 2:
        raise InvalidInput(f"vectors must be a 2-d matrix, got shape {matrix.shape}")
    if matrix.dtype != np.float32:
        matrix = matrix.astype(np.float32)
    return matrix


def _allowed_indices(allowed_rows: NDArray[Any], n: int) -> NDArray[np.int64]:
    """Normalise a boolean mask or an array of row numbers to sorted unique rows."""
    import numpy as np

    allowed = np.asarray(allowed_rows)
    if allowed.dtype == np.bool_:
        if allowed.shape != (n,):
            raise InvalidInput(f"allowed_rows mask has shape {allowed.shape}, expected ({n},)")
        return np.flatnonzero(allowed).astype(np.int64)
    rows = np.unique(allowed.astype(np.int64, copy=False).reshape(-1))
    if rows.size and (rows[0] < 0 or rows[-1] >= n):
        raise InvalidInput(f"allowed_rows holds a row outside [0, {n})")
    return rows


def _best(scores: NDArray[np.float32], k: int) -> NDArray[np.int64]:
    """Positions of the k highest scores, best first (ties by position)."""
    import numpy as np

    if k >= scores.size:
        return np.argsort(-scores, kind="stable").astype(np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    order = np.lexsort((part, -scores[part]))
    result: NDArray[np.int64] = part[order].astype(np.int64)
    return result


def _check_query(query: Any, dimension: int, k: int) -> NDArray[np.float32]:
    import numpy as np

    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    if vector.shape != (dimension,):
        raise InvalidInput(f"query has {vector.size} dimensions, the vectors have {dimension}")
    if k < 1:
        raise InvalidInput(f"k must be >= 1, got {k}")
    return vector


class ExactSearch:
    """Exact top-k by one matrix product over an (n, d) float32 matrix or memmap."""

    def __init__(self, vectors: Any) -> None:
        self.vectors = _as_float32_matrix(vectors)

    @property
    def size(self) -> int:
        """Number of rows."""
        return int(self.vectors.shape[0])

    @property
    def dimension(self) -> int:
        """Vector length."""
        return int(self.vectors.shape[1])

    def top_k(
        self, query: NDArray[np.float32], k: int, allowed_rows: NDArray[Any] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Best ``k`` rows by dot product, optionally only among ``allowed_rows``."""
        import numpy as np

        vector = _check_query(query, self.dimension, k)
        if allowed_rows is None:
            scores = self.vectors @ vector
            best = _best(scores, k)
            return best, scores[best]
        rows = _allowed_indices(allowed_rows, self.size)
        if rows.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if rows.size * 4 < self.size:
            scores = self.vectors[rows] @ vector
        else:
            scores = (self.vectors @ vector)[rows]
        best = _best(scores, k)
        return rows[best], scores[best]

    def top_k_batch(self, queries: NDArray[np.float32], k: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Best ``k`` rows for each query row: (m, k) rows and scores (k <= n)."""
        import numpy as np

        matrix = np.asarray(queries, dtype=np.float32)
        k = min(k, self.size)
        scores = matrix @ self.vectors.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        part_scores = np.take_along_axis(scores, part, axis=1)
        order = np.argsort(-part_scores, axis=1, kind="stable")
        return np.take_along_axis(part, order, axis=1).astype(np.int64), np.take_along_axis(part_scores, order, axis=1)


class HnswSearch:
    """Approximate top-k with an HNSW graph (usearch), inner-product metric.

    ``connectivity`` (M), ``expansion_add`` (efConstruction) and
    ``expansion_search`` (ef) trade build time and memory for recall; the
    defaults reach recall@10 >= 0.98 on 100k clustered 384-d vectors
    (benchmarks/bench_vectors.py). Scores are exact dot products.
    Restricted searches (``allowed_rows``) run exactly over the allowed rows
    when they are few, else widen the HNSW search until ``k`` allowed rows are
    found (falling back to exact if that fails).
    """

    def __init__(self, index: Any, vectors: NDArray[np.float32]) -> None:
        self._index = index
        self._exact = ExactSearch(vectors)

    @classmethod
    def build(
        cls,
        vectors: Any,
        *,
        connectivity: int = 16,
        expansion_add: int = 64,
        expansion_search: int = 128,
        dtype: str = "f32",
        threads: int = 0,
    ) -> HnswSearch:
        """Build the graph over all rows of ``vectors`` (row number = key).

        ``threads=0`` uses every CPU core. ``dtype`` is the graph's storage
        ("f32", or "f16"/"i8" for a smaller, faster-to-build graph); scores
        are always recomputed exactly from the float32 matrix.
        """
        import os

        import numpy as np

        usearch_index = _usearch_index_class()
        matrix = _as_float32_matrix(vectors)
        index = usearch_index(
            ndim=matrix.shape[1],
            metric="ip",
            dtype=dtype,
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )
        if matrix.shape[0]:
            index.add(
                np.arange(matrix.shape[0], dtype=np.uint64),
                np.ascontiguousarray(matrix),
                threads=threads or (os.cpu_count() or 1),
            )
        return cls(index, matrix)

    @classmethod
    def load(cls, path: Path, vectors: Any, *, expansion_search: int = 128) -> HnswSearch:
        """Open a graph saved with ``save`` (memory-mapped) over the same matrix."""
        usearch_index = _usearch_index_class()
        matrix = _as_float32_matrix(vectors)
        try:
            index = usearch_index.restore(str(path), view=True)
        except (RuntimeError, ValueError) as exc:
            raise IndexCorrupt(f"{path}: unreadable HNSW index") from exc
        if index is None or len(index) != matrix.shape[0] or index.ndim != matrix.shape[1]:
            raise IndexCorrupt(f"{path}: HNSW index does not match the vector matrix")
        index.expansion_search = expansion_search
        return cls(index, matrix)

    def save(self, path: Path) -> None:
        """Write the graph to ``path`` with one atomic rename: other processes may be loading it."""
        import os

        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            self._index.save(str(temporary))
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)

    @property
    def size(self) -> int:
        """Number of rows."""
        return self._exact.size

    @property
    def expansion_search(self) -> int:
        """The ef search parameter (larger: better recall, slower)."""
        return int(self._index.expansion_search)

    @expansion_search.setter
    def expansion_search(self, value: int) -> None:
        self._index.expansion_search = value

    def top_k(
        self, query: NDArray[np.float32], k: int, allowed_rows: NDArray[Any] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Approximate best ``k`` rows, optionally only among ``allowed_rows``."""
        import numpy as np

        vector = _check_query(query, self._exact.dimension, k)
        if self.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if allowed_rows is None:
            return self._search(vector, min(k, self.size))
        rows = _allowed_indices(allowed_rows, self.size)
        # Few allowed rows: exact over them is cheaper and perfect.
        if rows.size <= max(4096, self.size // 50):
            return self._exact.top_k(vector, k, rows)
        mask = np.zeros(self.size, dtype=np.bool_)
        mask[rows] = True
        wanted = min(k, int(rows.size))
        fetch = int(min(self.size, k * max(2, self.size // max(int(rows.size), 1)) * 2))
        while True:
            found, scores = self._search(vector, fetch)
            keep = mask[found]
            if int(keep.sum()) >= wanted or fetch >= self.size:
                if int(keep.sum()) < wanted:
                    return self._exact.top_k(vector, k, rows)
                return found[keep][:k], scores[keep][:k]
            fetch = min(self.size, fetch * 4)

    def _search(self, vector: NDArray[np.float32], count: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """HNSW candidates, rescored exactly from the matrix and sorted best first."""
        import numpy as np

        matches = self._index.search(vector, count)
        rows = np.asarray(matches.keys, dtype=np.int64).reshape(-1)
        scores = np.asarray(self._exact.vectors[rows] @ vector, dtype=np.float32)
        order = np.lexsort((rows, -scores))
        return rows[order], scores[order]


def _usearch_index_class() -> Any:
    try:
        from usearch.index import Index
    except ImportError as exc:
        raise NotInstalled("usearch", USEARCH_HINT) from exc
    return Index


def open_searcher(
    vectors: Any,
    *,
    hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
    hnsw_path: Path | None = None,
    **hnsw_options: Any,
) -> VectorSearcher:
    """Exact search below ``hnsw_threshold`` rows, HNSW at or above it.

    With ``hnsw_path``, a saved graph is loaded when it matches the matrix and
    otherwise built and saved there. Without usearch installed, large sets use
    exact search too (slower, never wrong).
    """
    matrix = _as_float32_matrix(vectors)
    if matrix.shape[0] < hnsw_threshold:
        return ExactSearch(matrix)
    try:
        _usearch_index_class()
    except NotInstalled:
        return ExactSearch(matrix)
    if hnsw_path is not None and hnsw_path.is_file():
        try:
            return HnswSearch.load(hnsw_path, matrix)
        except IndexCorrupt:
            pass  # stale or damaged: rebuilt below
    searcher = HnswSearch.build(matrix, **hnsw_options)
    if hnsw_path is not None:
        searcher.save(hnsw_path)
    return searcher


def recall_at_k(
    approximate: VectorSearcher,
    exact: ExactSearch,
    *,
    k: int = 10,
    queries: NDArray[np.float32] | None = None,
    samples: int = 200,
    seed: int = 0,
) -> float:
    """Mean fraction of the exact top-k that the approximate searcher returns.

    Without ``queries``, ``samples`` rows of the matrix, slightly perturbed
    and renormalised, serve as queries (realistic: queries land near data).
    """
    import numpy as np

    if queries is None:
        rng = np.random.default_rng(seed)
        picks = rng.choice(exact.size, size=min(samples, exact.size), replace=False)
        noisy = exact.vectors[picks] + rng.normal(0, 0.05, size=(picks.size, exact.dimension)).astype(np.float32)
        queries = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
    truth, _ = exact.top_k_batch(queries, k)
    hits = 0
    for query, expected in zip(queries, truth, strict=False):
        found, _ = approximate.top_k(query, k)
        hits += len(set(found.tolist()) & set(expected.tolist()))
    return hits / float(truth.size) if truth.size else 1.0


def measure_graph_recall(matrix: Any, *, k: int, samples: int, threshold: int | None) -> dict[str, Any]:
    """Recall@k of an HNSW graph built over ``matrix`` against exact search (``memrouter index
    --measure-recall``). The graph is built for the measurement even below the size threshold
    (``threshold``, or the default) at which search would switch to it."""
    import time

    exact = ExactSearch(matrix)
    if exact.size == 0:
        return {"chunks": 0, "k": k, "samples": 0, "recall": None, "note": "no vectors: run memrouter index"}
    started = time.perf_counter()
    graph = HnswSearch.build(exact.vectors)
    built = time.perf_counter() - started
    recall = recall_at_k(graph, exact, k=min(k, exact.size), samples=samples)
    return {
        "chunks": exact.size,
        "k": k,
        "samples": min(samples, exact.size),
        "recall": round(recall, 4),
        "hnsw_build_s": round(built, 3),
        "search_path": "hnsw" if exact.size >= (threshold or DEFAULT_HNSW_THRESHOLD) else "exact",
    }


def save_matrix(path: Path, vectors: Any) -> None:
    """Write vectors as a ``.npy`` float32 file (atomic replace), for ``load_matrix``."""
    save_array(path, _as_float32_matrix(vectors))


def save_array(path: Path, array: Any) -> None:
    """Write a numpy array as a ``.npy`` file with one atomic rename (readers never see half)."""
    import os
    import tempfile

    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".vectors-", suffix=".npy")
    try:
        with os.fdopen(handle, "wb") as stream:
            np.save(stream, np.ascontiguousarray(array))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_matrix(path: Path, *, mmap: bool = True) -> NDArray[np.float32]:
    """Open a ``.npy`` vector file, memory-mapped read-only by default."""
    import numpy as np

    if not path.is_file():
        raise NotFound(f"no vector matrix at {path}")
    try:
        matrix = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise IndexCorrupt(f"{path}: not a vector matrix file") from exc
    if matrix.ndim != 2 or matrix.dtype != np.float32:
        raise IndexCorrupt(f"{path}: expected a 2-d float32 matrix, got {matrix.dtype} {matrix.shape}")
    result: NDArray[np.float32] = matrix
    return result


def to_blob(vector: Any) -> bytes:
    """One vector as little-endian float32 bytes (what the index stores)."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").reshape(-1).tobytes()


def from_blobs(blobs: Any, dimension: int) -> NDArray[np.float32]:
    """Stack float32 blobs into an (n, dimension) matrix; IndexCorrupt on a bad size."""
    import numpy as np

    items = list(blobs)
    width = 4 * dimension
    for position, blob in enumerate(items):
        if len(blob) != width:
            raise IndexCorrupt(f"vector {position} has {len(blob)} bytes, expected {width} (dimension {dimension})")
    if not items:
        return np.zeros((0, dimension), dtype=np.float32)
    matrix: NDArray[np.float32] = np.frombuffer(b"".join(items), dtype="<f4").reshape(len(items), dimension)
    return matrix.astype(np.float32)
