"""One contract, two servers: the conformance suite against the in-repo fake and the real Forgetful.

Passing the same tests on both is what shows the fake is faithful. The
checks after the classes pin behaviours of the real server that memrouter
relies on (and that the fake copies).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from interop_peers import RealForgetful

from memrouter.core.errors import NotFound
from memrouter.external.backends.base import Backend, MemoryDraft
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.backend_conformance import BackendConformance, unique_word
from memrouter.testing.servers import FakeServer, serve_http


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeServer]:
    with serve_http() as server:
        yield server


@pytest.fixture(scope="module")
def fake_backend(fake_server: FakeServer) -> Iterator[ForgetfulBackend]:
    backend = ForgetfulBackend(ForgetfulConfig(url=fake_server.url, timeout=30.0))
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def real_backend(real_forgetful: RealForgetful) -> Iterator[ForgetfulBackend]:
    backend = ForgetfulBackend(ForgetfulConfig(url=real_forgetful.url, timeout=30.0))
    yield backend
    backend.close()


class TestFakeForgetful(BackendConformance):
    """The contract against the in-repo fake."""

    @pytest.fixture
    def backend(self, fake_backend: ForgetfulBackend) -> Backend:
        return fake_backend


class TestRealForgetful(BackendConformance):
    """The same contract against the real Forgetful 0.6.0."""

    @pytest.fixture
    def backend(self, real_backend: ForgetfulBackend) -> Backend:
        return real_backend


@pytest.fixture(params=["fake", "real"])
def either(request: pytest.FixtureRequest) -> ForgetfulBackend:
    backend: ForgetfulBackend = request.getfixturevalue(f"{request.param}_backend")
    return backend


def test_health_reports_the_server(real_forgetful: RealForgetful, real_backend: ForgetfulBackend) -> None:
    assert real_backend.available(force=True) is True
    report = real_backend.health.report()
    assert report.ok is True
    assert real_backend.endpoint == real_forgetful.url


def test_primary_memories_by_importance_hits_by_similarity(either: ForgetfulBackend) -> None:
    word = unique_word()
    best = either.upsert(
        MemoryDraft(title=f"Lighthouse lens {word}", content=f"The lighthouse keeper polishes the brass lens. {word}",
                    importance=1)
    )  # fmt: skip
    worst = either.upsert(
        MemoryDraft(title=f"Quarterly invoices {word}", importance=10,
                    content=f"Invoices, tax forms and spreadsheets for the quarter; a lighthouse on the cover. {word}")
    )  # fmt: skip
    query = "lighthouse keeper polishing the brass lens"
    raw = either.execute("query_memory", {"query": query, "query_context": "test", "k": 20})
    primary = [m["id"] for m in raw["primary_memories"]]
    assert primary.index(int(worst)) < primary.index(int(best))  # the server orders by importance
    similarity = {s["memory_id"]: s["similarity"] for s in raw["scores"]}
    assert similarity[int(best)] > similarity[int(worst)]
    ranked = [h.remote_id for h in either.search(query, 20)]
    assert ranked.index(best) < ranked.index(worst)  # memrouter ranks by the returned similarity


def test_unknown_ids_and_over_limit_content_are_tool_errors(either: ForgetfulBackend) -> None:
    with pytest.raises(NotFound):
        either.get("987654321")
    with pytest.raises(NotFound):
        either.mark_obsolete("987654321", "gone")


def test_obsolete_memory_keeps_its_reason(either: ForgetfulBackend) -> None:
    word = unique_word()
    remote_id = either.upsert(MemoryDraft(title=word, content=f"{word} soon obsolete"))
    either.mark_obsolete(remote_id, "replaced")
    raw = either.execute("get_memory", {"memory_id": int(remote_id)})
    assert raw["is_obsolete"] is True and raw["obsolete_reason"] == "replaced"
    assert remote_id not in [h.remote_id for h in either.search(word, 5)]
