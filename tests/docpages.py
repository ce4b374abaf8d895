"""The README and the pages of docs/, read for the examples their tests run (importable as ``docpages``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"


def pages() -> list[Path]:
    """The README, then every markdown page of docs/ by name."""
    return [README, *sorted(DOCS.glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """A fenced code block of one page: where it is, and its text (without the fences)."""

    page: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(language: str, where: list[Path] | None = None) -> list[Block]:
    """Every block fenced as ``language`` (at the start of a line) in ``where`` (default: every page)."""
    found = []
    for page in pages() if where is None else where:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(rf"^```{language}\n(.*?)^```", text, re.M | re.S):
            found.append(Block(page, text.count("\n", 0, match.start()) + 1, match.group(1)))
    return found
