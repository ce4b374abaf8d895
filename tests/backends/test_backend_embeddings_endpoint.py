"""The offline embeddings endpoint the real Forgetful runs against: ``embed-serve --embedder hash``.

Started the way ``memrouter.testing.real_forgetful`` starts it, as a subprocess.
"""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest

from memrouter.testing.real_forgetful import embed_serve_command
from memrouter.testing.servers import free_port


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(embed_serve_command(port), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else b""
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                    assert json.load(response)["status"] == "healthy"
                break
            except OSError:
                assert time.monotonic() < deadline, "embed-serve did not become healthy"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stderr:
            process.stderr.close()


def _post(url: str, payload: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        result: dict[str, object] = json.load(response)
        return result


def _vectors(endpoint: str, texts: list[str]) -> list[list[float]]:
    answer = _post(f"{endpoint}/v1/embeddings", {"input": texts, "model": "all-MiniLM-L6-v2"})
    assert answer["model"] == "all-MiniLM-L6-v2"  # Forgetful's configured name is echoed
    data = answer["data"]
    assert isinstance(data, list) and [d["index"] for d in data] == list(range(len(texts)))
    return [d["embedding"] for d in data]


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_unit_and_follow_shared_words(endpoint: str) -> None:
    a, b, c = _vectors(endpoint, ["cache warm", "warm cache warm", "docker deploy"])
    assert len(a) == 384
    assert _dot(a, a) == pytest.approx(1.0, abs=1e-5)
    assert _dot(a, b) > 0.8
    assert abs(_dot(a, c)) < 0.3


def test_float_and_base64_answers_agree(endpoint: str) -> None:
    [plain] = _vectors(endpoint, ["cache warm"])
    packed = _post(f"{endpoint}/v1/embeddings", {"input": "cache warm", "encoding_format": "base64"})
    raw = base64.b64decode(packed["data"][0]["embedding"])  # type: ignore[index]
    assert list(struct.unpack("<384f", raw)) == pytest.approx(plain, abs=1e-6)
