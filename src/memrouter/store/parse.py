"""Turn a memory file's text into a ``Memory`` record.

Both front-matter styles found in real corpora are understood: the
``name/description/type`` style (``type`` is read as ``kind``) and the
``id/subject/citations/tags`` style (``subject`` is read as ``title``).
Everything else is kept in ``Memory.extra``.
"""

from __future__ import annotations

from typing import Any

from memrouter.core.model import CHANNELS, STATUSES, Memory, channel_for_kind
from memrouter.store import frontmatter
from memrouter.store.markdown import iter_blocks

__all__ = ["content_hash", "sha256_hex", "parse_memory", "first_heading"]

_CONFIDENCE_WORDS = {"high": 0.9, "medium": 0.6, "med": 0.6, "low": 0.3}
_STRING_FIELDS = (
    "source",
    "author",
    "verified_by",
    "created",
    "updated",
    "valid_from",
    "valid_until",
    "supersedes",
    "superseded_by",
    "expires",
)
KNOWN_KEYS = frozenset(
    {"title", "tags", "channel", "kind", "scope", "status", "confidence", "anchors", *_STRING_FIELDS}
)


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` in lower-case hex."""
    import hashlib  # lazy: loading OpenSSL costs tens of ms, and a search may hash nothing

    return hashlib.sha256(data).hexdigest()


def content_hash(text: str) -> str:
    """SHA-256 of the UTF-8 bytes of ``text``, lower-case hex: memrouter's one content hash.

    A memory file's hash is that of its whole text; an external service's
    memory is hashed the same way, so the router and sync compare them directly.
    """
    return sha256_hex(text.encode("utf-8"))


def first_heading(body: str) -> str | None:
    """The text of the first level-1 heading that has text, as ``store.markdown`` reads it.

    Both ``# Title`` and a line underlined with ``===`` count; a ``#`` line
    inside a code fence or the front matter does not.
    """
    for block in iter_blocks(body):
        if block.kind == "heading" and block.level == 1 and block.text:
            return block.text
    return None


def _as_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, (list, tuple)):
        return tuple(str(item).strip() for item in value if str(item).strip())
    return (str(value),)


def _as_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def _confidence(value: Any, problems: list[str]) -> float:
    if value is None:
        return 1.0
    if isinstance(value, str) and value.strip().lower() in _CONFIDENCE_WORDS:
        return _CONFIDENCE_WORDS[value.strip().lower()]
    try:
        number = float(value)
    except (TypeError, ValueError):
        problems.append(f"confidence {value!r} is not a number between 0 and 1")
        return 1.0
    if not 0.0 <= number <= 1.0:
        problems.append(f"confidence {number} is outside 0..1")
        return min(1.0, max(0.0, number))
    return number


def parse_memory(name: str, path: str, text: str) -> Memory:
    """Build the record for one file; problems are collected, never raised."""
    parsed = frontmatter.parse(text)
    data = parsed.data
    problems: list[str] = [parsed.problem] if parsed.problem else []

    title = _as_text(data.get("title")) or _as_text(data.get("subject"))
    title = title or first_heading(parsed.body) or name.rsplit("/", 1)[-1]
    kind = _as_text(data.get("kind")) or _as_text(data.get("type"))
    kind = kind.lower() if kind else None

    channel = _as_text(data.get("channel"))
    if channel is not None and channel not in CHANNELS:
        problems.append(f"unknown channel {channel!r} (expected one of {', '.join(CHANNELS)})")
        channel = None
    status = _as_text(data.get("status")) or "active"
    if status not in STATUSES:
        problems.append(f"unknown status {status!r} (expected one of {', '.join(STATUSES)})")
        status = "active"

    strings = {key: _as_text(data.get(key)) for key in _STRING_FIELDS}
    extra = {key: value for key, value in data.items() if key not in KNOWN_KEYS}
    return Memory(
        name=name,
        path=path,
        text=text,
        hash=content_hash(text),
        body=parsed.body,
        title=title,
        tags=_as_list(data.get("tags")),
        channel=channel or channel_for_kind(kind, name),
        kind=kind,
        scope=_as_text(data.get("scope")) or "project",
        status=status,
        confidence=_confidence(data.get("confidence"), problems),
        anchors=_as_list(data.get("anchors")),
        extra=extra,
        problems=tuple(problems),
        **strings,
    )
