"""An OpenAI-compatible embeddings endpoint served from memrouter's own offline embedder.

Other local tools that speak the OpenAI embeddings API (Forgetful with
``EMBEDDING_PROVIDER=OpenAI``, editors, scripts) can share memrouter's model
instead of downloading their own::

    memrouter embed-serve --port 8090
    curl -s localhost:8090/v1/embeddings -d '{"input": ["hello", "world"]}'

Routes:

- ``POST /v1/embeddings``: ``input`` is a string or a list of strings
  (token-id arrays are refused); ``encoding_format`` is ``float`` (default)
  or ``base64`` (float32, little-endian, as the ``openai`` client asks);
  ``model`` is echoed; ``dimensions``, when given, must equal the model's.
  Answers ``{"object": "list", "data": [{"object": "embedding", "index",
  "embedding"}], "model", "usage": {"prompt_tokens", "total_tokens"}}``.
  Bad input gets a 4xx with an OpenAI-style ``{"error": {"message", "type",
  "param", "code"}}`` body.
- ``POST /rerank`` (and ``/v1/rerank``): ``query`` and ``documents`` (or
  ``texts``, as text-embeddings-inference names them), optional ``top_n``;
  answers ``{"model", "results": [{"index", "relevance_score"}]}``, best
  first: each document's cosine similarity to the query under the same model
  (a bi-encoder's score, not a cross-encoder's), for clients of the common
  ``/rerank`` shape.
- ``GET /health``: ``{"status": "healthy", "model", "dimension"}``.
- Anything else: 404 (405 for a wrong method on a known path).

Concurrent requests are batched: texts that arrive within ``batch_window``
seconds of each other go through one embedding pass. Passes are bounded (in
texts and tokens) and shared between the requests waiting, so a small request
is not held up behind a large one. Binding anything
but a loopback address needs a bearer token (the ``openai`` client sends its
API key as one, so set the client's key to the token).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memrouter.embed import get_embedder
from memrouter.http.auth import BearerTokenMiddleware
from memrouter.http.batching import FairBatcher
from memrouter.http.serve import HttpServer, bind_listeners, require_token_off_loopback

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.embed import Embedder
    from memrouter.http.serve import ConnectionLimits

__all__ = ["EmbedServerLimits", "make_app", "serve_embeddings", "DEFAULT_PORT"]

DEFAULT_PORT = 8090
_MAX_DIGITS = 100  # longer integers in a body are refused, not converted


@dataclass(frozen=True)
class EmbedServerLimits:
    """Request limits: inputs per request, tokens per input, body bytes, batching.

    An embedding pass takes at most ``max_batch`` texts and ``max_batch_tokens``
    tokens, shared fairly between the requests waiting (see
    ``memrouter.http.batching``).
    """

    max_inputs: int = 2048
    max_input_tokens: int = 8192
    max_body_bytes: int = 16 * 1024 * 1024
    batch_window: float = 0.005
    max_batch: int = 256
    max_batch_tokens: int = 4096


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


def _error(status: int, message: str, param: str | None = None, code: str | None = None) -> Response:
    from starlette.responses import JSONResponse

    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status)


def _decode_json(body: bytes, content_type: str, content_encoding: str) -> Any:
    """The body as JSON: UTF-8 text, finite numbers of sane length, nesting the parser can follow.

    Any content type is taken as JSON (``curl -d`` sends a form type), but a
    declared charset must be UTF-8 and the body must not be compressed.
    """
    encoding = content_encoding.strip().lower()
    if encoding not in ("", "identity"):
        message = f"Content-Encoding {_clip(encoding)!r} is not supported: send the JSON uncompressed"
        raise _BadRequest(400, message, None, "unsupported_content_encoding")
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in ("utf-8", "utf8"):
            message = f"charset {_clip(charset)!r} is not supported: send the JSON as UTF-8"
            raise _BadRequest(400, message, None, "unsupported_charset")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadRequest(400, f"the body is not UTF-8: byte {exc.start} is invalid", None, "invalid_json") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except RecursionError:
        raise _BadRequest(400, "the body nests arrays or objects too deeply", None, "invalid_json") from None
    except ValueError as exc:
        raise _BadRequest(400, f"the body is not valid JSON: {exc}", None, "invalid_json") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"the number {_clip(literal)} is out of range")
    return value


def _bounded_int(literal: str) -> int:
    if len(literal) > _MAX_DIGITS:
        raise ValueError(f"a number has over {_MAX_DIGITS} digits")
    return int(literal)


def _clip(text: str, size: int = 24) -> str:
    return text if len(text) <= size else text[:size] + "..."


def _check_unicode(text: str, param: str, where: str) -> None:
    """Refuse a string holding a lone surrogate (a ``\\ud800`` JSON escape): it is not text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _BadRequest(
            400,
            f"{where} is not valid Unicode: it holds a lone surrogate (U+{ord(text[exc.start]):04X}) "
            f"at character {exc.start}",
            param,
            "invalid_unicode",
        ) from None


def _parse(request: Any, embedder: Embedder, limits: EmbedServerLimits) -> tuple[list[str], str, str]:
    """Validate a decoded request: (texts, encoding_format, model)."""
    if not isinstance(request, dict):
        raise _BadRequest(400, "the body must be a JSON object")
    if "input" not in request or request["input"] is None:
        raise _BadRequest(400, "'input' is required: a string or a list of strings", "input", "missing_input")
    raw = request["input"]
    texts: list[Any] = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list):
        raise _BadRequest(400, "'input' must be a string or a list of strings", "input", "invalid_input")
    if not texts:
        raise _BadRequest(400, "'input' must not be an empty list", "input", "empty_input")
    if len(texts) > limits.max_inputs:
        raise _BadRequest(
            400, f"'input' has {len(texts)} items; at most {limits.max_inputs} per request", "input", "too_many_inputs"
        )
    for position, text in enumerate(texts):
        if isinstance(text, (int, list)) and not isinstance(text, bool):
            raise _BadRequest(
                400, "token-id arrays are not supported: send the texts as strings", "input", "token_ids_unsupported"
            )
        if not isinstance(text, str):
            raise _BadRequest(400, f"'input[{position}]' is not a string", "input", "invalid_input")
        _check_unicode(text, "input", f"'input[{position}]'")
    encoding_format = request.get("encoding_format") or "float"
    if encoding_format not in ("float", "base64"):
        raise _BadRequest(400, "'encoding_format' must be 'float' or 'base64'", "encoding_format")
    dimensions = request.get("dimensions")
    if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int)):
        raise _BadRequest(400, "'dimensions' must be a whole number", "dimensions")
    if dimensions is not None and dimensions != embedder.dimension:
        raise _BadRequest(
            400,
            f"this model gives {embedder.dimension} dimensions; 'dimensions' {dimensions} is not supported",
            "dimensions",
        )
    model = request.get("model")
    if model is not None and not isinstance(model, str):
        raise _BadRequest(400, "'model' must be a string", "model")
    if model is not None:
        _check_unicode(model, "model", "'model'")
    return texts, encoding_format, model or embedder.model_id


def _read_request(
    body: bytes, content_type: str, content_encoding: str, embedder: Embedder, limits: EmbedServerLimits
) -> tuple[list[str], list[int], str, str]:
    """Decode and validate a body, and count each text's tokens: (texts, counts, encoding_format, model).

    Runs on a worker thread: decoding a large body would hold up every other request.
    """
    texts, encoding_format, model = _parse(_decode_json(body, content_type, content_encoding), embedder, limits)
    counts = [embedder.count_tokens(text) for text in texts]
    for position, count in enumerate(counts):
        if count > limits.max_input_tokens:
            raise _BadRequest(
                400,
                f"'input[{position}]' has {count} tokens; at most {limits.max_input_tokens}",
                "input",
                "input_too_long",
            )
    return texts, counts, encoding_format, model


def _parse_rerank(request: Any, limits: EmbedServerLimits) -> tuple[str, list[str], int | None]:
    """Validate a decoded rerank request: (query, documents, top_n)."""
    if not isinstance(request, dict):
        raise _BadRequest(400, "the body must be a JSON object")
    query = request.get("query")
    if not isinstance(query, str) or not query:
        raise _BadRequest(400, "'query' is required: a non-empty string", "query", "missing_query")
    _check_unicode(query, "query", "'query'")
    documents = request.get("documents", request.get("texts"))
    if not isinstance(documents, list) or not documents:
        raise _BadRequest(400, "'documents' must be a non-empty list of strings", "documents", "invalid_documents")
    if len(documents) > limits.max_inputs:
        message = f"'documents' has {len(documents)} items; at most {limits.max_inputs} per request"
        raise _BadRequest(400, message, "documents", "too_many_inputs")
    for position, text in enumerate(documents):
        if not isinstance(text, str):
            raise _BadRequest(400, f"'documents[{position}]' is not a string", "documents", "invalid_documents")
        _check_unicode(text, "documents", f"'documents[{position}]'")
    top_n = request.get("top_n")
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1):
        raise _BadRequest(400, "'top_n' must be a whole number >= 1", "top_n")
    return query, documents, top_n


def make_app(
    embedder: Embedder | None = None,
    *,
    embedder_name: str = "minilm",
    embedder_options: dict[str, Any] | None = None,
    limits: EmbedServerLimits | None = None,
    token: str | None = None,
) -> Any:
    """The ASGI app (Starlette, wrapped in the bearer check when ``token`` is set).

    ``embedder`` is used as given; otherwise ``get_embedder(embedder_name)``
    (with ``embedder_options``) is loaded when the app starts (its lifespan),
    so a started server is ready.
    The app's ``state.batcher`` counts embedding passes (``passes``).
    """
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    settings = limits or EmbedServerLimits()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:

        model = (
            embedder
            if embedder is not None
            else await asyncio.to_thread(lambda: get_embedder(embedder_name, **(embedder_options or {})))
        )
        batcher = FairBatcher(model, settings.max_batch, settings.max_batch_tokens, settings.batch_window)
        app.state.batcher = batcher
        worker = asyncio.create_task(batcher.run())
        try:
            yield
        finally:
            worker.cancel()
            try:
                await worker
            except asyncio.CancelledError:
                pass  # the worker was cancelled on purpose: shutting down

    async def health(request: Request) -> Response:
        model: Embedder = request.app.state.batcher.embedder
        return JSONResponse({"status": "healthy", "model": model.model_id, "dimension": model.dimension})

    async def embeddings(request: Request) -> Response:
        from starlette.requests import ClientDisconnect

        batcher: FairBatcher = request.app.state.batcher
        model = batcher.embedder
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > settings.max_body_bytes:
            return _error(413, f"the body is over {settings.max_body_bytes} bytes", None, "body_too_large")
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > settings.max_body_bytes:
                    return _error(413, f"the body is over {settings.max_body_bytes} bytes", None, "body_too_large")
        except ClientDisconnect:
            return _error(400, "the client went away before sending the whole body")  # nobody reads this
        try:
            texts, counts, encoding_format, model_name = await asyncio.to_thread(
                _read_request,
                bytes(body),
                request.headers.get("content-type", ""),
                request.headers.get("content-encoding", ""),
                model,
                settings,
            )
        except _BadRequest as exc:
            return _error(exc.status, exc.message, exc.param, exc.code)
        vectors = await batcher.embed(texts, counts)
        data = []
        for index, row in enumerate(vectors):
            embedding: Any
            if encoding_format == "base64":
                embedding = base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
            else:
                embedding = [float(v) for v in row]
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(counts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": model_name,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def rerank(request: Request) -> Response:
        batcher: FairBatcher = request.app.state.batcher
        model = batcher.embedder
        body = await request.body()
        if len(body) > settings.max_body_bytes:
            return _error(413, f"the body is over {settings.max_body_bytes} bytes", None, "body_too_large")
        try:
            decoded = _decode_json(
                body, request.headers.get("content-type", ""), request.headers.get("content-encoding", "")
            )
            query, documents, top_n = _parse_rerank(decoded, settings)
            texts = [query, *documents]
            counts = await asyncio.to_thread(lambda: [model.count_tokens(text) for text in texts])
            if max(counts) > settings.max_input_tokens:
                raise _BadRequest(
                    400, f"an input has over {settings.max_input_tokens} tokens", "documents", "input_too_long"
                )
        except _BadRequest as exc:
            return _error(exc.status, exc.message, exc.param, exc.code)
        vectors = await batcher.embed(texts, counts)
        similarity = vectors[1:] @ vectors[0]
        order = sorted(range(len(documents)), key=lambda i: (-float(similarity[i]), i))[: top_n or len(documents)]
        results = [{"index": i, "relevance_score": round(float(similarity[i]), 6)} for i in order]
        return JSONResponse({"model": model.model_id, "results": results, "usage": {"total_tokens": sum(counts)}})

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, f"no route for {request.method} {request.url.path}", None, "not_found")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _error(405, f"{request.method} is not allowed on {request.url.path}", None, "method_not_allowed")

    async def server_error(request: Request, exc: Exception) -> Response:
        return _error(500, "the server failed to embed the input; see its log", None, "server_error")

    app = Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/embeddings", embeddings, methods=["POST"]),
            Route("/rerank", rerank, methods=["POST"]),
            Route("/v1/rerank", rerank, methods=["POST"]),
        ],
        exception_handlers={404: not_found, 405: not_allowed, Exception: server_error},
        lifespan=lifespan,
    )
    if token:
        return BearerTokenMiddleware(app, token)
    return app


def serve_embeddings(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    token: str | None = None,
    embedder_name: str = "minilm",
    embedder_options: dict[str, Any] | None = None,
    limits: EmbedServerLimits | None = None,
    connection_limits: ConnectionLimits | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve the embeddings endpoint until the process is stopped.

    The address is bound and the embedder loaded first; ``on_ready`` is
    called once requests are answered. ``connection_limits`` bounds slow
    clients (see ``memrouter.http.serve``). Raises ConfigError for a
    non-loopback ``host`` without a token, an empty token or an address that
    cannot be bound, and NotInstalled when the embedder is missing.
    """

    require_token_off_loopback(host, token)
    listeners = bind_listeners(host, port)
    try:
        embedder = get_embedder(embedder_name, **(embedder_options or {}))
        app = make_app(embedder, limits=limits, token=token)
        server = HttpServer(app, listeners, limits=connection_limits, on_ready=on_ready)
    except BaseException:
        for listener in listeners:
            listener.close()
        raise
    server.run()
