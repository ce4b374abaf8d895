"""The write guard as every write path applies it: one hook for the text about to be written.

``guarded`` runs ``memrouter.guard.check`` on the text about to be written
and returns the text to write: refused text raises ``Refused`` before any
file or index row is touched; an agent's held claim gets
``status: pending_review`` and the ``confidence`` its evidence supports,
injection-looking text ``flags: [injection]``; other text is written as
given. Every path that writes memory text calls it: ``save`` and ``edit``
(``memrouter.ops.writes``), ``rename`` (``memrouter.ops.renaming``) and promotion
(``memrouter.ops.lifecycle``); text a write adds beside the memory (reasons,
sprint goals, scratchpad notes) passes ``refuse_secrets``.
tests/test_guard_paths.py enumerates the paths.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

from memrouter.core.errors import Refused
from memrouter.core.model import Filters
from memrouter.guard import INJECTION_FLAG, Verdict, check
from memrouter.guard.duplicates import LENGTH_RATIO, Candidate
from memrouter.guard.secrets import find_secrets
from memrouter.index.sqlite.postings import decode
from memrouter.index.text import tokens
from memrouter.store import frontmatter
from memrouter.store.parse import parse_memory

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.core.model import Memory
    from memrouter.index.sqlite.keeper import IndexKeeper

__all__ = [
    "CLAIMS", "CONTENT", "FULL", "VERBATIM", "duplicate_candidates", "guarded", "refuse", "refuse_secrets", "verdict_for",
]  # fmt: skip

# What a path asks of the guard: FULL (a new memory or a rewrite: secrets, duplicates,
# review), CLAIMS (an edit: secrets, review), CONTENT (text copied or added without new
# claims, such as a promotion or a reason: secrets and flags only), VERBATIM (Serena's
# tools, whose contract is the file exactly as sent: secrets and duplicates refused,
# nothing held or flagged, since either would change the file).
FULL, CLAIMS, CONTENT, VERBATIM = "full", "claims", "content", "verbatim"
# Rare words of a write looked up to find near-copies; the best few lexical matches are compared.
PROBE_TERMS = 8
PROBE_MATCHES = 5
PROBE_CHARS = 2000  # the rare words are taken from the start of the text: a near-copy shares it
PROBE_WORDS = 60


def refuse(verdict: Verdict, what: str) -> Refused:
    """The error for a refused write: the reasons' kinds and lines, never a value."""
    return Refused(f"{what} refused by the write guard: {verdict.summary().removeprefix('refused: ')}", verdict)


def verdict_for(
    index: IndexKeeper | None, name: str, text: str, *, actor: str | None, purpose: str = FULL
) -> tuple[Memory, Verdict]:
    """The guard's verdict on writing ``text`` as ``name`` (and the memory it would be); nothing is written."""

    memory = parse_memory(name, name, text)
    verdict = check(
        text, name=name, actor=actor, grounding=purpose not in (CONTENT, VERBATIM), source=memory.source,
        body=memory.body, title=memory.title, exempt=[memory.supersedes] if memory.supersedes else [],
        candidates=(lambda: duplicate_candidates(index, memory.body, memory.title))
        if index and purpose in (FULL, VERBATIM) else None,
    )  # fmt: skip
    return memory, verdict


def guarded(
    index: IndexKeeper | None, name: str, text: str, *, actor: str | None, purpose: str = FULL
) -> tuple[str, Verdict]:
    """Check ``text`` for memory ``name``; the text to write (with the verdict's marks) and the verdict."""

    memory, verdict = verdict_for(index, name, text, actor=actor, purpose=purpose)
    if verdict.refused:
        raise refuse(verdict, f"memory {name!r}")
    if purpose == VERBATIM:
        return text, verdict
    changes: dict[str, Any] = {}
    if verdict.pending and memory.status != "pending_review":
        changes["status"] = "pending_review"
    given = memory.extra.get("flags")
    flags = [flag for flag in given if isinstance(flag, str)] if isinstance(given, list) else []
    if verdict.flags and INJECTION_FLAG not in flags:
        changes["flags"] = [*flags, INJECTION_FLAG]
    if verdict.pending and verdict.confidence is not None and memory.confidence > verdict.confidence:
        changes["confidence"] = verdict.confidence
    if not changes:
        return text, verdict

    return frontmatter.update(text, changes), verdict


def refuse_secrets(text: str, what: str) -> None:
    """Refuse a secret in text a write adds without being memory content (a reason, a goal)."""

    found = find_secrets(text)
    if found:
        raise refuse(Verdict("refused", tuple(found)), what)


def duplicate_candidates(index: IndexKeeper, body: str, title: str) -> list[Candidate]:
    """Stored memories a write may duplicate: those with its title, and those holding most of its
    rarest words, with a cosine (best chunk) where the index has vectors and a title matches.

    The index is used as it stands (a write is indexed at once, by any process;
    a file changed by hand counts from the next refresh), so the cost does not
    grow with the number of memories.
    """

    def look() -> list[Candidate]:

        conn = index.conn
        titled: set[int] = set()
        if title.strip():
            titled = {
                row[0]
                for row in conn.execute("SELECT id FROM memories WHERE title = ? COLLATE NOCASE", (title.strip(),))
            }
        words = list(dict.fromkeys(token for token in tokens(body[:PROBE_CHARS]) if len(token) > 3))[:PROBE_WORDS]
        by_words: set[int] = set()
        if words:
            # The memories holding most of the write's rarest words, read straight from their (short)
            # postings; length() of a blob reads no blob, so only the rarest words' postings are read.
            marks = ", ".join("?" * len(words))
            lists = conn.execute(
                f"SELECT term, postings FROM terms WHERE term IN ({marks}) ORDER BY length(postings), term LIMIT ?",
                (*words, PROBE_TERMS),
            ).fetchall()
            counts = Counter(chain.from_iterable(decode(blob, term)[0] for term, blob in lists))
            # A near-copy holds nearly every word of the write: one missing half its rarest is none.
            best = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:PROBE_MATCHES]
            by_words = {mid for mid, shared in best if shared * 2 >= len(lists)}
        ids = list(titled | by_words)
        if not ids:
            return []
        # A memory whose length rules out a near-copy is compared only if it has the title (for the cosine).
        size = max(1, len(body))  # as find_duplicate measures it
        shortest, longest = size * LENGTH_RATIO, size / LENGTH_RATIO
        marks = ", ".join("?" * len(ids))
        rows = conn.execute(
            f"SELECT id, name, title, body FROM memories WHERE id IN ({marks})"
            f" AND (length(body) BETWEEN ? AND ? OR title = ? COLLATE NOCASE)",
            (*ids, shortest, longest, title.strip()),
        ).fetchall()
        cosines: dict[int, float] = {}
        if titled and index.dense.has_vectors(conn):
            cosines = {r.memory_id: r.score for r in index.dense.search(conn, body, Filters(), limit=20)}
        return [
            Candidate(row["name"], row["title"], row["body"], cosines.get(row["id"]) if row["id"] in titled else None)
            for row in sorted(rows, key=lambda row: row["name"])
        ]

    found: list[Candidate] = index.indexed(look)
    return found
