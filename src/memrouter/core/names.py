"""Memory names: the canonical id of a memory, validated before it touches a path.

A name is the path of the file relative to the memories root, with POSIX
separators and without ``.md``: ``ci/ci-infrastructure-observations``. Each
segment is lower-case ``[a-z0-9][a-z0-9._-]*``; the whole name is at most 200
characters, never absolute, never ``..``. Files already on disk may carry
names outside that alphabet (upper case, spaces); they are still indexed and
readable under their relative path, but new names must be strict.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path, PurePosixPath

from memrouter.core.errors import InvalidInput

__all__ = [
    "MAX_NAME_LENGTH",
    "validate_name",
    "normalize_name",
    "name_for_path",
    "path_for_name",
]

MAX_NAME_LENGTH = 200
SUFFIX = ".md"
_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]*")
# Looser rule for files that already exist: anything printable except separators.
_EXISTING_SEGMENT = re.compile(r"[^/\\\x00-\x1f\x7f]+")


def normalize_name(raw: str) -> str:
    """Accept the spellings agents use (``mem:`` prefix, ``.md`` suffix, surrounding space).

    One ``.md`` is removed, so ``x.md`` names the file ``x.md``; a name that
    still ends in ``.md`` after that is refused by ``validate_name`` (it would
    reach ``x.md.md`` one way and ``x.md`` the other).
    """
    name = raw.strip()
    if name.startswith("mem:"):
        name = name[4:]
    if name.endswith(SUFFIX):
        name = name[: -len(SUFFIX)]
    return name


def validate_name(raw: str, *, strict: bool = True) -> str:
    """Return the normalised name or raise ``InvalidInput`` saying what is wrong.

    ``strict`` applies the alphabet for new names; ``strict=False`` admits any
    existing file's relative path that is still safe (no traversal, no
    control characters).
    """
    if not isinstance(raw, str):
        raise InvalidInput(f"a memory name must be a string, not {type(raw).__name__}")
    name = normalize_name(raw)
    if not name:
        raise InvalidInput("a memory name must not be empty")
    if any(0xD800 <= ord(char) <= 0xDFFF for char in name):
        raise InvalidInput("a memory name must be valid Unicode text (it holds a lone surrogate)")
    if name.endswith(SUFFIX):
        raise InvalidInput(
            f"invalid memory name {raw!r}: a name must not end in '.md' twice (the file would be {name}.md)"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(f"a memory name is at most {MAX_NAME_LENGTH} characters (got {len(name)})")
    if unicodedata.normalize("NFKC", name) != name and strict:
        raise InvalidInput(f"invalid memory name {name!r}: use plain ASCII characters")
    if "\\" in name:
        raise InvalidInput(f"invalid memory name {name!r}: use '/' to separate folders")
    if name.startswith("/") or PurePosixPath(name).is_absolute() or re.match(r"^[A-Za-z]:", name):
        raise InvalidInput(f"invalid memory name {name!r}: names are relative to the memories root")
    segments = name.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise InvalidInput(f"invalid memory name {name!r}: empty, '.' or '..' folder segments are not allowed")
        pattern = _SEGMENT if strict else _EXISTING_SEGMENT
        if not pattern.fullmatch(segment):
            if strict:
                raise InvalidInput(
                    f"invalid memory name {name!r}: each segment must match [a-z0-9][a-z0-9._-]* "
                    "(lower case letters, digits, '.', '_', '-')"
                )
            raise InvalidInput(f"invalid memory name {name!r}: control characters are not allowed")
    return name


def name_for_path(root: Path, path: Path) -> str:
    """The name of the file ``path`` under ``root`` (no validation of the alphabet)."""
    relative = path.relative_to(root).as_posix()
    if relative.endswith(SUFFIX):
        relative = relative[: -len(SUFFIX)]
    return relative


def path_for_name(root: Path, name: str, *, strict: bool = True, resolved_root: Path | None = None) -> Path:
    """The file a (validated) name maps to, refusing anything that escapes ``root``.

    Symlinks are resolved: a name whose file or folder is a link pointing
    outside the root is refused. ``resolved_root``: ``root.resolve()``, when
    the caller keeps it.
    """
    name = validate_name(name, strict=strict)
    path = root / (name + SUFFIX)
    resolved_root = resolved_root or root.resolve()
    # Resolve the deepest existing ancestor so links inside the tree are checked.
    probe = path
    while not probe.exists() and probe != root and probe.parent != probe:
        probe = probe.parent
    try:
        probe.resolve().relative_to(resolved_root)
    except ValueError as exc:
        raise InvalidInput(f"memory name {name!r} points outside the memories root") from exc
    except (RuntimeError, OSError) as exc:  # pathlib reports a symbolic link loop as RuntimeError
        raise InvalidInput(f"memory name {name!r} cannot be read: its file is a symbolic link loop") from exc
    return path
