"""Graphiti (``graphiti-core`` 0.31.1 on FalkorDB) as an external backend: the graph, one way.

Sync (the engine of ``memrouter.external.sync``, as for Forgetful) writes each memory
as an ``EpisodicNode``, memrouter's graph entities as ``EntityNode`` and its
typed edges as ``EntityEdge`` whose ``fact`` is the sentence the relation
came from (``memrouter.external.backends.graphiti_plan``). A memory's remote id is
its episode's UUID. Deleting a memory marks its episode obsolete and ends its
edges (``invalid_at``, ``expired_at``); nothing is ever deleted. No language
model is called: nodes and edges are saved directly, and embeddings come from
memrouter's own embedder.

Search is Graphiti's hybrid search (BM25 + cosine, reciprocal rank fusion)
over the group's facts and episodes, filtered to the present: an episode hit
is a memory (its remote id the episode's), a fact hit is one edge, carrying
its valid window and the episode it came from (so the router's merge drops
facts of memories it already has).

Configuration (``[backends.graphiti]``): ``host`` (default ``127.0.0.1``),
``port`` (6379), ``group`` (the Graphiti ``group_id`` and FalkorDB graph;
one per project: the router gives the project folder's name when none is
set, and a backend built alone defaults to ``memrouter``), ``password``, ``embedder`` (a
memrouter embedder name, default ``minilm``), ``timeout`` (seconds per call,
default 30) and ``health_ttl`` (seconds, default 30).

Needs ``memrouter[graphiti]`` (Python >= 3.12); ``graphiti_core`` is
imported on first use only.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memrouter.core.errors import BackendContractError, BackendNotInstalled, BackendUnavailable, ConfigError, NotFound
from memrouter.external.backends.base import ExternalHit, HealthChecked, MemoryDraft, RemoteMemory
from memrouter.external.backends.graphiti_plan import plan_memory
from memrouter.external.backends.health import DEFAULT_TTL_S, HealthCheck, tcp_probe
from memrouter.store.parse import content_hash

if TYPE_CHECKING:
    from memrouter.external.backends.graphiti_store import GraphitiStore

__all__ = ["GraphitiBackend", "GraphitiConfig", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'memrouter[graphiti]' (Python >= 3.12)"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GraphitiConfig:
    """The settings of one Graphiti backend (see the module docstring)."""

    name: str = "graphiti"
    host: str = "127.0.0.1"
    port: int = 6379
    group: str = "memrouter"
    password: str | None = None
    embedder: str = "minilm"
    timeout: float = 30.0
    health_ttl: float = DEFAULT_TTL_S

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> GraphitiConfig:
        known = {"name", "host", "port", "group", "password", "embedder", "timeout", "health_ttl"}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ConfigError(f"[backends.graphiti] unknown key(s): {', '.join(unknown)}")
        try:
            config = cls(
                name=str(settings.get("name", _DEFAULTS.name)),
                host=str(settings.get("host", _DEFAULTS.host)),
                port=int(settings.get("port", _DEFAULTS.port)),
                group=str(settings.get("group", _DEFAULTS.group)),
                password=None if settings.get("password") is None else str(settings["password"]),
                embedder=str(settings.get("embedder", _DEFAULTS.embedder)),
                timeout=float(settings.get("timeout", _DEFAULTS.timeout)),
                health_ttl=float(settings.get("health_ttl", _DEFAULTS.health_ttl)),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[backends.graphiti] bad setting: {exc}") from exc
        if not 0 < config.port < 65536 or config.timeout <= 0 or config.health_ttl < 0:
            raise ConfigError("[backends.graphiti] port must be 1-65535, timeout > 0 and health_ttl >= 0")
        if not config.group or not config.group.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"[backends.graphiti] group must be letters, digits, '-' or '_': {config.group!r}")
        return config


_DEFAULTS = GraphitiConfig()


def _transient(exc: BaseException) -> bool:
    """Whether a failure says the server is away (refused, reset, timed out), not that it disagreed."""
    if isinstance(exc, OSError | TimeoutError | asyncio.TimeoutError | ConnectionError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"ConnectionError", "TimeoutError", "BusyLoadingError"})


class GraphitiBackend(HealthChecked):
    """The ``graphiti`` backend: a synchronous facade over ``GraphitiStore`` on a private event loop."""

    max_content: int | None = None

    def __init__(self, config: GraphitiConfig, *, embedder: Any = None) -> None:
        self.config = config
        self.name = config.name
        self._embedder = embedder
        self._health = HealthCheck(
            tcp_probe(config.host, config.port), f"{config.host}:{config.port}", ttl=config.health_ttl
        )
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._store: GraphitiStore | None = None

    @classmethod
    def from_config(cls, settings: Mapping[str, Any]) -> GraphitiBackend:
        config = GraphitiConfig.from_mapping(settings)
        if importlib.util.find_spec("graphiti_core") is None:
            raise BackendNotInstalled(config.name, INSTALL_HINT)
        return cls(config)

    # -- identity and health --------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"falkordb://{self.config.host}:{self.config.port}/{self.config.group}"

    # -- the store on its loop ------------------------------------------------
    @property
    def store(self) -> GraphitiStore:
        """The Graphiti client (built on first use, on this backend's event loop)."""
        with self._lock:
            if self._store is None:
                from memrouter.external.backends.graphiti_store import GraphitiStore

                if self._embedder is None:
                    from memrouter.embed import get_embedder

                    self._embedder = get_embedder(self.config.embedder)
                loop = self._event_loop()
                config, embedder = self.config, self._embedder

                async def build() -> GraphitiStore:
                    return GraphitiStore(config.host, config.port, config.group, embedder, config.password)

                self._store = asyncio.run_coroutine_threadsafe(build(), loop).result(self.config.timeout)
            return self._store

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=f"memrouter-{self.name}", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run one store coroutine with the call deadline; failures become memrouter errors."""
        loop = self._event_loop()
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        try:
            result = future.result(self.config.timeout)
        except BaseException as exc:
            future.cancel()
            if _transient(exc):
                message = f"{self.name} at {self.config.host}:{self.config.port}: {type(exc).__name__}: {exc}"
                self._health.record_failure(message)
                raise BackendUnavailable(message) from exc
            raise BackendContractError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        self._health.record_success()
        return result

    # -- the protocol -----------------------------------------------------------
    def search(self, query: str, limit: int = 10) -> list[ExternalHit]:
        if not query.strip():
            return []  # nothing to look for: no round trip
        store = self.store
        found = self.call(store.search(query, limit))
        hits: list[ExternalHit] = []
        for rank, item in enumerate(found, start=1):
            hits.append(
                ExternalHit(
                    backend=self.name, remote_id=item.uuid, title=item.title, content=item.content,
                    score=item.score, rank=rank, hash=content_hash(item.content), context=item.context,
                    origin_id=item.origin,
                    valid_from=None if item.valid_at is None else item.valid_at.isoformat(),
                    valid_until=None if item.invalid_at is None else item.invalid_at.isoformat(),
                )
            )  # fmt: skip
        return hits

    def upsert(self, draft: MemoryDraft, remote_id: str | None = None) -> str:
        plan = plan_memory(draft, self.config.group)
        if remote_id is not None and remote_id != plan.episode_uuid:
            plan = _with_episode(plan, remote_id)  # a renamed memory keeps its episode
        store = self.store
        self.call(store.write(plan))
        return plan.episode_uuid

    def mark_obsolete(self, remote_id: str, reason: str, superseded_by: str | None = None) -> None:
        store = self.store
        why = reason if superseded_by is None else f"{reason} (superseded by {superseded_by})"
        if not self.call(store.retire(remote_id, why)):
            raise NotFound(f"no Graphiti episode {remote_id} in group {self.config.group}")

    def get(self, remote_id: str) -> RemoteMemory:
        store = self.store
        row = self.call(store.get(remote_id))
        if row is None:
            raise NotFound(f"no Graphiti episode {remote_id} in group {self.config.group}")
        return RemoteMemory(
            id=row.uuid, title=row.name, content=row.content, context=row.source_description,
            is_obsolete=row.obsolete is not None, obsolete_reason=row.obsolete,
        )  # fmt: skip

    def close(self) -> None:
        with self._lock:
            store, loop, thread = self._store, self._loop, self._thread
            self._store, self._loop, self._thread = None, None, None
        if loop is None:
            return
        if store is not None:
            try:
                asyncio.run_coroutine_threadsafe(store.close(), loop).result(5)
            except Exception:  # noqa: BLE001 - closing a dead connection must not fail
                pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)
        if not loop.is_running():
            loop.close()


def _with_episode(plan: Any, episode: str) -> Any:
    from memrouter.core.records import replace

    return replace(plan, episode_uuid=episode)
