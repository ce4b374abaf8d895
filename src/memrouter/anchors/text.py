"""Texts of anchored code: where lines went, whether a text holds other lines, a definition by name, diffs."""

from __future__ import annotations

import difflib
from pathlib import Path

from memrouter.anchors.symbols import Definition, Parsers

__all__ = [
    "DIFF_LINES", "anchored_diff", "file_level_note", "find_definition", "holds_lines", "is_binary", "join_notes",
    "lines_of", "map_lines",
]  # fmt: skip

DIFF_LINES = 120


def map_lines(old: bytes, new: bytes, first: int, last: int) -> tuple[str, int, int]:
    """Where lines ``first..last`` of ``old`` are in ``new``: (``same`` | ``changed`` | ``gone``, first, last).

    The block is looked for whole first (the copy nearest its old place); only when it is not there are the
    two texts compared, in a window around it."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    block = old_lines[first - 1 : last]
    if not block:
        return "gone", first, last
    size = len(block)
    places = [
        at
        for at in range(len(new_lines) - size + 1)
        if new_lines[at] == block[0] and new_lines[at : at + size] == block
    ]
    if places:
        at = min(places, key=lambda place: abs(place - (first - 1)))
        return "same", at + 1, at + size
    # Compare a window around the block, from the last matching line before it to the first after it.
    margin = 200
    low, high = max(0, first - 1 - margin), min(len(old_lines), last + margin)
    shift = len(new_lines) - len(old_lines)
    new_low, new_high = max(0, low + min(0, shift)), min(len(new_lines), high + max(0, shift))
    matcher = difflib.SequenceMatcher(None, old_lines[low:high], new_lines[new_low:new_high], autojunk=False)
    mapped: dict[int, int] = {}
    for tag, a0, a1, b0, _ in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(a1 - a0):
                mapped[low + a0 + offset + 1] = new_low + b0 + offset + 1
    kept = [mapped[line] for line in range(first, last + 1) if line in mapped]
    if not kept:
        return "gone", first, last
    return "changed", min(kept), max(kept)


def find_definition(found: dict[str, Definition], symbol: str, language: str) -> tuple[str, Definition] | None:
    """The definition ``symbol`` names: its dotted name exactly, else (PowerShell) without case, else the only
    definition whose dotted name ends with it."""
    if symbol in found:
        return symbol, found[symbol]
    if language == "powershell":
        lowered = symbol.lower()
        for name, item in found.items():
            if name.lower() == lowered:
                return name, item
    tails = [name for name in found if name.endswith("." + symbol)]
    if len(tails) == 1:
        return tails[0], found[tails[0]]
    return None


def holds_lines(data: bytes, lines: bytes) -> bool:
    """Whether ``data`` holds ``lines`` as whole lines."""
    return bool(lines) and (data.startswith(lines + b"\n") or b"\n" + lines + b"\n" in data or data == lines
                            or data.endswith(b"\n" + lines))  # fmt: skip


def lines_of(data: bytes, definition: Definition) -> bytes:
    return b"\n".join(data.splitlines()[definition.first - 1 : definition.last])


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:8000]


def file_level_note(path: str, language: str | None, parsers: Parsers) -> str:
    if language and language in parsers.missing:
        return f"{parsers.missing[language]}: checked at file level"
    suffix = Path(path).suffix or "this kind of file"
    return f"no grammar for {suffix} files here: checked at file level"


def join_notes(first: str | None, second: str | None) -> str | None:
    parts = [part for part in (first, second) if part]
    return "; ".join(parts) or None


def anchored_diff(old: bytes, new: bytes, old_label: str, new_label: str) -> str:
    lines = list(
        difflib.unified_diff(
            old.decode("utf-8", "replace").splitlines(), new.decode("utf-8", "replace").splitlines(),
            old_label, new_label, lineterm="", n=2,
        )
    )  # fmt: skip
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... ({len(lines) - DIFF_LINES} more lines)"]
    return "\n".join(lines)
