"""Edits of other tools' files that keep every byte they do not change.

``json_member`` sets one member of a JSON object (``mcpServers.memrouter``)
by inserting or replacing its text alone: the rest of the file, other
servers, their order, spacing and comments (VS Code's ``mcp.json`` is JSON
with comments) stay as they were. ``marked_section`` replaces, or appends,
the text between two HTML comment markers in a markdown file (AGENTS.md,
CLAUDE.md) and nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memrouter.core.errors import InvalidInput

__all__ = ["json_member", "marked_section", "read_marked", "strip_json_comments"]


@dataclass(frozen=True, slots=True)
class _Member:
    key: str
    start: int  # where the member's key begins
    value_start: int
    value_end: int


def _skip_space(text: str, at: int) -> int:
    """The offset of the next character that is neither white space nor inside a comment."""
    while at < len(text):
        if text[at] in " \t\r\n":
            at += 1
        elif text.startswith("//", at):
            newline = text.find("\n", at)
            at = len(text) if newline < 0 else newline + 1
        elif text.startswith("/*", at):
            end = text.find("*/", at + 2)
            if end < 0:
                raise ValueError("an unclosed /* comment")
            at = end + 2
        else:
            break
    return at


def _string_end(text: str, at: int) -> int:
    """The offset just past the JSON string that opens at ``at``."""
    at += 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
        elif text[at] == '"':
            return at + 1
        else:
            at += 1
    raise ValueError("an unclosed string")


def _value_end(text: str, at: int) -> int:
    """The offset just past the JSON value (with comments allowed inside) that starts at ``at``."""
    if at >= len(text):
        raise ValueError("a value is missing")
    if text[at] == '"':
        return _string_end(text, at)
    if text[at] not in "[{":
        match = re.compile(r"[^\s,\]}/]+").match(text, at)
        if match is None:
            raise ValueError(f"unexpected {text[at]!r}")
        return match.end()
    depth = 0
    while at < len(text):
        at = _skip_space(text, at)
        if at >= len(text):
            break
        char = text[at]
        if char == '"':
            at = _string_end(text, at)
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1
    raise ValueError("an unclosed object or array")


def _members(text: str, at: int) -> tuple[list[_Member], int]:
    """The members of the object that opens at ``at`` and the offset of its closing brace."""
    if text[at] != "{":
        raise ValueError("not an object")
    members: list[_Member] = []
    at = _skip_space(text, at + 1)
    while at < len(text) and text[at] != "}":
        if text[at] != '"':
            raise ValueError(f"expected a key, found {text[at]!r}")
        key_end = _string_end(text, at)
        key = json.loads(text[at:key_end])
        colon = _skip_space(text, key_end)
        if colon >= len(text) or text[colon] != ":":
            raise ValueError("expected ':' after a key")
        value_start = _skip_space(text, colon + 1)
        value_end = _value_end(text, value_start)
        members.append(_Member(key, at, value_start, value_end))
        at = _skip_space(text, value_end)
        if at < len(text) and text[at] == ",":
            at = _skip_space(text, at + 1)
    if at >= len(text):
        raise ValueError("an unclosed object")
    return members, at


def _after_member(text: str, at: int) -> tuple[int, bool]:
    """Where a new member goes after the member ending at ``at``: past a comma already there and a
    comment on the same line; and whether the comma was there (JSON with comments allows a trailing one)."""
    spaces = re.compile(r"[ \t]*")
    end = spaces.match(text, at).end()  # type: ignore[union-attr]
    comma = text.startswith(",", end)
    if not comma:
        return at, False
    at = spaces.match(text, end + 1).end()  # type: ignore[union-attr]
    if text.startswith("//", at):
        newline = text.find("\n", at)
        return (len(text) if newline < 0 else newline), True
    if text.startswith("/*", at):
        close = text.find("*/", at)
        if close >= 0 and "\n" not in text[at:close]:
            return close + 2, True
    return end + 1, True


def strip_json_comments(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments and trailing commas removed (strings kept)."""
    out: list[str] = []
    at = 0
    while at < len(text):
        if text[at] == '"':
            end = _string_end(text, at)
            out.append(text[at:end])
            at = end
        elif text.startswith(("//", "/*"), at):
            at = _skip_space(text, at)
            out.append(" ")
        else:
            out.append(text[at])
            at += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def _indent_unit(text: str) -> str:
    """The indentation the file uses for one level (two spaces when it has none)."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    return re.match(r"[ \t]*", text[start:at]).group() if start <= at else ""  # type: ignore[union-attr]


def _render(value: Any, indent: str, unit: str) -> str:
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def json_member(text: str | None, path: tuple[str, ...], value: Any, *, replace: bool = False) -> str:
    """``text`` (a JSON object; None or blank: a new file) with the member at ``path`` set to ``value``.

    Objects along ``path`` are made when missing. An existing member is left as it is unless
    ``replace``; either way only its own text changes. ``InvalidInput`` when the file is not an object.
    """
    if text is None or not text.strip():
        data: Any = value
        for key in reversed(path):
            data = {key: data}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    unit = _indent_unit(text)
    try:
        at = _skip_space(text, 0)
        for depth, key in enumerate(path):
            members, close = _members(text, at)
            found = next((m for m in members if m.key == key), None)
            last = depth == len(path) - 1
            if found is not None and (not last or not replace):
                if last:
                    return text
                if text[found.value_start] != "{":
                    raise ValueError(f"{key!r} is not an object")
                at = found.value_start
                continue
            if found is not None:  # the last key, replaced: its value's text alone
                indent = _line_indent(text, found.start)
                new = _render(value, indent, unit)
                return text[: found.value_start] + new + text[found.value_end :]
            rest: Any = value
            for inner in reversed(path[depth + 1 :]):
                rest = {inner: rest}
            outer = _line_indent(text, at)
            indent = outer + unit
            entry = f"{json.dumps(key, ensure_ascii=False)}: {_render(rest, indent, unit)}"
            if members:
                tail, comma = _after_member(text, members[-1].value_end)
                return f"{text[:tail]}{'' if comma else ','}\n{indent}{entry}{text[tail:]}"
            return f"{text[: at + 1]}\n{indent}{entry}\n{outer}{text[close:]}"
    except ValueError as exc:
        raise InvalidInput(f"not a JSON object memrouter can edit: {exc}") from exc
    return text


SECTION = re.compile(
    r"<!-- memrouter:(?P<name>[a-z-]+) start -->\n(?P<body>.*?)<!-- memrouter:(?P=name) end -->\n?", re.S
)


def marked_section(text: str | None, name: str, body: str) -> str:
    """``text`` with the section ``name`` (between ``<!-- memrouter:<name> start -->`` and ``... end -->``)
    holding ``body``: replaced where the markers are, else appended after a blank line."""
    block = f"<!-- memrouter:{name} start -->\n{body.rstrip()}\n<!-- memrouter:{name} end -->\n"
    if not text:
        return block
    for match in SECTION.finditer(text):
        if match.group("name") == name:
            return text[: match.start()] + block + text[match.end() :]
    separator = "" if text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return text + separator + block


def read_marked(text: str) -> list[tuple[int, int]]:
    """The spans of every memrouter section in ``text`` (init's guidance, export's digest)."""
    return [match.span() for match in SECTION.finditer(text)]
