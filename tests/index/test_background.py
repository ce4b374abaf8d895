"""Embedding in the background: lexical answers at once, dense joins as vectors land, no search waits."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import write

from memrouter import Router
from memrouter.core.errors import ConfigError

TOPICS = ("deploy", "database", "retry", "cache", "logging", "review", "release", "secrets")


def project(tmp_path: Path, count: int = 24, model: str = "hash") -> Path:
    root = tmp_path / "project" / ".serena" / "memories"
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        write(root, f"{topic}/note-{n}", f"# {topic.title()} note {n}\n\nHow we handle {topic} in service {n}.\n")
    # on_search = 0: searches never embed, so what gets embedded here is the thread's work alone
    (root.parent.parent / "memrouter.toml").write_text(f'[embed]\nmodel = "{model}"\non_search = 0\n', encoding="utf-8")
    return root


def dense_status(router: Router) -> dict[str, Any]:
    found: dict[str, Any] = router.status()["dense"]
    return found


def wait_for(check: Any, what: str, seconds: float = 60.0) -> None:
    """Poll ``check`` until it is true; fail saying ``what`` did not happen (a liveness bound, not a speed test)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {seconds:.0f} s")
        time.sleep(0.05)


def test_lexical_answers_at_once_and_dense_joins_as_vectors_land(tmp_path: Path) -> None:
    root = project(tmp_path)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        assert router.search("retry")  # keyword-only: nothing embedded yet
        assert dense_status(router)["pending_memories"] == 24 and dense_status(router)["background"] is None
        router.embed_in_background()
        assert router.search("retry")  # answered while the thread works
        wait_for(lambda: dense_status(router)["pending_memories"] == 0, "embedding every memory")
        background = dense_status(router)["background"]
        assert background["running"] and background["embedded_memories"] == 24 and background["last_error"] is None
        hits = router.search("how we handle retry", mode="hybrid")
        assert router.effective_mode("hybrid") == "hybrid"
        assert any(match.retriever == "dense" for hit in hits for match in hit.why)


def test_a_save_is_embedded_by_the_thread_without_any_search(tmp_path: Path) -> None:
    root = project(tmp_path, count=4)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        router.refresh()
        router.embed_in_background()
        wait_for(lambda: dense_status(router)["pending_memories"] == 0, "embedding the first memories")
        router.save("# Queue note\n\nThe job queue drains every minute.\n", "queue/drain")
        wait_for(lambda: dense_status(router)["background"]["embedded_memories"] == 5, "embedding the saved memory")
        assert dense_status(router)["pending_memories"] == 0


class GatedEmbedder:
    """The real hash embedder, whose batches wait for ``gate``: a batch in flight for as long as a test needs."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.in_batch = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_batch(self, texts: Any) -> np.ndarray:  # type: ignore[type-arg]
        self.in_batch.set()
        self.gate.wait(60)
        result: np.ndarray = self.inner.embed_batch(texts)  # type: ignore[type-arg]
        return result


def test_no_search_waits_for_a_batch_in_flight(tmp_path: Path) -> None:
    from memrouter.embed import get_embedder

    root = project(tmp_path)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        router.refresh()
        gated = GatedEmbedder(get_embedder("hash"))
        dense = router.workspace.index.dense
        dense._embedder = gated  # the model this router's dense index embeds with
        router.embed_in_background()
        assert gated.in_batch.wait(30), "the thread never started a batch"
        answers: list[int] = []
        searching = threading.Thread(
            target=lambda: answers.extend(len(router.search(q, mode=m)) for q in ("retry", "cache") for m in ("lexical", "semantic", "hybrid"))
        )  # fmt: skip
        searching.start()
        searching.join(30)
        done = not searching.is_alive()
        gated.gate.set()  # let the batch finish either way
        assert done, "a search waited for the background batch"
        assert len(answers) == 6 and answers[0] > 0
        wait_for(lambda: dense_status(router)["pending_memories"] == 0, "the gated batches")


def test_close_stops_the_thread(tmp_path: Path) -> None:
    root = project(tmp_path, count=40)
    router = Router.open(root=root, index_dir=tmp_path / "idx", watch=False)
    router.refresh()
    router.embed_in_background()
    router.close()
    assert not any(thread.name == "memrouter-embed" and thread.is_alive() for thread in threading.enumerate())


def test_an_unknown_model_is_refused_and_search_stays_lexical(tmp_path: Path) -> None:
    root = project(tmp_path, model="no-such-model")
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        with pytest.raises(ConfigError, match="no-such-model"):
            router.embed_in_background()
        assert router.search("retry", mode="lexical")
        assert not any(thread.name == "memrouter-embed" for thread in threading.enumerate())


def test_a_close_while_the_model_loads_starts_no_thread_and_waits_for_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server stopped while a project's model still loads used to start the thread after close had
    looked, then join it holding the lock the thread waited for (a stop took the whole join timeout)."""
    import memrouter.embed

    real = memrouter.embed.get_embedder
    loading = threading.Event()

    def slow_model(name: str, **options: Any) -> Any:
        loading.set()
        time.sleep(1.0)
        return real(name, **options)

    router = Router.open(root=project(tmp_path), watch=False)
    router.status()
    monkeypatch.setattr(memrouter.embed, "get_embedder", slow_model)
    router.workspace.index.dense._embedder = None  # loaded again, slowly, by the thread below
    # close lets go of the search before the index: a pause there gives a started thread time to run
    monkeypatch.setattr(router.workspace.reader, "close", lambda: time.sleep(0.5))
    warm = threading.Thread(target=router.embed_in_background)
    warm.start()
    assert loading.wait(10)
    router.close()
    warm.join(10)
    assert router.workspace.index._background is None  # the close began first: no thread was started to be joined
    assert not warm.is_alive()
    assert [t for t in threading.enumerate() if t.name == "memrouter-embed" and t.is_alive()] == []
