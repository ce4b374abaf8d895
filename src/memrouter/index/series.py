"""Numbered series: memories whose names differ only in a trailing number are read in sequence.

A conversation kept one turn per memory (``chat/d3-11``, ``chat/d3-12``), a
diary of dated notes (``retrospective-2025-12-17``, ``...-18``) or numbered
log entries (``incident-041``) are series: a question is often answered by
the memory next to the one that shares its words ("which city did Tim
suggest?" matches the turn that asks, the answer is the next turn). The
second stage (``memrouter.index.sqlite.rerank``) reads each candidate's neighbours
too and lets a memory borrow from the better of them.

Two memories are neighbours when their names are the same up to a final
``-`` or ``_`` and the numbers after it differ by one (``d3-9`` and
``d3-10``; zero-padded numbers keep their width: ``note-009``, ``note-010``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable

__all__ = ["neighbour_names", "neighbours"]

_NUMBERED = re.compile(r"^(.*[-_])(\d{1,9})$")


def neighbour_names(name: str) -> tuple[str, ...]:
    """The names of ``name``'s neighbours in its series (whether they exist or not); none outside a series."""
    match = _NUMBERED.match(name)
    if match is None:
        return ()
    stem, digits = match.groups()
    width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
    number = int(digits)
    return tuple(f"{stem}{n:0{width}d}" for n in (number - 1, number + 1) if n >= 0)


def neighbours(
    conn: sqlite3.Connection, memory_ids: Iterable[int], passing: Callable[[int], bool] | None = None
) -> dict[int, tuple[int, ...]]:
    """Each of ``memory_ids``' indexed neighbours (memory ids, those ``passing`` only); ids without any are left out."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids:
        return {}
    names = dict(conn.execute(f"SELECT id, name FROM memories WHERE id IN ({', '.join('?' * len(ids))})", ids))
    wanted = {memory_id: neighbour_names(name) for memory_id, name in names.items()}
    looked_up = sorted({name for near in wanted.values() for name in near})
    if not looked_up:
        return {}
    found = dict(
        conn.execute(f"SELECT name, id FROM memories WHERE name IN ({', '.join('?' * len(looked_up))})", looked_up)
    )
    result: dict[int, tuple[int, ...]] = {}
    for memory_id, near in wanted.items():
        kept = tuple(found[name] for name in near if name in found and (passing is None or passing(found[name])))
        if kept:
            result[memory_id] = kept
    return result
