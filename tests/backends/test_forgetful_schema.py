"""The Forgetful schema at the parsing boundary: real-shaped replies pass, broken ones are contract errors."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError

from memrouter.core.errors import BackendContractError
from memrouter.external.backends.forgetful_schema import (
    REPLY_MODELS,
    CreateResult,
    ForgetfulMemory,
    QueryResult,
    SuccessResult,
    UpdateResult,
    parse_reply,
)
from memrouter.testing.forgetful_server import FakeForgetfulStore, break_reply


def real_memory(memory_id: int = 7, **changes: Any) -> dict[str, Any]:
    """A memory as Forgetful 0.6.0 returns it, fields memrouter does not read included."""
    memory: dict[str, Any] = {
        "id": memory_id, "title": "Retry with backoff", "content": "Retry transient errors.",
        "context": "why", "keywords": ["retry"], "tags": ["pattern"], "importance": 8,
        "project_ids": [], "source_repo": "acme/api", "source_files": ["a.py"], "source_url": None,
        "confidence": 0.9, "encoding_agent": "memrouter", "encoding_version": None,
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        "linked_memory_ids": [3], "code_artifact_ids": [], "document_ids": [], "file_ids": [],
        "is_obsolete": False, "obsolete_reason": None, "superseded_by": None, "obsoleted_at": None,
    }  # fmt: skip
    memory.update(changes)
    return memory


def test_a_real_memory_becomes_a_remote_memory_with_its_extras() -> None:
    remote = parse_reply(ForgetfulMemory, real_memory(), tool="get_memory").to_remote()
    assert (remote.id, remote.title, remote.importance, remote.linked_ids) == ("7", "Retry with backoff", 8, ("3",))
    assert remote.tags == ("pattern",) and remote.source_files == ("a.py",)
    assert remote.extra["created_at"] == "2026-01-01T00:00:00Z" and remote.extra["confidence"] == 0.9
    assert "title" not in remote.extra and "id" not in remote.extra


def test_optional_fields_may_be_null_or_absent() -> None:
    sparse = {"id": 1, "title": "t", "content": "c", "context": None, "tags": None, "keywords": None}
    remote = parse_reply(ForgetfulMemory, sparse, tool="get_memory").to_remote()
    assert (remote.context, remote.tags, remote.keywords, remote.is_obsolete) == ("", (), (), False)


def test_a_real_query_reply() -> None:
    reply = {
        "query": "retry", "primary_memories": [real_memory(7), real_memory(9, importance=2)],
        "linked_memories": [{"link_source_id": 7, "memory": real_memory(3)}],
        "scores": [{"memory_id": 7, "similarity": 0.5, "rerank_score": None}, {"memory_id": 9, "similarity": 1}],
        "total_count": 3, "token_count": 12, "truncated": False,
    }  # fmt: skip
    parsed = parse_reply(QueryResult, reply, tool="query_memory")
    assert [m.id for m in parsed.primary_memories] == [7, 9]
    assert [s.similarity for s in parsed.scores or ()] == [0.5, 1.0]
    assert parsed.linked_memories[0].memory.id == 3
    assert parse_reply(QueryResult, {"primary_memories": [], "scores": None}, tool="query_memory").scores is None


def test_a_real_create_reply_and_an_update_without_id() -> None:
    created = {"id": 12, "title": "t", "linked_memory_ids": [], "similar_memories": [], "plugin_warnings": []}
    assert parse_reply(CreateResult, created, tool="create_memory").id == 12
    assert parse_reply(UpdateResult, {"plugin_warnings": []}, tool="update_memory").id is None


@pytest.mark.parametrize(
    ("model", "reply", "problem"),
    [
        (ForgetfulMemory, {"title": "t", "content": "c"}, "id: Field required"),
        (ForgetfulMemory, real_memory(content=None), "content: Input should be a valid string (got None)"),
        (ForgetfulMemory, real_memory(memory_id="7"), "id: Input should be a valid integer (got '7')"),
        (ForgetfulMemory, real_memory(memory_id=True), "id: Input should be a valid integer (got True)"),
        (ForgetfulMemory, real_memory(is_obsolete="no"), "is_obsolete: Input should be a valid boolean"),
        (ForgetfulMemory, real_memory(tags="pattern"), "tags: Input should be a valid list"),
        (ForgetfulMemory, real_memory(linked_memory_ids=["3"]), "linked_memory_ids.0: Input should be a valid integer"),
        (QueryResult, {"scores": []}, "primary_memories: Field required"),
        (QueryResult, {"primary_memories": "none"}, "primary_memories: Input should be a valid list"),
        (QueryResult, {"primary_memories": [{"id": 1}]}, "primary_memories.0.title: Field required"),
        (QueryResult, {"primary_memories": [], "scores": [{"similarity": 1.0}]}, "scores.0.memory_id: Field required"),
        (QueryResult, {"primary_memories": [], "scores": [{"memory_id": 1, "similarity": "high"}]},
         "scores.0.similarity: Input should be a valid number"),
        (CreateResult, {"title": "t"}, "id: Field required"),
        (SuccessResult, {"success": "true"}, "success: Input should be a valid boolean (got 'true')"),
        (SuccessResult, [], "Input should be a valid dictionary or instance of SuccessResult"),
    ],
)  # fmt: skip
def test_a_broken_reply_is_a_contract_error_naming_the_field(model: Any, reply: Any, problem: str) -> None:
    with pytest.raises(BackendContractError) as caught:
        parse_reply(model, reply, tool="some_tool", source="fg")
    message = str(caught.value)
    assert message.startswith("fg: the some_tool reply does not match Forgetful's schema: ")
    assert problem in message
    assert isinstance(caught.value.__cause__, ValidationError)


def test_many_problems_are_summarised() -> None:
    reply = {"primary_memories": [{"id": str(i)} for i in range(3)]}
    with pytest.raises(BackendContractError, match=r"; and \d+ more$"):
        parse_reply(QueryResult, reply, tool="query_memory")


def test_every_reply_of_the_fake_follows_the_schema_and_a_broken_one_does_not() -> None:
    store = FakeForgetfulStore()
    try:
        arguments = {"context": "c", "keywords": ["k"], "tags": ["t"], "importance": 5}
        first = store.execute("create_memory", {"title": "a", "content": "alpha words", **arguments})
        second = store.execute("create_memory", {"title": "b", "content": "beta words", **arguments})
        replies = {
            "create_memory": first,
            "link_memories": store.execute("link_memories", {"memory_id": first["id"], "related_ids": [second["id"]]}),
            "query_memory": store.execute("query_memory", {"query": "alpha", "query_context": "test", "k": 1}),
            "get_memory": store.execute("get_memory", {"memory_id": first["id"]}),
            "update_memory": store.execute("update_memory", {"memory_id": first["id"], "title": "a2"}),
            "get_recent_memories": store.execute("get_recent_memories", {"limit": 5}),
            "unlink_memories": store.execute("unlink_memories", {"memory_id": first["id"], "related_id": second["id"]}),
            "mark_memory_obsolete": store.execute("mark_memory_obsolete", {"memory_id": second["id"], "reason": "r"}),
            "unobsolete_memory": store.execute("unobsolete_memory", {"memory_id": second["id"]}),
        }  # fmt: skip
    finally:
        store.close()
    assert set(replies) == set(REPLY_MODELS)
    assert replies["query_memory"]["linked_memories"]  # the linked-memory shape is exercised too
    for tool, reply in replies.items():
        parse_reply(REPLY_MODELS[tool], reply, tool=tool)
    for tool in ("create_memory", "query_memory", "get_memory"):
        for mode in ("missing-id", "wrong-types"):
            with pytest.raises(BackendContractError):
                parse_reply(REPLY_MODELS[tool], break_reply(replies[tool], mode), tool=tool)


def test_the_client_module_does_not_import_pydantic() -> None:
    code = "import sys, memrouter.external.backends.forgetful; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
