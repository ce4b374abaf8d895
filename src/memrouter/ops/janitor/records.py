"""The janitor's records: what it reads of each memory, what it finds, what it proposes."""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ACTIONS", "REASONS", "Entry", "Finding", "JanitorReport", "Proposal", "Statement"]

# What --apply does with a proposal: supersede (obsolete, pointing at the memory that replaces it), expire,
# archive (status: archived, for a memory long unused); review (a stale memory) is left to a person.
ACTIONS = ("supersede", "expire", "review", "archive")
# Why: one of these, the key of the finding's evidence.
REASONS = (
    "duplicate", "near_duplicate", "contradiction", "expired", "sprint_over", "stale_anchors", "unused", "diverged",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Entry:
    """One memory as the janitor sees it (from the index): text, subject fields and times."""

    name: str
    title: str
    body: str
    hash: str
    tags: tuple[str, ...] = ()
    channel: str = "long_term"
    kind: str | None = None
    status: str = "active"
    when: str = ""  # updated, else created, else the file's modification time (ISO 8601, UTC)
    valid_until: str | None = None
    expires: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement two memories disagree on: its kind (fact, number, negation), key, and both values."""

    kind: str
    key: str
    older: str
    newer: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "older": self.older, "newer": self.newer}


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the janitor found: its reason (``REASONS``), the memories involved, and the evidence."""

    reason: str
    names: tuple[str, ...]
    evidence: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "names": list(self.names), "evidence": self.evidence}


@dataclass(frozen=True, slots=True)
class Proposal:
    """One change to one memory: ``action`` (``ACTIONS``), the replacement if any, and why."""

    action: str
    name: str
    reason: str
    superseded_by: str | None
    because: tuple[str, ...]  # the reasons (``REASONS``) of every finding behind it
    applied: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action, "name": self.name, "superseded_by": self.superseded_by, "reason": self.reason,
            "because": list(self.because), "applied": self.applied,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class JanitorReport:
    """What one janitor run found and proposed (and, with ``apply``, did). ``to_dict`` is the JSON report."""

    dry_run: bool
    generated: str
    memories: int
    findings: tuple[Finding, ...]
    proposals: tuple[Proposal, ...]
    usage: dict[str, Any]
    notices: tuple[str, ...] = ()
    team: dict[str, Any] = field(default_factory=dict)  # idle team workflows (``memrouter.team.idle``)
    took_ms: float = 0.0

    def counts(self) -> dict[str, int]:
        """Findings by reason."""
        return {reason: sum(f.reason == reason for f in self.findings) for reason in REASONS}

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "generated": self.generated,
            "memories": self.memories,
            "counts": self.counts(),
            "proposals": [p.to_dict() for p in self.proposals],
            "findings": [f.to_dict() for f in self.findings],
            "usage": self.usage,
            "notices": list(self.notices),
            "team": self.team,
            "took_ms": round(self.took_ms, 1),
        }
