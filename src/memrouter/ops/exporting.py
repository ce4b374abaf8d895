"""``memrouter export``: the memories out, for another machine or for an agent without MCP.

- ``archive_lines``: a lossless JSONL archive. The first line is a header
  (``{"format": "memrouter-archive", "version": 1, "memories": N}``); each
  other line is one memory file: its ``name``, its whole ``text``, the
  ``hash`` of that text (memrouter's content hash), and, for readers, its
  ``front_matter`` and ``content`` (the body). ``memrouter import`` reads it
  back byte for byte, so every hash is the same. Source sections are not
  memory files and are left out (the repository holds them).
- ``digest``: the memories in effect that an agent should know, as short
  markdown lines in a token budget (o200k): pinned first, then conventions,
  decisions and the like, then the rest, each kind newest first.
  ``write_digest`` puts it between ``<!-- memrouter:digest start -->`` and
  ``... end -->`` in AGENTS.md or CLAUDE.md (the rest of the file is kept);
  source sections never read that block back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from memrouter.core.model import Memory
from memrouter.ops.context.tokens import count_tokens
from memrouter.ops.reading import list_memories, pinned
from memrouter.ops.textedit import marked_section
from memrouter.store import frontmatter
from memrouter.store.sources import is_source_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.ops.workspace import Workspace

__all__ = ["ARCHIVE_FORMAT", "archive_lines", "digest", "write_digest"]

ARCHIVE_FORMAT = "memrouter-archive"
# The order kinds come in a digest: what an agent must follow first.
KIND_ORDER = ("convention", "decision", "adr", "pattern", "preference", "schema", "fact", "incident")
SUMMARY_CHARS = 220


def archive_lines(ws: Workspace) -> Iterator[str]:
    """The archive, one JSON text per line (see the module docstring), memories by name."""
    names = sorted(stat.name for stat in ws.store.scan())
    yield json.dumps({"format": ARCHIVE_FORMAT, "version": 1, "memories": len(names)})
    for name in names:
        memory = ws.store.read(name)
        parsed = frontmatter.parse(memory.text)
        record = {
            "name": memory.name, "hash": memory.hash, "text": memory.text, "front_matter": parsed.data,
            "content": parsed.body,
        }  # fmt: skip
        yield json.dumps(record, ensure_ascii=False, default=str)


def _summary(memory: Memory) -> str:
    """The first paragraph of the body that is not a heading, on one line and cut at a word."""
    for block in re.split(r"\n\s*\n", memory.body):
        lines = [line.strip() for line in block.strip().splitlines() if line.strip() and not line.startswith("#")]
        if lines:
            text = " ".join(lines)
            if len(text) > SUMMARY_CHARS:
                text = text[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."
            return text
    return ""


def digest(ws: Workspace, max_tokens: int = 1500) -> tuple[str, int, int]:
    """The digest's markdown, how many memories it shows and how many there were (see the module docstring)."""
    listed = [item for item in list_memories(ws, channels=["long_term"]) if not is_source_name(item.name)]
    first = set(pinned(ws))
    memories = [ws.store.read(item.name) for item in listed]
    rank = {kind: number for number, kind in enumerate(KIND_ORDER)}
    memories.sort(key=lambda m: m.updated or m.created or "", reverse=True)
    memories.sort(key=lambda m: (m.name not in first, rank.get(m.kind or "", len(KIND_ORDER))))
    head = (
        "## Project memory digest (memrouter)\n\n"
        "What this repository's memories say, most needed first; the full text of each is in "
        '`.serena/memories/<name>.md`, and `memrouter search "..."` searches them all.\n\n'
    )
    lines: list[str] = []
    used = count_tokens(head)
    for memory in memories:
        kind = f" [{memory.kind}]" if memory.kind else ""
        line = f"- **{memory.title}**{kind} (`{memory.name}`): {_summary(memory)}".rstrip(": ") + "\n"
        cost = count_tokens(line)
        if used + cost > max_tokens:
            break
        lines.append(line)
        used += cost
    tail = "" if len(lines) == len(memories) else f"\n{len(memories) - len(lines)} more: `memrouter list`.\n"
    return head + "".join(lines) + tail, len(lines), len(memories)


def write_digest(path: Path, text: str) -> tuple[str | None, str]:
    """The file at ``path`` before and after putting ``text`` in its digest section (nothing is written)."""
    try:
        before: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    return before, marked_section(before, "digest", text)
