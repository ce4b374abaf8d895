"""Near-duplicate pairs without comparing all pairs: MinHash signatures and LSH banding, in numpy.

Each text becomes the set of its word 3-shingles (``SHINGLE`` words in a row,
lower-cased), each shingle a 64-bit hash. A signature holds, for each of
``PERMUTATIONS`` seeded hash functions (multiply-shift, fixed seeds, so a run
is reproducible), the least hash over the text's shingles; two signatures agree
at a position with probability equal to the texts' Jaccard similarity.
Signatures are cut into ``BANDS`` bands of ``ROWS`` rows; texts whose band is
identical in any band become candidates (sorting each band, never pairing all
texts), and a candidate pair is kept when its estimated Jaccard similarity is at
least ``threshold``. With 32 bands of 4 rows, a pair at similarity 0.6 becomes a
candidate with probability 0.99, one at 0.3 with 0.23 (and is then dropped by
the estimate). Texts shorter than ``SHINGLE`` words have no shingles and are
left to the exact-duplicate check.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["BANDS", "PERMUTATIONS", "ROWS", "SHINGLE", "SimilarPair", "near_duplicate_pairs", "signatures"]

SHINGLE = 3
BANDS = 32
ROWS = 4
PERMUTATIONS = BANDS * ROWS
SEED = 20260116
# Texts sharing one band's bucket are paired with up to this many neighbours (all pairs in a bucket this size).
WINDOW = 16
# Shingles hashed at a time: CHUNK x PERMUTATIONS x 8 bytes (4 MiB) stay in the processor's cache.
CHUNK = 4096
# Texts tokenised at a time: only this many texts' words are ever held as Python strings.
TEXT_BATCH = 4096
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SPREAD = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))

U64 = npt.NDArray[np.uint64]


@dataclass(frozen=True, slots=True)
class SimilarPair:
    """Two texts (by position) and their estimated Jaccard similarity over word shingles."""

    first: int
    second: int
    similarity: float


def _mix(values: U64) -> U64:
    """SplitMix64's finaliser: spreads the bits of each value over all 64."""
    values = values ^ (values >> np.uint64(30))
    values *= _MIX1
    values ^= values >> np.uint64(27)
    values *= _MIX2
    values ^= values >> np.uint64(31)
    return values


def _word_ids(texts: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], list[str]]:
    """Every word of every text as an id (in text order), each text's end in them, and the words by id.

    Texts are read ``TEXT_BATCH`` at a time, so only one batch's words are ever held as strings.
    """
    vocabulary: dict[str, int] = {}
    parts: list[npt.NDArray[np.int64]] = []
    lengths: list[int] = []
    for low in range(0, len(texts), TEXT_BATCH):
        per_text = [_WORD.findall(text.lower()) for text in texts[low : low + TEXT_BATCH]]
        lengths += [len(words) for words in per_text]
        every = [word for words in per_text for word in words]
        for word in dict.fromkeys(every):
            vocabulary.setdefault(word, len(vocabulary))
        parts.append(np.fromiter(map(vocabulary.__getitem__, every), dtype=np.int64, count=len(every)))
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return ids, np.cumsum(np.asarray(lengths, dtype=np.int64)), list(vocabulary)


def _shingles(texts: list[str]) -> tuple[U64, npt.NDArray[np.int64]]:
    """Every text's shingle hashes, concatenated, and each text's [start, end) in them."""
    ids, ends, words_by_id = _word_ids(texts)
    # Each word's hash depends on the word alone (never on which texts came first), so a text's
    # signature is the same in any collection: a pair is found or not whatever else is indexed.
    stable = np.fromiter(
        (int.from_bytes(hashlib.blake2b(w.encode("utf-8"), digest_size=8).digest(), "little") for w in words_by_id),
        dtype=np.uint64,
        count=len(words_by_id),
    )
    words = stable[ids]
    del ids
    owner = np.repeat(np.arange(len(texts), dtype=np.int32), np.diff(ends, prepend=0))
    count = max(0, len(words) - SHINGLE + 1)
    combined = np.zeros(count, dtype=np.uint64)
    for offset in range(SHINGLE):
        combined ^= words[offset : offset + count] * _SPREAD[offset]
    keep = owner[:count] == owner[SHINGLE - 1 : SHINGLE - 1 + count]  # no shingle spans two texts
    hashes = _mix(combined[keep])
    bounds = np.searchsorted(owner[:count][keep], np.arange(len(texts) + 1))
    return hashes, bounds.astype(np.int64)


def signatures(texts: list[str]) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.bool_]]:
    """The MinHash signature of each text (``PERMUTATIONS`` values) and whether it has any shingle."""
    hashes, bounds = _shingles(texts)
    rng = np.random.default_rng(SEED)
    multipliers = (rng.integers(1, 2**62, size=PERMUTATIONS, dtype=np.uint64) * np.uint64(2) + np.uint64(1))[:, None]
    offsets = rng.integers(0, 2**63, size=PERMUTATIONS, dtype=np.uint64)[:, None]
    owner_of = np.repeat(np.arange(len(texts), dtype=np.int32), np.diff(bounds))
    result = np.full((PERMUTATIONS, len(texts)), np.iinfo(np.uint32).max, dtype=np.uint32)
    buffer = np.empty((PERMUTATIONS, CHUNK), dtype=np.uint64)
    for low in range(0, len(hashes), CHUNK):
        high = min(low + CHUNK, len(hashes))
        block = buffer[:, : high - low]
        np.multiply(multipliers, hashes[None, low:high], out=block)
        block += offsets
        block >>= np.uint64(32)  # multiply-shift: the high half is the permuted value
        owners = owner_of[low:high]
        cuts = np.flatnonzero(np.diff(owners, prepend=-1))  # where each text's shingles start in this chunk
        seen = owners[cuts]  # distinct texts, so the assignment below never writes one twice
        least = np.minimum.reduceat(block, cuts, axis=1).astype(np.uint32)
        result[:, seen] = np.minimum(result[:, seen], least)
    return np.ascontiguousarray(result.T), np.diff(bounds) > 0


def near_duplicate_pairs(texts: list[str], threshold: float) -> list[SimilarPair]:
    """Pairs of texts (by position, first < second) whose estimated shingle Jaccard is >= ``threshold``."""
    if len(texts) < 2:
        return []
    sig, has = signatures(texts)
    present = np.flatnonzero(has)
    if len(present) < 2:
        return []
    sub = sig[present]
    candidates: list[npt.NDArray[np.int64]] = []
    for band in range(BANDS):
        rows = sub[:, band * ROWS : (band + 1) * ROWS].astype(np.uint64)
        key = np.zeros(len(rows), dtype=np.uint64)
        for column in range(ROWS):
            key = _mix(key ^ rows[:, column])
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        # Equal keys sit together once sorted: every pair of a bucket up to WINDOW texts, and each text
        # with its WINDOW - 1 next neighbours in a larger one (so a bucket of m costs at most m * WINDOW).
        for distance in range(1, WINDOW):
            same = np.flatnonzero(ordered[distance:] == ordered[:-distance])
            if not len(same):
                break
            left, right = order[same], order[same + distance]
            candidates.append(np.minimum(left, right) * len(sub) + np.maximum(left, right))
    if not candidates:
        return []
    codes = np.unique(np.concatenate(candidates))
    left, right = codes // len(sub), codes % len(sub)
    agreement = (sub[left] == sub[right]).mean(axis=1)
    keep = agreement >= threshold
    return [
        SimilarPair(int(present[a]), int(present[b]), round(float(s), 3))
        for a, b, s in zip(left[keep], right[keep], agreement[keep], strict=True)
    ]
