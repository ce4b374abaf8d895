"""The block structure of a markdown memory, read once for every use.

Titles (``parse.first_heading``), chunks for embeddings
(``memrouter.index.chunking``) and the parts of a long memory for a
size-limited service (``memrouter.external.backends.split``) all read the document
through ``iter_blocks``, so they agree on what is a heading and where a
code block ends.

``iter_blocks(text)`` cuts ``text`` into consecutive blocks of whole lines:

``front_matter``
    a leading ``---`` ... ``---`` block (the one ``frontmatter.split`` finds);
    nothing inside it is read as markdown.
``heading``
    an ATX heading (``#`` to ``######`` followed by a space or the line end,
    indented up to 3 spaces, an optional closing ``#`` run removed) or a
    setext heading: a single line of text underlined with ``=`` (level 1) or
    ``-`` (level 2). The underlined line must not be a list item, quote,
    table row, rule or indented code.
``fence``
    a fenced code block: an opening run of at least 3 backticks or tildes
    indented up to 3 spaces (a backtick fence's info string holds no
    backtick), through the first closing run of the same character, at least
    as long, indented up to 3 spaces, with nothing after it but whitespace.
    An unclosed fence runs to the end. Nothing inside a fence is a heading.
``paragraph`` / ``list``
    a run of non-blank lines up to the next blank line, heading or fence;
    ``list`` when it starts with a list item (``-``, ``*``, ``+``, ``1.``,
    ``1)``). Tables, quotes and rules are read as part of the run they are
    in; chunking and splitting cut between blocks, and inside one only when
    it alone is too big.
``blank``
    a run of lines holding only whitespace.

Only ``\\n`` ends a line (a ``\\r`` before it belongs to the line). The
reader is container-blind: a fence indented 4 spaces or more (in a deeply
indented list item) is not recognised, the same as indented code.

The blocks cover the text exactly: the first starts at 0, each starts where
the previous ended, the last ends at ``len(text)``, none is empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from memrouter.store import frontmatter

__all__ = ["Block", "BlockKind", "iter_blocks"]

BlockKind = Literal["front_matter", "heading", "fence", "paragraph", "list", "blank"]

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]|\r?$)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*\r?$")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*\r?$")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|\r?$)")
# Lines that cannot be the text of a setext heading: their "---" below is a
# rule or a table's own, and a 4-space indent makes them code.
_NOT_SETEXT_TEXT = re.compile(r" {0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|>|\|)| {4}|\t")
_RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*\r?$")


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a document: ``text[start:end]``, lines ``line`` to ``end_line - 1``.

    ``start``/``end`` are character offsets and cover whole lines, line
    endings included; ``line``/``end_line`` are 0-based line numbers (end
    exclusive). ``level`` (1-6) and ``text`` (without markers, stripped; may
    be empty) are set for headings only.
    """

    kind: BlockKind
    start: int
    end: int
    line: int
    end_line: int
    level: int = 0
    text: str = ""


def _atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) when ``line`` is an ATX heading."""
    match = _ATX.match(line)
    if match is None:
        return None
    text = line[match.end() :].strip()
    unclosed = text.rstrip("#")
    if not unclosed or unclosed[-1] in " \t":
        text = unclosed.rstrip()  # a closing run of "#" counts only after a space
    return len(match.group(1)), text


def _fence_opening(line: str) -> str | None:
    """The opening run of backticks or tildes when ``line`` opens a fence."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    marker = match.group(1)
    if marker[0] == "`" and "`" in match.group(2):
        return None  # an inline code span such as ```x```, not a fence
    return marker


def _closes(line: str, marker: str) -> bool:
    """Whether ``line`` closes the fence that ``marker`` opened."""
    match = _FENCE_CLOSE.match(line)
    return match is not None and match.group(1)[0] == marker[0] and len(match.group(1)) >= len(marker)


def _setext_level(text_line: str, underline: str) -> int:
    """1 or 2 when ``text_line`` underlined by ``underline`` is a setext heading, else 0."""
    match = _SETEXT_UNDERLINE.match(underline)
    if match is None or _NOT_SETEXT_TEXT.match(text_line) or _RULE.match(text_line):
        return 0
    return 1 if match.group(1)[0] == "=" else 2


def _interrupts(line: str) -> bool:
    """Whether ``line`` ends a paragraph run: blank, a fence, or an ATX heading."""
    return not line.strip() or _fence_opening(line) is not None or _ATX.match(line) is not None


def _line_end(text: str, start: int) -> int:
    """The offset just past the line that starts at ``start`` (its ``\\n`` included)."""
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline + 1


def iter_blocks(text: str) -> Iterator[Block]:
    """The blocks of ``text`` in order (see the module docstring).

    Lines are read only as far as the caller consumes blocks, so finding a
    title in the first line costs one line, whatever the document's length.
    """
    raw, body = frontmatter.split(text)
    start, number = 0, 0
    if raw is not None:
        start = len(text) - len(body)
        number = text.count("\n", 0, start) + (text[start - 1] != "\n")
        yield Block("front_matter", 0, start, 0, number)
    length = len(text)
    while start < length:
        end = _line_end(text, start)
        line = text[start:end]  # the regular expressions' "$" allows the trailing "\n"
        lines = 1
        kind: BlockKind
        level, title = 0, ""
        if not line.strip():
            kind = "blank"
            while end < length and not text[end : (following := _line_end(text, end))].strip():
                end, lines = following, lines + 1
        elif (marker := _fence_opening(line)) is not None:
            kind = "fence"
            closed = False
            while end < length and not closed:
                following = _line_end(text, end)
                closed = _closes(text[end:following], marker)
                end, lines = following, lines + 1
        elif (heading := _atx_heading(line)) is not None:
            kind = "heading"
            level, title = heading
        elif end < length and (level := _setext_level(line, text[end : (following := _line_end(text, end))])):
            kind = "heading"
            title = line.strip()
            end, lines = following, 2
        else:
            kind = "list" if _LIST_ITEM.match(line) and not _RULE.match(line) else "paragraph"
            while end < length and not _interrupts(text[end : (following := _line_end(text, end))]):
                end, lines = following, lines + 1
        yield Block(kind, start, end, number, number + lines, level, title)
        start, number = end, number + lines
