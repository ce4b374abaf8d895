"""``memrouter.ops.branch_search.merge``: where the other places' hits go among the checkout's own."""

from __future__ import annotations

from memrouter.core.model import Hit
from memrouter.ops.branch_search import Entry, merge


def hit(name: str, score: float, content: str | None = None) -> Hit:
    return Hit(name, name, score, "canonical", "long_term", None, content or f"hash-{name}")


ENTRIES = {"x~1": Entry("x", "branch feat-x", "wt/x.md"), "b~2": Entry("b", "branch fix-y", "fix-y:b.md")}


def test_the_checkouts_order_stays_and_each_branch_hit_goes_where_its_lowered_score_reaches() -> None:
    own = [hit("a", 9.0), hit("b", 7.0), hit("c", 1.0)]  # scores of the checkout's own index
    both = [hit("a", 5.0), hit("x~1", 4.5), hit("b", 4.0), hit("b~2", 3.0), hit("c", 1.0)]  # the shared index
    merged = merge(own, both, ENTRIES, 0.1, 10)
    assert [(h.name, h.path, round(h.score, 2)) for h in merged] == [
        ("a", None, 9.0), ("x", "wt/x.md", 4.05), ("b", None, 7.0), ("b", "fix-y:b.md", 2.7), ("c", None, 1.0)
    ]  # fmt: skip
    assert merged[1].why[-1].detail == "branch feat-x" and merged[1].why[-1].retriever == "branch"
    # a larger share puts x after b; the limit cuts the end
    assert [h.name for h in merge(own, both, ENTRIES, 0.2, 3)] == ["a", "b", "x"]


def test_same_content_as_a_checkout_hit_is_left_out_and_unreached_checkout_hits_count_lowest() -> None:
    own = [hit("a", 9.0), hit("z", 0.5)]
    both = [hit("x~1", 6.0, content="hash-a"), hit("a", 5.0), hit("b~2", 0.9)]
    merged = merge(own, both, ENTRIES, 0.1, 10)
    # x holds a's content: left out; z was not reached in the shared index: it counts as the lowest score there
    assert [h.name for h in merged] == ["a", "z", "b"]  # b: 0.9 lowered to 0.81, below 0.9
    assert [h.name for h in merge(own, [*both, hit("c", 0.5)], ENTRIES, 0.0, 10)] == ["a", "b", "z"]


def test_relevance_places_them_when_the_hits_have_it() -> None:
    def judged(name: str, score: float, relevance: float) -> Hit:
        return Hit(name, name, score, "canonical", "long_term", None, f"hash-{name}", relevance=relevance)

    own = [judged("a", 0.030, 0.9), judged("b", 0.029, 0.6)]
    # fused scores close together, relevance apart: 0.8 lowered by 0.2 is 0.64, above b's 0.6
    both = [judged("a", 0.0164, 0.9), judged("x~1", 0.0163, 0.8), judged("b", 0.0162, 0.6)]
    merged = merge(own, both, ENTRIES, 0.2, 10)
    assert [(h.name, round(h.relevance or 0, 2)) for h in merged] == [("a", 0.9), ("x", 0.64), ("b", 0.6)]
    assert [h.name for h in merge(own, both, ENTRIES, 0.3, 10)] == ["a", "b", "x"]  # 0.56 < 0.6
    assert not merged[1].weak and merge(own, both, ENTRIES, 0.6, 10, 0.34)[2].weak  # 0.32: below the floor
