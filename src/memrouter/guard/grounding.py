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

from memrouter.guard.scan import Lowered, matches
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
_HEDGE_ANCHORS = (
    "think", "believe", "guess", "suspect", "assum", "sure", "certain", "probabl", "possibl", "perhaps", "maybe",
    "might", "may be", "could be", "seem", "apparently", "presumably", "recall", "iirc", "afaik", "as far as",
    "verif", "confirm", "check this",
)  # fmt: skip
_EXTENSIONS = (
    "py|pyi|ts|tsx|js|jsx|mjs|go|rs|java|kt|kts|rb|php|cs|cpp|hpp|cc|swift|scala|sh|bash|ps1|psm1|md|rst|txt|toml|"
    "yaml|yml|json|jsonc|ini|cfg|conf|lock|sql|tf|proto|graphql|html|css|scss|xml|gradle|csv|ipynb|vue|dart|ex|exs|lua"
)
# (kind, pattern, the lower-case words it cannot match without (None: opens with a literal, fast
# everywhere), a cheap pattern it cannot match without: a line lacking it is not searched)
_EVIDENCE: tuple[tuple[str, str, tuple[str, ...] | None, str | None], ...] = (
    ("adr", r"\bADR[- _]?\d{1,5}\b", ("adr",), r"\d"),
    ("commit", r"(?i:\bcommit\s+|\bsha\s+|`)[0-9a-f]{7,40}\b", ("commit", "sha", "`"), r"[0-9a-f]{7}"),
    ("url", r"\bhttps?://[^\s)>\]]+", ("http",), None),
    ("file_path", rf"\.(?:{_EXTENSIONS})(?![\w-])", None, None),  # checked back from its dot (_is_evidence)
    (
        "issue_ref",
        r"(?i:\b(?:issue|PR|pull request|ticket|bug|MR)\s*#?\d+\b)",
        ("issue", "pr", "pull", "ticket", "bug", "mr"),
        r"\d",
    ),
    ("issue_ref", r"#\d{1,6}\b", None, None),
    ("issue_ref", r"-\d+\b", None, None),  # a key such as PROJ-88 (checked back from its dash)
    ("source", r"(?im:^\s*(?:[-*]\s*)?source:\s*\S)", ("source:",), None),
)
EVIDENCE_KINDS = tuple(dict.fromkeys(kind for kind, *_ in _EVIDENCE))
# Words before a dot and an extension that make no file ("Node.js" is a runtime); words before
# "-<digits>" that make no issue key (UTF-8, SHA-256, ISO-8601 ...).
_NOT_FILES = ("node", "vue", "next", "nuxt", "three", "d3", "chart", "e.g", "i.e")
_NOT_KEYS = ("ADR", "UTF", "SHA", "ISO", "HTTP", "GPT", "MD", "AES", "TLS", "SSL", "UTC", "GMT", "IPV", "ES", "PEP")
_PATH_BEFORE = re.compile(r"[\w./-]*$")
_KEY_BEFORE = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]+$")
_INJECTION = (  # kind, pattern, anchors
    ("ignore_instructions", r"(?i)\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|"
     r"above|earlier|preceding|your)\s+(?:instructions|prompts?|rules|directions|context)", ("ignore", "disregard",
     "forget")),
    ("role_tag", r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|</?(?:system|assistant)>"
     r"|\[/?INST\]|<</?SYS>>", ("<|", "system>", "assistant>", "inst]", "sys>>")),
    ("you_are_now", r"(?i)\byou are now\b|\bnew instructions:|\bsystem prompt:", ("you are now", "new instructions",
     "system prompt")),
    ("tool_call", r"<(?:tool_call|function_calls|invoke|antml:[a-z_]+)\b|\"tool_calls\"\s*:|<\|tool_call\|>",
     ("<tool_call", "<function_calls", "<invoke", "<", "tool_calls", "<|tool_call")),
)  # fmt: skip


@lru_cache(maxsize=1)
def _hedge_pattern() -> re.Pattern[str]:
    return re.compile(r"(?i)(?<![\w'])(?:" + "|".join(_HEDGES) + r")(?![\w'])")


@lru_cache(maxsize=1)
def _evidence_patterns() -> tuple[tuple[str, re.Pattern[str], tuple[str, ...] | None, re.Pattern[str] | None], ...]:
    return tuple(
        (kind, re.compile(pattern), anchors, None if needs is None else re.compile(needs))
        for kind, pattern, anchors, needs in _EVIDENCE
    )


@lru_cache(maxsize=1)
def _injection_patterns() -> tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...]:
    return tuple((kind, re.compile(pattern), anchors) for kind, pattern, anchors in _INJECTION)


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def find_hedges(text: str, lowered: Lowered | None = None) -> list[Reason]:
    """Each hedging phrase and its line (the phrase is shown: it is not a secret)."""
    found = matches(_hedge_pattern(), lowered or Lowered(text), _HEDGE_ANCHORS)
    return [Reason("hedge", "hedge", _line(text, m.start()), f"hedges ({m.group()!r}): held for review") for m in found]


def _is_evidence(kind: str, text: str, match: re.Match[str]) -> bool:
    """The checks a match needs beyond its pattern: a file name before an extension, a key before a number."""
    start = match.start()
    if kind == "file_path":
        before = _PATH_BEFORE.search(text, max(0, start - 200), start)
        path = before.group() if before else ""
        name = path.rsplit("/", 1)[-1].lower()
        return bool(name.strip(".")) and name not in _NOT_FILES
    if kind == "issue_ref" and match.group().startswith("-"):
        key = _KEY_BEFORE.search(text, max(0, start - 20), start)
        return key is not None and key.group() not in _NOT_KEYS
    if kind == "issue_ref" and match.group().startswith("#"):
        return start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "&#_")
    return True


def find_evidence(text: str, *, source: str | None = None, lowered: Lowered | None = None) -> list[Reason]:
    """The first piece of each kind of evidence in ``text`` (and a ``source`` field, line 0)."""
    lowered = lowered or Lowered(text)
    found = [Reason("evidence", "source", 0, "has a source field")] if source else []
    for kind, pattern, anchors, needs in _evidence_patterns():
        if any(reason.kind == kind for reason in found):
            continue
        candidates = pattern.finditer(text) if anchors is None else matches(pattern, lowered, anchors, needs=needs)
        match = next((m for m in candidates if _is_evidence(kind, text, m)), None)
        if match is not None:
            found.append(Reason("evidence", kind, _line(text, match.start()), f"cites {kind.replace('_', ' ')}"))
    return found


def find_injection(text: str, lowered: Lowered | None = None) -> list[Reason]:
    """Text that reads like instructions to a model: each kind once, at its first line."""
    lowered = lowered or Lowered(text)
    found = []
    for kind, pattern, anchors in _injection_patterns():
        match = next(matches(pattern, lowered, anchors), None)
        if match is not None:
            found.append(
                Reason("injection", kind, _line(text, match.start()), "reads like instructions to a model: flagged")
            )
    return found
