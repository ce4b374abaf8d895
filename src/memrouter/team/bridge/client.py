"""``ClaudeFlowClient``: claude-flow 3.43's coordination tools, typed, over one MCP session.

claude-flow answers every tool with JSON in ``content[0].text``. Its own
refusals come back in that JSON (``success: false`` with an ``error``, or a
``status`` of ``not_found``); those are returned to the caller, who decides
what they mean. A malformed answer is a ``BackendContractError``; a server
that cannot be reached or does not answer in time is ``BackendUnavailable``
(from ``McpSession``).

Names on claude-flow's side: a claimant is ``agent:<id>:<type>``; memrouter's
agents are ``agent:<id>:memrouter``. Namespaces allow letters, digits and
``_ - . :`` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import BackendContractError, InvalidInput

if TYPE_CHECKING:
    from memrouter.external.backends._mcp import McpSession

__all__ = ["ClaudeFlowClient", "Claim", "RemoteTask", "claimant", "parse_claimant", "MEMROUTER_TYPE"]

MEMROUTER_TYPE = "memrouter"
LIST_PAGE = 200
_NAMESPACE = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


def claimant(agent_id: str, agent_type: str = MEMROUTER_TYPE) -> str:
    """claude-flow's name for an agent: ``agent:<id>:<type>``."""
    return f"agent:{agent_id}:{agent_type}"


def parse_claimant(value: Any) -> tuple[str, str]:
    """``(agent id, agent type)`` of a claimant, as a string or as claude-flow's object."""
    if isinstance(value, Mapping):
        return str(value.get("agentId") or value.get("id") or ""), str(
            value.get("agentType") or value.get("type") or ""
        )
    if isinstance(value, str):
        kind, _, rest = value.partition(":")
        agent, _, agent_type = rest.rpartition(":") if kind in ("agent", "human") else ("", "", "")
        if agent:
            return agent, agent_type
        return rest or value, kind
    raise BackendContractError(f"claude-flow: a claimant is a string or an object, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class RemoteTask:
    """A task as claude-flow lists it."""

    id: str
    type: str
    description: str
    status: str
    priority: str
    tags: tuple[str, ...] = ()
    result: Any = None


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim on claude-flow's board: who holds which issue, and a pending handoff's receiver."""

    issue: str
    holder: str
    holder_type: str
    status: str
    handoff_to: tuple[str, str] | None = None
    reason: str | None = None
    progress: float | None = None

    @property
    def holder_claimant(self) -> str:
        return claimant(self.holder, self.holder_type)


class ClaudeFlowClient:
    """The tools memrouter's team bridge uses, each one round trip on ``session``."""

    def __init__(self, session: McpSession) -> None:
        self.session = session
        self.calls = 0
        """How many tools were called (for tests and benchmarks: a converged mirror makes none that write)."""
        self.writes = 0

    def close(self) -> None:
        self.session.close()

    # -- memory ----------------------------------------------------------------
    def store(
        self, namespace: str, key: str, value: Any, *, ttl: float | None = None, tags: tuple[str, ...] = ()
    ) -> None:
        args: dict[str, Any] = {"namespace": _namespace(namespace), "key": key, "value": value, "upsert": True}
        if ttl is not None:
            args["ttl"] = max(1, int(ttl))
        if tags:
            args["tags"] = list(tags)
        _ok(self._write("memory_store", args), "memory_store")

    def retrieve(self, namespace: str, key: str) -> Any | None:
        """The value under ``key``, or None when claude-flow has none (or it expired)."""
        found = self._call("memory_retrieve", {"namespace": _namespace(namespace), "key": key})
        return found.get("value") if found.get("found") else None

    def delete(self, namespace: str, key: str) -> None:
        self._write("memory_delete", {"namespace": _namespace(namespace), "key": key})

    def keys(self, namespace: str) -> list[str]:
        """Every key in ``namespace`` (paged)."""
        keys: list[str] = []
        while True:
            page = self._call(
                "memory_list", {"namespace": _namespace(namespace), "limit": LIST_PAGE, "offset": len(keys)}
            )
            entries = _list(page, "entries", "memory_list")
            keys += [str(entry.get("key")) for entry in entries if isinstance(entry, Mapping)]
            if len(entries) < LIST_PAGE:
                return keys

    # -- tasks -----------------------------------------------------------------
    def create_task(self, description: str, priority: str, tags: tuple[str, ...]) -> str:
        """Create a task of type ``memrouter``; its claude-flow id."""
        made = self._write(
            "task_create",
            {"type": MEMROUTER_TYPE, "description": description, "priority": priority, "tags": list(tags)},
        )
        task_id = made.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise BackendContractError(f"claude-flow: task_create gave no taskId: {str(made)[:200]}")
        return task_id

    def task(self, task_id: str) -> RemoteTask | None:
        """One task with its tags and result (None when claude-flow has no such task)."""
        found = self._call("task_status", {"taskId": task_id})
        if found.get("status") == "not_found" or "taskId" not in found:
            return None
        return _task(found)

    def tasks(self) -> list[RemoteTask]:
        """Every task claude-flow lists (its list carries no tags: see ``task``)."""
        return [_task(item) for item in _list(self._call("task_list", {"limit": 10_000}), "tasks", "task_list")]

    def complete_task(self, task_id: str, result: Any) -> None:
        body: dict[str, Any] = {"taskId": task_id}
        if isinstance(result, Mapping):
            body["result"] = dict(result)
        elif result is not None:
            body["result"] = {"value": result}
        answer = self._write("task_complete", body)
        if answer.get("status") != "completed":
            raise BackendContractError(f"claude-flow: task_complete {task_id}: {str(answer)[:200]}")

    # -- claims ----------------------------------------------------------------
    def claims(self) -> list[Claim]:
        return [_claim(item) for item in _list(self._call("claims_list", {"status": "all"}), "claims", "claims_list")]

    def claim(self, issue: str, who: str) -> str | None:
        """Claim ``issue`` for ``who``; None when granted, else claude-flow's refusal."""
        return _refusal(self._write("claims_claim", {"issueId": issue, "claimant": who}))

    def release(self, issue: str, who: str, reason: str) -> str | None:
        return _refusal(self._write("claims_release", {"issueId": issue, "claimant": who, "reason": reason}))

    def complete_claim(self, issue: str) -> str | None:
        return _refusal(self._write("claims_status", {"issueId": issue, "status": "completed"}))

    def handoff(self, issue: str, source: str, target: str, reason: str | None) -> str | None:
        body = {"issueId": issue, "from": source, "to": target}
        if reason:
            body["reason"] = reason
        return _refusal(self._write("claims_handoff", body))

    def accept_handoff(self, issue: str, who: str) -> str | None:
        return _refusal(self._write("claims_accept-handoff", {"issueId": issue, "claimant": who}))

    # -- plumbing --------------------------------------------------------------
    def _write(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.writes += 1
        return self._call(tool, arguments)

    def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        result = self.session.call_tool(tool, arguments)
        text = result.content[0].text if result.content and hasattr(result.content[0], "text") else None
        if result.is_error:
            raise BackendContractError(f"claude-flow: {tool} failed: {(text or '')[:300]}")
        try:
            found = json.loads(text or "")
        except json.JSONDecodeError as exc:
            raise BackendContractError(f"claude-flow: {tool} answered with no JSON: {(text or '')[:200]!r}") from exc
        if not isinstance(found, dict):
            raise BackendContractError(f"claude-flow: {tool} answered with {type(found).__name__}, not an object")
        return found


def _namespace(value: str) -> str:
    if not _NAMESPACE.fullmatch(value):
        raise InvalidInput(f"a claude-flow namespace holds letters, digits and _ - . : only, not {value[:60]!r}")
    return value


def _ok(answer: dict[str, Any], tool: str) -> None:
    if answer.get("success") is False:
        raise BackendContractError(f"claude-flow: {tool} refused: {str(answer.get('error'))[:200]}")


def _refusal(answer: dict[str, Any]) -> str | None:
    if answer.get("success") is False:
        return str(answer.get("error") or "refused")
    return None


def _list(answer: dict[str, Any], field: str, tool: str) -> list[Any]:
    items = answer.get(field)
    if not isinstance(items, list):
        raise BackendContractError(f"claude-flow: {tool} gave no {field!r} list")
    return items


def _task(item: Any) -> RemoteTask:
    if not isinstance(item, Mapping) or not isinstance(item.get("taskId"), str):
        raise BackendContractError(f"claude-flow: a task without a taskId: {str(item)[:200]}")
    tags = item.get("tags") or ()
    return RemoteTask(
        id=item["taskId"], type=str(item.get("type") or ""), description=str(item.get("description") or ""),
        status=str(item.get("status") or ""), priority=str(item.get("priority") or "normal"),
        tags=tuple(str(tag) for tag in tags) if isinstance(tags, list) else (), result=item.get("result"),
    )  # fmt: skip


def _claim(item: Any) -> Claim:
    if not isinstance(item, Mapping) or not isinstance(item.get("issueId"), str):
        raise BackendContractError(f"claude-flow: a claim without an issueId: {str(item)[:200]}")
    holder, holder_type = parse_claimant(item.get("claimant"))
    target = item.get("handoffTo")
    progress = item.get("progress")
    return Claim(
        issue=item["issueId"], holder=holder, holder_type=holder_type, status=str(item.get("status") or ""),
        handoff_to=parse_claimant(target) if target else None, reason=item.get("handoffReason"),
        progress=float(progress) if isinstance(progress, int | float) else None,
    )  # fmt: skip
