"""MinHash LSH: deterministic signatures, honest similarity estimates, pairs found without comparing all pairs."""

from __future__ import annotations

import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter.ops.janitor.minhash import PERMUTATIONS, near_duplicate_pairs, signatures

WORDS = [f"w{n}" for n in range(400)]


def text(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(length))


def jaccard(a: str, b: str) -> float:
    def shingles(t: str) -> set[tuple[str, ...]]:
        w = re.findall(r"[^\W_]+", t.lower())
        return {tuple(w[i : i + 3]) for i in range(len(w) - 2)}

    x, y = shingles(a), shingles(b)
    return len(x & y) / len(x | y)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=80), min_size=1, max_size=8), st.integers(0, 7))
def test_a_signature_depends_on_its_text_alone(texts: list[str], at: int) -> None:
    alone, has = signatures([texts[at % len(texts)]])
    together, has_all = signatures(texts)
    assert (together[at % len(texts)] == alone[0]).all() and has_all[at % len(texts)] == has[0]
    assert together.shape == (len(texts), PERMUTATIONS)


def test_estimates_track_the_exact_jaccard_similarity() -> None:
    rng = random.Random(3)
    errors = []
    for _ in range(100):
        base = text(rng, 120)
        words = base.split()
        for _ in range(rng.randrange(1, 40)):
            words[rng.randrange(len(words))] = rng.choice(WORDS)
        edited = " ".join(words)
        sig, _ = signatures([base, edited])
        errors.append(float((sig[0] == sig[1]).mean()) - jaccard(base, edited))
    # 128 permutations: a standard error of about 0.045; unbiased.
    assert abs(sum(errors) / len(errors)) < 0.02
    assert sorted(abs(e) for e in errors)[94] < 0.1


def test_near_duplicates_are_found_and_unrelated_texts_are_not() -> None:
    rng = random.Random(5)
    originals = [text(rng, 150) for _ in range(300)]
    copies = []
    for original in originals:
        words = original.split()
        del words[rng.randrange(len(words))]
        words.insert(rng.randrange(len(words)), "inserted")
        copies.append(" ".join(words))
    pairs = near_duplicate_pairs(originals + copies, 0.6)
    assert {(p.first, p.second) for p in pairs} == {(i, i + 300) for i in range(300)}
    assert all(p.similarity >= 0.6 for p in pairs)


def test_short_and_empty_texts_have_no_shingles_and_no_pairs() -> None:
    sig, has = signatures(["", "two words", "three words here"])
    assert has.tolist() == [False, False, True]
    assert near_duplicate_pairs(["", "two words", "two words"], 0.5) == []
