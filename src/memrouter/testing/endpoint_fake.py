"""A fake embedding and reranking endpoint on 127.0.0.1, speaking the real protocols, that can misbehave.

``FakeEndpoint`` answers ``POST /v1/embeddings`` as an OpenAI-compatible
server does (vectors from the deterministic ``hash`` embedder, so texts that
share words are near) and ``POST /rerank`` in the common shape (``results`` of
``index`` and ``relevance_score``; ``tei=True``: a bare list of ``index`` and
``score``, as text-embeddings-inference answers). ``fail(...)`` makes the next
requests (those to ``route`` only, when given: ``/rerank``) go wrong in one of the ways real servers do:

==============  ==============================================================
``status``      answer an HTTP status with an OpenAI-style error body (and
                ``Retry-After`` when given), ``times`` times
``hang``        read the request, answer nothing for ``seconds``, then answer
                as usual (a slow server)
``dimension``   answer vectors of another length
``count``       answer one embedding fewer than asked
``garbage``     answer a body that is not JSON
==============  ==============================================================

Every request is recorded (``requests``: path, headers, decoded body), so tests
check batching, retries and the key sent.

``embed_serve()`` runs the real thing instead: ``memrouter embed-serve`` as a
process on a free loopback port, memrouter's own model behind the same
protocols, until the ``with`` block ends.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memrouter.embed.hashing import HashEmbedder
from memrouter.testing.servers import free_port

__all__ = ["FakeEndpoint", "Seen", "embed_serve", "serve_fake_endpoint"]

HOST = "127.0.0.1"


@dataclass
class Seen:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeEndpoint:
    """The fake's state: its address, what it received, and the fault it plays next (see the module docstring)."""

    port: int = 0
    dimension: int = 64
    tei: bool = False
    requests: list[Seen] = field(default_factory=list)
    _fault: tuple[str, dict[str, Any]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        """The OpenAI-style base, ``http://127.0.0.1:<port>/v1``."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    def fail(self, mode: str, **details: Any) -> None:
        """Play the fault ``mode`` from the next request on (``heal`` stops it)."""
        with self._lock:
            self._fault = None if mode == "heal" else (mode, dict(details))

    def calls(self, path: str) -> int:
        return sum(1 for seen in self.requests if seen.path == path)

    def _take_fault(self, path: str) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            fault = self._fault
            if fault is not None and not path.endswith(fault[1].get("route", "")):
                return None
            if fault is not None and "times" in fault[1]:
                fault[1]["times"] -= 1
                if fault[1]["times"] <= 0:
                    self._fault = None
            return fault


def _vectors(texts: list[str], dimension: int) -> list[list[float]]:
    matrix = HashEmbedder(dimension=dimension).embed_batch(texts)
    return [[float(value) for value in row] for row in matrix]


def _handler(fake: FakeEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            self._reply(status, json.dumps(payload).encode("utf-8"), headers)

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            fake.requests.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            fault = fake._take_fault(self.path)
            if fault is not None:
                mode, details = fault
                if mode == "status":
                    status = int(details.get("status", 503))
                    headers = {"Retry-After": str(details["retry_after"])} if "retry_after" in details else None
                    error = {
                        "error": {"message": details.get("message", f"fake failure {status}"), "type": "server_error"}
                    }
                    self._json(status, error, headers)
                    return
                if mode == "hang":
                    time.sleep(float(details.get("seconds", 5)))
                if mode == "garbage":
                    self._reply(200, b"<html>not json</html>")
                    return
            if self.path.endswith("/embeddings"):
                self._embeddings(body, fault)
            elif self.path.endswith("/rerank"):
                self._rerank(body)
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def _embeddings(self, body: Any, fault: tuple[str, dict[str, Any]] | None) -> None:
            texts = body.get("input") if isinstance(body, dict) else None
            if isinstance(texts, str):
                texts = [texts]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or not texts:
                self._json(400, {"error": {"message": "'input' must be a string or a list of strings"}})
                return
            dimension = fake.dimension
            if fault is not None and fault[0] == "dimension":
                dimension = int(fault[1].get("dimension", fake.dimension + 1))
            vectors = _vectors(texts, dimension)
            if fault is not None and fault[0] == "count":
                vectors = vectors[:-1]
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            model = body.get("model", "fake")
            self._json(
                200, {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 0, "total_tokens": 0}}
            )

        def _rerank(self, body: Any) -> None:
            query = body.get("query") if isinstance(body, dict) else None
            documents = (body.get("texts") if fake.tei else body.get("documents")) if isinstance(body, dict) else None
            if not isinstance(query, str) or not isinstance(documents, list):
                self._json(422, {"error": {"message": "'query' and 'documents' are required"}})
                return
            vectors = _vectors([query, *documents], fake.dimension)
            scores = [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors[1:]]
            order = sorted(range(len(documents)), key=lambda i: -scores[i])
            if fake.tei:
                self._json(200, [{"index": i, "score": scores[i]} for i in order])
            else:
                self._json(200, {"results": [{"index": i, "relevance_score": scores[i]} for i in order]})

    return Handler


@contextmanager
def serve_fake_endpoint(*, dimension: int = 64, tei: bool = False) -> Iterator[FakeEndpoint]:
    """Run a ``FakeEndpoint`` on a free loopback port for the ``with`` block."""
    fake = FakeEndpoint(dimension=dimension, tei=tei)
    server = ThreadingHTTPServer((HOST, 0), _handler(fake))
    server.daemon_threads = True
    fake.port = server.server_address[1]
    # it looks for shutdown this often: the default half second would hold every block's end that long
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def embed_serve(*args: str, ready_within: float = 180.0, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``memrouter embed-serve`` (with ``args``) on a free loopback port: its base URL, once ``/health`` answers.
    Stopped (SIGTERM, then killed) when the block ends; ``RuntimeError`` when it does not start. ``env``: the
    server's environment (this process's by default)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "memrouter", "embed-serve", "--port", str(port), *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=None if env is None else dict(env),
    )  # fmt: skip
    base = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + ready_within
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"embed-serve exited: {process.stderr.read() if process.stderr else ''}")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5) as response:
                    response.read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("embed-serve did not answer /health in time") from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
