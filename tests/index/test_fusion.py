from __future__ import annotations

from memrouter.index.fusion import Ranked, reciprocal_rank_fusion


def test_single_list_keeps_its_order_and_scores() -> None:
    fused = reciprocal_rank_fusion({"lexical": [Ranked(3, 9.0), Ranked(1, 4.0)]}, {})
    assert [(f.memory_id, f.score) for f in fused] == [(3, 9.0), (1, 4.0)]
    assert fused[0].why[0].retriever == "lexical" and fused[0].why[0].rank == 1


def test_agreement_beats_a_single_top_rank() -> None:
    lists = {
        "lexical": [Ranked(1, 10.0), Ranked(2, 5.0), Ranked(3, 1.0)],
        "dense": [Ranked(2, 0.9, "chunk 0"), Ranked(4, 0.8), Ranked(1, 0.1)],
    }
    fused = reciprocal_rank_fusion(lists, {"lexical": 1.0, "dense": 1.0}, k=60)
    assert fused[0].memory_id == 2
    assert {m.retriever for m in fused[0].why} == {"lexical", "dense"}
    assert next(m for m in fused[0].why if m.retriever == "dense").detail == "chunk 0"


def test_weights_tilt_the_result() -> None:
    lists = {"lexical": [Ranked(1, 1.0), Ranked(2, 1.0)], "dense": [Ranked(2, 1.0), Ranked(1, 1.0)]}
    assert reciprocal_rank_fusion(lists, {"lexical": 2.0, "dense": 1.0})[0].memory_id == 1
    assert reciprocal_rank_fusion(lists, {"lexical": 1.0, "dense": 2.0})[0].memory_id == 2
    assert reciprocal_rank_fusion({"lexical": [], "dense": []}, {}) == []
