"""Graphiti (``graphiti-core`` on FalkorDB) as memrouter writes and searches it, async.

Imported only by ``memrouter.external.backends.graphiti`` on first use: it imports
``graphiti_core`` (``memrouter[graphiti]``, Python >= 3.12). Nothing here
calls a language model: nodes and edges are saved directly (never
``add_episode`` or ``add_triplet``), and the client given to Graphiti for the
LLM (and the cross-encoder) raises if it is ever asked, counting the calls.

Written properties beyond Graphiti's own, on an episode: ``memrouter_obsolete``
(the reason its memory was deleted) and ``memrouter_invalid_at`` (when its
memory stops holding, past or future), set after the episode is saved and
cleared by the next save that has none; a search filtered to the present
leaves out the episodes whose time has come. A re-save keeps the
``created_at`` of what was saved before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from graphiti_core import Graphiti
from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.driver.falkordb_driver import FalkorDriver
from graphiti_core.edges import EntityEdge, EpisodicEdge
from graphiti_core.embedder.client import EmbedderClient
from graphiti_core.llm_client.client import LLMClient
from graphiti_core.nodes import EntityNode, EpisodeType, EpisodicNode
from graphiti_core.search.search_config_recipes import COMBINED_HYBRID_SEARCH_RRF
from graphiti_core.search.search_filters import ComparisonOperator, DateFilter, SearchFilters
from graphiti_core.utils.bulk_utils import add_nodes_and_edges_bulk

from memrouter.external.backends.graphiti_plan import MemoryPlan, parse_time

__all__ = ["EpisodeRow", "FoundItem", "GraphitiStore", "NoLLM", "NoReranker", "MemrouterEmbedder"]


class NoLLM(LLMClient):
    """The LLM client Graphiti is given: memrouter never needs one, so any call is an error."""

    def __init__(self) -> None:
        super().__init__(None)
        self.calls = 0

    async def _generate_response(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        raise RuntimeError("memrouter's Graphiti backend never calls a language model")

    async def generate_response(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return await self._generate_response(*args, **kwargs)


class NoReranker(CrossEncoderClient):
    """The cross-encoder Graphiti is given: the RRF recipe never needs one."""

    def __init__(self) -> None:
        self.calls = 0

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        self.calls += 1
        raise RuntimeError("memrouter's Graphiti backend uses reciprocal rank fusion, not a cross-encoder")


class MemrouterEmbedder(EmbedderClient):
    """Graphiti's embedder interface over a memrouter embedder (``embed_batch``: unit float32 rows)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    async def create(self, input_data: Any) -> list[float]:
        text = input_data if isinstance(input_data, str) else " ".join(map(str, input_data))
        return self._rows([text])[0]

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        return self._rows(input_data_list)

    def _rows(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        matrix = np.asarray(self.embedder.embed_batch(list(texts)), dtype=np.float32)
        return [[float(x) for x in row] for row in matrix]


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    """One stored episode as ``get`` reads it."""

    uuid: str
    name: str
    content: str
    source_description: str
    obsolete: str | None


@dataclass(frozen=True, slots=True)
class FoundItem:
    """One search result: an episode, or a fact (an edge) with its valid window."""

    uuid: str
    kind: str
    title: str
    content: str
    score: float
    context: str
    origin: str | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None


def _present(now: datetime) -> SearchFilters:
    """Edges that hold now: not invalid yet, not expired."""
    return SearchFilters(
        invalid_at=[
            [DateFilter(comparison_operator=ComparisonOperator.is_null)],
            [DateFilter(date=now, comparison_operator=ComparisonOperator.greater_than)],
        ],
        expired_at=[[DateFilter(comparison_operator=ComparisonOperator.is_null)]],
    )


class GraphitiStore:
    """One Graphiti client on one FalkorDB graph (the group); every method is a coroutine."""

    def __init__(self, host: str, port: int, group: str, embedder: Any, password: str | None = None) -> None:
        # The driver logs every failed query with its parameters (whole vectors) at ERROR; memrouter
        # reports the failure itself (a warning, the backend's last error in status).
        logging.getLogger("graphiti_core.driver.falkordb_driver").setLevel(logging.CRITICAL)
        self.group = group
        self.llm = NoLLM()
        self.reranker = NoReranker()
        self.embedder = MemrouterEmbedder(embedder)
        self.driver = FalkorDriver(host=host, port=port, password=password, database=group)
        self.graphiti = Graphiti(
            graph_driver=self.driver, llm_client=self.llm, embedder=self.embedder, cross_encoder=self.reranker
        )
        self._indexed = False

    async def _query(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        result = await self.driver.execute_query(cypher, **params)
        if result is None:
            return []
        records = result[0] if isinstance(result, tuple) else result
        return list(records or [])

    async def ensure_indices(self) -> None:
        if not self._indexed:
            await self.graphiti.build_indices_and_constraints()
            self._indexed = True

    async def write(self, plan: MemoryPlan) -> None:
        """Save the plan's entities, episode, mentions and edges; expire this memory's edges it no longer has."""
        await self.ensure_indices()
        now = datetime.now(UTC)
        born = await self._created(plan)
        vectors = await self.embedder.create_batch(
            [entity.name for entity in plan.entities] + [edge.fact for edge in plan.edges]
        )
        entities = [
            EntityNode(uuid=entity.uuid, name=entity.name, group_id=plan.group, labels=["Entity"],
                       summary=entity.key, created_at=born.get(entity.uuid, now), name_embedding=vector)
            for entity, vector in zip(plan.entities, vectors, strict=False)
        ]  # fmt: skip
        episode = EpisodicNode(
            uuid=plan.episode_uuid, name=plan.title, group_id=plan.group, source=EpisodeType.text,
            source_description=plan.source_description, content=plan.content, valid_at=plan.valid_at or now,
            entity_edges=[edge.uuid for edge in plan.edges], created_at=born.get(plan.episode_uuid, now),
        )  # fmt: skip
        mentions = [
            EpisodicEdge(uuid=_mention_uuid(plan.episode_uuid, entity.uuid), group_id=plan.group,
                         source_node_uuid=plan.episode_uuid, target_node_uuid=entity.uuid, created_at=now)
            for entity in plan.entities
        ]  # fmt: skip
        edges = [
            EntityEdge(
                uuid=edge.uuid, group_id=plan.group, source_node_uuid=edge.source, target_node_uuid=edge.target,
                created_at=born.get(edge.uuid, now), name=edge.name, fact=edge.fact, fact_embedding=vector,
                episodes=[plan.episode_uuid],
                valid_at=edge.valid_at, invalid_at=edge.invalid_at, expired_at=edge.expired_at,
            )
            for edge, vector in zip(plan.edges, vectors[len(plan.entities) :], strict=False)
        ]  # fmt: skip
        # Graphiti's own batched save (UNWIND queries; no LLM): MERGE by uuid, so a re-run overwrites
        await add_nodes_and_edges_bulk(self.driver, [episode], mentions, entities, edges, self.embedder)
        # When the memory stops holding (past or future: searches compare it with their own now); mentions of
        # entities this version no longer names are removed, so the episode is not found through them.
        await self._query(
            "MATCH (n:Episodic {uuid: $uuid}) SET n.memrouter_invalid_at = $at "
            "WITH n OPTIONAL MATCH (n)-[m:MENTIONS]->(x:Entity) WHERE NOT x.uuid IN $entities DELETE m",
            uuid=plan.episode_uuid, at=plan.invalid_at, entities=[entity.uuid for entity in plan.entities],
        )  # fmt: skip
        await self._expire_others(plan.episode_uuid, [edge.uuid for edge in plan.edges], now)

    async def _created(self, plan: MemoryPlan) -> dict[str, datetime]:
        """When the episode, entities and edges already saved were first created (a re-save keeps it)."""
        rows = await self._query(
            "MATCH (n) WHERE n.uuid IN $nodes RETURN n.uuid AS uuid, n.created_at AS at "
            "UNION ALL MATCH ()-[e:RELATES_TO]->() WHERE e.uuid IN $edges RETURN e.uuid AS uuid, e.created_at AS at",
            nodes=[plan.episode_uuid, *(entity.uuid for entity in plan.entities)],
            edges=[edge.uuid for edge in plan.edges],
        )  # fmt: skip
        found: dict[str, datetime] = {}
        for row in rows:
            at = parse_time(row["at"])
            if at is not None:
                found[str(row["uuid"])] = at
        return found

    async def _expire_others(self, episode: str, keep: Iterable[str], now: datetime) -> None:
        """Edges an earlier version of the memory made and this one does not: ended, never deleted."""
        await self._query(
            "MATCH ()-[e:RELATES_TO]->() WHERE $episode IN e.episodes AND NOT e.uuid IN $keep "
            "AND e.expired_at IS NULL SET e.expired_at = $now, "
            "e.invalid_at = CASE WHEN e.invalid_at IS NULL THEN $now ELSE e.invalid_at END",
            episode=episode, keep=list(keep), now=now,
        )  # fmt: skip

    async def retire(self, episode: str, reason: str) -> bool:
        """Mark an episode obsolete and end its edges (``invalid_at``/``expired_at``); whether it exists."""
        await self.ensure_indices()
        now = datetime.now(UTC)
        found = await self._query(
            "MATCH (n:Episodic {uuid: $uuid}) SET n.memrouter_obsolete = $reason RETURN n.uuid AS uuid",
            uuid=episode, reason=reason or "obsolete",
        )  # fmt: skip
        if not found:
            return False
        await self._expire_others(episode, [], now)
        return True

    async def get(self, episode: str) -> EpisodeRow | None:
        rows = await self._query(
            "MATCH (n:Episodic {uuid: $uuid}) RETURN n.uuid AS uuid, n.name AS name, n.content AS content, "
            "n.source_description AS source, n.memrouter_obsolete AS obsolete",
            uuid=episode,
        )
        if not rows:
            return None
        row = rows[0]
        return EpisodeRow(str(row["uuid"]), str(row["name"] or ""), str(row["content"] or ""),
                          str(row["source"] or ""), None if row["obsolete"] is None else str(row["obsolete"]))  # fmt: skip

    async def edges_of(self, episode: str) -> list[dict[str, Any]]:
        """Every edge an episode holds, with its validity (for tests and ``validate``)."""
        return await self._query(
            "MATCH ()-[e:RELATES_TO]->() WHERE $episode IN e.episodes RETURN e.uuid AS uuid, e.fact AS fact, "
            "e.valid_at AS valid_at, e.invalid_at AS invalid_at, e.expired_at AS expired_at, "
            "e.created_at AS created_at",
            episode=episode,
        )

    async def counts(self) -> dict[str, int]:
        """How many episodes, entities and edges the group holds."""
        result: dict[str, int] = {}
        for key, cypher in (
            ("episodes", "MATCH (n:Episodic) RETURN count(n) AS n"),
            ("entities", "MATCH (n:Entity) RETURN count(n) AS n"),
            ("edges", "MATCH ()-[e:RELATES_TO]->() RETURN count(e) AS n"),
        ):
            rows = await self._query(cypher)
            result[key] = int(rows[0]["n"]) if rows else 0
        return result

    async def search(self, query: str, limit: int, *, present: bool = True) -> list[FoundItem]:
        """Graphiti's hybrid search (BM25 + cosine, RRF) over facts and episodes of the group.

        Beside Graphiti's own episode hits come the episodes that mention the
        best entities found (one more query, which also says which episode
        hits belong to retired memories: a present search leaves those out).
        """
        found = await self.raw_search(query, limit, present=present)
        episodes: dict[str, FoundItem] = {}
        for position, episode in enumerate(found.episodes):
            score = _score(found.episode_reranker_scores, position)
            episodes[episode.uuid] = FoundItem(episode.uuid, "episode", episode.name, episode.content, score,
                                               episode.source_description)  # fmt: skip
        mentioning, ended = await self._around(found, limit)
        for item in mentioning:
            if item.uuid not in episodes or episodes[item.uuid].score < item.score:
                episodes[item.uuid] = item
        items = [item for item in episodes.values() if not (present and item.uuid in ended)]
        for position, edge in enumerate(found.edges):
            origin = edge.episodes[0] if edge.episodes else None
            items.append(FoundItem(edge.uuid, "fact", edge.fact[:200], edge.fact,
                                   _score(found.edge_reranker_scores, position), f"fact of episode {origin}",
                                   origin, edge.valid_at, edge.invalid_at))  # fmt: skip
        items.sort(key=lambda item: -item.score)
        return items[:limit]

    async def raw_search(self, query: str, limit: int, *, present: bool = True) -> Any:
        """Graphiti's own ``search_`` with the hybrid RRF recipe, in this group (its ``SearchResults``)."""
        await self.ensure_indices()
        config = COMBINED_HYBRID_SEARCH_RRF.model_copy(update={"limit": limit})
        now = datetime.now(UTC)
        return await self.graphiti.search_(
            query, config=config, group_ids=[self.group], search_filter=_present(now) if present else None
        )

    async def _around(self, found: Any, limit: int) -> tuple[list[FoundItem], set[str]]:
        """The episodes that mention the best three entities found (scored just under their entity),
        and which of Graphiti's episode hits belong to retired memories; one round trip."""
        scores = {node.uuid: _score(found.node_reranker_scores, i) for i, node in enumerate(found.nodes[:3])}
        if not scores and not found.episodes:
            return [], set()
        rows = await self._query(
            "MATCH (ep:Episodic) WHERE ep.uuid IN $episodes AND (ep.memrouter_obsolete IS NOT NULL OR "
            "ep.memrouter_invalid_at <= $now) RETURN ep.uuid AS uuid, NULL AS entity, NULL AS name, "
            "NULL AS content, NULL AS source "
            "UNION ALL MATCH (ep:Episodic)-[:MENTIONS]->(n:Entity) WHERE n.uuid IN $nodes AND "
            "ep.memrouter_obsolete IS NULL AND (ep.memrouter_invalid_at IS NULL OR ep.memrouter_invalid_at > $now) "
            "RETURN ep.uuid AS uuid, n.uuid AS entity, ep.name AS name, ep.content AS content, "
            "ep.source_description AS source",
            episodes=[ep.uuid for ep in found.episodes], nodes=list(scores), now=datetime.now(UTC),
        )  # fmt: skip
        ended = {str(r["uuid"]) for r in rows if r["entity"] is None}
        mentioning = [
            FoundItem(str(r["uuid"]), "episode", str(r["name"] or ""), str(r["content"] or ""),
                      scores[str(r["entity"])] * 0.99, str(r["source"] or ""))
            for r in rows if r["entity"] is not None
        ][:limit]  # fmt: skip
        return mentioning, ended

    async def close(self) -> None:
        await self.driver.close()


def _mention_uuid(episode: str, entity: str) -> str:
    import uuid

    return str(uuid.uuid5(uuid.UUID(episode), entity))


def _score(scores: Sequence[float], position: int) -> float:
    return float(scores[position]) if position < len(scores) else 1.0 / (position + 1)
