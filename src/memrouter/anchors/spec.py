"""An anchor as written: a file, a symbol in it, a range of its lines, or a commit.

The forms of front matter's ``anchors:`` list (and of what inference finds):

- ``path``: a file, relative to the repository's top folder;
- ``path#Symbol``: a class, function or method in it, dotted (``path#Invoice.total``); ``path::Symbol``
  (a pytest id) and ``Type::method`` mean the same;
- ``path:L10-L40`` (also ``path:10-40``, ``path#L10-L40``, ``path:10``): lines, followed through later
  edits by their content;
- a commit: 7 to 40 hex digits, or ``commit:<id>``.

``parse_anchor`` never raises: an entry it cannot take (outside the repository,
an absolute path, a control character) comes back with its ``problem`` set,
which verification reports for that anchor alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["EXPLICIT", "INFERRED", "Anchor", "parse_anchor", "clean_path"]

EXPLICIT, INFERRED = "explicit", "inferred"
_COMMIT = re.compile(r"(?:commit:)?([0-9a-f]{7,40})", re.IGNORECASE)
_LINES = re.compile(r"^(?P<path>.+?)(?::|#)L?(?P<first>\d{1,7})(?:-L?(?P<last>\d{1,7}))?$")
_SYMBOL = re.compile(r"^(?P<path>[^#]+?)(?:#|::)(?P<symbol>[^\s#]+)$")
MAX_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Anchor:
    """One anchor of a memory: its parts (``None`` when absent), where it came from, and any problem."""

    written: str
    path: str | None = None
    symbol: str | None = None
    lines: tuple[int, int] | None = None
    commit: str | None = None
    origin: str = EXPLICIT
    line: int | None = None  # the memory's line it was inferred from
    problem: str | None = None

    @property
    def kind(self) -> str:
        """``commit``, ``lines``, ``symbol`` or ``file``."""
        if self.commit is not None:
            return "commit"
        if self.lines is not None:
            return "lines"
        return "symbol" if self.symbol is not None else "file"

    @property
    def key(self) -> str:
        """The anchor in its canonical written form (``path#Symbol``, ``path:L1-L9``, ``commit:<id>``)."""
        if self.commit is not None:
            return f"commit:{self.commit}"
        if self.lines is not None:
            return f"{self.path}:L{self.lines[0]}-L{self.lines[1]}"
        return f"{self.path}#{self.symbol}" if self.symbol else str(self.path or self.written)

    def to_data(self) -> dict[str, object]:
        """Plain data for the index's cache (``from_data`` reads it back)."""
        return {
            "written": self.written, "path": self.path, "symbol": self.symbol,
            "lines": list(self.lines) if self.lines else None, "commit": self.commit, "origin": self.origin,
            "line": self.line, "problem": self.problem,
        }  # fmt: skip

    @classmethod
    def from_data(cls, data: dict[str, object]) -> Anchor:
        lines = data.get("lines")
        return cls(
            written=str(data["written"]), path=_opt(data.get("path")), symbol=_opt(data.get("symbol")),
            lines=(int(lines[0]), int(lines[1])) if isinstance(lines, list) and len(lines) == 2 else None,
            commit=_opt(data.get("commit")), origin=str(data.get("origin", EXPLICIT)),
            line=line if isinstance(line := data.get("line"), int) else None, problem=_opt(data.get("problem")),
        )  # fmt: skip


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


# Unicode's control (Cc) and surrogate (Cs) characters, as one class the pattern engine scans in C.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CLEAN = re.compile(r"[\w@+-][\w.@+-]*(?:/[\w@+-][\w.@+-]*)*")


def clean_path(text: str) -> tuple[str | None, str | None]:
    """(the repository-relative POSIX path ``text`` names, None) or (None, why it cannot be one)."""
    text = text.strip()
    if _CLEAN.fullmatch(text) and not text.startswith(".git/") and len(text) <= MAX_CHARS:
        return text, None  # already plain: no dots to resolve, nothing absolute
    if not text:
        return None, "an empty path"
    if len(text) > MAX_CHARS:
        return None, f"a path of {len(text)} characters (at most {MAX_CHARS})"
    if _CONTROL.search(text):
        return None, "a path with a control character"
    if "\\" in text:
        return None, f"{text!r} uses '\\': separate folders with '/'"
    pure = PurePosixPath(text.removeprefix("./"))
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", text):
        return None, f"{text!r} is an absolute path: anchors are relative to the repository's top folder"
    parts: list[str] = []
    for part in pure.parts:
        if part == "..":
            if not parts:
                return None, f"{text!r} is outside the repository"
            parts.pop()
        elif part != ".":
            parts.append(part)
    if not parts:
        return None, f"{text!r} names the repository itself, not a file in it"
    if parts[0] == ".git":
        return None, f"{text!r} is inside .git, not a file of the repository"
    return "/".join(parts), None


def parse_anchor(entry: object) -> Anchor:
    """One entry of front matter's ``anchors:`` list as an ``Anchor`` (see the module docstring)."""
    written = str(entry).strip() if entry is not None else ""
    if not written:
        return Anchor(written, problem="an empty anchor")
    commit = _COMMIT.fullmatch(written)
    if commit is not None and ("/" not in written and "." not in written):
        return Anchor(written, commit=commit.group(1).lower())
    lines = _LINES.match(written)
    if lines is not None and "#" not in lines.group("path"):
        path, problem = clean_path(lines.group("path"))
        first = int(lines.group("first"))
        last = int(lines.group("last") or first)
        if problem is None and (first < 1 or last < first):
            problem = f"{written!r}: lines run from 1 up, the first no later than the last"
        return Anchor(written, path=path, lines=(first, last) if problem is None else None, problem=problem)
    symbol = _SYMBOL.match(written)
    if symbol is not None:
        path, problem = clean_path(symbol.group("path"))
        name = symbol.group("symbol").replace("::", ".").removesuffix("()")
        if problem is None and not re.fullmatch(r"[\w$.\-]+", name):
            problem = f"{written!r}: {name!r} is not a symbol name (letters, digits, '_', '-', '$', dots)"
        return Anchor(written, path=path, symbol=name if problem is None else None, problem=problem)
    path, problem = clean_path(written)
    return Anchor(written, path=path, problem=problem)
