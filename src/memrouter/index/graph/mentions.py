"""Mentions in a memory's prose, found by patterns: ADR ids, issue and PR references, commits, code paths.

Split from ``memrouter.index.graph.extract`` (which reads links and keys). Each
kind is found by one scan of the whole text for its trigger (``adr``, ``#``,
seven hex digits, a known file extension); only the spots found are looked
at in Python, so a text holding none of a kind's triggers costs one search.
``mentions`` yields ``(offset, edge type, key, label)``: each kind's in order
of offset, the kinds one after another.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from functools import lru_cache

from memrouter.index.graph.commits import hex_runs, is_commit

__all__ = ["ADR", "key_label", "mentions", "path_key"]

Mention = tuple[int, str, str, str]

ADR = re.compile(r"(?<![A-Za-z0-9])ADR-?0*(\d{1,4})(?![\d])", re.IGNORECASE)
_ADR_LOWER = re.compile(r"adr-?0*(\d{1,4})(?!\d)")
_ISSUE = re.compile(r"#(\d{1,6})(?!\w|-[^\d#>])")  # "#12-#14" and "#12-14" are ranges; "#12-intro" an anchor
_SEVERITY = re.compile(r"\((?:low|medium|high|critical|blocker)\)", re.IGNORECASE)
_ISSUE_LIST = re.compile(r"(?<![\w&])#\d{2,6}/$")
_REPO_BEFORE = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w.-]{0,38}/[\w.-]{1,100})$")
_ISSUE_CONTEXT = re.compile(
    r"\b(?:issues?|prs?|pull|pull requests?|fix(?:es|ed)?|clos(?:es|ed|e)|resolv(?:es|ed|e)|refs?|see|merged|"
    r"tracked|follow-up|duplicate of)\b(?:[^#\n]|#\d{1,6}\b){0,24}$",
    re.IGNORECASE,
)
_PATH_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.*@/-"
_EXTENSIONS = (
    "py|pyi|ps1|psm1|psd1|sh|bash|zsh|ts|tsx|js|jsx|mjs|cjs|json|jsonl|yml|yaml|toml|md|go|rs|java|kt|cs|rb|"
    "php|cpp|hpp|sql|ini|cfg|txt|xml|html|css|swift|tf|proto|csv|lock|bicep"
)


def _prefix_tree(words: list[str]) -> str:
    """An alternation of ``words`` sharing their prefixes (``py|pyi|ps1`` -> ``p(?:y(?:i)?|s1)``).

    It matches the strings the plain alternation matches; at each spot it tries a
    branch per first letter instead of one per word."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word[1:])
    branches = []
    for first, rests in groups.items():
        longer = [rest for rest in rests if rest]
        tail = f"(?:{_prefix_tree(longer)})" + ("?" if "" in rests else "") if longer else ""
        branches.append(re.escape(first) + tail)
    return "|".join(branches)


# A path is found from its extension (followed by no word character): the text around it is read in Python.
_PATH_END = re.compile(r"\.(?:" + _prefix_tree(_EXTENSIONS.split("|")) + r")(?![\w/-])")
_PATH = re.compile(
    r"(?<![\w./:~$@%\\-])((?:\.{1,2}/)?(?:\.?[\w*@-][\w.*@-]*/){0,20}\.?[\w*@-][\w.*@-]*\.(?:"
    + _EXTENSIONS
    + r"))(?![\w/-])"
)
_TITLE_WORD = re.compile(r"[A-Z][a-z]+")


@lru_cache(maxsize=16384)  # the same paths come back across a build
def path_key(path: str) -> str | None:
    """The ``path:`` key of a file path inside the root (``None``: it leaves the root)."""
    path = path.replace("\\", "/")
    if ".serena/memories/" in path:
        path = path.split(".serena/memories/", 1)[1]
    path = posixpath.normpath(path.removeprefix("./"))
    if path.startswith(("../", "/")) or path in ("..", "."):
        return None
    return "path:" + path


def key_label(key: str) -> str:
    """A readable label for a key (``adr:12`` -> ``ADR-012``, ``mem:x`` -> ``x``)."""
    kind, _, value = key.partition(":")
    if kind == "adr":
        return f"ADR-{int(value):03d}"
    if kind in ("issue", "tag"):
        return value if kind == "issue" else "#" + value
    return value


def mentions(text: str) -> Iterator[Mention]:
    """Every mention in ``text``: ADR ids, then issues, then commits, then paths."""
    raw = text.encode("utf-8", "surrogatepass")
    # Bytes lower faster than text; no character but A, D and R lowers to a, d or r, so both hold "adr" alike.
    if b"adr" in raw.lower():
        yield from _adrs(text, text.lower())
    if "#" in text:
        yield from _issues(text)
    for match in hex_runs(text, raw):
        digest = match.group(0)
        if not (digest.isdigit() or digest.isalpha()) and is_commit(text, match.start(), match.end()):
            yield match.start(), "mentions", "commit:" + digest[:7], digest[:7]
    yield from _paths(text)


def _adrs(text: str, lower: str) -> Iterator[Mention]:
    found = _ADR_LOWER.finditer(lower) if len(lower) == len(text) else ADR.finditer(text)
    for match in found:
        at = match.start()
        if at == 0 or not text[at - 1].isalnum():
            key = f"adr:{int(match.group(1))}"
            yield at, "mentions", key, key_label(key)


def _issues(text: str) -> Iterator[Mention]:
    for match in _ISSUE.finditer(text):
        at, number_text = match.start(), match.group(1)
        previous = text[at - 1] if at else " "
        # An "owner/repo" ends right before the "#" in a word character, "." or "-".
        named = previous.isalnum() or previous in "_.-"
        repo_match = _REPO_BEFORE.search(text, max(0, at - 140), at) if named else None
        repo = repo_match.group(1) if repo_match else None
        if repo is not None:
            key = f"issue:{repo.lower()}#{int(number_text)}"
            yield at, "mentions", key, key_label(key)
            continue
        if (previous.isalnum() or previous in "_&#/") and not _ISSUE_LIST.search(text, max(0, at - 8), at):
            continue  # "#2050/#2510" lists two issues; "a#1", "&#39;" and "x/#2" name none
        if len(number_text) < 3 and _small_number_is_no_issue(text, at, match.end()):
            continue
        key = f"issue:#{int(number_text)}"
        yield at, "mentions", key, key_label(key)


def _small_number_is_no_issue(text: str, at: int, end: int) -> bool:
    """Whether ``#1``/``#12`` at ``at`` is a rank, a step or a finding's number rather than an issue."""
    line_start = text.rfind("\n", 0, at) + 1
    before = text[max(line_start, at - 40) : at]
    if not before.strip():
        return True  # "#1" opening a line is a step; a heading needs "# " (a space)
    if not _ISSUE_CONTEXT.search(before):
        return True  # "#1" in prose is usually a rank or a step, not an issue
    line_end = text.find("\n", at)
    # "Issue #5 (MEDIUM)": a review finding's number (line_end -1: the text's end)
    return _SEVERITY.search(text, end, line_end % (len(text) + 1)) is not None


def _paths(text: str) -> Iterator[Mention]:
    for hit in _PATH_END.finditer(text):
        low = max(0, hit.start() - 400)
        begin = low + len(text[low : hit.start()].rstrip(_PATH_CHARS))
        # The candidate with the character before it (a space at the text's start): all a path's reading depends on.
        found = _path_mention(text[begin - 1 : hit.end()] if begin else " " + text[: hit.end()])
        if found is not None:
            yield begin, "about_code", found[0], found[1]


@lru_cache(maxsize=16384)  # the same paths come back across a build
def _path_mention(spot: str) -> tuple[str, str] | None:
    """(key, path) of the path that fills ``spot`` after its first character (the one before it), or ``None``."""
    if spot[0] in ":~$%\\":
        return None
    found = _PATH.fullmatch(spot, 1)
    if found is None:
        return None
    path = found.group(1)
    if path.startswith("**") and path[2:3] != "/":
        path = path.lstrip("*")  # "**name.ps1**": bold, not a glob
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if "/" not in path and _TITLE_WORD.fullmatch(stem):
        return None  # "Node.js", "Vue.js": a product name, not a file
    key = path_key(path)
    return None if key is None else (key, path)
