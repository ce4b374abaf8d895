"""Edges of the knowledge graph, read from one memory's text (no model, no file access).

``extract(memory)`` returns the memory's own *keys* (the names it answers
to: its name, the last segment of its name, its title, front-matter
``entity``/``aliases``, its file path, the ADR ids its name or title carries)
and its *edges* (typed references, each with a 1-based line and a detail).

A key is ``kind:value``, normalised so that every way of writing one thing
gives one key: ``mem:`` (memory names, titles, aliases, wikilink targets, as
slugs), ``adr:12`` (``ADR-012``, ``adr-12``), ``issue:#123`` and
``issue:owner/repo#123``, ``commit:`` (the first 7 hex digits), ``path:``
(code and file paths), ``tag:`` and ``category:`` (observation lines).
An edge's target is a key, not a row: it resolves to whichever memories hold
that key now, so a link to a memory written later resolves when it is written.

What is read: front-matter relations (``related``, ``supersedes``,
``superseded_by``, ``depends_on``, ``anchors``, any value that is a
``[[Target]]`` or a list of them), wikilinks, ``mem:`` references, markdown
links to ``.md`` files inside the root, relation lines
(``- depends_on [[Target]] (why)``), observation lines
(``- [category] text #tag``) and mentions: ADR ids, issue and PR references,
commit hashes next to a git word, and code paths with a known extension
(``memrouter.index.graph.mentions`` finds those).
Fenced code and front matter are never read as text; inline code is read for
mentions only. Work is bounded: at most ``MAX_EDGES`` edges per memory.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from memrouter.core.model import Memory
from memrouter.index.graph.commits import HEX
from memrouter.index.graph.mentions import ADR, key_label, mentions, path_key

__all__ = ["MAX_EDGES", "Extracted", "RawEdge", "extract", "key_label", "name_key", "query_keys", "word_runs"]

MAX_EDGES = 1000
_MAX_TARGET = 200

# Front-matter keys and the edge type each names (any other key holding [[links]] names its own type).
_FRONT_MATTER_TYPES = {
    "related": "relates_to",
    "relates_to": "relates_to",
    "supersedes": "supersedes",
    "superseded_by": "superseded_by",
    "depends_on": "depends_on",
    "implements": "implements",
    "anchors": "about_code",
}

_WIKILINK = re.compile(r"\[\[(?!:)([^\[\]\n|]{1,300})(?:\|[^\[\]\n]{0,300})?\]\]")
_MEM_REF = re.compile(r"(?<![\w/.-])mem:([A-Za-z0-9_](?:[\w./-]{0,200}\w)?)")
_MD_LINK = re.compile(r"\]\(\s*<?([^)\s>]{1,300}\.md)(?:#[^)\s]*)?>?(?:\s+\"[^\"]*\")?\s*\)")
_RELATION_LINE = re.compile(
    r"\s{0,3}[-*+]\s+([A-Za-z_][\w-]{0,60})\s+\[\[([^\[\]\n|]{1,300})(?:\|[^\]\n]*)?\]\]\s*(?:\((.{0,300})\))?\s*$"
)
_OBSERVATION = re.compile(r"\s{0,3}[-*+]\s+\[([A-Za-z][\w -]{0,40})\]\s+(?!\()(.+)$")
_TAG = re.compile(r"(?<![\w&#])#([A-Za-z][\w/-]{0,60})")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_SLUG_RUN = re.compile(r"[^\w]+")
# Lower-case letter-and-digit runs joined by single "-" or "_", in "/"-separated segments: what _slug keeps as is.
_SLUGGED = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*(?:/[a-z0-9]+(?:[-_][a-z0-9]+)*)*")
_WORD_RUN = re.compile(r"[^\W_]+")
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
# Lines up to this long have their links cached (longer ones are read lazily, so that MAX_EDGES bounds the work).
_CACHED_LINE = 1000


class RawEdge(NamedTuple):
    """One reference from a memory: ``type`` to key ``key`` (shown as ``label``), at ``line``.

    A named tuple, not a dataclass: a build makes some 10,000 of them, and a tuple is made fastest.
    """

    type: str
    key: str
    label: str
    line: int
    detail: str | None = None


# A mention's edge before its line is counted.
_PLACE = RawEdge("", "", "", 0)
# A link as read from a line: (type, key, label, detail).
Link = tuple[str, str, str, str | None]


@dataclass(frozen=True, slots=True)
class Extracted:
    """A memory's own keys (key -> label; ``declared`` ones came from ``entity``/``aliases``) and edges."""

    keys: dict[str, str]
    edges: tuple[RawEdge, ...]


def _slug(text: str) -> str:
    return _SLUG_RUN.sub("-", text.strip().lower()).strip("-_")


def word_runs(text: str) -> list[str]:
    """The letter-and-digit runs of ``text`` lowercased, as they stand in its ``name_key``."""
    return _WORD_RUN.findall(text.lower())


@lru_cache(maxsize=16384)  # the same targets, titles and names come back across a build
def name_key(text: str) -> str:
    """The ``mem:`` key of a memory name, title, alias or wikilink target (slugged per path segment)."""
    if _SLUGGED.fullmatch(text):
        return "mem:" + text  # most names are slugs already: slugging them changes nothing
    return _slugged_key(text)


def _slugged_key(text: str) -> str:
    text = text.strip().removesuffix(".md")
    segments = [_slug(part) for part in text.replace("\\", "/").split("/")]
    return "mem:" + "/".join(part for part in segments if part)


def _memory_keys(memory: Memory) -> dict[str, str]:
    name = memory.name
    base = name.rsplit("/", 1)[-1]
    keys = {name_key(name): name, name_key(base): name, f"path:{name}.md": name, f"path:{base}.md": name}
    if memory.title and len(memory.title) <= _MAX_TARGET:
        keys.setdefault(name_key(memory.title), memory.title)
    if "entity" in memory.extra or "aliases" in memory.extra:
        for value in _declared(memory):
            keys.setdefault(name_key(value), value)
    # Only A, D and R lower to a, d and r: a name without "adr" holds no ADR id.
    if "adr" in base.lower() and (name_adr := ADR.search(base)) is not None:
        keys.setdefault(f"adr:{int(name_adr.group(1))}", key_label(f"adr:{int(name_adr.group(1))}"))
    if (title_adr := ADR.match(memory.title.strip())) is not None:
        keys.setdefault(f"adr:{int(title_adr.group(1))}", key_label(f"adr:{int(title_adr.group(1))}"))
    return {key: label for key, label in keys.items() if key.partition(":")[2]}


def _declared(memory: Memory) -> list[str]:
    values: list[str] = []
    for field in ("entity", "aliases"):
        raw = memory.extra.get(field)
        items = raw if isinstance(raw, list) else [raw]
        values.extend(str(item).strip() for item in items if isinstance(item, str | int) and str(item).strip())
    return [value for value in values if len(value) <= _MAX_TARGET][:50]


def _front_matter_edges(memory: Memory, end_line: int) -> Iterator[RawEdge]:
    """The relations in the front matter (its first ``end_line`` lines)."""
    fields: dict[str, object] = dict(memory.extra)
    fields.update(supersedes=memory.supersedes, superseded_by=memory.superseded_by, anchors=list(memory.anchors))
    lines: dict[str, int] | None = None  # each field's line, read when a field holds a relation
    for field, value in fields.items():
        if value is None or value == []:
            continue  # most fields hold no relation: supersedes, superseded_by and anchors mostly none
        items = value if isinstance(value, list) else [value]
        texts = [str(item) for item in items if isinstance(item, str)][:MAX_EDGES]
        named = _FRONT_MATTER_TYPES.get(field.lower())
        links = [m.group(1) for text in texts for m in _WIKILINK.finditer(text)]
        if named is None and not links:
            continue  # an ordinary front-matter field, not a relation
        if lines is None:
            lines = _front_matter_lines(memory.text, end_line)
        line = lines.get(field, 1)
        edge_type = named or _slug(field).replace("-", "_") or "relates_to"
        targets = links or [text.strip() for text in texts]
        for target in targets:
            target = target.strip().split("#", 1)[0]
            if not target or len(target) > _MAX_TARGET:
                continue
            if edge_type == "about_code":
                key = path_key(target) if "." in target.rsplit("/", 1)[-1] else name_key(target)
                if key is not None:
                    yield RawEdge(edge_type, key, target, line)
            else:
                yield RawEdge(edge_type, name_key(target), target, line)


def _front_matter_lines(text: str, end_line: int) -> dict[str, int]:
    lines: dict[str, int] = {}
    for number, line in enumerate(text.split("\n", end_line)[:end_line], 1):
        key = line.split(":", 1)[0]
        if ":" in line and key and not key[0].isspace():
            lines.setdefault(key.strip(), number)
    return lines


def _holds(text: str, needle: str) -> bool:
    """``needle in text``, faster when ``text`` lacks its first character (found by ``memchr``, unlike a longer needle)."""
    return needle[0] in text and needle in text


def _blank_code(line: str) -> str:
    """``line`` with inline code spans blanked (same length, so offsets hold)."""
    return _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line) if "`" in line else line


def _mention_edges(text: str, first: int) -> Iterator[RawEdge]:
    """Mentions in ``text`` (lines numbered from ``first``), links blanked first (they are links, not mentions)."""
    text = _blank_links(text)
    line, counted = first, 0  # each kind's mentions come in order, so counting lines resumes within a kind
    for offset, kind, key, label in mentions(text):
        if offset < counted:
            line, counted = first, 0
        line += text.count("\n", counted, offset)
        counted = offset
        yield RawEdge(kind, key, label, line)


def _link_edges(line: str, number: int, folder: str) -> Iterator[RawEdge]:
    """The links on ``line``, line ``number`` of a memory in ``folder``."""
    for kind, key, label, detail in _links(line, folder):
        yield RawEdge(kind, key, label, number, detail)


def _links(line: str, folder: str) -> Iterable[Link]:
    return _line_links(line, folder) if len(line) <= _CACHED_LINE else _read_links(line, folder)


@lru_cache(maxsize=8192)  # an index memory's lines come back in other index memories
def _line_links(line: str, folder: str) -> tuple[Link, ...]:
    return tuple(_read_links(line, folder))


def _read_links(line: str, folder: str) -> Iterator[Link]:
    """(type, key, label, detail) of each link on ``line``, in order."""
    prose = _blank_code(line)
    if "[[" in prose:
        relation = _RELATION_LINE.match(prose)
        if relation is not None:
            target = relation.group(2).split("#", 1)[0].strip()
            if target:
                kind = relation.group(1).lower().replace("-", "_")
                yield kind, name_key(target), target, (relation.group(3) or "").strip() or None
        else:
            for match in _WIKILINK.finditer(prose):
                target = match.group(1).split("#", 1)[0].strip()
                if target and len(target) <= _MAX_TARGET:
                    yield "links_to", name_key(target), target, None
    if "mem:" in line:  # read in inline code too: `mem:name` is how Serena's memories cite each other
        for match in _MEM_REF.finditer(line):
            yield "links_to", name_key(match.group(1)), match.group(1), None
    if ".md" in prose and "](" in prose:
        for match in _MD_LINK.finditer(prose):
            target = match.group(1)
            if "://" in target or target.startswith(("/", "mailto:")):
                continue
            key = _link_key(folder, target)
            if key is not None:  # a link leaving the root names no memory
                yield "links_to", key, target, None
    if "] " not in prose:
        return  # no observation line: "- [category] text"
    if (observation := _OBSERVATION.match(prose)) is not None and observation.group(1).strip().lower() != "x":
        category = observation.group(1).strip()
        detail = observation.group(2).strip()[:300]
        yield "observation", "category:" + _slug(category), category, detail
        for tag in _TAG.finditer(observation.group(2)):
            yield "tagged", "tag:" + tag.group(1).lower(), "#" + tag.group(1), None


@lru_cache(maxsize=16384)  # an index memory links the same files from the same folder
def _link_key(folder: str, target: str) -> str | None:
    """The ``path:`` key of markdown link ``target`` written in ``folder`` (``None``: it leaves the root)."""
    return path_key(posixpath.join(folder, target))


def _spaces(match: re.Match[str]) -> str:
    return " " * (match.end() - match.start())


def _blank_links(text: str, wikilinks: bool | None = None) -> str:
    """``text`` with wikilinks and markdown links to ``.md`` files blanked: those are links, not mentions.
    ``wikilinks``: whether ``text`` holds a ``[[``, when the caller knows."""
    if wikilinks is None:
        wikilinks = _holds(text, "[[")
    if not wikilinks:  # markdown links only: they never overlap
        return _MD_LINK.sub(_spaces, text) if _holds(text, "](") else text
    spans = [m.span() for m in _WIKILINK.finditer(text)]
    if _holds(text, "]("):
        spans += [m.span() for m in _MD_LINK.finditer(text)]
    if not spans:
        return text
    spans.sort()
    pieces, kept = [], 0
    for start, end in spans:
        if start >= kept:  # a markdown link inside a wikilink's label is blanked already
            pieces.append(text[kept:start])
            pieces.append(" " * (end - start))
            kept = end
    pieces.append(text[kept:])
    return "".join(pieces)


def _fence_lines(text: str) -> Iterator[re.Match[str]]:
    """``_FENCE_LINE`` matches in ``text``, in order: only lines holding three backticks or tildes are tried."""
    starts: set[int] = set()
    for marker in ("```", "~~~") if "~" in text else ("```",):
        at = text.find(marker)
        while at >= 0:
            starts.add(text.rfind("\n", 0, at) + 1)
            end = text.find("\n", at)
            at = text.find(marker, end) if end >= 0 else -1
    for start in sorted(starts):
        if (match := _FENCE_LINE.match(text, start)) is not None:
            yield match


def _prose(memory: Memory) -> tuple[int, str]:
    """(first line number, body) with fenced code blanked to empty lines, so line numbers hold.

    A fence opens on a line of three or more backticks or tildes (at most
    three spaces in) and closes on a line of at least as many of the same
    character, as ``memrouter.store.markdown`` reads them; an unclosed fence
    runs to the end. Only lines that start with a fence character are looked at.
    """
    text, body = memory.text, memory.body
    first = text.count("\n", 0, len(text) - len(body)) + 1
    if not _holds(body, "```") and not _holds(body, "~~~"):
        return first, body
    pieces: list[str] = []
    kept = 0  # where the text not yet copied starts
    opened: tuple[int, str] | None = None  # (offset of the opening line, its marker)
    for match in _fence_lines(body):
        marker, rest = match.group(1), match.group(2)
        if opened is None:
            if marker[0] != "`" or "`" not in rest:
                opened = (match.start(), marker)
        elif marker[0] == opened[1][0] and len(marker) >= len(opened[1]) and not rest.strip():
            pieces.append(body[kept : opened[0]])
            pieces.append("\n" * body.count("\n", opened[0], match.end()))
            kept, opened = match.end(), None
    if opened is not None:
        pieces.append(body[kept : opened[0]])
        pieces.append("\n" * body.count("\n", opened[0]))
        kept = len(body)
    pieces.append(body[kept:])
    return first, "".join(pieces)


def _link_lines(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets, in order, of the lines of ``text`` holding ``[`` or ``mem:``."""
    lines: dict[int, int] = {}
    for trigger in ("[", "mem:"):
        at = text.find(trigger)
        while at >= 0:
            end = text.find("\n", at)
            lines[text.rfind("\n", 0, at) + 1] = len(text) if end < 0 else end
            if end < 0:
                break
            at = text.find(trigger, end)
    return sorted(lines.items())


def extract(memory: Memory) -> Extracted:
    """The keys and edges of ``memory`` (see the module docstring); never reads a file."""
    keys = _memory_keys(memory)
    folder = posixpath.dirname(memory.name)
    front_lines = memory.text.count("\n", 0, len(memory.text) - len(memory.body))
    edges: dict[tuple[str, str], RawEdge] = {}

    def add(found: Iterable[RawEdge]) -> bool:
        for edge in found:
            if edge.key in keys or not edge.key.partition(":")[2]:
                continue  # a self-reference, or nothing named
            if (edge.type, edge.key) not in edges:
                edges[(edge.type, edge.key)] = edge
                if len(edges) >= MAX_EDGES:
                    return False
        return True

    if add(_front_matter_edges(memory, front_lines)):
        first, prose = _prose(memory)
        complete, wikilinks = True, False  # a "[[" stands on a line holding "[": one of the lines read here
        if "[" in prose or "mem:" in prose:
            number, counted = first, 0
            for start, end in _link_lines(prose):  # only the lines that may hold a link
                number += prose.count("\n", counted, start)
                counted = start
                line = prose[start:end]
                wikilinks = wikilinks or "[[" in line
                for kind, key, label, detail in _links(line.rstrip("\r"), folder):  # as add() takes them
                    if key in keys or not key.partition(":")[2] or (kind, key) in edges:
                        continue
                    edges[(kind, key)] = RawEdge(kind, key, label, number, detail)
                    if len(edges) >= MAX_EDGES:
                        complete = False
                        break
                if not complete:
                    break
        if complete:
            _add_mentions(prose, first, keys, edges, wikilinks)
    return Extracted(keys, tuple(edges.values()))


def _add_mentions(
    prose: str, first: int, keys: Container[str], edges: dict[tuple[str, str], RawEdge], wikilinks: bool
) -> None:
    """``_mention_edges`` into ``edges``, as ``extract``'s ``add`` would: a mention already
    there (most are repeats) is skipped before its line is counted or its edge made.
    ``wikilinks``: whether ``prose`` holds a ``[[``."""
    text = _blank_links(prose, wikilinks)
    new: list[tuple[int, str, str, str]] = []
    for offset, kind, key, label in mentions(text):
        if (kind, key) in edges or key in keys or not key.partition(":")[2]:
            continue
        edges[(kind, key)] = _PLACE  # holds its place in the order; its line is counted below
        new.append((offset, kind, key, label))
        if len(edges) >= MAX_EDGES:
            break
    line, counted = first, 0
    for offset, kind, key, label in sorted(new):  # by offset: the lines are counted in one pass
        line += text.count("\n", counted, offset)
        counted = offset
        edges[(kind, key)] = RawEdge(kind, key, label, line)


def query_keys(query: str, vocabulary: Container[str] | None = None) -> list[str]:
    """The keys a search query names: its mentions and links, then its word runs as names (longest first).

    With ``vocabulary`` (every letter-and-digit run of the known ``mem:`` keys) a run holding a word with
    another run is skipped: no known name can come of it.
    """
    found: dict[str, None] = {}
    for edge in (*_link_edges(query, 1, ""), *_mention_edges(query, 1)):
        found.setdefault(edge.key)
    for match in ADR.finditer(query):  # a query needs no context word
        found.setdefault(f"adr:{int(match.group(1))}")
    for match in HEX.finditer(query):
        if any(c.isdigit() for c in match.group(0)) and not match.group(0).isdigit():
            found.setdefault("commit:" + match.group(0)[:7])
    words = [w for w in re.findall(r"[\w][\w./-]*", query.lower()) if w]
    # "md" may be the ".md" that name_key drops.
    usable = [vocabulary is None or all(t in vocabulary or t == "md" for t in word_runs(w)) for w in words]
    for size in range(min(6, len(words)), 0, -1):
        for start in range(len(words) - size + 1):
            if all(usable[start : start + size]):
                found.setdefault(name_key(" ".join(words[start : start + size])))
    return [key for key in found if key.partition(":")[2]]
