"""The conformance suite against the real Forgetful, when one is running (opt-in).

Set ``MEMROUTER_TEST_FORGETFUL_URL`` (e.g. ``http://127.0.0.1:8020/mcp``),
for instance with ``python -m memrouter.testing.real_forgetful``; without it
these tests are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from memrouter.backends.base import Backend, MemoryDraft
from memrouter.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.backend_conformance import BackendConformance, unique_word

URL = os.environ.get("MEMROUTER_TEST_FORGETFUL_URL")

pytestmark = pytest.mark.skipif(not URL, reason="MEMROUTER_TEST_FORGETFUL_URL is not set")


@pytest.fixture(scope="module")
def real_backend() -> Iterator[ForgetfulBackend]:
    assert URL is not None
    backend = ForgetfulBackend(ForgetfulConfig(url=URL, timeout=30.0))
    yield backend
    backend.close()


class TestRealForgetful(BackendConformance):
    """What the fake promises, checked against the real server."""

    @pytest.fixture
    def backend(self, real_backend: ForgetfulBackend) -> Backend:
        return real_backend


def test_primary_memories_come_by_importance_and_hits_by_similarity(real_backend: ForgetfulBackend) -> None:
    word = unique_word()
    best = real_backend.upsert(MemoryDraft(title=word, content=f"{word} {word} {word}", importance=1))
    worst = real_backend.upsert(
        MemoryDraft(title="w", content=f"{word} with a great many other words to dilute it", importance=10)
    )
    raw = real_backend.execute("query_memory", {"query": word, "query_context": "test", "k": 2})
    assert [m["id"] for m in raw["primary_memories"]] == [int(worst), int(best)]
    assert [h.remote_id for h in real_backend.search(word, 2)] == [best, worst]
