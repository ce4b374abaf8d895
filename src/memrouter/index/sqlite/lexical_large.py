"""BM25F scoring over numpy arrays, for corpora too big for per-term dictionaries.

``LexicalIndex`` scores a query by merging per-term dictionaries of memory id
to score contribution: the fastest way for the few thousand memories most
projects hold, and free of numpy's import cost. At tens of thousands of
memories a common word's postings hold tens of thousands of entries, and
decoding, merging and sorting them in Python makes the slow tail (one query
in twenty taking ninety times the median). From ``LARGE_CORPUS`` memories on,
each term's contributions are numpy arrays computed straight from the
postings blob, a query adds them into one dense score array, and the top k
come from a partial sort; filters are a boolean mask cached per filter set.
Scores are the same BM25F as the dictionary path (float32 rather than float64).
"""

from __future__ import annotations

import math
import sys

from memrouter.index.sqlite.postings import checked

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (lexical search never imports it)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.index.folders import FolderContext

__all__ = ["LARGE_CORPUS", "LargeScorer"]

LARGE_CORPUS = 20_000


class LargeScorer:
    """Per-term contribution arrays and dense query scoring over one index generation."""

    def __init__(self, norms: dict[int, float], count: int, k1: float) -> None:
        import numpy as np  # lazy: only corpora of LARGE_CORPUS memories or more come here

        self._np = np
        self.count = count
        self.k1 = k1
        size = (max(norms) + 1) if norms else 1
        self.norm = np.full(size, np.inf, dtype=np.float32)  # no memory at an id: its contributions are 0
        ids = np.fromiter(norms.keys(), dtype=np.int64, count=len(norms))
        self.norm[ids] = np.fromiter(norms.values(), dtype=np.float32, count=len(norms))
        self.terms: dict[str, tuple[Any, Any]] = {}
        self._masks: dict[int, tuple[object, Any]] = {}

    def load(self, term: str, blob: bytes | None, folders: FolderContext | None = None) -> int:
        """Compute ``term``'s contributions from its postings blob (``None``: the term is in no memory),
        with what ``folders`` lends; returns how many memories hold the term."""
        np = self._np
        if blob is None:
            self.terms[term] = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32))
            return 0
        data = checked(blob, term)
        half = len(data) // 2
        ids = np.frombuffer(data, dtype="<i4", count=half // 4).astype(np.int64)
        tfs = np.frombuffer(data, dtype="<f4", offset=half, count=half // 4)
        if sys.byteorder != "little":
            tfs = tfs.astype(np.float32)
        inside = ids < len(self.norm)
        ids, tfs = ids[inside], tfs[inside]
        df = len(ids)
        lift = math.log(1.0 + (self.count - df + 0.5) / (df + 0.5)) * (self.k1 + 1.0)
        contributions = (lift * tfs / (tfs + self.norm[ids])).astype(np.float32)
        self.terms[term] = folders.lend_arrays(ids, contributions) if folders else (ids, contributions)
        return df

    def top(
        self, terms: list[str], limit: int, allowed: set[int] | None, excluded: set[int]
    ) -> list[tuple[int, float]]:
        """The ``limit`` best (id, score) for ``terms`` among ``allowed`` (``None``: all) less ``excluded``."""
        np = self._np
        scores = np.zeros(len(self.norm), dtype=np.float32)
        for term in dict.fromkeys(terms):
            ids, contributions = self.terms[term]
            scores[ids] += contributions * terms.count(term)
        if allowed is not None:
            scores *= self._mask(allowed)
        if excluded:
            scores[[i for i in excluded if i < len(scores)]] = 0.0
        found = np.flatnonzero(scores)
        if len(found) > limit:
            found = found[np.argpartition(-scores[found], limit - 1)[:limit]]
        best = found[np.lexsort((found, -scores[found]))]
        return [(int(i), float(scores[i])) for i in best]

    def _mask(self, allowed: set[int]) -> Any:
        """A 0/1 array of ``allowed`` ids, cached while the same set object is asked again."""
        cached = self._masks.get(id(allowed))
        if cached is not None and cached[0] is allowed:
            return cached[1]
        np = self._np
        mask = np.zeros(len(self.norm), dtype=np.float32)
        ids = np.fromiter((i for i in allowed if i < len(mask)), dtype=np.int64)
        mask[ids] = 1.0
        if len(self._masks) > 16:
            self._masks.clear()
        self._masks[id(allowed)] = (allowed, mask)
        return mask
