"""Turning a save request into a memory's name and file text, validated before any write.

``compose`` applies the fields a caller passes (title, tags, kind, ...) to the
content's front matter (keys it does not know are kept as written), makes a
name from the title when none is given, and refuses what cannot be stored.
"""

from __future__ import annotations

import re

from memrouter.core.errors import InvalidInput
from memrouter.core.model import CHANNELS, STATUSES
from memrouter.core.names import validate_name
from memrouter.core.query import check_filter
from memrouter.store import frontmatter
from memrouter.store.parse import first_heading

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_FIELD_CHARS",
    "MAX_REASON_CHARS",
    "check_content",
    "check_reason",
    "compose",
    "derive_title",
    "field_changes",
]

MAX_CONTENT_CHARS = 1_000_000
MAX_FIELD_CHARS = 500
MAX_REASON_CHARS = 2000
# A title made from plain text: its first sentence, cut at a word near this length; a name from its first words.
DERIVED_TITLE_CHARS = 80
DERIVED_NAME_WORDS = 8
DERIVED_NAME_CHARS = 60
# The name of a plain note whose first words hold no letters or digits of the name alphabet.
DERIVED_FALLBACK_NAME = "note"


def compose(content: str, name: str | None, **fields: Any) -> tuple[str, str]:
    """The validated name and the file text for a save of ``content`` with ``fields``.

    A ``title`` for content without a heading becomes its ``# `` heading
    (plain files are the norm), not front matter; the other fields go into
    the front matter.
    """
    if not isinstance(content, str):
        raise InvalidInput(f"content must be text, not {type(content).__name__}")
    if not content.strip():
        raise InvalidInput("content must not be empty")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"content is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}")
    check_content(content)
    if name is not None:
        name = validate_name(name, strict=False)  # a bad name fails before anything else is done

    title = fields.pop("title", None)
    heading = first_heading(frontmatter.split(content)[1])
    if title is not None and heading is None and isinstance(title, str) and title.strip():
        content = _with_heading(content, title.strip())
        heading = title = title.strip()
    if title is not None and title == heading:
        title = None
    derived = name is None and title is None and heading is None
    if derived:  # plain text: its first sentence is the title (front matter: the text stays as written)
        title = derive_title(frontmatter.split(content)[1]) or None
    changes = field_changes(title=title, **fields)
    text = frontmatter.update(content, changes) if changes else content
    if name is None:
        if derived:
            name = _name_from(title or "", DERIVED_NAME_CHARS, DERIVED_NAME_WORDS, required=False)
            name = name or DERIVED_FALLBACK_NAME
        else:
            name = _name_from(title or first_heading(frontmatter.split(text)[1]) or "")
    return validate_name(name, strict=False), text


def derive_title(body: str) -> str:
    """A title for text without one: its first line's first sentence, without markdown marks, about
    ``DERIVED_TITLE_CHARS`` at most (cut at a word); ``""`` for text with no words."""
    for line in body.splitlines():
        line = re.sub(r"^\s*(?:[#>*+-]+|\d+[.)])\s*", "", line)  # a heading, quote or list mark
        line = "".join(char if char.isprintable() else " " for char in line)  # no control characters in a field
        line = re.sub(r"[*_`]+", "", line).strip()
        if not re.search(r"\w", line):
            continue
        sentence = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
        if len(sentence) > DERIVED_TITLE_CHARS:
            cut = sentence[:DERIVED_TITLE_CHARS].rsplit(" ", 1)[0]
            sentence = cut if len(cut) >= DERIVED_TITLE_CHARS // 2 else sentence[:DERIVED_TITLE_CHARS]
        return sentence.rstrip(" .,;:!?")
    return ""


def check_content(text: str) -> None:
    """Refuse text a file cannot hold as UTF-8: NUL characters and lone surrogates."""
    if "\x00" in text:
        raise InvalidInput("memory content must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"memory content is not valid Unicode text (a lone surrogate at character {exc.start})"
        ) from exc


def field_changes(**fields: Any) -> dict[str, Any]:
    """The front-matter changes for the given fields (``None`` means "leave as is")."""

    changes: dict[str, Any] = {}
    for key, value in fields.items():
        if value is None:
            continue
        if key == "tags":
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, (list, tuple, set, frozenset)):
                raise InvalidInput(f"tags must be text or a list of text, not {type(value).__name__}")
            value = [check_filter("tag", tag) for tag in value]
        elif key == "channel" and value not in CHANNELS:
            raise InvalidInput(f"unknown channel {value!r}; expected one of {', '.join(CHANNELS)}")
        elif key == "status" and value not in STATUSES:
            raise InvalidInput(f"unknown status {value!r}; expected one of {', '.join(STATUSES)}")
        elif key == "confidence":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise InvalidInput("confidence must be a number between 0 and 1")
            value = float(value)
        else:
            value = check_filter(key, value, MAX_FIELD_CHARS)
        changes[key] = value
    return changes


def check_reason(reason: object) -> str | None:
    """A delete or invalidation reason: text of at most 2,000 characters, or None."""
    if reason is None:
        return None
    if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(f"reason must be text of at most {MAX_REASON_CHARS:,} characters")
    if any(0xD800 <= ord(char) <= 0xDFFF for char in reason):
        raise InvalidInput("reason must be valid Unicode text (it holds a lone surrogate)")
    return reason


def _with_heading(content: str, title: str) -> str:

    _, body = frontmatter.split(content)
    if "\n" in title or "\r" in title:
        raise InvalidInput("title must be a single line")
    head = content[: len(content) - len(body)]
    return f"{head}# {title}\n\n{body.lstrip()}"


def _name_from(title: str, chars: int = 120, words: int | None = None, *, required: bool = True) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    if words is not None:
        slug = "-".join(slug.split("-")[:words])
    if len(slug) > chars:
        cut = slug[:chars].rsplit("-", 1)[0]
        slug = cut if words is not None and cut else slug[:chars]
    slug = slug.strip("-")
    if not slug and required:
        raise InvalidInput("give the memory a name, or content with a '# Title' heading or a title")
    return slug
