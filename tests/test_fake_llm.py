"""The fake LLM behind the OpenAI chat-completions API: deterministic answers over real HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from memrouter.testing.fake_llm import FakeLLM, facts_of

FACT_SCHEMA: dict[str, Any] = {
    "$defs": {
        "Fact": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "what": {"type": "string"},
                "when": {"type": "string"},
                "fact_type": {"enum": ["world", "assistant"], "type": "string"},
                "occurred_start": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "entities": {"type": "array", "items": {"type": "string"}},
                "confidence": {"type": "number", "minimum": 0.5},
            },
            "required": ["what", "when", "fact_type", "occurred_start", "entities", "confidence"],
        }
    },
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"$ref": "#/$defs/Fact"}}},
    "required": ["facts"],
}
CHUNK = (
    "Extract facts from the following chunk.\n\nChunk: 1/1\nContext: memrouter:cache\n\nContent:\n"
    "---\ntitle: Cache\n---\n# Cache TTL\n\nThe cache TTL is 15 minutes.\n\nRedis holds the sessions;\nit is shared."
)


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def chat(llm: FakeLLM, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{llm.url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        result: dict[str, Any] = json.load(answer)
    return result


def content_of(result: dict[str, Any]) -> Any:
    (choice,) = result["choices"]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "stop"
    return json.loads(choice["message"]["content"])


def test_facts_are_the_chunk_paragraphs_verbatim() -> None:
    assert facts_of(CHUNK) == ["The cache TTL is 15 minutes.", "Redis holds the sessions;\nit is shared."]


def test_a_strict_schema_extraction_gets_one_valid_fact_per_paragraph(llm: FakeLLM) -> None:
    before = llm.count("extraction")
    body = {"model": "m", "messages": [{"role": "system", "content": "Extract."}, {"role": "user", "content": CHUNK}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "strict": True,
                                                                        "schema": FACT_SCHEMA}}}  # fmt: skip
    result = chat(llm, body)
    assert result["object"] == "chat.completion" and result["usage"]["total_tokens"] > 0
    facts = content_of(result)["facts"]
    assert [fact["what"] for fact in facts] == facts_of(CHUNK)
    assert facts[0] == {"what": "The cache TTL is 15 minutes.", "when": "N/A", "fact_type": "world",
                        "occurred_start": None, "entities": [], "confidence": 0.5}  # fmt: skip
    assert content_of(chat(llm, body)) == content_of(result)  # deterministic
    assert llm.count("extraction") == before + 2


def test_the_schema_may_come_in_the_prompt(llm: FakeLLM) -> None:
    system = f"Extract.\n\nYou must respond with valid JSON matching this schema:\n{json.dumps(FACT_SCHEMA)}"
    body = {"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": CHUNK}],
            "response_format": {"type": "json_object"}}  # fmt: skip
    assert [fact["what"] for fact in content_of(chat(llm, body))["facts"]] == facts_of(CHUNK)


def test_consolidation_makes_no_observations_and_plain_requests_get_ok(llm: FakeLLM) -> None:
    schema = {"type": "object", "properties": {"creates": {"type": "array"}, "updates": {"type": "array"},
                                               "deletes": {"type": "array"}}}  # fmt: skip
    body = {"model": "m", "messages": [{"role": "user", "content": "## New facts"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}}  # fmt: skip
    before = dict(llm.calls)
    assert content_of(chat(llm, body)) == {"creates": [], "updates": [], "deletes": []}
    plain = chat(llm, {"model": "m", "messages": [{"role": "user", "content": "Say 'ok'"}], "max_tokens": 5})
    assert plain["choices"][0]["message"]["content"] == "ok"
    assert llm.count("consolidation") == before.get("consolidation", 0) + 1
    assert llm.count("other") == before.get("other", 0) + 1


def test_models_streaming_and_wrong_paths(llm: FakeLLM) -> None:
    with urllib.request.urlopen(f"{llm.url}/models", timeout=5) as answer:
        assert json.load(answer)["data"][0]["id"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        chat(llm, {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
    assert refused.value.code == 400
    refused.value.close()
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{llm.url}/embeddings", data=b"{}", timeout=5)
    assert missing.value.code == 404
    missing.value.close()
