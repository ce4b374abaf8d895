"""Embedding and reranking models served over HTTP: any OpenAI-compatible ``/v1/embeddings``, any ``/rerank``.

Ollama, llama.cpp's server, text-embeddings-inference, vLLM, LM Studio, the
hosted APIs and ``memrouter embed-serve`` all answer ``POST <url>/embeddings``
with ``{"data": [{"index", "embedding"}]}``. ``EndpointEmbedder`` (the
``openai`` embedder, configured in ``[embed]``) sends texts there in batches of
``batch_size``, and a reranker endpoint (``EndpointReranker``, ``[rerank]``)
gets ``POST <url>/rerank`` with the query and the candidates' texts, in the
shape text-embeddings-inference, Jina, Cohere and Voyage share (``documents``,
and ``texts`` as TEI names them; the scores come back as ``results``, ``data``
or a bare list of ``{"index", "relevance_score" or "score"}``).

Failures are told apart as a backend's are: a refused or reset connection, a
timeout, 429 and 5xx answers are transient (``EndpointUnavailable``) and are
retried ``retries`` times with exponential backoff (a ``Retry-After`` header is
honoured, up to ``MAX_RETRY_AFTER`` seconds); any other 4xx, a body that is not
the protocol's, a vector of the wrong length or with a non-finite number is
permanent (``EndpointContractError``). After a transient failure the endpoint is
not asked again for ``DOWN_FOR`` seconds: searches go on without it at once
(hybrid search is lexical meanwhile, ``memrouter.index.search``) instead of
waiting for each retry. Only the standard library is used (``http.client``;
one kept-alive connection per thread). ``sleep`` (the wait between tries) is
injectable, so tests check the backoff without waiting.

The key (``[embed] key_env`` names the environment variable that holds it) is
sent as ``Authorization: Bearer``; it is never logged or shown by ``status``.
"""

from __future__ import annotations

import http.client
import json
import math
import random
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from memrouter.core.errors import ConfigError, EndpointContractError, EndpointUnavailable, NotInstalled
from memrouter.core.lazylog import LazyLogger

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DOWN_FOR", "EndpointEmbedder", "EndpointReranker", "MAX_RETRY_AFTER", "endpoint_model_id"]

log = LazyLogger(__name__)

# After a transient failure the endpoint is skipped for this many seconds.
DOWN_FOR = 30.0
MAX_RETRY_AFTER = 30.0
BACKOFF = 0.25  # the first retry waits this long, each next one twice as long (with jitter)
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Chunks are cut to this many word pieces (MiniLM's WordPiece counts, which BERT-family tokenizers share).
MAX_TOKENS = 256
_MAX_ERROR_CHARS = 300


def endpoint_model_id(model: str, dimension: int | None = None) -> str:
    """The id vectors of ``model`` served by an endpoint are tagged with (a new model or dimension: new id)."""
    return f"endpoint:{model}" + (f"@{dimension}" if dimension else "")


class _Client:
    """POSTs JSON to one endpoint with retries, backoff and a short memory of being down."""

    def __init__(
        self, url: str, *, key: str | None, timeout: float, retries: int, what: str,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:  # fmt: skip
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{what} url {url!r} must be an http:// or https:// URL")
        if timeout <= 0 or retries < 0:
            raise ConfigError(f"{what}: timeout must be > 0 and retries >= 0")
        self.url = url.rstrip("/")
        self.what = what
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._base = parts.path.rstrip("/")
        self._key = key
        self.timeout = timeout
        self.retries = retries
        self._sleep = sleep
        self._local = threading.local()
        self._opened: list[http.client.HTTPConnection] = []  # every thread's connection, closed with the client
        self._closer = weakref.finalize(self, _close_all, self._opened)
        self.down_until = 0.0
        self.last_error: str | None = None
        self.last_ok: float | None = None
        self.requests = 0

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._scheme == "https":
                import ssl

                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.timeout, context=ssl.create_default_context()
                )
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
            self._opened.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection this client opened (it opens new ones if used again)."""
        _close_all(self._opened)
        self._local = threading.local()

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            if conn in self._opened:
                self._opened.remove(conn)

    def post(self, path: str, body: dict[str, Any], *, retries: int | None = None, respect_down: bool = True) -> Any:
        """``body`` POSTed to ``<url><path>``; the decoded JSON answer (see the module docstring for errors)."""
        now = time.monotonic()
        if respect_down and now < self.down_until:
            raise EndpointUnavailable(
                f"{self.what} at {self.url} failed {DOWN_FOR - (self.down_until - now):.0f} s ago "
                f"({self.last_error}); not asked again for {self.down_until - now:.0f} s"
            )
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        attempts = 1 + (self.retries if retries is None else retries)
        for attempt in range(attempts):
            wait: float | None = None
            try:
                status, reply, retry_after = self._send(f"{self._base}{path}", data, headers)
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                problem = f"cannot reach it: {_reason(exc)}"
            else:
                if status == 200:
                    self.last_ok, self.last_error, self.down_until = time.time(), None, 0.0
                    return _decoded(reply, self.what)
                problem = f"HTTP {status}: {_message(reply)}"
                if status not in TRANSIENT_STATUS:
                    self.failed(problem)
                    raise EndpointContractError(f"{self.what} at {self.url} refused the request: {problem}")
                wait = retry_after
            if attempt + 1 < attempts:
                pause = BACKOFF * 2**attempt * (1 + random.random() / 4)
                self._sleep(min(MAX_RETRY_AFTER, wait) if wait is not None else pause)
        self.failed(problem)
        raise EndpointUnavailable(f"{self.what} at {self.url} is unavailable ({problem}) after {attempts} tries")

    def failed(self, problem: str) -> None:
        """Remember a failure: the endpoint is not asked again for ``DOWN_FOR`` seconds."""
        self.last_error = problem
        self.down_until = time.monotonic() + DOWN_FOR
        log.info("%s at %s failed: %s", self.what, self.url, problem)

    def _send(self, path: str, data: bytes, headers: dict[str, str]) -> tuple[int, bytes, float | None]:
        conn = self._connection()
        self.requests += 1
        try:
            conn.request("POST", path, body=data, headers=headers)
            response = conn.getresponse()
            reply = response.read()
        except (OSError, http.client.HTTPException):
            # A kept-alive connection the server closed meanwhile fails on first use: one fresh try.
            self._drop()
            conn = self._connection()
            conn.request("POST", path, body=data, headers=headers)
            response = conn.getresponse()
            reply = response.read()
        if response.getheader("connection", "").lower() == "close":
            self._drop()
        return response.status, reply, _retry_after(response.getheader("retry-after"))

    def state(self) -> dict[str, Any]:
        """What ``status`` shows: where, whether it is skipped now, the last error, requests made."""
        down = self.down_until - time.monotonic()
        return {
            "url": _redacted(self.url),
            "down_for_s": round(down, 1) if down > 0 else 0,
            "last_error": self.last_error,
            "requests": self.requests,
        }


class EndpointEmbedder:
    """An ``Embedder`` (``memrouter.embed``) whose vectors come from an OpenAI-compatible endpoint.

    ``url`` is the API's base (``http://localhost:11434/v1``; a URL ending in
    ``/embeddings`` is taken as the route itself), ``model`` the name the server
    knows the model by, ``dimension`` the vector length (asked of the server with
    one short text when not given; sent as ``dimensions`` when given, for models
    that can shorten their vectors). Rows come back unit length, whatever the
    server does.
    """

    runtime = "endpoint"

    def __init__(
        self,
        *,
        url: str,
        model: str,
        dimension: int | None = None,
        key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        retries: int = 2,
        max_tokens: int = MAX_TOKENS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ConfigError("[embed] model must name the endpoint's model when [embed] url is set")
        if dimension is not None and not 1 <= dimension <= 65536:
            raise ConfigError(f"[embed] dimension must be between 1 and 65536, got {dimension}")
        if not 1 <= batch_size <= 4096:
            raise ConfigError(f"[embed] batch_size must be between 1 and 4096, got {batch_size}")
        self.client = _Client(
            _base(url, "/embeddings"),
            key=key,
            timeout=timeout,
            retries=retries,
            what="the embedding endpoint",
            sleep=sleep,
        )
        self.model = model
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._dimension = dimension
        self._asked_dimension = dimension
        self.model_id = endpoint_model_id(model, dimension)
        self._tokenizer: Any = None

    @property
    def dimension(self) -> int:
        """The vector length: as configured, else as the server answers for one short text."""
        if self._dimension is None:
            self._dimension = int(self._request(["dimension"]).shape[1])
        return self._dimension

    def count_tokens(self, text: str) -> int:
        """Word pieces as MiniLM's tokenizer counts them (BERT-family models count alike), special tokens
        included; without the model's files, words and punctuation marks times 1.3, plus two."""
        if self._tokenizer is None:
            try:
                from memrouter.embed.bert import load_tokenizer
                from memrouter.embed.weights import model_dir

                self._tokenizer = load_tokenizer(model_dir() / "tokenizer.json")
            except (NotInstalled, ImportError):
                self._tokenizer = False
        if self._tokenizer is False:
            return math.ceil(len(re.findall(r"\w+|[^\w\s]", text)) * 1.3) + 2
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) + 2

    def embed_batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts in requests of ``batch_size``: float32 (len(texts), dimension), unit rows."""
        import numpy as np

        if not texts:
            return np.empty((0, self._dimension or 0), dtype=np.float32)
        parts = [self._request(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        found: NDArray[np.float32] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return found

    def _request(self, texts: list[str]) -> NDArray[np.float32]:

        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._asked_dimension is not None:
            body["dimensions"] = self._asked_dimension
        reply = self.client.post("/embeddings", body)
        try:
            return self._rows(reply, len(texts))
        except EndpointContractError as exc:
            self.client.failed(str(exc))
            raise

    def _rows(self, reply: Any, count: int) -> NDArray[np.float32]:
        """The unit rows of an embeddings answer for ``count`` texts (``EndpointContractError`` if malformed)."""
        import numpy as np

        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list) or len(data) != count:
            answered = len(data) if isinstance(data, list) else "no"
            raise EndpointContractError(
                f"the embedding endpoint at {self.client.url} answered {answered} embeddings for {count} texts"
            )
        rows: list[Any] = [None] * count
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or not isinstance(vector, list):
                raise EndpointContractError(f"the embedding endpoint at {self.client.url} answered a malformed item")
            rows[index] = vector
        if any(row is None for row in rows):
            raise EndpointContractError(f"the embedding endpoint at {self.client.url} answered an index twice")
        lengths = {len(row) for row in rows}
        expected = self._dimension
        if len(lengths) != 1 or (expected is not None and lengths != {expected}) or 0 in lengths:
            raise EndpointContractError(
                f"the embedding endpoint at {self.client.url} answered vectors of {sorted(lengths)} dimensions; "
                f"expected {expected or 'one length'} ([embed] dimension, model {self.model!r})"
            )
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EndpointContractError(f"the embedding endpoint at {self.client.url} answered non-numbers") from exc
        if not np.isfinite(matrix).all():
            raise EndpointContractError(f"the embedding endpoint at {self.client.url} answered a non-finite number")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit: NDArray[np.float32] = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return unit

    def close(self) -> None:
        """Close the connections to the endpoint."""
        self.client.close()

    def health(self) -> dict[str, Any]:
        """Ask the endpoint for one short text now (no retry, whether or not it was down): its state, with
        ``ok`` and the error when it failed."""
        body: dict[str, Any] = {"model": self.model, "input": ["health"], "encoding_format": "float"}
        if self._asked_dimension is not None:
            body["dimensions"] = self._asked_dimension
        try:
            reply = self.client.post("/embeddings", body, retries=0, respect_down=False)
            data = reply.get("data") if isinstance(reply, dict) else None
            vector = data[0].get("embedding") if isinstance(data, list) and data and isinstance(data[0], dict) else None
            if not isinstance(vector, list):
                raise EndpointContractError("the answer has no embedding")
            if self._dimension is None:
                self._dimension = len(vector)
            elif len(vector) != self._dimension:
                raise EndpointContractError(f"it gives {len(vector)} dimensions, not {self._dimension}")
            ok, error = True, None
        except (EndpointUnavailable, EndpointContractError) as exc:
            ok, error = False, str(exc)
        return {"ok": ok, "model": self.model, "error": error} | self.client.state()


class EndpointReranker:
    """A second stage that asks a ``/rerank`` endpoint to score the candidates' texts for the query."""

    def __init__(
        self, *, url: str, model: str | None = None, key: str | None = None, timeout: float = 30.0, retries: int = 2,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:  # fmt: skip
        self.client = _Client(
            _base(url, "/rerank"), key=key, timeout=timeout, retries=retries, what="the reranking endpoint", sleep=sleep
        )
        self.model = model

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in the documents' order (higher is more relevant)."""
        if not documents:
            return []
        body: dict[str, Any] = {"query": query, "documents": list(documents), "texts": list(documents)}
        if self.model:
            body["model"] = self.model
        reply = self.client.post("/rerank", body)
        items = reply.get("results", reply.get("data")) if isinstance(reply, dict) else reply
        if not isinstance(items, list):
            raise EndpointContractError(f"the reranking endpoint at {self.client.url} answered no results")
        found: dict[int, float] = {}
        for item in items:
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            if (
                not isinstance(index, int)
                or not 0 <= index < len(documents)
                or isinstance(score, bool)
                or not isinstance(score, (int, float))
                or not math.isfinite(score)
            ):
                raise EndpointContractError(f"the reranking endpoint at {self.client.url} answered a malformed result")
            found[index] = float(score)
        if len(found) != len(documents):
            raise EndpointContractError(
                f"the reranking endpoint at {self.client.url} scored {len(found)} of {len(documents)} documents"
            )
        return [found[i] for i in range(len(documents))]

    def close(self) -> None:
        """Close the connections to the endpoint."""
        self.client.close()

    def health(self) -> dict[str, Any]:
        """Ask the endpoint to score one short text now (no retry): its state, with ``ok`` and the error."""
        body: dict[str, Any] = {"query": "health", "documents": ["health"], "texts": ["health"]}
        if self.model:
            body["model"] = self.model
        try:
            self.client.post("/rerank", body, retries=0, respect_down=False)
            ok, error = True, None
        except (EndpointUnavailable, EndpointContractError) as exc:
            ok, error = False, str(exc)
        return {"ok": ok, "model": self.model, "error": error} | self.client.state()


def _close_all(connections: list[http.client.HTTPConnection]) -> None:
    for conn in list(connections):
        conn.close()
    connections.clear()


def _decoded(reply: bytes, what: str) -> Any:
    try:
        return json.loads(reply.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise EndpointContractError(f"{what} answered something that is not JSON: {reply[:80]!r}") from exc


def _message(reply: bytes) -> str:
    """The error message of an answer (OpenAI's ``{"error": {"message"}}`` and the like), clipped."""
    text = reply.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:_MAX_ERROR_CHARS] or "(no body)"
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message", error.get("detail", error)) if isinstance(error, dict) else error
    return str(message)[:_MAX_ERROR_CHARS]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password or parts.username:
        return url.replace(f"{parts.username or ''}:{parts.password or ''}@", "***@")
    return url


def _base(url: str, route: str) -> str:
    """The API's base URL: ``url`` without a trailing slash or the ``route`` it may already end with."""
    base = url.rstrip("/")
    return base.removesuffix(route)
