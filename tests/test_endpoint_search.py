"""Search through an embedding (and reranking) endpoint: memrouter embed-serve for the real thing, a fake for faults."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import isolated_home

from memrouter import Router
from memrouter.core.errors import ConfigError, EndpointUnavailable
from memrouter.testing.endpoint_fake import FakeEndpoint, embed_serve, serve_fake_endpoint

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memories"
QUERIES = [
    "why did we choose a relational database",
    "flaky tests",
    "staging postgres port",
    "how do we roll back a deploy",
]


def project_with(tmp_path: Path, toml: str) -> Path:
    """A project holding the example memories, configured with ``toml``: its memories root."""
    project = tmp_path / "project"
    root = project / ".serena" / "memories"
    if not root.exists():
        shutil.copytree(EXAMPLES, root)
    (project / "memrouter.toml").write_text(toml, encoding="utf-8")
    return root


def endpoint_toml(url: str, model: str = "all-MiniLM-L6-v2", extra: str = "") -> str:
    return f'[embed]\nurl = "{url}"\nmodel = "{model}"\n{extra}'


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memrouter", "--root", str(root), *args], capture_output=True, text=True, timeout=300
    )


def chunk_vectors(index: Path) -> dict[tuple[str, int], np.ndarray]:
    with sqlite3.connect(index) as conn:
        rows = conn.execute("SELECT m.name, c.ordinal, c.vector FROM chunks c JOIN memories m ON m.id = c.memory_id")
        return {(name, ordinal): np.frombuffer(blob, dtype=np.float32) for name, ordinal, blob in rows}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, _built_model_graph: Path | None) -> Iterator[str]:
    """``memrouter embed-serve`` for the module, in a home of its own (the built model graph in its cache)."""
    with pytest.MonkeyPatch.context() as patch:
        isolated_home(tmp_path_factory.mktemp("served-home"), _built_model_graph, patch)
        env = dict(os.environ)
    with embed_serve(env=env) as base:
        yield base


@pytest.mark.long
@pytest.mark.slow
def test_an_index_built_through_embed_serve_holds_the_built_in_models_vectors(served: str, tmp_path: Path) -> None:
    root = project_with(tmp_path, endpoint_toml(served + "/v1"))
    with Router.open(root=root, index_dir=tmp_path / "through") as through:
        through.refresh(embed=True)
        assert through.status()["dense"]["model"] == "endpoint:all-MiniLM-L6-v2"
        by_endpoint = {q: [h.name for h in through.search(q, limit=5)] for q in QUERIES}
    (root.parent.parent / "memrouter.toml").unlink()
    with Router.open(root=root, index_dir=tmp_path / "built-in") as built_in:
        built_in.refresh(embed=True)
        by_model = {q: [h.name for h in built_in.search(q, limit=5)] for q in QUERIES}
    served_vectors = chunk_vectors(tmp_path / "through" / "index.sqlite")
    own_vectors = chunk_vectors(tmp_path / "built-in" / "index.sqlite")
    assert served_vectors.keys() == own_vectors.keys() and len(own_vectors) > 50
    cosines = [float(served_vectors[key] @ own_vectors[key]) for key in own_vectors]
    assert min(cosines) >= 0.9999
    assert by_endpoint == by_model


@pytest.mark.slow
def test_the_rerank_endpoint_orders_the_best_candidates(served: str, tmp_path: Path) -> None:
    # The second stage is the endpoint's; the first embeds with the hashing model (the endpoint's own embedding
    # is the test above's), so the server's model reads only the candidates.
    toml = f'[embed]\nmodel = "hash"\n[search]\nrerank = true\n[rerank]\nurl = "{served}"\n'
    root = project_with(tmp_path, toml)
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
        hits = router.search("which port does the staging database listen on", limit=5)
        reads = [next(m for m in hit.why if m.retriever == "rerank") for hit in hits]
        assert [m.rank for m in reads] == [1, 2, 3, 4, 5]
        assert all("reranking endpoint" in (m.detail or "") for m in reads)
        scores = [m.score for m in reads]
        assert scores == sorted(scores, reverse=True)
        assert router.status()["rerank_endpoint"]["ok"] is True
        # no token vectors are kept for an endpoint's second stage
        assert "token_chunks" not in router.status()["dense"]


@pytest.fixture
def fake() -> Iterator[FakeEndpoint]:
    with serve_fake_endpoint(dimension=64) as running:
        yield running


def test_hybrid_search_is_lexical_while_the_endpoint_is_down(fake: FakeEndpoint, tmp_path: Path) -> None:
    root = project_with(tmp_path, endpoint_toml(fake.url, "fake", "timeout = 2\n"))
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
        assert router.effective_mode() == "hybrid"
        healthy = [hit.name for hit in router.search("flaky tests", limit=5)]
        fake.fail("status", status=503)
        hits = router.search("flaky tests", limit=5)
        assert hits and hits[0].name in healthy
        assert {m.retriever for hit in hits for m in hit.why} >= {"lexical", "dense"}
        notes = [m.detail or "" for m in hits[0].why if m.retriever == "dense"]
        assert notes and notes[0].startswith("lexical alone: the embedding endpoint")
        status = router.status()
        assert status["dense"]["endpoint"]["ok"] is False
        assert any(
            w.startswith("embedding endpoint unavailable, hybrid search is lexical alone") for w in status["warnings"]
        )
        with pytest.raises(EndpointUnavailable):
            router.search("flaky tests", mode="semantic")
    done = cli(root, "--index-dir", str(tmp_path / "index"), "search", "flaky tests", "--mode", "semantic")
    assert done.returncode == 3 and "embedding endpoint" in done.stderr
    done = cli(root, "--index-dir", str(tmp_path / "index"), "search", "flaky tests", "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)
    fake.fail("heal")
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        hits = router.search("flaky tests", limit=5)
        assert not [m for m in hits[0].why if m.retriever == "dense" and (m.detail or "").startswith("lexical alone")]


def test_new_memories_wait_for_the_endpoint_and_are_embedded_once_it_answers(
    fake: FakeEndpoint, tmp_path: Path
) -> None:
    root = project_with(tmp_path, endpoint_toml(fake.url, "fake"))
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
    fake.fail("status", status=502)
    (root / "late-note.md").write_text("# Late note\n\nThe harbour crane schedule moved to Tuesdays.\n")
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        assert router.search("harbour crane schedule", limit=3)[0].name == "late-note"  # lexical finds it
        assert router.status()["dense"]["pending_memories"] == 1
    fake.fail("heal")
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.search("harbour crane schedule", limit=3)
        assert router.status()["dense"]["pending_memories"] == 0


def test_a_wrong_dimension_is_refused_and_search_goes_on(fake: FakeEndpoint, tmp_path: Path) -> None:
    root = project_with(tmp_path, endpoint_toml(fake.url, "fake", "dimension = 64\n"))
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
        fake.fail("dimension", dimension=32)
        hits = router.search("flaky tests", limit=3)
        assert hits and any((m.detail or "").startswith("lexical alone") for m in hits[0].why)
    (root / "late-note.md").write_text("# Late note\n\nThe harbour crane schedule moved to Tuesdays.\n")
    done = cli(root, "--index-dir", str(tmp_path / "index"), "index")  # indexing asks, and says why it fails
    assert done.returncode == 3 and "[32] dimensions; expected 64" in done.stderr


def test_changing_the_model_marks_the_vectors_stale_and_reembed_replaces_them(
    fake: FakeEndpoint, tmp_path: Path
) -> None:
    root = project_with(tmp_path, endpoint_toml(fake.url, "model-a"))
    index = ["--index-dir", str(tmp_path / "index")]
    assert cli(root, *index, "index").returncode == 0
    project_with(tmp_path, endpoint_toml(fake.url, "model-b"))
    status = json.loads(cli(root, *index, "status", "--format", "json").stdout)
    assert status["dense"]["model"] == "endpoint:model-b"
    assert status["dense"]["reembed_needed"] is True and status["dense"]["other_model_chunks"] > 0
    done = cli(root, *index, "index", "--reembed")
    assert done.returncode == 0, done.stderr
    status = json.loads(cli(root, *index, "status", "--format", "json").stdout)
    assert status["dense"]["reembed_needed"] is False and status["dense"]["embedded_memories"] == 30
    assert {seen.body["model"] for seen in fake.requests} == {"model-a", "model-b"}


def test_a_rerank_endpoint_that_fails_leaves_the_fused_order(fake: FakeEndpoint, tmp_path: Path) -> None:
    plain = project_with(tmp_path, endpoint_toml(fake.url, "fake"))
    with Router.open(root=plain, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
        fused = [hit.name for hit in router.search("flaky tests in ci", limit=5)]
    project_with(
        tmp_path, endpoint_toml(fake.url, "fake") + f'[search]\nrerank = true\n[rerank]\nurl = "{fake.base}"\n'
    )
    with Router.open(root=plain, index_dir=tmp_path / "index") as router:
        reranked = router.search("flaky tests in ci", limit=5)
        assert all(any(m.retriever == "rerank" for m in hit.why) for hit in reranked)
        assert fake.calls("/rerank") == 1
        fake.fail("status", status=500, route="/rerank")
        kept = router.search("flaky tests in ci", limit=5)
        assert [hit.name for hit in kept] == fused
        assert not any(m.retriever == "rerank" for hit in kept for m in hit.why)
        assert "reranking endpoint unavailable" in " ".join(router.status()["warnings"])


def test_the_key_comes_from_the_environment_variable_named(
    fake: FakeEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project_with(tmp_path, endpoint_toml(fake.url, "fake", 'key_env = "HARBOR_EMBED_KEY"\n'))
    with pytest.raises(ConfigError, match="HARBOR_EMBED_KEY, which is not set"):
        Router.open(root=root, index_dir=tmp_path / "index")
    monkeypatch.setenv("HARBOR_EMBED_KEY", "k-123")
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
        summary = router.status()["config"]["embed_endpoint"]
    assert (
        summary["key_env"] == "HARBOR_EMBED_KEY" and summary["key_set"] is True and "k-123" not in json.dumps(summary)
    )
    assert {seen.headers["authorization"] for seen in fake.requests} == {"Bearer k-123"}


def test_batch_size_and_timeout_come_from_the_configuration(fake: FakeEndpoint, tmp_path: Path) -> None:
    root = project_with(tmp_path, endpoint_toml(fake.url, "fake", "batch_size = 7\ntimeout = 0.5\n"))
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
        sizes = [len(seen.body["input"]) for seen in fake.requests if seen.path == "/v1/embeddings"]
        assert max(sizes) == 7 and sum(sizes) > 100
        fake.fail("hang", seconds=2)  # a slow server: it answers, after the configured timeout
        hits = router.search("flaky tests", limit=3)
        assert any(
            (m.detail or "").startswith("lexical alone") and "timed out" in (m.detail or "") for m in hits[0].why
        )


def test_the_rerank_sections_keys_reach_the_endpoint(
    fake: FakeEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARBOR_RERANK_KEY", "r-456")
    toml = endpoint_toml(fake.url, "fake") + (
        f'[search]\nrerank = true\n[rerank]\nurl = "{fake.base}"\nmodel = "bge-reranker"\n'
        'key_env = "HARBOR_RERANK_KEY"\ntimeout = 0.5\n'
    )
    root = project_with(tmp_path, toml)
    with Router.open(root=root, index_dir=tmp_path / "index") as router:
        router.refresh(embed=True)
        router.search("flaky tests", limit=3)
        asked = [seen for seen in fake.requests if seen.path == "/rerank"]
        assert asked[-1].body["model"] == "bge-reranker" and asked[-1].headers["authorization"] == "Bearer r-456"
        fake.fail("hang", seconds=2, route="/rerank")  # answered after the configured timeout: too late
        hits = router.search("flaky tests", limit=3)
        assert hits and not any(m.retriever == "rerank" for hit in hits for m in hit.why)
    with pytest.raises(ConfigError, match=r"\[rerank\] needs url"):
        Router.open(root=project_with(tmp_path, '[rerank]\nmodel = "m"\n'), index_dir=tmp_path / "other")
    with pytest.raises(ConfigError, match=r"\[embed\] dimension need \[embed\] url"):
        Router.open(root=project_with(tmp_path, "[embed]\ndimension = 8\n"), index_dir=tmp_path / "other")


def test_status_names_the_endpoints_and_whether_they_answer(fake: FakeEndpoint, tmp_path: Path) -> None:
    toml = endpoint_toml(fake.url, "fake") + f'[search]\nrerank = true\n[rerank]\nurl = "{fake.base}"\n'
    root = project_with(tmp_path, toml)
    index = ["--index-dir", str(tmp_path / "index")]
    assert cli(root, *index, "index").returncode == 0
    shown = cli(root, *index, "status").stdout
    assert f"embed:    {fake.url} model 'fake' up" in shown and f"rerank:   {fake.base} up" in shown
    fake.fail("status", status=503)
    shown = cli(root, *index, "status").stdout
    assert f"embed:    {fake.url} model 'fake' down" in shown and f"rerank:   {fake.base} down" in shown
    assert "warning:  embedding endpoint unavailable" in shown
