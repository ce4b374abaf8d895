"""The OpenAI-compatible embeddings endpoint, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from memrouter.embed import Embedder, get_embedder
from memrouter.http.embeddings import EmbedServerLimits, make_app
from memrouter.testing.servers import free_port


@dataclass
class Served:
    url: str
    app: Any


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return get_embedder()


def _serve(app: Any) -> Iterator[Served]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        yield Served(f"http://127.0.0.1:{port}", app)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def served(embedder: Embedder) -> Iterator[Served]:
    limits = EmbedServerLimits(max_inputs=8, max_input_tokens=64, batch_window=0.2)
    yield from _serve(make_app(embedder, limits=limits))


def call(url: str, body: Any = None, *, method: str = "POST", headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.load(exc)


def test_health(served: Served) -> None:
    status, body = call(served.url + "/health", method="GET")
    assert (status, body) == (200, {"status": "healthy", "model": "all-MiniLM-L6-v2", "dimension": 384})


def test_single_string_gives_the_embedder_vector(served: Served, embedder: Embedder) -> None:
    status, body = call(served.url + "/v1/embeddings", {"input": "how is CI set up?"})
    assert status == 200
    assert body["object"] == "list" and body["model"] == "all-MiniLM-L6-v2"
    [item] = body["data"]
    assert item["object"] == "embedding" and item["index"] == 0
    expected = embedder.embed_batch(["how is CI set up?"])[0]
    assert len(item["embedding"]) == 384
    assert sum(a * b for a, b in zip(item["embedding"], expected.tolist(), strict=True)) > 0.9999
    tokens = embedder.count_tokens("how is CI set up?")
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}


def test_list_input_in_order_and_model_echoed(served: Served, embedder: Embedder) -> None:
    texts = ["postgres port on staging", "flaky tests in CI", "a"]
    status, body = call(served.url + "/v1/embeddings", {"input": texts, "model": "text-embedding-3-small"})
    assert status == 200 and body["model"] == "text-embedding-3-small"
    assert [item["index"] for item in body["data"]] == [0, 1, 2]
    expected = embedder.embed_batch(texts)
    for item, row in zip(body["data"], expected, strict=True):
        assert sum(a * b for a, b in zip(item["embedding"], row.tolist(), strict=True)) > 0.9999
    assert body["usage"]["prompt_tokens"] == sum(embedder.count_tokens(t) for t in texts)


def test_base64_is_little_endian_float32_of_the_same_vector(served: Served) -> None:
    texts = ["one text", "another text"]
    _, floats = call(served.url + "/v1/embeddings", {"input": texts})
    status, packed = call(served.url + "/v1/embeddings", {"input": texts, "encoding_format": "base64"})
    assert status == 200
    for as_float, as_b64 in zip(floats["data"], packed["data"], strict=True):
        raw = base64.b64decode(as_b64["embedding"])
        assert len(raw) == 384 * 4
        decoded = struct.unpack("<384f", raw)
        assert max(abs(a - b) for a, b in zip(decoded, as_float["embedding"], strict=True)) < 1e-6


def test_dimensions_equal_to_the_model_are_accepted(served: Served) -> None:
    status, _ = call(served.url + "/v1/embeddings", {"input": "x", "dimensions": 384})
    assert status == 200


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ({}, "missing_input", "required"),
        ({"input": None}, "missing_input", "required"),
        ({"input": []}, "empty_input", "empty"),
        ({"input": ["ok", 3.5]}, "invalid_input", "input[1]"),
        ({"input": {"text": "x"}}, "invalid_input", "string"),
        ({"input": [1, 2, 3]}, "token_ids_unsupported", "token-id"),
        ({"input": [[1, 2], [3]]}, "token_ids_unsupported", "token-id"),
        ({"input": ["x"] * 9}, "too_many_inputs", "at most 8"),
        ({"input": ["short", "word " * 100]}, "input_too_long", "input[1]"),
        ({"input": "x", "encoding_format": "int8"}, None, "encoding_format"),
        ({"input": "x", "dimensions": 256}, None, "dimensions"),
        ({"input": "x", "model": 3}, None, "model"),
    ],
)
def test_bad_input_is_a_clear_400(served: Served, body: Any, code: str | None, words: str) -> None:
    status, answer = call(served.url + "/v1/embeddings", body)
    assert status == 400
    error = answer["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == code
    assert words in error["message"]


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'"text"'])
def test_body_that_is_not_a_json_object_is_a_400(served: Served, body: bytes) -> None:
    status, answer = call(served.url + "/v1/embeddings", body)
    assert status == 400 and answer["error"]["message"]


DEEP = b"[" * 200_000 + b"]" * 200_000


@pytest.mark.parametrize(
    ("body", "headers", "code", "words"),
    [
        (b'{"input": "\\ud800"}', {}, "invalid_unicode", "input[0]"),
        (b'{"input": ["ok", "a\\udcffb"]}', {}, "invalid_unicode", "U+DCFF"),
        (b'{"input": "x", "model": "\\ud800"}', {}, "invalid_unicode", "'model'"),
        (DEEP, {}, "invalid_json", "too deeply"),
        (b'{"input": ' + DEEP + b"}", {}, "invalid_json", "too deeply"),
        (b'{"input": "x", "dimensions": NaN}', {}, "invalid_json", "NaN"),
        (b'{"input": "x", "dimensions": -Infinity}', {}, "invalid_json", "Infinity"),
        (b'{"input": "x", "dimensions": 1e999999}', {}, "invalid_json", "out of range"),
        (b'{"input": "x", "dimensions": 1' + b"0" * 5000 + b"}", {}, "invalid_json", "digits"),
        (b'{"input": "x", "dimensions": 384.0}', {}, None, "whole number"),
        (b'{"input": "x", "dimensions": true}', {}, None, "whole number"),
        (b'{"input": "\xff\xfe"}', {}, "invalid_json", "not UTF-8"),
        ('{"input": "x"}'.encode("utf-16"), {}, "invalid_json", "UTF-8"),
        (b'\xef\xbb\xbf{"input": "x"}', {}, "invalid_json", "BOM"),
        (b'{"input": "x"}', {"Content-Type": "application/json; charset=utf-16"}, "unsupported_charset", "UTF-8"),
        (b'{"input": "x"}', {"Content-Type": "text/plain; charset=latin-1"}, "unsupported_charset", "latin-1"),
        (b'{"input": "x"}', {"Content-Encoding": "gzip"}, "unsupported_content_encoding", "gzip"),
        (
            b'--b\r\nContent-Disposition: form-data; name="input"\r\n\r\nx\r\n--b--\r\n',
            {"Content-Type": "multipart/form-data; boundary=b"},
            "invalid_json",
            "not valid JSON",
        ),
    ],
)
def test_bodies_the_parser_or_encoder_cannot_take_are_a_400(
    served: Served, body: bytes, headers: dict[str, str], code: str | None, words: str
) -> None:
    status, answer = call(served.url + "/v1/embeddings", body, headers=headers)
    assert status == 400
    assert set(answer) == {"error"} and set(answer["error"]) == {"message", "type", "param", "code"}
    assert answer["error"]["type"] == "invalid_request_error" and answer["error"]["code"] == code
    assert words in answer["error"]["message"]
    assert call(served.url + "/v1/embeddings", {"input": "still serving"})[0] == 200


@pytest.mark.parametrize("content_type", [None, "application/json", "text/plain", "application/json; charset=UTF-8"])
def test_json_is_read_whatever_the_content_type(served: Served, content_type: str | None) -> None:
    headers = (
        {} if content_type is None else {"Content-Type": content_type}
    )  # urllib sends a form type, as curl -d does
    status, body = call(served.url + "/v1/embeddings", b'{"input": "caf\xc3\xa9 \\u00e9"}', headers=headers)
    assert status == 200 and len(body["data"][0]["embedding"]) == 384


def test_a_declared_length_over_the_limit_is_refused_before_reading(embedder: Embedder) -> None:
    for served in _serve(make_app(embedder, limits=EmbedServerLimits(max_body_bytes=1000))):
        status, answer = call(served.url + "/v1/embeddings", {"input": "x" * 2000})
        assert status == 413 and answer["error"]["code"] == "body_too_large"


class BrokenEmbedder:
    """An embedder whose every pass fails, as a model that ran out of memory would."""

    model_id = "broken"
    dimension = 4
    max_tokens = 16

    def count_tokens(self, text: str) -> int:
        return 1

    def embed_batch(self, texts: Any) -> Any:
        raise RuntimeError("the model fell over")


def test_a_server_failure_is_an_openai_style_500(caplog: pytest.LogCaptureFixture) -> None:
    for served in _serve(make_app(BrokenEmbedder())):
        status, answer = call(served.url + "/v1/embeddings", {"input": "x"})
        assert status == 500
        assert answer["error"]["type"] == "server_error" and answer["error"]["code"] == "server_error"
        assert "fell over" not in answer["error"]["message"]


def test_unknown_paths_and_methods(served: Served) -> None:
    assert call(served.url + "/v1/chat/completions", {"input": "x"})[0] == 404
    status, answer = call(served.url + "/nope", method="GET")
    assert status == 404 and answer["error"]["code"] == "not_found"
    assert call(served.url + "/v1/embeddings", method="GET")[0] == 405


def test_concurrent_requests_share_embedding_passes(served: Served, embedder: Embedder) -> None:
    batcher = served.app.state.batcher
    texts = [f"concurrent request number {i}" for i in range(12)]
    results: dict[int, Any] = {}
    barrier = threading.Barrier(len(texts))

    def one(i: int) -> None:
        barrier.wait()
        results[i] = call(served.url + "/v1/embeddings", {"input": texts[i]})

    before = batcher.passes
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert batcher.passes - before < len(texts)
    expected = embedder.embed_batch(texts)
    for i, row in enumerate(expected):
        status, body = results[i]
        assert status == 200
        assert sum(a * b for a, b in zip(body["data"][0]["embedding"], row.tolist(), strict=True)) > 0.9999


class GatedEmbedder:
    """The hash embedder, except that each pass waits for the test to let it through.

    ``passes`` records the texts of every pass; ``release()`` lets one pass
    finish, ``open.set()`` all of them.
    """

    def __init__(self) -> None:
        self.inner = get_embedder("hash", dimension=16)
        self.model_id, self.dimension, self.max_tokens = self.inner.model_id, 16, 256
        self.passes: list[list[str]] = []
        self.started = threading.Event()
        self.open = threading.Event()
        self._permits = threading.Semaphore(0)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def release(self) -> None:
        self._permits.release()

    def embed_batch(self, texts: Any) -> Any:
        self.passes.append(list(texts))
        self.started.set()
        deadline = time.monotonic() + 60
        while not (self.open.is_set() or self._permits.acquire(timeout=0.05)):
            assert time.monotonic() < deadline, "the test never let this pass through"
        return self.inner.embed_batch(texts)


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


def test_a_small_request_is_not_stuck_behind_a_big_one() -> None:
    gated = GatedEmbedder()
    app = make_app(gated, limits=EmbedServerLimits(max_batch=4, batch_window=0.0))
    big_texts = [f"big request text {i}" for i in range(64)]
    results: dict[str, Any] = {}
    finished = {name: threading.Event() for name in ("big", "small")}

    def send(name: str, texts: list[str]) -> None:
        try:
            results[name] = call(served.url + "/v1/embeddings", {"input": texts})
        finally:
            finished[name].set()

    for served in _serve(app):  # noqa: B007 - the send threads read it
        big = threading.Thread(target=send, args=("big", big_texts))
        big.start()
        try:
            assert gated.started.wait(30), "the big request never reached the embedder"
            small = threading.Thread(target=send, args=("small", ["small request"]))
            small.start()
            _wait_for(lambda: app.state.batcher.waiting == 2, "both requests wait for a pass")
            for _ in range(2):  # the big request's first pass, then the one the small request joins
                gated.release()
            assert finished["small"].wait(30), "the small request did not complete"
            assert not finished["big"].is_set()  # 14 of the big request's passes have not run yet
        finally:
            gated.open.set()
            big.join(timeout=60)
        small.join(timeout=60)
    assert "small request" in gated.passes[1]
    assert max(len(texts) for texts in gated.passes) == 4
    assert sum(len(texts) for texts in gated.passes) == 65
    for name, texts in (("big", big_texts), ("small", ["small request"])):
        status, body = results[name]
        assert status == 200
        expected = gated.inner.embed_batch(texts).tolist()
        for item, row in zip(body["data"], expected, strict=True):
            assert item["embedding"] == pytest.approx(row, abs=1e-6)


def test_passes_are_bounded_by_tokens() -> None:
    gated = GatedEmbedder()
    gated.open.set()
    limits = EmbedServerLimits(max_batch=100, max_batch_tokens=20, batch_window=0.2)
    texts = ["one two three four five", "six seven", "a " * 30, "eight nine ten"] * 3
    for served in _serve(make_app(gated, limits=limits)):
        status, body = call(served.url + "/v1/embeddings", {"input": texts})
        assert status == 200 and len(body["data"]) == len(texts)
    for batch in gated.passes:
        assert len(batch) == 1 or sum(gated.count_tokens(text) for text in batch) <= 20, batch
    assert ["a " * 30] in gated.passes  # over the budget alone: a pass of its own
    assert sum(len(batch) for batch in gated.passes) == len(texts)


def test_token_is_required_when_configured(embedder: Embedder) -> None:
    for served in _serve(make_app(embedder, token="s3cret")):
        assert call(served.url + "/v1/embeddings", {"input": "x"})[0] == 401
        bad = {"Authorization": "Bearer wrong"}
        assert call(served.url + "/v1/embeddings", {"input": "x"}, headers=bad)[0] == 401
        good = {"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
        status, body = call(served.url + "/v1/embeddings", {"input": "x"}, headers=good)
        assert status == 200 and len(body["data"][0]["embedding"]) == 384


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "memrouter", *args]


def test_cli_refuses_a_non_loopback_host_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMROUTER_TOKEN"}
    done = subprocess.run(
        _cli("embed-serve", "--host", "0.0.0.0", "--port", str(free_port())),
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode != 0
    assert "needs a bearer token" in done.stderr


def test_cli_serves_until_stopped() -> None:
    port = free_port()
    process = subprocess.Popen(_cli("embed-serve", "--port", str(port)), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                status, body = call(f"http://127.0.0.1:{port}/health", method="GET")
                break
            except OSError:
                assert time.monotonic() < deadline, "embed-serve did not become healthy"
                time.sleep(0.1)
        assert status == 200 and body["dimension"] == 384
        status, body = call(
            f"http://127.0.0.1:{port}/v1/embeddings", {"input": ["a", "b"], "encoding_format": "base64"}
        )
        assert status == 200 and len(body["data"]) == 2
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        said = process.stderr.read() if process.stderr else ""
        if process.stderr:
            process.stderr.close()
    assert said.startswith(f"memrouter: serving embeddings at http://127.0.0.1:{port}/v1/embeddings\n")


def test_cli_hash_embedder_with_a_dimension() -> None:
    port = free_port()
    process = subprocess.Popen(
        _cli("embed-serve", "--port", str(port), "--embedder", "hash", "--dimension", "384"),
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None
            try:
                status, body = call(f"http://127.0.0.1:{port}/health", method="GET")
                break
            except OSError:
                assert time.monotonic() < deadline, "embed-serve did not become healthy"
                time.sleep(0.1)
        assert body == {"status": "healthy", "model": "hash-bow-384", "dimension": 384}
        status, body = call(f"http://127.0.0.1:{port}/v1/embeddings", {"input": "x", "dimensions": 384})
        assert status == 200 and len(body["data"][0]["embedding"]) == 384
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_rerank_scores_documents_by_the_models_similarity(served: Served, embedder: Embedder) -> None:
    documents = ["the release checklist", "postgres staging runs on port 5433", "flaky tests in CI"]
    status, body = call(
        served.url + "/rerank", {"query": "which port does staging postgres use", "documents": documents}
    )
    assert status == 200 and body["model"] == "all-MiniLM-L6-v2"
    assert [r["index"] for r in body["results"]][0] == 1
    vectors = embedder.embed_batch(["which port does staging postgres use", *documents])
    expected = {i: float(vectors[i + 1] @ vectors[0]) for i in range(3)}
    assert {r["index"]: r["relevance_score"] for r in body["results"]} == pytest.approx(expected, abs=1e-5)
    status, body = call(served.url + "/v1/rerank", {"query": "port", "texts": documents, "top_n": 1})
    assert status == 200 and len(body["results"]) == 1  # text-embeddings-inference's name for the documents


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"documents": ["a"]}, "missing_query"),
        ({"query": "q", "documents": []}, "invalid_documents"),
        ({"query": "q", "documents": ["a", 3]}, "invalid_documents"),
        ({"query": "q", "documents": ["a"], "top_n": 0}, None),
        ({"query": "q", "documents": ["x"] * 9}, "too_many_inputs"),
    ],
)
def test_bad_rerank_input_is_a_clear_400(served: Served, body: Any, code: str | None) -> None:
    status, answer = call(served.url + "/rerank", body)
    assert status == 400 and answer["error"]["code"] == code
