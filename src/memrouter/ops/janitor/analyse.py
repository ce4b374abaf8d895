"""From the memories in effect to findings and proposals: duplicates, near-duplicates, contradictions, expiry.

Pure: it reads ``Entry`` records and returns records; ``memrouter.ops.janitor.run``
gathers the entries and applies the proposals. Every proposal points from an
older memory to a strictly newer one (newer by ``updated``, else ``created``,
else the file's time; then by name), so applying them can never make a cycle,
and the newest memory of a group stays in effect.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

from memrouter.ops.janitor.contradictions import find_contradictions
from memrouter.ops.janitor.minhash import near_duplicate_pairs
from memrouter.ops.janitor.records import Entry, Finding, Proposal
from memrouter.store.sprints import sprint_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["NEAR_DUPLICATE", "analyse"]

# Estimated Jaccard similarity of word 3-shingles from which two memories are near-duplicates.
NEAR_DUPLICATE = 0.6


def _body_hash(body: str) -> str:
    """The content hash the exact-duplicate check groups by: the body with its whitespace folded."""
    return hashlib.sha256(" ".join(body.split()).encode("utf-8")).hexdigest()


def analyse(entries: list[Entry], now: str, closed_sprints: Mapping[str, str]) -> tuple[list[Finding], list[Proposal]]:
    """Every finding over ``entries`` (the memories in effect) and the proposals they make.

    ``now`` is an ISO 8601 time; ``closed_sprints`` maps each closed sprint's
    id to when it closed.
    """
    run = _Analysis(entries)
    representatives = run.exact_duplicates()
    run.near_duplicates(representatives)
    run.contradictions(representatives)
    expiring = _expiry(entries, now, closed_sprints, run.findings)
    return run.findings, _proposals(entries, run.rank, run.wanted, expiring)


class _Analysis:
    """The entries ranked by age (higher is newer), the findings so far, and what each older memory points at."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        order = sorted(range(len(entries)), key=lambda i: (entries[i].when, entries[i].name))
        self.rank = [0] * len(entries)
        for position, index in enumerate(order):
            self.rank[index] = position
        self.findings: list[Finding] = []
        self.wanted: dict[int, list[tuple[int, str, str]]] = defaultdict(list)  # older -> [(newer, reason, text)]

    def exact_duplicates(self) -> list[int]:
        """Group by body hash; the newest of each group stays. Returns one memory per body (the newest)."""
        groups: dict[str, list[int]] = defaultdict(list)
        for index, entry in enumerate(self.entries):
            if entry.body.strip():
                groups[_body_hash(entry.body)].append(index)
        representatives = []
        for digest, members in groups.items():
            members.sort(key=lambda i: -self.rank[i])
            representatives.append(members[0])
            if len(members) > 1:
                kept = self.entries[members[0]].name
                self.findings.append(
                    Finding(
                        "duplicate", tuple(self.entries[i].name for i in members), {"body_sha256": digest, "kept": kept}
                    )
                )
                for older in members[1:]:
                    self.wanted[older].append((members[0], "duplicate", f"same content as {kept}"))
        return sorted(representatives)

    def near_duplicates(self, representatives: list[int]) -> None:
        """MinHash LSH over the representatives; each older memory points at its newest near-duplicate."""
        pairs = near_duplicate_pairs([self.entries[i].body for i in representatives], NEAR_DUPLICATE)
        parent = {i: i for i in range(len(representatives))}

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        by_group: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
        for pair in pairs:
            parent[root(pair.first)] = root(pair.second)
        best: dict[int, tuple[int, float]] = {}
        for pair in pairs:
            a, b = representatives[pair.first], representatives[pair.second]
            by_group[root(pair.first)].append((a, b, pair.similarity))
            older, newer = (a, b) if self.rank[a] < self.rank[b] else (b, a)
            if older not in best or self.rank[newer] > self.rank[best[older][0]]:
                best[older] = (newer, pair.similarity)
        for group in sorted(by_group.values(), key=lambda g: min(self.entries[i].name for p in g for i in p[:2])):
            names = sorted({self.entries[i].name for a, b, _ in group for i in (a, b)})
            evidence = [{"a": self.entries[a].name, "b": self.entries[b].name, "similarity": s} for a, b, s in group]
            self.findings.append(Finding("near_duplicate", tuple(names), {"pairs": evidence}))
        for older, (newer, similarity) in best.items():
            text = f"near-duplicate of {self.entries[newer].name} (shingle similarity {similarity:.2f})"
            self.wanted[older].append((newer, "near_duplicate", text))

    def contradictions(self, representatives: list[int]) -> None:
        chosen = [self.entries[i] for i in representatives]
        for conflict in find_contradictions(chosen, [self.rank[i] for i in representatives]):
            older, newer = representatives[conflict.older], representatives[conflict.newer]
            shown = "; ".join(f"{s.key}: {s.older} -> {s.newer}" for s in conflict.statements[:3])
            self.findings.append(
                Finding(
                    "contradiction",
                    (self.entries[older].name, self.entries[newer].name),
                    {
                        "subject": conflict.subject,
                        "newer": self.entries[newer].name,
                        "statements": [s.to_dict() for s in conflict.statements],
                    },
                )
            )
            self.wanted[older].append(
                (newer, "contradiction", f"contradicted by newer {self.entries[newer].name} ({shown})")
            )


def _expiry(
    entries: list[Entry], now: str, closed_sprints: Mapping[str, str], findings: list[Finding]
) -> dict[int, tuple[str, str]]:
    """Memories past ``valid_until`` or ``expires``, and sprint memories whose sprint has closed."""

    expiring: dict[int, tuple[str, str]] = {}
    for index, entry in enumerate(entries):
        for key in ("valid_until", "expires"):
            value = getattr(entry, key)
            if value is not None and value <= now and index not in expiring:
                findings.append(Finding("expired", (entry.name,), {key: value, "now": now}))
                expiring[index] = ("expired", f"past its {key} ({value})")
        sprint = sprint_of(entry.name)
        if sprint is not None and sprint in closed_sprints and index not in expiring:
            closed = closed_sprints[sprint]
            findings.append(Finding("sprint_over", (entry.name,), {"sprint": sprint, "closed": closed}))
            expiring[index] = ("sprint_over", f"its sprint {sprint} closed on {closed}")
    return expiring


def _proposals(
    entries: list[Entry],
    rank: list[int],
    wanted: dict[int, list[tuple[int, str, str]]],
    expiring: dict[int, tuple[str, str]],
) -> list[Proposal]:
    """One proposal per memory: superseded by the newest memory any finding points at, else expired."""
    proposals = []
    for index in sorted(set(wanted) | set(expiring), key=lambda i: entries[i].name):
        reasons = wanted.get(index, [])
        texts = [text for _, _, text in reasons]
        because = [reason for _, reason, _ in reasons]
        if index in expiring:
            because.append(expiring[index][0])
            texts.append(expiring[index][1])
        newest = max((newer for newer, _, _ in reasons), key=lambda i: rank[i], default=None)
        action = "expire" if newest is None else "supersede"
        proposals.append(
            Proposal(
                action,
                entries[index].name,
                "janitor: " + "; ".join(dict.fromkeys(texts)),
                None if newest is None else entries[newest].name,
                tuple(dict.fromkeys(because)),
            )
        )
    return proposals
