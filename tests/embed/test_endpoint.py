"""The endpoint embedder and reranker against a fake that speaks the real protocols and misbehaves on demand."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from memrouter.core.errors import ConfigError, EndpointContractError, EndpointUnavailable
from memrouter.embed import Embedder, embed_many, get_embedder
from memrouter.embed.endpoint import EndpointEmbedder, EndpointReranker
from memrouter.embed.hashing import HashEmbedder
from memrouter.testing.endpoint_fake import FakeEndpoint, serve_fake_endpoint
from memrouter.testing.servers import free_port, hanging_listener


@pytest.fixture
def fake() -> Iterator[FakeEndpoint]:
    with serve_fake_endpoint(dimension=64) as running:
        yield running


def embedder(fake: FakeEndpoint, **options: object) -> EndpointEmbedder:
    made = get_embedder("openai", url=fake.url, model="fake-model", **options)
    assert isinstance(made, EndpointEmbedder)
    return made


def test_it_is_an_embedder_and_gives_the_servers_vectors_in_order(fake: FakeEndpoint) -> None:
    found = embedder(fake)
    assert isinstance(found, Embedder)
    texts = ["postgres on port 5433", "flaky tests in CI", "the release checklist"]
    vectors = found.embed_batch(texts)
    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    assert np.allclose(vectors, HashEmbedder(dimension=64).embed_batch(texts), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert fake.requests[-1].body == {"model": "fake-model", "input": texts, "encoding_format": "float"}


def test_the_dimension_is_asked_of_the_server_once_when_not_configured(fake: FakeEndpoint) -> None:
    found = embedder(fake)
    assert found.dimension == 64 and found.dimension == 64
    assert fake.calls("/v1/embeddings") == 1
    assert found.model_id == "endpoint:fake-model"
    assert embedder(fake, dimension=64).model_id == "endpoint:fake-model@64"


def test_a_configured_dimension_is_sent_and_another_length_is_a_contract_error(fake: FakeEndpoint) -> None:
    found = embedder(fake, dimension=32)
    with pytest.raises(EndpointContractError, match=r"\[64\] dimensions; expected 32"):
        found.embed_batch(["a text"])
    assert fake.requests[-1].body["dimensions"] == 32
    fake.fail("dimension", dimension=65)
    with pytest.raises(EndpointContractError, match="dimensions"):
        embedder(fake, dimension=64).embed_batch(["another text"])


def test_texts_go_in_batches_of_batch_size(fake: FakeEndpoint) -> None:
    found = embedder(fake, batch_size=2)
    vectors = embed_many(found, [f"text number {n}" for n in range(5)], batch_size=32)
    assert vectors.shape == (5, 64)
    # the first request asks the dimension (embed_many sizes its result first), then the batches
    assert [len(seen.body["input"]) for seen in fake.requests] == [1, 2, 2, 1]


def test_the_key_is_sent_as_a_bearer_token_and_never_in_status(fake: FakeEndpoint) -> None:
    found = embedder(fake, key="s3cret-key")
    found.embed_batch(["x"])
    assert fake.requests[-1].headers["authorization"] == "Bearer s3cret-key"
    assert "s3cret" not in repr(found.health()) + repr(found.client.state())


def test_transient_failures_are_retried_with_backoff(fake: FakeEndpoint) -> None:
    waits: list[float] = []
    fake.fail("status", status=503, times=2)
    vectors = embedder(fake, sleep=waits.append).embed_batch(["retry me"])
    assert vectors.shape == (1, 64)
    assert fake.calls("/v1/embeddings") == 3
    assert len(waits) == 2 and 0.25 <= waits[0] <= 0.32 and 0.5 <= waits[1] <= 0.63  # doubled, with jitter


def test_retry_after_is_honoured_up_to_a_limit(fake: FakeEndpoint) -> None:
    waits: list[float] = []
    fake.fail("status", status=429, retry_after=2, times=1)
    embedder(fake, sleep=waits.append).embed_batch(["slow down"])
    fake.fail("status", status=503, retry_after=3600, times=1)
    embedder(fake, sleep=waits.append).embed_batch(["much slower"])
    assert waits == [2.0, 30.0]
    assert fake.calls("/v1/embeddings") == 4


def test_a_refusal_is_permanent_and_not_retried(fake: FakeEndpoint) -> None:
    fake.fail("status", status=401, message="bad key")
    with pytest.raises(EndpointContractError, match="HTTP 401: bad key"):
        embedder(fake).embed_batch(["x"])
    assert fake.calls("/v1/embeddings") == 1


@pytest.mark.parametrize(("mode", "words"), [("garbage", "not JSON"), ("count", "0 embeddings for 1 texts")])
def test_an_answer_outside_the_protocol_is_a_contract_error(fake: FakeEndpoint, mode: str, words: str) -> None:
    fake.fail(mode)
    with pytest.raises(EndpointContractError, match=words):
        embedder(fake, dimension=64).embed_batch(["x"])


def test_after_giving_up_the_endpoint_is_not_asked_again_for_a_while(fake: FakeEndpoint) -> None:
    fake.fail("status", status=500)
    found = embedder(fake, dimension=64, retries=1)
    with pytest.raises(EndpointUnavailable, match="after 2 tries"):
        found.embed_batch(["x"])
    asked = fake.calls("/v1/embeddings")
    fake.fail("heal")
    with pytest.raises(EndpointUnavailable, match="not asked again"):
        found.embed_batch(["x"])
    assert fake.calls("/v1/embeddings") == asked
    assert found.health()["ok"] is True  # a health check asks anyway, and clears the failure
    assert found.embed_batch(["x"]).shape == (1, 64)


def test_a_hanging_server_times_out_and_is_retried() -> None:
    waits: list[float] = []
    with hanging_listener() as port:
        url = f"http://127.0.0.1:{port}/v1"
        found = EndpointEmbedder(url=url, model="m", dimension=8, timeout=0.3, retries=1, sleep=waits.append)
        with pytest.raises(EndpointUnavailable, match=r"timed out\) after 2 tries"):
            found.embed_batch(["x"])
    assert len(waits) == 1


def test_a_server_that_is_not_there_is_unavailable() -> None:
    found = EndpointEmbedder(url=f"http://127.0.0.1:{free_port()}/v1", model="m", dimension=8, retries=0)
    with pytest.raises(EndpointUnavailable, match="cannot reach it"):
        found.embed_batch(["x"])
    health = found.health()
    assert health["ok"] is False and "cannot reach it" in health["error"]


def test_a_url_ending_in_the_route_is_taken_as_the_route(fake: FakeEndpoint) -> None:
    found = EndpointEmbedder(url=fake.url + "/embeddings", model="m")
    assert found.embed_batch(["x"]).shape == (1, 64)
    assert fake.requests[-1].path == "/v1/embeddings"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"url": "ftp://host/v1", "model": "m"}, "http:// or https://"),
        ({"url": "http://127.0.0.1:1/v1", "model": ""}, "must name the endpoint's model"),
        ({"url": "http://127.0.0.1:1/v1", "model": "m", "batch_size": 0}, "batch_size"),
        ({"url": "http://127.0.0.1:1/v1", "model": "m", "timeout": 0}, "timeout"),
    ],
)
def test_bad_settings_are_config_errors(options: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        EndpointEmbedder(**options)  # type: ignore[arg-type]


def test_chunks_are_counted_in_the_models_word_pieces(fake: FakeEndpoint) -> None:
    found = embedder(fake)
    assert found.count_tokens("PostgreSQL staging runs on port 5433.") == get_embedder().count_tokens(
        "PostgreSQL staging runs on port 5433."
    )


@pytest.mark.parametrize("tei", [False, True])
def test_the_reranker_reads_both_answer_shapes(tei: bool) -> None:
    with serve_fake_endpoint(tei=tei) as fake:
        reranker = EndpointReranker(url=fake.base, model="rerank-model")
        documents = ["the release checklist", "postgres staging port 5433", "flaky tests"]
        scores = reranker.scores("which port does postgres staging use", documents)
        assert len(scores) == 3 and max(range(3), key=scores.__getitem__) == 1
        body = fake.requests[-1].body
        assert body["documents"] == documents and body["texts"] == documents and body["model"] == "rerank-model"
        assert fake.requests[-1].path == "/rerank"
        assert reranker.health()["ok"] is True


def test_the_reranker_fails_like_the_embedder(fake: FakeEndpoint) -> None:
    reranker = EndpointReranker(url=fake.base + "/rerank", retries=0)
    fake.fail("status", status=502)
    with pytest.raises(EndpointUnavailable):
        reranker.scores("q", ["a", "b"])
    fake.fail("heal")
    reranker = EndpointReranker(url=fake.base, retries=0)
    fake.fail("garbage")
    with pytest.raises(EndpointContractError):
        reranker.scores("q", ["a", "b"])
