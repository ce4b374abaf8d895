"""``memrouter import``: knowledge kept outside the repository becomes memories, through the write guard.

Kinds, each read from where its tool keeps it (``default_path``) or from a given path:

- ``claude-code``: Claude Code's auto-memory, ``~/.claude/projects/<project>/memory/`` (``MEMORY.md``
  and its topic files; their ``name``/``description``/``type`` front matter is kept);
- ``codex``: Codex's memories, ``~/.codex/memories/``;
- ``basic-memory`` and ``obsidian``: a folder of notes; front matter kept, ``[[wikilinks]]``
  to imported notes become ``mem:`` links;
- ``mem0``: a mem0 or OpenMemory JSON export (a list, or ``results`` / ``memories``), one memory each;
- ``serena``: Serena's global memories, ``~/.serena/memories/``;
- ``file``: one markdown file; ``archive``: a ``memrouter export`` JSONL archive, restored byte for byte.

Markdown is split at level-1 and level-2 headings as ``memrouter.store.sources`` splits it; each
section is one memory named ``<prefix><file>/<heading>`` (``<prefix><file>`` for a file of one
section) with ``source: import:<kind>:<path>#<heading>``. Every memory passes the write guard
(``memrouter.ops.writes.save``): a secret or a near-duplicate is refused and reported, never
written. Re-importing writes only what changed: a memory already holding the text is unchanged, one
this import wrote before is updated, and a memory of that name from anywhere else is left alone
(``conflict``). ``dry_run`` says what would happen and writes nothing.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrouter.core.errors import Conflict, InvalidInput, NotFound, Refused
from memrouter.core.model import Memory
from memrouter.ops.exporting import ARCHIVE_FORMAT
from memrouter.ops.write_guard import FULL, VERBATIM, guarded
from memrouter.ops.writes import save
from memrouter.store import frontmatter
from memrouter.store.parse import content_hash
from memrouter.store.sources import SUFFIXES, SourceFiles

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.ops.workspace import Workspace

__all__ = ["IMPORT_KINDS", "ImportItem", "ImportReport", "default_path", "detect_kind", "plan", "run_import"]

IMPORT_KINDS = ("file", "claude-code", "codex", "basic-memory", "obsidian", "mem0", "serena", "archive")
_NOTES = ("file", "claude-code", "codex", "basic-memory", "obsidian", "serena")
_WIKILINK = re.compile(r"\[\[([^\[\]|#]+)(?:#([^\[\]|]*))?(?:\|([^\[\]]*))?\]\]")


@dataclass(frozen=True, slots=True)
class Planned:
    """One memory an import would write: its name, its whole text, and where it came from."""

    name: str
    text: str
    source: str
    exact: bool = False  # an archive's text, written byte for byte


@dataclass(frozen=True, slots=True)
class ImportItem:
    """What happened to one planned memory: created, updated, unchanged, refused or conflict."""

    name: str
    source: str
    action: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "action": self.action, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ImportReport:
    """One import: its kind and path, and each memory's fate."""

    kind: str
    path: str
    dry_run: bool
    items: tuple[ImportItem, ...] = field(default=())

    def counts(self) -> dict[str, int]:
        found = dict.fromkeys(("created", "updated", "unchanged", "refused", "conflict"), 0)
        for item in self.items:
            found[item.action] += 1
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "path": self.path, "dry_run": self.dry_run, "counts": self.counts(),
            "items": [item.to_dict() for item in self.items],
        }  # fmt: skip


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._") or "note"


def project_key(project: Path) -> str:
    """The folder name Claude Code keeps a project's data under: its absolute path, each other character a dash."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(project.resolve()))


def default_path(kind: str, project: Path | None, home: Path | None = None) -> Path:
    """Where ``kind`` keeps its memories for ``project`` on this machine; ``InvalidInput`` for a kind that needs a path."""
    home = home or Path.home()
    if kind == "claude-code" and project is not None:
        return home / ".claude" / "projects" / project_key(project) / "memory"
    if kind == "codex":
        return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "memories"
    if kind == "serena":
        return home / ".serena" / "memories"
    raise InvalidInput(f"give the path to import (--kind {kind} has no default place)")


def detect_kind(path: Path) -> str:
    """The kind a path looks like: an archive (``.jsonl``), a JSON export, a Claude Code memory folder
    (``MEMORY.md``), an Obsidian vault (``.obsidian``), a folder of notes, or one file."""
    if path.is_dir():
        if (path / "MEMORY.md").is_file():
            return "claude-code"
        return "obsidian" if (path / ".obsidian").is_dir() else "basic-memory"
    if path.suffix == ".jsonl":
        return "archive"
    return "mem0" if path.suffix == ".json" else "file"


def _notes(path: Path, project: Path | None) -> list[tuple[str, Path]]:
    """The markdown files of a folder by path relative to it, dot folders left out; or the one file, by its
    path in the project (its name when it is outside)."""
    if path.is_file():
        resolved = path.resolve()
        inside = project is not None and resolved.is_relative_to(project.resolve())
        return [(resolved.relative_to(project.resolve()).as_posix() if inside and project else path.name, path)]
    found = []
    for current, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(SUFFIXES) and not name.startswith("."):
                full = Path(current) / name
                found.append((full.relative_to(path).as_posix(), full))
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc


def _note_memories(kind: str, root: Path, prefix: str, project: Path | None) -> list[Planned]:
    files = _notes(root, project)
    sections: list[tuple[str, str, Memory]] = []  # (relative path, name, section)
    links: dict[str, str] = {}  # a wikilink target (file stem or title, lower case) -> memory name
    for relative, path in files:
        found = SourceFiles.sections(relative, str(path), _read(path))
        stem = relative.rsplit(".", 1)[0]
        base = prefix + "/".join(_slug(part) for part in stem.split("/"))
        for number, memory in enumerate(found):
            heading_slug = memory.name.rpartition("#")[2]
            name = base if len(found) == 1 else f"{base}/{heading_slug}"
            sections.append((relative, name, memory))
            if number == 0:
                links.setdefault(stem.lower(), name)
                links.setdefault(Path(stem).name.lower(), name)
                title = memory.extra.get("title")
                if isinstance(title, str):
                    links.setdefault(title.lower(), name)
            links.setdefault(f"{Path(stem).name.lower()}#{heading_slug}", name)
    planned = []
    for relative, name, memory in sections:
        heading = memory.source.partition("#")[2] if memory.source and "#" in memory.source else ""
        source = f"import:{kind}:{relative}" + (f"#{heading}" if heading else "")
        body = _WIKILINK.sub(lambda match: _link(match, links), memory.body)
        keep = {k: v for k, v in memory.extra.items() if k not in ("source", "title")}
        text = frontmatter.update(body, {**keep, "title": memory.title, "source": source})
        planned.append(Planned(name, text, source))
    return planned


def _link(match: re.Match[str], links: dict[str, str]) -> str:
    target, heading, alias = (part.strip() if part else part for part in match.groups())
    key = (target or "").lower()
    name = links.get(f"{key}#{re.sub(r'[^a-z0-9]+', '-', (heading or '').lower()).strip('-')}") if heading else None
    name = name or links.get(key)
    if name is None:
        return match.group()  # a note this import does not hold: left as written
    return f"[{alias or target}](mem:{name})"


def _mem0_memories(path: Path, prefix: str) -> list[Planned]:
    try:
        data = json.loads(_read(path))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not JSON: {exc}") from exc
    records = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise InvalidInput(f"{path}: expected a list of memories, or an object with 'results' or 'memories'")
    planned = []
    for number, record in enumerate(records):
        if not isinstance(record, dict):
            raise InvalidInput(f"{path}: memory {number} is not an object")
        text = record.get("memory") or record.get("content") or record.get("text")
        if not isinstance(text, str) or not text.strip():
            continue
        ident = str(record.get("id") or content_hash(text)[:12])
        words = " ".join(text.split()[:8])
        name = f"{prefix}{_slug(words)[:60].strip('-')}-{_slug(ident)[:8]}"
        tags = record.get("categories") or record.get("tags") or []
        fields: dict[str, Any] = {
            "title": text.strip().split("\n")[0][:80], "source": f"import:mem0:{path.name}#{ident}",
            "tags": [str(tag) for tag in tags] if isinstance(tags, list) else None,
            "created": record.get("created_at"), "updated": record.get("updated_at"),
        }  # fmt: skip
        for key in ("user_id", "agent_id", "app_name", "metadata"):
            if record.get(key) not in (None, {}, ""):
                fields[f"mem0_{key}"] = record[key]
        planned.append(Planned(name, frontmatter.update(text.strip() + "\n", fields), fields["source"]))
    return planned


def _archive_memories(path: Path) -> tuple[list[Planned], list[ImportItem]]:
    planned: list[Planned] = []
    broken: list[ImportItem] = []
    for number, line in enumerate(_read(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if record.get("format") == ARCHIVE_FORMAT:
            continue  # the header
        name, text, digest = record.get("name"), record.get("text"), record.get("hash")
        if not isinstance(name, str) or not isinstance(text, str):
            raise InvalidInput(f"{path}:{number}: a memory needs 'name' and 'text'")
        if digest != content_hash(text):
            broken.append(ImportItem(name, f"{path.name}:{number}", "refused", "its hash does not match its text"))
            continue
        planned.append(Planned(name, text, f"{path.name}:{number}", exact=True))
    return planned, broken


def plan(
    kind: str, path: Path, prefix: str | None = None, project: Path | None = None
) -> tuple[list[Planned], list[ImportItem]]:
    """The memories an import of ``path`` as ``kind`` would write, and lines refused before the guard."""
    if kind not in IMPORT_KINDS:
        raise InvalidInput(f"unknown import kind {kind!r}: choose from {', '.join(IMPORT_KINDS)}")
    if not path.exists():
        raise InvalidInput(f"{path} does not exist")
    if kind == "archive":
        return _archive_memories(path)
    if prefix is None:
        prefix = "imported/" if kind == "file" else f"imported/{kind}/"
    prefix = "/".join(_slug(part) for part in prefix.strip("/").split("/") if part) + "/" if prefix.strip("/") else ""
    if kind == "mem0":
        return _mem0_memories(path, prefix), []
    if kind == "file" and path.is_dir():
        raise InvalidInput(f"{path} is a folder: give --kind basic-memory (or another folder kind)")
    return _note_memories(kind, path, prefix, project), []


def run_import(
    ws: Workspace, path: Path, kind: str | None = None, *, prefix: str | None = None, dry_run: bool = False,
    actor: str | None = None,
) -> ImportReport:  # fmt: skip
    """Import ``path`` (``kind`` detected when None): see the module docstring."""
    kind = kind or detect_kind(path)
    sources = ws.store.sources
    if path.is_file() and sources is not None and any(Path(f.path).samefile(path) for f in sources.scan()):
        raise InvalidInput(
            f"{path} is read in place already, as read-only memories ([sources] globs); to make editable copies, "
            "leave it out of [sources] globs first"
        )
    planned, items = plan(kind, path, prefix, ws.config.project_dir)
    seen: set[str] = set()
    for memory in planned:
        if memory.name in seen:
            items.append(ImportItem(memory.name, memory.source, "conflict", "two memories of this import share it"))
            continue
        seen.add(memory.name)
        items.append(_one(ws, memory, dry_run=dry_run, actor=actor))
    return ImportReport(kind, str(path), dry_run, tuple(items))


def _one(ws: Workspace, planned: Planned, *, dry_run: bool, actor: str | None) -> ImportItem:
    try:
        existing: Memory | None = ws.store.read(planned.name)
    except NotFound:
        existing = None
    except InvalidInput as exc:
        return ImportItem(planned.name, planned.source, "refused", str(exc))
    if existing is not None and existing.text == planned.text:
        return ImportItem(planned.name, planned.source, "unchanged")
    if existing is not None and not planned.exact and existing.source != planned.source:
        return ImportItem(planned.name, planned.source, "conflict", f"a memory from {existing.source or 'elsewhere'}")
    purpose = VERBATIM if planned.exact else FULL
    try:
        final, _ = guarded(ws.index, planned.name, planned.text, actor=actor, purpose=purpose)
        if existing is not None and existing.text == final:
            return ImportItem(planned.name, planned.source, "unchanged")
        if not dry_run:
            save(ws, planned.text, planned.name, expected_hash=existing.hash if existing else "", actor=actor,
                 verbatim=planned.exact)  # fmt: skip
    except (Refused, InvalidInput) as exc:
        return ImportItem(planned.name, planned.source, "refused", str(exc))
    except Conflict as exc:
        return ImportItem(planned.name, planned.source, "conflict", str(exc))
    return ImportItem(planned.name, planned.source, "created" if existing is None else "updated")
