"""What the repository already knows, read in place: files outside the memories root as read-only memories.

``[sources] globs`` (by default ``CLAUDE.md``, ``AGENTS.md``,
``.cursor/rules/**`` and ``docs/adr/**``, each where present) name markdown
files of the repository (``.md``, ``.mdc``, ``.markdown``). Each file is split
at its level-1 and level-2 headings into sections; each section is a memory
named ``<path>#<heading-slug>`` (``CLAUDE.md#build-and-test``,
``docs/adr/0003-postgres.md#decision``) whose ``source`` is its path and
heading. Text before the first heading is a section named after the file.
A file's front matter (a Cursor rule's ``description``, ``globs``) is kept in
each section's ``extra``, and ``description`` titles a section without a
heading; memrouter's own marked sections (``init``'s guidance, ``export``'s
digest) are left out, so they never echo memories back.

Such a memory is read-only: ``MemoryStore.lock`` refuses its name, so no
write path can change it (tests/test_guard_paths.py). The index follows the
files like memory files: a section row carries its file's stat, and a file
whose stat changed is split again (``memrouter.index.sqlite.refresh``).
A name holding ``.md#`` (or ``.mdc#``, ``.markdown#``) is always a section's:
a memory file so named is not indexed (``MemoryStore.stat_files``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from memrouter.core.errors import InvalidInput, NotFound
from memrouter.core.model import Memory
from memrouter.core.records import record

__all__ = [
    "SUFFIXES",
    "SourceFile",
    "SourceFiles",
    "is_source_name",
    "read_section",
    "refuse_read_only",
    "source_file_of",
]

SUFFIXES = (".md", ".mdc", ".markdown")
SPLIT_LEVEL = 2  # sections start at headings of this level or above
MAX_SOURCE_BYTES = 2 * 1024 * 1024
_MARKS = tuple(f"{suffix}#" for suffix in SUFFIXES)
_MARKED = r"<!-- memrouter:([a-z-]+) start -->\n.*?<!-- memrouter:\1 end -->\n?"  # compiled when a file is split


def is_source_name(name: str) -> bool:
    """Whether ``name`` names a section of a source file (``CLAUDE.md#build``), never a memory file."""
    return "#" in name and any(mark in name for mark in _MARKS)


def refuse_read_only(name: str) -> None:
    """``InvalidInput`` for a source section's name: the file it comes from is changed by hand, never here."""
    if is_source_name(name):
        raise InvalidInput(
            f"memory {name!r} is read-only: it is a section of {source_file_of(name)}, read in place; edit that file"
        )


def read_section(sources: SourceFiles | None, name: str) -> Memory:
    """The section ``name`` of a source file; ``NotFound`` when there is none (or no source files are read)."""
    if sources is None:
        raise NotFound(f"memory {name!r} not found (no source files are read here)")
    return sources.read(name)


def source_file_of(name: str) -> str:
    """The repository path of the file section ``name`` comes from."""
    return name.rpartition("#")[0]


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:80].rstrip("-") or "section"


def _pattern(glob: str) -> re.Pattern[str]:
    """A glob over repository paths: ``**`` any depth, ``*`` and ``?`` within one folder."""
    out = []
    for part in re.split(r"(\*\*/?|\*|\?)", glob):
        if part.startswith("**"):
            out.append("(?:.*/)?" if part.endswith("/") else ".*")
        elif part == "*":
            out.append("[^/]*")
        elif part == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out))


@record
class SourceFile:
    """One source file as a scan sees it."""

    relative: str
    path: str
    mtime_ns: int
    size: int


class SourceFiles:
    """The source files of one repository (``project``), matched by ``globs``, never under ``exclude``."""

    def __init__(self, project: Path, globs: tuple[str, ...], exclude: tuple[Path, ...] = ()) -> None:
        self.project = project
        self.globs = globs
        self.exclude = exclude
        self._patterns: list[tuple[str, re.Pattern[str], bool]] = []
        for glob in globs:
            glob = glob.strip().lstrip("/")
            if not glob or ".." in glob.split("/"):
                raise InvalidInput(f"[sources] glob {glob!r} must be a path inside the repository")
            literal = re.split(r"[*?\[]", glob, maxsplit=1)[0]
            base = literal.rpartition("/")[0] if literal != glob else glob
            self._patterns.append((base, _pattern(glob), literal != glob))

    def folders(self) -> list[tuple[Path, bool]]:
        """The folders to watch for changes: (folder, with its subfolders)."""
        found: dict[Path, bool] = {}
        for base, _, is_glob in self._patterns:
            folder = self.project / base if is_glob else (self.project / base).parent
            found[folder] = found.get(folder, False) or is_glob
        return sorted(found.items())

    def scan(self) -> list[SourceFile]:
        """Every source file there is now, by repository path."""
        found: dict[str, SourceFile] = {}
        excluded = [str(path) for path in self.exclude]
        for base, pattern, is_glob in self._patterns:
            candidates = self._walk(base) if is_glob else [base]
            for relative in candidates:
                if relative in found or not relative.endswith(SUFFIXES) or not pattern.fullmatch(relative):
                    continue
                path = str(self.project / relative)
                if any(path == ex or path.startswith(ex + os.sep) for ex in excluded):
                    continue
                try:
                    stat = os.stat(path)
                except OSError:
                    continue
                if stat.st_size <= MAX_SOURCE_BYTES and os.path.isfile(path):
                    found[relative] = SourceFile(relative, path, stat.st_mtime_ns, stat.st_size)
        return [found[key] for key in sorted(found)]

    def _walk(self, base: str) -> list[str]:
        start = self.project / base if base else self.project
        found: list[str] = []
        stack = [(str(start), f"{base}/" if base else "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, f"{prefix}{entry.name}/"))
                    elif entry.is_file():
                        found.append(prefix + entry.name)
                except OSError:
                    continue
        return found

    def read(self, name: str) -> Memory:
        """The section ``name``, read from its file now; ``NotFound`` when the file or the section is gone."""
        relative = source_file_of(name)
        match = next((f for f in self.scan() if f.relative == relative), None)
        if match is None:
            raise NotFound(f"memory {name!r} not found ({relative} is not a source file here)")
        for memory in self.sections(match.relative, match.path, _read_text(match.path)):
            if memory.name == name:
                return memory
        raise NotFound(f"memory {name!r} not found (no such section in {relative})")

    @staticmethod
    def sections(relative: str, path: str, text: str) -> list[Memory]:
        """The memories of one source file's text (see the module docstring)."""
        from memrouter.store import frontmatter
        from memrouter.store.markdown import iter_blocks
        from memrouter.store.parse import content_hash

        parsed = frontmatter.parse(text)
        extra = {str(key): value for key, value in parsed.data.items()}
        cleaned = re.sub(_MARKED, "", text, flags=re.S)
        cuts: list[tuple[int, str | None]] = []
        document_title: str | None = None
        body_start = 0
        for block in iter_blocks(cleaned):
            if block.kind == "front_matter":
                body_start = block.end
            elif block.kind == "heading" and block.text and block.level <= SPLIT_LEVEL:
                if block.level == 1 and document_title is None:
                    document_title = block.text
                cuts.append((block.start, block.text))
        described = extra.get("description")
        stem = Path(relative).name.rsplit(".", 1)[0]
        fallback = str(described) if isinstance(described, str) and described.strip() else stem
        parts: list[tuple[str | None, str]] = []
        edges = [(body_start, None), *cuts, (len(cleaned), None)]
        for (start, heading), (end, _) in zip(edges, edges[1:], strict=False):
            if cleaned[start:end].strip():
                parts.append((heading, cleaned[start:end]))
        kind = "adr" if "/adr/" in f"/{relative}" else ("convention" if relative.endswith(".mdc") else None)
        memories: list[Memory] = []
        used: set[str] = set()
        for heading, section in parts:
            slug = base = _slug(heading or stem)
            number = 2
            while slug in used:
                slug, number = f"{base}-{number}", number + 1
            used.add(slug)
            title = heading or fallback
            if heading and document_title and heading != document_title:
                title = f"{document_title}: {heading}"
            body = section.strip("\n") + "\n"
            memories.append(
                Memory(
                    name=f"{relative}#{slug}",
                    path=path,
                    text=body,
                    hash=content_hash(body),
                    body=body,
                    title=title,
                    kind=kind,
                    source=f"{relative}#{heading}" if heading else relative,
                    extra=dict(extra),
                )  # fmt: skip
            )
        return memories


def _read_text(path: str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise NotFound(f"source file {path} cannot be read: {exc.strerror or exc}") from exc
