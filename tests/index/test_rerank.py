"""The second stage: late interaction over MiniLM's token vectors, stored with the dense ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import write

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.errors import ConfigError
from memrouter.core.model import Match
from memrouter.core.records import replace
from memrouter.index.fusion import Fused
from memrouter.index.sqlite.rerank import DEPTH, SHARES, Reading, Shares, rescored
from memrouter.index.sqlite.token_vectors import TokenFilter, pack, unpack

MEMORIES = {
    "ci/flaky-retries": "# Flaky test retries\n\nThe CI retries a failing test twice before it marks the job red.\n",
    "ops/backups": "# Database backups\n\nPostgreSQL is dumped nightly to object storage and kept 30 days.\n",
    "team/onboarding": "# Onboarding\n\nNew people pair with a buddy for their first two weeks.\n",
    "ops/deploys": "# Deploys\n\nProduction deploys run on Tuesdays after the change review.\n",
}


def _project(base: Path, rerank: bool, embedder: str = "minilm") -> Config:
    root = base / "memories"
    for name, text in MEMORIES.items():
        path = root / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    config = Config.load(root=root, index_dir=base / "index")
    return replace(config, embedder=embedder, search=replace(config.search, rerank=rerank))


def test_token_vectors_are_kept_only_while_reranking_is_on(tmp_path: Path) -> None:
    with Router(_project(tmp_path, rerank=False), watch=False) as router:
        router.refresh(embed=True)
        assert "token_chunks" not in router.status()["dense"]
        assert router.workspace.conn.execute("SELECT count(*) FROM chunk_tokens").fetchone()[0] == 0
    with Router(_project(tmp_path, rerank=True), watch=False) as router:
        # turned on: every memory lacks token vectors, and the next index adds them
        dense = router.status()["dense"]
        assert dense["pending_memories"] == len(MEMORIES) and dense["token_chunks"] == 0
        router.refresh(embed=True)
        dense = router.status()["dense"]
        assert dense["pending_memories"] == 0 and dense["token_chunks"] == dense["chunks"] > 0
        router.save("# Deploys\n\nProduction deploys run on Thursdays now.\n", "ops/deploys")
        router.search("deploy day")  # the change is embedded again, with its tokens
        rows = router.workspace.conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN chunk_tokens t ON t.chunk_id = c.id WHERE t.chunk_id IS NULL"
        ).fetchone()[0]
        assert rows == 0


def test_a_reranked_search_says_so_and_reads_the_words(tmp_path: Path) -> None:
    with Router(_project(tmp_path, rerank=True), watch=False) as router:
        router.refresh(embed=True)
        hits = router.search("how long do we keep the nightly database dumps?", limit=3)
        assert hits[0].name == "ops/backups"
        reranked = [match for match in hits[0].why if match.retriever == "rerank"]
        assert reranked and reranked[0].rank == 1 and reranked[0].score > 0
        assert "late interaction" in str(reranked[0].detail) and "lexical 1.00 of the best" in str(reranked[0].detail)
        # lexical search never reranks (it never loads the model)
        assert all(m.retriever != "rerank" for hit in router.search("backups", mode="lexical") for m in hit.why)


def test_rerank_needs_an_embedder_that_gives_token_vectors(tmp_path: Path) -> None:
    with Router(_project(tmp_path, rerank=True, embedder="hash"), watch=False) as router:
        with pytest.raises(ConfigError, match="rerank"):
            router.refresh(embed=True)


def test_token_vectors_from_onnx_and_numpy_agree() -> None:
    from memrouter.embed import get_embedder

    texts = ["The CI retries a failing test twice.", "x " * 300]
    onnx_pooled, onnx_tokens = get_embedder("minilm-onnx").embed_with_tokens(texts)
    numpy_pooled, numpy_tokens = get_embedder("minilm-numpy").embed_with_tokens(texts)
    assert np.abs(onnx_pooled - numpy_pooled).max() < 1e-4
    for (ids_a, rows_a), (ids_b, rows_b) in zip(onnx_tokens, numpy_tokens, strict=True):
        assert list(ids_a) == list(ids_b) and rows_a.shape == (len(ids_a), 384)
        assert np.abs(rows_a - rows_b).max() < 1e-4
        assert np.allclose(np.linalg.norm(rows_a, axis=1), 1.0, atol=1e-5)
    assert len(onnx_tokens[1][0]) == 300  # a text over one window: its windows one after another


def test_packed_token_vectors_round_trip_and_refuse_a_bad_blob() -> None:
    rows = np.random.default_rng(3).standard_normal((7, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    back = unpack(pack(rows), 384)
    assert back.shape == rows.shape and np.abs(back - rows).max() < 0.01
    assert unpack(pack(rows[:0]), 384).shape == (0, 384)
    with pytest.raises(ValueError, match="token blob"):
        unpack(b"\x01\x02\x03", 384)


def test_stop_words_and_punctuation_do_not_count() -> None:
    vocabulary = {"the": 0, "deploy": 1, ",": 2, "##s": 3, "[CLS]": 4, "what": 5}
    kept = TokenFilter.of(vocabulary).kept(np.array([0, 1, 2, 3, 4, 5]))
    assert kept.tolist() == [False, True, False, True, False, False]


def _fused(count: int) -> list[Fused]:
    return [Fused(n, round(1.0 / (60 + n), 6), (Match("lexical", n, 1.0),)) for n in range(1, count + 1)]


def test_the_second_stage_orders_what_it_read_by_its_own_score() -> None:
    fused = _fused(DEPTH + 5)
    readings = {n: Reading(0.5, 0.0, 0.0) for n in range(1, DEPTH + 1)}
    readings[3] = Reading(0.9, 0.0, 0.0)  # read best: first
    readings[2] = Reading(0.5, 1.0, 0.0)  # as good a reading as the others, but the best lexical hit
    readings[5] = Reading(0.5, 0.0, 0.5)  # ... or dense similarity
    result = rescored(fused, readings)
    assert [item.memory_id for item in result][:4] == [3, 5, 2, 1]
    assert SHARES.dense * 0.5 > SHARES.lexical * 1.0  # (why 5 comes before 2)
    assert [m.retriever for m in result[0].why] == ["lexical", "rerank"]
    assert result[0].why[-1].rank == 1 and "late interaction 0.900" in str(result[0].why[-1].detail)
    assert [item.memory_id for item in result][DEPTH:] == list(range(DEPTH + 1, DEPTH + 6))  # not read: kept
    # each takes the first stage's score of its new place: one scale, never rising down the list
    assert [item.score for item in result] == [item.score for item in fused]
    assert rescored(fused, {n: Reading(None, 1.0, 0.5) for n in readings}) == fused  # no token vectors yet


def test_a_memory_borrows_from_its_better_neighbour_which_joins_the_candidates() -> None:
    fused = _fused(4)
    readings = {n: Reading(0.4, 0.0, 0.0) for n in range(1, 5)}
    readings[4] = Reading(0.9, 1.0, 0.5)  # the turn that shares the question's words
    readings[77] = Reading(0.3, 0.0, 0.0)  # the next turn: not a candidate of the first stage
    near = {4: [77], 77: [4]}
    result = rescored(fused, readings, near)
    assert [item.memory_id for item in result][:2] == [4, 77]
    assert [m.retriever for m in result[1].why] == ["rerank"] and "neighbour" in str(result[1].why[0].detail)
    alone = rescored(fused, readings, near, Shares(SHARES.lexical, SHARES.dense, 0.0))
    assert [item.memory_id for item in alone][-1] == 77  # without the neighbour's share it stays last
    scores = [item.score for item in result]
    assert scores == sorted(scores, reverse=True)


def test_a_memory_inside_a_time_phrase_s_window_is_lifted() -> None:
    fused = _fused(3)
    readings = {1: Reading(0.6, 0.0, 0.0), 2: Reading(0.5, 0.0, 0.0, inside=True), 3: Reading(0.3, 0.0, 0.0)}
    assert SHARES.time > 0.1
    result = rescored(fused, readings)
    assert [item.memory_id for item in result] == [2, 1, 3]
    assert "in the time window" in str(result[0].why[-1].detail)
    assert [item.memory_id for item in rescored(fused, readings, shares=Shares(time=0.0))] == [1, 2, 3]


CHAT = {
    "chat/d1-1": "Tim: We are planning a team trip next month to explore a new city. Any ideas?",
    "chat/d1-2": "John: Edinburgh, Scotland! The castle, the old town and the history are magical.",
    "chat/d1-3": "Tim: Nice. I also started learning the violin last week.",
    "chat/d2-1": "John: My sister adopted a puppy named Max over the weekend.",
    "chat/d2-2": "Tim: Our basketball team won the regional final on Saturday.",
    "chat/d2-3": "John: I finally finished reading the fantasy series you recommended.",
}


def test_a_conversation_turn_is_found_through_the_turn_before_it(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    for name, text in {**CHAT, "misc-1": "Nothing about any city or trip here."}.items():
        write(root, name, text + "\n")
    config = Config.load(root=root, index_dir=tmp_path / "index")
    question = "Which city would be good for the team trip next month?"
    with Router(replace(config, search=replace(config.search, rerank=True)), watch=False) as router:
        router.refresh(embed=True)
        hits = router.search(question, limit=2)
        assert [hit.name for hit in hits] == ["chat/d1-1", "chat/d1-2"]
        assert "neighbour" in str([m for m in hits[1].why if m.retriever == "rerank"][0].detail)
        # a neighbour outside the filters is never read: "misc-1" has no neighbour, "chat/" keeps the chat
        assert all(hit.name.startswith("chat/") for hit in router.search(question, prefix="chat/"))
        assert [hit.name for hit in router.search(question, prefix="chat/d1-1")] == ["chat/d1-1"]


def test_the_rerank_option_of_search_and_eval(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from memrouter.cli import main

    config = _project(tmp_path, rerank=False)
    base = ["--root", str(config.root), "--index-dir", str(tmp_path / "index")]
    assert CliRunner().invoke(main, [*base, "index"], catch_exceptions=False).exit_code == 0
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"queries": [{"id": "q1", "query": "nightly dumps", "expected": ["ops/backups"]}]}))
    for flags, reranked in (([], False), (["--rerank"], True)):
        done = CliRunner().invoke(
            main, [*base, "eval", str(golden), "--format", "json", *flags], catch_exceptions=False
        )
        assert done.exit_code == 0, done.output
        assert json.loads(done.output)["rerank"] is reranked
        found = CliRunner().invoke(
            main, [*base, "search", "nightly dumps", "--format", "json", *flags], catch_exceptions=False
        )
        why = {m["retriever"] for hit in json.loads(found.output)["results"] for m in hit["why"]}
        assert ("rerank" in why) is reranked  # --rerank asks for the token vectors and uses them
