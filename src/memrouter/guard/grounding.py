"""Grounding and injection: what an agent's note claims, what backs it, and text aimed at the reader's model.

An agent's note that hedges ("I think", "probably", "TODO verify") or states
facts with no evidence goes to review. Evidence is an ADR id, a commit, a
URL, a file path, an issue or pull-request reference, or a ``source:``. Text
that reads like instructions to a model (role tags, "ignore previous
instructions", tool-call markup) is flagged so whoever recalls it can mark it.
Every pattern is compiled on first use.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memrouter.guard.verdict import Reason

__all__ = ["EVIDENCE_KINDS", "find_evidence", "find_hedges", "find_injection"]

_HEDGES = (
    r"I think", r"I believe", r"I guess", r"I suspect", r"I assume", r"I'?m not sure", r"not sure", r"unsure",
    r"not certain", r"probably", r"possibly", r"perhaps", r"maybe", r"might be", r"might have", r"may be",
    r"could be", r"seems? to", r"it seems", r"apparently", r"presumably", r"I'?m guessing", r"if I recall",
    r"IIRC", r"AFAIK", r"as far as I know", r"TODO:? ?verify", r"to be (?:confirmed|verified)", r"unverified",
    r"needs? (?:verification|to be verified|checking)", r"(?:double[- ])?check this", r"not (?:yet )?verified",
    r"guess(?:ing)? (?:is|that)",
)  # fmt: skip
_EVIDENCE: dict[str, str] = {
    "adr": r"\bADR[- _]?\d{1,5}\b",
    "commit": r"(?i:\bcommit\s+|\bsha\s+|`)[0-9a-f]{7,40}\b",
    "url": r"\bhttps?://[^\s)>\]]+",
    "file_path": (
        r"(?<![\w/.:-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,8}\b(?::\d+)?"
        r"|\b[\w-]+\.(?:py|ts|tsx|go|rs|java|rb|md|toml|yaml|yml|json|sql|sh|cpp|kt|swift|cfg|ini|lock|txt)\b"
        r"|\b(?:Makefile|Dockerfile|Justfile|Rakefile|Gemfile)\b"
    ),
    "issue_ref": r"(?i:\b(?:issue|PR|pull request|ticket|bug|MR)\s*#?\d+\b)|(?<![\w&#])#\d{1,6}\b"
    r"|\b(?!(?:ADR|UTF|SHA|ISO|HTTP|GPT|MD|AES|TLS|SSL|UTC|GMT|IPV|ES|PEP)-)[A-Z][A-Z0-9]+-\d+\b",
    "source": r"(?im:^\s*(?:[-*]\s*)?source:\s*\S)",
}
EVIDENCE_KINDS = tuple(_EVIDENCE)
_INJECTION = (
    ("ignore_instructions", r"(?i)\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|"
     r"above|earlier|preceding|your)\s+(?:instructions|prompts?|rules|directions|context)"),
    ("role_tag", r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|</?(?:system|assistant)>"
     r"|\[/?INST\]|<</?SYS>>"),
    ("you_are_now", r"(?i)\byou are now\b|\bnew instructions:|\bsystem prompt:"),
    ("tool_call", r"<(?:tool_call|function_calls|invoke|antml:[a-z_]+)\b|\"tool_calls\"\s*:|<\|tool_call\|>"),
)  # fmt: skip


@lru_cache(maxsize=1)
def _hedge_pattern() -> re.Pattern[str]:
    return re.compile(r"(?i)(?<![\w'])(?:" + "|".join(_HEDGES) + r")(?![\w'])")


@lru_cache(maxsize=1)
def _evidence_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(pattern)) for kind, pattern in _EVIDENCE.items())


@lru_cache(maxsize=1)
def _injection_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(pattern)) for kind, pattern in _INJECTION)


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def find_hedges(text: str) -> list[Reason]:
    """Each hedging phrase and its line (the phrase is shown: it is not a secret)."""
    return [
        Reason("hedge", "hedge", _line(text, match.start()), f"hedges ({match.group()!r}): held for review")
        for match in _hedge_pattern().finditer(text)
    ]


def find_evidence(text: str, *, source: str | None = None) -> list[Reason]:
    """The first piece of each kind of evidence in ``text`` (and a ``source`` field, line 0)."""
    found = [Reason("evidence", "source", 0, "has a source field")] if source else []
    for kind, pattern in _evidence_patterns():
        match = pattern.search(text)
        if match is not None:
            found.append(Reason("evidence", kind, _line(text, match.start()), f"cites {kind.replace('_', ' ')}"))
    return found


def find_injection(text: str) -> list[Reason]:
    """Text that reads like instructions to a model: each kind once, at its first line."""
    found = []
    for kind, pattern in _injection_patterns():
        match = pattern.search(text)
        if match is not None:
            found.append(
                Reason("injection", kind, _line(text, match.start()), "reads like instructions to a model: flagged")
            )
    return found
