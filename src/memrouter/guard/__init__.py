"""The write guard: one check every write of memory text passes before anything is stored.

``check`` returns a ``Verdict``:

- **refused** when the text holds a secret (``memrouter.guard.secrets``) or
  duplicates another memory (``memrouter.guard.duplicates``); the reasons name
  the kind and the line, never the value;
- **pending** when an agent's text hedges or cites no evidence
  (``memrouter.guard.grounding``): it is stored with ``status: pending_review``.
  A person's write is trusted and never pending;
- **accepted** otherwise, with ``flags`` (``injection``) when the text reads
  like instructions to a model: stored, and marked for whoever recalls it.

An agent's write also gets a ``confidence``: ``AGENT_CONFIDENCE``, raised by
``EVIDENCE_STEP`` for each kind of evidence it cites, at most ``MAX_AGENT_CONFIDENCE``.
This package imports nothing heavy and compiles its patterns on first use.
"""

from __future__ import annotations

from memrouter.core.errors import InvalidInput
from memrouter.guard.verdict import ACCEPTED, PENDING, REFUSED, Reason, Verdict

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from memrouter.guard.duplicates import Candidate

__all__ = [
    "ACTOR_KINDS", "AGENT_CONFIDENCE", "EVIDENCE_STEP", "MAX_AGENT_CONFIDENCE", "INJECTION_FLAG", "Reason",
    "Verdict", "actor_kind", "check",
]  # fmt: skip

ACTOR_KINDS = ("person", "agent")
INJECTION_FLAG = "injection"
AGENT_CONFIDENCE = 0.5
EVIDENCE_STEP = 0.1
MAX_AGENT_CONFIDENCE = 0.9


def actor_kind(actor: str | None) -> str:
    """``person`` or ``agent`` for an actor given as either word, or as ``user:<name>`` / ``agent:<id>``."""
    if actor is None or actor == "person" or (isinstance(actor, str) and actor.startswith("user:")):
        return "person"
    if isinstance(actor, str) and (actor == "agent" or actor.startswith("agent:")):
        return "agent"
    raise InvalidInput(f"actor must be 'person', 'agent', 'user:<name>' or 'agent:<id>' (got {actor!r})")


def check(
    text: str,
    *,
    name: str | None = None,
    actor: str | None = "person",
    grounding: bool = True,
    source: str | None = None,
    body: str | None = None,
    title: str = "",
    candidates: Callable[[], Iterable[Candidate]] | None = None,
    exempt: Iterable[str] = (),
) -> Verdict:
    """The verdict on storing ``text`` as memory ``name`` (see the module docstring).

    ``grounding=False`` skips the review rules (a path that adds no claims of
    its own: a promotion, an invalidation reason, a scratchpad note).
    ``candidates`` gives the stored memories a duplicate check compares
    ``body`` (the text after its front matter) and ``title`` with; ``name`` and
    ``exempt`` (the memories this write says it ``supersedes``) are never duplicates.
    """
    from memrouter.guard.grounding import find_evidence, find_hedges, find_injection
    from memrouter.guard.secrets import find_secrets

    kind = actor_kind(actor)
    secrets = find_secrets(text)
    if secrets:
        return Verdict(REFUSED, tuple(secrets))
    if candidates is not None:
        from memrouter.guard.duplicates import find_duplicate

        twin = find_duplicate(
            text if body is None else body, title, candidates(), exempt=(*exempt, *([name] if name else []))
        )
        if twin is not None:
            return Verdict(REFUSED, (twin[1],), duplicate_of=twin[0])
    from memrouter.guard.scan import Lowered

    lowered = Lowered(text)
    injection = find_injection(text, lowered)
    flags = (INJECTION_FLAG,) if injection else ()
    if kind == "person" or not grounding:
        return Verdict(ACCEPTED, tuple(injection), flags)
    evidence = find_evidence(text, source=source, lowered=lowered)
    kinds = tuple(dict.fromkeys(reason.kind for reason in evidence))
    confidence = round(min(MAX_AGENT_CONFIDENCE, AGENT_CONFIDENCE + EVIDENCE_STEP * len(kinds)), 2)
    hedges = find_hedges(text, lowered)
    reasons = [*injection, *hedges, *evidence]
    if not evidence:
        reasons.append(Reason("ungrounded", "no_evidence", 0, "cites no ADR, commit, URL, file, issue or source"))
    outcome = PENDING if hedges or not evidence else ACCEPTED
    return Verdict(outcome, tuple(reasons), flags, confidence, kinds)
