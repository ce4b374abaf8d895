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
commit hashes next to a git word, and code paths with a known extension.
Fenced code and front matter are never read as text; inline code is read for
mentions only. Work is bounded: at most ``MAX_EDGES`` edges per memory.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass

from memrouter.index.graph_commits import HEX, hex_runs, is_commit
from memrouter.model import Memory

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
_ADR = re.compile(r"(?<![A-Za-z0-9])ADR-?0*(\d{1,4})(?![\d])", re.IGNORECASE)
_ISSUE = re.compile(r"#(\d{1,6})(?!\w|-[^\d#>])")  # "#12-#14" and "#12-14" are ranges; "#12-intro" an anchor
_SEVERITY = re.compile(r"\((?:low|medium|high|critical|blocker)\)", re.IGNORECASE)
_ISSUE_LIST = re.compile(r"(?<![\w&])#\d{2,6}/$")
_REPO_BEFORE = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w.-]{0,38}/[\w.-]{1,100})$")
_ADR_LOWER = re.compile(r"adr-?0*(\d{1,4})(?!\d)")

_ISSUE_CONTEXT = re.compile(
    r"\b(?:issues?|prs?|pull|pull requests?|fix(?:es|ed)?|clos(?:es|ed|e)|resolv(?:es|ed|e)|refs?|see|merged|"
    r"tracked|follow-up|duplicate of)\b(?:[^#\n]|#\d{1,6}\b){0,24}$",
    re.IGNORECASE,
)
_PATH_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.*@/-"
_EXTENSIONS = (
    "py|pyi|ps1|psm1|psd1|sh|bash|zsh|ts|tsx|js|jsx|mjs|cjs|json|jsonl|yml|yaml|toml|md|go|rs|java|kt|cs|rb|"
    "php|cpp|hpp|sql|ini|cfg|txt|xml|html|css|swift|tf|proto|csv|lock|bicep"
)
_PATH_END = re.compile(r"\.(?:" + _EXTENSIONS + r")(?![\w/-])")
_PATH = re.compile(
    r"(?<![\w./:~$@%\\-])((?:\.{1,2}/)?(?:\.?[\w*@-][\w.*@-]*/){0,20}\.?[\w*@-][\w.*@-]*\.(?:"
    + _EXTENSIONS
    + r"))(?![\w/-])"
)
_TITLE_WORD = re.compile(r"[A-Z][a-z]+")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_SLUG_RUN = re.compile(r"[^\w]+")
_WORD_RUN = re.compile(r"[^\W_]+")
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


@dataclass(frozen=True, slots=True)
class RawEdge:
    """One reference from a memory: ``type`` to key ``key`` (shown as ``label``), at ``line``."""

    type: str
    key: str
    label: str
    line: int
    detail: str | None = None


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


def name_key(text: str) -> str:
    """The ``mem:`` key of a memory name, title, alias or wikilink target (slugged per path segment)."""
    text = text.strip().removesuffix(".md")
    segments = [_slug(part) for part in text.replace("\\", "/").split("/")]
    return "mem:" + "/".join(part for part in segments if part)


def _path_key(path: str) -> str | None:
    path = path.replace("\\", "/")
    if ".serena/memories/" in path:
        path = path.split(".serena/memories/", 1)[1]
    path = posixpath.normpath(path.removeprefix("./"))
    if path.startswith(("../", "/")) or path in ("..", "."):
        return None
    return "path:" + path


def key_label(key: str) -> str:
    """A readable label for a key (``adr:12`` -> ``ADR-012``, ``mem:x`` -> ``x``)."""
    kind, _, value = key.partition(":")
    if kind == "adr":
        return f"ADR-{int(value):03d}"
    if kind in ("issue", "tag"):
        return value if kind == "issue" else "#" + value
    return value


def _memory_keys(memory: Memory) -> dict[str, str]:
    keys = {name_key(memory.name): memory.name, name_key(memory.name.rsplit("/", 1)[-1]): memory.name}
    keys[f"path:{memory.name}.md"] = memory.name
    keys[f"path:{memory.name.rsplit('/', 1)[-1]}.md"] = memory.name
    if memory.title and len(memory.title) <= _MAX_TARGET:
        keys.setdefault(name_key(memory.title), memory.title)
    for value in _declared(memory):
        keys.setdefault(name_key(value), value)
    for match in _ADR.finditer(memory.name.rsplit("/", 1)[-1]):
        keys.setdefault(f"adr:{int(match.group(1))}", key_label(f"adr:{int(match.group(1))}"))
        break
    if (title_adr := _ADR.match(memory.title.strip())) is not None:
        keys.setdefault(f"adr:{int(title_adr.group(1))}", key_label(f"adr:{int(title_adr.group(1))}"))
    return {key: label for key, label in keys.items() if key.partition(":")[2]}


def _declared(memory: Memory) -> list[str]:
    values: list[str] = []
    for field in ("entity", "aliases"):
        raw = memory.extra.get(field)
        items = raw if isinstance(raw, list) else [raw]
        values.extend(str(item).strip() for item in items if isinstance(item, str | int) and str(item).strip())
    return [value for value in values if len(value) <= _MAX_TARGET][:50]


def _front_matter_edges(memory: Memory, lines: dict[str, int]) -> Iterator[RawEdge]:
    fields: dict[str, object] = dict(memory.extra)
    fields.update(supersedes=memory.supersedes, superseded_by=memory.superseded_by, anchors=list(memory.anchors))
    for field, value in fields.items():
        items = value if isinstance(value, list) else [value]
        texts = [str(item) for item in items if isinstance(item, str)][:MAX_EDGES]
        named = _FRONT_MATTER_TYPES.get(field.lower())
        links = [m.group(1) for text in texts for m in _WIKILINK.finditer(text)]
        if named is None and not links:
            continue  # an ordinary front-matter field, not a relation
        line = lines.get(field, 1)
        edge_type = named or _slug(field).replace("-", "_") or "relates_to"
        targets = links or [text.strip() for text in texts]
        for target in targets:
            target = target.strip().split("#", 1)[0]
            if not target or len(target) > _MAX_TARGET:
                continue
            if edge_type == "about_code":
                key = _path_key(target) if "." in target.rsplit("/", 1)[-1] else name_key(target)
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


def _blank_code(line: str) -> str:
    """``line`` with inline code spans blanked (same length, so offsets hold)."""
    return _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line) if "`" in line else line


def _link_edges(line: str, number: int, folder: str) -> Iterator[RawEdge]:
    prose = _blank_code(line)
    if "[[" in prose:
        relation = _RELATION_LINE.match(prose)
        if relation is not None:
            target = relation.group(2).split("#", 1)[0].strip()
            if target:
                kind = relation.group(1).lower().replace("-", "_")
                yield RawEdge(kind, name_key(target), target, number, (relation.group(3) or "").strip() or None)
        else:
            for match in _WIKILINK.finditer(prose):
                target = match.group(1).split("#", 1)[0].strip()
                if target and len(target) <= _MAX_TARGET:
                    yield RawEdge("links_to", name_key(target), target, number)
    if "mem:" in line:  # read in inline code too: `mem:name` is how Serena's memories cite each other
        for match in _MEM_REF.finditer(line):
            yield RawEdge("links_to", name_key(match.group(1)), match.group(1), number)
    if ".md" in prose and "](" in prose:
        for match in _MD_LINK.finditer(prose):
            target = match.group(1)
            if "://" in target or target.startswith(("/", "mailto:")):
                continue
            key = _path_key(posixpath.join(folder, target))
            if key is not None:  # a link leaving the root names no memory
                yield RawEdge("links_to", key, target, number)
    if (observation := _OBSERVATION.match(prose)) is not None and observation.group(1).strip().lower() != "x":
        category = observation.group(1).strip()
        detail = observation.group(2).strip()[:300]
        yield RawEdge("observation", "category:" + _slug(category), category, number, detail)
        for tag in _TAG.finditer(observation.group(2)):
            yield RawEdge("tagged", "tag:" + tag.group(1).lower(), "#" + tag.group(1), number)


def _blank_links(line: str) -> str:
    """``line`` with wikilinks and markdown links to ``.md`` files blanked: those are links, not mentions."""
    if "[[" in line:
        line = _WIKILINK.sub(lambda m: " " * len(m.group(0)), line)
    if "](" in line:
        line = _MD_LINK.sub(lambda m: " " * len(m.group(0)), line)
    return line


def _mention_edges(text: str, first: int) -> Iterator[RawEdge]:
    """Mentions in ``text`` (lines numbered from ``first``), found by whole-text scans."""
    text = _blank_links(text)
    counted = [0, first]  # (offset, its line): mentions come mostly in order, so counting resumes

    def line_of(offset: int) -> int:
        if offset < counted[0]:
            counted[:] = [0, first]
        counted[1] += text.count("\n", counted[0], offset)
        counted[0] = offset
        return counted[1]

    lower = text.lower()
    if "adr" in lower:
        adrs = _ADR_LOWER.finditer(lower) if len(lower) == len(text) else _ADR.finditer(text)
        for match in adrs:
            if match.start() == 0 or not text[match.start() - 1].isalnum():
                key = f"adr:{int(match.group(1))}"
                yield RawEdge("mentions", key, key_label(key), line_of(match.start()))
    if "#" in text:
        for match in _ISSUE.finditer(text):
            at, number_text = match.start(), match.group(1)
            previous = text[at - 1] if at else " "
            repo_match = _REPO_BEFORE.search(text, max(0, at - 140), at) if previous not in " \t\n(" else None
            repo = repo_match.group(1) if repo_match else None
            if (
                repo is None
                and (previous.isalnum() or previous in "_&#/")
                and not _ISSUE_LIST.search(text, max(0, at - 8), at)
            ):
                continue  # "#2050/#2510" lists two issues; "a#1", "&#39;" and "x/#2" name none
            line_start = text.rfind("\n", 0, at) + 1
            before = text[max(line_start, at - 40) : at]
            if repo is None and len(number_text) < 3 and not _ISSUE_CONTEXT.search(before):
                continue  # "#1" in prose is usually a rank or a step, not an issue
            line_end = text.find("\n", at)
            if (
                repo is None
                and len(number_text) < 3
                and _SEVERITY.search(text, match.end(), line_end % (len(text) + 1))
            ):
                continue  # "Issue #5 (MEDIUM)": a review finding's number (line_end -1: the text's end)
            if repo is None and not before.strip() and len(number_text) < 3:
                continue  # "#1" opening a line is a step; a heading needs "# " (a space)
            key = f"issue:{repo.lower() if repo else ''}#{int(number_text)}"
            yield RawEdge("mentions", key, key_label(key), line_of(at))
    for match in hex_runs(text):
        digest = match.group(0)
        if digest.isdigit() or digest.isalpha() or not is_commit(text, match.start(), match.end()):
            continue
        yield RawEdge("mentions", "commit:" + digest[:7], digest[:7], line_of(match.start()))
    for hit in _PATH_END.finditer(text):
        low = max(0, hit.start() - 400)
        begin = low + len(text[low : hit.start()].rstrip(_PATH_CHARS))
        found = _PATH.fullmatch(text, begin, hit.end()) if begin == 0 or text[begin - 1] not in ":~$%\\" else None
        if found is None:
            continue
        path = found.group(1)
        if path.startswith("**") and path[2:3] != "/":
            path = path.lstrip("*")  # "**name.ps1**": bold, not a glob
        stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        if "/" not in path and _TITLE_WORD.fullmatch(stem):
            continue  # "Node.js", "Vue.js": a product name, not a file
        path_key = _path_key(path)
        if path_key is not None:
            yield RawEdge("about_code", path_key, path, line_of(begin))


def _fence_lines(text: str) -> Iterator[re.Match[str]]:
    """``_FENCE_LINE`` matches in ``text``, in order: only lines holding three backticks or tildes are tried."""
    starts: set[int] = set()
    for marker in ("```", "~~~"):
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
    if "```" not in body and "~~~" not in body:
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


def _link_lines(text: str) -> list[int]:
    """The start offsets, in order, of the lines of ``text`` holding ``[`` or ``mem:``."""
    starts: set[int] = set()
    for trigger in ("[", "mem:"):
        at = text.find(trigger)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            starts.add(start)
            end = text.find("\n", at)
            if end < 0:
                break
            at = text.find(trigger, end)
    return sorted(starts)


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

    if add(_front_matter_edges(memory, _front_matter_lines(memory.text, front_lines))):
        first, prose = _prose(memory)
        complete = True
        if "[" in prose or "mem:" in prose:
            number, counted = first, 0
            for start in _link_lines(prose):  # only the lines that may hold a link
                number += prose.count("\n", counted, start)
                counted = start
                end = prose.find("\n", start)
                line = prose[start : len(prose) if end < 0 else end]
                if not add(_link_edges(line.rstrip("\r"), number, folder)):
                    complete = False
                    break
        if complete:
            add(_mention_edges(prose, first))
    return Extracted(keys, tuple(edges.values()))


def query_keys(query: str, vocabulary: Container[str] | None = None) -> list[str]:
    """The keys a search query names: its mentions and links, then its word runs as names (longest first).

    With ``vocabulary`` (every letter-and-digit run of the known ``mem:`` keys) a run holding a word with
    another run is skipped: no known name can come of it.
    """
    found: dict[str, None] = {}
    for edge in (*_link_edges(query, 1, ""), *_mention_edges(query, 1)):
        found.setdefault(edge.key)
    for match in _ADR.finditer(query):  # a query needs no context word
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
