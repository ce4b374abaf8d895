"""An external backend held in memory: the smallest complete implementation of the protocol.

``InMemoryBackend`` passes ``memrouter.testing.backend_conformance`` and offers
``SupportsInventory`` and ``SupportsLinks``, so sync's handling of a service
that lost its data can be tested without one (``clear`` forgets everything, as
a deleted store would). Search ranks by word overlap (cosine over word counts).
``calls`` counts the calls made to it, by method name.

Register it like a plugin to use it from a Router (the tests do, through an
entry point of the ``memrouter.backends`` group); every instance built with
the same ``store`` name shares one store within the process.
"""

from __future__ import annotations

import math
import re
import threading
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from memrouter.core.errors import BackendUnavailable, NotFound
from memrouter.external.backends.base import ExternalHit, HealthChecked, MemoryDraft, RemoteMemory
from memrouter.external.backends.health import HealthCheck

__all__ = ["InMemoryBackend", "MemoryStore"]

_WORD = re.compile(r"\w+")


class MemoryStore:
    """The remote memories of one in-memory service, shared by the backends built on it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.memories: dict[str, RemoteMemory] = {}
        self.down = False

    def clear(self) -> None:
        """Forget everything, as a service whose data was deleted would."""
        with self.lock:
            self.memories.clear()


_STORES: dict[str, MemoryStore] = {}
_STORES_LOCK = threading.Lock()


def _store(name: str) -> MemoryStore:
    with _STORES_LOCK:
        return _STORES.setdefault(name, MemoryStore())


def _vector(text: str) -> Counter[str]:
    return Counter(word.lower() for word in _WORD.findall(text))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(count * b[word] for word, count in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


class InMemoryBackend(HealthChecked):
    """A backend whose service is a dictionary (see the module docstring)."""

    max_content: int | None = None

    def __init__(self, config: Mapping[str, Any] | None = None, *, store: MemoryStore | None = None) -> None:
        settings = dict(config or {})
        self.name = str(settings.get("name", "memory"))
        self.store = store if store is not None else _store(str(settings.get("store", self.name)))
        self.calls: Counter[str] = Counter()
        self._health = HealthCheck(self._probe, f"memory:{self.name}", ttl=float(settings.get("health_ttl", 0)))

    def _probe(self) -> None:
        if self.store.down:
            raise ConnectionRefusedError("the in-memory service is down")

    def _reach(self, method: str) -> None:
        self.calls[method] += 1
        if self.store.down:
            self._health.record_failure("the in-memory service is down")
            raise BackendUnavailable(f"{self.name} is down")

    @property
    def endpoint(self) -> str:
        return f"memory:{self.name}"

    def search(self, query: str, limit: int = 10) -> list[ExternalHit]:
        self._reach("search")
        wanted = _vector(query)
        if not wanted:
            return []
        with self.store.lock:
            live = [memory for memory in self.store.memories.values() if not memory.is_obsolete]
        scored = [(_cosine(wanted, _vector(f"{m.title} {m.content}")), m) for m in live]
        ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda pair: (-pair[0], pair[1].id))[:limit]
        return [
            ExternalHit(backend=self.name, remote_id=m.id, title=m.title, content=m.content, score=score,
                        rank=rank, hash=m.hash, tags=m.tags, importance=m.importance, context=m.context,
                        source_repo=m.source_repo)
            for rank, (score, m) in enumerate(ranked, start=1)
        ]  # fmt: skip

    def upsert(self, draft: MemoryDraft, remote_id: str | None = None) -> str:
        self._reach("upsert")
        with self.store.lock:
            if remote_id is not None and remote_id not in self.store.memories:
                raise NotFound(f"no memory {remote_id} in {self.name}")
            memory_id = remote_id or uuid.uuid4().hex
            before = self.store.memories.get(memory_id)
            self.store.memories[memory_id] = RemoteMemory(
                id=memory_id, title=draft.title, content=draft.content, context=draft.context, tags=draft.tags,
                keywords=draft.keywords, importance=draft.importance, source_repo=draft.source_repo,
                source_files=draft.source_files, source_url=draft.source_url,
                linked_ids=before.linked_ids if before is not None else (),
            )  # fmt: skip
        return memory_id

    def mark_obsolete(self, remote_id: str, reason: str, superseded_by: str | None = None) -> None:
        self._reach("mark_obsolete")
        with self.store.lock:
            memory = self.store.memories.get(remote_id)
            if memory is None:
                raise NotFound(f"no memory {remote_id} in {self.name}")
            self.store.memories[remote_id] = replace(
                memory, is_obsolete=True, obsolete_reason=reason, superseded_by=superseded_by
            )

    def get(self, remote_id: str) -> RemoteMemory:
        self._reach("get")
        with self.store.lock:
            memory = self.store.memories.get(remote_id)
        if memory is None:
            raise NotFound(f"no memory {remote_id} in {self.name}")
        return memory

    def link(self, remote_id: str, related_ids: Sequence[str]) -> None:
        self._reach("link")
        with self.store.lock:
            memory = self.store.memories.get(remote_id)
            if memory is None:
                raise NotFound(f"no memory {remote_id} in {self.name}")
            linked = tuple(dict.fromkeys((*memory.linked_ids, *related_ids)))
            self.store.memories[remote_id] = replace(memory, linked_ids=linked)

    def inventory(self) -> dict[str, str]:
        self._reach("inventory")
        with self.store.lock:
            return {m.id: m.hash for m in self.store.memories.values() if not m.is_obsolete}

    def close(self) -> None:
        """Nothing to release: the store stays for the next backend built on it."""
