"""The second stage: late interaction over MiniLM's token vectors, stored with the dense ones."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memrouter import Router
from memrouter.config import Config
from memrouter.errors import ConfigError
from memrouter.index.fusion import Fused
from memrouter.index.rerank import DEPTH, TokenFilter, pack, reordered, unpack
from memrouter.model import Match

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
        assert router._conn.execute("SELECT count(*) FROM chunk_tokens").fetchone()[0] == 0
    with Router(_project(tmp_path, rerank=True), watch=False) as router:
        # turned on: every memory lacks token vectors, and the next index adds them
        dense = router.status()["dense"]
        assert dense["pending_memories"] == len(MEMORIES) and dense["token_chunks"] == 0
        router.refresh(embed=True)
        dense = router.status()["dense"]
        assert dense["pending_memories"] == 0 and dense["token_chunks"] == dense["chunks"] > 0
        router.save("# Deploys\n\nProduction deploys run on Thursdays now.\n", "ops/deploys")
        router.search("deploy day")  # the change is embedded again, with its tokens
        rows = router._conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN chunk_tokens t ON t.chunk_id = c.id WHERE t.chunk_id IS NULL"
        ).fetchone()[0]
        assert rows == 0


def test_a_reranked_search_says_so_and_reads_the_words(tmp_path: Path) -> None:
    with Router(_project(tmp_path, rerank=True), watch=False) as router:
        router.refresh(embed=True)
        hits = router.search("how long do we keep the nightly database dumps?", limit=3)
        assert hits[0].name == "ops/backups"
        reranked = [match for match in hits[0].why if match.retriever == "rerank"]
        assert reranked and reranked[0].rank == 1 and 0 < reranked[0].score <= 1
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


def test_reordering_fuses_the_first_stage_with_the_reranked_order() -> None:
    fused = [Fused(n, 1.0 / (60 + n), (Match("lexical", n, 1.0),)) for n in range(1, DEPTH + 6)]
    # the reranker likes the third best: it rises above the first two; past DEPTH nothing is reranked
    scores = {1: 0.2, 2: 0.1, 3: 0.9, DEPTH + 2: 0.99}
    result = reordered(fused, scores, k=60)
    assert [item.memory_id for item in result][:3] == [3, 1, 2]
    assert [m.retriever for m in result[0].why] == ["lexical", "rerank"]
    assert result[0].why[-1].rank == 1  # DEPTH + 2 has the best score, but is past DEPTH: not reranked
    assert [item.memory_id for item in result][DEPTH:] == list(range(DEPTH + 1, DEPTH + 6))
    assert [item.score for item in result] == sorted((item.score for item in result), reverse=True)
    assert reordered(fused, {}, k=60) == fused


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
