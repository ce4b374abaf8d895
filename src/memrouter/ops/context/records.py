"""The records of an assembled context: its items and the context itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Context", "ContextItem"]


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One entry of a block: a memory (``name`` set) or a fact (a commit, the sprint's goal)."""

    title: str
    text: str = ""
    name: str | None = None
    path: str | None = None
    channel: str | None = None
    valid: str | None = None
    author: str | None = None
    confidence: float | None = None
    flags: tuple[str, ...] = ()
    why: str | None = None
    cost: int | None = None  # tokens of the whole memory, shown on index lines
    note: str | None = None  # what was cut and how to read the rest
    listed: bool = False  # an index line only (no text)
    anchors: str | None = None  # stale or broken: the code it describes changed (memrouter.ops.verify); check first

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.__slots__ if getattr(self, key) not in (None, (), "", False)}


@dataclass
class Context:
    """An assembled context: its blocks, its budget and the tokens the rendered form takes."""

    query: str | None
    task: str | None
    max_tokens: int
    blocks: dict[str, list[ContextItem]] = field(default_factory=dict)
    tokens: int = 0
    format: str = "xml"
    rendered: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query, "task": self.task, "max_tokens": self.max_tokens, "tokens": self.tokens,
            "blocks": {name: [item.to_dict() for item in items] for name, items in self.blocks.items()},
        }  # fmt: skip
