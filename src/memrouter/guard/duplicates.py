"""Near-duplicates: the same content, or the same title and meaning, or nearly the same words.

The guard compares a write with a few candidates the index finds (memories
with the same title and those sharing the write's rarest words; see
``memrouter.writing``), so a check costs the same however many memories
there are. Word shingles are compared exactly: with a handful of candidates
that is cheaper than estimating with MinHash, and never wrong.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from memrouter.guard.verdict import Reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["COSINE", "JACCARD", "SHINGLE", "Candidate", "body_hash", "find_duplicate", "jaccard", "shingles"]

# Same title and at least this cosine (best chunk, dense index) is a duplicate.
COSINE = 0.92
# Word-shingle Jaccard at least this is a near-copy, whatever the titles.
JACCARD = 0.9
SHINGLE = 3  # words per shingle
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A stored memory that may duplicate a write: its name, title, body and, if measured, cosine."""

    name: str
    title: str
    body: str
    cosine: float | None = None


def body_hash(body: str) -> str:
    """The hash two bodies share when they hold the same words in the same order (spacing and case aside)."""
    return hashlib.sha256(" ".join(_WORD.findall(body.lower())).encode("utf-8")).hexdigest()


def shingles(text: str, size: int = SHINGLE) -> set[tuple[str, ...]]:
    """The set of ``size``-word runs of ``text`` (lower case); a shorter text is one shingle."""
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def find_duplicate(
    body: str, title: str, candidates: Iterable[Candidate], *, exempt: Iterable[str] = ()
) -> tuple[str, Reason] | None:
    """The first candidate (not ``exempt``: the memory being updated) that ``body`` duplicates, and why."""
    skip = set(exempt)
    mine: set[tuple[str, ...]] | None = None
    digest = body_hash(body)
    for candidate in candidates:
        if candidate.name in skip:
            continue
        pointer = (
            f"duplicates memory {candidate.name!r}; update it instead (same name, or `supersedes: {candidate.name}`)"
        )
        if body_hash(candidate.body) == digest:
            return candidate.name, Reason("duplicate", "same_content", 0, f"same content: {pointer}")
        same_title = title.strip().lower() == candidate.title.strip().lower() and bool(title.strip())
        if same_title and candidate.cosine is not None and candidate.cosine >= COSINE:
            message = f"same title, cosine {candidate.cosine:.2f}: {pointer}"
            return candidate.name, Reason("duplicate", "same_title_similar", 0, message)
        mine = shingles(body) if mine is None else mine
        score = jaccard(mine, shingles(candidate.body))
        if score >= JACCARD:
            return candidate.name, Reason("duplicate", "near_copy", 0, f"word overlap {score:.2f}: {pointer}")
    return None
