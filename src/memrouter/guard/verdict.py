"""The guard's answer: an outcome and the reasons for it, each with a line number, never a secret's value."""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ACCEPTED", "PENDING", "REFUSED", "OUTCOMES", "Reason", "Verdict"]

ACCEPTED = "accepted"
PENDING = "pending"
REFUSED = "refused"
OUTCOMES = (ACCEPTED, PENDING, REFUSED)


@dataclass(frozen=True, slots=True)
class Reason:
    """One finding: its ``category`` (secret, duplicate, hedge, ungrounded, injection, evidence),
    its ``kind`` (github_token, same_hash, ...), the 1-based ``line`` (0: the whole text) and a message."""

    category: str
    kind: str
    line: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "kind": self.kind, "line": self.line, "message": self.message}

    def __str__(self) -> str:
        where = f" on line {self.line}" if self.line else ""
        return f"{self.kind}{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the guard decided about one write.

    ``refused``: nothing may be written (a secret, a near-duplicate);
    ``pending``: stored with ``status: pending_review`` (an agent's hedged or
    ungrounded claim); ``accepted``: stored, with ``flags`` (``injection``) in
    its front matter when it has any. ``confidence`` is what an agent's write
    gets (None: leave it as given); ``evidence`` the kinds of evidence found.
    """

    outcome: str
    reasons: tuple[Reason, ...] = ()
    flags: tuple[str, ...] = ()
    confidence: float | None = None
    evidence: tuple[str, ...] = ()
    duplicate_of: str | None = None

    @property
    def refused(self) -> bool:
        return self.outcome == REFUSED

    @property
    def pending(self) -> bool:
        return self.outcome == PENDING

    def blocking(self) -> tuple[Reason, ...]:
        """The reasons that refuse the write (secrets, duplicates)."""
        return tuple(r for r in self.reasons if r.category in ("secret", "duplicate"))

    def summary(self) -> str:
        """One line naming the outcome and its main reasons (kinds and lines, never values)."""
        shown = self.blocking() if self.refused else self.reasons
        listed = "; ".join(str(reason) for reason in shown[:5])
        more = f" (+{len(shown) - 5} more)" if len(shown) > 5 else ""
        return f"{self.outcome}" + (f": {listed}{more}" if listed else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "reasons": [reason.to_dict() for reason in self.reasons],
            "flags": list(self.flags),
            "confidence": self.confidence,
            "evidence": list(self.evidence),
            "duplicate_of": self.duplicate_of,
        }
