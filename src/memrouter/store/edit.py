"""Text edits on memory files: search-and-replace and ``mem:`` reference rewriting.

These are pure functions over text; the Router applies them to files (so a
write stays atomic and the index follows). They behave like Serena's memory
tools, so agents used to those get the same answers:

- ``replace_text``: ``literal`` mode matches the needle exactly; ``regex``
  mode uses Python's ``re`` with MULTILINE and DOTALL. The replacement is
  taken verbatim, except that in regex mode ``$!1``, ``$!2`` ... insert the
  matched groups. No match, several matches without
  ``allow_multiple_occurrences``, or a match over several lines that holds
  another match of the pattern (ambiguous), is an error that changes nothing.
- ``rewrite_references``: ``mem:<old>`` becomes ``mem:<new>`` wherever it is
  not part of a longer name (so ``mem:auth`` does not touch ``mem:auth-v2``).
"""

from __future__ import annotations

import re

from memrouter.core.errors import InvalidInput

__all__ = ["EDIT_MODES", "MAX_PATTERN_LENGTH", "replace_text", "rewrite_references", "REFERENCE_PREFIX"]

EDIT_MODES = ("literal", "regex")
MAX_PATTERN_LENGTH = 10_000
REFERENCE_PREFIX = "mem:"
NO_MATCH = "Error: No matches of search expression found."
AMBIGUOUS = (
    "Match is ambiguous: the search pattern matches multiple overlapping occurrences. "
    "Please revise the search pattern to be more specific to avoid ambiguity, "
    "e.g. by matching specific context after the match, or try using the literal mode."
)
# Characters a memory name is made of; a reference ends where they stop (a dot
# ends it too unless a name character follows: "see `mem:auth`." is a sentence).
_NAME_CHAR = r"[A-Za-z0-9_\-/]"
_BACKREFERENCE = re.compile(r"\$!(\d+)")


def replace_text(
    text: str, needle: str, repl: str, mode: str = "literal", *, allow_multiple_occurrences: bool = False
) -> tuple[str, int]:
    """Replace ``needle`` in ``text``; returns the new text and how many places changed."""
    if mode not in EDIT_MODES:
        raise InvalidInput(f"Invalid mode: {mode!r}, expected 'literal' or 'regex'.")
    if not isinstance(needle, str) or not needle:
        raise InvalidInput("the search expression (needle) must be non-empty text")
    if not isinstance(repl, str):
        raise InvalidInput("the replacement (repl) must be text")
    if len(needle) > MAX_PATTERN_LENGTH:
        raise InvalidInput(f"the search expression is longer than {MAX_PATTERN_LENGTH} characters")
    if mode == "literal":
        count = text.count(needle)
        _check_count(count, allow_multiple_occurrences)
        return text.replace(needle, repl), count
    try:
        pattern = re.compile(needle, re.MULTILINE | re.DOTALL)
    except re.error as exc:
        raise InvalidInput(f"invalid regular expression: {exc}") from exc

    def substitute(match: re.Match[str]) -> str:
        matched = match.group(0)
        # A match spanning lines that holds another match of the same pattern
        # (``<a>.*?<b>`` over ``<a> ... <a> ... <b>``) probably took more than meant.
        if "\n" in matched and pattern.search(matched[1:]):
            raise InvalidInput(AMBIGUOUS)

        def group(ref: re.Match[str]) -> str:
            number = int(ref.group(1))
            if number > (pattern.groups or 0):
                raise InvalidInput(
                    f"Backreference $!{number} refers to a group that does not exist in the search expression"
                )
            return match.group(number) or ""

        return _BACKREFERENCE.sub(group, repl)

    matches = sum(1 for _ in pattern.finditer(text))
    _check_count(matches, allow_multiple_occurrences)
    return pattern.sub(substitute, text), matches


def _check_count(count: int, allow_multiple: bool) -> None:
    if count == 0:
        raise InvalidInput(NO_MATCH)
    if count > 1 and not allow_multiple:
        raise InvalidInput(
            f"Expression matches {count} occurrences. Please revise the expression to be more specific "
            "or enable allow_multiple_occurrences if this is expected."
        )


def rewrite_references(text: str, old: str, new: str) -> tuple[str, int]:
    """Point every ``mem:<old>`` reference in ``text`` at ``new``; returns the text and the count."""
    pattern = rf"(?<![A-Za-z0-9_\-/.]){re.escape(REFERENCE_PREFIX + old)}(?!{_NAME_CHAR}|\.[A-Za-z0-9_-])"
    replacement = REFERENCE_PREFIX + new
    return re.subn(pattern, lambda _match: replacement, text)
