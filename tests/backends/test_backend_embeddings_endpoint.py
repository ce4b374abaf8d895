"""The offline OpenAI-compatible embeddings endpoint used to run the real Forgetful."""

from __future__ import annotations

import base64
import json
import struct
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from memrouter.testing.embeddings_server import embed_text, make_server


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = make_server("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _post(url: str, payload: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        result: dict[str, object] = json.load(response)
        return result


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_unit_and_follow_shared_words() -> None:
    a, b, c = embed_text("cache warm"), embed_text("warm cache warm"), embed_text("docker deploy")
    assert len(a) == 384
    assert _dot(a, a) == pytest.approx(1.0)
    assert _dot(a, b) > 0.8
    assert abs(_dot(a, c)) < 0.3
    assert embed_text("") == [1.0] + [0.0] * 383


def test_float_and_base64_answers(endpoint: str) -> None:
    plain = _post(f"{endpoint}/v1/embeddings", {"input": ["cache warm", "docker"], "model": "m"})
    data = plain["data"]
    assert isinstance(data, list) and [d["index"] for d in data] == [0, 1]
    assert data[0]["embedding"] == pytest.approx(embed_text("cache warm"))
    packed = _post(f"{endpoint}/v1/embeddings", {"input": "cache warm", "encoding_format": "base64"})
    raw = base64.b64decode(packed["data"][0]["embedding"])  # type: ignore[index]
    assert list(struct.unpack("<384f", raw)) == pytest.approx(embed_text("cache warm"), abs=1e-6)
    with urllib.request.urlopen(f"{endpoint}/health", timeout=5) as response:
        assert json.load(response)["status"] == "healthy"
