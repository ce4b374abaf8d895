"""Near-duplicates: the same content, or the same title and meaning, or nearly the same words.

The guard compares a write with a few candidates the index finds (memories
with the same title and those sharing the write's rarest words; see
``memrouter.ops.writes``), so a check costs the same however many memories
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
    from collections.abc import Hashable, Iterable
    from collections.abc import Set as AbstractSet

__all__ = ["COSINE", "JACCARD", "SHINGLE", "Candidate", "body_hash", "find_duplicate", "jaccard", "shingles"]

# Same title and at least this cosine (best chunk, dense index) is a duplicate.
COSINE = 0.92
# Word-shingle Jaccard at least this is a near-copy, whatever the titles.
JACCARD = 0.9
SHINGLE = 3  # words per shingle
# Bodies whose lengths differ more than this (shorter / longer) are not compared word by word.
LENGTH_RATIO = 0.6
SAMPLES = 32  # words looked for first (``_shares_sample``)
# Two texts sharing 90% of their three-word shingles share far more than this of their distinct words
# (each word differing between them breaks at most three shingles per use): a cheap test first.
WORD_JACCARD = 0.7
_WORD = re.compile(r"\w+")
_PUNCTUATION = "".join(chr(c) for c in range(33, 127) if not chr(c).isalnum())


@dataclass(frozen=True, slots=True)
class Candidate:
    """A stored memory that may duplicate a write: its name, title, body and, if measured, cosine."""

    name: str
    title: str
    body: str
    cosine: float | None = None


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def body_hash(body: str) -> str:
    """The hash two bodies share when they hold the same words in the same order (spacing and case aside)."""
    return hashlib.sha256(" ".join(_words(body)).encode("utf-8")).hexdigest()


def shingles(text: str | list[str], size: int = SHINGLE) -> set[tuple[str, ...]]:
    """The set of ``size``-word runs of ``text`` (lower case; or of a list of words); a shorter text is one shingle."""
    words = _words(text) if isinstance(text, str) else text
    if len(words) <= size:
        return {tuple(words)} if words else set()
    return set(zip(*(words[i:] for i in range(size)), strict=False))


def jaccard(a: AbstractSet[Hashable], b: AbstractSet[Hashable]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _sample(text: str) -> list[str]:
    """The ``SAMPLES`` longest distinct words of ``text`` (lower case) that stand between spaces.

    Words are taken from a split on white space (outer punctuation stripped, only
    letters and digits kept): on 10 KB that is several times cheaper than the word
    pattern, and every word taken is one the pattern finds too.
    """
    distinct = {token.strip(_PUNCTUATION) for token in text.lower().split()}
    words = [word for word in distinct if word.isalnum()]
    return sorted(sorted(words), key=len, reverse=True)[:SAMPLES]  # two C-speed sorts: by length, then word


def _shares_sample(sample: list[str], theirs: str) -> bool:
    """Whether at least three quarters of ``sample`` occur in ``theirs`` (lower case).

    A text sharing 90% of its shingles with another holds nearly all of its
    words, so one missing a quarter of a sample is skipped before its words
    are even split (a true near-copy is never skipped this way).
    """
    return sum(1 for word in sample if word in theirs) * 4 >= len(sample) * 3


def find_duplicate(
    body: str, title: str, candidates: Iterable[Candidate], *, exempt: Iterable[str] = ()
) -> tuple[str, Reason] | None:
    """The first candidate (not ``exempt``: the memory being updated) that ``body`` duplicates, and why.

    A body without a word (empty, or punctuation alone) duplicates nothing: it holds no knowledge to repeat.
    """
    if _WORD.search(body) is None:
        return None
    skip = set(exempt)
    sample: list[str] | None = None  # taken once a candidate's length allows a near-copy
    words: list[str] = []
    mine: set[tuple[str, ...]] | None = None
    vocabulary: set[str] | None = None
    size = max(1, len(body))
    for candidate in candidates:
        if candidate.name in skip:
            continue
        pointer = (
            f"duplicates memory {candidate.name!r}; update it instead (same name, or `supersedes: {candidate.name}`)"
        )
        same_title = title.strip().lower() == candidate.title.strip().lower() and bool(title.strip())
        if same_title and candidate.cosine is not None and candidate.cosine >= COSINE:
            message = f"same title, cosine {candidate.cosine:.2f}: {pointer}"
            return candidate.name, Reason("duplicate", "same_title_similar", 0, message)
        if not LENGTH_RATIO <= len(candidate.body) / size <= 1 / LENGTH_RATIO:
            continue  # texts this different in length share neither their words nor 90% of their shingles
        sample = _sample(body) if sample is None else sample
        if not _shares_sample(sample, candidate.body.lower()):
            continue
        words = words or _words(body)
        theirs = _words(candidate.body)
        if theirs == words:
            return candidate.name, Reason("duplicate", "same_content", 0, f"same content: {pointer}")
        if min(len(theirs), len(words)) < JACCARD * max(len(theirs), len(words)) - SHINGLE:
            continue  # too few words in common for the shingles to reach JACCARD
        vocabulary = set(words) if vocabulary is None else vocabulary
        if jaccard(vocabulary, set(theirs)) < WORD_JACCARD:
            continue  # texts whose shingles are 90% shared hold nearly the same words
        mine = shingles(words) if mine is None else mine
        score = jaccard(mine, shingles(theirs))
        if score >= JACCARD:
            return candidate.name, Reason("duplicate", "near_copy", 0, f"word overlap {score:.2f}: {pointer}")
    return None
