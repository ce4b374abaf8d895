"""Running the guard's patterns fast: only on the lines that hold one of their anchor words.

A pattern that opens with a word boundary or a character class is tried at
every position of the text; on 10 KB that costs milliseconds per pattern.
Each pattern therefore names the literal words it cannot match without
(lower case), found with ``str.find``, and runs only on the lines holding
one (and ``lines_after`` more), which is the same answer for a fraction of the cost.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["Lowered", "matches"]


class Lowered:
    """A text and its lower-case copy, made once for every pattern (``None`` when lowering changes its length)."""

    __slots__ = ("text", "lower")

    def __init__(self, text: str) -> None:
        self.text = text
        lowered = text.lower()
        self.lower: str | None = lowered if len(lowered) == len(text) else None

    def windows(self, anchors: Iterable[str], lines_after: int = 0) -> list[tuple[int, int]]:
        """The merged line spans holding an anchor, each with ``lines_after`` following lines."""
        text, lower = self.text, self.lower
        if lower is None:
            return [(0, len(text))]
        spans: list[tuple[int, int]] = []
        for anchor in anchors:
            at = lower.find(anchor)
            while at >= 0:
                start = text.rfind("\n", 0, at) + 1
                end = at
                for _ in range(lines_after + 1):
                    newline = text.find("\n", end)
                    end = len(text) if newline < 0 else newline + 1
                    if newline < 0:
                        break
                spans.append((start, end))
                at = lower.find(anchor, end)
        if len(spans) < 2:
            return spans
        spans.sort()
        merged = [spans[0]]
        for start, end in spans[1:]:
            if start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged


def matches(
    pattern: re.Pattern[str],
    text: Lowered,
    anchors: Iterable[str],
    lines_after: int = 0,
    *,
    needs: re.Pattern[str] | None = None,
) -> Iterator[re.Match[str]]:
    """Every match of ``pattern`` on the lines of ``text`` that hold an anchor, in order.

    ``needs`` is a cheap pattern a match cannot do without (a digit, a ``=``):
    a window where it finds nothing is skipped without running ``pattern``.
    """
    for start, end in text.windows(anchors, lines_after):
        if needs is None or needs.search(text.text, start, end) is not None:
            yield from pattern.finditer(text.text, start, end)
