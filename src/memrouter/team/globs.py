"""Path globs for reservations: normalising them and telling whether two may overlap.

A glob is relative to the repository, with ``/`` between segments: ``*``,
``?`` and ``[...]`` match within one segment, ``**`` matches any number of
segments, and a glob also covers everything below what it names (``src``
reserves the folder). Absolute paths, ``~``, ``..`` segments and backslashes
are refused, so no glob reaches outside the repository.

``may_overlap`` is sound: when it says False, no path matches both globs.
Where an exact answer would need full pattern intersection (two wildcard
segments) it compares the literal text before and after the wildcards and
reports an overlap unless those already disagree.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache

from memrouter.core.errors import InvalidInput

__all__ = ["MAX_GLOB_CHARS", "may_overlap", "normalize_glob"]

MAX_GLOB_CHARS = 1024
_WILD = re.compile(r"[*?\[]")


def normalize_glob(glob: object) -> str:
    """The glob in its one spelling (``./`` and repeated ``/`` dropped), or ``InvalidInput``."""
    if not isinstance(glob, str) or not glob.strip():
        raise InvalidInput("a path glob must be a non-empty string")
    if len(glob) > MAX_GLOB_CHARS:
        raise InvalidInput(f"a path glob is at most {MAX_GLOB_CHARS} characters")
    if re.search(r"[\x00-\x1f\x7f\\]", glob):
        raise InvalidInput(
            f"the path glob {glob[:80]!r} holds a backslash or a control character; use / between folders"
        )
    if glob.startswith(("/", "~")) or re.match(r"[A-Za-z]:", glob):
        raise InvalidInput(f"the path glob {glob[:80]!r} is absolute; give it relative to the repository")
    segments = [segment for segment in glob.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise InvalidInput(f"the path glob {glob[:80]!r} escapes the repository ('..' is not allowed)")
    if not segments:
        return "**"  # the whole repository
    collapsed: list[str] = []
    for segment in segments:
        if segment == "**" and collapsed and collapsed[-1] == "**":
            continue
        collapsed.append(segment)
    return "/".join(collapsed)


def _segment_overlap(a: str, b: str) -> bool:
    """Whether some one segment may match both segment patterns (True when unsure)."""
    wild_a, wild_b = _WILD.search(a), _WILD.search(b)
    if not wild_a and not wild_b:
        return a == b
    if not wild_a:
        return fnmatchcase(a, b)
    if not wild_b:
        return fnmatchcase(b, a)
    head_a, head_b = a[: wild_a.start()], b[: wild_b.start()]
    if not (head_a.startswith(head_b) or head_b.startswith(head_a)):
        return False
    tail_a, tail_b = _literal_tail(a), _literal_tail(b)
    return tail_a.endswith(tail_b) or tail_b.endswith(tail_a)


def _literal_tail(pattern: str) -> str:
    """The literal text after the last wildcard (``]`` ends a class; unsure characters end the tail)."""
    tail = ""
    for char in reversed(pattern):
        if char in "*?[]":
            break
        tail = char + tail
    return tail


def may_overlap(a: str, b: str) -> bool:
    """Whether some path (or a path below one of them) may match both normalised globs.

    Case is ignored, since the repository may sit on a case-insensitive file system.
    """
    return _overlap(tuple(a.lower().split("/")), tuple(b.lower().split("/")))


@lru_cache(maxsize=4096)
def _overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if not a or not b:
        return True  # one names a folder holding what the other names
    if a[0] == "**":
        return _overlap(a[1:], b) or _overlap(a, b[1:])
    if b[0] == "**":
        return _overlap(a, b[1:]) or _overlap(a[1:], b)
    return _segment_overlap(a[0], b[0]) and _overlap(a[1:], b[1:])
