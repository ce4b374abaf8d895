"""A seeded set for measuring the janitor: real memories, each copied with small edits, and planted contradictions.

``seeded_set(originals, seed)`` returns the memories to write and the answers:

- every original ``N`` gets a copy ``copies/N`` with small edits (about one
  per 40 words, at least one: a word dropped, two neighbours swapped, a filler
  word inserted, a one-letter typo), newer than the original: a planted
  near-duplicate pair;
- ``contradictions`` originals also get a newer note ``notes/N-update`` with
  the same title that restates one of its statements differently: a changed
  number (when it has a sentence with one), a changed ``key: value`` line, or
  a negated sentence (else a fact line added to the original and contradicted
  in the note). The note is short, so it is not a near-duplicate.

Generated at run time from whatever originals it is given; nothing here is copied from a corpus.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from memrouter.store import frontmatter
from memrouter.store.parse import first_heading

__all__ = ["SeededSet", "seeded_set"]

_NUMBER = re.compile(r"(?<![\w.-])(\d{1,4})(?![\w-])")
_HEADING = re.compile(r"^#\s+(.+)$", re.M)
_FACT_LINE = re.compile(r"^\s*(?:[-*]\s+)?(?:\*\*)?([A-Za-z][\w ]{2,30}?)(?:\*\*)?:\s*(?:\*\*)?(\S[^\n]{0,60})$", re.M)
_AFFIRMATIVE = re.compile(r"\b(is|are|should|must|can|will|does)\b")
FILLERS = ("also", "really", "then", "just", "still")
NEGATIONS = {"not", "no", "never", "cannot", "can't", "won't", "don't", "doesn't", "isn't", "aren't", "shouldn't"}
PLANTED_KEYS = ("default port", "retry limit", "owner team", "storage engine", "timeout seconds")
PLANTED_VALUES = {
    "default port": ("5432", "5433"),
    "retry limit": ("3", "5"),
    "owner team": ("platform", "payments"),
    "storage engine": ("postgresql", "mysql"),
    "timeout seconds": ("30", "90"),
}


@dataclass(slots=True)
class SeededSet:
    """The memories (name -> text) and the planted answers."""

    memories: dict[str, str] = field(default_factory=dict)
    duplicate_pairs: set[tuple[str, str]] = field(default_factory=set)  # (original, copy)
    contradictions: set[tuple[str, str]] = field(default_factory=set)  # (older, newer)
    kinds: dict[str, str] = field(default_factory=dict)  # newer -> how it contradicts


def _dated(text: str, day: int) -> str:
    """``text`` with an ``updated`` date in its front matter (the janitor's "newer")."""

    return frontmatter.update(text, {"updated": f"2026-01-{day:02d}T00:00:00Z"})


def _edit_body(text: str, rng: random.Random) -> str:
    """``text`` with small edits in its body (front matter untouched)."""

    raw, body = frontmatter.split(text)
    edited = _edit(body, rng)
    return text[: len(text) - len(body)] + edited if raw is not None else edited


def _edit(text: str, rng: random.Random) -> str:
    """Small edits that keep the meaning: never a negation, a number or a line break touched."""
    words = text.split(" ")

    def plain(at: int) -> bool:
        word = words[at]
        bare = re.sub(r"[^a-z']", "", word.lower().replace("\u2019", "'"))
        return bool(word) and "\n" not in word and bare not in NEGATIONS and not any(c.isdigit() for c in word)

    for _ in range(max(1, len(words) // 40)):
        at = rng.randrange(len(words))
        if not plain(at):
            continue
        choice = rng.randrange(4)
        if choice == 0 and len(words) > 5:
            del words[at]
        elif choice == 1 and at + 1 < len(words) and plain(at + 1):
            words[at], words[at + 1] = words[at + 1], words[at]
        elif choice == 2:
            words.insert(at, rng.choice(FILLERS))
        else:
            word = words[at]
            letters = [i for i, c in enumerate(word) if c.isalpha()]
            if len(letters) > 3:
                i = rng.choice(letters[1:])
                words[at] = word[:i] + word[i + 1 :]
    return " ".join(words)


def _title(text: str, name: str) -> str:
    """The title the index gives a memory (``memrouter.store.parse``): front matter, first heading, else the name."""

    parsed = frontmatter.parse(text)
    given = parsed.data.get("title") or parsed.data.get("subject")
    return str(given) if given else first_heading(parsed.body) or name.rsplit("/", 1)[-1]


def _prose_lines(text: str) -> list[str]:
    """The lines of plain prose: outside code fences, not headings, tables or times."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.strip() and not line.lstrip().startswith(("#", "|", "---")):
            if len(re.findall(r"[A-Za-z]{2,}", line)) >= 6 and not re.search(r"\d{4}-\d{2}|\d:\d\d", line):
                lines.append(line)
    return lines


def _contradict(text: str, rng: random.Random) -> tuple[str, str, str] | None:
    """A sentence of ``text`` restated to contradict it: (kind, the original's text, the restatement)."""
    lines = _prose_lines(text)
    rng.shuffle(lines)
    for line in lines:
        match = _NUMBER.search(line, len(line) - len(line.lstrip(" -*0123456789.)")))  # not a list's ordinal
        if match and "`" not in line and "**" not in line[: match.start()]:
            changed = str(int(match.group(1)) + rng.randint(1, 9))
            return "number", text, line[: match.start(1)] + changed + line[match.end(1) :]
    for line in lines:
        match = _AFFIRMATIVE.search(line)
        if match and len(line.split()) <= 40 and ":" not in line and not re.search(r"\bnot\b", line):
            return "negation", text, line[: match.end()] + " not" + line[match.end() :]
    return None


def seeded_set(originals: dict[str, str], seed: int = 7, contradictions: int = 50) -> SeededSet:
    """The seeded set over ``originals`` (name -> text); see the module docstring."""
    rng = random.Random(seed)
    result = SeededSet()
    names = sorted(originals)
    planted = set(rng.sample(names, min(contradictions, len(names))))
    for number, name in enumerate(names):
        text = originals[name]
        note = None
        if name in planted:
            title = _title(text, name)
            found = _contradict(text, rng) if number % 3 else None
            if found is None:
                key = PLANTED_KEYS[number % len(PLANTED_KEYS)]
                old, new = PLANTED_VALUES[key]
                text = f"{text.rstrip()}\n\n- {key}: {old}\n"
                found = ("fact", text, f"- {key}: {new}")
            kind, text, restated = found
            note = _dated(f"# {title}\n\n{restated.strip()}\n", 20)
            result.kinds[f"notes/{name}-update"] = kind
        result.memories[name] = _dated(text, 1)
        result.memories[f"copies/{name}"] = _dated(_edit_body(text, rng), 10)
        result.duplicate_pairs.add((name, f"copies/{name}"))
        if note is not None:
            result.memories[f"notes/{name}-update"] = note
            result.contradictions.add((name, f"notes/{name}-update"))
    return result
