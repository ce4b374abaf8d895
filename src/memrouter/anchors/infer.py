"""Anchors inferred from a memory's text: the repository's files and definitions it names.

What counts (``[anchors] infer``, on by default):

- a path relative to the repository's top folder that is a file there now or
  was one in its history, in backticks, as a link target (a relative link is
  read from the memory's folder) or in plain text (plain text needs a ``/``);
  with ``:12``, ``:12-40`` or ``#L12-L40`` it anchors those lines, with
  ``#Symbol`` or ``::Symbol`` that definition;
- a file name alone in backticks (``retry.ps1``) that names exactly one file;
- a backticked name that names exactly one definition in the repository's
  files now, if it is distinctive: a dot, ``::``, ``()``, an underscore,
  camelCase or a PowerShell ``Verb-Noun`` (a plain word such as ``scratch``
  or ``test`` names a definition by accident more often than not).

What does not: anything inside a fenced code block (an example is not an
anchor), a command line in backticks, a folder, a memory file (that is a
reference between memories), a path whose file was already gone when the
memory was written (checked by ``memrouter.anchors.freshness``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memrouter.anchors.spec import INFERRED, Anchor, clean_path
from memrouter.anchors.symbols import language_for

__all__ = ["DEFINITION_LINE", "Known", "definition_names", "distinctive", "infer_anchors", "spans"]

_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*$", re.MULTILINE)
_CODE = re.compile(r"(`+)([^`\n]+?)\1")
_LINK = re.compile(r"\[[^\]\n]*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
_PLAIN = re.compile(r"(?<![\w/.@:-])((?:\.{1,2}/)?[\w.-]+(?:/[\w.@-]+)+(?:(?::|#L)\d+(?:-L?\d+)?|(?:#|::)[\w.$-]+)?)")
_SLASH_LINE = re.compile(r"^[^\n/]*/[^\n]*", re.MULTILINE)
_SUFFIX = re.compile(
    r"^(?P<path>.+?)(?:(?::|#L)(?P<first>\d{1,7})(?:-L?(?P<last>\d{1,7}))?|(?:#|::)(?P<symbol>[\w.$:-]+))$"
)
_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*(?:\(\))?$")
_VERB_NOUN = re.compile(r"^[A-Z][a-z]+-[A-Z][A-Za-z0-9]+$")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_SPACE = re.compile(r"\s")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_TRIM = "\"'()[]{}<>,;!?"
_FILE_SUFFIXES = frozenset(
    ".py .pyi .ts .tsx .js .jsx .mjs .cjs .go .rs .java .cs .sh .bash .ps1 .psm1 .psd1 .md .json .jsonl .yml .yaml"
    " .toml .txt .cfg .ini .lock .xml .html .css .sql .c .h .cpp .rb .kt .swift .env".split()
)
MAX_SPAN = 300  # a longer backtick span is code, not a name


@dataclass(frozen=True, slots=True)
class Known:
    """What inference checks a name against: files (now or in history), file names, the memories' folder,
    and the definitions a name has (``definitions(name) -> [(path, dotted name), ...]``)."""

    is_file: Callable[[str], bool]
    by_basename: Callable[[str], list[str]]
    memories: str  # the memories folder, relative to the repository ("" when it is the top folder)
    definitions: Callable[[str], list[tuple[str, str]]]


_NEWLINE = re.compile("\n")


def spans(text: str) -> Iterable[tuple[int, str, str]]:
    """(line number, where, token) of what may name a file or symbol: ``code``, ``link`` or ``plain``;
    fenced blocks are skipped. The patterns run over whole stretches of text between fences (in C), and line
    numbers are counted only for what they find."""
    starts = [0, *(found.end() for found in _NEWLINE.finditer(text))]
    for offset, stretch in _outside_fences(text):
        found: list[tuple[int, str, str]] = []
        if "`" in stretch:
            found += [(m.start(), "code", m.group(2).strip()) for m in _CODE.finditer(stretch)]
            stretch = _CODE.sub(lambda m: " " * len(m.group(0)), stretch)
        if "](" in stretch:
            found += [(m.start(1), "link", m.group(1)) for m in _LINK.finditer(stretch)]
            stretch = _LINK.sub(lambda m: " " * len(m.group(0)), stretch)
        if "/" in stretch:  # tried only on the lines holding one (a plain path never crosses a line): far fewer places
            found += [
                (m.start(1), "plain", m.group(1))
                for line in _SLASH_LINE.finditer(stretch) for m in _PLAIN.finditer(stretch, line.start(), line.end())
            ]  # fmt: skip
        for at, where, token in sorted(found):
            yield bisect_right(starts, offset + at), where, token


def _outside_fences(text: str) -> Iterable[tuple[int, str]]:
    """(offset, text) of each stretch outside fenced code blocks (an unclosed fence runs to the end)."""
    position = 0
    while True:
        opening = _FENCE_OPEN.search(text, position)
        if opening is None:
            yield position, text[position:]
            return
        yield position, text[position : opening.start()]
        marker = opening.group(1)
        closing = re.compile(rf"^[ \t]{{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, opening.end())
        if end is None:
            return
        position = end.end()


def distinctive(name: str) -> bool:
    """Whether a backticked name is specific enough to stand for one definition (see the module docstring)."""
    if _VERB_NOUN.match(name):
        return True
    bare = name.removesuffix("()")
    core = bare.strip("_")
    return (
        bool(
            "." in bare
            or "::" in bare
            or name.endswith("()")
            or "_" in core
            or _CAMEL.search(bare)
            or bare.startswith("_")
        )
        and len(core) > 2
    )


def infer_anchors(text: str, memory_dir: str, known: Known, *, first_line: int = 1) -> list[Anchor]:
    """The anchors ``text`` (a memory's body, starting at line ``first_line`` of its file) infers, in order,
    each once; ``memory_dir`` is the memory file's folder relative to the repository."""
    found: dict[str, Anchor] = {}

    def add(anchor: Anchor) -> None:
        found.setdefault(anchor.key, anchor)

    for number, where, token in spans(text):
        line = number + first_line - 1
        token = token.strip().strip(_TRIM).rstrip(".:")
        if not token or len(token) > MAX_SPAN or _URL.match(token):
            continue
        if where == "code" and _SPACE.search(token):
            continue  # a command line or a phrase
        anchor = _path_anchor(token, where, memory_dir, known, line)
        if anchor is not None:
            if not _in_memories(anchor.path, known.memories):
                add(anchor)
            continue
        if where != "code":
            continue
        single = _basename_anchor(token, known, line)
        if single is not None:
            if not _in_memories(single.path, known.memories):
                add(single)
            continue
        symbol = _symbol_anchor(token, known, line)
        if symbol is not None:
            add(symbol)
    return list(found.values())


def _in_memories(path: str | None, memories: str) -> bool:
    return path is not None and (memories == "" or path == memories or path.startswith(memories + "/"))


def _path_anchor(token: str, where: str, memory_dir: str, known: Known, line: int) -> Anchor | None:
    """A file (with its lines or symbol) that ``token`` names, if it is one."""
    if "/" not in token and where != "link":
        return None
    parts = _SUFFIX.match(token)
    path_text = parts.group("path") if parts else token
    if where == "link" and "#" in path_text:
        path_text = path_text.split("#", 1)[0]  # a heading of a document, not a symbol
    if where != "link" and known.is_file(path_text):
        path: str | None = path_text  # the common case: written as the repository names it
    else:
        path = _located(path_text, where, memory_dir, known)
    if path is None:
        return None
    return _with_suffix(token, path, parts, where, line)


def _located(path_text: str, where: str, memory_dir: str, known: Known) -> str | None:
    candidates = []
    if where == "link" or path_text.startswith(("./", "../")):
        joined = f"{memory_dir}/{path_text}" if memory_dir else path_text
        candidates.append(clean_path(joined)[0])
    candidates.append(clean_path(path_text)[0] if not path_text.startswith("../") else None)
    return next((candidate for candidate in candidates if candidate and known.is_file(candidate)), None)


def _with_suffix(token: str, path: str, parts: re.Match[str] | None, where: str, line: int) -> Anchor:
    if parts is not None and parts.group("first"):
        first = int(parts.group("first"))
        last = int(parts.group("last") or first)
        if 1 <= first <= last:
            return Anchor(token, path=path, lines=(first, last), origin=INFERRED, line=line)
    if parts is not None and parts.group("symbol") and where != "link" and language_for(path) is not None:
        symbol = parts.group("symbol").replace("::", ".").strip(".")
        if symbol and not symbol.isdigit():
            return Anchor(token, path=path, symbol=symbol, origin=INFERRED, line=line)
    return Anchor(token, path=path, origin=INFERRED, line=line)


def _basename_anchor(token: str, known: Known, line: int) -> Anchor | None:
    """A file name alone (``retry.ps1``) that names exactly one file."""
    if "/" in token or not re.fullmatch(r"[\w.-]+\.[A-Za-z0-9]{1,8}", token) or token.startswith("."):
        return None
    matches = known.by_basename(token)
    if len(matches) != 1:
        return None
    return Anchor(token, path=matches[0], origin=INFERRED, line=line)


def _symbol_anchor(token: str, known: Known, line: int) -> Anchor | None:
    """A distinctive name that names exactly one definition."""
    if not (_NAME.match(token) or _VERB_NOUN.match(token)) or not distinctive(token):
        return None
    if token[token.rfind(".") :].lower() in _FILE_SUFFIXES:
        return None  # a file name that names no single file
    name = token.removesuffix("()").replace("::", ".")
    matches = sorted(set(known.definitions(name)))
    if len(matches) != 1:
        return None
    path, dotted = matches[0]
    return Anchor(token, path=path, symbol=dotted, origin=INFERRED, line=line)


# Lines that define something, for ``git grep -E`` (POSIX classes: git's regex engine has no ``\s``).
_MODIFIERS = (
    "export|default|async|pub|pub\\([a-z]+\\)|public|private|protected|internal|static|abstract|final|sealed"
    "|partial|unsafe|extern|readonly|declare|override|virtual"
)
_KEYWORDS = (
    "def|class|function|func|fn|interface|type|enum|struct|trait|record|mod|const|let|var|filter|Function|Filter"
)
DEFINITION_LINE = (
    f"^[[:space:]]*(({_MODIFIERS})[[:space:]]+)*({_KEYWORDS})[[:space:]]+"
    "|^[A-Z_][A-Z0-9_]*[[:space:]]*(:[^=]*)?=[^=]"
    "|^[[:space:]]*[A-Za-z_][A-Za-z0-9_-]*[[:space:]]*\\(\\)[[:space:]]*\\{"
)
_DEFINED = re.compile(
    rf"^\s*(?:(?:{_MODIFIERS})\s+)*(?:{_KEYWORDS})\s+(?:\([^)]*\)\s*)?(?:[\w$]+:)?(?P<name>[A-Za-z_$][\w$-]*)"
    r"|^(?P<constant>[A-Z_][A-Z0-9_]*)\s*(?::[^=]*)?=(?!=)"
    r"|^\s*(?P<shell>[A-Za-z_][\w-]*)\s*\(\)\s*\{"
)


def definition_names(line: str) -> str | None:
    """The name a definition line (as ``DEFINITION_LINE`` finds them) defines, or None."""
    found = _DEFINED.match(line)
    if found is None:
        return None
    return found.group("name") or found.group("constant") or found.group("shell")
