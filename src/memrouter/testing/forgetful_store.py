"""The fake Forgetful's memories: a SQLite store with Forgetful 0.6.0's tools and answers.

Used by ``memrouter.testing.forgetful_server``; see that module for what the
fake promises. Similarity is a deterministic cosine over word counts.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any

from memrouter.external.backends.forgetful_schema import MemoryCreate, MemoryUpdate

__all__ = ["FakeForgetfulStore", "MemoryNotFound", "similarity"]


class MemoryNotFound(LookupError):
    """No memory with that id (the message is Forgetful's)."""

    def __init__(self, memory_id: int) -> None:
        super().__init__(f"Memory with id {memory_id} not found")


_TOKEN = re.compile(r"[a-z0-9]+")


def similarity(query: str, text: str) -> float:
    """Cosine similarity of word counts: deterministic, in [0, 1]."""
    a = Counter(_TOKEN.findall(query.lower()))
    b = Counter(_TOKEN.findall(text.lower()))
    if not a or not b:
        return 0.0
    dot = sum(count * b[token] for token, count in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return round(dot / norm, 6)


def _now() -> str:
    return datetime.now(UTC).isoformat()


class FakeForgetfulStore:
    """Forgetful's memory tools over SQLite (``":memory:"`` or a file that survives restarts)."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL)"
        )
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    # -- storage -----------------------------------------------------------

    def _load(self, memory_id: int) -> dict[str, Any]:
        row = self._db.execute("SELECT data FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        data: dict[str, Any] = json.loads(row[0])
        return data

    def _save(self, memory: Mapping[str, Any]) -> None:
        self._db.execute("UPDATE memories SET data = ? WHERE id = ?", (json.dumps(memory), memory["id"]))

    def _all(self) -> list[dict[str, Any]]:
        return [json.loads(row[0]) for row in self._db.execute("SELECT data FROM memories ORDER BY id")]

    # -- tools -------------------------------------------------------------

    def execute(self, tool_name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run one memory tool; raises ``ValidationError``, ``MemoryNotFound`` or ``ValueError``."""
        handler: Callable[[dict[str, Any]], dict[str, Any]] = getattr(self, "tool_" + tool_name)
        with self._lock:
            return handler(dict(arguments))

    def tool_create_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """create_memory: validate, store, answer like Forgetful's MemoryCreateWriteResponse."""
        _require(args, "title", "content", "context", "keywords", "tags")
        data = MemoryCreate(**args)
        now = _now()
        memory: dict[str, Any] = {
            **data.model_dump(),
            "project_ids": data.project_ids or [],
            "source_files": data.source_files,
            "code_artifact_ids": [],
            "document_ids": [],
            "file_ids": [],
            "created_at": now,
            "updated_at": now,
            "linked_memory_ids": [],
            "is_obsolete": False,
            "obsolete_reason": None,
            "superseded_by": None,
            "obsoleted_at": None,
        }
        # one transaction, as Forgetful's own: a server killed mid-create leaves no half-written row
        self._db.execute("BEGIN IMMEDIATE")
        try:
            cursor = self._db.execute("INSERT INTO memories (data) VALUES ('{}')")
            memory["id"] = cursor.lastrowid
            self._save(memory)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return {
            "id": memory["id"],
            "title": memory["title"],
            "linked_memory_ids": [],
            "project_ids": memory["project_ids"],
            "code_artifact_ids": [],
            "document_ids": [],
            "file_ids": [],
            "similar_memories": [],
            "obsolete_matches": [],
            "plugin_warnings": [],
        }

    def tool_update_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """update_memory: change the given fields; answer the whole memory."""
        memory_id = _memory_id(args, "update_memory")
        changes = MemoryUpdate(**args).model_dump(exclude_none=True)
        if "importance" in changes:
            changes["importance"] = max(1, min(10, changes["importance"]))
        memory = self._load(memory_id)
        memory.update(changes)
        memory["updated_at"] = _now()
        self._save(memory)
        return {**memory, "plugin_warnings": []}

    def tool_get_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """get_memory: one memory, obsolete or not."""
        return self._load(_memory_id(args, "get_memory"))

    def tool_mark_memory_obsolete(self, args: dict[str, Any]) -> dict[str, Any]:
        """mark_memory_obsolete: soft delete with a reason."""
        memory_id = _memory_id(args, "mark_memory_obsolete")
        if "reason" not in args:
            raise ValueError("mark_memory_obsolete() missing 1 required keyword-only argument: 'reason'")
        superseded_by = args.get("superseded_by")
        if superseded_by is not None:
            self._load(int(superseded_by))
        memory = self._load(memory_id)
        memory.update(
            is_obsolete=True,
            obsolete_reason=str(args["reason"]),
            superseded_by=None if superseded_by is None else int(superseded_by),
            obsoleted_at=_now(),
        )
        self._save(memory)
        return {"success": True}

    def tool_unobsolete_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """unobsolete_memory: restore."""
        memory = self._load(_memory_id(args, "unobsolete_memory"))
        memory.update(is_obsolete=False, obsolete_reason=None, superseded_by=None, obsoleted_at=None)
        self._save(memory)
        return {"success": True}

    def tool_link_memories(self, args: dict[str, Any]) -> dict[str, Any]:
        """link_memories: symmetric links from memory_id to each of related_ids."""
        memory_id = _memory_id(args, "link_memories")
        related = args.get("related_ids")
        if isinstance(related, int):
            related = [related]
        if not related:
            raise ValueError("related_ids cannot be empty")
        related_ids = [int(r) for r in related]
        if memory_id in related_ids:
            raise ValueError("Cannot link memory to itself")
        source = self._load(memory_id)
        targets = [self._load(r) for r in related_ids]
        created: list[int] = []
        for target in targets:
            if target["id"] not in source["linked_memory_ids"]:
                source["linked_memory_ids"].append(target["id"])
                created.append(target["id"])
            if memory_id not in target["linked_memory_ids"]:
                target["linked_memory_ids"].append(memory_id)
            self._save(target)
        self._save(source)
        return {"linked_memory_ids": created}

    def tool_unlink_memories(self, args: dict[str, Any]) -> dict[str, Any]:
        """unlink_memories: remove one symmetric link."""
        source = self._load(_memory_id(args, "unlink_memories"))
        target = self._load(int(args.get("related_id", args.get("target_id", 0))))
        removed = target["id"] in source["linked_memory_ids"]
        source["linked_memory_ids"] = [i for i in source["linked_memory_ids"] if i != target["id"]]
        target["linked_memory_ids"] = [i for i in target["linked_memory_ids"] if i != source["id"]]
        self._save(source)
        self._save(target)
        return {"success": removed}

    def tool_get_recent_memories(self, args: dict[str, Any]) -> dict[str, Any]:
        """get_recent_memories: newest first, paged by ``offset`` as the real server does.

        The real server also clamps ``limit`` to 1..100; the fake does not (the
        sync test helpers read a whole module's memories in one call).
        """
        limit = int(args.get("limit", 10))
        offset = max(0, int(args.get("offset", 0)))
        include_obsolete = bool(args.get("include_obsolete", False))
        memories = [m for m in self._all() if include_obsolete or not m["is_obsolete"]]
        memories.sort(key=lambda m: m["id"], reverse=True)
        return {"memories": memories[offset : offset + max(1, limit)], "total_count": len(memories)}

    def tool_query_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """query_memory: top k by similarity, listed by importance, obsolete ones left out."""
        _require(args, "query", "query_context")
        query = str(args["query"])
        k = max(1, min(int(args.get("k", 3)), 20))
        threshold = args.get("importance_threshold")
        candidates = [m for m in self._all() if not m["is_obsolete"]]
        if threshold is not None:
            candidates = [m for m in candidates if m["importance"] >= max(1, min(int(threshold), 10))]
        scored = [(similarity(query, _searchable(m)), m) for m in candidates]
        scored.sort(key=lambda pair: (-pair[0], pair[1]["id"]))
        top = scored[:k]
        top.sort(key=lambda pair: (-pair[1]["importance"], pair[1]["id"]))
        primary = [m for _, m in top]
        primary_ids = {m["id"] for m in primary}
        linked: list[dict[str, Any]] = []
        if args.get("include_links", True):
            per_primary = int(args.get("max_links_per_primary", 5))
            seen = set(primary_ids)
            for memory in primary:
                for linked_id in memory["linked_memory_ids"][:per_primary]:
                    if linked_id in seen:
                        continue
                    seen.add(linked_id)
                    neighbour = self._load(linked_id)
                    if not neighbour["is_obsolete"]:
                        linked.append({"linked_to_id": memory["id"], "memory": neighbour})
        returned = primary + [entry["memory"] for entry in linked]
        return {
            "query": query,
            "primary_memories": primary,
            "linked_memories": linked,
            "scores": [{"memory_id": m["id"], "similarity": s, "rerank_score": None} for s, m in top],
            "total_count": len(primary) + len(linked),
            "token_count": sum(len(m["content"].split()) for m in returned),
            "truncated": False,
        }


def _searchable(memory: Mapping[str, Any]) -> str:
    parts = [memory["title"], memory["content"], memory.get("context") or ""]
    parts += list(memory.get("keywords") or []) + list(memory.get("tags") or [])
    return "\n".join(parts)


def _require(args: Mapping[str, Any], *names: str) -> None:
    missing = [name for name in names if name not in args]
    if missing:
        raise ValueError(f"missing required argument(s): {', '.join(missing)}")


def _memory_id(args: MutableMapping[str, Any], tool: str) -> int:
    value = args.pop("memory_id", args.pop("id", None))
    if value is None:
        raise ValueError(f"{tool} requires memory_id (or id)")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"memory_id must be an integer, got {value!r}") from exc
