"""Exact and HNSW vector search on small real matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter.core.errors import IndexCorrupt, InvalidInput, NotFound
from memrouter.index.sqlite.vectors import (
    ExactSearch,
    HnswSearch,
    from_blobs,
    load_matrix,
    open_searcher,
    recall_at_k,
    save_matrix,
    to_blob,
)


def unit_rows(n: int, dim: int = 32, seed: int = 0, topics: int = 20) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, dim))
    rows = centres[rng.integers(0, topics, n)] + 0.4 * rng.normal(size=(n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def brute_force(matrix: np.ndarray, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[int]:
    scores = matrix @ query
    rows = np.arange(len(matrix)) if allowed is None else allowed
    return sorted(rows.tolist(), key=lambda r: (-scores[r], r))[:k]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(1, 20), seed=st.integers(0, 10_000), subset=st.booleans())
def test_exact_matches_brute_force(n: int, k: int, seed: int, subset: bool) -> None:
    matrix = unit_rows(n, seed=seed)
    query = unit_rows(1, seed=seed + 1)[0]
    searcher = ExactSearch(matrix)
    allowed = np.random.default_rng(seed).choice(n, size=max(1, n // 3), replace=False) if subset else None
    rows, scores = searcher.top_k(query, k, allowed)
    expected = brute_force(matrix, query, k, None if allowed is None else np.unique(allowed))
    assert rows.dtype == np.int64 and scores.dtype == np.float32
    np.testing.assert_allclose(scores, (matrix @ query)[expected], rtol=1e-5, atol=1e-6)
    assert np.all(np.diff(scores) <= 1e-7)
    assert rows.tolist() == expected


def test_boolean_mask_and_empty_mask() -> None:
    matrix = unit_rows(50)
    searcher = ExactSearch(matrix)
    mask = np.zeros(50, dtype=bool)
    mask[[3, 7, 9]] = True
    rows, _ = searcher.top_k(matrix[7], 10, mask)
    assert sorted(rows.tolist()) == [3, 7, 9] and rows[0] == 7
    rows, scores = searcher.top_k(matrix[7], 10, np.zeros(50, dtype=bool))
    assert rows.size == 0 and scores.size == 0


def test_bad_arguments_are_invalid_input() -> None:
    searcher = ExactSearch(unit_rows(10))
    with pytest.raises(InvalidInput):
        searcher.top_k(np.ones(5, dtype=np.float32), 3)
    with pytest.raises(InvalidInput):
        searcher.top_k(unit_rows(1)[0], 0)
    with pytest.raises(InvalidInput):
        searcher.top_k(unit_rows(1)[0], 3, np.array([11]))
    with pytest.raises(InvalidInput):
        searcher.top_k(unit_rows(1)[0], 3, np.ones(4, dtype=bool))
    with pytest.raises(InvalidInput):
        ExactSearch(np.ones(5, dtype=np.float32))


def test_memmap_round_trip(tmp_path: Path) -> None:
    matrix = unit_rows(100)
    path = tmp_path / "vectors.npy"
    save_matrix(path, matrix)
    mapped = load_matrix(path)
    assert isinstance(mapped, np.memmap)
    rows, _ = ExactSearch(mapped).top_k(matrix[42], 1)
    assert rows.tolist() == [42]


def test_load_matrix_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        load_matrix(tmp_path / "missing.npy")
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(IndexCorrupt):
        load_matrix(tmp_path / "junk.npy")
    np.save(tmp_path / "ints.npy", np.arange(6).reshape(2, 3))
    with pytest.raises(IndexCorrupt):
        load_matrix(tmp_path / "ints.npy")


@pytest.fixture(scope="module")
def small_hnsw() -> tuple[np.ndarray, HnswSearch]:
    pytest.importorskip("usearch")
    matrix = unit_rows(3000, dim=48, seed=3)
    # one build thread: the graph is then the same on every run (a parallel build differs run to run,
    # and an approximate search may then miss a row's own vector)
    return matrix, HnswSearch.build(matrix, connectivity=16, expansion_add=64, expansion_search=64, threads=1)


def test_hnsw_recall_against_exact(small_hnsw: tuple[np.ndarray, HnswSearch]) -> None:
    matrix, hnsw = small_hnsw
    assert hnsw.size == 3000
    recall = recall_at_k(hnsw, ExactSearch(matrix), k=10, samples=100)
    assert recall >= 0.95
    rows, scores = hnsw.top_k(matrix[17], 5)
    assert rows[0] == 17 and scores[0] == pytest.approx(1.0, abs=1e-4)
    assert np.all(np.diff(scores) <= 1e-6)


def test_hnsw_with_allowed_rows(small_hnsw: tuple[np.ndarray, HnswSearch]) -> None:
    matrix, hnsw = small_hnsw
    few = np.array([5, 500, 1500])
    rows, _ = hnsw.top_k(matrix[500], 10, few)
    assert sorted(rows.tolist()) == [5, 500, 1500] and rows[0] == 500
    many = np.arange(0, 3000, 2)  # half of the rows: filtered HNSW path
    rows, scores = hnsw.top_k(matrix[1000], 10, many)
    assert len(rows) == 10 and rows[0] == 1000
    assert all(r % 2 == 0 for r in rows.tolist())
    mask = np.zeros(3000, dtype=bool)
    mask[many] = True
    rows_mask, _ = hnsw.top_k(matrix[1000], 10, mask)
    assert rows_mask.tolist() == rows.tolist()


def test_hnsw_save_and_load(tmp_path: Path, small_hnsw: tuple[np.ndarray, HnswSearch]) -> None:
    matrix, hnsw = small_hnsw
    path = tmp_path / "graph.usearch"
    hnsw.save(path)
    loaded = HnswSearch.load(path, matrix)
    np.testing.assert_array_equal(loaded.top_k(matrix[9], 5)[0], hnsw.top_k(matrix[9], 5)[0])
    with pytest.raises(IndexCorrupt):
        HnswSearch.load(path, matrix[:100])


def test_open_searcher_picks_by_size(tmp_path: Path) -> None:
    pytest.importorskip("usearch")
    matrix = unit_rows(400)
    assert isinstance(open_searcher(matrix, hnsw_threshold=1000), ExactSearch)
    path = tmp_path / "graph.usearch"
    first = open_searcher(matrix, hnsw_threshold=100, hnsw_path=path)
    assert isinstance(first, HnswSearch) and path.is_file()
    again = open_searcher(matrix, hnsw_threshold=100, hnsw_path=path)
    assert isinstance(again, HnswSearch)
    # A graph for another matrix is rebuilt, not trusted.
    other = open_searcher(unit_rows(300), hnsw_threshold=100, hnsw_path=path)
    assert isinstance(other, HnswSearch) and other.size == 300


def test_empty_matrix() -> None:
    searcher = ExactSearch(np.zeros((0, 8), dtype=np.float32))
    rows, scores = searcher.top_k(np.ones(8, dtype=np.float32), 5)
    assert rows.size == 0 and scores.size == 0


def test_blob_round_trip() -> None:
    matrix = unit_rows(7, dim=16)
    blobs = [to_blob(row) for row in matrix]
    assert all(len(blob) == 64 for blob in blobs)
    np.testing.assert_array_equal(from_blobs(blobs, 16), matrix)
    assert from_blobs([], 16).shape == (0, 16)
    with pytest.raises(IndexCorrupt):
        from_blobs([blobs[0], blobs[1][:-4]], 16)
