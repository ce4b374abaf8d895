"""What the pages show, made safe: sanitised markdown, diffs, ages, and the template environment.

Memory text is untrusted (an agent wrote it). It is rendered by markdown-it
with raw HTML off, so ``<script>`` or ``<img onerror=...>`` in a memory is
shown as text, and links are checked by markdown-it's ``validateLink``
(``javascript:``, ``vbscript:``, ``file:`` and ``data:`` URLs other than
images are not made links). Everything else reaches the page through
Jinja2 with autoescaping on.
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import jinja2
    from markdown_it import MarkdownIt

__all__ = ["age", "diff_lines", "environment", "highlight", "markdown_html", "MAX_DIFF_LINES"]

MAX_DIFF_LINES = 400
_SAFE_SCHEMES = ("http:", "https:", "mailto:", "#", "/")


def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    renderer.enable("table")
    renderer.enable("strikethrough")
    allowed = renderer.validateLink

    def validate(url: str) -> bool:
        # markdown-it refuses javascript:, vbscript:, file: and most data: URLs; keep to plainly safe ones.
        lowered = url.strip().lower()
        relative = ":" not in lowered.split("/", 1)[0]
        return allowed(url) and (relative or lowered.startswith(_SAFE_SCHEMES))

    renderer.validateLink = validate  # type: ignore[method-assign]
    return renderer


def markdown_html(text: str, renderer: MarkdownIt | None = None) -> str:
    """``text`` (markdown) as HTML with raw HTML escaped and unsafe links dropped."""
    html: str = (renderer or _renderer()).render(text)
    return html


def diff_lines(older: str, newer: str) -> list[tuple[str, str]]:
    """A unified diff of two texts as (kind, line): kind is ``add``, ``del``, ``hunk`` or ``same``."""
    found: list[tuple[str, str]] = []
    for line in difflib.unified_diff(older.splitlines(), newer.splitlines(), lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = (
            "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "del" if line[:1] == "-" else "same"
        )
        found.append((kind, line))
        if len(found) >= MAX_DIFF_LINES:
            found.append(("hunk", "(diff cut short)"))
            break
    return found


def diff_kinds(diff: str) -> list[tuple[str, str]]:
    """A unified diff's lines as (kind, line), as ``diff_lines`` gives them (the two header lines kept as hunks)."""
    found: list[tuple[str, str]] = []
    for line in diff.splitlines()[:MAX_DIFF_LINES]:
        kind = (
            "hunk"
            if line.startswith(("@@", "---", "+++"))
            else "add"
            if line[:1] == "+"
            else "del"
            if line[:1] == "-"
            else "same"
        )
        found.append((kind, line))
    return found


def highlight(snippet: str) -> Any:
    """A search snippet escaped, its ``**matched**`` words marked with ``<mark>``."""
    import re

    from markupsafe import Markup, escape

    return Markup(re.sub(r"\*\*(.+?)\*\*", r"<mark>\1</mark>", str(escape(snippet))))


def age(seconds: float) -> str:
    """A short duration: ``42s``, ``5m 3s``, ``2h 10m``, ``3d 4h`` (negative: ``-``)."""
    sign = "-" if seconds < 0 else ""
    left = int(abs(seconds))
    for unit, size, smaller, small_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if left >= size:
            return f"{sign}{left // size}{unit} {left % size // small_size}{smaller}"
    return f"{sign}{left}s"


def utc(moment: float | None) -> str:
    """Seconds since the epoch as UTC ISO text (empty for None)."""
    return "" if moment is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def environment() -> jinja2.Environment:
    """The templates shipped in the package, autoescaped."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["age"] = age
    env.filters["highlight"] = highlight
    env.filters["path"] = lambda name: quote(str(name), safe="/")
    env.filters["utc"] = utc
    env.filters["diff_kinds"] = diff_kinds
    renderer = _renderer()

    def markdown(text: str) -> Any:
        from markupsafe import Markup

        return Markup(markdown_html(text, renderer))  # sanitised: raw HTML off, links checked

    env.globals["markdown"] = markdown
    return env
