"""Optional YAML front matter: split, parse, and edit without disturbing the rest.

Front matter is a block at the very start of the file between two ``---``
lines. It is optional: a plain markdown file is a valid memory. Editing works
on the raw lines of the block, one top-level key at a time, so every key that
is not touched (known or unknown, with its comments and quoting) survives a
rewrite byte for byte.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["FrontMatter", "locate", "parse", "render_value", "segments", "split", "update"]

_OPEN = re.compile(r"\A---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
# A line that starts a top-level key. Keys are usually plain identifiers, but
# YAML quotes words such as `no` and `on` (which would read as booleans), and a
# hand-written key may hold other characters; all of them start a new entry.
_TOP_KEY = re.compile(
    r"""^(?:
        '(?P<single>(?:[^'\r\n]|'')*)'
      | "(?P<double>(?:[^"\\\r\n]|\\.)*)"
      | (?P<plain>(?:[^\s\#'"?:,\[\]{}&*!|>%@`-]|[-?:](?=\S))[^\r\n]*?)
    )[ \t]*:(?=[ \t]|\r?\n|\Z)""",
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """The result of parsing: the mapping (empty if none), the body, and any problem."""

    data: dict[str, Any]
    raw: str | None
    body: str
    problem: str | None = None


def locate(text: str) -> tuple[int, int, int] | None:
    """Offsets (block start, block end, body start) of the front matter, if any."""
    opening = _OPEN.match(text)
    if not opening:
        return None
    closing = _CLOSE.search(text, opening.end())
    if not closing:
        return None
    return opening.end(), closing.start(), closing.end()


def split(text: str) -> tuple[str | None, str]:
    """Split ``text`` into (raw front matter without delimiters, body).

    Returns ``(None, text)`` when the file has no front matter block.
    """
    where = locate(text)
    if where is None:
        return None, text
    start, end, body = where
    return text[start:end], text[body:]


def _plain(value: Any) -> Any:
    """YAML timestamps become ISO strings so records stay JSON-ready."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse(text: str) -> FrontMatter:
    """Parse the front matter of ``text``; invalid YAML is reported, never raised.

    On a problem the whole text is kept as the body, so nothing is lost and the
    memory is still searchable as plain text.
    """
    raw, body = split(text)
    if raw is None:
        return FrontMatter({}, None, text)
    import yaml  # lazy: only files with front matter pay for it

    try:
        loaded = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        return FrontMatter({}, raw, text, f"invalid YAML front matter{where}: {_first_line(exc)}")
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return FrontMatter({}, raw, text, "front matter is not a mapping of keys to values")
    return FrontMatter(_plain(loaded), raw, body)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def render_value(key: str, value: Any) -> str:
    """One top-level ``key: value`` entry as YAML text, ending with a newline."""
    import yaml

    dumped = yaml.safe_dump({key: value}, default_flow_style=False, allow_unicode=True, sort_keys=False)
    return str(dumped)


def segments(raw: str) -> list[tuple[str | None, str]]:
    """Cut the raw block into (top-level key or None, lines) segments, lossless."""
    segments: list[tuple[str | None, str]] = []
    for line in raw.splitlines(keepends=True):
        match = _TOP_KEY.match(line)
        if match:
            segments.append((_key(match), line))
        elif segments:
            key, chunk = segments[-1]
            segments[-1] = (key, chunk + line)
        else:
            segments.append((None, line))
    return segments


def _key(match: re.Match[str]) -> str:
    """The key a ``_TOP_KEY`` match names, with YAML's quoting undone."""
    single, double, plain = match.group("single", "double", "plain")
    if single is not None:
        return str(single.replace("''", "'"))
    if double is not None and "\\" in double:
        import yaml

        return str(yaml.safe_load(f'"{double}"'))
    return str(plain if double is None else double)


def update(text: str, changes: dict[str, Any]) -> str:
    """Return ``text`` with front-matter keys set (``None`` removes the key).

    Keys not in ``changes`` keep their exact bytes. A file without front
    matter gets a new block only if there is something to set.
    """
    where = locate(text)
    if where is None:
        additions = "".join(render_value(k, v) for k, v in changes.items() if v is not None)
        return f"---\n{additions}---\n{text}" if additions else text
    start, end, _ = where
    raw = text[start:end]
    pending = dict(changes)
    out: list[str] = []
    for key, chunk in segments(raw):
        if key is not None and key in pending:
            value = pending.pop(key)
            if value is not None:
                out.append(render_value(key, value))
        else:
            out.append(chunk)
    out.extend(render_value(k, v) for k, v in pending.items() if v is not None)
    block = "".join(out)
    if block and not block.endswith("\n"):
        block += "\n"
    return text[:start] + block + text[end:]
