"""The janitor's part of anchors: stale memories to review, and unused ones to archive.

- A memory the last ``memrouter verify`` found stale or broken is proposed for **review** (``stale_anchors``):
  a person or an agent checks it against the code, fixes it, and stamps it with
  ``memrouter verify --accept NAME``. ``--apply`` never acts on these.
- A memory neither returned by ``get`` or ``search`` nor changed or verified (a ``verified:`` stamp is a
  change of its file) for ``[janitor] unused_days`` is proposed for **archiving** (``unused``): ``--apply``
  sets ``status: archived``, which keeps the file and its name and takes it out of default results; nothing
  is deleted.

Pure: it reads entries, stored states and access times, and returns findings and proposals.
"""

from __future__ import annotations

import calendar
import time

from memrouter.ops.janitor.records import Entry, Finding, Proposal

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Mapping

    from memrouter.index.sqlite.access import Access

__all__ = ["anchor_proposals"]

DAY = 86400.0


def anchor_proposals(
    entries: list[Entry], stale: Mapping[str, str], access: Mapping[str, Access], now: float, unused_days: float,
    taken: set[str], watched_since: float | None,
) -> tuple[list[Finding], list[Proposal]]:  # fmt: skip
    """Findings and proposals for ``entries`` (the memories in effect) not already proposed (``taken``):
    ``stale`` maps a memory to the summary of its last check; uses have been counted since ``watched_since``
    (a memory is unused only if it was watched for ``unused_days``: an index made today calls nothing unused)."""
    findings: list[Finding] = []
    proposals: list[Proposal] = []
    cutoff = now - unused_days * DAY
    for entry in entries:
        if entry.name in taken:
            continue
        summary = stale.get(entry.name)
        if summary is not None:
            findings.append(Finding("stale_anchors", (entry.name,), {"why": summary}))
            proposals.append(
                Proposal("review", entry.name, f"janitor: {summary}; check it against the code, then "
                         f"`memrouter verify --accept {entry.name}`", None, ("stale_anchors",))
            )  # fmt: skip
            continue
        used = access.get(entry.name)
        last = max(used.last or 0.0 if used else 0.0, _seconds(entry.when), watched_since or now)
        if last and last < cutoff:
            days = int((now - last) // DAY)
            findings.append(Finding("unused", (entry.name,), {"idle_days": days, "unused_days": unused_days}))
            proposals.append(
                Proposal(
                    "archive", entry.name, f"janitor: neither used nor verified for {days} days", None, ("unused",)
                )
            )
    return findings, proposals


def _seconds(moment: str) -> float:
    """An ISO 8601 UTC time (or date) as seconds since the epoch; 0 when unreadable."""
    text = moment.strip().replace("+00:00", "Z")
    for shape in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%d"):
        try:
            return float(calendar.timegm(time.strptime(text, shape)))
        except ValueError:
            continue
    return 0.0
