"""Contradiction candidates: memories about the same subject whose statements differ.

A memory's *subjects* are its title (case and punctuation folded), the
``entity``, ``subject`` or ``key`` of its front matter, and its tag set when it
has two tags or more. Only memories sharing a subject are compared, so the work
grows with the size of each subject group, never with all pairs; a subject shared
by more than ``MAX_GROUP`` memories is too generic to be one and is skipped. Within a
group, each memory's statements are read three ways:

- **key facts**: ``key: value`` / ``key = value`` lines (``- port: 5432``,
  ``**Database**: PostgreSQL 16``); the same key with another value differs,
  unless one value only adds or drops words of the other, differs by a typo,
  or the key is provenance (dates, sources, evidence ...);
- **numbers and versions**: a sentence that is the same but for its numbers
  (``the pool holds 20 connections`` / ``... 50 connections``);
- **negation**: a sentence that is the same but for a negation
  (``the cache is enabled`` / ``the cache is not enabled``).

Each differing pair is reported once, older against newer, with the
statements as evidence; the newer one wins.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher

from memrouter.ops.janitor.records import Entry, Statement

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Conflict", "find_contradictions", "statements", "subjects"]

SUBJECT_KEYS = ("entity", "subject", "key")
# Keys that say where a note came from or when, not what is true: two notes differ there without contradicting.
PROVENANCE_KEYS = frozenset(
    "author created updated date source sources evidence context related see also references reference links link "
    "tags tag example examples note notes session pr issue commit status atomicity impact tag id title".split()
)
MAX_VALUE_WORDS = 12
# A subject more memories share than this is a generic title or tag set ("Notes", [ci, github]), not one subject.
MAX_GROUP = 30
_FACT = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?([A-Za-z][\w .()/-]{0,40}?)(?:\*\*|__)?\s*(?::|=)\s*(?:\*\*|__)?\s*(.+?)\s*$"
)
_NUMBER = re.compile(r"\bv?\d+(?:[.,]\d+)*%?(?![\w-])")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}\b")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_TEMPLATE_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|#")
_NEGATIONS = {"not": "", "no": "", "never": "", "cannot": "can", "can't": "can", "won't": "will", "don't": "do",
              "doesn't": "does", "isn't": "is", "aren't": "are", "wasn't": "was", "shouldn't": "should",
              "mustn't": "must", "didn't": "did", "hasn't": "has", "haven't": "have"}  # fmt: skip
_FOLD = re.compile(r"[^\w]+")


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two memories on one subject that differ: ``older`` is outranked by ``newer``."""

    older: int
    newer: int
    subject: str
    statements: tuple[Statement, ...]


def subjects(entry: Entry) -> list[str]:
    """The subjects a memory is about (see the module docstring)."""
    found = []
    title = _FOLD.sub(" ", entry.title.lower()).strip()
    if title:
        found.append(f"title:{title}")
    for key in SUBJECT_KEYS:
        value = entry.extra.get(key)
        if isinstance(value, str) and value.strip():
            found.append(f"{key}:{_FOLD.sub(' ', value.lower()).strip()}")
    if len(entry.tags) >= 2:
        found.append("tags:" + ",".join(sorted(tag.lower() for tag in entry.tags)))
    return found


def statements(body: str, skip: frozenset[str] = frozenset()) -> dict[tuple[str, str], str]:
    """A memory's comparable statements: (kind, key) -> value, for the three kinds of the module docstring.

    A key the memory itself gives two values (a list of ``Source:`` lines) says nothing single: it is left out.
    Lines in ``skip`` (those every memory of a group shares word for word) cannot differ and are not read.
    """
    found: dict[tuple[str, str], str] = {}
    ambiguous: set[tuple[str, str]] = set()

    def add(key: tuple[str, str], value: str) -> None:
        if found.setdefault(key, value) != value:
            ambiguous.add(key)

    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if line.strip() in skip:
            continue
        match = _FACT.match(line)
        if match and not fenced:
            key = " ".join(match.group(1).lower().split())
            value = match.group(2).strip().strip("*_`").strip().rstrip(".").lower()
            if key not in PROVENANCE_KEYS and value and not value.startswith("//") and not _DATE.search(value):
                if len(value.split()) <= MAX_VALUE_WORDS and not value.endswith(":"):
                    add(("fact", key), value)
            line = match.group(2)  # its value may hold sentences too (``Update: the pool holds 50``)
        for sentence in _SENTENCE.split(line):
            _sentence_statements(sentence, add)
    return {key: value for key, value in found.items() if key not in ambiguous}


def _sentence_statements(sentence: str, add: Callable[[tuple[str, str], str], None]) -> None:
    lowered = sentence.lower().replace("\u2019", "'").strip()
    if not lowered or _DATE.search(lowered):
        return
    words = _WORDS.findall(lowered)
    if len(words) < 4:
        return
    numbers = _NUMBER.findall(lowered)
    if numbers:
        template = " ".join(_TEMPLATE_WORDS.findall(_NUMBER.sub(" # ", lowered)))
        if sum(word.isalpha() for word in template.split()) >= 3:
            add(("number", template), " ".join(sorted(numbers)))  # sorted: numbers swapped in place still agree
        return
    negated = sum(word in _NEGATIONS for word in words)
    kept = " ".join(w for w in (_NEGATIONS.get(word, word) for word in words) if w)
    add(("negation", kept), "negated" if negated % 2 else "affirmed")


def _differ(kind: str, older: str, newer: str) -> bool:
    """Whether two values of one statement contradict: some words replaced, not only added, dropped or mistyped."""
    if older == newer:
        return False
    if kind != "fact":
        return True
    a, b = _WORDS.findall(older), _WORDS.findall(newer)
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "replace":
            continue  # equal, or words added or dropped: an elaboration, not a contradiction
        old, new = a[i1:i2], b[j1:j2]
        if sorted(old) == sorted(new):
            continue  # words swapped
        if len(old) == len(new) and all(_typo(x, y) for x, y in zip(old, new, strict=True)):
            continue
        return True
    return False


def _typo(a: str, b: str) -> bool:
    """Two words one slip apart (a letter dropped, added, changed or two swapped); never numbers."""
    if not (a.isalpha() and b.isalpha()) or a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]])
    long, short = (a, b) if len(a) > len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def find_contradictions(entries: list[Entry], newer: list[int]) -> list[Conflict]:
    """Pairs of ``entries`` (by position) on one subject whose statements differ.

    ``newer`` ranks the entries by age (a higher number is newer). Each
    statement value is compared against the newest memory holding another
    value, so a group of m memories gives at most m - 1 pairs per statement.
    """
    groups: dict[str, list[int]] = defaultdict(list)
    for position, entry in enumerate(entries):
        for subject in subjects(entry):
            groups[subject].append(position)
    lines: dict[int, set[str]] = {}
    found: dict[tuple[int, int], Conflict] = {}
    for subject, members in sorted(groups.items()):
        if not 2 <= len(members) <= MAX_GROUP:
            continue
        for position in members:
            if position not in lines:
                lines[position] = {line.strip() for line in entries[position].body.splitlines()}
        shared = frozenset(set.intersection(*(lines[position] for position in members)))
        parsed = {position: statements(entries[position].body, shared) for position in members}
        holders: dict[tuple[str, str], list[int]] = defaultdict(list)
        for position in members:
            for key in parsed[position]:
                holders[key].append(position)
        differing: dict[tuple[int, int], list[Statement]] = defaultdict(list)
        for key, positions in holders.items():
            if len(positions) < 2:
                continue
            ordered = sorted(positions, key=lambda p: newer[p])
            newest = ordered[-1]
            for position in ordered[:-1]:
                old_value, new_value = parsed[position][key], parsed[newest][key]
                if _differ(key[0], old_value, new_value):
                    differing[(position, newest)].append(Statement(key[0], key[1], old_value, new_value))
        for pair, changed in differing.items():
            if pair not in found:
                found[pair] = Conflict(pair[0], pair[1], subject, tuple(changed))
    return list(found.values())
