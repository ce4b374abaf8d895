"""Texts of anchored code: where lines went, whether a text holds other lines, a definition by name, diffs."""

from __future__ import annotations

import difflib
from pathlib import Path

from memrouter.anchors.symbols import Definition, Parsers

__all__ = [
    "DIFF_LINES", "Block", "anchored_diff", "block_of", "file_level_note", "find_definition", "holds_block",
    "is_binary", "join_notes", "lines_of", "map_lines",
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


# A definition's lines with the nearest non-blank line on each side (None: the file's start or end).
Block = tuple[bytes | None, tuple[bytes, ...], bytes | None]


def _neighbour(lines: list[bytes], index: int, step: int) -> bytes | None:
    while 0 <= index < len(lines) and not lines[index].strip():
        index += step
    return lines[index] if 0 <= index < len(lines) else None


def block_of(data: bytes, definition: Definition) -> Block:
    """The lines of ``definition`` in ``data`` and their nearest non-blank neighbours."""
    lines = data.splitlines()
    body = tuple(lines[definition.first - 1 : definition.last])
    return _neighbour(lines, definition.first - 2, -1), body, _neighbour(lines, definition.last, 1)


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip())


def holds_block(data: bytes, block: Block) -> bool:
    """Whether ``data`` holds the block's lines whole, as the same definition: unchanged there, without a parse.
    Lines it had there and lost since (or gained since) would sit right beside the block: at its end, a line
    indented deeper than its first (a body's); at its start, a line indented as deep (a decorator, an attribute,
    a comment). So the line after it must be the same as now, no deeper than its first line, or none; the line
    before it the same as now, or indented otherwise (a sibling's body, an enclosing block's head), or none."""
    before, body, after = block
    if not body or body[0] not in data:
        return False
    lines = data.splitlines()
    size, depth = len(body), _indent(body[0])
    for start in (n for n, line in enumerate(lines) if line == body[0]):
        if tuple(lines[start : start + size]) != body:
            continue
        preceding, following = _neighbour(lines, start - 1, -1), _neighbour(lines, start + size, 1)
        if preceding is not None and preceding != before and _indent(preceding) == depth:
            continue
        if following is None or following == after or _indent(following) <= depth:
            return True
    return False


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
