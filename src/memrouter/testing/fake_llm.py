"""A deterministic fake of an LLM behind the OpenAI chat-completions API, for services that need one.

Hindsight's retain asks an LLM to extract facts; nothing here can reach a
real one. ``FakeLLM`` answers ``POST /v1/chat/completions`` (and ``GET
/v1/models``) on a free loopback port, in a thread of this process, the way
the OpenAI API does (a ``chat.completion`` with one choice and its usage), so
the real server runs unchanged against it. The answer depends only on the
request:

- a structured request (``response_format`` ``json_schema``, or ``json_object``
  with the schema in the prompt after ``matching this schema:``) whose schema
  has ``facts`` (fact extraction) gets one fact per paragraph of the
  ``Content:`` section of the last user message (the chunk), verbatim, as a
  ``world`` fact (a front matter block and heading-only paragraphs are left
  out); every other field the schema requires gets its neutral value
  (``N/A``, the first allowed value, ``null`` where allowed, ``[]``, ``0``);
- one with ``creates``/``updates``/``deletes`` (consolidation) gets all three
  empty: no observations are made;
- any other structured request gets the neutral instance of its schema, and a
  plain one the text ``ok``.

Streaming is refused (400). Every request is counted by kind in ``calls``
(``extraction``, ``consolidation``, ``other``), so a test can say how many
LLM calls a retain cost and that a recall made none.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLM", "facts_of"]

MODEL = "fake-llm"
_SCHEMA_IN_PROMPT = re.compile(r"matching this schema:\s*(\{.*\})\s*$", re.S)
_CONTENT = re.compile(r"\nContent:\n(.*)\Z", re.S)
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_HEADING = re.compile(r"#{1,6} [^\n]*")


def facts_of(user_text: str) -> list[str]:
    """The facts the fake extracts from one chunk request: the Content section's paragraphs, verbatim,
    leaving out a front matter block and paragraphs that are only a heading."""
    found = _CONTENT.search(user_text)
    content = _FRONT_MATTER.sub("", found.group(1) if found else user_text)
    paragraphs = (part.strip() for part in re.split(r"\n\s*\n", content))
    return [part for part in paragraphs if part and not _HEADING.fullmatch(part)]


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        schema = root.get("$defs", root.get("definitions", {})).get(name, {})
    return schema


def neutral(schema: Any, root: dict[str, Any]) -> Any:
    """The plainest value ``schema`` accepts: what the fake says when it has nothing to say."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [_resolve(option, root) for option in schema[key]]
            if any(isinstance(o, dict) and o.get("type") == "null" for o in options):
                return None
            return neutral(options[0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        if "null" in kind:
            return None
        kind = kind[0]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        wanted = schema.get("required", list(properties))
        return {name: neutral(properties[name], root) for name in wanted if name in properties}
    if kind == "array":
        return [neutral(schema.get("items", {}), root) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return "N/A"
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def _user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    wanted = body.get("response_format") or {}
    if wanted.get("type") == "json_schema":
        schema = (wanted.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    if wanted.get("type") == "json_object":
        for message in body.get("messages", []):
            found = _SCHEMA_IN_PROMPT.search(str(message.get("content") or ""))
            if found:
                try:
                    parsed = json.loads(found.group(1))
                except ValueError:
                    return None
                return parsed if isinstance(parsed, dict) else None
    return None


def answer(body: dict[str, Any]) -> tuple[str, str]:
    """(kind, the assistant message's content) for one chat-completions request."""
    schema = _schema(body)
    if schema is None:
        return "other", "ok"
    properties = schema.get("properties", {})
    if "facts" in properties:
        item = _resolve(_resolve(properties["facts"], schema).get("items", {}), schema)
        facts = []
        for text in facts_of(_user_text(body.get("messages", []))):
            fact = neutral(item, schema)
            fact.update({"what": text, "fact_type": "world"})
            facts.append(fact)
        return "extraction", json.dumps({"facts": facts})
    if {"creates", "updates", "deletes"} <= set(properties):
        return "consolidation", json.dumps({"creates": [], "updates": [], "deletes": []})
    return "other", json.dumps(neutral(schema, schema))


class FakeLLM:
    """The fake chat-completions server (see the module docstring); a context manager."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0  # after the first start, the port it keeps: a restarted fake is found where it was

    @property
    def url(self) -> str:
        """The base URL an OpenAI client takes: ``http://127.0.0.1:<port>/v1`` (the same after a restart)."""
        assert self._port, "the fake LLM was never started"
        return f"http://127.0.0.1:{self._port}/v1"

    def count(self, kind: str) -> int:
        with self._lock:
            return self.calls[kind]

    def start(self) -> FakeLLM:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                return

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "fake"}]})
                else:
                    self._send(404, {"error": {"message": f"no {self.path}", "type": "invalid_request_error"}})

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
                    self._send(404, {"error": {"message": f"no {self.path}", "type": "invalid_request_error"}})
                    return
                if body.get("stream"):
                    self._send(400, {"error": {"message": "the fake does not stream", "type": "invalid_request_error"}})
                    return
                kind, content = answer(body)
                with fake._lock:
                    fake.calls[kind] += 1
                prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
                self._send(200, {
                    "id": f"chatcmpl-fake-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
                    "model": str(body.get("model") or MODEL),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop", "logprobs": None}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": len(content) // 4,
                              "total_tokens": prompt + len(content) // 4},
                })  # fmt: skip

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._port = int(self._server.server_address[1])
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
