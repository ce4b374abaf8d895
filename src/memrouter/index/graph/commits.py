"""Commit hashes in a memory's text: runs of 7 to 40 hex digits that name a commit.

Split from ``memrouter.index.graph.extract`` (which reads the mentions): a run
counts when it stands in backticks (also ``abc1234^:path``), opens a line or
list item before a colon, or has a git word near it on its line, and never
right after a word naming another digest (``md5``, ``blob`` ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["HEX", "hex_runs", "is_commit"]

HEX = re.compile(r"(?<![\w/.#-])[0-9a-f]{7,40}(?![\w-])")
# Words that make a run of hex digits near them (same line) a commit hash.
_GIT_WORDS = ("commit", "sha", "head", "cherry-pick", "revert", "rebase", "squash", "fixup", "merge", "diff",
              "checkout", "reset", "bisect", "blame", "git show", "git log", "amend", "..", "origin/", "main", "tip",
              "tag", "pr #", "base", "detached", "pinned", "landed", "branch")  # fmt: skip
# Words right before hex digits that make them some other digest.
_NOT_COMMIT = ("md5", "blob", "sha256", "sha-256", "sha512", "tree", "agent", "uuid", "hash")
_HEX_BYTES = bytes(120 if chr(b) in "0123456789abcdef" else 32 for b in range(256))


def hex_runs(text: str, raw: bytes | None = None) -> Iterator[re.Match[str]]:
    """``HEX`` matches in ``text``, found fast: hex digits become ``x`` in a byte copy, so
    runs of seven are found by ``bytes.find``; only those are checked with the pattern.
    ``raw``: ``text`` encoded as UTF-8 with ``surrogatepass``, when the caller has it already."""
    if raw is None:
        raw = text.encode("utf-8", "surrogatepass")
    data = raw.translate(_HEX_BYTES)
    ascii_only = len(raw) == len(text)
    at = data.find(b"xxxxxxx")
    while at >= 0:
        end = at + 7
        while end < len(data) and data[end] == 120:  # b"x"
            end += 1
        start = at if ascii_only else len(raw[:at].decode("utf-8", "surrogatepass"))
        if end - at <= 40 and (match := HEX.match(text, start)) is not None:
            yield match
        at = data.find(b"xxxxxxx", end)


def is_commit(text: str, start: int, end: int) -> bool:
    """Whether hex digits at ``start:end`` name a commit: in backticks (also ``abc1234^:path``), opening a
    line or list item before a colon, or near a git word; never right after a word naming another digest."""
    before = text[max(0, start - 12) : start].lower().rstrip(" `*(")
    if before.endswith(_NOT_COMMIT):
        return False
    after = text[end : end + 1]
    if text[start - 1 : start] == "`" and after in ("`", "^", "~", ":"):
        return True
    if after == ":" and not text[text.rfind("\n", 0, start) + 1 : start].strip(" \t-*+"):
        return True
    return _near_git_word(text, start, end)


def _near_git_word(text: str, start: int, end: int) -> bool:
    """Whether a git word (``_GIT_WORDS``) on the same line begins at most 20 characters after ``start``
    and ends at most 60 before ``end``: hex digits there name a commit."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : len(text) if line_end < 0 else line_end].lower()
    start, end = start - line_start, end - line_start
    for word in _GIT_WORDS:
        at = line.find(word, max(0, end - 60 - len(word)))
        while 0 <= at <= start + 20:
            if word == ".." or at == 0 or not line[at - 1].isalnum():
                return True
            at = line.find(word, at + 1)
    return False
