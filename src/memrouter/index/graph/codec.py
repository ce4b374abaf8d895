"""How a memory's graph keys and edges are stored: JSON text, the same in every store."""

from __future__ import annotations

import json

__all__ = ["EdgeRow", "decode_edges", "decode_keys", "encode"]

# One edge as stored: (type, target key, label, line, detail).
EdgeRow = tuple[str, str, str, int, str | None]
encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def decode_keys(text: str) -> dict[str, str]:
    """A stored ``keys`` value: key -> label."""
    keys: dict[str, str] = json.loads(text)
    return keys


def decode_edges(text: str) -> list[EdgeRow]:
    """A stored ``edges`` value: (type, target key, label, line, detail) per edge, in the memory's order."""
    return [tuple(edge) for edge in json.loads(text)]
