"""Contradiction candidates: memories about the same subject whose statements differ.

A memory's *subjects* are its title (case and punctuation folded), the
``entity``, ``subject`` or ``key`` of its front matter, and its tag set when it
has two tags or more. Only memories sharing a subject are compared, so the work
grows with the size of each subject group, never with all pairs. Within a
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

from memrouter.janitor.records import Entry, Statement

__all__ = ["Conflict", "find_contradictions", "statements", "subjects"]

SUBJECT_KEYS = ("entity", "subject", "key")
# Keys that say where a note came from or when, not what is true: two notes differ there without contradicting.
PROVENANCE_KEYS = frozenset(
    "author created updated date source sources evidence context related see also references reference links link "
    "tags tag example examples note notes session pr issue commit status atomicity impact tag id title".split()
)
MAX_VALUE_WORDS = 12
_FACT = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?([A-Za-z][\w .()/-]{0,40}?)(?:\*\*|__)?\s*(?::|=)\s*(?:\*\*|__)?\s*(.+?)\s*$"
)
_NUMBER = re.compile(r"\bv?\d+(?:[.,]\d+)*%?(?![\w-])")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}\b")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
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


def statements(body: str) -> dict[tuple[str, str], str]:
    """A memory's comparable statements: (kind, key) -> value, for the three kinds of the module docstring."""
    found: dict[tuple[str, str], str] = {}
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = _FACT.match(line)
        if match and not fenced:
            key = " ".join(match.group(1).lower().split())
            value = match.group(2).strip().strip("*_`").strip().rstrip(".").lower()
            if key not in PROVENANCE_KEYS and value and not value.startswith("//") and not _DATE.search(value):
                if len(value.split()) <= MAX_VALUE_WORDS:
                    found.setdefault(("fact", key), value)
                    continue
        for sentence in _SENTENCE.split(line):
            _sentence_statements(sentence, found)
    return found


def _sentence_statements(sentence: str, found: dict[tuple[str, str], str]) -> None:
    lowered = sentence.lower().strip()
    if not lowered or _DATE.search(lowered):
        return
    words = _WORDS.findall(lowered)
    if len(words) < 4:
        return
    numbers = _NUMBER.findall(lowered)
    if numbers:
        template = " ".join(_WORDS.findall(_NUMBER.sub(" # ", lowered)))
        if sum(word.isalpha() for word in template.split()) >= 3:
            found.setdefault(("number", template), " ".join(numbers))
        return
    negated = sum(word in _NEGATIONS for word in words)
    kept = " ".join(w for w in (_NEGATIONS.get(word, word) for word in words) if w)
    found.setdefault(("negation", kept), "negated" if negated % 2 else "affirmed")


def _differ(kind: str, older: str, newer: str) -> bool:
    """Whether two values of one statement contradict (not a mere rewording or typo)."""
    if older == newer:
        return False
    if kind != "fact":
        return True
    old_words, new_words = set(older.split()), set(newer.split())
    if old_words <= new_words or new_words <= old_words:
        return False  # words added or dropped: an elaboration, not a contradiction
    only_old, only_new = old_words - new_words, new_words - old_words
    if len(only_old) == 1 and len(only_new) == 1:
        a, b = next(iter(only_old)), next(iter(only_new))
        if a.isalpha() and b.isalpha() and SequenceMatcher(None, a, b).ratio() >= 0.8:
            return False  # a typo
    return True


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
    parsed: dict[int, dict[tuple[str, str], str]] = {}
    found: dict[tuple[int, int], Conflict] = {}
    for subject, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        holders: dict[tuple[str, str], list[int]] = defaultdict(list)
        for position in members:
            if position not in parsed:
                parsed[position] = statements(entries[position].body)
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
