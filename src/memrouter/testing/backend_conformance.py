"""Conformance tests every external backend must pass.

Subclass ``BackendConformance`` in a test module and provide a ``backend``
fixture that yields a working, reachable backend (module-scoped is fine: the
tests use unique words, so they do not disturb each other)::

    class TestMyBackend(BackendConformance):
        @pytest.fixture
        def backend(self, my_server):
            return MyBackend(...)

``missing_id`` must name a remote id that does not exist. The tests exercise
the ``Backend`` protocol only (plus ``SupportsLinks`` when offered).
"""

from __future__ import annotations

import uuid

import pytest

from memrouter.core.errors import InvalidInput, NotFound
from memrouter.external.backends.base import Backend, MemoryDraft, SupportsLinks, upsert_parts
from memrouter.external.backends.split import split_content
from memrouter.store.parse import content_hash

__all__ = ["BackendConformance", "unique_word"]


def unique_word() -> str:
    """A word no other memory contains (letters and digits only)."""
    return "zq" + uuid.uuid4().hex[:10]


class BackendConformance:
    """The behaviour memrouter relies on from any backend."""

    missing_id = "987654321"

    def test_is_a_backend(self, backend: Backend) -> None:
        assert isinstance(backend, Backend)
        assert backend.name
        assert backend.endpoint

    def test_available(self, backend: Backend) -> None:
        assert backend.available(force=True) is True
        assert backend.health.report().ok is True

    def test_create_then_get_round_trip(self, backend: Backend) -> None:
        word = unique_word()
        draft = MemoryDraft(
            title=f"Round trip {word}",
            content=f"The {word} service keeps its cache warm.\n\nSecond paragraph.",
            context="conformance",
            tags=("testing", "conformance"),
            keywords=(word,),
            importance=6,
        )
        remote_id = backend.upsert(draft)
        memory = backend.get(remote_id)
        assert memory.id == remote_id
        assert memory.title == draft.title
        assert memory.content == draft.content
        assert memory.hash == content_hash(draft.content)
        assert set(memory.tags) == {"testing", "conformance"}
        assert memory.importance == 6
        assert memory.is_obsolete is False

    def test_update_replaces_content(self, backend: Backend) -> None:
        word = unique_word()
        remote_id = backend.upsert(MemoryDraft(title=word, content=f"old {word} text"))
        same_id = backend.upsert(MemoryDraft(title=word, content=f"new {word} text"), remote_id)
        assert same_id == remote_id
        assert backend.get(remote_id).content == f"new {word} text"

    def test_search_ranks_by_similarity(self, backend: Backend) -> None:
        word, other = unique_word(), unique_word()
        close = backend.upsert(
            MemoryDraft(title=f"{word} {other}", content=f"{word} {other} {word} {other}", importance=2)
        )
        far = backend.upsert(
            MemoryDraft(title=f"about {word}", content=f"{word} and many unrelated words here", importance=10)
        )
        hits = backend.search(f"{word} {other}", limit=5)
        ids = [hit.remote_id for hit in hits]
        assert close in ids and far in ids
        assert ids.index(close) < ids.index(far)
        assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))
        for hit in hits:
            assert hit.hash == content_hash(hit.content)
            assert hit.backend == backend.name

    def test_search_respects_limit(self, backend: Backend) -> None:
        word = unique_word()
        for index in range(3):
            backend.upsert(MemoryDraft(title=f"{word} {index}", content=f"{word} number {index}"))
        assert len(backend.search(word, limit=2)) == 2

    def test_blank_query_finds_nothing(self, backend: Backend) -> None:
        assert backend.search("   ", limit=5) == []

    def test_obsolete_is_hidden_from_search_but_gettable(self, backend: Backend) -> None:
        word = unique_word()
        keep = backend.upsert(MemoryDraft(title=f"{word} keep", content=f"{word} stays"))
        gone = backend.upsert(MemoryDraft(title=f"{word} gone", content=f"{word} goes {word}"))
        backend.mark_obsolete(gone, reason="deleted in the canonical store", superseded_by=keep)
        ids = [hit.remote_id for hit in backend.search(word, limit=10)]
        assert gone not in ids and keep in ids
        memory = backend.get(gone)
        assert memory.is_obsolete is True
        assert memory.obsolete_reason == "deleted in the canonical store"
        assert memory.superseded_by == keep

    def test_get_missing_raises_not_found(self, backend: Backend) -> None:
        with pytest.raises(NotFound):
            backend.get(self.missing_id)

    def test_obsolete_missing_raises_not_found(self, backend: Backend) -> None:
        with pytest.raises(NotFound):
            backend.mark_obsolete(self.missing_id, reason="gone")

    def test_content_over_the_limit_is_refused_and_without_one_kept_whole(self, backend: Backend) -> None:
        if backend.max_content is not None:
            with pytest.raises(InvalidInput):
                backend.upsert(MemoryDraft(title="too long", content="x" * (backend.max_content + 1)))
            return
        word = unique_word()
        text = "\n\n".join(f"## Part {i}\n\n{word} " + "lorem ipsum dolor sit amet " * 40 for i in range(60))
        remote_id = backend.upsert(MemoryDraft(title=f"Long {word}", content=text))
        assert backend.get(remote_id).content == text

    def test_split_memory_written_as_linked_parts(self, backend: Backend) -> None:
        limit = backend.max_content or 2000
        word = unique_word()
        paragraph = f"{word} " + "lorem ipsum dolor sit amet " * 20
        text = "\n\n".join(f"## Section {i}\n\n{paragraph}" for i in range(1, 9))
        parts = split_content(text, limit)
        assert len(parts) > 1
        draft = MemoryDraft(title=f"Long {word}", content=text)
        ids = upsert_parts(backend, draft, parts)
        assert len(ids) == len(parts) == len(set(ids))
        assert "".join(backend.get(i).content for i in ids) == text
        if isinstance(backend, SupportsLinks):
            assert set(ids[1:]) <= set(backend.get(ids[0]).linked_ids)
        shorter = upsert_parts(backend, draft, parts[:1], existing_ids=ids)
        assert shorter == ids[:1]
        assert all(backend.get(i).is_obsolete for i in ids[1:])
