"""ForgetfulBackend against the fake Forgetful over streamable HTTP (a real subprocess)."""

from __future__ import annotations

import pytest

from memrouter.core.errors import BackendContractError, InvalidInput, NotFound
from memrouter.external.backends.base import Backend, ExternalHit, MemoryDraft, backend_status
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.backend_conformance import BackendConformance, unique_word
from memrouter.testing.servers import FakeServer, serve_http


class TestForgetfulOverHttp(BackendConformance):
    """The shared conformance suite."""

    @pytest.fixture
    def backend(self, http_backend: ForgetfulBackend) -> Backend:
        return http_backend


def test_session_is_reused_across_calls(http_backend: ForgetfulBackend) -> None:
    http_backend.search("warm up", 1)
    before = http_backend.connects
    for _ in range(5):
        http_backend.search(unique_word(), 3)
    assert http_backend.connects == before == 1


def test_hits_follow_similarity_not_the_servers_importance_order(http_backend: ForgetfulBackend) -> None:
    word = unique_word()
    best = http_backend.upsert(MemoryDraft(title=word, content=f"{word} {word} {word}", importance=1))
    middle = http_backend.upsert(MemoryDraft(title="m", content=f"{word} plus two other words", importance=5))
    worst = http_backend.upsert(
        MemoryDraft(title="w", content=f"{word} with a great many other words to dilute it", importance=10)
    )
    raw = http_backend.execute("query_memory", {"query": word, "query_context": "test", "k": 3})
    assert [m["id"] for m in raw["primary_memories"]] == [int(worst), int(middle), int(best)]
    hits = http_backend.search(word, 3)
    assert [h.remote_id for h in hits] == [best, middle, worst]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].score > hits[1].score > hits[2].score
    assert [h.importance for h in hits] == [1, 5, 10]


def test_hit_becomes_a_router_hit(http_backend: ForgetfulBackend) -> None:
    word = unique_word()
    remote_id = http_backend.upsert(MemoryDraft(title=f"T {word}", content=f"{word} body text"))
    hit: ExternalHit = http_backend.search(word, 1)[0]
    routed = hit.to_hit(content=True)
    assert routed.name == f"forgetful:{remote_id}"
    assert routed.source == "forgetful" and routed.path is None
    assert routed.hash == hit.hash and routed.content == f"{word} body text"
    assert routed.why[0].retriever == "forgetful" and routed.why[0].rank == 1


def test_search_limit_is_capped_at_twenty(http_backend: ForgetfulBackend) -> None:
    word = unique_word()
    for index in range(22):
        http_backend.upsert(MemoryDraft(title=f"{word} {index}", content=f"{word} item {index}"))
    assert len(http_backend.search(word, 50)) == 20


def test_upsert_clips_fields_to_forgetfuls_limits(http_backend: ForgetfulBackend) -> None:
    draft = MemoryDraft(
        title="T" * 250,
        content="clipped fields",
        context="c" * 600,
        tags=tuple(f"tag{i}" for i in range(15)),
        keywords=tuple(f"kw{i}" for i in range(12)),
        importance=42,
    )
    memory = http_backend.get(http_backend.upsert(draft))
    assert len(memory.title) == 200 and memory.title.endswith("\u2026")
    assert len(memory.context) == 500
    assert memory.tags == tuple(f"tag{i}" for i in range(10))
    assert len(memory.keywords) == 10
    assert memory.importance == 10


def test_upsert_refuses_empty_and_long_content(http_backend: ForgetfulBackend) -> None:
    with pytest.raises(InvalidInput):
        http_backend.upsert(MemoryDraft(title="x", content="  \n"))
    with pytest.raises(InvalidInput, match="split_content"):
        http_backend.upsert(MemoryDraft(title="x", content="y" * 2001))
    http_backend.upsert(MemoryDraft(title="x", content="y" * 2000))


def test_server_side_validation_is_a_contract_error(http_backend: ForgetfulBackend) -> None:
    base = {"title": "t", "content": "c", "context": "", "keywords": [], "tags": [], "importance": 5}
    cases = {
        "content": {**base, "content": "x" * 2001},
        "title": {**base, "title": "x" * 201},
        "tags": {**base, "tags": [f"t{i}" for i in range(11)]},
        "keywords": {**base, "keywords": [f"k{i}" for i in range(11)]},
        "importance": {**base, "importance": 11},
    }
    for field, arguments in cases.items():
        with pytest.raises(BackendContractError, match=f"(?s)Failed to execute 'create_memory'.*{field}"):
            http_backend.execute("create_memory", arguments)
    with pytest.raises(BackendContractError, match="missing required"):
        http_backend.execute("create_memory", {"title": "t"})


def test_unknown_ids(http_backend: ForgetfulBackend) -> None:
    with pytest.raises(NotFound, match="Memory with id 424242 not found"):
        http_backend.upsert(MemoryDraft(title="t", content="c"), "424242")
    with pytest.raises(InvalidInput):
        http_backend.get("not-a-number")


def test_meta_tools(http_backend: ForgetfulBackend) -> None:
    tools = http_backend.call_meta("discover_forgetful_tools", {})
    names = {tool["name"] for tool in tools["tools_by_category"]["memory"]}
    assert {"create_memory", "query_memory", "update_memory", "get_memory", "mark_memory_obsolete"} <= names
    doc = http_backend.call_meta("how_to_use_forgetful_tool", {"tool_name": "create_memory"})
    assert doc["name"] == "create_memory"
    with pytest.raises(BackendContractError, match="not found in registry"):
        http_backend.execute("drop_all_memories", {})


def test_link_is_symmetric(http_backend: ForgetfulBackend) -> None:
    a = http_backend.upsert(MemoryDraft(title="a", content="first"))
    b = http_backend.upsert(MemoryDraft(title="b", content="second"))
    http_backend.link(a, [b])
    assert b in http_backend.get(a).linked_ids
    assert a in http_backend.get(b).linked_ids
    http_backend.link(a, [])


def test_headers_and_token_are_sent(fake_http: FakeServer) -> None:
    config = ForgetfulConfig(url=fake_http.url, token="secret", headers={"X-Memrouter": "1"})
    with ForgetfulBackend(config) as backend:
        word = unique_word()
        remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} with headers"))
        assert backend.search(word, 1)[0].remote_id == remote_id


def test_auto_protocol_negotiation(fake_http: FakeServer) -> None:
    # The default is the initialize handshake (what Forgetful 0.6.0 speaks); "auto" probes first.
    with ForgetfulBackend(ForgetfulConfig(url=fake_http.url, protocol="auto")) as backend:
        word = unique_word()
        remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} auto"))
        assert backend.search(word, 1)[0].remote_id == remote_id


def test_data_survives_a_server_restart_with_a_db_file(tmp_path: object) -> None:
    db = f"{tmp_path}/forgetful.sqlite"
    with serve_http(db=db) as server:
        with ForgetfulBackend(ForgetfulConfig(url=server.url)) as backend:
            remote_id = backend.upsert(MemoryDraft(title="kept", content="persistent memory"))
    with serve_http(db=db) as server:
        with ForgetfulBackend(ForgetfulConfig(url=server.url)) as backend:
            assert backend.get(remote_id).content == "persistent memory"


def test_status_view_without_probing(fake_http: FakeServer) -> None:
    backend = ForgetfulBackend(ForgetfulConfig(url=fake_http.url))
    fresh = backend_status(backend)
    assert fresh["ok"] is None and fresh["age_s"] is None
    assert backend.health.probes == 0
    backend.available()
    status = backend_status(backend)
    assert status["name"] == "forgetful" and status["endpoint"] == fake_http.url
    assert status["ok"] is True and status["error"] is None
    assert status["checked"] == f"127.0.0.1:{fake_http.port}"
    assert status["max_content"] == 2000 and status["supports_links"] is True


def test_concurrent_callers_share_one_session(fake_http: FakeServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    word = unique_word()
    with ForgetfulBackend(ForgetfulConfig(url=fake_http.url)) as backend:
        remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} shared"))
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: backend.search(word, 1), range(32)))
        assert all(hits[0].remote_id == remote_id for hits in results)
        assert backend.connects == 1


def test_close_then_use_again_reconnects(fake_http: FakeServer) -> None:
    backend = ForgetfulBackend(ForgetfulConfig(url=fake_http.url))
    word = unique_word()
    remote_id = backend.upsert(MemoryDraft(title=word, content=f"{word} reopened"))
    backend.close()
    assert backend.get(remote_id).title == word
    backend.close()
    backend.close()
