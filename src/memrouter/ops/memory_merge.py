"""git's merge driver for memory files: front matter merged field by field, the body line by line.

When two branches changed the same memory, git calls the driver
(``memrouter hook --merge-driver %O %A %B %P``) with the common ancestor,
ours (where the result goes) and theirs. ``merge_memory`` merges:

- the front matter, field by field: ``tags`` as the union of both sides' tags
  less those one side removed; the later ``updated`` and ``valid_from``; the
  stricter ``status`` (active, then pending_review, archived, obsolete); any
  other field: the side that changed it, or a conflict when both changed it
  differently (both versions between conflict markers, in the block);
- the body with git's 3-way line merge (``git merge-file``): conflict markers
  only where both sides changed the same lines.

A field a side did not change keeps that side's exact text. Input that is not
a memory with readable front matter (broken YAML, front matter that is not a
mapping, a block that is not closed, text that is not UTF-8, no front matter
on any side) gets git's plain 3-way merge of the whole file, with markers
where the sides disagree: a side is never lost.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrouter.repo.merge import LABELS, merge_lines
from memrouter.store import frontmatter

__all__ = ["MergeOutcome", "merge_memory", "run_merge_driver"]

# How strict a status is: the merge keeps the stricter of two (further out of default reads).
STRICTNESS = {"active": 0, "pending_review": 1, "archived": 2, "obsolete": 3}
LATER_FIELDS = ("updated", "valid_from")
MARKER = 7
_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    """A merged memory file: its bytes, the fields both sides changed differently, the body's conflicting
    places, and why the whole file was merged as plain text (None when it was merged field by field)."""

    data: bytes
    field_conflicts: tuple[str, ...] = ()
    body_conflicts: int = 0
    plain_reason: str | None = None

    @property
    def clean(self) -> bool:
        """Whether nothing is left for a person to resolve."""
        return not self.field_conflicts and not self.body_conflicts


def _plain(base: bytes, ours: bytes, theirs: bytes, reason: str) -> MergeOutcome:
    merged = merge_lines(ours, base, theirs, marker_size=MARKER)
    return MergeOutcome(merged.data, body_conflicts=merged.conflicts, plain_reason=reason)


def merge_memory(base: bytes, ours: bytes, theirs: bytes) -> MergeOutcome:
    """``ours`` and ``theirs`` (two versions of a memory file) merged from their common ancestor ``base``."""
    try:
        texts = [data.decode("utf-8") for data in (base, ours, theirs)]
    except UnicodeDecodeError:
        return _plain(base, ours, theirs, "not UTF-8 text")
    parsed = [frontmatter.parse(text) for text in texts]
    for side, text, matter in zip(("base", "ours", "theirs"), texts, parsed, strict=True):
        problem = matter.problem or _unclosed(text)
        if problem is not None:
            return _plain(base, ours, theirs, f"{side}: {problem}")
    if all(matter.raw is None for matter in parsed):
        return _plain(base, ours, theirs, "no front matter")
    block, conflicts = _merge_fields(*parsed)
    body = merge_lines(*(matter.body.encode("utf-8") for matter in (parsed[1], parsed[0], parsed[2])),
                       marker_size=MARKER)  # fmt: skip
    opening, closing = _delimiters(texts[1]) if parsed[1].raw is not None else ("---\n", "---\n")
    data = opening.encode("utf-8") + block.encode("utf-8") + closing.encode("utf-8") + body.data
    return MergeOutcome(data, tuple(conflicts), body.conflicts)


def _unclosed(text: str) -> str | None:
    """What is wrong with a text that opens a front matter block and never closes it."""
    opens = text.split("\n", 1)[0].rstrip("\r \t") == "---"
    return "the front matter block is not closed" if opens and frontmatter.locate(text) is None else None


def _delimiters(text: str) -> tuple[str, str]:
    """The opening and closing lines of the front matter of ``text`` (which has one)."""
    where = frontmatter.locate(text)
    assert where is not None
    start, end, body = where
    closing = text[end:body]
    return text[:start], closing if closing.endswith("\n") else closing + "\n"


def _chunks(matter: frontmatter.FrontMatter) -> tuple[list[str], dict[str, str]]:
    """The lines before the first key, and each top-level key's exact text (ending with a newline)."""
    leading: list[str] = []
    chunks: dict[str, str] = {}
    for key, chunk in frontmatter.segments(matter.raw or ""):
        text = chunk if chunk.endswith("\n") else chunk + "\n"
        if key is None:
            leading.append(text)
        else:
            chunks[key] = text
    return leading, chunks


def _merge_fields(
    base: frontmatter.FrontMatter, ours: frontmatter.FrontMatter, theirs: frontmatter.FrontMatter
) -> tuple[str, list[str]]:
    """The merged front matter block (without its delimiters) and the fields left in conflict."""
    leading, our_chunks = _chunks(ours)
    _, their_chunks = _chunks(theirs)
    keys = list(dict.fromkeys([*ours.data, *theirs.data, *base.data]))
    out = list(leading)
    conflicts: list[str] = []
    for key in keys:
        values = [matter.data.get(key, _ABSENT) for matter in (base, ours, theirs)]
        merged = _merge_field(key, *values)
        if merged is None:
            conflicts.append(key)
            out.append(
                f"{'<' * MARKER} {LABELS[0]}\n{our_chunks.get(key, '')}{'=' * MARKER}\n"
                f"{their_chunks.get(key, '')}{'>' * MARKER} {LABELS[2]}\n"
            )
        elif merged[0] is _ABSENT:
            continue
        elif key in our_chunks and ours.data.get(key, _ABSENT) == merged[0]:
            out.append(our_chunks[key])
        elif key in their_chunks and theirs.data.get(key, _ABSENT) == merged[0]:
            out.append(their_chunks[key])
        else:
            out.append(frontmatter.render_value(key, merged[0]))
    return "".join(out), conflicts


def _merge_field(key: str, base: Any, ours: Any, theirs: Any) -> tuple[Any] | None:
    """One field's merged value (``_ABSENT``: the field goes), or None when both sides changed it differently."""
    if ours == theirs:
        return (ours,)
    if key == "tags" and all(_is_tag_list(value) for value in (base, ours, theirs)):
        return (_merge_tags(base, ours, theirs),)
    if key in LATER_FIELDS and ours is not _ABSENT and theirs is not _ABSENT and ours is not None \
            and theirs is not None:  # fmt: skip
        return (max(ours, theirs, key=str),)
    if key == "status" and ours in STRICTNESS and theirs in STRICTNESS:
        return (max(ours, theirs, key=STRICTNESS.__getitem__),)
    if ours == base:
        return (theirs,)
    if theirs == base:
        return (ours,)
    return None


def _is_tag_list(value: Any) -> bool:
    return value is _ABSENT or (isinstance(value, list) and all(isinstance(tag, str) for tag in value))


def _merge_tags(base: Any, ours: Any, theirs: Any) -> Any:
    """Both sides' tags, ours first, less any tag of the ancestor one side removed."""
    before = [] if base is _ABSENT else base
    mine = [] if ours is _ABSENT else ours
    other = [] if theirs is _ABSENT else theirs
    removed = [tag for tag in before if tag not in mine or tag not in other]
    merged = [tag for tag in dict.fromkeys([*mine, *other]) if tag not in removed]
    return merged if merged or (ours is not _ABSENT or theirs is not _ABSENT) else _ABSENT


def run_merge_driver(base: Path, ours: Path, theirs: Path) -> MergeOutcome:
    """git's merge-driver contract: merge the three files and write the result over ``ours`` (atomically)."""
    outcome = merge_memory(base.read_bytes(), ours.read_bytes(), theirs.read_bytes())
    descriptor, temporary = tempfile.mkstemp(prefix=f".{ours.name}.", dir=ours.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(outcome.data)
        os.chmod(temporary, ours.stat().st_mode & 0o7777)
        os.replace(temporary, ours)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return outcome
