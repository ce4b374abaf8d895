"""Split a markdown memory into chunks that fit the embedding model's window.

``chunk_markdown(text, count_tokens)`` cuts along the markdown structure as
``memrouter.store.markdown`` reads it (the same blocks that titles and
``backends.split`` use), in this order of preference:

1. headings, ``#`` style or a one-line paragraph underlined with ``===`` or
   ``---`` (a chunk that already holds ``target_tokens // 4`` tokens always
   ends before a heading, so sections are not glued to their neighbours; small
   sections are merged rather than embedded alone);
2. the reader's other blocks: fenced code, and runs of lines up to a blank
   line (paragraphs, lists, tables);
3. sentences and lines, for a block larger than the target;
4. word boundaries (or any character) inside a single too-long line.

A fenced code block is never split unless it alone exceeds the target. When a
chunk ends because it is full (not at a heading), the next one repeats its
last sentences or blocks up to ``overlap_tokens`` so that a thought cut in
two is still found whole in one of them.

**Context prefix.** Each chunk's ``embed_text`` (what the indexer embeds) is
its text preceded by a context line: ``context_prefix`` (e.g. the memory
title) and the heading path, joined by ``" > "``, then a blank line. Short
chunks such as "Run make test" are ambiguous alone; their section says what
they are about. The context counts against the token budget, and is shortened
(last heading only) or dropped when it would take more than a quarter of it.
``context_prefix=None`` turns the context off (``embed_text == text``).

Offsets are character offsets into ``text``: ``text[chunk.start:chunk.end] ==
chunk.text``; chunks are in order, and every non-blank character of the input
lies in at least one chunk. With ``count_tokens`` from the embedder, no
chunk's ``embed_text`` exceeds ``max_tokens``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memrouter.core.errors import InvalidInput
from memrouter.store.markdown import iter_blocks

__all__ = ["Chunk", "chunk_markdown"]

_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+(?=\S)|\n")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a memory to embed.

    ``start``/``end`` are character offsets into the chunked text and
    ``text == source[start:end]``; ``heading`` is the heading path in force
    at the chunk's start ("Setup > Install", "" before any heading);
    ``embed_text`` is what to embed (context line + text, see the module).
    """

    index: int
    start: int
    end: int
    text: str
    heading: str
    embed_text: str


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    heading: str
    is_heading: bool
    tokens: int  # content tokens, the special tokens (count_tokens("")) excluded


def _blocks(text: str) -> list[tuple[int, int, str, bool]]:
    """Markdown blocks as (start, end, heading path, is_heading), whitespace-trimmed.

    The blocks are ``store.markdown``'s (blank runs dropped); front matter,
    when the text has any, is kept as plain text so nothing goes unindexed.
    """
    blocks: list[tuple[int, int, str, bool]] = []
    stack: list[tuple[int, str]] = []
    path = ""
    for block in iter_blocks(text):
        if block.kind == "blank":
            continue
        is_heading = block.kind == "heading"
        if is_heading:
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            if block.text:
                stack.append((block.level, block.text))
            path = " > ".join(title for _, title in stack)
        start, end = _trim(text, block.start, block.end)
        if start < end:
            blocks.append((start, end, path, is_heading))
    return blocks


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class _Chunker:
    def __init__(
        self,
        text: str,
        count_tokens: Callable[[str], int],
        target: int,
        overlap: int,
        max_tokens: int,
        context_prefix: str | None,
    ) -> None:
        self.text = text
        self.count = count_tokens
        self.target = target
        self.overlap = overlap
        self.max_tokens = max_tokens
        self.context_prefix = context_prefix
        self.base = count_tokens("")
        self._contexts: dict[str, tuple[str, int]] = {}

    def tokens(self, start: int, end: int) -> int:
        return self.count(self.text[start:end])

    def context(self, heading: str) -> tuple[str, int]:
        """The context line for a heading path and the tokens it adds."""
        if self.context_prefix is None:
            return "", 0
        cached = self._contexts.get(heading)
        if cached is not None:
            return cached
        result = ("", 0)
        last = heading.rsplit(" > ", 1)[-1] if heading else ""
        prefix = self.context_prefix
        if heading == prefix or heading.startswith(prefix + " > "):
            prefix = ""  # the title is usually the first heading too: say it once
        for candidate in (
            " > ".join(p for p in (prefix, heading) if p),
            " > ".join(p for p in (prefix, last) if p),
            last,
        ):
            if not candidate:
                continue
            cost = self.count(candidate + "\n\n") - self.base
            if cost <= self.target // 4:
                result = (candidate, cost)
                break
        self._contexts[heading] = result
        return result

    def budget(self, heading: str) -> int:
        return self.target - self.context(heading)[1]

    def units(self) -> list[_Unit]:
        units: list[_Unit] = []
        for start, end, heading, is_heading in _blocks(self.text):
            budget = self.budget(heading)
            tokens = self.tokens(start, end)
            if tokens <= budget:
                units.append(_Unit(start, end, heading, is_heading, tokens - self.base))
                continue
            for piece_start, piece_end in self._split(start, end, budget):
                piece_tokens = self.tokens(piece_start, piece_end) - self.base
                units.append(_Unit(piece_start, piece_end, heading, is_heading, piece_tokens))
        return units

    def _split(self, start: int, end: int, budget: int) -> list[tuple[int, int]]:
        """Split a too-big span into sentences/lines, packing small ones, hard-cutting huge ones."""
        pieces: list[tuple[int, int]] = []
        cursor = start
        for match in _SENTENCE_END.finditer(self.text, start, end):
            pieces.append((cursor, match.start()))
            cursor = match.end()
        pieces.append((cursor, end))
        out: list[tuple[int, int]] = []
        for piece_start, piece_end in pieces:
            piece_start, piece_end = _trim(self.text, piece_start, piece_end)
            if piece_start >= piece_end:
                continue
            if self.tokens(piece_start, piece_end) <= budget:
                out.append((piece_start, piece_end))
            else:
                out.extend(self._hard_split(piece_start, piece_end, budget))
        return out

    def _fits(self, start: int, end: int, budget: int) -> bool:
        return self.tokens(start, end) <= budget

    def _hard_split(self, start: int, end: int, budget: int) -> list[tuple[int, int]]:
        """Cut a span with no sentence or line break, at word boundaries when possible."""
        out: list[tuple[int, int]] = []
        while start < end:
            if self._fits(start, end, budget):
                out.append((start, end))
                break
            # Exponential then binary search for the longest prefix that fits.
            good, step = start + 1, max(budget, 1) * 4
            bad = end
            probe = start + step
            while probe < end and self._fits(start, probe, budget):
                good, probe = probe, probe + step
                step *= 2
            bad = min(probe, end)
            while bad - good > 1:
                middle = (good + bad) // 2
                if self._fits(start, middle, budget):
                    good = middle
                else:
                    bad = middle
            cut = good
            space = self.text.rfind(" ", start, cut + 1)
            if space > start + (cut - start) // 2:
                cut = space
            piece = _trim(self.text, start, cut)
            if piece[0] < piece[1]:
                out.append(piece)
            start = _trim(self.text, cut, end)[0]
        return out

    def chunks(self) -> list[Chunk]:
        """Pack units greedily; sizes are estimated as sums, then checked exactly once."""
        groups: list[list[_Unit]] = []
        current: list[_Unit] = []
        current_tokens = 0
        for unit in self.units():
            if current:
                if unit.is_heading and self.base + current_tokens >= self.target // 4:
                    groups.append(current)
                    current, current_tokens = [], 0
                elif self.base + current_tokens + unit.tokens <= self.budget(current[0].heading):
                    current.append(unit)
                    current_tokens += unit.tokens
                    continue
                else:
                    groups.append(current)
                    current = self._overlap_tail(current, unit)
                    current_tokens = sum(u.tokens for u in current)
            current.append(unit)
            current_tokens += unit.tokens
        if current:
            groups.append(current)
        checked: list[list[_Unit]] = []
        for group in groups:
            checked.extend(self._exact(group))
        return [self._make_chunk(i, group) for i, group in enumerate(checked)]

    def _exact(self, group: list[_Unit]) -> list[list[_Unit]]:
        """Check a group's real size once; re-pack it by exact counts if it is over.

        Sums of unit counts are exact for tokenizers that split on whitespace
        (WordPiece does), so the slow path is for other ``count_tokens``.
        """
        if len(group) == 1 or self.count(self._embed_text(group)) <= self.target:
            return [group]
        out: list[list[_Unit]] = [[group[0]]]
        for unit in group[1:]:
            last = out[-1]
            if self.count(self._embed_text([*last, unit])) <= self.target:
                last.append(unit)
            else:
                out.append([unit])
        return out

    def _embed_text(self, group: list[_Unit]) -> str:
        body = self.text[group[0].start : group[-1].end]
        context, _ = self.context(group[0].heading)
        return f"{context}\n\n{body}" if context else body

    def _overlap_tail(self, closed: list[_Unit], following: _Unit) -> list[_Unit]:
        """The trailing units of a full chunk to repeat before ``following``."""
        if self.overlap <= 0 or len(closed) < 2:
            return []
        tail: list[_Unit] = []
        tail_tokens = 0
        for unit in reversed(closed[1:]):
            if unit.is_heading or tail_tokens + unit.tokens > self.overlap:
                break
            tail.insert(0, unit)
            tail_tokens += unit.tokens
        while tail and self.base + tail_tokens + following.tokens > self.budget(tail[0].heading):
            tail_tokens -= tail.pop(0).tokens
        return tail

    def _make_chunk(self, index: int, group: list[_Unit]) -> Chunk:
        start, end = group[0].start, group[-1].end
        embed_text = self._embed_text(group)
        if len(group) == 1 and self.count(embed_text) > self.max_tokens:
            embed_text = self.text[start:end]  # a unit that fits only without its context
        return Chunk(
            index=index,
            start=start,
            end=end,
            text=self.text[start:end],
            heading=group[0].heading,
            embed_text=embed_text,
        )


def chunk_markdown(
    text: str,
    count_tokens: Callable[[str], int],
    target_tokens: int = 220,
    overlap_tokens: int = 32,
    *,
    max_tokens: int = 256,
    context_prefix: str | None = "",
) -> list[Chunk]:
    """Split markdown into chunks of at most about ``target_tokens`` tokens.

    ``count_tokens`` is the embedder's (``embedder.count_tokens``), which
    counts the model's special tokens too; ``max_tokens`` is its window
    (``embedder.max_tokens``). ``context_prefix`` is put before the heading
    path in each chunk's ``embed_text`` (pass the memory title; ``None`` for
    no context at all). Blank input gives no chunks. See the module docstring
    for where chunks are cut.
    """
    if target_tokens > max_tokens:
        raise InvalidInput(f"target_tokens ({target_tokens}) exceeds max_tokens ({max_tokens})")
    if not 0 <= overlap_tokens < target_tokens:
        raise InvalidInput(f"overlap_tokens must be in [0, target_tokens), got {overlap_tokens}")
    if count_tokens("") >= target_tokens:
        raise InvalidInput("target_tokens leaves no room for text")
    if not text.strip():
        return []
    return _Chunker(text, count_tokens, target_tokens, overlap_tokens, max_tokens, context_prefix).chunks()
