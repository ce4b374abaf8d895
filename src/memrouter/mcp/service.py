"""What the MCP tools do, in plain Python: no MCP SDK here, so it is cheap to import and test.

``MemoryService`` holds one open ``Router`` (the server's, for its whole
life), the project's task-context file, its git session and, optionally, a
folder for Serena's shared ``global/<name>`` memories. Every method validates
its arguments and raises ``MemoryRouterError`` subclasses with a clear
message; the MCP layer turns those into tool errors.

Two families of tools share the same files:

- memrouter's own (``search``, ``get``, ``save``, ``status``) answer with
  JSON-ready dicts; memory text is always a field value, never markup;
- Serena's memory tools (``write_memory``, ``read_memory``, ``list_memories``,
  ``edit_memory``, ``rename_memory``, ``delete_memory``) answer with the exact
  strings Serena gives, so an agent prompt written for Serena keeps working.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC
from pathlib import Path
from typing import Any

from memrouter.core.errors import Conflict, InvalidInput, MemoryRouterError, NotFound
from memrouter.core.lazylog import LazyLogger
from memrouter.core.model import CHANNELS, Memory
from memrouter.core.names import normalize_name, validate_name
from memrouter.core.query import MAX_FILTER_VALUES, check_filter
from memrouter.ops import verify as anchored
from memrouter.ops.audit import current_actor
from memrouter.ops.provenance import save_stamped
from memrouter.ops.task import TaskContextStore
from memrouter.ops.write_guard import VERBATIM, guarded
from memrouter.repo.git import GitSession
from memrouter.router import Router
from memrouter.store.compose import MAX_CONTENT_CHARS
from memrouter.store.edit import replace_text
from memrouter.store.files import MemoryStore

__all__ = ["MemoryService", "GLOBAL_TOPIC", "MAX_FILTER_VALUES", "RECENT_LIMIT"]

log = LazyLogger(__name__)

GLOBAL_TOPIC = "global"
# Whoever calls a tool is an agent: its hedged or ungrounded writes go to review (memrouter.guard).
AGENT = "agent"


def _agent() -> str:
    """Who an MCP write is by, for the guard and the audit log: the request's agent (``agent:<id>``), else ``agent``."""
    actor = current_actor()
    return actor if actor is not None and actor.startswith("agent:") else AGENT


RECENT_LIMIT = 20
KIND_RESOURCES = {"conventions": ("convention",), "decisions": ("decision", "adr")}
# Memory bodies returned by one resource read, at most.
RESOURCE_MAX_CHARS = 200_000


class MemoryService:
    """The tools' behaviour over one router (see the module docstring)."""

    def __init__(self, router: Router, *, global_root: Path | None = None) -> None:
        self.router = router
        self.tasks = TaskContextStore(router.config.index_dir)
        self.git = GitSession(router.config.project_dir or router.config.root)
        self.global_store: MemoryStore | None = None
        if global_root is not None:
            global_root = Path(global_root).expanduser().resolve()
            global_root.mkdir(parents=True, exist_ok=True)
            self.global_store = MemoryStore(global_root)

    # -- memrouter tools --------------------------------------------------------
    def search(
        self,
        query: str,
        limit: int | None = None,
        mode: str | None = None,
        channels: list[str] | None = None,
        kinds: list[str] | None = None,
        tags: list[str] | None = None,
        include_history: bool = False,
        include_archived: bool = False,
        owner: str | None = None,
        as_of: str | None = None,
        branches: str | None = None,
    ) -> dict[str, Any]:
        """The best memories for ``query``: name, title, score, snippet and why each matched.

        ``limit`` and ``mode`` default to the project's configuration; the
        flags bring back, marked in ``validity``, what a default search leaves out.
        """
        choice = self.router.search_mode(mode) if as_of is None else None  # embeds what is missing, when cheap
        hits = self.router.search(
            query,
            limit=limit,
            mode=mode,
            channels=_filter_values("channels", channels),
            kinds=_filter_values("kinds", kinds),
            tags=_filter_values("tags", tags),
            include_history=include_history is True,
            include_archived=include_archived is True,
            owner=owner if as_of is None else None,
            as_of=as_of,
            branches=branches,
        )
        retrievers = sorted({m.retriever for hit in hits for m in hit.why} - {"mode"})  # the weak hits' too
        good = [hit for hit in hits if not hit.weak]
        # Below the relevance floor: left out when better ones came (an agent's context is worth more), kept and
        # marked when none did (a right answer worded apart from the question is not hidden).
        weak = len(hits) - len(good) if good else 0
        hits = good or hits
        results = []
        for hit in hits:
            item = hit.to_dict()
            if not item.get("weak"):
                item.pop("weak", None)
            item.pop("path", None)
            item.pop("hash", None)
            item["score"] = round(hit.score, 4)
            if "provenance" in item:  # only what it says: every key costs the agent context
                item["provenance"] = _compact(item["provenance"])
            results.append(_compact(item))
        found: dict[str, Any] = {
            "query": query, "mode": choice.mode if choice is not None else self.router.effective_mode(mode),
            "retrievers": retrievers, "results": results,
        }  # fmt: skip
        if weak:
            found["weak_left_out"] = weak
        elif hits and not good:
            found["no_good_match"] = "every hit is below the relevance floor: check before relying on one"
        if choice is not None and choice.notice is not None:  # the agent is told when meaning was left out
            found["notice"] = choice.notice
        return found

    def get(self, memory_name: str, as_of: str | None = None) -> dict[str, Any]:
        """One memory: its fields and, under ``content``, the file text as stored (or as committed at ``as_of``)."""
        scope, name = self._split(memory_name)
        if scope is not None and as_of is not None:
            raise InvalidInput("global memories have no history here")
        memory = scope.read(name) if scope is not None else self.router.get(name, as_of=as_of)
        data = memory.to_dict()
        data.pop("path", None)
        if scope is not None:
            data["name"] = f"{GLOBAL_TOPIC}/{memory.name}"
        return _compact(data, keep=("content",))

    def history(self, memory_name: str, limit: int = 20) -> dict[str, Any]:
        """The committed versions of a project memory, newest first."""
        scope, name = self._split(memory_name)
        if scope is not None:
            raise InvalidInput("global memories have no history here")
        return {"name": name, "versions": [v.to_dict() for v in self.router.history(name, limit)]}

    def save(
        self,
        content: str,
        memory_name: str | None = None,
        *,
        title: str | None = None,
        tags: list[str] | None = None,
        kind: str | None = None,
        channel: str | None = None,
        source: str | None = None,
    ) -> dict[str, Any]:
        """Write a memory (front matter for the given fields, the client agent as its author) and index it.

        Without ``memory_name`` it is a new memory: its title (when neither given nor a heading) and
        its name come from the text, and a name already taken gets a number; with one, that memory's
        text is replaced.
        """
        if memory_name is not None:
            _, memory_name = self._split(memory_name, project_only=True)
        memory = save_stamped(
            self.router.workspace, content, memory_name, actor=_agent(), title=title, tags=_filter_values("tags", tags),
            kind=kind, channel=channel, source=source, fresh=memory_name is None,
        )  # fmt: skip
        data = memory.to_dict(content=False)
        data.pop("path", None)
        data["anchors"] = self._anchored(memory.name)
        return _compact(data)

    def _anchored(self, name: str) -> list[str]:
        """What a saved memory is tied to (``memrouter verify``, which records its inferred anchors): each anchor
        and, unless fresh, its state; empty when it has none or git cannot say."""
        try:
            report = anchored.verify(
                self.router.workspace, [name], diff=False, refresh=False
            )  # the save just indexed it
        except MemoryRouterError as exc:
            log.warning("anchors of %s not read: %s", name, exc)
            return []
        found = report.memories[0].anchors if report.memories else ()
        return [a.label + ("" if a.status == "fresh" else f" ({a.status})") for a in found]

    def status(self) -> dict[str, Any]:
        """The router's status plus what this server adds (global memories, task context); the anchored
        memories' states are brought up to date first (``verify``: only what changed since the last check)."""
        try:
            anchored.verify(self.router.workspace, diff=False)
        except MemoryRouterError as exc:  # the counts stay as last stored; status never fails for it
            log.warning("anchors not verified for status: %s", exc)
        data = self.router.status()
        data["server"] = {
            "global_root": str(self.global_store.root) if self.global_store else None,
            "task_context": self.tasks.path.exists(),
        }
        return data

    # -- anchors ---------------------------------------------------------------------
    def verify_memory(self, memory_name: str, accept: bool = False) -> dict[str, Any]:
        """One memory's anchors and state; ``accept`` first stamps ``verified: <HEAD commit>`` (``Router.accept``)."""
        _, name = self._split(memory_name, project_only=True)
        stamped = None
        if accept is True:
            stamped = (
                str(anchored.accept(self.router.workspace, name, actor=_agent()).extra.get("verified") or "") or None
            )
        report = anchored.verify(self.router.workspace, [name])
        found = report.memories[0].to_dict() if report.memories else None
        return {"name": name, "anchored": found is not None, "memory": found, "accepted": stamped,
                "head": report.head, "notes": list(report.notes)}  # fmt: skip

    def stale_memories(self, limit: int = 20) -> dict[str, Any]:
        """The stale and broken memories (broken first, then the most recently changed), with why; no diffs."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
            raise InvalidInput("limit must be a whole number from 1 to 200")
        report = anchored.verify(self.router.workspace, diff=False)
        failing = sorted(
            report.failing, key=lambda m: (m.status != "broken", m.ago if m.ago is not None else -1, m.name)
        )
        shown = [
            {"name": m.name, "status": m.status, "why": m.summary,
             "anchors": [_compact(a.to_dict(diff=False)) for a in m.anchors if a.status != "fresh"]}
            for m in failing[:limit]
        ]  # fmt: skip
        return {"counts": report.counts(), "total": len(failing), "memories": shown, "head": report.head}

    # -- channels and time -------------------------------------------------------
    def promote(self, memory_name: str, reason: str, target: str | None = None, merge: bool = False) -> dict[str, Any]:
        """Promote a sprint memory to long-term (``Router.promote``)."""
        _, name = self._split(memory_name, project_only=True)
        return self.router.promote(name, reason=reason, target=target, merge=merge is True).to_dict()

    def invalidate(self, memory_name: str, reason: str, superseded_by: str | None = None) -> dict[str, Any]:
        """Mark a memory obsolete with the reason (``Router.invalidate``)."""
        _, name = self._split(memory_name, project_only=True)
        data = self.router.invalidate(name, reason, superseded_by).to_dict(content=False)
        data.pop("path", None)
        return _compact(data)

    def sprint_status(self) -> dict[str, Any]:
        """The open sprint (dates, goal, memory count) and its warnings."""
        data, warnings = self.router.lifecycle.status()
        return data | {"warnings": warnings}

    # -- Serena's memory tools --------------------------------------------------
    def write_memory(self, memory_name: str, content: str, max_chars: int = -1) -> str:
        """Serena's ``write_memory``: the content verbatim, in ``<name>.md``."""
        if not isinstance(content, str):
            raise InvalidInput("content must be text")
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or (max_chars < 1 and max_chars != -1):
            raise InvalidInput("max_chars must be a positive whole number, or -1 for the default")
        limit = MAX_CONTENT_CHARS if max_chars == -1 else min(max_chars, MAX_CONTENT_CHARS)
        if len(content) > limit:
            raise InvalidInput(
                f"Content for {normalize_name(memory_name)} is too long. Max length is {limit} characters. "
                "Please make the content shorter."
            )
        scope, name = self._split(memory_name)
        if scope is not None:
            scope.write(name, guarded(None, name, content, actor=_agent(), purpose=VERBATIM)[0])
            return f"Memory {GLOBAL_TOPIC}/{name} written."
        memory = self.router.save(content, name, actor=_agent(), verbatim=True)  # Serena's contract: the file as sent
        return f"Memory {memory.name} written."

    def read_memory(self, memory_name: str) -> str:
        """Serena's ``read_memory``: the file text as stored (front matter included)."""
        scope, name = self._split(memory_name)
        try:
            if scope is not None:
                return scope.read(name).text
            return self.router.get(name).text
        except NotFound as exc:
            raise NotFound(f"Memory named '{_display(scope, name)}' not found") from exc

    def list_memories(self, topic: str = "", channel: str | None = None, kind: str | None = None) -> str:
        """Serena's ``list_memories``: ``{"memories": [...]}`` as a JSON string, ``{}`` when empty."""
        if not isinstance(topic, str):
            raise InvalidInput("topic must be text")
        topic = topic.strip().strip("/")
        prefix = None
        names: list[str] = []
        include_global = self.global_store is not None and channel is None and kind is None
        if topic:
            if topic == GLOBAL_TOPIC or topic.startswith(GLOBAL_TOPIC + "/"):
                store = self._global()
                sub = topic[len(GLOBAL_TOPIC) + 1 :]
                if sub:
                    sub = validate_name(sub, strict=False)
                return _memory_list(
                    f"{GLOBAL_TOPIC}/{stat.name}" for stat in store.scan() if not sub or stat.name.startswith(sub + "/")
                )
            prefix = validate_name(topic, strict=False) + "/"
            include_global = False
        if channel is not None and channel not in CHANNELS:
            raise InvalidInput(f"unknown channel {channel!r}; expected one of {', '.join(CHANNELS)}")
        if kind is not None:
            _filter_values("kind", [kind])
        if channel is None and kind is None:  # names alone: from the files while the index was never built
            names = self.router.names(prefix)
        else:
            names = [item.name for item in self.router.list(prefix, channels=channel, kinds=kind)]
        if include_global and self.global_store is not None:
            names += [f"{GLOBAL_TOPIC}/{stat.name}" for stat in self.global_store.scan()]
        return _memory_list(names)

    def edit_memory(
        self, memory_name: str, needle: str, repl: str, mode: str, allow_multiple_occurrences: bool = False
    ) -> str:
        """Serena's ``edit_memory``: replace a literal string or a regex match (MULTILINE, DOTALL)."""
        scope, name = self._split(memory_name)
        try:
            if scope is not None:
                from memrouter.ops.write_guard import VERBATIM, guarded

                memory = scope.read(name)
                text, _ = replace_text(
                    memory.text, needle, repl, mode, allow_multiple_occurrences=allow_multiple_occurrences
                )
                text, _ = guarded(None, name, text, actor=_agent(), purpose=VERBATIM)
                scope.write(name, text, expected_hash=memory.hash)
            else:
                self.router.edit(
                    name,
                    needle,
                    repl,
                    mode=mode,
                    allow_multiple_occurrences=allow_multiple_occurrences,
                    actor=_agent(),
                    verbatim=True,
                )
        except NotFound as exc:
            raise NotFound(f"Memory {_display(scope, name)} not found.") from exc
        return f"Memory {_display(scope, name)} edited successfully."

    def rename_memory(self, old_name: str, new_name: str) -> str:
        """Serena's ``rename_memory``: move the file and rewrite ``mem:<old>`` references."""
        old_scope, old = self._split(old_name)
        new_scope, new = self._split(new_name)
        if old_scope is not None or new_scope is not None:
            raise InvalidInput("renaming global memories is not supported; write the new one and delete the old one")
        try:
            self.router.get(old)
        except NotFound as exc:
            raise NotFound(f"Memory {old} not found.") from exc
        try:
            moved, _ = self.router.rename(old, new, actor=_agent())
        except Conflict as exc:
            raise Conflict(f"Memory {new} already exists.") from exc
        return f"Memory renamed from {old} to {moved.name}."

    def delete_memory(self, memory_name: str, reason: str | None = None) -> str:
        """Serena's ``delete_memory``; a missing memory is not an error."""
        scope, name = self._split(memory_name)
        try:
            if scope is not None:
                scope.delete(name)
            else:
                self.router.delete(name, reason)
        except NotFound:
            return f"Memory {_display(scope, name)} not found."
        return f"Memory {_display(scope, name)} deleted."

    # -- resources ------------------------------------------------------------
    def recent(self, limit: int = RECENT_LIMIT) -> dict[str, Any]:
        """The most recently changed memories (by file modification time), newest first."""
        held = {item.name for item in self.router.pending()}  # pending review: never listed
        scanned = (stat for stat in self.router.store.scan() if stat.name not in held)
        stats = sorted(scanned, key=lambda stat: stat.mtime_ns, reverse=True)[:limit]
        from datetime import datetime

        listed = {item.name: item for item in self.router.list()}
        return {
            "memories": [
                {
                    "name": stat.name,
                    "title": listed[stat.name].title if stat.name in listed else None,
                    "kind": listed[stat.name].kind if stat.name in listed else None,
                    "modified": datetime.fromtimestamp(stat.mtime_ns / 1e9, UTC).isoformat(timespec="seconds"),
                }
                for stat in stats
            ]
        }

    def by_kind(self, resource: str) -> dict[str, Any]:
        """Every memory of the kinds behind ``resource`` (``conventions``, ``decisions``), with text."""
        kinds = KIND_RESOURCES[resource]
        memories: list[dict[str, Any]] = []
        budget = RESOURCE_MAX_CHARS
        truncated = False
        items = self.router.list(kinds=kinds)
        for item in items:
            try:
                memory = self.router.get(item.name)
            except NotFound:
                continue
            if len(memory.text) > budget:
                truncated = True
                break
            budget -= len(memory.text)
            memories.append({"name": memory.name, "title": memory.title, "kind": memory.kind, "content": memory.text})
        return {"kinds": list(kinds), "memories": memories, "truncated": truncated}

    def memory_text(self, name: str) -> Memory:
        """The memory behind ``memory://<name>``."""
        scope, name = self._split(name)
        return scope.read(name) if scope is not None else self.router.get(name)

    # -- names ----------------------------------------------------------------
    def _split(self, memory_name: str, *, project_only: bool = False) -> tuple[MemoryStore | None, str]:
        """Validate a name; ``global/<name>`` goes to the global store (None = the project)."""
        name = validate_name(memory_name, strict=False)
        if name == GLOBAL_TOPIC:
            raise InvalidInput(f'"{GLOBAL_TOPIC}" alone is not a memory name; use "{GLOBAL_TOPIC}/<name>"')
        if name.startswith(GLOBAL_TOPIC + "/"):
            if project_only:
                raise InvalidInput("save_memory writes project memories; use write_memory for global/<name>")
            return self._global(), validate_name(name[len(GLOBAL_TOPIC) + 1 :], strict=False)
        return None, name

    def _global(self) -> MemoryStore:
        if self.global_store is None:
            raise InvalidInput(
                "global memories are not enabled on this server: start it with --global-root DIR "
                "(or MEMROUTER_GLOBAL_ROOT) to keep global/<name> memories there"
            )
        return self.global_store


def _display(scope: MemoryStore | None, name: str) -> str:
    return f"{GLOBAL_TOPIC}/{name}" if scope is not None else name


def _memory_list(names: Iterable[str]) -> str:
    unique = sorted(set(names))
    return json.dumps({"memories": unique}, ensure_ascii=False) if unique else "{}"


def _filter_values(label: str, values: list[str] | str | None) -> list[str] | None:
    """Filter lists from agents, with the library's limits (``memrouter.core.query``)."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    if len(values) > MAX_FILTER_VALUES:
        raise InvalidInput(f"{label}: at most {MAX_FILTER_VALUES} values")
    return [check_filter(label, value) for value in values] or None


def _compact(data: dict[str, Any], keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """Leave out empty and default fields: every key costs the agent context."""
    defaults = {"scope": "project", "status": "active", "confidence": 1.0}
    return {
        key: value
        for key, value in data.items()
        if key in keep or (value not in (None, [], {}, "") and defaults.get(key, object()) != value)
    }
