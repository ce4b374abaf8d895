"""A tiny OpenAI-compatible embeddings endpoint, for running real peers offline.

The real Forgetful downloads an embedding model at start unless it is pointed
at an OpenAI-compatible endpoint (``EMBEDDING_PROVIDER=OpenAI``,
``OPENAI_BASE_URL=http://127.0.0.1:<port>/v1``). This server answers
``POST /v1/embeddings`` with deterministic vectors: hashed bags of words,
L2-normalised, so texts that share words are similar. It is not a language
model; it only makes tests against the real server possible with no network.

Run: ``python -m memrouter.testing.embeddings_server --port 8901 [--dimensions 384]``.
Answers ``encoding_format: "base64"`` (float32, little-endian) as the
``openai`` client asks, or plain float lists. ``GET /health`` for readiness.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import struct
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["embed_text", "main", "make_server"]

_TOKEN = re.compile(r"[a-z0-9]+")


def embed_text(text: str, dimensions: int = 384) -> list[float]:
    """A deterministic unit vector for ``text``: each word adds +-1 at four hashed positions.

    Four positions per word keep a chance collision between two unrelated
    words to a quarter of a real match.
    """
    vector = [0.0] * dimensions
    for token in _TOKEN.findall(text.lower()):
        digest = hashlib.blake2b(token.encode(), digest_size=20).digest()
        for slot in range(4):
            chunk = digest[slot * 5 : slot * 5 + 5]
            index = int.from_bytes(chunk[:4], "little") % dimensions
            vector[index] += 1.0 if chunk[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def _encode(vector: Sequence[float], encoding_format: str) -> Any:
    if encoding_format == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
    return list(vector)


def make_server(host: str, port: int, dimensions: int = 384) -> ThreadingHTTPServer:
    """The HTTP server (not started): call ``serve_forever`` on it."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _reply(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/health", "/v1/models"):
                self._reply(200, {"status": "healthy", "data": [{"id": "hashed-bow", "object": "model"}]})
            else:
                self._reply(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/embeddings":
                self._reply(404, {"error": {"message": "not found"}})
                return
            length = int(self.headers.get("content-length") or 0)
            try:
                request = json.loads(self.rfile.read(length))
                inputs = request["input"]
            except (ValueError, KeyError, TypeError):
                self._reply(400, {"error": {"message": "expected JSON with 'input'"}})
                return
            if isinstance(inputs, str) or (inputs and isinstance(inputs[0], int)):
                inputs = [inputs]
            size = int(request.get("dimensions") or dimensions)
            encoding_format = request.get("encoding_format") or "float"
            data = []
            for index, item in enumerate(inputs):
                text = item if isinstance(item, str) else " ".join(str(t) for t in item)
                data.append(
                    {
                        "object": "embedding",
                        "index": index,
                        "embedding": _encode(embed_text(text, size), encoding_format),
                    }
                )
            tokens = sum(len(_TOKEN.findall(str(item))) for item in inputs)
            self._reply(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": request.get("model", "hashed-bow"),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m memrouter.testing.embeddings_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8901)
    parser.add_argument("--dimensions", type=int, default=384)
    options = parser.parse_args(argv)
    server = make_server(options.host, options.port, options.dimensions)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how this server is meant to be stopped
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
