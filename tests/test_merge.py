"""The canonical-first merge: hash dedup, sync-mapping dedup, canonical wins, limit, order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memrouter.core.model import Hit
from memrouter.external.backends.base import ExternalHit
from memrouter.external.merge import merge_hits
from memrouter.store.parse import content_hash


def canonical(name: str, text: str, score: float = 1.0) -> Hit:
    return Hit(name=name, title=name, score=score, source="canonical", channel="long_term",
               path=f"/m/{name}.md", hash=content_hash(text))  # fmt: skip


def external(remote_id: str, text: str, rank: int, backend: str = "forgetful") -> ExternalHit:
    return ExternalHit(backend=backend, remote_id=remote_id, title=f"t{remote_id}", content=text,
                       score=1.0 / rank, rank=rank, hash=content_hash(text))  # fmt: skip


def test_canonical_first_in_order_then_new_external_hits() -> None:
    hits = merge_hits(
        [canonical("b", "B"), canonical("a", "A")],
        {"forgetful": [external("1", "X", 1), external("2", "Y", 2)]},
        limit=10,
    )
    assert [(h.name, h.source) for h in hits] == [
        ("b", "canonical"), ("a", "canonical"), ("forgetful:1", "forgetful"), ("forgetful:2", "forgetful"),
    ]  # fmt: skip
    assert hits[2].path is None and hits[2].why[0].retriever == "forgetful"


def test_same_content_hash_canonical_wins() -> None:
    hits = merge_hits([canonical("a", "same text")], {"forgetful": [external("9", "same text", 1)]}, 10)
    assert [h.name for h in hits] == ["a"]


def test_external_duplicates_of_each_other_keep_the_first() -> None:
    hits = merge_hits([], {"forgetful": [external("1", "X", 1), external("2", "X", 2)],
                           "other": [external("7", "X", 1, "other")]}, 10)  # fmt: skip
    assert [h.name for h in hits] == ["forgetful:1"]


def test_synced_copies_and_parts_are_dropped_even_when_reformatted() -> None:
    synced = {"forgetful": {"5": "runbook", "6": "runbook", "8": "ci/flaky"}}
    hits = merge_hits(
        [canonical("runbook", "full text")],
        {"forgetful": [external("5", "part one", 1), external("6", "part two", 2),
                       external("8", "reformatted flaky", 3), external("11", "new", 4)]},
        10,
        synced,
    )  # fmt: skip
    assert [h.name for h in hits] == ["runbook", "forgetful:11"]


def test_cut_to_the_limit_canonical_never_displaced() -> None:
    hits = merge_hits([canonical(n, n) for n in "abc"], {"forgetful": [external("1", "X", 1)]}, 2)
    assert [h.name for h in hits] == ["a", "b"]
    hits = merge_hits([canonical("a", "a")], {"forgetful": [external(str(i), f"x{i}", i) for i in range(1, 9)]}, 3)
    assert [h.name for h in hits] == ["a", "forgetful:1", "forgetful:2"]


def test_content_is_included_on_request() -> None:
    assert merge_hits([], {"forgetful": [external("1", "body", 1)]}, 5, content=True)[0].content == "body"
    assert merge_hits([], {"forgetful": [external("1", "body", 1)]}, 5)[0].content is None


@given(
    st.lists(st.text(max_size=3), max_size=6, unique=True),
    st.lists(st.text(max_size=3), max_size=8),
    st.integers(min_value=1, max_value=12),
)
def test_merge_properties(canon: list[str], ext: list[str], limit: int) -> None:
    hits = merge_hits(
        [canonical(f"c{i}", t) for i, t in enumerate(canon)],
        {"forgetful": [external(str(i), t, i + 1) for i, t in enumerate(ext)]},
        limit,
    )
    assert len(hits) <= limit
    assert len({h.hash for h in hits}) == len(hits)  # never the same content twice
    kept = [h for h in hits if h.source == "canonical"]
    assert kept == hits[: len(kept)]  # canonical first
    assert [h.name for h in kept] == [f"c{i}" for i in range(min(limit, len(canon)))]


def test_a_fact_of_a_synced_episode_is_dropped_and_a_foreign_fact_kept_with_its_window() -> None:
    synced = {"graphiti": {"ep-1": "decisions/db"}}
    ours = ExternalHit(backend="graphiti", remote_id="edge-1", title="f", content="db uses postgres", score=1.0,
                       rank=1, hash=content_hash("db uses postgres"), origin_id="ep-1")  # fmt: skip
    theirs = ExternalHit(backend="graphiti", remote_id="edge-2", title="g", content="cache is redis", score=0.5,
                         rank=2, hash=content_hash("cache is redis"), origin_id="ep-9",
                         valid_from="2025-01-02T00:00:00+00:00")  # fmt: skip
    hits = merge_hits([], {"graphiti": [ours, theirs]}, 10, synced)
    assert [h.name for h in hits] == ["graphiti:edge-2"]
    assert hits[0].snippet == "[valid 2025-01-02T00:00:00+00:00 to now] cache is redis"
