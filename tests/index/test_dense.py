"""Dense retrieval through the Router: chunks, model tags, incremental embedding, fusion."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import write

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.records import replace
from memrouter.embed.hashing import HashEmbedder


class CountingEmbedder(HashEmbedder):
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension=dimension)
        self.embedded = 0

    def embed_batch(self, texts):  # type: ignore[no-untyped-def]
        self.embedded += len(texts)
        return super().embed_batch(texts)


def open_router(memories: Path, index_dir: Path, embedder: HashEmbedder) -> Router:
    config = replace(Config.load(root=memories, index_dir=index_dir), embedder="hash")
    router = Router(config)
    router.workspace.index.dense._factory = lambda: embedder  # the same deterministic embedder, counted
    router.workspace.index.dense._model_id = embedder.model_id
    return router


def test_the_first_hybrid_search_of_a_small_project_embeds_it(memories: Path, tmp_path: Path) -> None:
    with open_router(memories, tmp_path / "idx", CountingEmbedder()) as router:
        assert router.effective_mode() == "hybrid" and router.effective_mode("lexical") == "lexical"
        router.search("postgres", mode="lexical")
        assert router.workspace.index.dense._embedder is None  # a lexical search never loads the model
        assert router.status()["dense"]["embedded_memories"] == 0
        router.search("postgres")
        assert router.status()["dense"]["embedded_memories"] == 6


def test_only_changed_memories_are_embedded_again(memories: Path, tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with open_router(memories, tmp_path / "idx", embedder) as router:
        router.refresh(embed=True)
        first = embedder.embedded
        assert first >= 6
        router.search("postgres", mode="hybrid")
        assert embedder.embedded == first + 1  # only the query
        write(memories, "ci/flaky-tests", "# Flaky tests in CI\n\nQuarantine after two failures.\n")
        router.search("quarantine", mode="hybrid")
        assert embedder.embedded == first + 1 + 1 + 1  # one chunk, one query


def test_hybrid_why_names_both_retrievers_and_the_chunk(memories: Path, tmp_path: Path) -> None:
    with open_router(memories, tmp_path / "idx", CountingEmbedder()) as router:
        router.refresh(embed=True)
        hit = router.search("postgres transactions staging port", mode="hybrid")[0]
        assert hit.name == "adr/adr-001-postgres"
        retrievers = {m.retriever: m for m in hit.why}
        assert set(retrievers) == {"lexical", "dense"}  # fixed fusion: no per-query weights to report
        assert retrievers["dense"].detail and retrievers["dense"].detail.startswith("chunk ")
        semantic = router.search("postgres transactions", mode="semantic")
        assert semantic and all(m.retriever == "dense" for h in semantic for m in h.why)


def test_filters_apply_inside_dense_search(memories: Path, tmp_path: Path) -> None:
    with open_router(memories, tmp_path / "idx", CountingEmbedder()) as router:
        router.refresh(embed=True)
        hits = router.search("flaky tests", mode="semantic", prefix="incidents/")
        assert [h.name for h in hits] == ["incidents/flaky-tests"]
        assert router.search("flaky tests", mode="semantic", kinds=["nope"]) == []


def test_vectors_of_another_model_are_never_searched(memories: Path, tmp_path: Path) -> None:
    with open_router(memories, tmp_path / "idx", CountingEmbedder(dimension=64)) as router:
        router.refresh(embed=True)
    other = CountingEmbedder(dimension=32)
    with open_router(memories, tmp_path / "idx", other) as router:
        status = router.status()["dense"]
        assert status["other_model_chunks"] > 0 and status["reembed_needed"] and status["chunks"] == 0
        assert router.status()["dense"]["pending_memories"] == 6  # none has vectors of this model
        router.refresh(embed=True, reembed=True)
        status = router.status()["dense"]
        assert status["other_model_chunks"] == 0 and status["embedded_memories"] == 6
        assert router.search("postgres", mode="semantic")


def test_deleted_memories_leave_the_dense_index(memories: Path, tmp_path: Path) -> None:
    with open_router(memories, tmp_path / "idx", CountingEmbedder()) as router:
        router.refresh(embed=True)
        router.delete("adr/adr-001-postgres")
        names = [h.name for h in router.search("postgres transactions", mode="semantic")]
        assert "adr/adr-001-postgres" not in names
        assert router.status()["dense"]["embedded_memories"] == 5


@pytest.mark.slow
def test_real_model_finds_a_paraphrase(tmp_path: Path) -> None:
    root = tmp_path / "m"
    write(root, "local-dev", "# Local development setup\n\nRun docker compose up, then make dev to start the API.\n")
    write(root, "helm", "# Deploying with Helm\n\nThe chart lives in deploy/chart; values per environment.\n")
    with Router.open(root=root, index_dir=tmp_path / "idx") as router:
        router.refresh(embed=True)
        hits = router.search("start the application on my own machine", mode="semantic")
        assert hits[0].name == "local-dev"


def test_doctor_recall_on_the_index(memories: Path, tmp_path: Path) -> None:
    with open_router(memories, tmp_path / "idx", CountingEmbedder()) as router:
        assert router.measure_recall()["recall"] is None  # no vectors yet
        router.refresh(embed=True)
        report = router.measure_recall(samples=20)
        assert report["recall"] >= 0.9 and report["search_path"] == "exact" and report["chunks"] >= 6


def test_a_hit_found_by_meaning_alone_shows_its_best_chunk(tmp_path: Path) -> None:
    root = tmp_path / "m"
    # longer than the snippet's word scan, so only the chunk offset can place the window
    opening = "# Release notes\n\n" + "\n\n".join(f"Version {i} changed the packaging scripts." for i in range(250))
    write(root, "release-notes", opening + "\n\n## Rollback\n\nTo roll back, redeploy the previous image tag.\n")
    with open_router(root, tmp_path / "idx", CountingEmbedder(dimension=256)) as router:
        router.refresh(embed=True)
        (hit,) = router.search("redeploy previous image", mode="semantic", limit=1)
        assert [m.retriever for m in hit.why] == ["dense"] and "Rollback" in (hit.why[0].detail or "")
        assert "**redeploy** the **previous** **image** tag" in hit.snippet
