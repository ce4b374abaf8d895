"""Splitting long memory text into parts a size-limited service accepts.

Forgetful takes at most 2,000 characters of content per memory, so a longer
canonical memory is written as several linked parts (see
``memrouter.external.backends.base.upsert_parts``). ``split_content`` cuts along the
markdown's own structure as ``memrouter.store.markdown`` reads it (the same
blocks that titles and chunking use): between blocks first (before a heading
once a part is half full; a fenced code block is never cut unless it alone
exceeds the limit), then between lines, then between words, and only as a
last resort inside a word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memrouter.store.markdown import iter_blocks

__all__ = ["split_content"]

_WORD_BREAK = re.compile(r"(?<=\s)(?=\S)")


def split_content(text: str, limit: int = 2000) -> list[str]:
    """Cut ``text`` into parts of at most ``limit`` characters, along markdown structure.

    Concatenating the parts gives back ``text`` exactly. A part holds only
    whitespace only when a run of whitespace fits next to neither neighbour.
    Text within the limit comes back as a single part.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    current = ""
    for start, end, is_heading in _sections(text, limit):
        section = text[start:end]
        for piece in [section] if len(section) <= limit else _atoms(section, limit, 1):
            starts_section = is_heading and len(current) >= limit // 2
            if current and (len(current) + len(piece) > limit or starts_section):
                parts.append(current)
                current = ""
            current += piece
            is_heading = False  # only the first piece of a section starts it
    parts.append(current)
    return _absorb_blank_parts(parts, limit)


def _sections(text: str, limit: int) -> list[tuple[int, int, bool]]:
    """``text`` cut between blocks, as (start, end, starts with a heading); they tile ``text``.

    While the result fits in ``limit``, a block joins the section before it
    when it is a blank run, when that section ends with a heading, or when no
    blank line separates them and the block is no heading: "Example:" stays
    with the fence after it, and a heading with its first block. So a
    section longer than ``limit`` is a single block.
    """
    sections: list[tuple[int, int, bool]] = []
    after_heading = after_blank = False
    for block in iter_blocks(text):
        joins = block.kind == "blank" or after_heading or (not after_blank and block.kind != "heading")
        if sections and joins and block.end - sections[-1][0] <= limit:
            start, _, is_heading = sections[-1]
            sections[-1] = (start, block.end, is_heading)
        else:
            sections.append((block.start, block.end, block.kind == "heading"))
        after_blank = block.kind == "blank"
        if not after_blank:
            after_heading = block.kind == "heading"
    return sections


def _absorb_blank_parts(parts: list[str], limit: int) -> list[str]:
    """Move whitespace-only parts into a neighbour where it fits, so parts carry text."""
    result: list[str] = []
    pending = ""
    for part in parts:
        if not part.strip():
            # Only the last part may take it while nothing waits, or order breaks.
            if not pending and result and len(result[-1]) + len(part) <= limit:
                result[-1] += part
            elif len(pending) + len(part) <= limit:
                pending += part
            else:
                result.append(pending)
                pending = part
            continue
        if pending and len(pending) + len(part) <= limit:
            part = pending + part
        elif pending:
            result.append(pending)
        pending = ""
        result.append(part)
    if pending:
        result.append(pending)
    return result


def _pieces(text: str, level: int) -> list[str]:
    """``text`` cut at one level of structure; the pieces concatenate back to ``text``."""
    if level == 1:
        return text.splitlines(keepends=True)
    return _cut(text, _WORD_BREAK)


def _cut(text: str, pattern: re.Pattern[str]) -> list[str]:
    starts = [0, *(m.start() for m in pattern.finditer(text) if m.start() > 0), len(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:], strict=False) if b > a]


def _atoms(text: str, limit: int, level: int) -> Iterator[str]:
    """Pieces of at most ``limit`` characters, as coarse as the structure allows."""
    if level > 2:
        for start in range(0, len(text), limit):
            yield text[start : start + limit]
        return
    for piece in _pieces(text, level):
        if len(piece) <= limit:
            yield piece
        else:
            yield from _atoms(piece, limit, level + 1)
